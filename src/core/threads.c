#include "posemb/threads.h"

#include <omp.h>

/* OpenBLAS's own setter; declared here so that cblas.h's variant-specific
 * prototypes are not needed. */
void openblas_set_num_threads(int num_threads);

int posemb_threads_set(int n)
{
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
    return n;
}

int posemb_threads_max(void) { return omp_get_max_threads(); }

int posemb_thread_id(void) { return omp_get_thread_num(); }
