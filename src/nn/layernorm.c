#include <math.h>
#include <string.h>

#include "posemb/nn.h"
#include "core/vmath.h"
#include "core/simd.h"
#include "nn/nn_internal.h"
#include "gemm_impl.h"

/* One row: yt = LN(xt), its mean and rstd. */
static inline void layernorm_row(float *yt, float *mean, float *rstd, const float *xt, const float *w, const float *b,
                                 int C, float eps)
{
    float m = (float)(vm_sum(xt, C) / C);
    float s = (float)(1.0 / sqrt(vm_sq_dev(xt, C, m) / C + eps));
    for (int i = 0; i < C; i++) yt[i] = (xt[i] - m) * s * w[i] + b[i];
    *mean = m;
    *rstd = s;
}

POSEMB_KERNEL void posemb_nn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *w,
                                               const float *b, int N, int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) layernorm_row(y + (long)t * C, &mean[t], &rstd[t], x + (long)t * C, w, b, C, eps);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_layernorm_forward);

/* The residual add fused: each row of r gets its x, then is normalised while
 * it is in cache (one pass over r instead of two), and in a bf16 pass its
 * output rounded for the next product while it is in cache too. */
POSEMB_KERNEL void posemb_nn_add_layernorm_forward(float *y, uint16_t *y16, float *mean, float *rstd, float *r,
                                                   const float *x, const float *w, const float *b, int N, int C,
                                                   float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *rt = r + (long)t * C;
        const float *xt = x + (long)t * C;
        for (int i = 0; i < C; i++) rt[i] += xt[i];
        layernorm_row(y + (long)t * C, &mean[t], &rstd[t], rt, w, b, C, eps);
        if (y16) bf16_round_row(y16 + (long)t * C, y + (long)t * C, C);
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_add_layernorm_forward);

/* dw[i] += sum_t dy[t, i] xhat[t, i], db[i] += sum_t dy[t, i]: threads take
 * blocks of 16 columns (a cache line) and sum over rows in order, so the
 * result does not depend on the thread count. */
POSEMB_KERNEL static void layernorm_backward_params(float *dw, float *db, const float *dy, const float *x,
                                                    const float *mean, const float *rstd, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int t = 0; t < N; t++) {
            const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
            float m = mean[t], s = rstd[t];
            for (int i = c0; i < c1; i++) {
                if (dw) dw[i] += dyt[i] * ((xt[i] - m) * s);
                if (db) db[i] += dyt[i];
            }
        }
    }
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w; added into
 * dx (set 0) or written to it and, when dx2, to dx2 too (set 1). */
POSEMB_KERNEL static void layernorm_backward_rows(float *dx, float *dx2, int set, const float *dy, const float *x,
                                                  const float *w, const float *mean, const float *rstd, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
        float m = mean[t], s = rstd[t], *dxt = dx + (long)t * C;
        float g_mean = (float)(vm_dot(dyt, w, C) / C), gx_mean = (float)(vm_dot_dev(dyt, w, xt, C, m) * s / C);
        if (!set)
            for (int i = 0; i < C; i++) dxt[i] += s * (dyt[i] * w[i] - g_mean - (xt[i] - m) * s * gx_mean);
        else
            for (int i = 0; i < C; i++) dxt[i] = 0.0f + s * (dyt[i] * w[i] - g_mean - (xt[i] - m) * s * gx_mean);
        if (set && dx2) memcpy(dx2 + (long)t * C, dxt, (size_t)C * sizeof *dxt);
    }
}

POSEMB_KERNEL void posemb_nn_layernorm_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                                const float *w, const float *mean, const float *rstd, int N, int C)
{
    if (dw || db) layernorm_backward_params(dw, db, dy, x, mean, rstd, N, C);
    if (dx) layernorm_backward_rows(dx, NULL, 0, dy, x, w, mean, rstd, N, C);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_layernorm_backward);

POSEMB_KERNEL void posemb_nn_layernorm_backward_set(float *dx, float *dx2, float *dw, float *db, const float *dy,
                                                    const float *x, const float *w, const float *mean,
                                                    const float *rstd, int N, int C)
{
    if (dw || db) layernorm_backward_params(dw, db, dy, x, mean, rstd, N, C);
    layernorm_backward_rows(dx, dx2, 1, dy, x, w, mean, rstd, N, C);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_layernorm_backward_set);
