/* GPT-2 decoder, pre-LayerNorm and causal:
 *   h0 = WE[ids] (+ PE input hook)
 *   r1 = h + attn(LN1(h)) Wo;  h' = r1 + gelu(LN2(r1) Wi) Wf;  out = LN_f(h_L)
 * Conv1D weights are [in, out]. N = B*T rows. The block is also the pre-LN
 * encoder's (encoder.c), with [out, in] weights and attention both ways. */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "posemb/attention.h"
#include "nn/nn_internal.h"

#define GR(ptr) (m->g + ((ptr)-m->w)) /* the gradient of a parameter view */

/* x [N, D] -> out [N, D] for block l. */
void preln_block_forward(posemb_model *m, int l, const float *x, float *out)
{
    const posemb_layer_params *p = &m->L[l];
    layer_acts *a = model_layer_acts(m, l);
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate;
    float eps = m->cfg.ln_eps;
    posemb_nn_wlayout lay = model_wlayout(m);
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    posemb_nn_layernorm_forward(a->a, a->mean1, a->rstd1, x, p->ln1_w, p->ln1_b, N, D, eps);
    posemb_pe_layer_input_forward(m->pe, l, a->a, m->B, m->T, m->a.pe_layer_scratch);
    posemb_nn_linear_forward(m->mm, a->qkv, a->a, p->qkv_w, p->qkv_b, N, D, 3 * D, lay);
    posemb_nn_attention_forward_in(m->mm, &sh, m->pe, l, a->qkv, m->a.pos_attn, m->a.mask, model_probs_out(m, a), a->z,
                                   m->a.attn_scratch);
    posemb_nn_linear_forward(m->mm, a->r1, a->z, p->ao_w, p->ao_b, N, D, D, lay);
    model_drop(m, l, SITE_ATTN_OUT, a->r1, (long)N * D);
    posemb_nn_add_layernorm_forward(a->h1, matmul_stash_claim(m->mm, a->h1, N, D), a->mean2, a->rstd2, a->r1, x,
                                    p->ln2_w, p->ln2_b, N, D, eps);
    posemb_nn_linear_forward(m->mm, a->fi, a->h1, p->fi_w, p->fi_b, N, D, I, lay);
    posemb_nn_gelu_forward_rows(a->ga, matmul_stash_claim(m->mm, a->ga, N, I), a->fi, N, I, m->cfg.act);
    posemb_nn_linear_forward(m->mm, out, a->ga, p->fo_w, p->fo_b, N, I, D, lay);
    model_drop_add(m, l, SITE_FFN_OUT, out, a->r1, (long)N * D);
}

/* dout [N, D] (grad of block l's output) -> dx [N, D] (grad of its input x), overwritten. */
void preln_block_backward(posemb_model *m, int l, const float *x, const float *dout, float *dx)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden;
    size_t ND = (size_t)N * D;
    posemb_nn_wlayout lay = model_wlayout(m);
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    memcpy(s->dres, dout, ND * sizeof(float)); /* out = r1 + dropout(ffn) */
    decoder_mlp_backward(m, l, model_undrop(m, l, SITE_FFN_OUT, dout, s->dz, (long)ND), lay);
    posemb_nn_layernorm_backward(s->dres, GR(p->ln2_w), GR(p->ln2_b), s->dh, a->r1, p->ln2_w, a->mean2, a->rstd2, N, D);
    memcpy(dx, s->dres, ND * sizeof(float)); /* r1 = x + dropout(attn) */
    const float *dattn = model_undrop(m, l, SITE_ATTN_OUT, s->dres, s->dh, (long)ND);
    posemb_nn_linear_backward_set(m->mm, s->dz, GR(p->ao_w), GR(p->ao_b), dattn, a->z, p->ao_w, N, D, D, lay);
    posemb_nn_attention_backward_in(m->mm, &sh, m->pe, l, a->qkv, s->pos_attn, a->probs, s->dz, s->dqkv,
                                    s->attn_scratch);
    posemb_nn_linear_backward_set(m->mm, s->dh, GR(p->qkv_w), GR(p->qkv_b), s->dqkv, a->a, p->qkv_w, N, D, 3 * D, lay);
    posemb_pe_layer_input_backward(m->pe, l, a->a, m->B, m->T, s->dh, s->pe_layer_scratch);
    posemb_nn_layernorm_backward(dx, GR(p->ln1_w), GR(p->ln1_b), s->dh, x, p->ln1_w, a->mean1, a->rstd1, N, D);
}

