/* cope: contextual position encoding (Golovneva et al. 2024, "Contextual
 * Position Encoding: Learning to Count What's Important"). A query counts
 * the keys that "matter" to it: with gates g_ij = sigmoid(s_ij) on its
 * content logits s = q.k / sqrt(d),
 *   p_ij = sum_{t=j..i} g_it,   clamped to npos - 1,
 * and adds to logit (i, j) the interpolation of q_i . e[floor p] and
 * q_i . e[ceil p], e a learned [npos, d] table per layer shared by the heads,
 * zero at the start (the paper's code, as x-transformers' CoPE). Positions
 * are counted over the keys up to the query, so CoPE is defined for decoders.
 * The forward pass reads the gates from the logits it is handed: CoPE is the
 * only attention component of its PE (pe.c allows one), so they are the
 * content logits; the backward pass recomputes them with the same product.
 * Memory: per thread, one head's n x n gates, as the attention itself. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

typedef struct cope_state {
    int npos;
    pe_slots
        work; /* per thread: gates [max_len^2], q.e [max_len, npos], d loss / d q.e [max_len, npos], row [max_len] */
    pe_slots dtable; /* per thread: [npos, d] gradient of this layer's table */
} cope_state;

static posemb_status cope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    cope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "cope: out of memory");
    c->state = s;
    if (!c->dims.causal)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': cope is defined for decoders (causal attention): it counts the keys up to the "
                           "query",
                           o->spec);
    posemb_status st = pe_opt_int(o, "npos", 64, 2, 1 << 16, &s->npos, err);
    if (st) return st;
    pe_canon_add(c, "npos=%d", s->npos);
    size_t n = (size_t)c->dims.max_len, d = (size_t)c->head_dim;
    if ((st = pe_slots_init(&s->work, c->dims.max_threads, n * n + 2 * n * s->npos + n, err)) ||
        (st = pe_slots_init(&s->dtable, c->dims.max_threads, (size_t)s->npos * d, err)))
        return st;
    for (int l = 0; l < c->dims.n_layers; l++)
        if (pe_comp_param(c, "cope.pos_emb", POSEMB_PE_SCOPE_LAYER, l, s->npos, c->head_dim, 0.0f, 1, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void cope_destroy(pe_comp *c)
{
    cope_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->work);
    pe_slots_free(&s->dtable);
    free(s);
}

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Where a thread's buffers sit in its work slot. */
typedef struct cope_work {
    float *gates, *qe, *dqe, *row;
} cope_work;

static cope_work work_of(const cope_state *s, const pe_comp *c, int slot)
{
    size_t n = (size_t)c->dims.max_len;
    float *w = pe_slot(&s->work, slot);
    return (cope_work){.gates = w, .qe = w + n * n, .dqe = w + n * n + n * s->npos, .row = w + n * n + 2 * n * s->npos};
}

/* Positions p_j = sum_{t=j..i} gate_t of one query (i = last), clamped to
 * npos - 1, into pos [i + 1]; the gates themselves into g. */
static void count(const float *logits, int i, int npos, float *g, float *pos)
{
    float acc = 0.0f;
    for (int j = i; j >= 0; j--) {
        g[j] = sigmoid(logits[j]);
        acc += g[j];
        pos[j] = acc < npos - 1 ? acc : (float)(npos - 1);
    }
}

static void cope_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *sc, int lds)
{
    const cope_state *s = c->state;
    POSEMB_REQUIRE(h->nq == h->nk, "cope: self-attention only (as many queries as keys)");
    cope_work w = work_of(s, c, h->slot);
    int n = h->nq, P = s->npos;
    const float *e = c->params[h->layer].data; /* [npos, d] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, P, h->d, 1.0f, q, ldq, e, h->d, 0.0f, w.qe, P);
    for (int i = 0; i < n; i++) {
        float *si = sc + (size_t)i * lds, *qe = w.qe + (size_t)i * P;
        count(si, i, P, w.gates, w.row);
        for (int j = 0; j <= i; j++) {
            int lo = (int)w.row[j], hi = lo + 1 < P ? lo + 1 : lo;
            float t = w.row[j] - lo;
            si[j] += qe[lo] + t * (qe[hi] - qe[lo]);
        }
    }
}

/* One query's backward: ds -> d loss / d q.e (into dqe) and d loss / d its
 * content logits (into g, over the gates). */
static void row_backward(const float *ds, const float *qe, int i, int npos, float *g, float *pos, float *dqe)
{
    float acc = 0.0f;
    for (int j = 0; j <= i; j++) {
        int lo = (int)pos[j], hi = lo + 1 < npos ? lo + 1 : lo;
        float t = pos[j] - lo;
        dqe[lo] += ds[j] * (1.0f - t);
        dqe[hi] += ds[j] * t;
        /* d p_j: zero where the count is clamped */
        float dp = pos[j] < npos - 1 ? ds[j] * (qe[hi] - qe[lo]) : 0.0f;
        acc += dp; /* d gate_t = sum_{j <= t} d p_j */
        g[j] = acc * g[j] * (1.0f - g[j]);
    }
}

static void cope_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    cope_state *s = c->state;
    cope_work w = work_of(s, c, h->slot);
    int n = h->nq, P = s->npos, d = h->d;
    const float *e = c->params[h->layer].data;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, h->scale, q, ldq, k, ldk, 0.0f, w.gates, n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, P, d, 1.0f, q, ldq, e, d, 0.0f, w.qe, P);
    memset(w.dqe, 0, (size_t)n * P * sizeof *w.dqe);
    for (int i = 0; i < n; i++) {
        float *gi = w.gates + (size_t)i * n;
        count(gi, i, P, gi, w.row);
        row_backward(ds + (size_t)i * ldds, w.qe + (size_t)i * P, i, P, gi, w.row, w.dqe + (size_t)i * P);
        for (int j = i + 1; j < n; j++) gi[j] = 0.0f;
    }
    /* through the content logits s = scale q.k, and through q.e */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, h->scale, w.gates, n, k, ldk, 1.0f, dq, lddq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, n, h->scale, w.gates, n, q, ldq, 1.0f, dk, lddk);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, P, 1.0f, w.dqe, P, e, d, 1.0f, dq, lddq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, d, n, 1.0f, w.dqe, P, q, ldq, 1.0f,
                pe_slot(&s->dtable, h->slot), d);
}

static void cope_layer_backward_end(pe_comp *c, int layer)
{
    cope_state *s = c->state;
    pe_slots_fold(&s->dtable, c->params[layer].grad);
}

static posemb_status cope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    return pe_export_per_layer(c, "cope_pos", "row m: the vector e[m] of contextual position m", 0, 1, a, out, err);
}

const pe_family pe_family_cope = {
    .name = "cope",
    .kind = PE_KIND_ATTENTION,
    .no_positions = 1,
    .summary = "contextual positions: counts of sigmoid(q.k) gates, interpolated learned vectors, decoders only "
               "(Golovneva et al. 2024)",
    .options = "npos=INT positions the count is clamped to (64)",
    .configure = cope_configure,
    .destroy = cope_destroy,
    .logits_forward = cope_logits_forward,
    .logits_backward = cope_logits_backward,
    .layer_backward_end = cope_layer_backward_end,
    .export = cope_export,
};
