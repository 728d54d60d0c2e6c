/* The parameter layout of each architecture, under Hugging Face's names.
 * model_layout runs twice: first to register names, shapes and offsets,
 * then, once the block is allocated, to point the views into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

float *model_param(posemb_model *m, const char *name, int64_t rows, int64_t cols, int decay, int unused)
{
    if (m->w) return m->w + m->params[m->reg_next++].offset;
    if (m->n_params == m->cap_params) {
        int cap = m->cap_params ? 2 * m->cap_params : 64;
        posemb_param *p = realloc(m->params, (size_t)cap * sizeof *p);
        if (!p) {
            m->oom = 1; /* reported by model_layout */
            return NULL;
        }
        m->params = p;
        m->cap_params = cap;
    }
    posemb_param *p = &m->params[m->n_params++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = cols > 0 ? 2 : 1;
    p->shape[0] = rows;
    p->shape[1] = cols > 0 ? cols : 0;
    p->numel = (size_t)rows * (size_t)(cols > 0 ? cols : 1);
    p->offset = m->n_floats;
    p->decay = decay;
    p->unused = unused;
    p->head = m->reg_head;
    m->n_floats += p->numel;
    return NULL;
}

/* The HF name of a PE tensor: the model's prefix for its scope. GPT-2's
 * learned table is HF's wpe. */
static void pe_tensor_name(const posemb_model *m, const posemb_pe_param *t, char *buf, size_t cap)
{
    int gpt2 = m->cfg.arch == POSEMB_GPT2;
    if (m->cfg.arch == POSEMB_LLAMA || m->cfg.arch == POSEMB_NEOX) { /* not HF's: neither has PE tensors */
        if (t->scope == POSEMB_PE_SCOPE_LAYER)
            snprintf(buf, cap, m->cfg.arch == POSEMB_NEOX ? "layers.%d.attention.%s" : "layers.%d.self_attn.%s",
                     t->layer, t->name);
        else snprintf(buf, cap, "pe.%s", t->name);
        return;
    }
    if (t->scope == POSEMB_PE_SCOPE_LAYER)
        snprintf(buf, cap, gpt2 ? "h.%d.attn.%s" : "encoder.layer.%d.attention.self.%s", t->layer, t->name);
    else if (gpt2 && !strcmp(t->name, "position_embeddings.weight")) snprintf(buf, cap, "wpe.weight");
    else if (t->input) snprintf(buf, cap, gpt2 ? "wpe.%s" : "embeddings.%s", t->name);
    else snprintf(buf, cap, gpt2 ? "pe.%s" : "encoder.%s", t->name);
}

/* The PE's tensors, contiguous so that posemb_pe_bind sees one block. */
static void layout_pe(posemb_model *m)
{
    if (!m->w) m->pe_offset = m->n_floats; /* the registration pass */
    char name[128];
    for (int i = 0; i < posemb_pe_n_params(m->pe); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(m->pe, i);
        pe_tensor_name(m, t, name, sizeof name);
        model_param(m, name, t->shape[0], t->ndim == 2 ? t->shape[1] : 0, t->decay, 0);
    }
}

/* A parameter of layer l: prefix is "encoder.layer.%d." or "h.%d.". */
static float *layer_param(posemb_model *m, const char *prefix, int l, const char *suffix, int64_t rows, int64_t cols,
                          int decay)
{
    char n[128], p[64];
    snprintf(p, sizeof p, prefix, l);
    snprintf(n, sizeof n, "%s%s", p, suffix);
    return model_param(m, n, rows, cols, decay, 0);
}

