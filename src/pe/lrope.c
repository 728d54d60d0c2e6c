/* lrope: rotary embedding with learned frequencies. RoPE's rotation of q
 * and k (rope.c: pair m of a row at position x turned by theta_m x), with
 * theta trainable, per layer and optionally per head, initialised to RoPE's
 * base^(-2m/d): learned-frequency RoPE, the one-axis case of RoPE-Mixed's
 * learned frequencies (Heo et al. 2024).
 *
 * The rotated rows (a', b') = (a cos - b sin, a sin + b cos) give
 * d a' / d theta = -x b' and d b' / d theta = x a', so the frequency's
 * gradient reads the rows attention kept (pe.h's qk_backward gets them):
 * dtheta_m += x (a' db' - b' da'), over the rows of q and of k.
 *
 * cos and sin are tabled per layer and head row for positions below
 * max_len (prepare, after every update) and computed for the rest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "core/arena_internal.h"

typedef struct lrope_state {
    int halves;           /* pairing: (m, m + d/2) or (2m, 2m + 1) */
    int rows;             /* frequency rows per layer: H (per_head=on) or 1 */
    int nf;               /* pairs: d / 2 */
    double base;          /* the initial frequencies' base */
    float *cos_t, *sin_t; /* [layers, rows, max_len, nf] */
    pe_slots dfreq;       /* per thread: [layers, rows, nf] frequency gradients */
} lrope_state;

static posemb_status lrope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    static const char *const pairings[] = {"halves", "interleaved", NULL};
    lrope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "lrope: out of memory");
    c->state = s;
    int interleaved, per_head;
    posemb_status st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (!st) st = pe_opt_enum(o, "pairing", pairings, 0, &interleaved, err);
    if (!st) st = pe_opt_bool(o, "per_head", 0, &per_head, err);
    if (st) return st;
    if (c->head_dim % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': lrope rotates pairs; head width %d is odd", o->spec,
                           c->head_dim);
    pe_canon_num(c, "base", s->base);
    pe_canon_add(c, "pairing=%s,per_head=%s", pairings[interleaved], per_head ? "on" : "off");
    s->halves = !interleaved;
    s->rows = per_head ? c->dims.n_heads : 1;
    c->qk_per_head = per_head;
    s->nf = c->head_dim / 2;
    int L = c->dims.n_layers;
    size_t n = (size_t)L * s->rows * c->dims.max_len * s->nf;
    s->cos_t = malloc(n * sizeof(float));
    s->sin_t = malloc(n * sizeof(float));
    if (!s->cos_t || !s->sin_t) return posemb_fail(err, POSEMB_ENOMEM, "lrope: out of memory");
    if ((st = pe_slots_init(&s->dfreq, c->dims.max_threads, (size_t)L * s->rows * s->nf, err))) return st;
    for (int l = 0; l < L; l++)
        if (pe_comp_param(c, "lrope.frequencies", POSEMB_PE_SCOPE_LAYER, l, s->rows, s->nf, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void lrope_init(pe_comp *c)
{
    const lrope_state *s = c->state;
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int r = 0; r < s->rows; r++)
            pe_sinusoid_freqs_f(s->base, c->head_dim, c->params[l].data + (size_t)r * s->nf);
}

static void lrope_prepare(pe_comp *c)
{
    const lrope_state *s = c->state;
    if (!c->params[0].data) return;
    int M = c->dims.max_len, nf = s->nf;
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int r = 0; r < s->rows; r++) {
            const float *theta = c->params[l].data + (size_t)r * nf;
            size_t at = ((size_t)l * s->rows + r) * M * nf;
            for (int x = 0; x < M; x++)
                for (int m = 0; m < nf; m++) {
                    double a = (double)theta[m] * x;
                    s->cos_t[at + (size_t)x * nf + m] = (float)cos(a);
                    s->sin_t[at + (size_t)x * nf + m] = (float)sin(a);
                }
        }
}

static void lrope_destroy(pe_comp *c)
{
    lrope_state *s = c->state;
    if (!s) return;
    free(s->cos_t);
    free(s->sin_t);
    pe_slots_free(&s->dfreq);
    free(s);
}

/* The head's frequency row: its own (per_head=on) or the layer's. */
static int freq_row(const lrope_state *s, int head) { return s->rows > 1 ? head : 0; }

