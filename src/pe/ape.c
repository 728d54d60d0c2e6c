/* ape: a learned table, one row per position (BERT, RoBERTa, GPT-2).
 * Positions past the table are an error (posemb_pe_check_positions); the
 * table keeps the rows of the first build, so a longer input whose given
 * positions fit runs (posemb_pe_reserve).
 *
 * rms=R holds every row's RMS at R: position x adds R v_x / rms(v_x), so
 * training learns the rows' directions but cannot shrink them. It is the
 * intervention of results/position-learning's slice 10: a learned table
 * that cannot take the route to shrink that plain ape takes.
 *
 * frozen=on holds the table as it was loaded or drawn: its gradient is 0
 * (a constant, as torch's requires_grad=False) and it takes no weight
 * decay, so AdamW leaves it unchanged. Slice 20's intervention: a table
 * that training can neither shrink nor reshape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

#define RMS_EPS 1e-12 /* inside the root: a zero row stays finite */

typedef struct ape_state {
    double rms; /* 0: the rows as they are */
    int frozen; /* 1: the table is a constant */
} ape_state;

static posemb_status ape_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    ape_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "ape: out of memory");
    c->state = s;
    posemb_status st = pe_opt_double(o, "rms", 0, 1e-6, 1e3, &s->rms, err);
    if (st) return st;
    if (s->rms > 0) pe_canon_num(c, "rms", s->rms);
    if ((st = pe_opt_bool(o, "frozen", 0, &s->frozen, err))) return st;
    if (s->frozen) pe_canon_add(c, "frozen=on");
    c->max_pos = c->len0;
    if (pe_comp_param(c, "position_embeddings.weight", POSEMB_PE_SCOPE_MODEL, 0, c->len0, c->width, 0.02f, !s->frozen,
                      err) < 0)
        return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void ape_destroy(pe_comp *c) { free(c->state); }

/* R / rms(v) of a row v [w]. */
static double row_factor(const float *v, size_t w, double R)
{
    double ss = 0;
    for (size_t i = 0; i < w; i++) ss += (double)v[i] * v[i];
    return R / sqrt(ss / (double)w + RMS_EPS);
}

/* o [w] <- row v as the model adds it (rms=R: scaled to RMS R). */
static void ape_row(const ape_state *s, const float *v, size_t w, float *o)
{
    if (s->rms <= 0) {
        memcpy(o, v, w * sizeof *o);
        return;
    }
    double f = row_factor(v, w, s->rms);
    for (size_t i = 0; i < w; i++) o[i] = (float)(f * v[i]);
}

/* out [n, width] <- the rows of pos. */
static void ape_rows(pe_comp *c, const int32_t *pos, long n, float *out)
{
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) ape_row(c->state, c->params[0].data + (size_t)pos[t] * w, w, out + (size_t)t * w);
}

/* dv += dout, or with rms=R, r = rms(v): dv += (R / r) (dout - v (v . dout) / (w r^2)); frozen: nothing. */
static void ape_rows_backward(pe_comp *c, const int32_t *pos, long n, const float *dout)
{
    const ape_state *s = c->state;
    if (s->frozen) return;
    const float *table = c->params[0].data;
    float *g = c->params[0].grad;
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) {
        const float *v = table + (size_t)pos[t] * w, *dr = dout + (size_t)t * w;
        float *gr = g + (size_t)pos[t] * w;
        if (s->rms <= 0) {
            for (size_t i = 0; i < w; i++) gr[i] += dr[i];
            continue;
        }
        double f = row_factor(v, w, s->rms), r = s->rms / f, vd = 0;
        for (size_t i = 0; i < w; i++) vd += (double)v[i] * dr[i];
        double k = vd / ((double)w * r * r);
        for (size_t i = 0; i < w; i++) gr[i] += (float)(f * (dr[i] - v[i] * k));
    }
}

static posemb_status ape_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    if (n > c->max_pos)
        return posemb_fail(err, POSEMB_ERANGE, "ape: %d positions asked, the table has %d rows", n, c->max_pos);
    posemb_pe_named_matrix *m =
        pe_export_add(out, a, "ape", "row x: the learned vector of position x", n, c->width, err);
    if (!m) return err ? err->code : POSEMB_ENOMEM;
    size_t w = (size_t)c->width;
    for (int x = 0; x < n; x++) /* the rows as the model adds them (rms=: scaled) */
        ape_row(c->state, c->params[0].data + (size_t)x * w, w, m->data + (size_t)x * w);
    return POSEMB_OK;
}

const pe_family pe_family_ape = {
    .name = "ape",
    .kind = PE_KIND_INPUT,
    .table_by_position = 1,
    .summary = "learned absolute table, max_len x D, N(0, 0.02) (BERT, RoBERTa, GPT-2)",
    .options = "integration=add|concat, width=INT (concat), scale=NUM (1, add), learned_scale=on|off, rms=R every "
               "row held at RMS R (off): its direction learned, its size fixed, frozen=on|off the table a constant "
               "(off)",
    .configure = ape_configure,
    .destroy = ape_destroy,
    .rows = ape_rows,
    .rows_backward = ape_rows_backward,
    .export = ape_export,
};
