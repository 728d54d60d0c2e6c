/* ssmax: Scalable-Softmax (Nakanishi 2025, "Scalable-Softmax Is Superior
 * for Attention"). softmax(z) becomes softmax(s ln(n) z): the logits of a
 * query that sees n keys are multiplied by s ln n, s learned per layer and
 * head (initial 0.43, the paper's), so attention does not flatten as n
 * grows. As the paper's implementation does, the factor goes on the query
 * row: q_i <- s ln(n_i) q_i, which is the same on q.k and composes with a
 * rotation (rope+ssmax); pe.c refuses it with a bias or value PE, whose
 * terms it would leave unscaled.
 *
 * n_i, the keys query i sees: i + 1 in a decoder (causal), i the query's
 * row, its index in the sequence whatever position ids it carries; the
 * sequence's length in an encoder, padding included. A window or chunk mask
 * is not counted. A decoder's first query sees one key: ln 1 = 0 zeroes its
 * row, and its attention, on that one key, is unchanged.
 *
 * s is kept >= 0.01 after every update (prepare, as kerple keeps its r):
 * at s = 0 every logit is 0 and the query rows cannot be recovered for
 * the gradient (pe.c divides by the factor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

#define SSMAX_MIN_S 0.01f

typedef struct ssmax_state {
    double s0;   /* initial s */
    pe_slots ds; /* per thread: [layers, H] gradients of s */
} ssmax_state;

static posemb_status ssmax_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    ssmax_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "ssmax: out of memory");
    c->state = s;
    posemb_status st = pe_opt_double(o, "s", 0.43, SSMAX_MIN_S, 100.0, &s->s0, err);
    if (st) return st;
    pe_canon_num(c, "s", s->s0);
    int L = c->dims.n_layers, H = c->dims.n_heads;
    if ((st = pe_slots_init(&s->ds, c->dims.max_threads, (size_t)L * H, err))) return st;
    for (int l = 0; l < L; l++)
        if (pe_comp_param(c, "ssmax.s", POSEMB_PE_SCOPE_LAYER, l, H, 0, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void ssmax_init(pe_comp *c)
{
    const ssmax_state *s = c->state;
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int h = 0; h < c->dims.n_heads; h++) c->params[l].data[h] = (float)s->s0;
}

static void ssmax_prepare(pe_comp *c)
{
    if (!c->params[0].data) return;
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int h = 0; h < c->dims.n_heads; h++)
            if (c->params[l].data[h] < SSMAX_MIN_S) c->params[l].data[h] = SSMAX_MIN_S;
}

static void ssmax_destroy(pe_comp *c)
{
    ssmax_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->ds);
    free(s);
}

/* ln n_i of the call's query i: the engine's calls hold a sequence's rows
 * from its first token, so row i is token i. */
static double log_keys(const pe_comp *c, const posemb_pe_head *h, int i)
{
    return log(c->dims.causal ? i + 1.0 : (double)(h->nq > h->nk ? h->nq : h->nk));
}

static void ssmax_q_factors(pe_comp *c, const posemb_pe_head *h, float *f)
{
    float s = c->params[h->layer].data[h->head];
    for (int i = 0; i < h->nq; i++) f[i] = s * (float)log_keys(c, h, i);
}

/* f_i = s ln n_i: ds += sum_i ln(n_i) df_i. */
static void ssmax_q_factors_backward(pe_comp *c, const posemb_pe_head *h, const float *df)
{
    double g = 0.0;
    for (int i = 0; i < h->nq; i++) g += log_keys(c, h, i) * df[i];
    pe_slot(&((ssmax_state *)c->state)->ds, h->slot)[(size_t)h->layer * c->dims.n_heads + h->head] += (float)g;
}

static void ssmax_layer_backward_end(pe_comp *c, int layer)
{
    const ssmax_state *s = c->state;
    int H = c->dims.n_heads;
    for (int t = 0; t < s->ds.n; t++) {
        float *slot = pe_slot(&s->ds, t) + (size_t)layer * H;
        for (int h = 0; h < H; h++) c->params[layer].grad[h] += slot[h];
        memset(slot, 0, (size_t)H * sizeof *slot);
    }
}

/* s per layer and head, and the factor on q.k at each query position (a
 * decoder's: s ln(x + 1)) for layer 0. */
static posemb_status ssmax_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    int H = c->dims.n_heads;
    posemb_pe_named_matrix *f = pe_export_add(
        out, a, "logit_factor",
        c->dims.causal ? "row x: layer 0's factor s_h ln(x + 1) on q.k, column h: head"
                       : "row x: layer 0's factor s_h ln(n) on q.k for a sequence of n = x + 1 tokens, column h: head",
        n, H, err);
    if (!f) return err ? err->code : POSEMB_ENOMEM;
    for (int x = 0; x < n; x++)
        for (int h = 0; h < H; h++) f->data[(size_t)x * H + h] = c->params[0].data[h] * (float)log(x + 1.0);
    return pe_export_per_layer(c, "ssmax_s", "row h: the head's s", 0, 1, a, out, err);
}

const pe_family pe_family_ssmax = {
    .name = "ssmax",
    .kind = PE_KIND_SCALE,
    .summary = "Scalable-Softmax: logits times s ln(n), n the keys a query sees, s learned per head (Nakanishi 2025)",
    .options = "s=NUM the initial s (0.43); alone or with a rotary PE (rope+ssmax)",
    .no_positions = 1,
    .configure = ssmax_configure,
    .init = ssmax_init,
    .prepare = ssmax_prepare,
    .destroy = ssmax_destroy,
    .q_factors = ssmax_q_factors,
    .q_factors_backward = ssmax_q_factors_backward,
    .layer_backward_end = ssmax_layer_backward_end,
    .export = ssmax_export,
};
