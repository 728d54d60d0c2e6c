/* path: PaTH attention (Yang, Shen, Wen, Tan, Mishra, Ren, Panda and Kim,
 * NeurIPS 2025, "PaTH Attention: Position Encoding via Accumulating
 * Householder Transformations"). No fixed positions: between key j and
 * query i every token t in (j, i] applies a Householder-like map computed
 * from its own input,
 *   s_ij = q_i^T H_i H_(i-1) ... H_(j+1) k_j / sqrt(d),   H_t = I - beta_t w_t w_t^T,
 * so that the "rotation" a pair sees depends on the tokens between them.
 * As flash-linear-attention's layer (fla/layers/path_attn.py, PaTHAttention;
 * its decoding step applies H_t to every cached key when token t arrives):
 *   w_t = l2norm(silu(conv3(W_up W_down x_t))) per head, W_down [r, D] with
 *         r = 32 (the layer's low rank), conv3 causal and depthwise over 3
 *         tokens, no biases;
 *   beta_t = 2 sigmoid(W_b x_t + b) per head (in (0, 2): negative
 *         eigenvalues allowed).
 * The reference keeps w and beta per kv head; here they are per head (the
 * same without grouped-query attention). Its optional forget gate (PaTH-FoX)
 * is not included; use fox for that gate alone. Initial weights N(0, 0.02),
 * b = 0 (beta = 1). Decoders only.
 *
 * w and beta come from the layer input (the fifth hook) into the caller's
 * scratch; the logits replace q.k (the seventh hook), computed by blocks
 * of tokens in the paper's compact WY form (path_blocks.h): O(n^2 d (1 +
 * d / block)) per head, in sgemms. The backward recomputes the blocks'
 * transforms into per-thread scratch. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "path_blocks.h"

#define PATH_CONV 3 /* the short convolution's taps */

typedef struct path_state {
    int rank;
    int block;      /* tokens per block of the logits' blocked form (path_blocks.h) */
    float *scratch; /* the caller's, as of the last forward */
    int B, T;       /* of the last forward */
    pe_slots work;  /* per thread: the blocked form's work; slot 0 also the layer-input backward's dg, dv
                       [max_len, Hd] each */
} path_state;

/* Parameters of layer l, in declaration order. */
enum { P_DOWN, P_UP, P_CONV, P_BW, P_BB, P_N };

