/* tupe: Transformer with Untied Positional Encoding, TUPE-A (Ke, He, Liu,
 * ICLR 2021, "Rethinking Positional Encoding in Language Pre-training";
 * authors' code guolinke/TUPE). The learned position table p [max_len, D]
 * is not added to the input. Instead head h of every layer adds to its
 * logits the correlation of the two positions alone (the paper's eq. (7)),
 *   v_ij = (e_i U^Q_h) . (e_j U^K_h) / sqrt(f d),   e_x = LN(p_x),
 * and the token term is q.k / sqrt(f d) instead of q.k / sqrt(d): f = 2 in
 * the paper, so that neither term dominates. The engine scales by
 * 1/sqrt(d), so the q/k hook multiplies q by 1/sqrt(f) (and dq in the
 * backward); with f = 1 there is no q/k hook at all.
 *
 * As in the paper (section 3.3) and the code, one U^Q, U^K [H d, D] serves
 * every layer (share=on); share=off gives each layer its own. The code puts
 * a LayerNorm on the table rows before the projection (its pos_ln): with it
 * the term starts at a useful size from N(0, 0.02) tables, while without it
 * (ln=off, eq. (7) literally) the term and its gradients start near 0.
 * cls=on is eq. (9): the correlations of the [CLS] token, the first token of
 * each sequence, are reset to learned per-head scalars, theta_1 from [CLS] to
 * every key (its own included) and theta_2 from every other query to [CLS].
 *
 * v depends on positions and parameters only, so prepare() projects the
 * whole table once per parameter change ([max_len, H d] per projection); a
 * head call gathers the rows of its positions (gaps and drawn positions
 * alike). The backward pass accumulates d loss / d (e U^T) by position per
 * thread and, at the end of each layer, takes it back to U, the table and
 * the LayerNorm over the positions the layer's heads touched. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "core/arena_internal.h"

#define TUPE_LN_EPS 1e-5 /* torch's LayerNorm default, as the code's pos_ln */
#define TUPE_U_STD 0.02f /* the code's init_bert_params for its projection */

typedef struct tupe_state {
    int share, cls, ln;   /* options */
    double factor, std;   /* f; the table's initial std */
    float qscale, pscale; /* 1/sqrt(f) on q; 1/sqrt(f d) on the positional term */
    int i_ln, i_cls, i_u; /* first parameter of the LayerNorm, of theta and of the projections */
    int n_proj;           /* projection pairs: 1, or one per layer */
    size_t A, L;          /* attention width H d; max_len */
    float *e;             /* [L, D]: the rows the projections read, LN(p) or p */
    float *stats;         /* [L, 2]: the LayerNorm's mean and 1/std of each row */
    float *proj;          /* [n_proj][2][L, A]: e U^Q^T, e U^K^T */
    pe_slots work;        /* per thread [4, L, d]: a, b and their gradients of one head call */
    pe_slots grad;        /* per thread [2, L, A] d loss / d proj of one layer, then [2, H] d loss / d theta */
    int *used;            /* per thread: 1 + the largest position its backward touched */
    float *fold;          /* the grad slots summed */
    float *de;            /* [L, D]: d loss / d e */
} tupe_state;

static posemb_status tupe_options(pe_comp *c, tupe_state *s, pe_opts *o, posemb_error *err)
{
    posemb_status st = pe_opt_bool(o, "share", 1, &s->share, err);
    if (!st) st = pe_opt_bool(o, "cls", 0, &s->cls, err);
    if (!st) st = pe_opt_bool(o, "ln", 1, &s->ln, err);
    if (!st) st = pe_opt_double(o, "scale_factor", 2.0, 1.0 / 64, 64.0, &s->factor, err);
    if (!st) st = pe_opt_double(o, "init_std", 0.02, 1e-6, 10.0, &s->std, err);
    if (st) return st;
    pe_canon_add(c, "share=%s", s->share ? "on" : "off");
    pe_canon_add(c, "cls=%s", s->cls ? "on" : "off");
    pe_canon_add(c, "ln=%s", s->ln ? "on" : "off");
    pe_canon_num(c, "scale_factor", s->factor);
    if (s->std != 0.02) pe_canon_num(c, "init_std", s->std); /* only when set, as rpe's */
    return POSEMB_OK;
}

