/* What the architectures' layers share (model_impl.h): their activations,
 * dropout at each site, the attention's shape and scale, Gemma's norm
 * weights. The encoder, the decoders and model.c call these; these call
 * none of them. */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "nn/nn_internal.h"
#include "model/model_internal.h"

layer_acts *model_layer_acts(posemb_model *m, int l) { return &m->a.layer[m->acts_shared ? 0 : l]; }

float model_dropout(const posemb_model *m, int l, int site, uint64_t *key)
{
    *key = posemb_nn_dropout_key(m->seed, m->step, site == SITE_EMB ? 0 : 1 + 3 * (uint64_t)l + (uint64_t)(site - 1));
    if (!m->train) return 0.0f;
    return site == SITE_PROBS ? m->cfg.attn_dropout : m->cfg.hidden_dropout;
}

const float *model_undrop(const posemb_model *m, int l, int site, const float *dy, float *tmp, long n)
{
    uint64_t key;
    float p = model_dropout(m, l, site, &key);
    if (p <= 0.0f) return dy;
    memset(tmp, 0, (size_t)n * sizeof *tmp);
    posemb_nn_dropout_backward(tmp, dy, n, p, key);
    return tmp;
}

posemb_nn_attn_shape model_attn_shape(const posemb_model *m, int l)
{
    posemb_nn_attn_shape s = {.B = m->B,
                              .T = m->T,
                              .D = m->cfg.heads * posemb_config_head_dim(&m->cfg),
                              .H = m->cfg.heads,
                              .KV = model_kv_heads(&m->cfg),
                              .causal = model_is_decoder(m),
                              .window = posemb_config_window(&m->cfg, l),
                              .chunk = posemb_config_chunk(&m->cfg, l),
                              .scale = model_attn_scale(&m->cfg),
                              .axes = m->a.has_axes ? m->a.pos_axes : NULL};
    s.dropout = model_dropout(m, l, SITE_PROBS, &s.key);
    return s;
}

void model_drop(const posemb_model *m, int l, int site, float *y, long n)
{
    uint64_t key;
    float p = model_dropout(m, l, site, &key);
    if (p > 0.0f) posemb_nn_dropout_forward(y, y, n, p, key);
}

void model_drop_add(const posemb_model *m, int l, int site, float *y, const float *x, long n)
{
    model_drop(m, l, site, y, n);
    posemb_nn_add(y, y, x, n);
}

const float *model_norm_weight(posemb_model *m, const float *w, int n, int slot)
{
    if (!m->cfg.gemma || !w) return w;
    int D = m->cfg.hidden, d = posemb_config_head_dim(&m->cfg);
    float *w1 = m->a.norm_w1 + (size_t)slot * (D > d ? D : d);
    for (int i = 0; i < n; i++) w1[i] = 1.0f + w[i];
    return w1;
}

float model_attn_scale(const posemb_config *c)
{
    float s = c->query_pre_attn_scalar > 0.0f ? c->query_pre_attn_scalar : (float)posemb_config_head_dim(c);
    return (float)(1.0 / sqrt((double)s));
}
