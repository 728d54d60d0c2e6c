/* What the other layers, the CLI and the tests call of posemb/rng.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_CORE_RNG_INTERNAL_H
#define POSEMB_CORE_RNG_INTERNAL_H

#include "posemb/rng.h"

uint32_t posemb_rng_u32(posemb_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double posemb_rng_uniform(posemb_rng *r);
/* Uniform integer in [0, n), unbiased; n > 0. */
uint32_t posemb_rng_below(posemb_rng *r, uint32_t n);
/* Standard normal (Box-Muller, no cached spare, so the state is only the PCG state). */
double posemb_rng_normal(posemb_rng *r);
/* Fills x[0..n) with N(0, std^2). */
void posemb_rng_fill_normal(posemb_rng *r, float *x, long n, float std);

#endif