/* The table, its LayerNorm, theta, then the projections (per layer with
 * share=off). The scalars take no weight decay, as LayerNorms and biases. */
static posemb_status tupe_declare(pe_comp *c, tupe_state *s, posemb_error *err)
{
    int D = c->dims.dim, H = c->dims.n_heads, A = (int)s->A;
    posemb_pe_scope model = POSEMB_PE_SCOPE_MODEL, u_scope = s->share ? model : POSEMB_PE_SCOPE_LAYER;
    int ok = pe_comp_param(c, "tupe.pos.weight", model, 0, (int)s->L, D, (float)s->std, 1, err) >= 0;
    s->i_ln = c->n_params;
    if (ok && s->ln)
        ok = pe_comp_param(c, "tupe.pos_ln.weight", model, 0, D, 0, -1.0f, 0, err) >= 0 &&
             pe_comp_param(c, "tupe.pos_ln.bias", model, 0, D, 0, 0.0f, 0, err) >= 0;
    s->i_cls = c->n_params;
    if (ok && s->cls)
        ok = pe_comp_param(c, "tupe.cls_to_others", model, 0, H, 0, 0.0f, 0, err) >= 0 &&
             pe_comp_param(c, "tupe.others_to_cls", model, 0, H, 0, 0.0f, 0, err) >= 0;
    s->i_u = c->n_params;
    for (int l = 0; ok && l < s->n_proj; l++)
        ok = pe_comp_param(c, "tupe.pos_q.weight", u_scope, l, A, D, TUPE_U_STD, 1, err) >= 0 &&
             pe_comp_param(c, "tupe.pos_k.weight", u_scope, l, A, D, TUPE_U_STD, 1, err) >= 0;
    return ok ? POSEMB_OK : err ? err->code : POSEMB_ERANGE;
}

static posemb_status tupe_buffers(pe_comp *c, tupe_state *s, posemb_error *err)
{
    size_t D = (size_t)c->dims.dim, L = s->L, d = (size_t)c->head_dim, T = (size_t)c->dims.max_threads;
    size_t grad = 2 * L * s->A + 2 * (size_t)c->dims.n_heads;
    posemb_status st = pe_slots_init(&s->work, (int)T, 4 * L * d, err);
    if (!st) st = pe_slots_init(&s->grad, (int)T, grad, err);
    if (st) return st;
    s->e = calloc(L * D + 1, sizeof *s->e);
    s->stats = calloc(2 * L, sizeof *s->stats);
    s->proj = calloc((size_t)s->n_proj * 2 * L * s->A, sizeof *s->proj);
    s->used = calloc(T, sizeof *s->used);
    s->fold = calloc(grad, sizeof *s->fold);
    s->de = calloc(L * D, sizeof *s->de);
    if (!s->e || !s->stats || !s->proj || !s->used || !s->fold || !s->de)
        return posemb_fail(err, POSEMB_ENOMEM, "tupe: out of memory");
    return POSEMB_OK;
}

static posemb_status tupe_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    tupe_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "tupe: out of memory");
    c->state = s;
    posemb_status st = tupe_options(c, s, o, err);
    if (st) return st;
    c->max_pos = c->dims.max_len; /* a table: positions past it are refused */
    s->A = (size_t)c->dims.n_heads * c->head_dim;
    s->L = (size_t)c->dims.max_len;
    s->n_proj = s->share ? 1 : c->dims.n_layers;
    s->qscale = (float)(1.0 / sqrt(s->factor));
    s->pscale = (float)(1.0 / sqrt(s->factor * c->head_dim));
    if (s->factor == 1.0) c->hooks &= ~(unsigned)PE_HOOK_QK; /* the engine's 1/sqrt(d) is already right */
    if ((st = tupe_declare(c, s, err))) return st;
    return tupe_buffers(c, s, err);
}

