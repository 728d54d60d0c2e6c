/* The fp32 dense products of small widths on libxsmm's JIT kernels (Debian:
 * libxsmm-dev), where they beat OpenBLAS: the studies' width-64 layers, whose
 * products OpenBLAS runs at a fraction of its peak (bench/README.md, "libxsmm
 * for the width-64 products"). A build without libxsmm declines every
 * product, and posemb_nn_gemm keeps OpenBLAS.
 *
 * libxsmm works column-major, and a row-major C [M, N] = op(A) op(B) is the
 * column-major C^T = op(B)^T op(A)^T on the same memory. Its kernels (1.17)
 * take no transposed first operand, alpha 1 only and beta 0 or 1, so:
 *   - C = A B (the tokens in M): blocks of 64 rows of C, one kernel each;
 *   - C = A B^T (a [out, in] weight's forward): B transposed once per call
 *     into a buffer on the stack (at most 128 x 128 floats) or, for the
 *     narrow and wide weights, the calling thread's own buffer, then as A B;
 *   - C = A^T B (a weight's gradient, the tokens in K): K in blocks of 64
 *     added in order into C, whose rows go in runs of 32 to the threads.
 * The blocks and runs are cut from the shape alone, never from the thread
 * count, so every thread count calls the same kernels on the same pieces:
 * the bits do not depend on it. (libxsmm's code for the last columns of a
 * kernel changes with the kernel's n, so runs cut per thread would.) */
#include "gemm_impl.h"

#include "nn/nn_internal.h"

#ifndef POSEMB_HAVE_XSMM
int gemm_xsmm_built(void) { return 0; }

const char *posemb_small_products(void) { return "OpenBLAS"; }

int gemm_xsmm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc)
{
    return 0;
}
#else
#include <libxsmm.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>

enum {
    SIDE = GEMM_XSMM_SIDE, /* the largest width taken (both small sides) */
    NARROW = 128,          /* beyond SIDE: a weight with one side at most NARROW ... */
    WIDE = 1024,           /* ... and the other at most WIDE (the width-128 layers' 384, 512, 688) */
    PACK = 128 * 128,      /* the largest B transposed on the stack (64 KB) */
    BLOCK = 64,            /* the tokens a kernel call covers */
    RUN = 32,              /* the rows of a weight's gradient a kernel call covers */
    TAKE_MIN = 1 << 18,    /* multiply-adds below which OpenBLAS is faster (a kernel lookup costs about 1 us) */
    SPLIT_MIN = 1 << 20    /* below this (about 0.1 ms of work) a second thread's start costs more than it saves */
};

/* A kernel C (m x n, ldc) = beta C + A (m x k, lda) B (k x n, ldb), column-major; NULL where libxsmm refuses. */
static libxsmm_smmfunction kernel(int m, int n, int k, int lda, int ldb, int ldc, float beta, int flags)
{
    const float one = 1.0f;
    const libxsmm_blasint la = lda, lb = ldb, lc = ldc;
    return libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &one, &beta, &flags, NULL);
}

int gemm_xsmm_built(void) { return 1; }

const char *posemb_small_products(void) { return "libxsmm " POSEMB_XSMM_VERSION; }

static int threads_for(long madds) { return madds < SPLIT_MIN ? 1 : omp_get_max_threads(); }

/* C [M, N] = A [M, K] B [K, N] + beta C: C^T's columns (C's rows) in blocks of BLOCK. */
static int rows_blocked(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc)
{
    int blocks = (M + BLOCK - 1) / BLOCK, tail = M - (blocks - 1) * BLOCK;
    libxsmm_smmfunction full = kernel(N, BLOCK, K, ldb, lda, ldc, beta, 0);
    libxsmm_smmfunction last = tail == BLOCK ? full : kernel(N, tail, K, ldb, lda, ldc, beta, 0);
    if (!full || !last) return 0;
    int threads = threads_for((long)M * N * K);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int b = 0; b < blocks; b++) {
        libxsmm_smmfunction run = b == blocks - 1 ? last : full;
        run(B, A + (long)b * BLOCK * lda, C + (long)b * BLOCK * ldc);
    }
    return 1;
}

/* C [M, N] = A^T B + beta C, A [K, M], B [K, N]: C^T (N x M) = B^T (N x K) A (K x M), A read through libxsmm's
 * transposed second operand; C's rows in runs of RUN, each summing K's blocks of BLOCK in order. */
