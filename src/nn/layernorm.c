#include <math.h>

#include "posemb/nn.h"

void nn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *w, const float *b, int N,
                          int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *xt = x + (long)t * C;
        float *yt = y + (long)t * C;
        double m = 0.0, v = 0.0;
        for (int i = 0; i < C; i++) m += xt[i];
        m /= C;
        for (int i = 0; i < C; i++) v += (xt[i] - m) * (xt[i] - m);
        float s = (float)(1.0 / sqrt(v / C + eps));
        for (int i = 0; i < C; i++) yt[i] = (float)((xt[i] - m) * s) * w[i] + b[i];
        mean[t] = (float)m;
        rstd[t] = s;
    }
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w. */
void nn_layernorm_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                           const float *mean, const float *rstd, int N, int C)
{
    for (int t = 0; t < N; t++) {
        const float *dyt = dy + (long)t * C, *xt = x + (long)t * C;
        float m = mean[t], s = rstd[t];
        double g_mean = 0.0, gx_mean = 0.0;
        for (int i = 0; i < C; i++) {
            float xhat = (xt[i] - m) * s, g = dyt[i] * w[i];
            g_mean += g;
            gx_mean += g * xhat;
            if (dw) dw[i] += dyt[i] * xhat;
            if (db) db[i] += dyt[i];
        }
        g_mean /= C;
        gx_mean /= C;
        if (!dx) continue;
        float *dxt = dx + (long)t * C;
        for (int i = 0; i < C; i++) {
            float xhat = (xt[i] - m) * s;
            dxt[i] += s * (float)(dyt[i] * w[i] - g_mean - xhat * gx_mean);
        }
    }
}