/* The LayerNorm's gain starts at 1 (bias and theta at 0 as declared). */
static void tupe_init(pe_comp *c)
{
    const tupe_state *s = c->state;
    if (!s->ln) return;
    for (int k = 0; k < c->dims.dim; k++) c->params[s->i_ln].data[k] = 1.0f;
}

static void tupe_destroy(pe_comp *c)
{
    tupe_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->work);
    pe_slots_free(&s->grad);
    free(s->e);
    free(s->stats);
    free(s->proj);
    free(s->used);
    free(s->fold);
    free(s->de);
    free(s);
}

/* U^Q (w = 0) or U^K (w = 1) of layer, [A, D]. */
static posemb_pe_param *proj_param(const pe_comp *c, int layer, int w)
{
    const tupe_state *s = c->state;
    return &c->params[s->i_u + 2 * (s->share ? 0 : layer) + w];
}

/* e U^T of layer for U^Q (w = 0) or U^K (w = 1), [L, A]. */
static float *proj_rows(const tupe_state *s, int layer, int w)
{
    return s->proj + ((size_t)(s->share ? 0 : layer) * 2 + (size_t)w) * s->L * s->A;
}

/* e = LN(p) of one row, keeping its mean and 1/std for the backward. */
static void ln_row(const float *p, const float *g, const float *b, int D, float *e, float *stats)
{
    double mean = 0.0, var = 0.0;
    for (int k = 0; k < D; k++) mean += p[k];
    mean /= D;
    for (int k = 0; k < D; k++) var += (p[k] - mean) * (p[k] - mean);
    float mu = (float)mean, rstd = (float)(1.0 / sqrt(var / D + TUPE_LN_EPS));
    for (int k = 0; k < D; k++) e[k] = (p[k] - mu) * rstd * g[k] + b[k];
    stats[0] = mu;
    stats[1] = rstd;
}

/* After every parameter change: the rows e and their projections. */
static void tupe_prepare(pe_comp *c)
{
    tupe_state *s = c->state;
    if (!c->params[0].data) return;
    int D = c->dims.dim, A = (int)s->A, L = (int)s->L;
    const float *p = c->params[0].data;
    if (!s->ln) memcpy(s->e, p, s->L * D * sizeof *s->e);
    for (int x = 0; s->ln && x < L; x++)
        ln_row(p + (size_t)x * D, c->params[s->i_ln].data, c->params[s->i_ln + 1].data, D, s->e + (size_t)x * D,
               s->stats + 2 * x);
    for (int u = 0; u < s->n_proj; u++)
        for (int w = 0; w < 2; w++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, A, D, 1.0f, s->e, D, proj_param(c, u, w)->data, D,
                        0.0f, proj_rows(s, u, w), A);
}

/* The token term over sqrt(f d): q (or its gradient) times 1/sqrt(f). */
static void scale_rows(float *x, int n, int d, int ld, float f)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < d; k++) x[(size_t)i * ld + k] *= f;
}

static void tupe_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    const tupe_state *s = c->state;
    if (q) scale_rows(q, h->nq, c->head_dim, ldq, s->qscale);
}

static void tupe_qk_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                             float *dq, int lddq, float *dk, int lddk)
{
    (void)q, (void)ldq, (void)k, (void)ldk, (void)dk, (void)lddk;
    const tupe_state *s = c->state;
    if (dq) scale_rows(dq, h->nq, c->head_dim, lddq, s->qscale);
}

/* With cls=on, query i is [CLS] when it stands at the sequence's first
 * position: key 0 of the call. */
static inline int cls_query(const tupe_state *s, const posemb_pe_head *h, int i)
{
    return s->cls && h->qpos[i] == h->kpos[0];
}

/* Row pos of a projected table (proj at the head's first column). */
static const float *row_at(const tupe_state *s, const float *proj, int32_t pos)
{
    POSEMB_REQUIRE(pos >= 0 && (size_t)pos < s->L, "tupe: a position past its table");
    return proj + (size_t)pos * s->A;
}

