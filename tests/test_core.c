/* Core: errors, arenas, tensors, the RNG. */
#include <cblas.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/arena.h"
#include "posemb/error.h"
#include "core/fileio.h"
#include "posemb/rng.h"
#include "posemb/tensor.h"
#include "core/threads_impl.h"
#include "posemb/threads.h"
#include "testutil.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"
#include "core/tensor_internal.h"
#include "core/threads_internal.h"
#include "core/error_internal.h"

static void test_error(void **state)
{
    posemb_error err;
    assert_int_equal(posemb_fail(&err, POSEMB_EFORMAT, "%s: bad %d", "x.bin", 7), POSEMB_EFORMAT);
    assert_string_equal(err.msg, "x.bin: bad 7");
    assert_int_equal(err.code, POSEMB_EFORMAT);
    assert_int_equal(posemb_fail(NULL, POSEMB_EIO, "ignored"), POSEMB_EIO);
    posemb_error_clear(&err);
    assert_int_equal(err.code, POSEMB_OK);
    assert_string_equal(err.msg, "");
    assert_string_equal(posemb_status_name(POSEMB_ENOMEM), "out of memory");
}

/* A copy is byte for byte (NUL bytes included), refused above max_bytes, and never
 * leaves a partial or temporary file when the source or the destination fails. */
static void test_copy_file(void **state)
{
    char *dir = tu_tmpdir(), src[600], dst[600], *text = NULL; /* tu_tmpdir's path is under 512 bytes */
    size_t n = 0;
    posemb_error err;
    const char bytes[] = "line 1\n\0line 2";
    snprintf(src, sizeof src, "%s/a", dir);
    snprintf(dst, sizeof dst, "%s/b", dir);
    assert_int_equal(tu_write_file(src, bytes, sizeof bytes), 0);
    assert_int_equal(posemb_copy_file(src, dst, 1024, &err), POSEMB_OK);
    assert_int_equal(posemb_read_data_file(dst, 1024, &text, &n, &err), POSEMB_OK);
    assert_int_equal(n, sizeof bytes);
    assert_memory_equal(text, bytes, sizeof bytes);
    free(text);
    remove(dst);
    assert_int_equal(posemb_copy_file(src, dst, 4, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, src));
    snprintf(src, sizeof src, "%s/missing", dir);
    assert_int_equal(posemb_copy_file(src, dst, 1024, &err), POSEMB_EIO);
    snprintf(dst, sizeof dst, "%s/no/such/folder", dir);
    snprintf(src, sizeof src, "%s/a", dir);
    assert_int_equal(posemb_copy_file(src, dst, 1024, &err), POSEMB_EIO);
    int left = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) left += e->d_name[0] != '.';
    if (d) closedir(d);
    assert_int_equal(left, 1); /* a alone */
    tu_rmtree(dir);
    free(dir);
}

static void test_arena(void **state)
{
    posemb_arena a;
    posemb_arena_init(&a, 256);
    for (int i = 0; i < 100; i++) {
        unsigned char *p = posemb_arena_alloc(&a, (size_t)(i * 37 % 300 + 1));
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % POSEMB_ARENA_ALIGN, 0);
        for (int k = 0; k < i * 37 % 300 + 1; k++) assert_int_equal(p[k], 0);
        memset(p, 0xab, (size_t)(i * 37 % 300 + 1));
    }
    assert_null(posemb_arena_alloc(&a, SIZE_MAX - 8));
    assert_null(posemb_arena_floats(&a, SIZE_MAX / 2));
    posemb_arena_free(&a);

    /* A fixed arena never grows: the training loop cannot allocate by accident. */
    assert_int_equal(posemb_arena_init_fixed(&a, 1024), 0);
    assert_non_null(posemb_arena_floats(&a, 128));
    assert_non_null(posemb_arena_floats(&a, 128));
    assert_null(posemb_arena_floats(&a, 1));
    assert_int_equal(a.used, 1024);
    posemb_arena_free(&a);
}

static void test_tensor(void **state)
{
    int64_t ok[3] = {2, 3, 4}, neg[2] = {2, -1}, huge[3] = {INT64_MAX / 2, 3, 1}, zero[2] = {5, 0};
    assert_int_equal(posemb_shape_numel(3, ok), 24);
    assert_int_equal(posemb_shape_numel(0, ok), 1);
    assert_int_equal(posemb_shape_numel(2, neg), -1);
    assert_int_equal(posemb_shape_numel(3, huge), -1);
    assert_int_equal(posemb_shape_numel(2, zero), 0);
    char buf[64];
    posemb_shape_str(3, ok, buf, sizeof buf);
    assert_string_equal(buf, "[2, 3, 4]");
    posemb_shape_str(0, ok, buf, sizeof buf);
    assert_string_equal(buf, "[]");
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_tensor t;
    posemb_error err;
    assert_int_equal(posemb_tensor_alloc(&t, &a, 3, ok, "t", &err), POSEMB_OK);
    assert_int_equal(posemb_tensor_numel(&t), 24);
    assert_int_equal(posemb_tensor_alloc(&t, &a, 3, huge, "big", &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "big"));
    posemb_arena_free(&a);
}

/* PCG32 with seed 42, stream 54: the first outputs of the reference
 * implementation's demo (pcg32-demo in pcg-c-basic). */
static void test_rng_reference(void **state)
{
    const uint32_t want[6] = {0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e};
    posemb_rng r;
    posemb_rng_seed(&r, 42, 54);
    for (int i = 0; i < 6; i++) assert_int_equal(posemb_rng_u32(&r), want[i]);
}

