/* decoupled: DeepSeek's decoupled RoPE (DeepSeek-V2, Multi-head Latent
 * Attention, 2024). The heads' own q.k rotate nothing; beside them every
 * head h has a small query of R dims and all heads share one key of R dims,
 * both projected from the layer input x and rotated by RoPE:
 *   q^R_{h,t} = RoPE_t(W^QR_h x_t),  k^R_t = RoPE_t(W^KR x_t),
 *   logit (i, j) += scale q^R_{h,i} . k^R_j,
 * scale being the engine's 1/sqrt(d) on q.k too (DeepSeek's 1/sqrt(d + R)
 * on both: a constant factor the projections absorb). As in MLA the rotary
 * key is one per token, not per head, so a cache would hold R numbers per
 * token for position. DeepSeek-V2 projects the query part from its
 * compressed query c^Q (V2-Lite, as posemb, from x). The pairs are adjacent
 * (2m, 2m + 1), as DeepSeek's code turns them (pairing=halves: m, m + R/2),
 * at base^(-2m/R); per layer W^QR [H R, D] and W^KR [R, D], N(0, 0.02).
 *
 * The projections need the layer input (the layer-input hook, pe.h 5.);
 * the rotation needs positions, which only the attention hooks see, so the
 * logits hook rotates each call's rows into a thread slot. The caller's
 * scratch holds, per layer, q^R [B, T, H R] and k^R [B, T, R] (unrotated),
 * then once for all layers their gradients and each head's share of d k^R
 * [B, H, T, R] (heads run in parallel; summed in the layer-input backward,
 * which the models run right after the layer's attention backward). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "rope_tables.h"

typedef struct decoupled_state {
    int R;                /* rotary dims per head, even */
    int halves;           /* pairing: m with m + R/2 (1) or 2m with 2m + 1 (0, DeepSeek's) */
    double base;          /* RoPE's base */
    double *theta;        /* [R/2] frequencies */
    float *cos_t, *sin_t; /* [max_len, R/2] */
    float *scratch;       /* the caller's, as of the last forward */
    int B, T;             /* of the last forward */
    pe_slots rot;         /* per thread: rotated q^R and k^R of a call, then their gradients: 4 [max_len, R] */
} decoupled_state;

static posemb_status decoupled_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    decoupled_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "decoupled: out of memory");
    c->state = s;
    static const char *const pairings[] = {"interleaved", "halves", NULL};
    int d = c->head_dim;
    posemb_status st = pe_opt_int(o, "dim", 2 * (d / 4 > 1 ? d / 4 : 1), 2, 4096, &s->R, err); /* d/2, even */
    if (!st) st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (!st) st = pe_opt_enum(o, "pairing", pairings, 0, &s->halves, err);
    if (st) return st;
    if (s->R % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': decoupled dim=%d must be even (RoPE turns pairs)", o->spec,
                           s->R);
    pe_canon_add(c, "dim=%d", s->R);
    pe_canon_num(c, "base", s->base);
    pe_canon_add(c, "pairing=%s", pairings[s->halves]);
    int nf = s->R / 2, L = c->dims.max_len;
    s->theta = malloc((size_t)nf * sizeof *s->theta);
    s->cos_t = malloc((size_t)L * nf * sizeof(float));
    s->sin_t = malloc((size_t)L * nf * sizeof(float));
    if (!s->theta || !s->cos_t || !s->sin_t) return posemb_fail(err, POSEMB_ENOMEM, "decoupled: out of memory");
    pe_sinusoid_freqs(s->base, s->R, s->theta);
    rope_tables_fill(s->theta, nf, L, 1.0, s->cos_t, s->sin_t);
    if ((st = pe_slots_init(&s->rot, c->dims.max_threads, 4 * (size_t)L * s->R, err))) return st;
    int H = c->dims.n_heads, D = c->dims.dim;
    for (int l = 0; l < c->dims.n_layers; l++)
        if (pe_comp_param(c, "decoupled.q_rope.weight", POSEMB_PE_SCOPE_LAYER, l, H * s->R, D, 0.02f, 1, err) < 0 ||
            pe_comp_param(c, "decoupled.k_rope.weight", POSEMB_PE_SCOPE_LAYER, l, s->R, D, 0.02f, 1, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void decoupled_destroy(pe_comp *c)
{
    decoupled_state *s = c->state;
    if (!s) return;
    free(s->theta);
    free(s->cos_t);
    free(s->sin_t);
    pe_slots_free(&s->rot);
    free(s);
}

/* Per token and layer: q^R (H R) and k^R (R); per token once: their gradients (H R + R) and d k^R per
 * head (H R). */
static size_t kept_per_token(const pe_comp *c)
{
    return (size_t)((decoupled_state *)c->state)->R * (c->dims.n_heads + 1);
}

static size_t decoupled_layer_scratch(const pe_comp *c, long ntok)
{
    size_t R = (size_t)((decoupled_state *)c->state)->R;
    return (size_t)ntok * ((size_t)c->dims.n_layers * kept_per_token(c) + R * (2 * (size_t)c->dims.n_heads + 1));
}

/* Layer l's q^R [N, H R] and k^R [N, R]; the gradients all layers share: dq^R [N, H R], dk^R [N, R], dk^R
 * per head [B, H, T, R]. */
typedef struct layer_bufs {
    float *q, *k, *dq, *dk, *dk_head;
} layer_bufs;

static layer_bufs bufs_of(const pe_comp *c, float *scratch, int layer, int B, int T)
{
    const decoupled_state *s = c->state;
    size_t N = (size_t)B * T, HR = (size_t)c->dims.n_heads * s->R;
    layer_bufs b = {.q = scratch + (size_t)layer * N * kept_per_token(c)};
    b.k = b.q + N * HR;
    b.dq = scratch + (size_t)c->dims.n_layers * N * kept_per_token(c);
    b.dk = b.dq + N * HR;
    b.dk_head = b.dk + N * s->R;
    return b;
}

static void decoupled_layer_input_forward(pe_comp *c, int layer, const float *x, int B, int T, float *scratch)
{
    decoupled_state *s = c->state;
    int D = c->dims.dim, N = B * T, HR = c->dims.n_heads * s->R;
    layer_bufs b = bufs_of(c, scratch, layer, B, T);
    const float *wq = c->params[2 * layer].data, *wk = c->params[2 * layer + 1].data;
    s->scratch = scratch;
    s->B = B;
    s->T = T;
    /* q^R [N, H R] = x W^QR^T; k^R [N, R] = x W^KR^T */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, HR, D, 1.0f, x, D, wq, D, 0.0f, b.q, HR);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, s->R, D, 1.0f, x, D, wk, D, 0.0f, b.k, s->R);
}

