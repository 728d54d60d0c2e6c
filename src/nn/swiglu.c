/* SwiGLU (Shazeer 2020), the gated feed-forward of Llama-family models:
 * y = silu(gate) * up, silu(x) = x sigmoid(x). gate and up sit side by side
 * in one row ([N, 2I]: the outputs of gate_proj and up_proj computed as one
 * fused product), y is [N, I]. */
#include <math.h>

#include "posemb/nn.h"
#include "core/simd.h"

POSEMB_KERNEL void posemb_nn_swiglu_forward(float *y, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I;
        float *yt = y + (long)t * I;
        for (int i = 0; i < I; i++) yt[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
}

/* dgate = dy up silu'(gate), silu'(x) = s(x) (1 + x (1 - s(x))); dup = dy silu(gate). dgu overwritten. */
POSEMB_KERNEL void posemb_nn_swiglu_backward(float *dgu, const float *dy, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I, *dyt = dy + (long)t * I;
        float *dg = dgu + (long)t * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float s = 1.0f / (1.0f + expf(-g[i]));
            dg[i] = dyt[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
            du[i] = dyt[i] * g[i] * s;
        }
    }
}
