/* xpos: the length-extrapolatable rotary embedding (Sun et al. 2022, "A
 * Length-Extrapolatable Transformer"). RoPE, then pair m of a query at
 * position n is scaled by zeta_m^(n/gamma) and of a key by zeta_m^(-n/gamma),
 * zeta_m = (2m + 0.4 r)/(1.4 r), gamma = scale_base (512), so q.k carries
 * zeta_m^((i - j)/gamma) < 1 for keys behind the query: a decay with
 * distance. Positions are centred on the call's middle (L/2) as
 * x-transformers' RotaryEmbedding(use_xpos) does; the centre cancels in q.k.
 * Defined for decoders: with keys ahead of the query the factor grows
 * without bound, so an encoder is refused. */
#include "rope.h"

static posemb_status xpos_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    if (!c->dims.causal)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': xpos is defined for decoders (causal attention): for keys after the query its "
                           "scale grows without bound; use rope in an encoder",
                           o->spec);
    return rope_configure_as(c, o, 1, err);
}

const pe_family pe_family_xpos = {
    .name = "xpos",
    .kind = PE_KIND_ATTENTION,
    .summary = "rotary embedding with a per-pair decay zeta_m^((i-j)/gamma), decoders only (Sun et al. 2022)",
    .options = "scale_base=NUM (512), and rope's: base, pairing, frac, scaling and its options, p",
    .configure = xpos_configure,
    .destroy = rope_destroy,
    .qk_forward = rope_qk_forward,
    .qk_backward = rope_qk_backward,
    .export = rope_export,
};