static void layout_encoder_layer(posemb_model *m, int l)
{
    const char *pre = "encoder.layer.%d.";
    int D = m->cfg.hidden, I = m->cfg.intermediate;
    posemb_layer_params *L = &m->L[l];
    /* key and value follow query, so qkv_w is one [3D, D] matrix and qkv_b one [3D] vector */
    L->qkv_w = layer_param(m, pre, l, "attention.self.query.weight", D, D, 1);
    layer_param(m, pre, l, "attention.self.key.weight", D, D, 1);
    layer_param(m, pre, l, "attention.self.value.weight", D, D, 1);
    L->qkv_b = layer_param(m, pre, l, "attention.self.query.bias", D, 0, 0);
    layer_param(m, pre, l, "attention.self.key.bias", D, 0, 0);
    layer_param(m, pre, l, "attention.self.value.bias", D, 0, 0);
    L->ao_w = layer_param(m, pre, l, "attention.output.dense.weight", D, D, 1);
    L->ao_b = layer_param(m, pre, l, "attention.output.dense.bias", D, 0, 0);
    /* pre-LN (HF's roberta-prelayernorm): LN1 before attention, LN2 before the intermediate dense */
    int pre_ln = m->cfg.pre_ln;
    L->ln1_w =
        layer_param(m, pre, l, pre_ln ? "attention.LayerNorm.weight" : "attention.output.LayerNorm.weight", D, 0, 0);
    L->ln1_b = layer_param(m, pre, l, pre_ln ? "attention.LayerNorm.bias" : "attention.output.LayerNorm.bias", D, 0, 0);
    L->fi_w = layer_param(m, pre, l, "intermediate.dense.weight", I, D, 1);
    L->fi_b = layer_param(m, pre, l, "intermediate.dense.bias", I, 0, 0);
    L->fo_w = layer_param(m, pre, l, "output.dense.weight", D, I, 1);
    L->fo_b = layer_param(m, pre, l, "output.dense.bias", D, 0, 0);
    L->ln2_w = layer_param(m, pre, l, pre_ln ? "intermediate.LayerNorm.weight" : "output.LayerNorm.weight", D, 0, 0);
    L->ln2_b = layer_param(m, pre, l, pre_ln ? "intermediate.LayerNorm.bias" : "output.LayerNorm.bias", D, 0, 0);
}

static void layout_decoder_layer(posemb_model *m, int l)
{
    const char *pre = "h.%d.";
    int D = m->cfg.hidden, I = m->cfg.intermediate;
    posemb_layer_params *L = &m->L[l];
    L->ln1_w = layer_param(m, pre, l, "ln_1.weight", D, 0, 0);
    L->ln1_b = layer_param(m, pre, l, "ln_1.bias", D, 0, 0);
    L->qkv_w = layer_param(m, pre, l, "attn.c_attn.weight", D, 3 * D, 1);
    L->qkv_b = layer_param(m, pre, l, "attn.c_attn.bias", 3 * D, 0, 0);
    L->ao_w = layer_param(m, pre, l, "attn.c_proj.weight", D, D, 1);
    L->ao_b = layer_param(m, pre, l, "attn.c_proj.bias", D, 0, 0);
    L->ln2_w = layer_param(m, pre, l, "ln_2.weight", D, 0, 0);
    L->ln2_b = layer_param(m, pre, l, "ln_2.bias", D, 0, 0);
    L->fi_w = layer_param(m, pre, l, "mlp.c_fc.weight", D, I, 1);
    L->fi_b = layer_param(m, pre, l, "mlp.c_fc.bias", I, 0, 0);
    L->fo_w = layer_param(m, pre, l, "mlp.c_proj.weight", I, D, 1);
    L->fo_b = layer_param(m, pre, l, "mlp.c_proj.bias", D, 0, 0);
}

