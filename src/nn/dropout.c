#include <string.h>

#include "posemb/nn.h"

/* SplitMix64's finaliser: a bijective mix with good avalanche, enough to
 * turn (key, index) into independent-looking uniform bits. */
static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t posemb_nn_dropout_key(uint64_t seed, uint64_t step, uint64_t site)
{
    return mix64(mix64(mix64(seed) ^ step) ^ (site * 0xd1b54a32d192ed03ULL));
}

float posemb_nn_dropout_scale(uint64_t key, uint64_t i, float p)
{
    double u = (double)(mix64(key ^ mix64(i)) >> 11) * (1.0 / 9007199254740992.0); /* 53 bits in [0, 1) */
    return u < p ? 0.0f : 1.0f / (1.0f - p);
}

void posemb_nn_dropout_forward(float *y, const float *x, long n, float p, uint64_t key)
{
    if (p <= 0.0f) {
        if (y != x) memcpy(y, x, (size_t)n * sizeof *y);
        return;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) y[i] = x[i] * posemb_nn_dropout_scale(key, (uint64_t)i, p);
}

void posemb_nn_dropout_backward(float *dx, const float *dy, long n, float p, uint64_t key)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) dx[i] += dy[i] * (p > 0.0f ? posemb_nn_dropout_scale(key, (uint64_t)i, p) : 1.0f);
}