/* The head's projected rows at the call's positions, a [nq, d] and
 * b [nk, d]; [CLS]'s rows are zero, so the product leaves its entries to
 * theta. */
static void gather(const pe_comp *c, const posemb_pe_head *h, float *a, float *b)
{
    const tupe_state *s = c->state;
    size_t d = (size_t)c->head_dim;
    const float *pq = proj_rows(s, h->layer, 0) + h->head * d, *pk = proj_rows(s, h->layer, 1) + h->head * d;
    POSEMB_REQUIRE(h->nq <= (int)s->L && h->nk <= (int)s->L, "tupe: a head call longer than max_len");
    for (int i = 0; i < h->nq; i++)
        if (cls_query(s, h, i)) memset(a + i * d, 0, d * sizeof *a);
        else memcpy(a + i * d, row_at(s, pq, h->qpos[i]), d * sizeof *a);
    for (int j = 0; j < h->nk; j++)
        if (s->cls && j == 0) memset(b, 0, d * sizeof *b);
        else memcpy(b + j * d, row_at(s, pk, h->kpos[j]), d * sizeof *b);
}

/* theta_1 on [CLS]'s row, theta_2 on every other row's [CLS] column. */
static void add_thetas(const pe_comp *c, const posemb_pe_head *h, float *sc, int lds)
{
    const tupe_state *s = c->state;
    float t1 = c->params[s->i_cls].data[h->head], t2 = c->params[s->i_cls + 1].data[h->head];
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        if (!cls_query(s, h, i)) si[0] += t2;
        else
            for (int j = 0; j < h->nk; j++) si[j] += t1;
    }
}

static void tupe_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *sc, int lds)
{
    const tupe_state *s = c->state;
    int d = c->head_dim;
    if (h->nq < 1 || h->nk < 1) return;
    float *a = pe_slot(&s->work, h->slot), *b = a + s->L * d;
    gather(c, h, a, b);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h->nq, h->nk, d, s->pscale, a, d, b, d, 1.0f, sc, lds);
    if (s->cls) add_thetas(c, h, sc, lds);
}

/* g[pos[i] * A + k] += dx[i * d + k] for the rows not reset to theta. */
static int scatter(const posemb_pe_head *h, const int32_t *pos, int n, int is_q, const tupe_state *s, const float *dx,
                   int d, float *g)
{
    int top = 0;
    for (int i = 0; i < n; i++) {
        if (is_q ? cls_query(s, h, i) : s->cls && i == 0) continue;
        float *gi = g + (size_t)pos[i] * s->A;
        for (int k = 0; k < d; k++) gi[k] += dx[(size_t)i * d + k];
        if (pos[i] + 1 > top) top = pos[i] + 1;
    }
    return top;
}

/* d loss / d theta: [CLS]'s row sum and the other rows' [CLS] column. */
static void theta_backward(const pe_comp *c, const posemb_pe_head *h, const float *ds, int ldds, float *g)
{
    const tupe_state *s = c->state;
    int H = c->dims.n_heads;
    for (int i = 0; i < h->nq; i++) {
        const float *di = ds + (size_t)i * ldds;
        if (!cls_query(s, h, i)) g[H + h->head] += di[0];
        else
            for (int j = 0; j < h->nk; j++) g[h->head] += di[j];
    }
}

/* v = c a b^T: da = c ds b, db = c ds^T a, into this thread's rows by position. */
static void tupe_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    tupe_state *s = c->state;
    int d = c->head_dim;
    if (h->nq < 1 || h->nk < 1) return;
    float *a = pe_slot(&s->work, h->slot), *b = a + s->L * d, *da = b + s->L * d, *db = da + s->L * d;
    float *g = pe_slot(&s->grad, h->slot);
    gather(c, h, a, b);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h->nq, d, h->nk, s->pscale, ds, ldds, b, d, 0.0f, da, d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h->nk, d, h->nq, s->pscale, ds, ldds, a, d, 0.0f, db, d);
    size_t off = (size_t)h->head * d;
    int top = scatter(h, h->qpos, h->nq, 1, s, da, d, g + off);
    int topk = scatter(h, h->kpos, h->nk, 0, s, db, d, g + s->L * s->A + off);
    if (topk > top) top = topk;
    if (top > s->used[h->slot]) s->used[h->slot] = top;
    if (s->cls) theta_backward(c, h, ds, ldds, g + 2 * s->L * s->A);
}

