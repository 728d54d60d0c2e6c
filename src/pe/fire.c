/* fire: functional interpolation for relative positions (Li et al. 2023,
 * "Functional Interpolation for Relative Positions Improves Long Context
 * Transformers"). Head h adds to its logits
 *   b_h(i, j) = f_h(psi(|i - j|) / (psi(max(i, Lt)) + eps)),
 *   psi(u) = ln(|c| u + 1),
 * f a small MLP 1 -> width -> H with a ReLU, c learned (log transform) and
 * the threshold Lt = |s L0| learned through its scale s (progressive
 * interpolation: queries beyond Lt normalise by their own position, so the
 * MLP's input stays in [0, 1] at any length). interpolate=off normalises
 * every query by psi(Lt), the paper's ablation without interpolation, which
 * also serves to evaluate a model trained with it as if it had none. As the paper's reference code
 * (its appendix; mcleish7/arithmetic) computes it, with |i - j| so that it
 * is defined in encoders too (where it cannot tell left from right, as
 * kerple). One FIRE is shared by all layers, as T5's bias is.
 * Queries at positions <= Lt share one normaliser, so the bias of such a row
 * depends on |i - j| only: each call tabulates it by distance (O(n) MLP
 * evaluations), and only rows beyond Lt evaluate the MLP per pair, a row
 * at a time so that the pairs fill SIMD lanes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/simd.h"
#include "family.h"

#define FIRE_EPS 1e-6
#define FIRE_MAX_WIDTH 256

enum { P_W1, P_B1, P_W2, P_B2, P_C, P_SCALE, P_COUNT };

typedef struct fire_state {
    int width;               /* hidden units of the MLP */
    double c0, L0;           /* initial c, and the threshold Lt at scale 1 */
    int interpolate;         /* queries beyond Lt normalise by their own position */
    size_t off[P_COUNT + 1]; /* where each parameter's gradient sits in a dparams slot */
    pe_slots table;          /* per thread: the bias (forward) or d loss / d bias (backward) by distance */
    pe_slots row;            /* per thread: [2, max_len] the MLP's inputs and outputs of one query row */
    double *psi_by_d;        /* [max_threads, max_len]: psi(d) of one call, per thread */
    pe_slots dparams;        /* per thread: gradients of every parameter, laid out by off[] */
    float *fold;             /* [off[P_COUNT]]: the threads' gradients summed */
} fire_state;

static posemb_status fire_declare(pe_comp *c, fire_state *s, posemb_error *err)
{
    int W = s->width, H = c->dims.n_heads;
    /* N(0, std) with the variance of PyTorch's default nn.Linear init, U(+-1/sqrt(fan_in)) */
    float std1 = (float)(1.0 / sqrt(3.0)), std2 = (float)(1.0 / sqrt(3.0 * W));
    struct {
        const char *name;
        int rows, cols;
        float std;
        int decay;
    } p[P_COUNT] = {
        {"fire.w1", W, 0, std1, 1}, {"fire.b1", W, 0, std1, 0}, {"fire.w2", H, W, std2, 1},
        {"fire.b2", H, 0, std2, 0}, {"fire.c", 1, 0, -1.0f, 0}, {"fire.threshold_scale", 1, 0, -1.0f, 0},
    };
    s->off[0] = 0;
    for (int i = 0; i < P_COUNT; i++) {
        if (pe_comp_param(c, p[i].name, POSEMB_PE_SCOPE_MODEL, 0, p[i].rows, p[i].cols, p[i].std, p[i].decay, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
        s->off[i + 1] = s->off[i] + (size_t)p[i].rows * (p[i].cols ? p[i].cols : 1);
    }
    return POSEMB_OK;
}

static posemb_status fire_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    fire_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "fire: out of memory");
    c->state = s;
    posemb_status st = pe_opt_int(o, "width", 32, 1, FIRE_MAX_WIDTH, &s->width, err);
    if (!st) st = pe_opt_double(o, "c", 0.1, 1e-6, 1e6, &s->c0, err);
    if (!st) st = pe_opt_double(o, "threshold", 512.0, 1.0, 1e9, &s->L0, err);
    if (!st) st = pe_opt_bool(o, "interpolate", 1, &s->interpolate, err);
    if (st) return st;
    pe_canon_add(c, "width=%d", s->width);
    pe_canon_num(c, "c", s->c0);
    pe_canon_num(c, "threshold", s->L0);
    if (!s->interpolate) pe_canon_add(c, "interpolate=off"); /* the default stays out: specs as before */
    if ((st = fire_declare(c, s, err))) return st;
    if ((st = pe_slots_init(&s->table, c->dims.max_threads, (size_t)c->dims.max_len, err)) ||
        (st = pe_slots_init(&s->row, c->dims.max_threads, 2 * (size_t)c->dims.max_len, err)) ||
        (st = pe_slots_init(&s->dparams, c->dims.max_threads, s->off[P_COUNT], err)))
        return st;
    s->fold = calloc(s->off[P_COUNT], sizeof *s->fold);
    s->psi_by_d = calloc((size_t)c->dims.max_threads * (size_t)c->dims.max_len, sizeof *s->psi_by_d);
    if (!s->fold || !s->psi_by_d) return posemb_fail(err, POSEMB_ENOMEM, "fire: out of memory");
    return POSEMB_OK;
}

