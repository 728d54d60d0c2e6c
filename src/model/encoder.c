/* BERT/RoBERTa encoder, post-LayerNorm:
 *   h0 = LN(WE[ids] + TT[types] (+ PE input hook))
 *   r1 = h + attn(h) Wo;  h1 = LN1(r1);  r2 = h1 + gelu(h1 Wi) Wf;  h' = LN2(r2)
 * or pre-LayerNorm (cfg.pre_ln, HF's roberta-prelayernorm): the same h0, then
 * GPT-2's block both ways (decoder.c), h' = r1 + gelu(LN2(r1) Wi) Wf with
 * r1 = h + attn(LN1(h)) Wo, and out = LN_f(h_L).
 * N = B*T rows; D width; I feed-forward width. */
#include <string.h>

#include "model_impl.h"
#include "posemb/attention.h"
#include "nn/nn_internal.h"

/* x [N, D] -> out [N, D] for layer l. */
static void layer_forward(posemb_model *m, int l, const float *x, float *out)
{
    const posemb_layer_params *p = &m->L[l];
    layer_acts *a = model_layer_acts(m, l);
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate;
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    posemb_pe_layer_input_forward(m->pe, l, x, m->B, m->T, m->a.pe_layer_scratch);
    posemb_nn_linear_forward(m->mm, a->qkv, x, p->qkv_w, p->qkv_b, N, D, 3 * D, POSEMB_NN_W_OUT_IN);
    posemb_nn_attention_forward_in(m->mm, &sh, m->pe, l, a->qkv, m->a.pos_attn, m->a.mask, model_probs_out(m, a), a->z,
                                   m->a.attn_scratch);
    posemb_nn_linear_forward(m->mm, a->r1, a->z, p->ao_w, p->ao_b, N, D, D, POSEMB_NN_W_OUT_IN);
    model_drop(m, l, SITE_ATTN_OUT, a->r1, (long)N * D);
    posemb_nn_add_layernorm_forward(a->h1, matmul_stash_claim(m->mm, a->h1, N, D), a->mean1, a->rstd1, a->r1, x,
                                    p->ln1_w, p->ln1_b, N, D, m->cfg.ln_eps);
    posemb_nn_linear_forward(m->mm, a->fi, a->h1, p->fi_w, p->fi_b, N, D, I, POSEMB_NN_W_OUT_IN);
    posemb_nn_gelu_forward_rows(a->ga, matmul_stash_claim(m->mm, a->ga, N, I), a->fi, N, I, m->cfg.act);
    posemb_nn_linear_forward(m->mm, a->r2, a->ga, p->fo_w, p->fo_b, N, I, D, POSEMB_NN_W_OUT_IN);
    model_drop(m, l, SITE_FFN_OUT, a->r2, (long)N * D);
    posemb_nn_add_layernorm_forward(out, NULL, a->mean2, a->rstd2, a->r2, a->h1, p->ln2_w, p->ln2_b, N, D,
                                    m->cfg.ln_eps); /* read by the next layer: its PE may change it first */
}

/* dout [N, D] (grad of layer l's output) -> dx [N, D] (grad of its input x), overwritten. */
static void layer_backward(posemb_model *m, int l, const float *x, const float *dout, float *dx)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate;
    size_t ND = (size_t)N * D, NI = (size_t)N * I;
    float *G = m->g;
#define GR(ptr) (G + ((ptr)-m->w)) /* the gradient of a parameter view */
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    /* r2 = h1 + dropout(ffn): both branches get d r2 */
    posemb_nn_layernorm_backward_set(s->dres, s->dh, GR(p->ln2_w), GR(p->ln2_b), dout, a->r2, p->ln2_w, a->mean2,
                                     a->rstd2, N, D);
    const float *dffn = model_undrop(m, l, SITE_FFN_OUT, s->dres, s->dz, (long)ND);
    posemb_nn_linear_backward_set(m->mm, s->dga, GR(p->fo_w), GR(p->fo_b), dffn, a->ga, p->fo_w, N, I, D,
                                  POSEMB_NN_W_OUT_IN);
    posemb_nn_gelu_backward_set(s->dga, s->dga, a->fi, (long)NI, m->cfg.act); /* in place: d fi */
    posemb_nn_linear_backward(m->mm, s->dh, GR(p->fi_w), GR(p->fi_b), s->dga, a->h1, p->fi_w, N, D, I,
                              POSEMB_NN_W_OUT_IN);
    /* r1 = x + dropout(attn) */
    posemb_nn_layernorm_backward_set(s->dres, dx, GR(p->ln1_w), GR(p->ln1_b), s->dh, a->r1, p->ln1_w, a->mean1,
                                     a->rstd1, N, D);
    const float *dattn = model_undrop(m, l, SITE_ATTN_OUT, s->dres, s->dh, (long)ND);
    posemb_nn_linear_backward_set(m->mm, s->dz, GR(p->ao_w), GR(p->ao_b), dattn, a->z, p->ao_w, N, D, D,
                                  POSEMB_NN_W_OUT_IN);
    posemb_nn_attention_backward_in(m->mm, &sh, m->pe, l, a->qkv, s->pos_attn, a->probs, s->dz, s->dqkv,
                                    s->attn_scratch);
    posemb_nn_linear_backward(m->mm, dx, GR(p->qkv_w), GR(p->qkv_b), s->dqkv, x, p->qkv_w, N, D, 3 * D,
                              POSEMB_NN_W_OUT_IN);
    posemb_pe_layer_input_backward(m->pe, l, x, m->B, m->T, dx, s->pe_layer_scratch);
