#include <math.h>

#include "posemb/nn.h"
#include "vmath.h"
#include "core/simd.h"
#include "nn/nn_internal.h"

POSEMB_KERNEL void posemb_nn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *w,
                                               const float *b, int N, int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *xt = x + (long)t * C;
        float *yt = y + (long)t * C;
        float m = (float)(vm_sum(xt, C) / C);
        float s = (float)(1.0 / sqrt(vm_sq_dev(xt, C, m) / C + eps));
        for (int i = 0; i < C; i++) yt[i] = (xt[i] - m) * s * w[i] + b[i];
        mean[t] = m;
        rstd[t] = s;
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_layernorm_forward);

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

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w. */
POSEMB_KERNEL void posemb_nn_layernorm_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                                const float *w, const float *mean, const float *rstd, int N, int C)
{
    if (dw || db) layernorm_backward_params(dw, db, dy, x, mean, rstd, N, C);
    if (!dx) return;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
        float m = mean[t], s = rstd[t], *dxt = dx + (long)t * C;
        float g_mean = (float)(vm_dot(dyt, w, C) / C), gx_mean = (float)(vm_dot_dev(dyt, w, xt, C, m) * s / C);
        for (int i = 0; i < C; i++) dxt[i] += s * (dyt[i] * w[i] - g_mean - (xt[i] - m) * s * gx_mean);
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_layernorm_backward);
