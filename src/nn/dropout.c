#include <string.h>

#include "posemb/nn.h"
#include "core/simd.h"
#include "dropout_impl.h"
#include "nn/nn_internal.h"

uint64_t posemb_nn_dropout_key(uint64_t seed, uint64_t step, uint64_t site)
{
    return dropout_mix64(dropout_mix64(dropout_mix64(seed) ^ step) ^ (site * 0xd1b54a32d192ed03ULL));
}

float posemb_nn_dropout_scale(uint64_t key, uint64_t i, float p)
{
    double u = (double)(dropout_mix64(key ^ dropout_mix64(i)) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    return u < p ? 0.0f : 1.0f / (1.0f - p);
}

/* Chunks of the tensors, one per task of the parallel loops; each one vectorised. */
enum { DROPOUT_CHUNK = 1 << 14 };

POSEMB_KERNEL static void undrop_span(dropout_rule r, uint64_t i0, const float *dy, float *dx, long n)
{
#pragma omp simd
    for (long i = 0; i < n; i++) dx[i] += dy[i] * dropout_factor(r, i0 + (uint64_t)i);
}

void posemb_nn_dropout_forward(float *y, const float *x, long n, float p, uint64_t key)
{
    if (p <= 0.0f) {
        if (y != x) memcpy(y, x, (size_t)n * sizeof *y);
        return;
    }
    dropout_rule r = dropout_rule_of(key, p);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < n; c += DROPOUT_CHUNK)
        dropout_span(r, (uint64_t)c, x + c, y + c, (size_t)(n - c < DROPOUT_CHUNK ? n - c : DROPOUT_CHUNK));
}

void posemb_nn_dropout_backward(float *dx, const float *dy, long n, float p, uint64_t key)
{
    if (p <= 0.0f) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) dx[i] += dy[i];
        return;
    }
    dropout_rule r = dropout_rule_of(key, p);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < n; c += DROPOUT_CHUNK)
        undrop_span(r, (uint64_t)c, dy + c, dx + c, n - c < DROPOUT_CHUNK ? n - c : DROPOUT_CHUNK);
}
