/* The parts of the default thread count that read the system, with their
 * paths as arguments so that tests can give them a fake /proc and cgroup
 * tree. */
#ifndef POSEMB_THREADS_IMPL_H
#define POSEMB_THREADS_IMPL_H

/* The CPU quota of the cgroup named in cgroup_file (a /proc/self/cgroup),
 * under the cgroup file system mounted at root: the smallest quota/period of
 * cgroup v2's cpu.max on the path up to root, or of v1's cpu.cfs_quota_us /
 * cpu.cfs_period_us; 0 when there is none. */
double threads_cgroup_quota(const char *root, const char *cgroup_file);
/* Runnable tasks on the machine other than the caller (the 4th field of
 * /proc/loadavg, less one), the fewest of 10 samples 5 ms apart, so that a
 * process that merely starts beside posemb (the reader of a pipe) is not
 * taken for load; 0 when unreadable. */
int threads_others_running(const char *loadavg_file);
/* The count from those readings: allowed CPUs (affinity), capped by the
 * quota rounded up, less the CPUs that the other runnable tasks occupy among
 * them (assuming they fill the CPUs outside the allowed set first); at
 * least 1. */
int threads_from(int allowed, double quota, int online, int others);

#endif
