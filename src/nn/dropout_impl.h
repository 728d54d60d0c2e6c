/* Dropout's decisions, inline for the loops over whole tensors: a call per
 * element to posemb_nn_dropout_scale (another file, a double conversion)
 * took 29% of a fine-tuning step's time; inline, with the comparison in
 * integers, the loops vectorise. Same bits, same comparison, so the same
 * decisions as posemb_nn_dropout_scale, element for element. */
#ifndef POSEMB_NN_DROPOUT_IMPL_H
#define POSEMB_NN_DROPOUT_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/simd.h"
#include "nn/nn_internal.h"

/* SplitMix64's finaliser: a bijective mix with good avalanche, enough to
 * turn (key, index) into independent-looking uniform bits. */
static inline uint64_t dropout_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* An element is dropped when u = bits * 2^-53 < p, bits = the top 53 bits of
 * its hash; u and p * 2^53 are exact in double, so that is bits < ceil(p * 2^53). */
typedef struct dropout_rule {
    uint64_t key, threshold;
    float scale; /* the kept elements' factor, 1 / (1 - p) */
} dropout_rule;

static inline dropout_rule dropout_rule_of(uint64_t key, float p)
{
    double t = ceil((double)p * 9007199254740992.0);
    return (dropout_rule){key, p > 0.0f ? (t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t) : 0,
                          1.0f / (1.0f - p)};
}

/* By value: a rule behind a pointer could alias the floats a loop writes, which keeps
 * the compiler from vectorising it. */
static inline float dropout_factor(dropout_rule r, uint64_t i)
{
    return (dropout_mix64(r.key ^ dropout_mix64(i)) >> 11) < r.threshold ? 0.0f : r.scale;
}

/* y = x with elements i0 .. i0 + n - 1 of the tensor dropped and the kept ones scaled;
 * y may be x. The forward pass and, with the same rule, the gradient in place. */
POSEMB_KERNEL static inline void dropout_span(dropout_rule r, uint64_t i0, const float *x, float *y, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = x[i] * dropout_factor(r, i0 + i);
}

#endif
