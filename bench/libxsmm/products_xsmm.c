/* OpenBLAS against libxsmm (Debian: libxsmm-dev) on the dense products of
 * the study's train-small step (bench/README.md, "libxsmm for the width-64
 * products"): one layer's four linear maps (q k v, output, the two FFN
 * maps; 1024 tokens, width 64, FFN 128), forward x W^T and backward dy W and
 * dy^T x, as posemb_nn_gemm issues them to OpenBLAS and as libxsmm's JIT
 * kernels compute them on blocks of 64 tokens; checks that both give the
 * same numbers, then times them alternately (best of 5 rounds), and times
 * the layer's attention products per head with OpenBLAS for scale.
 * Built only where pkg-config finds libxsmm; not part of bench/run.
 * usage: bench_products_xsmm [REPS] (default 200), one thread:
 *        OMP_NUM_THREADS=1 build/bench_products_xsmm 300 */
#include <cblas.h>
#include <libxsmm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posemb/blas.h"

enum { T = 1024, TB = 64, NSEQ = 32, HEADS = 4, HD = 16, N = 32 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* n floats uniform in [-0.5, 0.5), 64-byte aligned; exits when out of memory. */
static float *rnd(size_t n)
{
    static unsigned long long state = 88172645463325252ULL;
    float *p = aligned_alloc(64, ((n * 4 + 63) / 64) * 64);
    if (!p) {
        fprintf(stderr, "bench_products_xsmm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        p[i] = (float)(state >> 40) / (float)(1 << 24) - 0.5f;
    }
    return p;
}

/* One linear layer's three products, row-major as posemb calls them:
 * Y[T,Nout] = X[T,K] W^T, dX[T,K] = dY W, dW[Nout,K] += dY^T X. */
static void blas_linear(int K, int Nout, const float *X, const float *W, float *Y, const float *dY, float *dX,
                        float *dW)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, Nout, K, 1.f, X, K, W, K, 0.f, Y, Nout);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, K, Nout, 1.f, dY, Nout, W, K, 0.f, dX, K);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Nout, K, T, 1.f, dY, Nout, X, K, 1.f, dW, K);
}

/* The same with libxsmm's JIT kernels on blocks of TB tokens (column-major
 * views of the row-major buffers; Wt = W^T kept beside W for the forward). */
typedef struct {
    libxsmm_smmfunction fwd, bwd_x, bwd_w;
} xk;

static xk xk_make(int K, int Nout)
{
    xk k;
    float one = 1.f, zero = 0.f;
    int f0 = LIBXSMM_GEMM_FLAG_NONE, ftb = LIBXSMM_GEMM_FLAG_TRANS_B;
    libxsmm_blasint nout = Nout, k_in = K;
    /* Y^T[Nout,TB] = Wt-view[Nout,K] X^T[K,TB] */
    k.fwd = libxsmm_smmdispatch(Nout, TB, K, &nout, &k_in, &nout, &one, &zero, &f0, NULL);
    /* dX^T[K,TB] = W-view[K,Nout] dY^T[Nout,TB] */
    k.bwd_x = libxsmm_smmdispatch(K, TB, Nout, &k_in, &nout, &k_in, &one, &zero, &f0, NULL);
    /* dW^T[K,Nout] += X^T[K,TB] (dY^T[Nout,TB])^T */
    k.bwd_w = libxsmm_smmdispatch(K, Nout, TB, &k_in, &nout, &k_in, &one, &one, &ftb, NULL);
    return k;
}

static void xsmm_linear(const xk *k, int K, int Nout, const float *X, const float *Wt, const float *W, float *Y,
                        const float *dY, float *dX, float *dW)
{
    for (int t = 0; t < T; t += TB) k->fwd(Wt, X + (size_t)t * K, Y + (size_t)t * Nout);
    for (int t = 0; t < T; t += TB) k->bwd_x(W, dY + (size_t)t * Nout, dX + (size_t)t * K);
    for (int t = 0; t < T; t += TB) k->bwd_w(X + (size_t)t * K, dY + (size_t)t * Nout, dW);
}

/* Attention per sequence and head: S[N,N] = Q K^T, O[N,HD] = P V, and the
 * backward dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q; q, k, v rows of
 * stride 3 * 64 inside the qkv buffer as posemb lays them out. */
