/* pope: polar coordinate position embeddings (Gopalakrishnan, Csordas,
 * Schmidhuber and Mozer 2025, "Decoupling the 'What' and 'Where' With Polar
 * Coordinate Positional Embeddings", arXiv 2509.10534). Each of the d
 * components of a head's q and k becomes a complex number: its magnitude
 * softplus(q_c) says what, its phase says where,
 *   q~_ic = softplus(q_ic) e^{i x_i theta_c},
 *   k~_jc = softplus(k_jc) e^{i (x_j theta_c + delta_hc)},
 * theta_c = base^(-c/d) for c = 0..d-1 (d frequencies, twice RoPE's), and
 * the logit is Re(q~_i . conj(k~_j)) times the engine's 1/sqrt(d):
 *   s_ij = sum_c softplus(q_ic) softplus(k_jc) cos((x_i - x_j) theta_c - delta_hc).
 * delta, a learned phase bias per layer, head and component, starts at 0
 * and is clamped to [-2 pi, 0] where it is used, as lucidrains' PoPE-pytorch
 * (`PoPE_pytorch/pope.py`: `bias.clamp(-2 pi, 0)`, `apply_pope_to_qk`
 * interleaving (cos, sin) per component; `attention.py` scales by the
 * head width d before the expansion); the clamp passes no gradient outside
 * it. With grouped-query attention delta is per query head (the reference
 * keeps it per kv head; the same without grouping).
 *
 * The logits replace the engine's q.k (the scores hook): per call, q and k
 * are expanded into [n, 2d] rows (magnitude times cos and sin of the phase)
 * in per-thread scratch and multiplied with one sgemm; the backward runs the
 * two products of the expanded rows and chains through the phases and
 * softplus. cos and sin of x theta_c come from a table of positions below
 * max_len (computed in double), past it directly. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

#define TWO_PI 6.283185307179586

typedef struct pope_state {
    double base;
    int rows;         /* positions in the table */
    float *cos, *sin; /* [rows, d]: cos and sin of x theta_c */
    double *theta;    /* [d] */
    pe_slots work;    /* per thread: q~, k~, dq~, dk~ [max_len, 2d] each, then cos, sin of delta [2d] */
    pe_slots ddelta;  /* per thread: [layers, H, d] gradients of delta */
} pope_state;

