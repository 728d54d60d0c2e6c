/* Llama-family decoder, pre-RMSNorm and causal, as HF's LlamaModel (Qwen3's
 * too: its q and k heads RMS-normalised before the PE sees them):
 *   h0 = E[ids] (+ PE input hook)
 *   r1 = h + attn(RMS1(h)) Wo;  h' = r1 + (silu(RMS2(r1) Wg) * (RMS2(r1) Wu)) Wd;  out = RMS_f(h_L)
 * Attention is H x head_dim wide, D unless the config sets head_dim.
 * Linear weights are [out, in], without biases unless the config asks (Qwen2's on q, k, v;
 * Llama's attention_bias and mlp_bias); q, k,
 * v and gate, up are fused products. Attention is grouped-query
 * (kv_heads), RoPE comes in through the PE's q/k hook like any PE.
 * Dropout sites as GPT-2's (Llama configs have only attention_dropout). */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "posemb/attention.h"
#include "nn/nn_internal.h"
#include "model/model_internal.h"

#define GR(ptr) (m->g + ((ptr)-m->w))     /* the gradient of a parameter view */
#define GRN(ptr) ((ptr) ? GR(ptr) : NULL) /* ... or NULL for a tensor the config leaves out */

/* Width of attention, H d (the model width D unless the config sets head_dim). */
static int attn_width(const posemb_model *m) { return m->cfg.heads * posemb_config_head_dim(&m->cfg); }

#define NW(w, n, slot) model_norm_weight(m, (w), (n), (slot))

/* x [N, D] -> out [N, D] for block l. Gemma 3 normalises the attention's and
 * the MLP's outputs too (into r2 and ffo first) before adding them. */
static void layer_forward(posemb_model *m, int l, const float *x, float *out)
{
    const posemb_layer_params *p = &m->L[l];
    layer_acts *a = model_layer_acts(m, l);
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate, W = model_qkv_width(&m->cfg), A = attn_width(m);
    int d = posemb_config_head_dim(&m->cfg), gemma = m->cfg.gemma;
    float eps = m->cfg.ln_eps;
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    posemb_nn_rmsnorm_forward(a->a, matmul_stash_claim(m->mm, a->a, N, D), a->rstd1, x, NW(p->ln1_w, D, 0), N, D, eps);
    posemb_pe_layer_input_forward(m->pe, l, a->a, m->B, m->T, m->a.pe_layer_scratch);
    posemb_nn_linear_forward(m->mm, a->qkv, a->a, p->qkv_w, p->qkv_b, N, D, W, POSEMB_NN_W_OUT_IN);
    if (p->qn_w || config_qk_unit_norm(&m->cfg, l)) /* Llama 4's has no weights */
        posemb_nn_qk_rmsnorm_forward(a->qkv, a->qk_raw, a->qk_rstd, NW(p->qn_w, d, 0), NW(p->kn_w, d, 1), N,
                                     m->cfg.heads, m->cfg.kv_heads, d, eps);
    posemb_nn_attention_forward_in(m->mm, &sh, m->pe, l, a->qkv, m->a.pos_attn, m->a.mask, model_probs_out(m, a), a->z,
                                   m->a.attn_scratch);
    posemb_nn_linear_forward(m->mm, gemma ? a->r2 : a->r1, a->z, p->ao_w, p->ao_b, N, A, D, POSEMB_NN_W_OUT_IN);
    if (gemma) posemb_nn_rmsnorm_forward(a->r1, NULL, a->mean1, a->r2, NW(p->pa_w, D, 0), N, D, eps);
    model_drop_add(m, l, SITE_ATTN_OUT, a->r1, x, (long)N * D);
    posemb_nn_rmsnorm_forward(a->h1, matmul_stash_claim(m->mm, a->h1, N, D), a->rstd2, a->r1, NW(p->ln2_w, D, 0), N, D,
                              eps);
    posemb_nn_linear_forward(m->mm, a->fi, a->h1, p->fi_w, p->fi_b, N, D, 2 * I, POSEMB_NN_W_OUT_IN);
    if (gemma) posemb_nn_geglu_forward(a->ga, a->fi, N, I);
    else posemb_nn_swiglu_forward(a->ga, matmul_stash_claim(m->mm, a->ga, N, I), a->fi, N, I);
    posemb_nn_linear_forward(m->mm, gemma ? a->ffo : out, a->ga, p->fo_w, p->fo_b, N, I, D, POSEMB_NN_W_OUT_IN);
    if (gemma) posemb_nn_rmsnorm_forward(out, NULL, a->mean2, a->ffo, NW(p->pf_w, D, 0), N, D, eps);
    model_drop_add(m, l, SITE_FFN_OUT, out, a->r1, (long)N * D);
}