/* Llama: q, k, v adjacent ([H d + 2 KV d, D], d the head width), gate and up adjacent ([2I, D]). */
static void layout_llama_layer(posemb_model *m, int l)
{
    const char *pre = "layers.%d.";
    const posemb_config *c = &m->cfg;
    int D = c->hidden, I = c->intermediate, d = posemb_config_head_dim(c), A = c->heads * d, KVd = c->kv_heads * d;
    posemb_layer_params *L = &m->L[l];
    L->ln1_w = layer_param(m, pre, l, "input_layernorm.weight", D, 0, 0);
    L->qkv_w = layer_param(m, pre, l, "self_attn.q_proj.weight", A, D, 1);
    layer_param(m, pre, l, "self_attn.k_proj.weight", KVd, D, 1);
    layer_param(m, pre, l, "self_attn.v_proj.weight", KVd, D, 1);
    if (c->attn_bias) {
        L->qkv_b = layer_param(m, pre, l, "self_attn.q_proj.bias", A, 0, 0);
        layer_param(m, pre, l, "self_attn.k_proj.bias", KVd, 0, 0);
        layer_param(m, pre, l, "self_attn.v_proj.bias", KVd, 0, 0);
    }
    L->ao_w = layer_param(m, pre, l, "self_attn.o_proj.weight", D, A, 1);
    if (c->attn_out_bias) L->ao_b = layer_param(m, pre, l, "self_attn.o_proj.bias", D, 0, 0);
    if (c->qk_norm) {
        L->qn_w = layer_param(m, pre, l, "self_attn.q_norm.weight", d, 0, 0);
        L->kn_w = layer_param(m, pre, l, "self_attn.k_norm.weight", d, 0, 0);
    }
    if (c->gemma) { /* Gemma's post_attention_layernorm follows attention; pre_feedforward_layernorm is LN2 */
        L->pa_w = layer_param(m, pre, l, "post_attention_layernorm.weight", D, 0, 0);
        L->ln2_w = layer_param(m, pre, l, "pre_feedforward_layernorm.weight", D, 0, 0);
        L->pf_w = layer_param(m, pre, l, "post_feedforward_layernorm.weight", D, 0, 0);
    } else L->ln2_w = layer_param(m, pre, l, "post_attention_layernorm.weight", D, 0, 0);
    const char *mlp = c->llama4 ? "feed_forward" : "mlp"; /* Llama 4's dense layers */
    char name[64];
    snprintf(name, sizeof name, "%s.gate_proj.weight", mlp);
    L->fi_w = layer_param(m, pre, l, name, I, D, 1);
    snprintf(name, sizeof name, "%s.up_proj.weight", mlp);
    layer_param(m, pre, l, name, I, D, 1);
    if (c->mlp_bias) {
        L->fi_b = layer_param(m, pre, l, "mlp.gate_proj.bias", I, 0, 0);
        layer_param(m, pre, l, "mlp.up_proj.bias", I, 0, 0);
    }
    snprintf(name, sizeof name, "%s.down_proj.weight", mlp);
    L->fo_w = layer_param(m, pre, l, name, D, I, 1);
    if (c->mlp_bias) L->fo_b = layer_param(m, pre, l, "mlp.down_proj.bias", D, 0, 0);
}

static void layout_llama(posemb_model *m)
{
    const posemb_config *c = &m->cfg;
    m->wte = model_param(m, "embed_tokens.weight", c->vocab_size, c->hidden, 1, 0);
    layout_pe(m);
    for (int l = 0; l < c->layers; l++) layout_llama_layer(m, l);
    m->lnf_w = model_param(m, "norm.weight", c->hidden, 0, 0, 0);
    m->lm_w = m->wte;
    if (c->head == POSEMB_HEAD_CLM && !c->tie_embeddings) {
        m->reg_head = 1;
        m->lm_w = model_param(m, "lm_head.weight", c->vocab_size, c->hidden, 1, 0);
        m->reg_head = 0;
    }
}

/* GPT-NeoX: query_key_value [3D, D] is HF's, per head [q_h; k_h; v_h] (neox.c
 * reorders its output), Linear weights [out, in], biases unless attention_bias is false. */