static void test_rng_distributions(void **state)
{
    posemb_rng a, b;
    posemb_rng_seed(&a, 7, 1);
    posemb_rng_seed(&b, 7, 1);
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double x = posemb_rng_normal(&a);
        assert_true(x == posemb_rng_normal(&b)); /* reproducible */
        sum += x;
        sq += x * x;
    }
    /* Mean within 4 standard errors of 0, variance within 2%. */
    assert_true(fabs(sum / n) < 4.0 / sqrt(n));
    assert_true(fabs(sq / n - 1.0) < 0.02);
    int counts[7] = {0};
    for (int i = 0; i < 70000; i++) {
        uint32_t k = posemb_rng_below(&a, 7);
        assert_true(k < 7);
        counts[k]++;
    }
    for (int k = 0; k < 7; k++) assert_true(abs(counts[k] - 10000) < 500);
    for (int i = 0; i < 1000; i++) {
        double u = posemb_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
    }
    posemb_rng_seed(&b, 7, 2); /* another stream differs */
    posemb_rng_seed(&a, 7, 1);
    assert_true(posemb_rng_u32(&a) != posemb_rng_u32(&b));
}

static void test_threads(void **state)
{
    assert_int_equal(posemb_threads_set(1), 1);
    assert_int_equal(posemb_threads_max(), 1);
    assert_int_equal(posemb_threads_set(2), 2);
    assert_int_equal(posemb_thread_id(), 0);
}

/* The default count from its readings: affinity, quota (rounded up), and
 * the other runnable tasks, which fill the CPUs outside the set first. */
static void test_threads_from(void **state)
{
    assert_int_equal(threads_from(2, 0, 2, 0), 2);   /* quiet */
    assert_int_equal(threads_from(2, 0, 2, 1), 1);   /* one busy loop */
    assert_int_equal(threads_from(2, 0, 2, 2), 1);   /* two: never below 1 */
    assert_int_equal(threads_from(8, 1.5, 8, 0), 2); /* a 1.5-CPU quota */
    assert_int_equal(threads_from(8, 4, 8, 6), 2);   /* 6 busy of 8, quota 4 */
    assert_int_equal(threads_from(2, 0, 64, 62), 2); /* pinned to 2 of 64; 62 tasks fit elsewhere */
    assert_int_equal(threads_from(2, 0, 64, 63), 1);
    assert_int_equal(threads_from(4, 0.5, 4, 0), 1);
    assert_int_equal(threads_from(4, 1e18, 4, 0), 4); /* a v1 quota of "unlimited" size */
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (char *p = strchr(path + strlen(dir) + 1, '/'); p; p = strchr(p + 1, '/')) { /* the folders on the way */
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

/* cgroup v2 takes the smallest cpu.max on the way to the root; v1 reads
 * the cpu controller's quota and period; "max" and -1 mean none; and the
 * loadavg reading subtracts the caller. */
static void test_threads_readings(void **state)
{
    char *root = tu_tmpdir(), fs[1024], self[1024];
    snprintf(fs, sizeof fs, "%s/cg", root);
    snprintf(self, sizeof self, "%s/self", root);
    write_text(root, "self", "0::/user.slice/job\n");
    write_text(root, "cg/user.slice/job/cpu.max", "max 100000\n");
    assert_true(threads_cgroup_quota(fs, self) == 0);
    write_text(root, "cg/user.slice/cpu.max", "300000 100000\n");
    assert_true(threads_cgroup_quota(fs, self) == 3.0);
    write_text(root, "cg/user.slice/job/cpu.max", "150000 100000\n");
    assert_true(threads_cgroup_quota(fs, self) == 1.5);
    write_text(root, "self", "12:pids:/x\n4:cpu,cpuacct:/docker/abc\n");
    write_text(root, "cg/cpu/docker/abc/cpu.cfs_quota_us", "-1\n");
    write_text(root, "cg/cpu/docker/abc/cpu.cfs_period_us", "100000\n");
    assert_true(threads_cgroup_quota(fs, self) == 0);
    write_text(root, "cg/cpu/docker/abc/cpu.cfs_quota_us", "250000\n");
    assert_true(threads_cgroup_quota(fs, self) == 2.5);
    assert_true(threads_cgroup_quota(fs, "/nonexistent") == 0);
    write_text(root, "loadavg", "2.01 1.50 0.90 3/187 4242\n");
    assert_int_equal(threads_others_running(self), 0); /* not a loadavg: no load */
    snprintf(self, sizeof self, "%s/loadavg", root);
    assert_int_equal(threads_others_running(self), 2);
    tu_rmtree(root);
    free(root);
}

static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* OpenBLAS shares OpenMP's pool (the OpenMP build is the one loaded, through
 * the build's runpath whatever Debian's alternatives say): products inside a
 * posemb parallel region run on their callers' threads and start none. */
static void test_blas_in_parallel_region(void **state)
{
    enum { n = 192 };
    assert_int_equal(openblas_get_parallel(), 2); /* 0 sequential, 1 pthreads, 2 OpenMP */
    posemb_threads_set(2);
    float *a = calloc(n * n, sizeof *a), *c = calloc(2 * n * n, sizeof *c);
    assert_true(a && c);
    int tasks[2];
    for (int pass = 0; pass < 2; pass++) { /* the first makes OpenMP's pool */
#pragma omp parallel num_threads(2)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, a, n, 0.0f,
                    c + (size_t)omp_get_thread_num() * n * n, n);
        tasks[pass] = task_count();
    }
    assert_int_equal(tasks[1], tasks[0]);
    assert_true(tasks[1] <= 2); /* the caller and one OpenMP worker */
    free(a);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error),
        cmocka_unit_test(test_copy_file),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_tensor),
        cmocka_unit_test(test_rng_reference),
        cmocka_unit_test(test_rng_distributions),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_threads_from),
        cmocka_unit_test(test_threads_readings),
        cmocka_unit_test(test_blas_in_parallel_region),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
