/* Elementwise kernels: GELU (both forms), tanh, addition, embeddings. */
#include <math.h>
#include <string.h>

#include "posemb/nn.h"
#include "core/vmath.h"
#include "core/simd.h"
#include "nn/nn_internal.h"
#include "gemm_impl.h"

#define SQRT_2_OVER_PI 0.7978845608028654f
#define INV_SQRT_2 0.7071067811865476f
#define INV_SQRT_2PI 0.3989422804014327f

static inline float gelu_erf(float v) { return 0.5f * v * (1.0f + vm_erf(v * INV_SQRT_2)); }

static inline float gelu_tanh(float v)
{
    return 0.5f * v * (1.0f + vm_tanhf(SQRT_2_OVER_PI * (v + 0.044715f * v * v * v)));
}

POSEMB_KERNEL void posemb_nn_gelu_forward(float *y, const float *x, long n, posemb_nn_gelu_kind kind)
{
    if (kind == POSEMB_NN_GELU_ERF) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) y[i] = gelu_erf(x[i]);
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) y[i] = gelu_tanh(x[i]);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_gelu_forward);

POSEMB_KERNEL void posemb_nn_gelu_forward_rows(float *y, uint16_t *y16, const float *x, int N, int C,
                                               posemb_nn_gelu_kind kind)
{
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *yt = y + (long)t * C;
        const float *xt = x + (long)t * C;
        if (kind == POSEMB_NN_GELU_ERF) {
#pragma omp simd
            for (int i = 0; i < C; i++) yt[i] = gelu_erf(xt[i]);
        } else {
#pragma omp simd
            for (int i = 0; i < C; i++) yt[i] = gelu_tanh(xt[i]);
        }
        if (y16) bf16_round_row(y16 + (long)t * C, yt, C);
    }
}
POSEMB_KERNEL_INTERNAL(posemb_nn_gelu_forward_rows);

/* d GELU / dx = Phi(x) + x phi(x); exp(-x^2 / 2) serves both. */
static inline float gelu_grad_erf(float v)
{
    float e = vm_expf(-0.5f * v * v);
    return 0.5f * (1.0f + vm_erf_with(v * INV_SQRT_2, e)) + v * INV_SQRT_2PI * e;
}

static inline float gelu_grad_tanh(float v)
{
    float u = SQRT_2_OVER_PI * (v + 0.044715f * v * v * v), th = vm_tanhf(u);
    return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * v * v);
}

/* The parallel loops stay in the kernels themselves: OpenMP outlines a
 * loop into a function of its enclosing one, and only a POSEMB_KERNEL's is
 * compiled for each instruction set (in a static helper it ran 1.4x slower). */
POSEMB_KERNEL void posemb_nn_gelu_backward(float *dx, const float *dy, const float *x, long n, posemb_nn_gelu_kind kind)
{
    if (kind == POSEMB_NN_GELU_ERF) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) dx[i] += dy[i] * gelu_grad_erf(x[i]);
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) dx[i] += dy[i] * gelu_grad_tanh(x[i]);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_gelu_backward);

/* dx = 0 + g, as zeroing and adding would give (-0 becomes +0). */
POSEMB_KERNEL void posemb_nn_gelu_backward_set(float *dx, const float *dy, const float *x, long n,
                                               posemb_nn_gelu_kind kind)
{
    if (kind == POSEMB_NN_GELU_ERF) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) dx[i] = 0.0f + dy[i] * gelu_grad_erf(x[i]);
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) dx[i] = 0.0f + dy[i] * gelu_grad_tanh(x[i]);
}
POSEMB_KERNEL_INTERNAL(posemb_nn_gelu_backward_set);

void posemb_nn_tanh_forward(float *y, const float *x, long n)
{
    for (long i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

void posemb_nn_tanh_backward(float *dx, const float *dy, const float *y, long n)
{
    for (long i = 0; i < n; i++) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

POSEMB_KERNEL void posemb_nn_add(float *y, const float *a, const float *b, long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) y[i] = a[i] + b[i];
}
POSEMB_KERNEL_INTERNAL(posemb_nn_add);

void posemb_nn_embedding_forward(float *out, const float *table, const int32_t *ids, int N, int C, int accumulate)
{
    for (int t = 0; t < N; t++) {
        const float *row = table + (long)ids[t] * C;
        float *o = out + (long)t * C;
        if (accumulate)
            for (int i = 0; i < C; i++) o[i] += row[i];
        else memcpy(o, row, (size_t)C * sizeof *o);
    }
}

void posemb_nn_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int N, int C, int32_t skip_id)
{
    for (int t = 0; t < N; t++) {
        if (ids[t] == skip_id) continue;
        float *row = dtable + (long)ids[t] * C;
        const float *d = dout + (long)t * C;
        for (int i = 0; i < C; i++) row[i] += d[i];
    }
}