static void layout_neox_layer(posemb_model *m, int l)
{
    const char *pre = "layers.%d.";
    const posemb_config *c = &m->cfg;
    int D = c->hidden, I = c->intermediate;
    posemb_layer_params *L = &m->L[l];
    L->ln1_w = layer_param(m, pre, l, "input_layernorm.weight", D, 0, 0);
    L->ln1_b = layer_param(m, pre, l, "input_layernorm.bias", D, 0, 0);
    L->ln2_w = layer_param(m, pre, l, "post_attention_layernorm.weight", D, 0, 0);
    L->ln2_b = layer_param(m, pre, l, "post_attention_layernorm.bias", D, 0, 0);
    L->qkv_w = layer_param(m, pre, l, "attention.query_key_value.weight", 3 * D, D, 1);
    if (c->attn_bias) L->qkv_b = layer_param(m, pre, l, "attention.query_key_value.bias", 3 * D, 0, 0);
    L->ao_w = layer_param(m, pre, l, "attention.dense.weight", D, D, 1);
    if (c->attn_bias) L->ao_b = layer_param(m, pre, l, "attention.dense.bias", D, 0, 0);
    L->fi_w = layer_param(m, pre, l, "mlp.dense_h_to_4h.weight", I, D, 1);
    L->fi_b = layer_param(m, pre, l, "mlp.dense_h_to_4h.bias", I, 0, 0);
    L->fo_w = layer_param(m, pre, l, "mlp.dense_4h_to_h.weight", D, I, 1);
    L->fo_b = layer_param(m, pre, l, "mlp.dense_4h_to_h.bias", D, 0, 0);
}

static void layout_neox(posemb_model *m)
{
    const posemb_config *c = &m->cfg;
    m->wte = model_param(m, "embed_in.weight", c->vocab_size, c->hidden, 1, 0);
    layout_pe(m);
    for (int l = 0; l < c->layers; l++) layout_neox_layer(m, l);
    m->lnf_w = model_param(m, "final_layer_norm.weight", c->hidden, 0, 0, 0);
    m->lnf_b = model_param(m, "final_layer_norm.bias", c->hidden, 0, 0, 0);
    m->lm_w = m->wte;
    if (c->head == POSEMB_HEAD_CLM && !c->tie_embeddings) {
        m->reg_head = 1;
        m->lm_w = model_param(m, "embed_out.weight", c->vocab_size, c->hidden, 1, 0);
        m->reg_head = 0;
    }
}

static void layout_encoder(posemb_model *m)
{
    const posemb_config *c = &m->cfg;
    int D = c->hidden;
    m->wte = model_param(m, "embeddings.word_embeddings.weight", c->vocab_size, D, 1, 0);
    if (c->type_vocab > 0) m->wtype = model_param(m, "embeddings.token_type_embeddings.weight", c->type_vocab, D, 1, 0);
    /* HF keeps an absolute table even for its relative types; so do we, unused, to round-trip. */
    if (!strncmp(c->pe, "relative_key", 12))
        model_param(m, "embeddings.position_embeddings.weight", c->max_position, D, 1, 1);
    m->emb_ln_w = model_param(m, "embeddings.LayerNorm.weight", D, 0, 0, 0);
    m->emb_ln_b = model_param(m, "embeddings.LayerNorm.bias", D, 0, 0, 0);
    layout_pe(m);
    for (int l = 0; l < c->layers; l++) layout_encoder_layer(m, l);
    if (c->pre_ln) { /* the norm after the last layer */
        m->lnf_w = model_param(m, "LayerNorm.weight", D, 0, 0, 0);
        m->lnf_b = model_param(m, "LayerNorm.bias", D, 0, 0, 0);
    }
    /* HF builds the pooler for the bare model and BERT's classifier only. */
    int pooler = c->head == POSEMB_HEAD_NONE ||
                 (c->arch == POSEMB_BERT && (c->head == POSEMB_HEAD_CLASSIFY || c->head == POSEMB_HEAD_REGRESS));
    if (pooler) {
        m->pool_w = model_param(m, "pooler.dense.weight", D, D, 1, 0);
        m->pool_b = model_param(m, "pooler.dense.bias", D, 0, 0, 0);
    }
}

const char *model_base_prefix(const posemb_model *m)
{
    static const char *const prefix[] = {"bert.", "roberta.", "transformer.", "model.", "gpt_neox."};
    if (m->cfg.head == POSEMB_HEAD_NONE) return "";
    return m->cfg.arch == POSEMB_ROBERTA && m->cfg.pre_ln ? "roberta_prelayernorm." : prefix[m->cfg.arch];
}

