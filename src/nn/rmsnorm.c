/* RMSNorm (Zhang & Sennrich 2019) as Hugging Face's LlamaRMSNorm computes it
 * in float32: y = w * x / sqrt(mean(x^2) + eps), no mean subtracted, no bias. */
#include <math.h>
#include <string.h>

#include "posemb/nn.h"
#include "core/vmath.h"
#include "core/simd.h"
#include "nn/nn_internal.h"
#include "gemm_impl.h"

/* One row: y = w x s, s = 1 / sqrt(mean(x^2) + eps); returns s. */
static inline float rms_row(float *y, const float *x, const float *w, int C, float eps)
{
    float s = (float)(1.0 / sqrt(vm_dot(x, x, C) / C + eps));
    if (!w) /* a norm without weight (Llama 4's q/k "L2Norm") */
        for (int i = 0; i < C; i++) y[i] = x[i] * s;
    else
        for (int i = 0; i < C; i++) y[i] = w[i] * (x[i] * s);
    return s;
}

/* One row's input gradient: dx += s (g - x s^2 mean(g x)), g = dy w. dx may be dy (then =, not +=). */
static inline void rms_row_backward(float *dx, int add, const float *dy, const float *x, const float *w, float s, int C)
{
    double gx = 0.0;
    for (int i = 0; i < C; i++) gx += (double)dy[i] * (w ? w[i] : 1.0f) * x[i];
    float k = (float)(gx / C) * s * s;
    for (int i = 0; i < C; i++) dx[i] = (add ? dx[i] : 0.0f) + s * (dy[i] * (w ? w[i] : 1.0f) - x[i] * k);
}

/* In a bf16 pass the output is also rounded for the next product, a row at a
 * time while it is in cache (y16: matmul_stash_claim's copy of y). */
POSEMB_KERNEL void posemb_nn_rmsnorm_forward(float *y, uint16_t *y16, float *rstd, const float *x, const float *w,
                                             int N, int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        rstd[t] = rms_row(y + (long)t * C, x + (long)t * C, w, C, eps);
        if (y16) bf16_round_row(y16 + (long)t * C, y + (long)t * C, C);
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_rmsnorm_forward);

/* dw[i] += sum_t dy[t, i] x[t, i] rstd[t], by blocks of 16 columns summed
 * over rows in order, so the result does not depend on the thread count. */
POSEMB_KERNEL static void rmsnorm_backward_weight(float *dw, const float *dy, const float *x, const float *rstd, int N,
                                                  int C)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int t = 0; t < N; t++) {
            const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
            for (int i = c0; i < c1; i++) dw[i] += dyt[i] * (xt[i] * rstd[t]);
        }
    }
}

/* dx += rstd * (g - x rstd^2 mean(g x)), g = dy * w. */
POSEMB_KERNEL void posemb_nn_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                                              const float *rstd, int N, int C)
{
    if (dw) rmsnorm_backward_weight(dw, dy, x, rstd, N, C);
    if (!dx) return;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) rms_row_backward(dx + (long)t * C, 1, dy + (long)t * C, x + (long)t * C, w, rstd[t], C);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_rmsnorm_backward);

/* Token n's rows in qkv: H query heads, then KV key heads (then the values, untouched). */
POSEMB_KERNEL void posemb_nn_qk_rmsnorm_forward(float *qkv, float *raw, float *rstd, const float *wq, const float *wk,
                                                int N, int H, int KV, int d, float eps)
{
    long W = (long)(H + 2 * KV) * d, R = H + KV;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *x = qkv + n * W, *r = raw + n * R * d;
        memcpy(r, x, (size_t)(R * d) * sizeof *r);
        for (int h = 0; h < R; h++) rstd[n * R + h] = rms_row(x + h * d, r + h * d, h < H ? wq : wk, d, eps);
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_qk_rmsnorm_forward);

/* dwq, dwk [d] += each feature's gradient, summed over tokens and heads in order, for any thread count. */
POSEMB_KERNEL static void qk_norm_weight_grads(float *dwq, float *dwk, const float *dqkv, const float *raw,
                                               const float *rstd, int N, int H, int KV, int d)
{
    long W = (long)(H + 2 * KV) * d, R = H + KV;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < d; i++) {
        float sq = 0, sk = 0;
        for (long n = 0; n < N; n++)
            for (int h = 0; h < R; h++) {
                float g = dqkv[n * W + h * d + i] * raw[(n * R + h) * d + i] * rstd[n * R + h];
                if (h < H) sq += g;
                else sk += g;
            }
        dwq[i] += sq;
        dwk[i] += sk;
    }
}

POSEMB_KERNEL void posemb_nn_qk_rmsnorm_backward(float *dqkv, float *dwq, float *dwk, const float *raw,
                                                 const float *rstd, const float *wq, const float *wk, int N, int H,
                                                 int KV, int d)
{
    long W = (long)(H + 2 * KV) * d, R = H + KV;
    if (dwq) qk_norm_weight_grads(dwq, dwk, dqkv, raw, rstd, N, H, KV, d);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int h = 0; h < R; h++)
            rms_row_backward(dqkv + n * W + h * d, 0, dqkv + n * W + h * d, raw + (n * R + h) * d, h < H ? wq : wk,
                             rstd[n * R + h], d);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_qk_rmsnorm_backward);
