/* sandwich: the parameter-free bias of Chi et al. 2023 ("Dissecting
 * Transformer Length Extrapolation via the Lens of Receptive Field
 * Analysis"): the inner product of two sinusoidal position vectors of width
 * d', p_i . p_j = sum_{k=1..d'/2} cos((i - j) / 10000^(2k/d')), less its
 * value at distance 0 (d'/2), compressed per head like ALiBi's slopes:
 *   bias_h(i, j) = (sum_k cos((i - j) w_k) - d'/2) / (8 h / H),  h = 1..H,
 * as NeMo's SandwichRelativePositionEmbedding computes it (k from 1, d' the
 * head width unless dim= says otherwise). It depends on |i - j| only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "family.h"

typedef struct sandwich_state {
    int width;      /* d' */
    double *w;      /* [d'/2]: w_k = 10000^(-2k/d'), k = 1..d'/2 */
    float *profile; /* [max_len]: sum_k cos(d w_k) - d'/2 */
} sandwich_state;

static double profile_at(const sandwich_state *s, long d)
{
    double acc = 0.0;
    for (int k = 0; k < s->width / 2; k++) acc += cos((double)d * s->w[k]);
    return acc - s->width / 2;
}

static posemb_status sandwich_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    sandwich_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "sandwich: out of memory");
    c->state = s;
    posemb_status st = pe_opt_int(o, "dim", c->head_dim, 2, 1 << 16, &s->width, err);
    if (st) return st;
    if (s->width % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': sandwich dim=%d must be even", o->spec, s->width);
    pe_canon_add(c, "dim=%d", s->width);
    s->w = malloc((size_t)(s->width / 2) * sizeof *s->w);
    s->profile = malloc((size_t)c->dims.max_len * sizeof *s->profile);
    if (!s->w || !s->profile) return posemb_fail(err, POSEMB_ENOMEM, "sandwich: out of memory");
    for (int k = 1; k <= s->width / 2; k++) s->w[k - 1] = pow(10000.0, -2.0 * k / s->width);
    for (long d = 0; d < c->dims.max_len; d++) s->profile[d] = (float)profile_at(s, d);
    return POSEMB_OK;
}

static void sandwich_destroy(pe_comp *c)
{
    sandwich_state *s = c->state;
    if (!s) return;
    free(s->w);
    free(s->profile);
    free(s);
}

/* 1 / (8 h / H) for head index h = 0..H-1. */
static inline float compression(const pe_comp *c, int head) { return (float)c->dims.n_heads / (8.0f * (head + 1)); }

static void sandwich_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                    int ldk, float *sc, int lds)
{
    const sandwich_state *s = c->state;
    float g = compression(c, h->head);
    long n = c->dims.max_len;
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        for (int j = 0; j < h->nk; j++) {
            long d = labs((long)h->kpos[j] - h->qpos[i]);
            si[j] += g * (d < n ? s->profile[d] : (float)profile_at(s, d));
        }
    }
}

/* No parameters, and the bias does not depend on q or k. */
static void sandwich_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                     int ldk, const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
}

static float sandwich_bias(const pe_comp *c, int h, int i, int j)
{
    const sandwich_state *s = c->state;
    long d = labs((long)j - i);
    return 0.0f + compression(c, h) * (d < c->dims.max_len ? s->profile[d] : (float)profile_at(s, d));
}

static posemb_status sandwich_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    return pe_export_head_biases(c, n, a, out, "row i, column j: (sum_k cos((i - j) w_k) - d'/2) / (8 h / H)",
                                 sandwich_bias, err);
}

const pe_family pe_family_sandwich = {
    .name = "sandwich",
    .logits_by_rows = 1,
    .kind = PE_KIND_ATTENTION,
    .summary = "parameter-free bias from sinusoid inner products, compressed per head (Chi et al. 2023)",
    .options = "dim=INT (the head width): the sinusoid's width d'",
    .configure = sandwich_configure,
    .destroy = sandwich_destroy,
    .logits_forward = sandwich_logits_forward,
    .logits_backward = sandwich_logits_backward,
    .export = sandwich_export,
};