#undef GR
}

void encoder_forward(posemb_model *m)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden;
    posemb_nn_embedding_forward(a->emb_sum, m->wte, a->ids, N, D, 0);
    if (m->wtype) posemb_nn_embedding_forward(a->emb_sum, m->wtype, a->types, N, D, 1);
    posemb_pe_input_forward(m->pe, a->pos_in, N, a->emb_sum, a->emb, a->pe_scratch, NULL); /* positions checked */
    posemb_nn_layernorm_forward(a->h[0], a->emb_mean, a->emb_rstd, a->emb, m->emb_ln_w, m->emb_ln_b, N, D,
                                m->cfg.ln_eps);
    uint64_t key;
    float p = model_dropout(m, 0, SITE_EMB, &key);
    if (p > 0.0f) posemb_nn_dropout_forward(a->h[0], a->h[0], (long)N * D, p, key);
    int L = m->cfg.layers;
    for (int l = 0; l < L; l++) (m->cfg.pre_ln ? preln_block_forward : layer_forward)(m, l, a->h[l], a->h[l + 1]);
    if (m->cfg.pre_ln)
        posemb_nn_layernorm_forward(a->hf, a->hf_mean, a->hf_rstd, a->h[L], m->lnf_w, m->lnf_b, N, D, m->cfg.ln_eps);
}

void encoder_backward(posemb_model *m, const float *dlast)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, L = m->cfg.layers;
    size_t ND = (size_t)N * D;
    float *G = m->g;
    const float *dout = dlast;
    float *bufs[2] = {a->dx, a->dx2};
    if (m->cfg.pre_ln) { /* out = LN_f(h_L): into the buffer layer L - 1 does not write */
        float *dh = bufs[L % 2];
        memset(dh, 0, ND * sizeof(float));
        posemb_nn_layernorm_backward(dh, G + (m->lnf_w - m->w), G + (m->lnf_b - m->w), dlast, a->h[L], m->lnf_w,
                                     a->hf_mean, a->hf_rstd, N, D);
        dout = dh;
    }
    for (int l = L - 1; l >= 0; l--) {
        float *dx = bufs[l % 2];
        (m->cfg.pre_ln ? preln_block_backward : layer_backward)(m, l, a->h[l], dout, dx);
        dout = dx;
    }
    const float *dln = model_undrop(m, 0, SITE_EMB, dout, a->dres, (long)ND);
    posemb_nn_layernorm_backward_set(a->demb, NULL, G + (m->emb_ln_w - m->w), G + (m->emb_ln_b - m->w), dln, a->emb,
                                     m->emb_ln_w, a->emb_mean, a->emb_rstd, N, D);
    float *dsum = a->dx2; /* the loop ends with dout in bufs[0] = a->dx */
    posemb_pe_input_backward(m->pe, a->pos_in, N, a->emb_sum, a->demb, dsum, a->pe_scratch);
    posemb_nn_embedding_backward(G + (m->wte - m->w), dsum, a->ids, N, D, m->cfg.pad_token_id);
    if (m->wtype) posemb_nn_embedding_backward(G + (m->wtype - m->w), dsum, a->types, N, D, -1);
    /* HF RoBERTa's position table has padding_idx = pad: that row, which only
     * padding reads, never learns. */
    const posemb_pe_param *ape = posemb_pe_find_param(m->pe, "position_embeddings.weight", 0);
    if (m->cfg.arch == POSEMB_ROBERTA && ape && ape->grad)
        memset(ape->grad + (size_t)m->cfg.pad_token_id * ape->shape[1], 0, (size_t)ape->shape[1] * sizeof(float));
}
