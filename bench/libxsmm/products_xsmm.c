/* OpenBLAS against libxsmm (Debian: libxsmm-dev) on the dense products of
 * the study's train-small step (bench/README.md, "libxsmm for the width-64
 * products"): one layer's four linear maps (q k v, output, the two FFN
 * maps; 1024 tokens, width 64, FFN 128), forward x W^T and backward dy W and
 * dy^T x, as posemb_nn_gemm issues them to OpenBLAS and as libxsmm's JIT
 * kernels compute them on blocks of 64 tokens; checks that both give the
 * same numbers, then times them alternately (best of 5 rounds); and the
 * same for the layer's attention products per sequence and head (two
 * forward, four backward).
 * Built only where pkg-config finds libxsmm; not part of bench/run.
 * Exits 1 when the two disagree. usage: bench_products_xsmm [REPS] (default
 * 200), e.g. build/bench_products_xsmm 300 */
#include <cblas.h>
#include <libxsmm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posemb/blas.h"
#include "nn/nn_internal.h"

enum { T = 1024, TB = 64, NSEQ = 32, HEADS = 4, HD = 16, N = 32 };
/* float32 sums of up to 1024 terms in another order: a few units in the last
 * place of the largest value; a wrong mapping is off by the values themselves */
#define TOLERANCE 1e-5

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

/* One linear layer's three products, row-major as posemb_nn_linear_forward
 * and _backward issue them: Y[T,Nout] += X[T,K] W^T (Y holds the bias, so
 * beta 1), dX[T,K] += dY W, dW[Nout,K] += dY^T X. */
static void blas_linear(int K, int Nout, const float *X, const float *W, float *Y, const float *dY, float *dX,
                        float *dW)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, Nout, K, 1.f, X, K, W, K, 1.f, Y, Nout);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, K, Nout, 1.f, dY, Nout, W, K, 1.f, dX, K);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Nout, K, T, 1.f, dY, Nout, X, K, 1.f, dW, K);
}

/* The same with libxsmm's JIT kernels on blocks of TB tokens (column-major
 * views of the row-major buffers; Wt = W^T kept beside W for the forward). */
typedef struct {
    libxsmm_smmfunction fwd, bwd_x, bwd_w;
} xk;

/* A JIT kernel C[m,n] = beta C + A op(B), column-major, alpha 1. */
static libxsmm_smmfunction kernel(int m, int n, int k, int lda, int ldb, int ldc, float beta, int flags)
{
    float one = 1.f;
    libxsmm_blasint la = lda, lb = ldb, lc = ldc;
    return libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &one, &beta, &flags, NULL);
}

static xk xk_make(int K, int Nout)
{
    xk k;
    k.fwd = kernel(Nout, TB, K, Nout, K, Nout, 1.f, 0);                        /* Y^T += Wt-view X^T */
    k.bwd_x = kernel(K, TB, Nout, K, Nout, K, 1.f, 0);                         /* dX^T += W-view dY^T */
    k.bwd_w = kernel(K, Nout, TB, K, Nout, K, 1.f, LIBXSMM_GEMM_FLAG_TRANS_B); /* dW^T += X^T dY */
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

/* The same with libxsmm (column-major views of the row-major buffers): k and
 * v are packed per head into contiguous [N, HD] column-major blocks first,
 * since q k^T contracts the dimension that is contiguous in both. */
typedef struct {
    libxsmm_smmfunction s, o, dp, dv, dq, dk;
} xa;

static xa xa_make(void)
{
    int ld = 3 * HEADS * HD, tb = LIBXSMM_GEMM_FLAG_TRANS_B;
    xa a;
    a.s = kernel(N, N, HD, N, ld, N, 0.f, 0);    /* S^T = Kc Q^T */
    a.o = kernel(HD, N, N, ld, N, HD, 0.f, 0);   /* O^T = V^T P^T */
    a.dp = kernel(N, N, HD, N, HD, N, 0.f, 0);   /* dP^T = Vc dO^T */
    a.dv = kernel(HD, N, N, HD, N, HD, 0.f, tb); /* dV^T = dO^T P */
    a.dq = kernel(HD, N, N, ld, N, HD, 0.f, 0);  /* dQ^T = K^T dS^T */
    a.dk = kernel(HD, N, N, ld, N, HD, 0.f, tb); /* dK^T = Q^T dS */
    return a;
}

static void pack_head(const float *x, int ld, float *out) /* out[c * N + r] = x[r * ld + c] */
{
    for (int r = 0; r < N; r++)
        for (int c = 0; c < HD; c++) out[c * N + r] = x[(size_t)r * ld + c];
}

static void xsmm_attention(const xa *a, const float *qkv, float *S, float *O, const float *dO, float *dP, float *dV,
                           float *dQ, float *dK)
{
    int ld = 3 * HEADS * HD;
    float kc[N * HD], vc[N * HD];
    for (int s = 0; s < NSEQ; s++)
        for (int h = 0; h < HEADS; h++) {
            const float *q = qkv + (size_t)s * N * ld + h * HD, *k = q + HEADS * HD, *v = k + HEADS * HD;
            size_t o = ((size_t)s * HEADS + h);
            pack_head(k, ld, kc);
            pack_head(v, ld, vc);
            a->s(kc, q, S + o * N * N);
            a->o(v, S + o * N * N, O + o * N * HD);
            a->dp(vc, dO + o * N * HD, dP + o * N * N);
            a->dv(dO + o * N * HD, S + o * N * N, dV + o * N * HD);
            a->dq(k, dP + o * N * N, dQ + o * N * HD);
            a->dk(q, dP + o * N * N, dK + o * N * HD);
        }
}

static double max_diff(const float *x, const float *y, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs(x[i] - y[i]));
    return e;
}

