/* temperature: Llama 4's attention temperature tuning, which Hugging Face's
 * modeling_llama4.py applies to the layers without RoPE (iRoPE's global
 * NoPE layers): the query at index x of its sequence (HF's cache_position,
 * not its position id; the engine's calls hold a sequence's rows from its
 * first token, so row x is token x) is multiplied by
 *   1 + attn_scale ln(floor((x + 1) / floor_scale) + 1),
 * attn_scale 0.1 and floor_scale 8192 by default (Llama4TextConfig), so
 * logits sharpen slowly past floor_scale tokens, as SSMax's ln n does. Fixed:
 * no parameters. On the NoPE layers of an iRoPE stack with layers=:
 * "rope:layers=0-2+temperature:layers=3". */
#include <math.h>
#include <stdlib.h>

#include "family.h"

typedef struct temperature_state {
    double attn_scale, floor_scale;
} temperature_state;

static posemb_status temperature_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    temperature_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "temperature: out of memory");
    c->state = s;
    posemb_status st = pe_opt_double(o, "attn_scale", 0.1, 0.0, 1e6, &s->attn_scale, err);
    if (!st) st = pe_opt_double(o, "floor_scale", 8192.0, 1.0, 1e12, &s->floor_scale, err);
    if (st) return st;
    pe_canon_num(c, "attn_scale", s->attn_scale);
    pe_canon_num(c, "floor_scale", s->floor_scale);
    return POSEMB_OK;
}

static void temperature_destroy(pe_comp *c) { free(c->state); }

/* The factor at position x, in float32 as HF computes it from
 * cache_position.float(). */
static float factor(const temperature_state *s, int32_t x)
{
    float fl = floorf(((float)x + 1.0f) / (float)s->floor_scale);
    return logf(fl + 1.0f) * (float)s->attn_scale + 1.0f;
}

static void temperature_q_factors(pe_comp *c, const posemb_pe_head *h, float *f)
{
    const temperature_state *s = c->state;
    for (int i = 0; i < h->nq; i++) f[i] = factor(s, i);
}

static posemb_status temperature_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    posemb_pe_named_matrix *f =
        pe_export_add(out, a, "logit_factor", "row x: the factor on the query at position x (on q.k)", n, 1, err);
    if (!f) return err ? err->code : POSEMB_ENOMEM;
    for (int x = 0; x < n; x++) f->data[x] = factor(c->state, x);
    return POSEMB_OK;
}

const pe_family pe_family_temperature = {
    .name = "temperature",
    .kind = PE_KIND_SCALE,
    .summary =
        "Llama 4's attention temperature: q times 1 + a ln(floor((x+1)/f) + 1) at position x (HF modeling_llama4)",
    .options =
        "attn_scale=NUM a (0.1), floor_scale=NUM f (8192); with layers=LIST on the NoPE layers of an iRoPE stack",
    .no_positions = 1, /* the index, not the position ids random:max= draws */
    .configure = temperature_configure,
    .destroy = temperature_destroy,
    .q_factors = temperature_q_factors,
    .export = temperature_export,
};
