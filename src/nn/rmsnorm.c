/* RMSNorm (Zhang & Sennrich 2019) as Hugging Face's LlamaRMSNorm computes it
 * in float32: y = w * x / sqrt(mean(x^2) + eps), no mean subtracted, no bias. */
#include <math.h>

#include "posemb/nn.h"
#include "vmath.h"
#include "core/simd.h"

POSEMB_KERNEL void posemb_nn_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int N, int C,
                                             float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *xt = x + (long)t * C;
        float *yt = y + (long)t * C;
        float s = (float)(1.0 / sqrt(vm_dot(xt, xt, C) / C + eps));
        for (int i = 0; i < C; i++) yt[i] = w[i] * (xt[i] * s);
        rstd[t] = s;
    }
}

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
    for (int t = 0; t < N; t++) {
        const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
        float s = rstd[t], *dxt = dx + (long)t * C;
        double gx = 0.0;
        for (int i = 0; i < C; i++) gx += (double)dyt[i] * w[i] * xt[i];
        float k = (float)(gx / C) * s * s;
        for (int i = 0; i < C; i++) dxt[i] += s * (dyt[i] * w[i] - xt[i] * k);
    }
}
