/* Threads: OpenMP, with OpenBLAS built on OpenMP so that both share one pool
 * and never oversubscribe the cores. */
#ifndef POSEMB_THREADS_H
#define POSEMB_THREADS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the thread count for posemb's loops and for BLAS; n <= 0 means all cores.
 * Returns the count in force. */
int posemb_threads_set(int n);
/* Threads a parallel region will use. */
int posemb_threads_max(void);
/* The calling thread's index inside a parallel region (0 outside). */
int posemb_thread_id(void);

#ifdef __cplusplus
}
#endif
#endif
