/* fox: the Forgetting Transformer's forget gate (Lin et al. 2025,
 * "Forgetting Transformer: Softmax Attention with a Forget Gate"). Each
 * token t computes, per head, a forget gate from the layer's input x_t,
 *   f_t = sigmoid(w_h . x_t + b_h),
 * and logit (i, j) of a query i and a key j <= i gets
 *   sum_{t=j+1..i} ln f_t = C_i - C_j,   C_i = sum_{t<=i} ln f_t,
 * a data-dependent decay with no positions at all. As the authors' code
 * (zhixuan-lin/forgetting-transformer, fgate_type "full"): one linear map
 * D -> H with a bias per layer, the weight N(0, 0.02). The bias starts at 4
 * (f ~ 0.98), the shared spec's "near 1", not at the code's 0 (f ~ 1/2):
 * in the length study's ablation (results/length, slice 8; one seed), trained
 * from 1/2 no head kept its gates open, from 0.98 some did, and perplexity
 * was lower on both decoders (GPT-2 by 4-5%, Llama by under 1%); bias=0 is
 * the code's start. Defined
 * for decoders: the sum runs over the tokens between key and query in
 * reading order.
 * The gates need the layer input, which no attention hook sees: they come
 * from the layer-input hook (pe.h, 5.) into the caller's scratch, laid out
 * per layer as ln f [B, H, T] then d loss / d ln f [B, H, T]. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

typedef struct fox_state {
    double bias0;    /* initial b */
    float *scratch;  /* the caller's, as of the last forward */
    int B, T;        /* of the last forward */
    pe_slots cumsum; /* per thread: C [max_len] in double (two floats each) */
} fox_state;

static posemb_status fox_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    fox_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "fox: out of memory");
    c->state = s;
    if (!c->dims.causal)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': fox is defined for decoders (causal attention): its decay sums the forget gates "
                           "between key and query in reading order",
                           o->spec);
    posemb_status st = pe_opt_double(o, "bias", 4.0, -30.0, 30.0, &s->bias0, err);
    if (st) return st;
    pe_canon_num(c, "bias", s->bias0);
    if ((st = pe_slots_init(&s->cumsum, c->dims.max_threads, 2 * (size_t)c->dims.max_len, err))) return st;
    int H = c->dims.n_heads, D = c->dims.dim;
    for (int l = 0; l < c->dims.n_layers; l++)
        if (pe_comp_param(c, "fox.forget.weight", POSEMB_PE_SCOPE_LAYER, l, H, D, 0.02f, 1, err) < 0 ||
            pe_comp_param(c, "fox.forget.bias", POSEMB_PE_SCOPE_LAYER, l, H, 0, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void fox_init(pe_comp *c)
{
    const fox_state *s = c->state;
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int h = 0; h < c->dims.n_heads; h++) c->params[2 * l + 1].data[h] = (float)s->bias0;
}

static void fox_destroy(pe_comp *c)
{
    fox_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->cumsum);
    free(s);
}

static size_t fox_layer_scratch(const pe_comp *c, long ntok)
{
    return 2 * (size_t)c->dims.n_layers * (size_t)ntok * c->dims.n_heads;
}

/* ln f of layer, [B, H, T], and its gradient right after it. */
static float *log_gates(const pe_comp *c, float *scratch, int layer, int B, int T)
{
    return scratch + 2 * (size_t)layer * B * T * c->dims.n_heads;
}

/* ln sigmoid(z), stable for large |z|. */
static inline float log_sigmoid(float z) { return z >= 0 ? -log1pf(expf(-z)) : z - log1pf(expf(z)); }