/* c and the threshold's scale start at the paper's values; the MLP as declared. */
static void fire_init(pe_comp *c)
{
    const fire_state *s = c->state;
    c->params[P_C].data[0] = (float)s->c0;
    c->params[P_SCALE].data[0] = 1.0f;
}

static void fire_destroy(pe_comp *c)
{
    fire_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->table);
    pe_slots_free(&s->row);
    pe_slots_free(&s->dparams);
    free(s->fold);
    free(s->psi_by_d);
    free(s);
}

static inline double psi(double c, double u) { return log1p(fabs(c) * u); }
/* d psi / d c */
static inline double psi_dc(double c, double u) { return (c < 0 ? -u : u) / (fabs(c) * u + 1.0); }

static inline double threshold(const pe_comp *c)
{
    const fire_state *s = c->state;
    return fabs((double)c->params[P_SCALE].data[0] * s->L0);
}

/* Whether a query at pos normalises by psi(Lt), shared with every such row. */
static inline int below_threshold(const pe_comp *c, double pos, double Lt)
{
    const fire_state *s = c->state;
    return !s->interpolate || pos <= Lt;
}

/* The normaliser psi(max(pos, Lt)) + eps of a query at pos (psi(Lt) + eps
 * without interpolation). */
static inline double normaliser(const pe_comp *c, double pos, double Lt)
{
    return psi(c->params[P_C].data[0], below_threshold(c, pos, Lt) ? Lt : pos) + FIRE_EPS;
}

/* f_head(x): the MLP's output for head. */
static float mlp(const pe_comp *c, int width, float x, int head)
{
    const float *w1 = c->params[P_W1].data, *b1 = c->params[P_B1].data;
    const float *w2 = c->params[P_W2].data + (size_t)head * width;
    float acc = c->params[P_B2].data[head];
    for (int k = 0; k < width; k++) {
        float a = w1[k] * x + b1[k];
        acc += a > 0.0f ? w2[k] * a : 0.0f;
    }
    return acc;
}

/* Adds g * d f_head(x) / d (MLP parameters) to dp; returns g * d f_head / d x. */
static double mlp_backward(const pe_comp *c, const fire_state *s, float x, int head, float g, float *dp)
{
    int W = s->width;
    const float *w1 = c->params[P_W1].data, *b1 = c->params[P_B1].data;
    const float *w2 = c->params[P_W2].data + (size_t)head * W;
    float *dw1 = dp + s->off[P_W1], *db1 = dp + s->off[P_B1], *dw2 = dp + s->off[P_W2] + (size_t)head * W;
    double dx = 0.0;
    for (int k = 0; k < W; k++) {
        float a = w1[k] * x + b1[k];
        if (a <= 0.0f) continue;
        float da = g * w2[k];
        dw2[k] += g * a;
        dw1[k] += da * x;
        db1[k] += da;
        dx += (double)da * w1[k];
    }
    dp[s->off[P_B2] + head] += g;
    return dx;
}