static void blas_attention(const float *qkv, float *S, float *O, const float *dO, float *dP, float *dV, float *dQ,
                           float *dK)
{
    int ld = 3 * HEADS * HD;
    for (int s = 0; s < NSEQ; s++)
        for (int h = 0; h < HEADS; h++) {
            const float *q = qkv + (size_t)s * N * ld + h * HD, *k = q + HEADS * HD, *v = k + HEADS * HD;
            size_t o = ((size_t)s * HEADS + h);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, HD, 1.f, q, ld, k, ld, 0.f, S + o * N * N, N);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, HD, N, 1.f, S + o * N * N, N, v, ld, 0.f,
                        O + o * N * HD, HD);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, HD, 1.f, dO + o * N * HD, HD, v, ld, 0.f,
                        dP + o * N * N, N);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, HD, N, 1.f, S + o * N * N, N, dO + o * N * HD, HD,
                        0.f, dV + o * N * HD, HD);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, HD, N, 1.f, dP + o * N * N, N, k, ld, 0.f,
                        dQ + o * N * HD, HD);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, HD, N, 1.f, dP + o * N * N, N, q, ld, 0.f,
                        dK + o * N * HD, HD);
        }
}

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1) {
        fprintf(stderr, "usage: bench_products_xsmm [REPS >= 1]\n");
        return 2;
    }
    libxsmm_init();
    printf("OpenBLAS kernels %s, libxsmm %s\n", posemb_blas_core(), LIBXSMM_VERSION);
    const int shapes[4][2] = {{64, 192}, {64, 64}, {64, 128}, {128, 64}}; /* qkv, out, ffn1, ffn2 */
    float *X[4], *W[4], *Wt[4], *Y[4], *dY[4], *dX[4], *dWb[4], *dWx[4];
    xk ks[4];
    for (int i = 0; i < 4; i++) {
        int K = shapes[i][0], No = shapes[i][1];
        X[i] = rnd((size_t)T * K);
        W[i] = rnd((size_t)No * K);
        Wt[i] = rnd((size_t)No * K);
        for (int a = 0; a < No; a++)
            for (int b = 0; b < K; b++) Wt[i][(size_t)b * No + a] = W[i][(size_t)a * K + b];
        Y[i] = rnd((size_t)T * No);
        dY[i] = rnd((size_t)T * No);
        dX[i] = rnd((size_t)T * K);
        dWb[i] = rnd((size_t)No * K);
        dWx[i] = rnd((size_t)K * No);
        ks[i] = xk_make(K, No);
        if (!ks[i].fwd || !ks[i].bwd_x || !ks[i].bwd_w) {
            fprintf(stderr, "no JIT kernel for shape %d x %d\n", K, No);
            return 1;
        }
    }
    /* check: libxsmm's products equal OpenBLAS's */
    for (int i = 0; i < 4; i++) {
        int K = shapes[i][0], No = shapes[i][1];
        float *Y2 = rnd((size_t)T * No), *dX2 = rnd((size_t)T * K);
        memset(dWb[i], 0, (size_t)No * K * 4);
        memset(dWx[i], 0, (size_t)No * K * 4);
        blas_linear(K, No, X[i], W[i], Y[i], dY[i], dX[i], dWb[i]);
        xsmm_linear(&ks[i], K, No, X[i], Wt[i], W[i], Y2, dY[i], dX2, dWx[i]);
        double e = 0;
        for (size_t j = 0; j < (size_t)T * No; j++) e = fmax(e, fabs(Y[i][j] - Y2[j]));
        for (size_t j = 0; j < (size_t)T * K; j++) e = fmax(e, fabs(dX[i][j] - dX2[j]));
        for (int a = 0; a < No; a++) /* dWb[No,K] row-major; dWx holds dW^T column-major = dW row-major */
            for (int b = 0; b < K; b++) e = fmax(e, fabs(dWb[i][(size_t)a * K + b] - dWx[i][(size_t)a * K + b]));
        printf("shape %3d x %3d: max |OpenBLAS - libxsmm| %.2e\n", K, No, e);
        free(Y2);
        free(dX2);
    }
    float *qkv = rnd((size_t)T * 192), *S = rnd((size_t)NSEQ * HEADS * N * N), *O = rnd((size_t)T * 64);
    float *dO = rnd((size_t)T * 64), *dP = rnd((size_t)NSEQ * HEADS * N * N), *dV = rnd((size_t)T * 64);
    float *dQ = rnd((size_t)T * 64), *dK = rnd((size_t)T * 64);
    double tb = 1e9, tx = 1e9, ta = 1e9;
    for (int round = 0; round < 5; round++) { /* alternate, keep each side's best */
        double t0 = now();
        for (int r = 0; r < reps; r++)
            for (int i = 0; i < 4; i++) blas_linear(shapes[i][0], shapes[i][1], X[i], W[i], Y[i], dY[i], dX[i], dWb[i]);
        double t1 = now();
        for (int r = 0; r < reps; r++)
            for (int i = 0; i < 4; i++)
                xsmm_linear(&ks[i], shapes[i][0], shapes[i][1], X[i], Wt[i], W[i], Y[i], dY[i], dX[i], dWx[i]);
        double t2 = now();
        for (int r = 0; r < reps; r++) blas_attention(qkv, S, O, dO, dP, dV, dQ, dK);
        double t3 = now();
        tb = fmin(tb, (t1 - t0) / reps);
        tx = fmin(tx, (t2 - t1) / reps);
        ta = fmin(ta, (t3 - t2) / reps);
    }
    double flops = 0;
    for (int i = 0; i < 4; i++) flops += 3.0 * 2 * T * shapes[i][0] * shapes[i][1];
    printf("one layer's dense products (fwd + bwd, 4 linears, %d tokens): OpenBLAS %.3f ms (%.1f GFLOP/s), "
           "libxsmm %.3f ms (%.1f GFLOP/s), ratio %.2f\n",
           T, 1e3 * tb, flops / tb * 1e-9, 1e3 * tx, flops / tx * 1e-9, tb / tx);
    double aflops = 6.0 * 2 * NSEQ * HEADS * N * N * HD;
    printf("one layer's attention products (fwd + bwd, %d heads x %d sequences, OpenBLAS per head): %.3f ms (%.1f "
           "GFLOP/s)\n",
           HEADS, NSEQ, 1e3 * ta, aflops / ta * 1e-9);
    libxsmm_finalize();
    return 0;
}
