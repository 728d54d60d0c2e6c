/* Threads: OpenMP, with OpenBLAS built on OpenMP so that both share one pool;
 * a BLAS call inside a posemb parallel region runs on its caller's thread.
 *
 * The default count is what the machine can give now: the CPUs this process
 * may use, less those other processes keep busy. Threads that wait for a
 * core held by another process stall every parallel region (on 2 cores
 * beside two busy loops, 2 threads trained train-small 50x slower than 1),
 * and the count cannot change during a run without changing its results
 * (reductions are grouped by thread), so it is chosen once, at the start. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "posemb/threads.h"
#include "core/fileio.h"

#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "threads_impl.h"
#include "core/threads_internal.h"

/* OpenBLAS's own setter; declared here so that cblas.h's variant-specific
 * prototypes are not needed. */
void openblas_set_num_threads(int num_threads);

static int allowed_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) return omp_get_num_procs(); /* more CPUs than cpu_set_t holds */
    return CPU_COUNT(&set);
}

/* quota/period from a file holding "QUOTA PERIOD" (v2 cpu.max, "max" for
 * none) or, with period_file, QUOTA alone (v1, -1 for none); 0 for none. */
static double read_quota(const char *file, const char *period_file)
{
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char q[32] = "";
    double period = 0;
    int n = fscanf(f, "%31s %lf", q, &period);
    fclose(f);
    if (period_file && (f = fopen(period_file, "r"))) {
        n = fscanf(f, "%lf", &period) == 1 ? 2 : 0;
        fclose(f);
    }
    double quota = strtod(q, NULL);
    return n == 2 && quota > 0 && period > 0 ? quota / period : 0;
}

static double min_quota(double a, double b) { return a <= 0 ? b : b <= 0 ? a : fmin(a, b); }

/* v2: the smallest cpu.max from the process's cgroup up to the root. */
static double v2_quota(const char *root, char *rel)
{
    double quota = 0;
    char path[2 * POSEMB_PATH_MAX]; /* a mount point and a cgroup path */
    for (;;) {
        snprintf(path, sizeof path, "%s%s/cpu.max", root, rel);
        quota = min_quota(quota, read_quota(path, NULL));
        char *slash = strrchr(rel, '/');
        if (!slash) return quota;
        *slash = '\0'; /* the parent */
    }
}

/* v1: the cpu controller's cgroup under its own mount, or, inside a
 * container, the mount's root (the container's cgroup). */
static double v1_quota(const char *root, const char *rel)
{
    const char *dirs[2] = {rel, ""};
    char quota[2 * POSEMB_PATH_MAX], period[2 * POSEMB_PATH_MAX];
    for (int i = 0; i < 2; i++) {
        snprintf(quota, sizeof quota, "%s/cpu%s/cpu.cfs_quota_us", root, dirs[i]);
        snprintf(period, sizeof period, "%s/cpu%s/cpu.cfs_period_us", root, dirs[i]);
        double q = read_quota(quota, period);
        if (q > 0) return q;
    }
    return 0;
}

static int is_v1_cpu(const char *controllers)
{
    char list[4096];
    snprintf(list, sizeof list, ",%s,", controllers);
    return strstr(list, ",cpu,") != NULL;
}

double threads_cgroup_quota(const char *root, const char *cgroup_file)
{
    FILE *f = fopen(cgroup_file, "r");
    if (!f) return 0;
    char line[4096];
    double quota = 0;
    while (fgets(line, sizeof line, f)) { /* "ID:CONTROLLERS:PATH" */
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'), *rel = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!rel) continue;
        *rel++ = '\0';
        *controllers++ = '\0';
        if (!strcmp(line, "0") && !controllers[0]) quota = min_quota(quota, v2_quota(root, rel));
        else if (is_v1_cpu(controllers)) quota = min_quota(quota, v1_quota(root, rel));
    }
    fclose(f);
    return quota;
}

int threads_others_running(const char *loadavg_file)
{
    int fewest = -1;
    for (int i = 0; i < 10; i++) {
        if (i) nanosleep(&(struct timespec){0, 5000000}, NULL);
        FILE *f = fopen(loadavg_file, "r");
        int running = 0;
        if (!f) return 0;
        if (fscanf(f, "%*f %*f %*f %d/", &running) == 1 && (fewest < 0 || running < fewest)) fewest = running;
        fclose(f);
    }
    return fewest > 1 ? fewest - 1 : 0;
}

int threads_from(int allowed, double quota, int online, int others)
{
    int usable = allowed;
    if (quota > 0 && quota < usable) usable = (int)ceil(quota); /* compared first: a quota may exceed int */
    int outside = online > allowed ? online - allowed : 0;
    int busy = others > outside ? others - outside : 0;
    int n = allowed - busy; /* the quota bounds this process, not the others */
    return n < 1 ? 1 : n > usable ? usable : n;
}

static int env_threads(void)
{
    const char *e = getenv("OMP_NUM_THREADS");
    long n = e ? strtol(e, NULL, 10) : 0; /* a list ("4,2") gives its first level */
    return n > 0 && n <= 4096 ? (int)n : 0;
}

int posemb_threads_default(char *why, size_t cap)
{
    if (why && cap) why[0] = '\0';
    int n = env_threads();
    if (n) return n;
    int allowed = allowed_cpus(), online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double quota = threads_cgroup_quota("/sys/fs/cgroup", "/proc/self/cgroup");
    int others = threads_others_running("/proc/loadavg");
    n = threads_from(allowed, quota, online, others);
    int unloaded = threads_from(allowed, quota, online, 0);
    if (why && cap && n < unloaded)
        snprintf(why, cap,
                 "%d other runnable task%s on %d CPU%s; %d thread%s, not %d (--threads or OMP_NUM_THREADS "
                 "to choose)",
                 others, others > 1 ? "s" : "", online, online > 1 ? "s" : "", n, n > 1 ? "s" : "", unloaded);
    return n;
}

int posemb_threads_set(int n)
{
    if (n <= 0) n = posemb_threads_default(NULL, 0);
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
    return n;
}

int posemb_threads_max(void) { return omp_get_max_threads(); }

int posemb_thread_id(void) { return omp_get_thread_num(); }