static posemb_status pope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    pope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "pope: out of memory");
    c->state = s;
    posemb_status st = pe_opt_double(o, "base", 10000.0, 1.0, 1e12, &s->base, err);
    if (st) return st;
    pe_canon_num(c, "base", s->base);
    int d = c->head_dim, L = c->dims.n_layers, H = c->dims.n_heads, n = c->dims.max_len;
    s->rows = n;
    s->cos = malloc((size_t)n * d * sizeof *s->cos);
    s->sin = malloc((size_t)n * d * sizeof *s->sin);
    s->theta = malloc((size_t)d * sizeof *s->theta);
    if (!s->cos || !s->sin || !s->theta) return posemb_fail(err, POSEMB_ENOMEM, "pope: out of memory");
    for (int m = 0; m < d; m++) s->theta[m] = pow(s->base, -(double)m / d);
    for (int x = 0; x < n; x++)
        for (int m = 0; m < d; m++) {
            s->cos[(size_t)x * d + m] = (float)cos(x * s->theta[m]);
            s->sin[(size_t)x * d + m] = (float)sin(x * s->theta[m]);
        }
    int T = c->dims.max_threads;
    if ((st = pe_slots_init(&s->work, T, 8 * (size_t)n * d + 2 * (size_t)d, err)) ||
        (st = pe_slots_init(&s->ddelta, T, (size_t)L * H * d, err)))
        return st;
    for (int l = 0; l < L; l++)
        if (pe_comp_param(c, "pope.delta", POSEMB_PE_SCOPE_LAYER, l, H, d, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void pope_init(pe_comp *c)
{
    for (int l = 0; l < c->dims.n_layers; l++) memset(c->params[l].data, 0, c->params[l].numel * sizeof(float));
}

static void pope_destroy(pe_comp *c)
{
    pope_state *s = c->state;
    if (!s) return;
    free(s->cos);
    free(s->sin);
    free(s->theta);
    pe_slots_free(&s->work);
    pe_slots_free(&s->ddelta);
    free(s);
}

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* cos and sin of x theta_c (+ delta_c when cd, sd give its cos and sin), from the table or computed. */
static void phase(const pope_state *s, int d, int32_t x, int m, const float *cd, const float *sd, float *cs, float *sn)
{
    if (x >= 0 && x < s->rows) {
        *cs = s->cos[(size_t)x * d + m];
        *sn = s->sin[(size_t)x * d + m];
    } else {
        *cs = (float)cos(x * s->theta[m]);
        *sn = (float)sin(x * s->theta[m]);
    }
    if (cd) { /* the angle plus delta */
        float c2 = *cs * cd[m] - *sn * sd[m];
        *sn = *sn * cd[m] + *cs * sd[m];
        *cs = c2;
    }
}

/* The head's delta, clamped, as cos and sin [d] each into cd, sd. */
static void delta_phase(const pe_comp *c, const posemb_pe_head *h, float *cd, float *sd)
{
    int d = c->head_dim;
    const float *delta = c->params[h->layer].data + (size_t)h->head * d;
    for (int m = 0; m < d; m++) {
        double x = fmin(0.0, fmax(-TWO_PI, delta[m]));
        cd[m] = (float)cos(x);
        sd[m] = (float)sin(x);
    }
}

/* out [n, 2d]: softplus(v_c) (cos, sin) of x theta_c (+ delta_c with cd, sd). */
static void expand(const pope_state *s, int d, const float *v, int ldv, const int32_t *pos, int n, const float *cd,
                   const float *sd, float *out)
{
    for (int i = 0; i < n; i++) {
        const float *vi = v + (size_t)i * ldv;
        float *oi = out + (size_t)i * 2 * d;
        for (int m = 0; m < d; m++) {
            float cs, sn, mag = softplus(vi[m]);
            phase(s, d, pos[i], m, cd, sd, &cs, &sn);
            oi[2 * m] = mag * cs;
            oi[2 * m + 1] = mag * sn;
        }
    }
}

/* s [nq, nk] = scale q~ k~^T. */
static void pope_scores_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *s, int lds)
{
    const pope_state *st = c->state;
    int d = c->head_dim, n = c->dims.max_len;
    POSEMB_REQUIRE(h->nq <= n && h->nk <= n, "pope: more rows than the PE's max_len");
    float *w = pe_slot(&st->work, h->slot), *qe = w, *ke = w + 2 * (size_t)n * d, *cd = w + 8 * (size_t)n * d,
          *sd = cd + d;
    delta_phase(c, h, cd, sd);
    expand(st, d, q, ldq, h->qpos, h->nq, NULL, NULL, qe);
    expand(st, d, k, ldk, h->kpos, h->nk, cd, sd, ke);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h->nq, h->nk, 2 * d, h->scale, qe, 2 * d, ke, 2 * d, 0.0f, s,
                lds);
}

/* dv_c (overwritten or added to) from de = d loss / d expanded row: the magnitude's softplus'
 * times the phase's (cos, sin). */
static void contract(const pope_state *s, int d, const float *v, int ldv, const int32_t *pos, int n, const float *cd,
                     const float *sd, const float *de, float *dv, int lddv, int accumulate)
{
    for (int i = 0; i < n; i++) {
        const float *vi = v + (size_t)i * ldv, *ei = de + (size_t)i * 2 * d;
        float *di = dv + (size_t)i * lddv;
        for (int m = 0; m < d; m++) {
            float cs, sn;
            phase(s, d, pos[i], m, cd, sd, &cs, &sn);
            float g = sigmoid(vi[m]) * (ei[2 * m] * cs + ei[2 * m + 1] * sn);
            di[m] = accumulate ? di[m] + g : g;
        }
    }
}