/* One row back through e = LN(p): dp += d loss / d p; the gain's and the
 * bias's gradients into dg, db. */
static void ln_row_backward(const float *p, const float *stats, const float *g, const float *de, int D, float *dp,
                            float *dg, float *db)
{
    float mu = stats[0], rstd = stats[1];
    double m1 = 0.0, m2 = 0.0; /* sums of d xhat and of d xhat * xhat */
    for (int k = 0; k < D; k++) {
        float xh = (p[k] - mu) * rstd, dxh = de[k] * g[k];
        dg[k] += de[k] * xh;
        db[k] += de[k];
        m1 += dxh;
        m2 += (double)dxh * xh;
    }
    float a1 = (float)(m1 / D), a2 = (float)(m2 / D);
    for (int k = 0; k < D; k++) dp[k] += rstd * (de[k] * g[k] - a1 - (p[k] - mu) * rstd * a2);
}

/* d loss / d e of rows 0..n-1 to the table (through the LayerNorm with ln=on). */
static void rows_backward(pe_comp *c, const tupe_state *s, int n)
{
    size_t D = (size_t)c->dims.dim;
    const float *p = c->params[0].data;
    float *dp = c->params[0].grad;
    if (!s->ln) {
        for (size_t i = 0; i < (size_t)n * D; i++) dp[i] += s->de[i];
        return;
    }
    const posemb_pe_param *g = &c->params[s->i_ln], *b = &c->params[s->i_ln + 1];
    for (int x = 0; x < n; x++)
        ln_row_backward(p + x * D, s->stats + 2 * x, g->data, s->de + x * D, (int)D, dp + x * D, g->grad, b->grad);
}

/* The layer's d loss / d (e U^T), summed over threads, to U, e and theta. */
static void tupe_layer_backward_end(pe_comp *c, int layer)
{
    tupe_state *s = c->state;
    int D = c->dims.dim, A = (int)s->A, H = c->dims.n_heads, n = 0;
    memset(s->fold, 0, s->grad.size * sizeof *s->fold);
    pe_slots_fold(&s->grad, s->fold);
    for (int t = 0; t < s->grad.n; t++) {
        if (s->used[t] > n) n = s->used[t];
        s->used[t] = 0;
    }
    for (int k = 0; s->cls && k < 2 * H; k++) c->params[s->i_cls + k / H].grad[k % H] += s->fold[2 * s->L * s->A + k];
    if (!n) return; /* the PE does not act in this layer (layers=) */
    for (int w = 0; w < 2; w++) {
        const float *dproj = s->fold + (size_t)w * s->L * s->A;
        posemb_pe_param *u = proj_param(c, layer, w);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, A, D, n, 1.0f, dproj, A, s->e, D, 1.0f, u->grad, D);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, A, 1.0f, dproj, A, u->data, D, w ? 1.0f : 0.0f,
                    s->de, D);
    }
    rows_backward(c, s, n);
}

/* Head h's term for positions 0..n-1 of a sequence starting at 0 (its
 * [CLS] at position 0), out [n, n]. */
static void head_bias(const pe_comp *c, int layer, int h, int n, float *out)
{
    const tupe_state *s = c->state;
    int d = c->head_dim, A = (int)s->A;
    const float *pq = proj_rows(s, layer, 0) + (size_t)h * d, *pk = proj_rows(s, layer, 1) + (size_t)h * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, s->pscale, pq, A, pk, A, 0.0f, out, n);
    if (!s->cls) return;
    for (int j = 0; j < n; j++) out[j] = c->params[s->i_cls].data[h];
    for (int i = 1; i < n; i++) out[(size_t)i * n] = c->params[s->i_cls + 1].data[h];
}