/* The MLP's backward from dffn (the gradient of its output) to s->dh, LN2's output's gradient. */
static void mlp_backward(posemb_model *m, int l, const float *dffn)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate;
    posemb_nn_linear_backward_set(m->mm, s->dga, GR(p->fo_w), GRN(p->fo_b), dffn, a->ga, p->fo_w, N, I, D,
                                  POSEMB_NN_W_OUT_IN);
    if (m->cfg.gemma) posemb_nn_geglu_backward(s->dfi, s->dga, a->fi, N, I);
    else posemb_nn_swiglu_backward(s->dfi, s->dga, a->fi, N, I);
    posemb_nn_linear_backward_set(m->mm, s->dh, GR(p->fi_w), GRN(p->fi_b), s->dfi, a->h1, p->fi_w, N, D, 2 * I,
                                  POSEMB_NN_W_OUT_IN);
}

/* Gemma 3: dy through the norm after a branch (x its input, rstd its 1/rms) into tmp, zeroed first. */
static const float *post_norm_backward(posemb_model *m, const float *w, const float *dy, const float *x,
                                       const float *rstd, float *tmp)
{
    int N = m->B * m->T, D = m->cfg.hidden;
    memset(tmp, 0, (size_t)N * D * sizeof(float));
    posemb_nn_rmsnorm_backward(tmp, GR(w), dy, x, NW(w, D, 0), rstd, N, D);
    return tmp;
}

/* dout [N, D] (grad of block l's output) -> dx [N, D] (grad of its input x), overwritten. */
static void layer_backward(posemb_model *m, int l, const float *x, const float *dout, float *dx)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, W = model_qkv_width(&m->cfg), A = attn_width(m);
    int d = posemb_config_head_dim(&m->cfg), gemma = m->cfg.gemma;
    size_t ND = (size_t)N * D;
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    memcpy(s->dres, dout, ND * sizeof(float)); /* out = r1 + dropout(ffn) */
    const float *dffn = model_undrop(m, l, SITE_FFN_OUT, dout, s->dz, (long)ND);
    if (gemma) dffn = post_norm_backward(m, p->pf_w, dffn, a->ffo, a->mean2, dx); /* dx: free until below */
    mlp_backward(m, l, dffn);
    posemb_nn_rmsnorm_backward(s->dres, GR(p->ln2_w), s->dh, a->r1, NW(p->ln2_w, D, 0), a->rstd2, N, D);
    memcpy(dx, s->dres, ND * sizeof(float)); /* r1 = x + dropout(attn) */
    const float *dattn = model_undrop(m, l, SITE_ATTN_OUT, s->dres, s->dh, (long)ND);
    if (gemma) dattn = post_norm_backward(m, p->pa_w, dattn, a->r2, a->mean1, s->demb); /* free until the embeddings */
    posemb_nn_linear_backward_set(m->mm, s->dz, GR(p->ao_w), GRN(p->ao_b), dattn, a->z, p->ao_w, N, A, D,
                                  POSEMB_NN_W_OUT_IN);
    posemb_nn_attention_backward_in(m->mm, &sh, m->pe, l, a->qkv, s->pos_attn, a->probs, s->dz, s->dqkv,
                                    s->attn_scratch);
    if (p->qn_w || config_qk_unit_norm(&m->cfg, l))
        posemb_nn_qk_rmsnorm_backward(s->dqkv, GRN(p->qn_w), GRN(p->kn_w), a->qk_raw, a->qk_rstd, NW(p->qn_w, d, 0),
                                      NW(p->kn_w, d, 1), N, m->cfg.heads, m->cfg.kv_heads, d);
    posemb_nn_linear_backward_set(m->mm, s->dh, GR(p->qkv_w), GRN(p->qkv_b), s->dqkv, a->a, p->qkv_w, N, D, W,
                                  POSEMB_NN_W_OUT_IN);
    posemb_pe_layer_input_backward(m->pe, l, a->a, m->B, m->T, s->dh, s->pe_layer_scratch);
    posemb_nn_rmsnorm_backward(dx, GR(p->ln1_w), s->dh, x, NW(p->ln1_w, D, 0), a->rstd1, N, D);
}

void llama_forward(posemb_model *m)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, L = m->cfg.layers;
    decoder_embed(m);
    for (int l = 0; l < L; l++) layer_forward(m, l, a->h[l], a->h[l + 1]);
    posemb_nn_rmsnorm_forward(a->hf, NULL, a->hf_rstd, a->h[L], NW(m->lnf_w, D, 0), N, D, m->cfg.ln_eps);
}

void llama_backward(posemb_model *m, const float *dlast)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, L = m->cfg.layers;
    float *dout = L % 2 ? a->dx2 : a->dx; /* the buffer layer L - 1 reads; the layers alternate */
    memset(dout, 0, (size_t)N * D * sizeof(float));
    posemb_nn_rmsnorm_backward(dout, GR(m->lnf_w), dlast, a->h[L], NW(m->lnf_w, D, 0), a->hf_rstd, N, D);
    /* HF gives the padding row of the embeddings no gradient (padding_idx) */
    decoder_embed_backward(m, decoder_layers_backward(m, layer_backward, dout), m->cfg.pad_token_id);
}