static posemb_status path_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    path_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "path: out of memory");
    c->state = s;
    if (!c->dims.causal)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': path is defined for decoders (causal attention): the maps of the tokens "
                           "between key and query follow reading order",
                           o->spec);
    posemb_status st = pe_opt_int(o, "rank", 32, 1, 4096, &s->rank, err);
    if (st) return st;
    pe_canon_add(c, "rank=%d", s->rank);
    if ((st = pe_opt_int(o, "block", 32, 1, 1024, &s->block, err))) return st;
    if (s->block != 32) pe_canon_add(c, "block=%d", s->block);
    int H = c->dims.n_heads, D = c->dims.dim, Hd = H * c->head_dim;
    size_t dgdv = 2 * (size_t)c->dims.max_len * Hd, blocks = path_blocks_floats(c->dims.max_len, c->head_dim, s->block);
    if ((st = pe_slots_init(&s->work, c->dims.max_threads, dgdv > blocks ? dgdv : blocks, err))) return st;
    for (int l = 0; l < c->dims.n_layers; l++)
        if (pe_comp_param(c, "path.w_down.weight", POSEMB_PE_SCOPE_LAYER, l, s->rank, D, 0.02f, 1, err) < 0 ||
            pe_comp_param(c, "path.w_up.weight", POSEMB_PE_SCOPE_LAYER, l, Hd, s->rank, 0.02f, 1, err) < 0 ||
            pe_comp_param(c, "path.w_conv.weight", POSEMB_PE_SCOPE_LAYER, l, Hd, PATH_CONV, 0.02f, 0, err) < 0 ||
            pe_comp_param(c, "path.beta.weight", POSEMB_PE_SCOPE_LAYER, l, H, D, 0.02f, 1, err) < 0 ||
            pe_comp_param(c, "path.beta.bias", POSEMB_PE_SCOPE_LAYER, l, H, 0, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void path_init(pe_comp *c)
{
    for (int l = 0; l < c->dims.n_layers; l++)
        memset(c->params[P_N * l + P_BB].data, 0, c->params[P_N * l + P_BB].numel * sizeof(float));
}

static void path_destroy(pe_comp *c)
{
    path_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->work);
    free(s);
}

/* The layer's scratch, per token: a [r], v = W_up a [Hd], g = conv3(v) [Hd], w [H, T, d] and
 * beta [H, T] per sequence, then the gradients dw [H, T, d], dbeta [H, T] and, for the backward, da [r]. */
typedef struct path_buf {
    float *a, *v, *g, *w, *beta, *dw, *dbeta, *da;
} path_buf;

static size_t per_token(const pe_comp *c)
{
    const path_state *s = c->state;
    size_t Hd = (size_t)c->dims.n_heads * c->head_dim;
    return 2 * (size_t)s->rank + 4 * Hd + 2 * (size_t)c->dims.n_heads;
}

static size_t path_layer_scratch(const pe_comp *c, long ntok) { return (size_t)c->dims.n_layers * ntok * per_token(c); }

static path_buf buffers(const pe_comp *c, float *scratch, int layer, int B, int T)
{
    const path_state *s = c->state;
    size_t n = (size_t)B * T, Hd = (size_t)c->dims.n_heads * c->head_dim, H = c->dims.n_heads;
    path_buf p;
    p.a = scratch + (size_t)layer * n * per_token(c);
    p.v = p.a + n * s->rank;
    p.g = p.v + n * Hd;
    p.w = p.g + n * Hd;
    p.beta = p.w + n * Hd;
    p.dw = p.beta + n * H;
    p.dbeta = p.dw + n * Hd;
    p.da = p.dbeta + n * H;
    return p;
}

static float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

/* g [T, Hd] of one sequence: the causal depthwise convolution of v over 3 tokens. */
static void conv3(const float *cw, const float *v, int T, int Hd, float *g)
{
    for (int t = 0; t < T; t++)
        for (int e = 0; e < Hd; e++) {
            float acc = 0.0f;
            for (int k = 0; k < PATH_CONV; k++) {
                int src = t - (PATH_CONV - 1) + k;
                if (src >= 0) acc += cw[e * PATH_CONV + k] * v[(size_t)src * Hd + e];
            }
            g[(size_t)t * Hd + e] = acc;
        }
}

/* w [H, T, d] of one sequence from g [T, Hd]: l2norm(silu(g)) per head, as fla's l2_norm: x rsqrt(sum x^2 + 1e-6). */
static void w_forward(const pe_comp *c, const float *g, int T, float *w)
{
    int H = c->dims.n_heads, d = c->head_dim, Hd = H * d;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            const float *gt = g + (size_t)t * Hd + (size_t)h * d;
            float *wt = w + ((size_t)h * T + t) * d;
            double ss = 0.0;
            for (int e = 0; e < d; e++) {
                wt[e] = gt[e] * sigmoidf_(gt[e]);
                ss += (double)wt[e] * wt[e];
            }
            float inv = (float)(1.0 / sqrt(ss + 1e-6));
            for (int e = 0; e < d; e++) wt[e] *= inv;
        }
}

