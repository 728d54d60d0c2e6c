/* alibi: attention with linear biases (Press et al. 2022). Head h adds
 * -m_h |i - j| to its logits; in a decoder only j <= i survives the causal
 * mask, where this is ALiBi's causal -m_h (i - j). Slopes m_h = 2^(-8h/H),
 * h = 1..H, for H a power of two; otherwise the BLOOM rule: the slopes of
 * the largest power of two P < H, then every other slope of 2P.
 *
 * In an encoder that bias is the same on both sides of a query, so the
 * attention maps of a sequence and of its reverse mirror each other and the
 * model cannot tell left from right. Two ways to tell them apart, posemb's
 * experiments on what direction is worth to ALiBi in an encoder
 * (results/study-data), not forms from the literature; a decoder sees no key
 * right of the query (j > i) and is unchanged by either:
 * - sides=mirror gives keys to the right the slope of head H+1-h: the slope
 *   set is ALiBi's, but no head is then local on both sides;
 * - right=R multiplies the slope for keys to the right by R: every head
 *   keeps its locality on both sides, and R != 1 makes the sides differ.
 * scale=S multiplies every slope by S (both sides): a steeper or flatter
 * ALiBi that stays blind to direction, the control for right=R. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "family.h"
#include "pe/pe_internal.h"

typedef struct alibi_state {
    float *slopes; /* [H] keys at or left of the query (j <= i) */
    float *right;  /* [H] keys right of the query (j > i): slopes (reversed under sides=mirror) times R */
    int sided;     /* right differs from slopes: exported, and the bias described per side */
} alibi_state;

/* The BLOOM rule (it reduces to 2^(-8h/H) when H is a power of two). */
void posemb_pe_alibi_slopes(int H, float *out)
{
    int p = 1;
    while (p * 2 <= H) p *= 2;
    double base = pow(2.0, -8.0 / p);
    for (int h = 0; h < p; h++) out[h] = (float)pow(base, h + 1);
    double extra = pow(2.0, -4.0 / p); /* 2^(-8 / (2p)) */
    for (int h = 0; h < H - p; h++) out[p + h] = (float)pow(extra, 2 * h + 1);
}

static posemb_status alibi_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    alibi_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "alibi: out of memory");
    c->state = s;
    static const char *const sides[] = {"same", "mirror", NULL};
    int H = c->dims.n_heads, mirror;
    double factor, scale;
    posemb_status st = pe_opt_enum(o, "sides", sides, 0, &mirror, err);
    if (!st) st = pe_opt_double(o, "right", 1.0, 1.0 / 64, 64.0, &factor, err);
    if (!st) st = pe_opt_double(o, "scale", 1.0, 1.0 / 64, 64.0, &scale, err);
    if (st) return st;
    /* spelled out only when set: plain alibi's spec stays "alibi" */
    if (mirror) pe_canon_add(c, "sides=mirror");
    if (factor != 1.0) pe_canon_num(c, "right", factor);
    if (scale != 1.0) pe_canon_num(c, "scale", scale);
    s->sided = mirror || factor != 1.0;
    s->slopes = malloc((size_t)H * sizeof(float));
    s->right = malloc((size_t)H * sizeof(float));
    if (!s->slopes || !s->right) return posemb_fail(err, POSEMB_ENOMEM, "alibi: out of memory");
    posemb_pe_alibi_slopes(H, s->slopes);
    if (scale != 1.0)
        for (int h = 0; h < H; h++) s->slopes[h] = (float)(scale * s->slopes[h]);
    for (int h = 0; h < H; h++) s->right[h] = (float)(factor * s->slopes[mirror ? H - 1 - h : h]);
    return POSEMB_OK;
}

static void alibi_destroy(pe_comp *c)
{
    alibi_state *s = c->state;
    if (!s) return;
    free(s->slopes);
    free(s->right);
    free(s);
}

static void alibi_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 float *sc, int lds)
{
    const alibi_state *s = c->state;
    float m = s->slopes[h->head], r = s->right[h->head];
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        for (int j = 0; j < h->nk; j++) {
            long d = (long)h->kpos[j] - (long)h->qpos[i];
            si[j] -= d > 0 ? r * (float)d : m * (float)-d;
        }
    }
}

/* The bias has no parameters and does not depend on q or k. */
static void alibi_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                  const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
}

static float alibi_bias(const pe_comp *c, int h, int i, int j)
{
    const alibi_state *s = c->state;
    return j > i ? 0.0f - s->right[h] * (float)(j - i) : 0.0f - s->slopes[h] * (float)(i - j); /* +0 on the diagonal */
}

static posemb_status alibi_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const alibi_state *s = c->state;
    int H = c->dims.n_heads;
    posemb_pe_named_matrix *m = pe_export_add(out, a, "slopes", "row h: the slope m_h of head h", H, 1, err);
    if (!m) return err ? err->code : POSEMB_ENOMEM;
    for (int h = 0; h < H; h++) m->data[h] = s->slopes[h];
    if (s->sided) {
        m = pe_export_add(out, a, "slopes_right", "row h: the slope of head h for keys right of the query", H, 1, err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        for (int h = 0; h < H; h++) m->data[h] = s->right[h];
    }
    return pe_export_head_biases(c, n, a, out,
                                 s->sided ? "row i, column j: -m_h (i - j) left, -slopes_right[h] (j - i) right"
                                          : "row i, column j: -m_h |i - j|",
                                 alibi_bias, err);
}

const pe_family pe_family_alibi = {
    .name = "alibi",
    .logits_by_rows = 1,
    .kind = PE_KIND_ATTENTION,
    .summary = "linear distance bias -m_h |i-j| per head, BLOOM slopes (Press et al. 2022)",
    .options = "sides=same|mirror keys right of the query: the head's own slope (ALiBi) or head H+1-h's; right=R "
               "that slope times R (1); either lets an encoder tell left from right. scale=S every slope times S (1)",
    .configure = alibi_configure,
    .destroy = alibi_destroy,
    .logits_forward = alibi_logits_forward,
    .logits_backward = alibi_logits_backward,
    .export = alibi_export,
};