/* Rotates n rows by theta x (sign -1: the transpose). */
static void rotate_rows(const pe_comp *c, const posemb_pe_head *h, float *x, int ld, int n, const int32_t *pos,
                        float sign)
{
    const lrope_state *s = c->state;
    int M = c->dims.max_len, nf = s->nf, r = freq_row(s, h->head);
    const float *theta = c->params[h->layer].data + (size_t)r * nf;
    size_t at = ((size_t)h->layer * s->rows + r) * M * nf;
    for (int i = 0; i < n; i++) {
        float *row = x + (size_t)i * ld;
        for (int m = 0; m < nf; m++) {
            float cs, sn;
            if (pos[i] >= 0 && pos[i] < M) {
                cs = s->cos_t[at + (size_t)pos[i] * nf + m];
                sn = s->sin_t[at + (size_t)pos[i] * nf + m];
            } else {
                double a = (double)theta[m] * pos[i];
                cs = (float)cos(a);
                sn = (float)sin(a);
            }
            sn *= sign;
            int ia = s->halves ? m : 2 * m, ib = s->halves ? m + nf : 2 * m + 1;
            float a = row[ia], b = row[ib];
            row[ia] = a * cs - b * sn;
            row[ib] = a * sn + b * cs;
        }
    }
}

static void lrope_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    rotate_rows(c, h, q, ldq, h->nq, h->qpos, 1.0f);
    rotate_rows(c, h, k, ldk, h->nk, h->kpos, 1.0f);
}

/* dtheta_m += x (a' db' - b' da') over n rotated rows y and their gradients dy. */
static void freq_grad(const lrope_state *s, const float *y, int ld, const float *dy, int ldd, int n, const int32_t *pos,
                      float *dtheta)
{
    for (int i = 0; i < n; i++) {
        const float *yi = y + (size_t)i * ld, *di = dy + (size_t)i * ldd;
        for (int m = 0; m < s->nf; m++) {
            int ia = s->halves ? m : 2 * m, ib = s->halves ? m + s->nf : 2 * m + 1;
            dtheta[m] += (float)pos[i] * (yi[ia] * di[ib] - yi[ib] * di[ia]);
        }
    }
}

static void lrope_qk_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                              float *dq, int lddq, float *dk, int lddk)
{
    const lrope_state *s = c->state;
    float *dtheta = pe_slot(&s->dfreq, h->slot) + ((size_t)h->layer * s->rows + freq_row(s, h->head)) * s->nf;
    if (h->nq) freq_grad(s, q, ldq, dq, lddq, h->nq, h->qpos, dtheta);
    if (h->nk) freq_grad(s, k, ldk, dk, lddk, h->nk, h->kpos, dtheta);
    rotate_rows(c, h, dq, lddq, h->nq, h->qpos, -1.0f);
    rotate_rows(c, h, dk, lddk, h->nk, h->kpos, -1.0f);
}

/* The threads' frequency gradients of layer into its parameter; slots zeroed. */
static void lrope_layer_backward_end(pe_comp *c, int layer)
{
    const lrope_state *s = c->state;
    size_t n = (size_t)s->rows * s->nf, at = (size_t)layer * n;
    float *g = c->params[layer].grad;
    for (int t = 0; t < s->dfreq.n; t++) {
        float *slot = pe_slot(&s->dfreq, t) + at;
        for (size_t i = 0; i < n; i++) g[i] += slot[i];
        memset(slot, 0, n * sizeof *slot);
    }
}

/* The frequencies per layer, and layer 0's (first head's) kernel: q.k of
 * constant unit pairs, sum_m cos(theta_m (i - j)). */
static posemb_status lrope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const lrope_state *s = c->state;
    posemb_pe_named_matrix *k = pe_export_add(
        out, a, "kernel", "layer 0, head 0: sum_m cos(theta_m (i - j)), q.k of constant unit pairs", n, n, err);
    if (!k) return err ? err->code : POSEMB_ENOMEM;
    const float *theta = c->params[0].data;
    float *profile = posemb_arena_floats(a, (size_t)(2 * n - 1)); /* by i - j, then a Toeplitz fill */
    if (!profile) return posemb_fail(err, POSEMB_ENOMEM, "lrope: out of memory");
    for (int r = -(n - 1); r < n; r++) {
        double acc = 0.0;
        for (int m = 0; m < s->nf; m++) acc += cos((double)theta[m] * r);
        profile[r + n - 1] = (float)acc;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) k->data[(size_t)i * n + j] = profile[i - j + n - 1];
    return pe_export_per_layer(c, "rope_frequencies",
                               "row: head (or the layer's one row), column m: theta_m in radians per position", 0, 1, a,
                               out, err);
}

const pe_family pe_family_lrope = {
    .name = "lrope",
    .kind = PE_KIND_ATTENTION,
    .summary = "rotary embedding with learned frequencies theta_m per layer (or per head), initialised to RoPE's",
    .options = "base=NUM initial base (10000), pairing=halves|interleaved, per_head=on|off (off)",
    .configure = lrope_configure,
    .init = lrope_init,
    .prepare = lrope_prepare,
    .destroy = lrope_destroy,
    .qk_forward = lrope_qk_forward,
    .qk_backward = lrope_qk_backward,
    .layer_backward_end = lrope_layer_backward_end,
    .export = lrope_export,
};
