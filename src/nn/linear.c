#include "gemm_impl.h"
#include "posemb/nn.h"
#include "core/simd.h"
#include "nn/nn_internal.h"

/* Below this many elements a loop stays on one thread. */
#define PARALLEL_MIN 32768
#define COLS 64

/* db [out] += the column sums of dy [N, out]: threads own blocks of columns
 * and add the rows in order, so the sums do not depend on the thread count. */
POSEMB_KERNEL static void bias_grad(float *db, const float *dy, int N, int out)
{
    int blocks = (out + COLS - 1) / COLS;
#pragma omp parallel for schedule(static) if ((long)N * out > PARALLEL_MIN)
    for (int bl = 0; bl < blocks; bl++) {
        int o0 = bl * COLS, o1 = o0 + COLS < out ? o0 + COLS : out;
        float acc[COLS] = {0};
        for (int t = 0; t < N; t++) {
            const float *row = dy + (long)t * out;
            for (int o = o0; o < o1; o++) acc[o - o0] += row[o];
        }
        for (int o = o0; o < o1; o++) db[o] += acc[o - o0];
    }
}

/* In fp32 the bias is written into y and OpenBLAS adds the product to it
 * (beta 1): OpenBLAS would otherwise zero y in a pass of its own. In bf16
 * oneDNN adds the bias in the product's epilogue, so y is written once and
 * never read (a fill and a read of y less). */
POSEMB_KERNEL void posemb_nn_linear_forward(posemb_matmul *mm, float *y, const float *x, const float *w, const float *b,
                                            int N, int in, int out, posemb_nn_wlayout layout)
{
    int oi = layout == POSEMB_NN_W_OUT_IN, ldw = oi ? in : out;
    matmul_stash(mm, STASH_KEEP); /* x's and w's bf16 copies serve the backward too */
    if (!b || !matmul_bf16_bias(mm, oi, N, out, in, x, in, w, ldw, b, y, out)) {
        if (b) {
#pragma omp parallel for schedule(static) if ((long)N * out > PARALLEL_MIN)
            for (int t = 0; t < N; t++)
                for (int o = 0; o < out; o++) y[(long)t * out + o] = b[o];
        }
        posemb_nn_gemm(mm, 0, oi, N, out, in, 1.0f, x, in, w, ldw, b ? 1.0f : 0.0f, y, out);
    }
    matmul_stash(mm, STASH_OFF);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_linear_forward);

/* dx_beta 1: dx += d loss / dx; 0: dx = d loss / dx, with no read of dx
 * (OpenBLAS zeroes it in its own pass, as the memset it replaces did; oneDNN
 * writes it once). */
static void linear_backward(posemb_matmul *mm, float *dx, float dx_beta, float *dw, float *db, const float *dy,
                            const float *x, const float *w, int N, int in, int out, posemb_nn_wlayout layout)
{
    int oi = layout == POSEMB_NN_W_OUT_IN;
    matmul_reuse(mm, dy);        /* read by both products: converted to bf16 once */
    matmul_stash(mm, STASH_USE); /* w and x: the forward's copies */
    if (dx)                      /* dx [N, in] (+)= dy [N, out] . W as [out, in] */
        posemb_nn_gemm(mm, 0, !oi, N, in, out, 1.0f, dy, out, w, oi ? in : out, dx_beta, dx, in);
    if (dw) {
        if (oi) /* dW [out, in] += dy^T x */
            posemb_nn_gemm(mm, 1, 0, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in);
        else /* dW [in, out] += x^T dy */ posemb_nn_gemm(mm, 1, 0, in, out, N, 1.0f, x, in, dy, out, 1.0f, dw, out);
    }
    matmul_reuse(mm, NULL);
    matmul_stash(mm, STASH_OFF);
    if (db) bias_grad(db, dy, N, out);
}

void posemb_nn_linear_backward(posemb_matmul *mm, float *dx, float *dw, float *db, const float *dy, const float *x,
                               const float *w, int N, int in, int out, posemb_nn_wlayout layout)
{
    linear_backward(mm, dx, 1.0f, dw, db, dy, x, w, N, in, out, layout);
}

void posemb_nn_linear_backward_set(posemb_matmul *mm, float *dx, float *dw, float *db, const float *dy, const float *x,
                                   const float *w, int N, int in, int out, posemb_nn_wlayout layout)
{
    linear_backward(mm, dx, 0.0f, dw, db, dy, x, w, N, in, out, layout);
}
