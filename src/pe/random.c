/* random: randomized positions (Ruoss et al. 2023, "Randomized Positional
 * Encodings Boost Length Generalization of Transformers"). A sequence of T
 * tokens sees T distinct positions drawn uniformly from [0, max) and sorted,
 * instead of 0..T-1, so that a model trained on short sequences has seen
 * the positions of long ones. It changes no hook: the model draws the
 * positions (posemb_pe_draw_positions) and feeds them to the other
 * component. As the authors' code (google-deepmind/randomized_positional_
 * encodings) one draw serves the whole batch, and evaluation draws too. */
#include <stdlib.h>

#include "family.h"
#include "posemb/rng.h"
#include "core/rng_internal.h"
#include "pe/pe_internal.h"

#define RANDOM_MAX (1 << 24)

static posemb_status random_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    if (!pe_opt_given(o, "max"))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': random needs max=N, the range positions are drawn from",
                           o->spec);
    int max;
    posemb_status st = pe_opt_int(o, "max", 0, 1, RANDOM_MAX, &max, err);
    if (st) return st;
    c->draw_max = max;
    pe_canon_add(c, "max=%d", max);
    return POSEMB_OK;
}

/* Selection sampling (Knuth's algorithm S): each position is kept with the
 * probability that leaves every T-subset equally likely, in increasing order. */
void pe_draw_positions(int32_t max, uint64_t key, int T, int32_t *pos)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, key, 0x52414e44u);
    int kept = 0;
    for (int32_t i = 0; i < max && kept < T; i++)
        if ((int64_t)posemb_rng_below(&rng, (uint32_t)(max - i)) < T - kept) pos[kept++] = i;
}

const pe_family pe_family_random = {
    .name = "random",
    .kind = PE_KIND_POSITIONS,
    .summary =
        "randomized positions: T sorted distinct positions drawn from [0, max) (Ruoss et al. 2023), with another PE",
    .options = "max=INT the range positions are drawn from (required)",
    .configure = random_configure,
};