static int depth_blocked(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc)
{
    int runs = (M + RUN - 1) / RUN, rtail = M - (runs - 1) * RUN;
    int depths = (K + BLOCK - 1) / BLOCK, ktail = K - (depths - 1) * BLOCK;
    libxsmm_smmfunction kern[2][2][2]; /* [first depth block][last depth block][last run of rows] */
    for (int f = 0; f < 2; f++)
        for (int l = 0; l < 2; l++)
            for (int r = 0; r < 2; r++)
                if (!(kern[f][l][r] = kernel(N, r ? rtail : RUN, l ? ktail : BLOCK, ldb, lda, ldc, f ? beta : 1.0f,
                                             LIBXSMM_GEMM_FLAG_TRANS_B)))
                    return 0;
    int threads = threads_for((long)M * N * K);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int p = 0; p < runs; p++)
        for (int d = 0; d < depths; d++) {
            libxsmm_smmfunction run = kern[d == 0][d == depths - 1][p == runs - 1];
            run(B + (long)d * BLOCK * ldb, A + (long)d * BLOCK * lda + (long)p * RUN, C + (long)p * RUN * ldc);
        }
    return 1;
}

/* One buffer per thread for the transposes above PACK, kept for its next
 * products and freed when the thread ends (no allocation per product). */
typedef struct pack_buf {
    size_t cap;
    float data[];
} pack_buf;
static pthread_key_t pack_key;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static int pack_key_ok;

static void pack_key_make(void) { pack_key_ok = pthread_key_create(&pack_key, free) == 0; }

/* This thread's buffer of at least n floats, or NULL (out of memory: the product is declined). */
static float *thread_pack(size_t n)
{
    pthread_once(&pack_once, pack_key_make);
    if (!pack_key_ok) return NULL;
    pack_buf *b = pthread_getspecific(pack_key);
    if (b && b->cap >= n) return b->data;
    pack_buf *grown = malloc(sizeof *grown + n * sizeof(float));
    if (!grown || pthread_setspecific(pack_key, grown)) {
        free(grown);
        return NULL;
    }
    free(b);
    grown->cap = n;
    return grown->data;
}

/* C [M, N] = A [M, K] B^T + beta C, B [N, K], above PACK: B transposed into the thread's buffer. */
static int transposed_b_wide(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
                             float *C, int ldc)
{
    float *bt = thread_pack((size_t)N * K);
    if (!bt) return 0;
    libxsmm_otrans(bt, B, sizeof *bt, K, N, ldb, N);
    return rows_blocked(M, N, K, A, lda, bt, N, beta, C, ldc);
}

/* C [M, N] = A [M, K] B^T + beta C, B [N, K]: B transposed into a buffer of this frame, then as A B. Its own
 * function (not inlined) so that the 64 KB frame is taken only by the products that use it, not by every call
 * of gemm_xsmm (among them the declined ones from threads with small stacks). */
static __attribute__((noinline)) int transposed_b(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                                                  float beta, float *C, int ldc)
{
    float bt[PACK]; /* B as [K, N] */
    libxsmm_otrans(bt, B, sizeof *bt, K, N, ldb, N);
    return rows_blocked(M, N, K, A, lda, bt, N, beta, C, ldc);
}

/* A weight of sides r and c (the product's two sides that are not the
 * tokens) with one side at most NARROW and the other in (SIDE, WIDE]: the
 * width-128 layers' (bench/README.md, "libxsmm for the width-128 layers'
 * narrow and wide weights"). */
static int narrow_wide(int r, int c)
{
    int lo = r < c ? r : c, hi = r < c ? c : r;
    return lo <= NARROW && hi > SIDE && hi <= WIDE;
}

int gemm_xsmm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc)
{
    if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f) || M < 1 || N < 1 || K < 1 || (long)M * N * K < TAKE_MIN ||
        omp_in_parallel())
        return 0;
    if (trans_a) /* the tokens in K */
        return !trans_b && ((M <= SIDE && N <= SIDE) || narrow_wide(M, N)) &&
               depth_blocked(M, N, K, A, lda, B, ldb, beta, C, ldc);
    if (narrow_wide(N, K))
        return trans_b ? transposed_b_wide(M, N, K, A, lda, B, ldb, beta, C, ldc)
                       : rows_blocked(M, N, K, A, lda, B, ldb, beta, C, ldc);
    if (N > SIDE || K > SIDE) return 0;
    if (!trans_b) return rows_blocked(M, N, K, A, lda, B, ldb, beta, C, ldc);
    return N * K <= PACK && transposed_b(M, N, K, A, lda, B, ldb, beta, C, ldc);
}
#endif