/* out[j] += f_head(x[j]), j < n: mlp() with the hidden units outside, so
 * the pairs run in SIMD lanes; each sum is taken in mlp()'s order, so the
 * result is mlp()'s to the bit. acc [n] is scratch. */
POSEMB_KERNEL static void mlp_add_row(const pe_comp *c, int width, const float *x, int n, int head, float *acc,
                                      float *out)
{
    const float *w1 = c->params[P_W1].data, *b1 = c->params[P_B1].data;
    const float *w2 = c->params[P_W2].data + (size_t)head * width;
    float b2 = c->params[P_B2].data[head];
    for (int j = 0; j < n; j++) acc[j] = b2;
    for (int k = 0; k < width; k++) {
        float wk = w1[k], bk = b1[k], vk = w2[k];
        for (int j = 0; j < n; j++) {
            float a = wk * x[j] + bk;
            acc[j] += a > 0.0f ? vk * a : 0.0f;
        }
    }
    for (int j = 0; j < n; j++) out[j] += acc[j];
}

/* A row beyond the threshold: its own normaliser, so one MLP input per
 * pair (psi by distance from the call's table where it reaches). */
static void row_beyond_threshold(pe_comp *c, const posemb_pe_head *h, int i, double Lt, const double *psi_d, long n,
                                 float *si)
{
    const fire_state *s = c->state;
    double cc = c->params[P_C].data[0], den = normaliser(c, h->qpos[i], Lt);
    float *x = pe_slot(&s->row, h->slot), *acc = x + c->dims.max_len;
    for (int j = 0; j < h->nk; j++) {
        long d = labs((long)h->kpos[j] - h->qpos[i]);
        x[j] = (float)((d < n ? psi_d[d] : psi(cc, (double)d)) / den);
    }
    mlp_add_row(c, s->width, x, h->nk, h->head, acc, si);
}

static void fire_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *sc, int lds)
{
    const fire_state *s = c->state;
    double cc = c->params[P_C].data[0], Lt = threshold(c), den_t = normaliser(c, 0.0, Lt);
    float *table = pe_slot(&s->table, h->slot);
    double *psi_d = s->psi_by_d + (size_t)h->slot * (size_t)c->dims.max_len;
    long n = pe_distance_span(h, c->dims.max_len);
    POSEMB_REQUIRE(h->nk <= c->dims.max_len, "fire: a head call with more keys than max_len");
    for (long d = 0; d < n; d++) psi_d[d] = psi(cc, (double)d);
    for (long d = 0; d < n; d++) table[d] = mlp(c, s->width, (float)(psi_d[d] / den_t), h->head);
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        if (!below_threshold(c, h->qpos[i], Lt)) {
            row_beyond_threshold(c, h, i, Lt, psi_d, n, si);
            continue;
        }
        for (int j = 0; j < h->nk; j++) {
            long d = labs((long)h->kpos[j] - h->qpos[i]);
            si[j] += d < n ? table[d] : mlp(c, s->width, (float)(psi(cc, (double)d) / den_t), h->head);
        }
    }
}

/* Back through one bias value b = f(x), x = psi(d) / (psi(N) + eps), N =
 * max(pos, Lt), with g = d loss / d b: the MLP's gradients into dp, and
 * d loss / d c and / d Lt (when N is the threshold) into *dc, *dLt. */
static void bias_backward(const pe_comp *c, const fire_state *s, double d, double N, int at_threshold, int head,
                          float g, float *dp, double *dc, double *dLt)
{
    double cc = c->params[P_C].data[0], den = psi(cc, N) + FIRE_EPS, x = psi(cc, d) / den;
    double dx = mlp_backward(c, s, (float)x, head, g, dp);
    *dc += dx * (psi_dc(cc, d) - x * psi_dc(cc, N)) / den;
    if (at_threshold) *dLt -= dx * x * (fabs(cc) / (fabs(cc) * N + 1.0)) / den;
}