/* beta [B, H, T] = 2 sigmoid(W_b x + b), one product per sequence (as fox's gates). */
static void beta_forward(const pe_comp *c, int layer, const float *x, int B, int T, float *beta)
{
    int H = c->dims.n_heads, D = c->dims.dim;
    const float *bw = c->params[P_N * layer + P_BW].data, *bb = c->params[P_N * layer + P_BB].data;
    for (int b = 0; b < B; b++) {
        float *z = beta + (size_t)b * H * T; /* [H, T] = W_b [H, D] x_b^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H, T, D, 1.0f, bw, D, x + (size_t)b * T * D, D, 0.0f, z,
                    T);
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) z[h * T + t] = 2.0f * sigmoidf_(z[h * T + t] + bb[h]);
    }
}

static void path_layer_input_forward(pe_comp *c, int layer, const float *x, int B, int T, float *scratch)
{
    path_state *s = c->state;
    int H = c->dims.n_heads, D = c->dims.dim, d = c->head_dim, Hd = H * d, r = s->rank;
    const float *wd = c->params[P_N * layer + P_DOWN].data, *wu = c->params[P_N * layer + P_UP].data,
                *cw = c->params[P_N * layer + P_CONV].data;
    path_buf p = buffers(c, scratch, layer, B, T);
    s->scratch = scratch;
    s->B = B;
    s->T = T;
    long n = (long)B * T;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, r, D, 1.0f, x, D, wd, D, 0.0f, p.a, r);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, Hd, r, 1.0f, p.a, r, wu, r, 0.0f, p.v, Hd);
    for (int b = 0; b < B; b++) {
        conv3(cw, p.v + (size_t)b * T * Hd, T, Hd, p.g + (size_t)b * T * Hd);
        w_forward(c, p.g + (size_t)b * T * Hd, T, p.w + (size_t)b * H * T * d);
    }
    beta_forward(c, layer, x, B, T, p.beta);
}

/* One (sequence, head): w [T, d], beta [T] and their gradients' places. */
static path_buf head_buf(const pe_comp *c, const posemb_pe_head *h)
{
    const path_state *s = c->state;
    POSEMB_REQUIRE(s->scratch && h->seq < s->B && h->nq == s->T && h->nk == s->T,
                   "path: attention without the layer-input hook's forward for this batch");
    path_buf p = buffers(c, s->scratch, h->layer, s->B, s->T);
    size_t off = (size_t)h->seq * c->dims.n_heads + h->head, d = c->head_dim;
    p.w += off * s->T * d;
    p.dw += off * s->T * d;
    p.beta += off * s->T;
    p.dbeta += off * s->T;
    return p;
}

/* The head's maps and the logits' scale, as path_blocks takes them. */
static path_blocks head_blocks(const pe_comp *c, const posemb_pe_head *h, const path_buf *p)
{
    const path_state *s = c->state;
    path_blocks b = {.n = h->nq, .d = c->head_dim, .C = s->block, .w = p->w, .beta = p->beta, .scale = h->scale};
    return b;
}

static void path_scores_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *s, int lds)
{
    const path_state *st = c->state;
    path_buf p = head_buf(c, h);
    path_blocks b = head_blocks(c, h, &p);
    path_blocks_forward(&b, q, ldq, k, ldk, s, lds, pe_slot(&st->work, h->slot));
}

static void path_scores_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate)
{
    const path_state *st = c->state;
    path_buf p = head_buf(c, h);
    path_blocks b = head_blocks(c, h, &p);
    memset(p.dw, 0, (size_t)h->nq * c->head_dim * sizeof *p.dw);
    memset(p.dbeta, 0, (size_t)h->nq * sizeof *p.dbeta);
    path_blocks_backward(&b, q, ldq, k, ldk, ds, ldds, dq, lddq, dk, lddk, accumulate, p.dw, p.dbeta,
                         pe_slot(&st->work, h->slot));
}

/* beta = 2 sigmoid(z): dz = dbeta beta (1 - beta / 2), in dbeta's place; z = W_b x + b back to W_b, b and dx. */
static void beta_backward(const pe_comp *c, int layer, const float *x, int B, int T, float *dx, const path_buf *p)
{
    int H = c->dims.n_heads, D = c->dims.dim;
    const float *bw = c->params[P_N * layer + P_BW].data;
    float *dbw = c->params[P_N * layer + P_BW].grad, *dbb = c->params[P_N * layer + P_BB].grad, *dz = p->dbeta;
    for (size_t i = 0; i < (size_t)B * H * T; i++) dz[i] *= p->beta[i] * (1.0f - 0.5f * p->beta[i]);
    for (int b = 0; b < B; b++) {
        const float *dzb = dz + (size_t)b * H * T, *xb = x + (size_t)b * T * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, D, T, 1.0f, dzb, T, xb, D, 1.0f, dbw, D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, H, 1.0f, dzb, T, bw, D, 1.0f, dx + (size_t)b * T * D,
                    D);
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) dbb[h] += dzb[h * T + t];
    }
}

/* w = y rsqrt(|y|^2 + eps), y = silu(g): dg [T, Hd] of sequence b, into dg. */
static void w_backward(const pe_comp *c, const path_buf *p, int b, int T, float *dg)
{
    int H = c->dims.n_heads, d = c->head_dim, Hd = H * d;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            const float *gt = p->g + ((size_t)b * T + t) * Hd + (size_t)h * d;
            const float *w = p->w + (((size_t)b * H + h) * T + t) * d, *dw = p->dw + (((size_t)b * H + h) * T + t) * d;
            double ss = 0.0, wdw = 0.0;
            for (int e = 0; e < d; e++) {
                double y = gt[e] * sigmoidf_(gt[e]);
                ss += y * y;
                wdw += (double)w[e] * dw[e];
            }
            float r = (float)(1.0 / sqrt(ss + 1e-6)), *dgt = dg + (size_t)t * Hd + (size_t)h * d;
            for (int e = 0; e < d; e++) {
                float sg = sigmoidf_(gt[e]), dy = r * (dw[e] - w[e] * (float)wdw);
                dgt[e] = dy * sg * (1.0f + gt[e] * (1.0f - sg)); /* silu' */
            }
        }
}