/* The head's tensors under HF's names (GPT-2's LM head is the tied wte, or
 * lm_head.weight, laid out by layout_decoder, when untied). */
static void layout_head(posemb_model *m)
{
    const posemb_config *c = &m->cfg;
    head_params *h = &m->hp;
    int D = c->hidden, bert = c->arch == POSEMB_BERT;
    m->reg_head = 1;
    if (c->head == POSEMB_HEAD_MLM) {
        h->dense_w =
            model_param(m, bert ? "cls.predictions.transform.dense.weight" : "lm_head.dense.weight", D, D, 1, 0);
        h->dense_b = model_param(m, bert ? "cls.predictions.transform.dense.bias" : "lm_head.dense.bias", D, 0, 0, 0);
        h->ln_w = model_param(m, bert ? "cls.predictions.transform.LayerNorm.weight" : "lm_head.layer_norm.weight", D,
                              0, 0, 0);
        h->ln_b =
            model_param(m, bert ? "cls.predictions.transform.LayerNorm.bias" : "lm_head.layer_norm.bias", D, 0, 0, 0);
        h->bias = model_param(m, bert ? "cls.predictions.bias" : "lm_head.bias", c->vocab_size, 0, 0, 0);
    } else if ((c->head == POSEMB_HEAD_CLASSIFY || c->head == POSEMB_HEAD_REGRESS) && bert) {
        h->out_w = model_param(m, "classifier.weight", c->num_labels, D, 1, 0);
        h->out_b = model_param(m, "classifier.bias", c->num_labels, 0, 0, 0);
    } else if (c->head == POSEMB_HEAD_CLASSIFY || c->head == POSEMB_HEAD_REGRESS) {
        h->dense_w = model_param(m, "classifier.dense.weight", D, D, 1, 0);
        h->dense_b = model_param(m, "classifier.dense.bias", D, 0, 0, 0);
        h->out_w = model_param(m, "classifier.out_proj.weight", c->num_labels, D, 1, 0);
        h->out_b = model_param(m, "classifier.out_proj.bias", c->num_labels, 0, 0, 0);
    } else if (c->head == POSEMB_HEAD_SPAN) {
        h->out_w = model_param(m, "qa_outputs.weight", 2, D, 1, 0);
        h->out_b = model_param(m, "qa_outputs.bias", 2, 0, 0, 0);
    }
    m->reg_head = 0;
}

static void layout_decoder(posemb_model *m)
{
    const posemb_config *c = &m->cfg;
    m->wte = model_param(m, "wte.weight", c->vocab_size, c->hidden, 1, 0);
    layout_pe(m);
    for (int l = 0; l < c->layers; l++) layout_decoder_layer(m, l);
    m->lnf_w = model_param(m, "ln_f.weight", c->hidden, 0, 0, 0);
    m->lnf_b = model_param(m, "ln_f.bias", c->hidden, 0, 0, 0);
    m->lm_w = m->wte;
    if (c->head == POSEMB_HEAD_CLM && !c->tie_embeddings) {
        m->reg_head = 1;
        m->lm_w = model_param(m, "lm_head.weight", c->vocab_size, c->hidden, 1, 0);
        m->reg_head = 0;
    }
    layout_head(m);
}

posemb_status model_layout(posemb_model *m, posemb_error *err)
{
    m->reg_next = 0;
    if (m->cfg.arch == POSEMB_GPT2) layout_decoder(m);
    else if (m->cfg.arch == POSEMB_LLAMA) layout_llama(m);
    else if (m->cfg.arch == POSEMB_NEOX) layout_neox(m);
    else {
        layout_encoder(m);
        layout_head(m);
        m->lm_w = m->wte;
    }
    return m->oom ? posemb_fail(err, POSEMB_ENOMEM, "model: out of memory laying out parameters") : POSEMB_OK;
}
