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

#ifdef __cplusplus
}
#endif
#endif