/* dv from dg through the causal convolution (and the taps' gradient). */
static void conv3_backward(const float *cw, float *dcw, const float *v, const float *dg, int T, int Hd, float *dv)
{
    memset(dv, 0, (size_t)T * Hd * sizeof *dv);
    for (int t = 0; t < T; t++)
        for (int e = 0; e < Hd; e++)
            for (int k = 0; k < PATH_CONV; k++) {
                int src = t - (PATH_CONV - 1) + k;
                if (src < 0) continue;
                dv[(size_t)src * Hd + e] += cw[e * PATH_CONV + k] * dg[(size_t)t * Hd + e];
                dcw[e * PATH_CONV + k] += dg[(size_t)t * Hd + e] * v[(size_t)src * Hd + e];
            }
}

/* The gradients the attention left in dw, dbeta, back to the parameters and dx. d loss / d v goes in
 * g's place, no longer needed. */
static void path_layer_input_backward(pe_comp *c, int layer, const float *x, int B, int T, float *dx, float *scratch)
{
    const path_state *s = c->state;
    int H = c->dims.n_heads, D = c->dims.dim, Hd = H * c->head_dim, r = s->rank;
    const float *wd = c->params[P_N * layer + P_DOWN].data, *wu = c->params[P_N * layer + P_UP].data,
                *cw = c->params[P_N * layer + P_CONV].data;
    float *dwd = c->params[P_N * layer + P_DOWN].grad, *dwu = c->params[P_N * layer + P_UP].grad,
          *dcw = c->params[P_N * layer + P_CONV].grad;
    path_buf p = buffers(c, scratch, layer, B, T);
    beta_backward(c, layer, x, B, T, dx, &p);
    size_t n = (size_t)B * T;
    POSEMB_REQUIRE(T <= c->dims.max_len, "path: more tokens than the PE's max_len");
    float *dg = pe_slot(&s->work, 0), *dv = dg + (size_t)T * Hd;
    for (int b = 0; b < B; b++) {
        w_backward(c, &p, b, T, dg);
        conv3_backward(cw, dcw, p.v + (size_t)b * T * Hd, dg, T, Hd, dv);
        memcpy(p.g + (size_t)b * T * Hd, dv, (size_t)T * Hd * sizeof *dv); /* g's place now holds dv */
    }
    float *dvall = p.g, *da = p.da;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Hd, r, (int)n, 1.0f, dvall, Hd, p.a, r, 1.0f, dwu, r);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, r, Hd, 1.0f, dvall, Hd, wu, r, 0.0f, da, r);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, D, (int)n, 1.0f, da, r, x, D, 1.0f, dwd, D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, D, r, 1.0f, da, r, wd, D, 1.0f, dx, D);
}

/* Each layer's beta bias: what is fixed; the maps themselves come from the input. */
static posemb_status path_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    (void)n;
    return pe_export_per_layer(c, "path_beta_bias", "row h: the bias b_h of beta = 2 sigmoid(W_b x + b)", P_BB, P_N, a,
                               out, err);
}

const pe_family pe_family_path = {
    .name = "path",
    .kind = PE_KIND_ATTENTION,
    .no_positions = 1,
    .summary = "PaTH: logits q_i^T H_i ... H_(j+1) k_j, H_t = I - beta_t w_t w_t^T from the layer input, decoders only "
               "(Yang et al. 2025)",
    .options = "rank=INT the low rank of w's projection (32); block=INT tokens per block of the logits' blocked form "
               "(32: a speed setting, the same logits to rounding)",
    .configure = path_configure,
    .init = path_init,
    .destroy = path_destroy,
    .scores_forward = path_scores_forward,
    .scores_backward = path_scores_backward,
    .layer_scratch = path_layer_scratch,
    .layer_input_forward = path_layer_input_forward,
    .layer_input_backward = path_layer_input_backward,
    .export = path_export,
};
