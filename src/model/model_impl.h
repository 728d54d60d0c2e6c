/* The model's private state: parameters, views, activations. */
#ifndef POSEMB_MODEL_IMPL_H
#define POSEMB_MODEL_IMPL_H

#include <cjson/cJSON.h>

#include "posemb/attention.h"
#include "posemb/model.h"
#include "model/model_internal.h"

/* The sizes every architecture's config.json may say (config.c, config_llama.c,
 * config_neox.c): one limit per quantity, whichever architecture reads it.
 * Positions go to 2^24 (a Llama 3.1's 131072 and beyond; tables are refused
 * past their rows at run time, not here). */
enum {
    CONFIG_MAX_VOCAB = 1 << 24,
    CONFIG_MAX_WIDTH = 1 << 16,
    CONFIG_MAX_INTERMEDIATE = 1 << 20,
    CONFIG_MAX_POSITIONS = 1 << 24,
    CONFIG_MAX_LAYERS = 1024,
    CONFIG_MAX_HEADS = 1024,
};

/* config.json readers (config.c): absent or null keys leave *out as it is. */
posemb_status config_get_int(const cJSON *root, const char *key, int lo, int hi, int *out, const char *path,
                             posemb_error *err);
posemb_status config_get_float(const cJSON *root, const char *key, double lo, double hi, float *out, const char *path,
                               posemb_error *err);
const char *config_get_string(const cJSON *root, const char *key);
/* A true/false key into *out (0 or 1); absent or null leaves it, anything else is EFORMAT. */
posemb_status config_get_bool(const cJSON *r, const char *key, int *out, const char *path, posemb_error *err);
/* The keys BERT's, RoBERTa's, the Llama family's and GPT-NeoX's config.json
 * share: vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 * intermediate_size, max_position_embeddings, each within its CONFIG_MAX_. */
