/* OpenBLAS against libxsmm on the forward products (x W, 4096 tokens) of the
 * width-128 layers (bench/README.md, "libxsmm for the width-128 layers'
 * narrow and wide weights"): q, k, v (128 -> 384), Llama's SwiGLU (128 ->
 * 688, 344 -> 128), a 4x FFN (128 -> 512, 512 -> 128) and 128 -> 128; libxsmm
 * in blocks of 64 tokens as src/nn/gemm_xsmm.c runs it, one thread, best of
 * 7 rounds of 20 calls each. Not part of the build or of bench/run:
 *   cc -O2 -march=native bench/libxsmm/width128_shapes.c -o /tmp/width128_shapes \
 *     $(pkg-config --cflags --libs libxsmm) -lopenblas -lm
 *   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Cooperlake /tmp/width128_shapes */
#include <cblas.h>
#include <libxsmm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* n floats uniform in [-0.5, 0.5], 64-byte aligned. */
static float *rnd(size_t n)
{
    float *p = aligned_alloc(64, ((n * 4 + 63) / 64) * 64);
    for (size_t i = 0; p && i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
    return p;
}

/* C [M, N] = A [M, K] B [K, N], row-major, M a multiple of 64: column-major C^T = B^T A^T in blocks of 64 rows. */
static void xsmm_nn(int M, int N, int K, const float *A, const float *B, float *C, libxsmm_smmfunction f)
{
    for (int b = 0; b < M / 64; b++) f(B, A + (long)b * 64 * K, C + (long)b * 64 * N);
}

int main(void)
{
    static const int shapes[][3] = {{4096, 384, 128}, {4096, 688, 128}, {4096, 128, 344},
                                    {4096, 128, 128}, {4096, 512, 128}, {4096, 128, 512}};
    libxsmm_init();
    for (int s = 0; s < 6; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], flags = LIBXSMM_GEMM_FLAGS('N', 'N');
        float *A = rnd((size_t)M * K), *B = rnd((size_t)K * N), *C = rnd((size_t)M * N), *C2 = rnd((size_t)M * N);
        if (!A || !B || !C || !C2) return 1;
        float alpha = 1, beta = 0;
        libxsmm_blasint m = N, n = 64, k = K;
        libxsmm_smmfunction f = libxsmm_smmdispatch(m, n, k, &m, &k, &m, &alpha, &beta, &flags, NULL);
        if (!f) return 1;
        double tb = 1e9, tx = 1e9;
        for (int r = 0; r < 7; r++) {
            double t0 = now();
            for (int i = 0; i < 20; i++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A, K, B, N, 0, C, N);
            double t1 = now();
            for (int i = 0; i < 20; i++) xsmm_nn(M, N, K, A, B, C2, f);
            double t2 = now();
            tb = fmin(tb, t1 - t0);
            tx = fmin(tx, t2 - t1);
        }
        double gap = 0;
        for (size_t i = 0; i < (size_t)M * N; i++) gap = fmax(gap, fabs(C[i] - C2[i]));
        printf("x W %dx%dx%d: OpenBLAS %.3f ms, libxsmm %.3f ms, ratio %.2f (largest gap %.2g)\n", M, N, K,
               tb / 20 * 1e3, tx / 20 * 1e3, tb / tx, gap);
        free(A);
        free(B);
        free(C);
        free(C2);
    }
    return 0;
}