/* Gemma 3 scales its embeddings by sqrt(hidden), a float32 of the double (HF's torch.tensor(hidden ** 0.5)). */
static float embed_scale(const posemb_model *m) { return m->cfg.gemma ? (float)sqrt((double)m->cfg.hidden) : 1.0f; }

void decoder_mlp_backward(posemb_model *m, int l, const float *dffn, posemb_nn_wlayout layout)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate;
    size_t NI = (size_t)N * I;
    posemb_nn_linear_backward_set(m->mm, s->dga, GR(p->fo_w), GR(p->fo_b), dffn, a->ga, p->fo_w, N, I, D, layout);
    posemb_nn_gelu_backward_set(s->dga, s->dga, a->fi, (long)NI, m->cfg.act); /* in place: d fi */
    posemb_nn_linear_backward_set(m->mm, s->dh, GR(p->fi_w), GR(p->fi_b), s->dga, a->h1, p->fi_w, N, D, I, layout);
}

void decoder_embed(posemb_model *m)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden;
    posemb_nn_embedding_forward(a->emb_sum, m->wte, a->ids, N, D, 0);
    float s = embed_scale(m);
    for (long i = 0; s != 1.0f && i < (long)N * D; i++) a->emb_sum[i] *= s;
    posemb_pe_input_forward(m->pe, a->pos_in, N, a->emb_sum, a->h[0], a->pe_scratch, NULL); /* positions checked */
    uint64_t key;
    float p = model_dropout(m, 0, SITE_EMB, &key);
    if (p > 0.0f) posemb_nn_dropout_forward(a->h[0], a->h[0], (long)N * D, p, key);
}

const float *decoder_layers_backward(posemb_model *m, decoder_layer_backward_fn backward_layer, float *dout)
{
    model_acts *a = &m->a;
    float *bufs[2] = {a->dx, a->dx2};
    for (int l = m->cfg.layers - 1; l >= 0; l--) {
        float *dx = bufs[l % 2];
        backward_layer(m, l, a->h[l], dout, dx);
        dout = dx;
    }
    return dout;
}

void decoder_embed_backward(posemb_model *m, const float *dout, int32_t skip_id)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden;
    const float *demb = model_undrop(m, 0, SITE_EMB, dout, a->dres, (long)N * D);
    posemb_pe_input_backward(m->pe, a->pos_in, N, a->emb_sum, demb, a->demb, a->pe_scratch);
    float s = embed_scale(m);
    for (long i = 0; s != 1.0f && i < (long)N * D; i++) a->demb[i] *= s;
    posemb_nn_embedding_backward(GR(m->wte), a->demb, a->ids, N, D, skip_id);
}

void decoder_forward_with(posemb_model *m, decoder_layer_forward_fn forward_layer)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, L = m->cfg.layers;
    decoder_embed(m);
    for (int l = 0; l < L; l++) forward_layer(m, l, a->h[l], a->h[l + 1]);
    posemb_nn_layernorm_forward(a->hf, a->hf_mean, a->hf_rstd, a->h[L], m->lnf_w, m->lnf_b, N, D, m->cfg.ln_eps);
}

void decoder_backward_with(posemb_model *m, decoder_layer_backward_fn backward_layer, const float *dlast)
{
    model_acts *a = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, L = m->cfg.layers;
    float *dout = L % 2 ? a->dx2 : a->dx; /* the buffer layer L - 1 reads; the layers alternate */
    memset(dout, 0, (size_t)N * D * sizeof(float));
    posemb_nn_layernorm_backward(dout, GR(m->lnf_w), GR(m->lnf_b), dlast, a->h[L], m->lnf_w, a->hf_mean, a->hf_rstd, N,
                                 D);
    decoder_embed_backward(m, decoder_layers_backward(m, backward_layer, dout), -1);
}

void decoder_forward(posemb_model *m) { decoder_forward_with(m, preln_block_forward); }

void decoder_backward(posemb_model *m, const float *dlast) { decoder_backward_with(m, preln_block_backward, dlast); }