posemb_status config_get_sizes(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
/* And written, in that order. */
void config_sizes_json(cJSON *r, const posemb_config *c);
/* Reads path (at most max_bytes) and parses it: *root NULL when it is not
 * JSON, for the caller to say what it expected; EIO from the read. */
posemb_status config_read_json(const char *path, size_t max_bytes, cJSON **root, posemb_error *err);
/* The shortest decimal that reads back as the same float (1e-12, not 9.99999996e-13). */
double config_shortest(float x);
/* posemb_config_check without building the PE (which posemb_model_create builds anyway). */
posemb_status config_check_sizes(const posemb_config *c, posemb_error *err);
/* The dims c's PE is built for. */
posemb_pe_dims config_pe_dims(const posemb_config *c);
/* The Llama family's config.json (config_llama.c): read into c (defaults set
 * by the caller), and written. */
posemb_status config_parse_llama(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
cJSON *config_llama_json(const posemb_config *c);
/* config_llama.c's RoPE keys, shared with GPT-NeoX (neox: rotary_emb_base and
 * rotary_pct, a partial block with any scaling): c->pe from r's keys; and back,
 * c->pe as HF's keys (1: base only, 2: rs holds rope_scaling, 0: HF cannot say
 * it), rope_scaling in the form transformers before 4.43 read. */
posemb_status config_rope_spec(const cJSON *r, posemb_config *c, int neox, const char *path, posemb_error *err);
int config_rope_as_hf(const char *spec, double *base, double *frac, cJSON *rs);
void config_legacy_scaling(cJSON *rs, int max_position);
/* Qwen2-VL's and Qwen3-VL's text decoders: 2 or 3 for their model_type, else 0 (config_fields.c); their
 * rope_scaling's mrope_section appended to c->pe after config_rope_spec, and written back into r (config_mrope.c). */
int config_vl_text(const posemb_config *c);
posemb_status config_mrope_spec(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_mrope_json(cJSON *r, const posemb_config *c);
/* The Llama family's sliding windows (config_window.c): read from r into c
 * (c->layers and c->model_type set), and written into r. */
posemb_status config_parse_windows(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_windows_json(cJSON *r, const posemb_config *c);
/* HF's layer_types: bit l of bits set where it says kind ("sliding_attention", "chunked_attention"); every other
 * entry must be "full_attention". */
posemb_status config_layer_types(const cJSON *types, const posemb_config *c, const char *kind, unsigned char *bits,
                                 const char *path, posemb_error *err);
/* Gemma 3's (config_gemma.c): read after the Llama family's keys, and patched into config_llama_json's. */
posemb_status config_parse_gemma(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_gemma_json(cJSON *r, const posemb_config *c);
/* Bit l of a per-layer bit set (sliding_layers, chunked_layers, rope_layers). */
static inline int config_bit(const unsigned char *bits, int l) { return bits[l / 8] >> (l % 8) & 1; }
static inline void config_set_bit(unsigned char *bits, int l) { bits[l / 8] |= (unsigned char)(1u << (l % 8)); }

/* Llama 4's text config (config_llama4.c): read after the Llama family's keys, and patched into
 * config_llama_json's. 1 when layer l's q and k heads are normalised without weight. */
posemb_status config_parse_llama4(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_llama4_json(cJSON *r, const posemb_config *c);
int config_qk_unit_norm(const posemb_config *c, int l);
int config_any_qk_unit_norm(const posemb_config *c);
/* Removes option key (",key=value", or ":key=value" when it is the first) from a PE spec in place: 1 when it
 * was there with that value (NULL: any), 0 when absent or another value (still removed). It searches the whole
 * string, so callers pass one component (no '+'); a value ends at ',' or '+', so one written with an exponent's
 * '+' is cut short and not matched: the caller then keeps posemb_pe, never a wrong HF key. */
int config_take_opt(char *spec, const char *key, const char *value);
/* config.json gets posemb_pe, c's exact PE, where the HF keys written cannot say it. */
void config_put_posemb_pe(cJSON *r, const posemb_config *c);
/* "pad_token_id": null when c has none: SmolLM3Config's and Llama4TextConfig's defaults (128004, 200018)
 * would otherwise name a padding token, past a small vocabulary's end. */
void config_put_no_pad(cJSON *r, const posemb_config *c);
/* no_rope_layers (1 where a layer rotates; absent or []: every no_rope_layer_interval-th layer, default 4,
 * is NoPE) into c->rope_layers; and a layer bit set as a layers= list ("0-2|4"; "" when no layer), the
 * layers whose bit is (want 1) or is not (want 0) set. Llama 4's and SmolLM3's. */
posemb_status config_rope_layers(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_layer_list(const unsigned char *bits, int n, int want, char *buf, size_t cap);
/* Writes a RoPE HF can say into r: rope_theta base, rope_scaling rs when it holds keys (rs is taken over), and
 * drops posemb_pe. */
void config_put_rope(cJSON *r, const posemb_config *c, double base, cJSON *rs);
/* SmolLM3's (config_smollm3.c): read after the Llama family's keys, and patched into config_llama_json's. */
posemb_status config_parse_smollm3(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
void config_smollm3_json(cJSON *r, const posemb_config *c);
/* GPT-NeoX's config.json (config_neox.c). */
posemb_status config_parse_neox(const cJSON *r, posemb_config *c, const char *path, posemb_error *err);
cJSON *config_neox_json(const posemb_config *c);
/* hidden_act / activation_function: gelu, gelu_new, gelu_pytorch_tanh (config.c). */
posemb_status config_parse_act(const char *act, posemb_nn_gelu_kind *out, const char *path, posemb_error *err);

/* longrope's factors (config_factors.c): copies the file a spec's factors=
 * names into root's "rope_scaling" and writes the spec, now saying
 * factors=config.json, to out; a spec without factors= is copied as is. */
posemb_status config_embed_factors(const char *spec, cJSON *root, char *out, size_t cap, const char *path,
                                   posemb_error *err);
/* Makes a relative factors= path of c->pe relative to the folder of path. */
posemb_status config_resolve_factors(posemb_config *c, const char *path, posemb_error *err);

/* Activations of one layer, [N = B*T rows]. Post-LN encoders keep
 * r1 = x + attn, h1 = LN1(r1), r2 = h1 + ffn; decoders (pre-LN) keep
 * a = LN1(x), r1 = x + attn, h1 = LN2(r1), as pre-LN encoders do. */
typedef struct layer_acts {
    float *a, *qkv, *probs, *z, *r1, *h1, *fi, *ga, *r2;
    float *mean1, *rstd1, *mean2, *rstd2;
    float *qk_raw, *qk_rstd; /* Qwen3: q and k before their norms [N, (H + KV) d], the norms' scales [N, H + KV] */
    float *ffo; /* Gemma 3: the MLP's output before its norm [N, D] (the attention's before its norm: r2; the two
                   norms' 1/rms: mean1, mean2) */
} layer_acts;

/* Views of the head's parameters (those it has). */
typedef struct head_params {
    float *dense_w, *dense_b, *ln_w, *ln_b; /* MLM transform; RoBERTa classifier.dense */
    float *bias;                            /* MLM output bias [V] */
    float *out_w, *out_b;                   /* classifier / classifier.out_proj / qa_outputs */
} head_params;

typedef struct model_acts {
    float *emb_sum, *emb; /* word (+ type) embeddings; after the PE's input hook */
    float *emb_mean, *emb_rstd;
    float **h;                     /* [layers + 1] hidden states: h[0] the embedding output, h[l+1] layer l's output */
    float *hf, *hf_mean, *hf_rstd; /* GPT-2: ln_f(h[layers]) */
    float *pooled, *pool_in;       /* BERT: [B, D] */
    layer_acts *layer;
    int32_t *pos_in, *pos_attn; /* [N] positions for the input hook and for attention */
    int32_t *pos_axes;          /* [POSEMB_PE_AXES, N] the batch's multi-axis positions (M-RoPE), when has_axes */
    int has_axes;
    int32_t *ids, *types; /* [N] copies of the batch */
    float *mask;          /* [N] */
    /* the head: selected rows and targets, their activations and gradients */
    int32_t *rows, *tgt;
    float *hx, *ht, *hg, *hu, *hmean, *hrstd, *dhx, *dht, *dhg, *dhu, *dlast, *logits, *lm_scratch;
    int lm_chunk; /* rows of lm_scratch [lm_chunk, vocab] */
    /* backward scratch */
    float *dx, *dx2, *dres, *dh, *dz, *dqkv, *dfi, *dga, *demb, *attn_scratch, *pe_scratch;
    float *pe_layer_scratch; /* the layer-input hook's state, kept from forward to backward */
    float *qkv_hf;           /* GPT-NeoX: query_key_value's output (and gradient) in HF's per-head order [N, 3D] */
    float *norm_w1;          /* Gemma 3: 1 + w of the norm being applied, two slots of max(D, head_dim) */
} model_acts;

struct posemb_model {
    posemb_config cfg;
    posemb_pe *pe;
    posemb_matmul *mm; /* the caller's product context (posemb_model_set_matmul); NULL: fp32 */
    int n_params, cap_params, reg_next, oom, reg_head;
    posemb_param *params;
    size_t n_floats, pe_offset;
    float *w, *g;
    /* views into w */
    float *wte, *wtype, *emb_ln_w, *emb_ln_b, *lnf_w, *lnf_b, *pool_w, *pool_b;
    float *lm_w; /* the LM heads' output matrix [V, D]: wte (tied), or the causal LM's own lm_head */
    posemb_layer_params *L;
    head_params hp;
    /* activations for batches up to cap_B x cap_T */
    posemb_arena arena;
    int cap_B, cap_T, B, T, has_pooled;
    model_acts a;
    int train;                  /* dropout on */
    int inference, acts_shared; /* inference mode; the last forward ran in shared layer buffers */
    uint64_t seed, step;
};

/* Dropout sites: the embeddings, then per layer the attention probabilities,
 * the attention output and the feed-forward output. */
enum { SITE_EMB = 0, SITE_PROBS = 1, SITE_ATTN_OUT = 2, SITE_FFN_OUT = 3 };
/* The dropout rate and key of a site of layer l (rate 0 in eval mode). */
float model_dropout(const posemb_model *m, int l, int site, uint64_t *key);
/* dy itself without dropout; else d/d(input) of the site's dropout, in tmp. */
const float *model_undrop(const posemb_model *m, int l, int site, const float *dy, float *tmp, long n);

/* The Llama family (llama.c). */
void llama_forward(posemb_model *m);
void llama_backward(posemb_model *m, const float *dlast);
/* The weight an RMSNorm of n applies: w, or for Gemma 3 1 + w (in scratch slot 0 or 1, valid until the next
 * call for that slot); its gradient is w's either way. */
const float *model_norm_weight(posemb_model *m, const float *w, int n, int slot);
/* q.k's scale: query_pre_attn_scalar^-1/2 when the config sets it, else head_dim^-1/2. */
float model_attn_scale(const posemb_config *c);
/* GPT-NeoX (neox.c); and its fused product's reorder, [N, H, 3, d] (HF's) to [N, 3, H, d]. */
void neox_forward(posemb_model *m);
void neox_backward(posemb_model *m, const float *dlast);
void neox_qkv_from_hf(float *out, const float *in, int N, int H, int d);
/* 1 for the causal architectures (GPT-2, Llama, GPT-NeoX). */
static inline int model_is_decoder(const posemb_model *m)
{
    return m->cfg.arch == POSEMB_GPT2 || m->cfg.arch == POSEMB_LLAMA || m->cfg.arch == POSEMB_NEOX;
}

/* A norm after the last layer (a->hf, lnf_w): every decoder's, and a pre-LN encoder's. */
static inline int model_has_final_norm(const posemb_model *m) { return model_is_decoder(m) || m->cfg.pre_ln; }

/* How the linear layers hold their weights: GPT-2's Conv1D [in, out], everyone else's [out, in]. */
static inline posemb_nn_wlayout model_wlayout(const posemb_model *m)
{
    return m->cfg.arch == POSEMB_GPT2 ? POSEMB_NN_W_IN_OUT : POSEMB_NN_W_OUT_IN;
}

/* Key/value heads: a Llama's kv_heads (grouped-query attention), else one per query head. */
static inline int model_kv_heads(const posemb_config *c) { return c->arch == POSEMB_LLAMA ? c->kv_heads : c->heads; }

/* Width of a token's fused q, k, v row: H query heads, then the key and the
 * value heads, each head_dim wide (3 D for BERT and GPT-2). */
static inline int model_qkv_width(const posemb_config *c)
{
    return (c->heads + 2 * model_kv_heads(c)) * posemb_config_head_dim(c);
}

/* Registration pass (m->w NULL): appends a parameter; view pass: returns its data. */
float *model_param(posemb_model *m, const char *name, int64_t rows, int64_t cols, int decay, int unused);
/* Lays out every parameter of the architecture (both passes). */
posemb_status model_layout(posemb_model *m, posemb_error *err);
/* Sizes the activation arena for B x T (reallocating only when it grows). */
posemb_status model_reserve(posemb_model *m, int B, int T, posemb_error *err);

/* Layer l's attention shape: causal for GPT-2, its dropout in training mode. */
posemb_nn_attn_shape model_attn_shape(const posemb_model *m, int l);
/* Layer l's activation buffers: its own, or in an inference pass the first layer's. */
layer_acts *model_layer_acts(posemb_model *m, int l);
/* Where layer a's attention keeps its probabilities: a->probs, or NULL in an
 * inference pass, which keeps none (posemb_model_attention answers NULL then). */
static inline float *model_probs_out(const posemb_model *m, layer_acts *a) { return m->acts_shared ? NULL : a->probs; }
/* y [n] = dropout(y), in place, at a dropout site of layer l (none in eval mode). */
void model_drop(const posemb_model *m, int l, int site, float *y, long n);
/* y [n] = dropout(y) + x: a residual branch at a dropout site of layer l. */
void model_drop_add(const posemb_model *m, int l, int site, float *y, const float *x, long n);

/* "bert.", "roberta." or "transformer." when the model has a head, else "". */
const char *model_base_prefix(const posemb_model *m);
/* Rows of logits the LM heads compute at once: about LM_CHUNK_FLOATS logits
 * (32 MB), at least 64 rows, at most the batch. Each chunk's backward reads and
 * writes the whole [V, D] head gradient, so few large chunks beat many small
 * ones (bench/README.md, "The LM head's chunk"): at V = 32000, 262 rows. */
#define LM_CHUNK_FLOATS (1 << 23)
int model_lm_chunk(int vocab, size_t rows);

void encoder_forward(posemb_model *m);
void encoder_backward(posemb_model *m, const float *dlast);
void decoder_forward(posemb_model *m);
/* The pre-LayerNorm block with LayerNorms, biases and a GELU MLP (decoder.c), x [N, D] -> out [N, D]:
 * GPT-2's layer, and the pre-LN encoder's (causal or not as the architecture's attention is). */
void preln_block_forward(posemb_model *m, int l, const float *x, float *out);
void preln_block_backward(posemb_model *m, int l, const float *x, const float *dout, float *dx);
/* Shared by the decoders (decoder.c): h0 = E[ids] (+ the PE's input hook), dropout; */
void decoder_embed(posemb_model *m);
/* the layers' backward passes from dout (the last layer's output gradient)
 * to d h0, through layer_backward, alternating a->dx and a->dx2; */
typedef void (*decoder_layer_backward_fn)(posemb_model *m, int l, const float *x, const float *dout, float *dx);
const float *decoder_layers_backward(posemb_model *m, decoder_layer_backward_fn backward_layer, float *dout);
/* and d h0 back to the embeddings (rows of skip_id, HF's padding_idx, get none; -1: none). */
void decoder_embed_backward(posemb_model *m, const float *dout, int32_t skip_id);
void decoder_backward(posemb_model *m, const float *dlast);
/* GPT-2's and GPT-NeoX's GELU MLP backward, dffn (the gradient of its output) -> s->dh (of its input h1). */
void decoder_mlp_backward(posemb_model *m, int l, const float *dffn, posemb_nn_wlayout layout);
/* The pre-LayerNorm decoders' whole pass (GPT-2's, GPT-NeoX's) around their own
 * block: embed, the layers, LN_f; and back. */
typedef void (*decoder_layer_forward_fn)(posemb_model *m, int l, const float *x, float *out);
void decoder_forward_with(posemb_model *m, decoder_layer_forward_fn forward_layer);
void decoder_backward_with(posemb_model *m, decoder_layer_backward_fn backward_layer, const float *dlast);

#endif
