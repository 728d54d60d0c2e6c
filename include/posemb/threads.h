/* Threads: OpenMP, with OpenBLAS built on OpenMP so that both share one pool
 * and never oversubscribe the cores. The count is chosen once per run: a
 * run's reductions are grouped by thread, so its results depend on it. */
#ifndef POSEMB_THREADS_H
#define POSEMB_THREADS_H

#include "posemb/api.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The thread count to use when none is asked for: OMP_NUM_THREADS when set;
 * otherwise the CPUs this process may use (its affinity mask, capped by a
 * cgroup CPU quota, rounded up) less those that other processes keep busy now
 * (the fewest runnable tasks seen over 45 ms), at least 1. Call it before starting
 * parallel work: posemb's own idle threads would count as load. When the
 * count was lowered for load, why (may be NULL) receives a sentence saying
 * so; otherwise why is "". */
POSEMB_API int posemb_threads_default(char *why, size_t cap);
/* Sets the thread count for posemb's loops and for BLAS; n <= 0 means
 * posemb_threads_default(). Returns the count in force. */
POSEMB_API int posemb_threads_set(int n);
/* Threads a parallel region will use. */
POSEMB_API int posemb_threads_max(void);

#ifdef __cplusplus
}
#endif
#endif
