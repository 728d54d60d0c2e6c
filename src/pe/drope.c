/* drope: DroPE's inference-time temperature (Gelberg, Eguchi, Akiba and
 * Cetin 2025, "Extending the Context of Pretrained LLMs by Dropping Their
 * Positional Embeddings", arXiv 2512.12167, Appendix C.2; code
 * SakanaAI/DroPE). DroPE removes RoPE from every layer of a pretrained
 * model, recalibrates it briefly at the training length C_train, and reads
 * a sequence of C_test > C_train tokens with every attention logit q.k /
 * sqrt(d) times
 *   beta = 1 + c ln(C_test / C_train)
 * (one scalar for all layers and heads; 1 up to C_train), c fitted per
 * model on held-out text (the paper's 0.412 and 0.103). Here C_test is the
 * length of the sequence the attention reads (its query rows) and C_train
 * is original=; no position enters the logits (NoPE). No parameters. */
#include <math.h>
#include <stdlib.h>

#include "family.h"

typedef struct drope_state {
    double c, original;
} drope_state;

static posemb_status drope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    drope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "drope: out of memory");
    c->state = s;
    posemb_status st = pe_opt_double(o, "c", 0.0, 0.0, 1e6, &s->c, err);
    if (!st) st = pe_opt_double(o, "original", (double)c->len0, 1.0, 1e12, &s->original, err);
    if (st) return st;
    pe_canon_num(c, "c", s->c);
    pe_canon_num(c, "original", s->original);
    return POSEMB_OK;
}

static void drope_destroy(pe_comp *c) { free(c->state); }

/* beta for a sequence of n tokens. */
static float beta(const drope_state *s, int n)
{
    return n > s->original ? (float)(1.0 + s->c * log((double)n / s->original)) : 1.0f;
}

static void drope_q_factors(pe_comp *c, const posemb_pe_head *h, float *f)
{
    float b = beta(c->state, h->nq);
    for (int i = 0; i < h->nq; i++) f[i] = b;
}

static posemb_status drope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    posemb_pe_named_matrix *f =
        pe_export_add(out, a, "logit_factor", "row n - 1: beta for a sequence of n tokens (on q.k)", n, 1, err);
    if (!f) return err ? err->code : POSEMB_ENOMEM;
    for (int x = 0; x < n; x++) f->data[x] = beta(c->state, x + 1);
    return POSEMB_OK;
}

const pe_family pe_family_drope = {
    .name = "drope",
    .kind = PE_KIND_SCALE,
    .summary = "DroPE: no PE, logits times 1 + c ln(n / original) on a sequence of n > original tokens (Gelberg et "
               "al. 2025)",
    .options = "c=NUM (0: NoPE), original=N the recalibration's length (max-len)",
    .no_positions = 1,
    .configure = drope_configure,
    .destroy = drope_destroy,
    .q_factors = drope_q_factors,
    .export = drope_export,
};
