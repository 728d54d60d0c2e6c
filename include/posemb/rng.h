/* A seeded, reproducible random number generator (PCG32, O'Neill 2014).
 * Hand-written because it is a dozen lines and its whole state (two
 * integers) must be saved in checkpoints to resume training bit-for-bit;
 * no Debian library exposes a generator that small. */
#ifndef POSEMB_RNG_H
#define POSEMB_RNG_H

#include "posemb/api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_rng {
    uint64_t state;
    uint64_t inc; /* stream selector, always odd */
} posemb_rng;

/* Different (seed, stream) pairs give independent sequences. */
POSEMB_API void posemb_rng_seed(posemb_rng *r, uint64_t seed, uint64_t stream);
POSEMB_API uint32_t posemb_rng_u32(posemb_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
POSEMB_API double posemb_rng_uniform(posemb_rng *r);
/* Uniform integer in [0, n), unbiased; n > 0. */
POSEMB_API uint32_t posemb_rng_below(posemb_rng *r, uint32_t n);
/* Standard normal (Box-Muller, no cached spare, so the state is only the PCG state). */
POSEMB_API double posemb_rng_normal(posemb_rng *r);
/* Fills x[0..n) with N(0, std^2). */
POSEMB_API void posemb_rng_fill_normal(posemb_rng *r, float *x, long n, float std);

#ifdef __cplusplus
}
#endif
#endif