static void fox_layer_input_forward(pe_comp *c, int layer, const float *x, int B, int T, float *scratch)
{
    fox_state *s = c->state;
    int H = c->dims.n_heads, D = c->dims.dim;
    const float *w = c->params[2 * layer].data, *bias = c->params[2 * layer + 1].data;
    float *lf = log_gates(c, scratch, layer, B, T);
    s->scratch = scratch;
    s->B = B;
    s->T = T;
    for (int b = 0; b < B; b++) {
        float *z = lf + (size_t)b * H * T; /* [H, T] = W [H, D] x_b^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H, T, D, 1.0f, w, D, x + (size_t)b * T * D, D, 0.0f, z, T);
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) z[h * T + t] = log_sigmoid(z[h * T + t] + bias[h]);
    }
}

/* The gates of one (sequence, head): ln f [T] and d loss / d ln f [T]. */
static float *head_gates(const pe_comp *c, const posemb_pe_head *h, float **dlf)
{
    const fox_state *s = c->state;
    POSEMB_REQUIRE(s->scratch && h->seq < s->B && h->nq == s->T && h->nk == s->T,
                   "fox: attention without the layer-input hook's forward for this batch");
    float *lf = log_gates(c, s->scratch, h->layer, s->B, s->T);
    size_t off = ((size_t)h->seq * c->dims.n_heads + h->head) * s->T;
    *dlf = lf + (size_t)s->B * s->T * c->dims.n_heads + off;
    return lf + off;
}

static void fox_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                               float *sc, int lds)
{
    const fox_state *s = c->state;
    float *dlf;
    const float *lf = head_gates(c, h, &dlf);
    double *C = (double *)pe_slot(&s->cumsum, h->slot), acc = 0.0;
    for (int t = 0; t < h->nq; t++) C[t] = acc += lf[t];
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        for (int j = 0; j <= i; j++) si[j] += (float)(C[i] - C[j]);
    }
}

/* bias_ij = C_i - C_j: d C_i = row sum of ds, d C_j -= column sum (j <= i);
 * d ln f_t = sum_{i >= t} d C_i. */
static void fox_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    const fox_state *s = c->state;
    float *dlf;
    head_gates(c, h, &dlf);
    int n = h->nq;
    double *dC = (double *)pe_slot(&s->cumsum, h->slot);
    for (int t = 0; t < n; t++) dC[t] = 0.0;
    for (int i = 0; i < n; i++) {
        const float *dsi = ds + (size_t)i * ldds;
        for (int j = 0; j <= i; j++) {
            dC[i] += dsi[j];
            dC[j] -= dsi[j];
        }
    }
    double acc = 0.0;
    for (int t = n - 1; t >= 0; t--) dlf[t] = (float)(acc += dC[t]);
}

/* d ln f / d z = 1 - f; then z = W x + b back to W, b and x. */
static void fox_layer_input_backward(pe_comp *c, int layer, const float *x, int B, int T, float *dx, float *scratch)
{
    int H = c->dims.n_heads, D = c->dims.dim;
    const float *w = c->params[2 * layer].data;
    float *dw = c->params[2 * layer].grad, *dbias = c->params[2 * layer + 1].grad;
    float *lf = log_gates(c, scratch, layer, B, T), *dz = lf + (size_t)B * T * H;
    for (size_t i = 0; i < (size_t)B * T * H; i++) dz[i] *= -expm1f(lf[i]);
    for (int b = 0; b < B; b++) {
        const float *dzb = dz + (size_t)b * H * T, *xb = x + (size_t)b * T * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, D, T, 1.0f, dzb, T, xb, D, 1.0f, dw, D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, H, 1.0f, dzb, T, w, D, 1.0f, dx + (size_t)b * T * D,
                    D);
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) dbias[h] += dzb[h * T + t];
    }
}

static posemb_status fox_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    return pe_export_per_layer(c, "fox_bias", "row h: the forget gate's bias b_h (ln f = ln sigmoid(w_h . x + b_h))", 1,
                               2, a, out, err);
}

const pe_family pe_family_fox = {
    .name = "fox",
    .kind = PE_KIND_ATTENTION,
    .no_positions = 1,
    .summary = "forget gates from the layer input, logits + sum of ln f between key and query, decoders only "
               "(Lin et al. 2025)",
    .options = "bias=NUM the gates' initial bias (4: f ~ 0.98; 0 is the authors' code)",
    .configure = fox_configure,
    .init = fox_init,
    .destroy = fox_destroy,
    .logits_forward = fox_logits_forward,
    .logits_backward = fox_logits_backward,
    .layer_scratch = fox_layer_scratch,
    .layer_input_forward = fox_layer_input_forward,
    .layer_input_backward = fox_layer_input_backward,
    .export = fox_export,
};