static void fire_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    fire_state *s = c->state;
    double Lt = threshold(c), dc = 0.0, dLt = 0.0;
    float *by_d = pe_slot(&s->table, h->slot), *dp = pe_slot(&s->dparams, h->slot);
    long n = pe_distance_span(h, c->dims.max_len);
    for (long d = 0; d < n; d++) by_d[d] = 0.0f;
    for (int i = 0; i < h->nq; i++) {
        const float *dsi = ds + (size_t)i * ldds;
        int tabled = below_threshold(c, h->qpos[i], Lt);
        double N = tabled ? Lt : h->qpos[i];
        for (int j = 0; j < h->nk; j++) {
            long d = labs((long)h->kpos[j] - h->qpos[i]);
            if (tabled && d < n) by_d[d] += dsi[j];
            else if (dsi[j] != 0.0f) bias_backward(c, s, (double)d, N, tabled, h->head, dsi[j], dp, &dc, &dLt);
        }
    }
    for (long d = 0; d < n; d++)
        if (by_d[d] != 0.0f) bias_backward(c, s, (double)d, Lt, 1, h->head, by_d[d], dp, &dc, &dLt);
    double scale = c->params[P_SCALE].data[0];
    dp[s->off[P_C]] += (float)dc;
    dp[s->off[P_SCALE]] += (float)(dLt * (scale < 0 ? -1.0 : 1.0) * s->L0);
}

static void fire_layer_backward_end(pe_comp *c, int layer)
{
    fire_state *s = c->state;
    size_t n = s->off[P_COUNT];
    for (size_t i = 0; i < n; i++) s->fold[i] = 0.0f;
    pe_slots_fold(&s->dparams, s->fold);
    for (int p = 0; p < P_COUNT; p++)
        for (size_t i = s->off[p]; i < s->off[p + 1]; i++) c->params[p].grad[i - s->off[p]] += s->fold[i];
}

static float fire_bias(const pe_comp *c, int h, int i, int j)
{
    const fire_state *s = c->state;
    double Lt = threshold(c), x = psi(c->params[P_C].data[0], abs(i - j)) / normaliser(c, i, Lt);
    return mlp(c, s->width, (float)x, h);
}

static posemb_status fire_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    posemb_pe_named_matrix *m =
        pe_export_add(out, a, "fire_psi", "row 0: c; row 1: the threshold Lt = |s L0|", 2, 1, err);
    if (!m) return err ? err->code : POSEMB_ENOMEM;
    m->data[0] = c->params[P_C].data[0];
    m->data[1] = (float)threshold(c);
    const fire_state *s = c->state;
    return pe_export_head_biases(c, n, a, out,
                                 s->interpolate ? "row i, column j: f_h(ln(c|i-j| + 1) / (ln(c max(i, Lt) + 1) + eps))"
                                                : "row i, column j: f_h(ln(c|i-j| + 1) / (ln(c Lt + 1) + eps))",
                                 fire_bias, err);
}

const pe_family pe_family_fire = {
    .name = "fire",
    .logits_by_rows = 1,
    .kind = PE_KIND_ATTENTION,
    .summary = "learned bias f_h(psi(|i-j|) / psi(max(i, Lt))), f an MLP, psi(u) = ln(|c| u + 1) (Li et al. 2023; "
               "psi(Lt) for every row with interpolate=off)",
    .options = "width=INT hidden units (32), c=NUM initial c (0.1), threshold=NUM initial Lt (512), "
               "interpolate=on|off queries past Lt normalise by their own position (on)",
    .configure = fire_configure,
    .init = fire_init,
    .destroy = fire_destroy,
    .logits_forward = fire_logits_forward,
    .logits_backward = fire_logits_backward,
    .layer_backward_end = fire_layer_backward_end,
    .export = fire_export,
};