/* n rows of R from src (stride ld) into dst [n, R], turned by their positions' angles times sign. */
static void rotate_into(const pe_comp *c, const float *src, int ld, int n, const int32_t *pos, float sign, float *dst)
{
    const decoupled_state *s = c->state;
    int nf = s->R / 2;
    rope_tables t = {.cos_t = s->cos_t, .sin_t = s->sin_t, .theta = s->theta, .attn = 1.0};
    for (int i = 0; i < n; i++) {
        float *row = dst + (size_t)i * s->R;
        memcpy(row, src + (size_t)i * ld, (size_t)s->R * sizeof *row);
        for (int m = 0; m < nf; m++) {
            float cs, sn;
            rope_tables_cs(&t, nf, c->dims.max_len, pos[i], m, &cs, &sn);
            rope_turn(row, m, nf, s->halves, cs, sn * sign);
        }
    }
}

/* The call's sequence: its rows of q^R (head h) and k^R, with their strides. */
static layer_bufs head_rows(const pe_comp *c, const posemb_pe_head *h, int *ldq)
{
    const decoupled_state *s = c->state;
    POSEMB_REQUIRE(s->scratch && h->seq < s->B && h->nq == s->T && h->nk == s->T,
                   "decoupled: attention without the layer-input hook's forward for this batch");
    layer_bufs b = bufs_of(c, s->scratch, h->layer, s->B, s->T);
    size_t row0 = (size_t)h->seq * s->T, HR = (size_t)c->dims.n_heads * s->R;
    *ldq = (int)HR;
    b.q += row0 * HR + (size_t)h->head * s->R;
    b.dq += row0 * HR + (size_t)h->head * s->R;
    b.k += row0 * s->R;
    b.dk_head += (row0 * c->dims.n_heads + (size_t)h->head * s->T) * s->R;
    return b;
}

static void decoupled_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                     int ldk, float *sc, int lds)
{
    (void)q, (void)ldq, (void)k, (void)ldk; /* the term reads its own projections */
    const decoupled_state *s = c->state;
    int ld;
    layer_bufs b = head_rows(c, h, &ld);
    float *qr = pe_slot(&s->rot, h->slot), *kr = qr + (size_t)c->dims.max_len * s->R;
    rotate_into(c, b.q, ld, h->nq, h->qpos, 1.0f, qr);
    rotate_into(c, b.k, s->R, h->nk, h->kpos, 1.0f, kr);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h->nq, h->nk, s->R, h->scale, qr, s->R, kr, s->R, 1.0f, sc,
                lds);
}

