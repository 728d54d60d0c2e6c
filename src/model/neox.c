/* GPT-NeoX decoder (Pythia), pre-LayerNorm and causal, as HF's GPTNeoXModel:
 *   h0 = E[ids] (+ PE input hook)
 *   parallel (use_parallel_residual, Pythia's): h' = h + attn(LN1(h)) + mlp(LN2(h))
 *   serial:                                     r1 = h + attn(LN1(h));  h' = r1 + mlp(LN2(r1))
 *   mlp(x) = gelu(x Wi^T + bi) Wf^T + bf;  out = LN_f(h_L)
 * query_key_value is one [3D, D] Linear whose output HF reads per head as
 * [q_h, k_h, v_h]; posemb's attention reads [q | k | v] (all heads' q, then
 * k, then v), so the product is reordered after the forward and its gradient
 * before the backward: the weights stay HF's, byte for byte. RoPE on the
 * first rotary_pct of each head comes in through the PE's q/k hook. */
#include <string.h>

#include "model_impl.h"
#include "posemb/attention.h"
#include "nn/nn_internal.h"

#define GR(ptr) (m->g + ((ptr)-m->w))     /* the gradient of a parameter view */
#define GRN(ptr) ((ptr) ? GR(ptr) : NULL) /* ... or NULL for a tensor the config leaves out */

/* in [N, H, 3, d] (HF's per-head order) -> out [N, 3, H, d] (q | k | v). */
void neox_qkv_from_hf(float *out, const float *in, int N, int H, int d)
{
    size_t W = (size_t)3 * H * d, hd = (size_t)H * d;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < 3; j++)
                memcpy(out + n * W + j * hd + (size_t)h * d, in + n * W + ((size_t)h * 3 + j) * d, d * sizeof(float));
}

/* The inverse: [N, 3, H, d] -> [N, H, 3, d]. */
static void qkv_to_hf(float *out, const float *in, int N, int H, int d)
{
    size_t W = (size_t)3 * H * d, hd = (size_t)H * d;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < 3; j++)
                memcpy(out + n * W + ((size_t)h * 3 + j) * d, in + n * W + j * hd + (size_t)h * d, d * sizeof(float));
}

/* x [N, D] -> out [N, D] for block l. */
static void layer_forward(posemb_model *m, int l, const float *x, float *out)
{
    const posemb_layer_params *p = &m->L[l];
    layer_acts *a = model_layer_acts(m, l);
    int N = m->B * m->T, D = m->cfg.hidden, I = m->cfg.intermediate, H = m->cfg.heads;
    float eps = m->cfg.ln_eps;
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    posemb_nn_layernorm_forward(a->a, a->mean1, a->rstd1, x, p->ln1_w, p->ln1_b, N, D, eps);
    posemb_pe_layer_input_forward(m->pe, l, a->a, m->B, m->T, m->a.pe_layer_scratch);
    posemb_nn_linear_forward(m->mm, m->a.qkv_hf, a->a, p->qkv_w, p->qkv_b, N, D, 3 * D, POSEMB_NN_W_OUT_IN);
    neox_qkv_from_hf(a->qkv, m->a.qkv_hf, N, H, D / H);
    posemb_nn_attention_forward_in(m->mm, &sh, m->pe, l, a->qkv, m->a.pos_attn, m->a.mask, model_probs_out(m, a), a->z,
                                   m->a.attn_scratch);
    posemb_nn_linear_forward(m->mm, a->r1, a->z, p->ao_w, p->ao_b, N, D, D, POSEMB_NN_W_OUT_IN);
    model_drop_add(m, l, SITE_ATTN_OUT, a->r1, x, (long)N * D); /* r1 = x + attn */
    const float *mlp_in = m->cfg.parallel_residual ? x : a->r1;
    posemb_nn_layernorm_forward(a->h1, a->mean2, a->rstd2, mlp_in, p->ln2_w, p->ln2_b, N, D, eps);
    posemb_nn_linear_forward(m->mm, a->fi, a->h1, p->fi_w, p->fi_b, N, D, I, POSEMB_NN_W_OUT_IN);
    posemb_nn_gelu_forward_rows(a->ga, matmul_stash_claim(m->mm, a->ga, N, I), a->fi, N, I, m->cfg.act);
    posemb_nn_linear_forward(m->mm, out, a->ga, p->fo_w, p->fo_b, N, I, D, POSEMB_NN_W_OUT_IN);
    model_drop_add(m, l, SITE_FFN_OUT, out, a->r1, (long)N * D); /* out = r1 + mlp */
}

/* dout [N, D] (grad of block l's output) -> dx [N, D] (grad of its input x), overwritten. */
static void layer_backward(posemb_model *m, int l, const float *x, const float *dout, float *dx)
{
    const posemb_layer_params *p = &m->L[l];
    const layer_acts *a = &m->a.layer[l];
    model_acts *s = &m->a;
    int N = m->B * m->T, D = m->cfg.hidden, H = m->cfg.heads;
    size_t ND = (size_t)N * D;
    posemb_nn_attn_shape sh = model_attn_shape(m, l);
    decoder_mlp_backward(m, l, model_undrop(m, l, SITE_FFN_OUT, dout, s->dz, (long)ND), POSEMB_NN_W_OUT_IN);
    memcpy(s->dres, dout, ND * sizeof(float)); /* d r1: out = r1 + mlp */
    if (m->cfg.parallel_residual) {            /* LN2 read x: its gradient goes to dx */
        memcpy(dx, dout, ND * sizeof(float));
        posemb_nn_layernorm_backward(dx, GR(p->ln2_w), GR(p->ln2_b), s->dh, x, p->ln2_w, a->mean2, a->rstd2, N, D);
    } else { /* LN2 read r1 */
        posemb_nn_layernorm_backward(s->dres, GR(p->ln2_w), GR(p->ln2_b), s->dh, a->r1, p->ln2_w, a->mean2, a->rstd2, N,
                                     D);
        memcpy(dx, s->dres, ND * sizeof(float)); /* r1 = x + attn */
    }
    const float *dattn = model_undrop(m, l, SITE_ATTN_OUT, s->dres, s->dh, (long)ND);
    posemb_nn_linear_backward_set(m->mm, s->dz, GR(p->ao_w), GRN(p->ao_b), dattn, a->z, p->ao_w, N, D, D,
                                  POSEMB_NN_W_OUT_IN);
    posemb_nn_attention_backward_in(m->mm, &sh, m->pe, l, a->qkv, s->pos_attn, a->probs, s->dz, s->dqkv,
                                    s->attn_scratch);
    qkv_to_hf(s->qkv_hf, s->dqkv, N, H, D / H);
    posemb_nn_linear_backward_set(m->mm, s->dh, GR(p->qkv_w), GRN(p->qkv_b), s->qkv_hf, a->a, p->qkv_w, N, D, 3 * D,
                                  POSEMB_NN_W_OUT_IN);
    posemb_pe_layer_input_backward(m->pe, l, a->a, m->B, m->T, s->dh, s->pe_layer_scratch);
    posemb_nn_layernorm_backward(dx, GR(p->ln1_w), GR(p->ln1_b), s->dh, x, p->ln1_w, a->mean1, a->rstd1, N, D);
}

void neox_forward(posemb_model *m) { decoder_forward_with(m, layer_forward); }

void neox_backward(posemb_model *m, const float *dlast) { decoder_backward_with(m, layer_backward, dlast); }
