#include "posemb/rng.h"
#include "core/rng_internal.h"

#include <math.h>

void posemb_rng_seed(posemb_rng *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    posemb_rng_u32(r);
    r->state += seed;
    posemb_rng_u32(r);
}

uint32_t posemb_rng_u32(posemb_rng *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

double posemb_rng_uniform(posemb_rng *r)
{
    uint64_t hi = posemb_rng_u32(r) >> 5, lo = posemb_rng_u32(r) >> 6; /* 27 + 26 bits */
    return ((double)hi * 67108864.0 + (double)lo) / 9007199254740992.0;
}

uint32_t posemb_rng_below(posemb_rng *r, uint32_t n)
{
    /* Rejection keeps the result unbiased when n does not divide 2^32. */
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t x = posemb_rng_u32(r);
        if (x >= threshold) return x % n;
    }
}

double posemb_rng_normal(posemb_rng *r)
{
    double u1 = posemb_rng_uniform(r), u2 = posemb_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void posemb_rng_fill_normal(posemb_rng *r, float *x, long n, float std)
{
    for (long i = 0; i < n; i++) x[i] = (float)(std * posemb_rng_normal(r));
}