/* share=off: every layer's term averaged over its heads. */
static posemb_status export_layer_means(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    char name[64];
    int H = c->dims.n_heads;
    float *tmp = posemb_arena_floats(a, (size_t)n * n);
    if (!tmp) return posemb_fail(err, POSEMB_ENOMEM, "tupe: out of memory");
    for (int l = 0; l < c->dims.n_layers; l++) {
        snprintf(name, sizeof name, "tupe_bias.layer%d", l);
        posemb_pe_named_matrix *m =
            pe_export_add(out, a, name, "row i, column j: the positional term, mean over heads", n, n, err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        memset(m->data, 0, (size_t)n * n * sizeof(float));
        for (int h = 0; h < H; h++) {
            head_bias(c, l, h, n, tmp);
            for (size_t k = 0; k < (size_t)n * n; k++) m->data[k] += tmp[k] / (float)H;
        }
    }
    return POSEMB_OK;
}

/* bias.headH (layer 0's, every layer's with share=on), the rows e and theta. */
static posemb_status tupe_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const tupe_state *s = c->state;
    int D = c->dims.dim, H = c->dims.n_heads;
    if (n > c->dims.max_len)
        return posemb_fail(err, POSEMB_ERANGE, "tupe: %d positions asked, the table has %d rows", n, c->dims.max_len);
    char name[64];
    for (int h = 0; h < H; h++) {
        snprintf(name, sizeof name, "bias.head%d", h);
        posemb_pe_named_matrix *m = pe_export_add(
            out, a, name, "row i, column j: (e_i U^Q_h).(e_j U^K_h)/sqrt(f d), layer 0 ([CLS] at 0 with cls=on)", n, n,
            err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        head_bias(c, 0, h, n, m->data);
    }
    posemb_status st = !s->share && c->dims.n_layers > 1 ? export_layer_means(c, n, a, out, err) : POSEMB_OK;
    posemb_pe_named_matrix *e =
        st ? NULL : pe_export_add(out, a, "tupe_pos", "row x: e_x, the position's row the projections read", n, D, err);
    if (!e) return st ? st : err ? err->code : POSEMB_ENOMEM;
    memcpy(e->data, s->e, (size_t)n * D * sizeof(float));
    if (!s->cls) return POSEMB_OK;
    posemb_pe_named_matrix *t =
        pe_export_add(out, a, "tupe_cls", "row 0: theta_1 ([CLS] to others), row 1: theta_2, per head", 2, H, err);
    if (!t) return err ? err->code : POSEMB_ENOMEM;
    memcpy(t->data, c->params[s->i_cls].data, (size_t)H * sizeof(float));
    memcpy(t->data + H, c->params[s->i_cls + 1].data, (size_t)H * sizeof(float));
    return POSEMB_OK;
}

const pe_family pe_family_tupe = {
    .name = "tupe",
    .kind = PE_KIND_ATTENTION,
    .summary = "untied absolute PE: logits + (e_i U^Q_h).(e_j U^K_h)/sqrt(2d), e = LN(learned table), token term "
               "q.k/sqrt(2d); not added to the input (Ke et al. 2021, TUPE-A)",
    .options = "share=on|off one U^Q, U^K for all layers (on), cls=on|off untie the first token, [CLS] (off), "
               "ln=on|off LayerNorm on the table (on), scale_factor=NUM f of 1/sqrt(f d) (2), init_std=NUM (0.02)",
    .configure = tupe_configure,
    .init = tupe_init,
    .prepare = tupe_prepare,
    .destroy = tupe_destroy,
    .qk_forward = tupe_qk_forward,
    .qk_backward = tupe_qk_backward,
    .logits_forward = tupe_logits_forward,
    .logits_backward = tupe_logits_backward,
    .layer_backward_end = tupe_layer_backward_end,
    .export = tupe_export,
};
