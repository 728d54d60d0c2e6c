/* SwiGLU (Shazeer 2020), the gated feed-forward of Llama-family models (and Gemma's GeGLU below):
 * y = silu(gate) * up, silu(x) = x sigmoid(x). gate and up sit side by side
 * in one row ([N, 2I]: the outputs of gate_proj and up_proj computed as one
 * fused product), y is [N, I]. exp and tanh are vmath.h's, which the
 * compiler vectorises (libm's scalar expf took a third of these loops). */
#include <math.h>

#include "posemb/nn.h"
#include "core/simd.h"
#include "nn/nn_internal.h"
#include "gemm_impl.h"
#include "core/vmath.h"

/* exp(-g) as libm gives it where it matters: vm_expf stops at exp(88), which
 * would leave silu(g) = g / exp(88) far from 0 for g far below -88 (-2 at
 * -FLT_MAX); past -88 the sigmoid is 0 in float anyway, so inf, as expf. */
static inline float silu_exp(float g) { return g < -88.0f ? INFINITY : vm_expf(-g); }

POSEMB_KERNEL void posemb_nn_swiglu_forward(float *y, uint16_t *y16, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I;
        float *yt = y + (long)t * I;
        for (int i = 0; i < I; i++) yt[i] = g[i] / (1.0f + silu_exp(g[i])) * u[i];
        if (y16) bf16_round_row(y16 + (long)t * I, yt, I); /* the next product's copy, while yt is in cache */
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_swiglu_forward);

/* dgate = dy up silu'(gate), silu'(x) = s(x) (1 + x (1 - s(x))); dup = dy silu(gate). dgu overwritten. */
POSEMB_KERNEL void posemb_nn_swiglu_backward(float *dgu, const float *dy, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I, *dyt = dy + (long)t * I;
        float *dg = dgu + (long)t * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float s = 1.0f / (1.0f + silu_exp(g[i]));
            dg[i] = dyt[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
            du[i] = dyt[i] * g[i] * s;
        }
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_swiglu_backward);

/* GeGLU (Gemma's MLP, hidden_activation gelu_pytorch_tanh): y = gelu(gate) * up,
 * gelu(x) = x/2 (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi). */
static inline float gelu_tanh(float x, float *deriv)
{
    const float c = 0.7978845608028654f, k = 0.044715f;
    float t = vm_tanhf(c * (x + k * x * x * x));
    *deriv = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * k * x * x);
    return 0.5f * x * (1.0f + t);
}

POSEMB_KERNEL void posemb_nn_geglu_forward(float *y, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I;
        float *yt = y + (long)t * I, dummy;
        for (int i = 0; i < I; i++) yt[i] = gelu_tanh(g[i], &dummy) * u[i];
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_geglu_forward);

/* dgate = dy up gelu'(gate); dup = dy gelu(gate). dgu overwritten. */
POSEMB_KERNEL void posemb_nn_geglu_backward(float *dgu, const float *dy, const float *gu, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = gu + (long)t * 2 * I, *u = g + I, *dyt = dy + (long)t * I;
        float *dg = dgu + (long)t * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float d, v = gelu_tanh(g[i], &d);
            dg[i] = dyt[i] * u[i] * d;
            du[i] = dyt[i] * v;
        }
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_geglu_backward);