/* d delta_c = sum_j (d k~_j,cos, d k~_j,sin) . (-k~_j,sin, k~_j,cos), inside the clamp. */
static void delta_backward(pe_comp *c, const posemb_pe_head *h, const float *ke, const float *dke)
{
    const pope_state *st = c->state;
    int d = c->head_dim, H = c->dims.n_heads;
    const float *delta = c->params[h->layer].data + (size_t)h->head * d;
    float *g = pe_slot(&st->ddelta, h->slot) + ((size_t)h->layer * H + h->head) * d;
    for (int m = 0; m < d; m++) {
        if (delta[m] > 0.0f || delta[m] < -TWO_PI) continue;
        double acc = 0.0;
        for (int j = 0; j < h->nk; j++) {
            const float *kj = ke + (size_t)j * 2 * d, *dj = dke + (size_t)j * 2 * d;
            acc += -(double)dj[2 * m] * kj[2 * m + 1] + (double)dj[2 * m + 1] * kj[2 * m];
        }
        g[m] += (float)acc;
    }
}

static void pope_scores_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate)
{
    const pope_state *st = c->state;
    int d = c->head_dim, n = c->dims.max_len, nq = h->nq, nk = h->nk;
    float *w = pe_slot(&st->work, h->slot), *qe = w, *ke = w + 2 * (size_t)n * d, *dqe = w + 4 * (size_t)n * d,
          *dke = w + 6 * (size_t)n * d, *cd = w + 8 * (size_t)n * d, *sd = cd + d;
    delta_phase(c, h, cd, sd);
    expand(st, d, q, ldq, h->qpos, nq, NULL, NULL, qe);
    expand(st, d, k, ldk, h->kpos, nk, cd, sd, ke);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, 2 * d, nk, h->scale, ds, ldds, ke, 2 * d, 0.0f, dqe,
                2 * d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, 2 * d, nq, h->scale, ds, ldds, qe, 2 * d, 0.0f, dke,
                2 * d);
    contract(st, d, q, ldq, h->qpos, nq, NULL, NULL, dqe, dq, lddq, 0);
    contract(st, d, k, ldk, h->kpos, nk, cd, sd, dke, dk, lddk, accumulate);
    delta_backward(c, h, ke, dke);
}

static void pope_layer_backward_end(pe_comp *c, int layer)
{
    const pope_state *s = c->state;
    size_t hd = (size_t)c->dims.n_heads * c->head_dim;
    for (int t = 0; t < s->ddelta.n; t++) {
        float *slot = pe_slot(&s->ddelta, t) + (size_t)layer * hd;
        for (size_t i = 0; i < hd; i++) c->params[layer].grad[i] += slot[i];
        memset(slot, 0, hd * sizeof *slot);
    }
}

/* The kernel (layer 0, head 0, equal magnitudes), the frequencies, and each layer's phase bias delta [H, d]. */
static posemb_status pope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const pope_state *s = c->state;
    int d = c->head_dim;
    posemb_pe_named_matrix *kern = pe_export_add(
        out, a, "kernel", "layer 0, head 0: sum_c cos((i - j) theta_c - delta_c), q.k of equal magnitudes", n, n, err);
    if (!kern) return err ? err->code : POSEMB_ENOMEM;
    const float *delta = c->params[0].data;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int m = 0; m < d; m++) acc += cos((i - j) * s->theta[m] - fmin(0.0, fmax(-TWO_PI, delta[m])));
            kern->data[(size_t)i * n + j] = (float)acc;
        }
    posemb_pe_named_matrix *f =
        pe_export_add(out, a, "pope_frequencies", "theta_c = base^(-c/d), c = 0..d-1 (one per component)", 1, d, err);
    if (!f) return err ? err->code : POSEMB_ENOMEM;
    for (int m = 0; m < d; m++) f->data[m] = (float)s->theta[m];
    return pe_export_per_layer(c, "pope_delta", "row h: the head's phase bias delta_c (used clamped to [-2 pi, 0])", 0,
                               1, a, out, err);
}

const pe_family pe_family_pope = {
    .name = "pope",
    .kind = PE_KIND_ATTENTION,
    .summary = "polar PE: logits sum_c softplus(q_c) softplus(k_c) cos((i-j) theta_c - delta_c), d frequencies, "
               "learned phase bias (Gopalakrishnan et al. 2025)",
    .options = "base=NUM (10000): theta_c = base^(-c/d)",
    .configure = pope_configure,
    .init = pope_init,
    .destroy = pope_destroy,
    .scores_forward = pope_scores_forward,
    .scores_backward = pope_scores_backward,
    .layer_backward_end = pope_layer_backward_end,
    .export = pope_export,
};