/* d rot(q^R) = scale ds rot(k^R), d rot(k^R) = scale ds^T rot(q^R); turned back by the inverse rotation. */
static void decoupled_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                      int ldk, const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    (void)q, (void)ldq, (void)k, (void)ldk, (void)dq, (void)lddq, (void)dk, (void)lddk;
    const decoupled_state *s = c->state;
    int ld, L = c->dims.max_len;
    layer_bufs b = head_rows(c, h, &ld);
    float *qr = pe_slot(&s->rot, h->slot), *kr = qr + (size_t)L * s->R, *dqr = kr + (size_t)L * s->R,
          *dkr = dqr + (size_t)L * s->R;
    rotate_into(c, b.q, ld, h->nq, h->qpos, 1.0f, qr);
    rotate_into(c, b.k, s->R, h->nk, h->kpos, 1.0f, kr);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h->nq, s->R, h->nk, h->scale, ds, ldds, kr, s->R, 0.0f, dqr,
                s->R);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h->nk, s->R, h->nq, h->scale, ds, ldds, qr, s->R, 0.0f, dkr,
                s->R);
    rotate_into(c, dqr, s->R, h->nq, h->qpos, -1.0f, qr); /* the transposed rotation, into the now free slot */
    for (int i = 0; i < h->nq; i++) memcpy(b.dq + (size_t)i * ld, qr + (size_t)i * s->R, (size_t)s->R * sizeof(float));
    rotate_into(c, dkr, s->R, h->nk, h->kpos, -1.0f, b.dk_head);
}

/* d k^R = the heads' shares; then q^R = x W^QR^T, k^R = x W^KR^T back to the weights and x. */
static void decoupled_layer_input_backward(pe_comp *c, int layer, const float *x, int B, int T, float *dx,
                                           float *scratch)
{
    const decoupled_state *s = c->state;
    POSEMB_REQUIRE(s->scratch == scratch && s->B == B && s->T == T,
                   "decoupled: layer-input backward on another batch than the last forward's");
    int D = c->dims.dim, N = B * T, H = c->dims.n_heads, R = s->R, HR = H * R;
    layer_bufs b = bufs_of(c, scratch, layer, B, T);
    const float *wq = c->params[2 * layer].data, *wk = c->params[2 * layer + 1].data;
    float *dwq = c->params[2 * layer].grad, *dwk = c->params[2 * layer + 1].grad;
    memset(b.dk, 0, (size_t)N * R * sizeof(float));
    for (int bi = 0; bi < B; bi++)
        for (int h = 0; h < H; h++) {
            const float *src = b.dk_head + ((size_t)bi * H + h) * T * R;
            float *dst = b.dk + (size_t)bi * T * R;
            for (size_t e = 0; e < (size_t)T * R; e++) dst[e] += src[e];
        }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, HR, D, N, 1.0f, b.dq, HR, x, D, 1.0f, dwq, D);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, D, N, 1.0f, b.dk, R, x, D, 1.0f, dwk, D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, D, HR, 1.0f, b.dq, HR, wq, D, 1.0f, dx, D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, D, R, 1.0f, b.dk, R, wk, D, 1.0f, dx, D);
}

/* The positional part: RoPE's kernel over the R rotary dims, sum_m cos(w_m (i - j)) for constant unit pairs. */
static posemb_status decoupled_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const decoupled_state *s = c->state;
    posemb_pe_named_matrix *k = pe_export_add(
        out, a, "kernel",
        "sum_m cos(w_m (i - j)) over the rotary sub-head's R/2 pairs: its q.k for constant unit pairs", n, n, err);
    if (!k) return err ? err->code : POSEMB_ENOMEM;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int m = 0; m < s->R / 2; m++) acc += cos(s->theta[m] * (i - j));
            k->data[(size_t)i * n + j] = (float)acc;
        }
    return POSEMB_OK;
}

const pe_family pe_family_decoupled = {
    .name = "decoupled",
    .kind = PE_KIND_ATTENTION,
    .summary = "DeepSeek's decoupled RoPE (MLA): unrotated heads plus a rotary sub-head, a query per head and one key "
               "shared by all, projected from the layer input",
    .options = "dim=R rotary dims per head (head width / 2, rounded down to even), base=NUM (10000), "
               "pairing=interleaved|halves (interleaved: DeepSeek's adjacent pairs)",
    .configure = decoupled_configure,
    .destroy = decoupled_destroy,
    .logits_forward = decoupled_logits_forward,
    .logits_backward = decoupled_logits_backward,
    .layer_scratch = decoupled_layer_scratch,
    .layer_input_forward = decoupled_layer_input_forward,
    .layer_input_backward = decoupled_layer_input_backward,
    .export = decoupled_export,
};
