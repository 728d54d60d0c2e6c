/* GELU and the feed-forward's second product in a bf16 model, train-mini's
 * shapes (4096 tokens x 1024 into 256), two ways taking turns in one
 * process: GELU, then the product converting GELU's output to bf16 (the
 * path before), against GELU writing that bf16 copy itself
 * (posemb_nn_gelu_forward_rows into matmul_stash_claim's copy), the product
 * taking it. usage: bench_gelu_fused [THREADS] [REPEATS]; one JSON line,
 * medians of REPEATS rounds. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

enum { N = 4096, I = 1024, D = 256 };

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    int threads = argc > 1 ? atoi(argv[1]) : 2, repeats = argc > 2 ? atoi(argv[2]) : 31;
    if (threads < 1 || repeats < 1) {
        fprintf(stderr, "usage: bench_gelu_fused [THREADS] [REPEATS]\n");
        return 2;
    }
    posemb_threads_set(threads);
    posemb_matmul *mm;
    posemb_error err;
    if (posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err)) {
        fprintf(stderr, "bench_gelu_fused: %s\n", err.msg);
        return 1;
    }
    float *x = malloc((size_t)N * I * sizeof *x), *ga = malloc((size_t)N * I * sizeof *ga),
          *w = malloc((size_t)D * I * sizeof *w), *b = malloc(D * sizeof *b), *y = malloc((size_t)N * D * sizeof *y);
    double *before = malloc((size_t)repeats * sizeof *before), *fused = malloc((size_t)repeats * sizeof *fused);
    if (!x || !ga || !w || !b || !y || !before || !fused) return 1;
    for (long i = 0; i < (long)N * I; i++) x[i] = (float)(i % 97) / 24.0f - 2.0f;
    for (long i = 0; i < (long)D * I; i++) w[i] = (float)(i % 89) / 89.0f - 0.5f;
    for (int i = 0; i < D; i++) b[i] = 0.01f * (float)i;
    for (int r = -2; r < repeats; r++) { /* two warm-up rounds */
        matmul_new_pass(mm, 1);
        double t0 = bench_now();
        posemb_nn_gelu_forward(ga, x, (long)N * I, POSEMB_NN_GELU_ERF);
        posemb_nn_linear_forward(mm, y, ga, w, b, N, I, D, POSEMB_NN_W_OUT_IN);
        double t1 = bench_now();
        matmul_new_pass(mm, 1);
        double t2 = bench_now();
        posemb_nn_gelu_forward_rows(ga, matmul_stash_claim(mm, ga, N, I), x, N, I, POSEMB_NN_GELU_ERF);
        posemb_nn_linear_forward(mm, y, ga, w, b, N, I, D, POSEMB_NN_W_OUT_IN);
        double t3 = bench_now();
        if (r >= 0) {
            before[r] = 1e3 * (t1 - t0);
            fused[r] = 1e3 * (t3 - t2);
        }
    }
    double m0 = bench_median(before, repeats), m1 = bench_median(fused, repeats);
    printf(
        "{\"bench\": \"gelu_fused\", \"tokens\": %d, \"inter\": %d, \"out\": %d, \"threads\": %d, \"before_ms\": %.3f, "
        "\"fused_ms\": %.3f, \"speedup\": %.3f, \"repeats\": %d}\n",
        N, I, D, threads, m0, m1, m0 / m1, repeats);
    posemb_matmul_free(mm);
    return 0;
}
