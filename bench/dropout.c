/* Dropout on a fine-tuning step's attention probabilities, [32, 4, 128,
 * 128] fp32 at p = 0.1: posemb_nn_dropout_forward against the per-element
 * call posemb_nn_dropout_scale that the tensor loops made before ef931b8
 * (the same decisions, the old speed), at 1 thread by default. Its PyTorch
 * peer is torch_dropout.py. usage: bench_dropout [THREADS] [REPEATS]
 * Prints one JSON line per engine. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "nn/nn_internal.h"

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    int threads = argc > 1 ? atoi(argv[1]) : 1, repeats = argc > 2 ? atoi(argv[2]) : 21;
    if (threads < 1 || repeats < 1) {
        fprintf(stderr, "usage: bench_dropout [THREADS] [REPEATS]\n");
        return 2;
    }
    posemb_threads_set(threads);
    const long n = 32L * 4 * 128 * 128;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *fused = malloc((size_t)repeats * sizeof *fused), *call = malloc((size_t)repeats * sizeof *call);
    if (!x || !y || !fused || !call) return 1;
    for (long i = 0; i < n; i++) x[i] = 1.0f / (float)(1 + i % 128);
    uint64_t key = posemb_nn_dropout_key(1, 2, 3);
    double kept = 0;
    for (int r = -1; r < repeats; r++) { /* one warm-up */
        double t0 = bench_now();
        posemb_nn_dropout_forward(y, x, n, 0.1f, key);
        double t1 = bench_now();
        for (long i = 0; i < n; i++) y[i] = x[i] * posemb_nn_dropout_scale(key, (uint64_t)i, 0.1f);
        double t2 = bench_now();
        if (r >= 0) {
            fused[r] = 1e3 * (t1 - t0);
            call[r] = 1e3 * (t2 - t1);
        }
    }
    for (long i = 0; i < n; i++) kept += y[i] != 0.0f;
    double a = bench_median(fused, repeats), b = bench_median(call, repeats);
    printf("{\"engine\": \"posemb\", \"bench\": \"dropout\", \"threads\": %d, \"elements\": %ld, \"ms\": %.3f, "
           "\"ns_per_element\": %.3f, \"kept\": %.4f}\n",
           threads, n, a, 1e6 * a / (double)n, kept / (double)n);
    printf("{\"engine\": \"posemb per-element call\", \"bench\": \"dropout\", \"threads\": 1, \"elements\": %ld, "
           "\"ms\": %.3f, \"ns_per_element\": %.3f}\n",
           n, b, 1e6 * b / (double)n);
    free(x);
    free(y);
    free(fused);
    free(call);
    return 0;
}