static double max_abs(const float *x, size_t n)
{
    double m = 1e-30;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* max |ref - x| over max |ref| */
static double rel_diff(const float *ref, const float *x, size_t n) { return max_diff(ref, x, n) / max_abs(ref, n); }

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1) {
        fprintf(stderr, "usage: bench_products_xsmm [REPS >= 1]\n");
        return 2;
    }
    openblas_set_num_threads(1); /* libxsmm's kernels run on one thread: so do OpenBLAS's here */
    libxsmm_init();
    printf("OpenBLAS kernels %s on 1 thread, libxsmm %s\n", posemb_blas_core(), LIBXSMM_VERSION);
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
    /* check: libxsmm's products equal OpenBLAS's from the same starting Y, dX
     * and dW (beta 1), to a tolerance relative to the largest value */
    for (int i = 0; i < 4; i++) {
        int K = shapes[i][0], No = shapes[i][1];
        size_t nY = (size_t)T * No, nX = (size_t)T * K, nW = (size_t)No * K;
        float *Y2 = rnd(nY), *dX2 = rnd(nX);
        memcpy(Y2, Y[i], nY * 4);
        memcpy(dX2, dX[i], nX * 4);
        memcpy(dWx[i], dWb[i], nW * 4); /* dW^T column-major is dW row-major: the same layout */
        blas_linear(K, No, X[i], W[i], Y[i], dY[i], dX[i], dWb[i]);
        xsmm_linear(&ks[i], K, No, X[i], Wt[i], W[i], Y2, dY[i], dX2, dWx[i]);
        double e = fmax(fmax(rel_diff(Y[i], Y2, nY), rel_diff(dX[i], dX2, nX)), rel_diff(dWb[i], dWx[i], nW));
        printf("shape %3d x %3d: max |OpenBLAS - libxsmm| / max |OpenBLAS| %.2e\n", K, No, e);
        free(Y2);
        free(dX2);
        if (!(e < TOLERANCE)) {
            fprintf(stderr, "bench_products_xsmm: libxsmm's linear products differ from OpenBLAS's (%.2e)\n", e);
            return 1;
        }
    }
    float *qkv = rnd((size_t)T * 192), *S = rnd((size_t)NSEQ * HEADS * N * N), *O = rnd((size_t)T * 64);
    float *dO = rnd((size_t)T * 64), *dP = rnd((size_t)NSEQ * HEADS * N * N), *dV = rnd((size_t)T * 64);
    float *dQ = rnd((size_t)T * 64), *dK = rnd((size_t)T * 64);
    xa ak = xa_make();
    if (!ak.s || !ak.o || !ak.dp || !ak.dv || !ak.dq || !ak.dk) {
        fprintf(stderr, "no JIT kernel for the attention's shapes\n");
        return 1;
    }
    { /* check: the attention's six products agree (every output starts random) */
        size_t nS = (size_t)NSEQ * HEADS * N * N, nO = (size_t)T * 64;
        float *S2 = rnd(nS), *O2 = rnd(nO), *dP2 = rnd(nS), *dV2 = rnd(nO), *dQ2 = rnd(nO), *dK2 = rnd(nO);
        blas_attention(qkv, S, O, dO, dP, dV, dQ, dK);
        xsmm_attention(&ak, qkv, S2, O2, dO, dP2, dV2, dQ2, dK2);
        double e = fmax(fmax(rel_diff(S, S2, nS), rel_diff(O, O2, nO)),
                        fmax(fmax(rel_diff(dP, dP2, nS), rel_diff(dV, dV2, nO)),
                             fmax(rel_diff(dQ, dQ2, nO), rel_diff(dK, dK2, nO))));
        printf("attention: max |OpenBLAS - libxsmm| / max |OpenBLAS| %.2e\n", e);
        free(S2);
        free(O2);
        free(dP2);
        free(dV2);
        free(dQ2);
        free(dK2);
        if (!(e < TOLERANCE)) {
            fprintf(stderr, "bench_products_xsmm: libxsmm's attention products differ from OpenBLAS's (%.2e)\n", e);
            return 1;
        }
    }
    double tb = 1e9, tx = 1e9, ta = 1e9, tax = 1e9;
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
        for (int r = 0; r < reps; r++) xsmm_attention(&ak, qkv, S, O, dO, dP, dV, dQ, dK);
        double t4 = now();
        tax = fmin(tax, (t4 - t3) / reps);
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
    printf("one layer's attention products (fwd + bwd, %d heads x %d sequences, per head): OpenBLAS %.3f ms (%.1f "
           "GFLOP/s), libxsmm with k and v packed %.3f ms (%.1f GFLOP/s), ratio %.2f\n",
           HEADS, NSEQ, 1e3 * ta, aflops / ta * 1e-9, 1e3 * tax, aflops / tax * 1e-9, ta / tax);
    libxsmm_finalize();
    return 0;
}
