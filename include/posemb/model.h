/* Transformer models: BERT/RoBERTa-style encoders (post-LayerNorm) and
 * GPT-2-style decoders (pre-LayerNorm, causal), with any PE plugged in
 * through its hooks. Parameters live in one contiguous block (gradients in
 * another of the same layout) described by a table of Hugging Face tensor
 * names, so checkpoints load and save by name and the optimizer sees one
 * flat vector. Activations live in one arena sized from (batch, length). */
#ifndef POSEMB_MODEL_H
#define POSEMB_MODEL_H

#include "posemb/api.h"

#include <stddef.h>
#include <stdint.h>

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/nn.h"
#include "posemb/pe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LLAMA: the Llama-family decoder (pre-RMSNorm, SwiGLU, grouped-query
 * attention, RoPE from the config), also Mistral's and Qwen2's. NEOX:
 * GPT-NeoX (Pythia): pre-LayerNorm, GELU, per-head fused q/k/v, parallel or
 * serial residual, rotary on the first rotary_pct of each head. */
typedef enum posemb_arch {
    POSEMB_BERT = 0,
    POSEMB_ROBERTA = 1,
    POSEMB_GPT2 = 2,
    POSEMB_LLAMA = 3,
    POSEMB_NEOX = 4
} posemb_arch;

/* What sits on top of the encoder or decoder. */
typedef enum posemb_head {
    POSEMB_HEAD_NONE = 0, /* BertModel, RobertaModel, GPT2Model */
    POSEMB_HEAD_MLM,      /* *ForMaskedLM (and BertForPreTraining's MLM part): decoder tied to the word embeddings */
    POSEMB_HEAD_CLM,      /* GPT2LMHeadModel, *ForCausalLM: tied unless tie_embeddings is 0, no bias */
    POSEMB_HEAD_CLASSIFY, /* *ForSequenceClassification with num_labels >= 2 */
    POSEMB_HEAD_REGRESS,  /* *ForSequenceClassification with num_labels 1 (problem_type regression) */
    POSEMB_HEAD_SPAN,     /* *ForQuestionAnswering: start and end logits per token */
} posemb_head;

typedef struct posemb_config {
    posemb_arch arch;
    posemb_head head;
    int num_labels; /* classification */
    int vocab_size, hidden, layers, heads, intermediate;
    int max_position; /* rows of an APE table (RoBERTa: 514 for 512 tokens) */
    int type_vocab;   /* token types (0 for GPT-2) */
    int pad_token_id; /* BERT 0, RoBERTa 1, GPT-2 -1 (none) */
    float ln_eps, initializer_range;
    float hidden_dropout, attn_dropout;
    posemb_nn_gelu_kind act;
    /* tie_embeddings: the causal LM head is the word embeddings (tie_word_embeddings: GPT-2's default,
     * not Llama's); Llama family: key/value heads (GQA), HF model_type; biases: on q, k, v
     * (Qwen2, Llama's attention_bias), on o_proj (Llama's attention_bias), on the MLP (mlp_bias) */
    int kv_heads, tie_embeddings, attn_bias, attn_out_bias, mlp_bias;
    int head_dim;          /* Llama family: per-head width when not hidden / heads (Mistral-Nemo); 0: hidden / heads */
    int qk_norm;           /* Qwen3: each query and key head RMS-normalised (q_norm, k_norm [head_dim]) before the PE */
    int parallel_residual; /* GPT-NeoX's use_parallel_residual: x + attn(LN1(x)) + mlp(LN2(x)) */
    /* Encoders: LayerNorm before each sublayer (x + attn(LN1(x)), then + ffn(LN2(.))) and once after the
     * last layer, as HF's model_type roberta-prelayernorm; with BERT a posemb-only layout ("posemb_pre_ln") */
    int pre_ln;
    /* Llama family: layers whose attention slides (bit l of sliding_layers: HF's layer_types
     * "sliding_attention", Mistral's every layer, Qwen2's from max_window_layers on), each query
     * seeing its sliding_window latest tokens; no bit set (or sliding_window 0): full attention */
    int sliding_window;
    unsigned char sliding_layers[128];
    /* Gemma 3's block (model_type gemma3_text): RMSNorms scale by 1 + w, a norm after attention and
     * after the MLP besides the two before them, embeddings times sqrt(hidden), GeGLU (tanh GELU),
     * attention scaled by query_pre_attn_scalar^-1/2 (0: head_dim^-1/2, every architecture) */
    int gemma;
    float query_pre_attn_scalar;
    /* Llama 4's text decoder (model_type llama4_text, dense layers only): chunked attention on the
     * layers of chunked_layers (bit l; HF's "chunked_attention"), each query seeing the keys of its own
     * attention_chunk tokens; rope_layers (bit l: HF's no_rope_layers[l] = 1) the layers that rotate,
     * whose q and k heads are RMS-normalised without a weight (its "L2Norm") when qk_unit_norm */
    int llama4, attention_chunk, qk_unit_norm;
    unsigned char chunked_layers[128], rope_layers[128];
    char model_type[16];
    char pe[512];          /* PE spec: "ape", "relative_key", "rpe:k=64", ... */
    char architecture[64]; /* HF class written to config.json ("BertModel", "GPT2LMHeadModel", ...) */
} posemb_config;

/* Defaults of HF's BertConfig, RobertaConfig or GPT2Config (base size), no head. */
POSEMB_API void posemb_config_defaults(posemb_config *c, posemb_arch arch);
/* Sets the head (and label count) and the HF class name that goes with it;
 * EINVAL for combinations HF does not have (GPT-2 with a classifier). */
POSEMB_API posemb_status posemb_config_set_head(posemb_config *c, posemb_head head, int num_labels, posemb_error *err);

/* Reads a Hugging Face config.json (model_type bert, roberta,
 * roberta-prelayernorm, gpt2, gpt_neox or the Llama family's; the PE from
 * position_embedding_type, or posemb's own "posemb_pe" key). EIO,
 * EFORMAT naming the file and the key, ENOMEM; c may be partly filled on
 * failure. */
POSEMB_API posemb_status posemb_config_load(posemb_config *c, const char *path, posemb_error *err);
/* Writes config.json in HF's layout (plus "posemb_pe" when HF lacks the PE),
 * whole or not at all (EIO with the path, ENOMEM). */
POSEMB_API posemb_status posemb_config_save(const posemb_config *c, const char *path, posemb_error *err);

/* One parameter tensor of the model, by its HF name. */
typedef struct posemb_param {
    char name[128];
    int ndim;
    int64_t shape[2];
    size_t numel, offset; /* floats, in the parameter block */
    int decay;            /* AdamW weight decay applies (not biases, LayerNorm) */
    int unused;           /* kept for HF compatibility, not read by the forward pass */
    int head;             /* belongs to the head: its name carries no base prefix */
} posemb_param;

/* Views of one layer's parameters. Encoders store nn.Linear weights [out, in],
 * GPT-2 stores Conv1D weights [in, out]; q, k, v are adjacent, so qkv_w is one
 * fused [3D, D] (or [D, 3D]) matrix and qkv_b one [3D] vector. */
typedef struct posemb_layer_params {
    float *qkv_w, *qkv_b, *ao_w, *ao_b; /* attention and its output projection */
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    float *fi_w, *fi_b, *fo_w, *fo_b; /* feed-forward in and out */
    float *qn_w, *kn_w;               /* Qwen3: the query and key heads' RMSNorm weights [head_dim] */
    float *pa_w, *pf_w;               /* Gemma 3: the norms after attention and after the MLP */
} posemb_layer_params;

typedef struct posemb_model posemb_model;

/* Builds a model for cfg with its PE; parameters zeroed (see
 * posemb_model_init). The caller owns *out and frees it with
 * posemb_model_free; on failure (EINVAL: a config posemb_config_check
 * refuses, or a bad PE spec; EIO or EFORMAT for a PE's factors file;
 * ENOMEM) *out is NULL. */
POSEMB_API posemb_status posemb_model_create(posemb_model **out, const posemb_config *cfg, posemb_error *err);
POSEMB_API void posemb_model_free(posemb_model *m);
/* Random initialisation as HF does (N(0, initializer_range), LayerNorm 1/0, biases 0) and the PE's own. */
POSEMB_API void posemb_model_init(posemb_model *m, uint64_t seed);

/* Views into the model, valid while it lives; the model owns them. */
POSEMB_API const posemb_config *posemb_model_config(const posemb_model *m);
POSEMB_API posemb_pe *posemb_model_pe(posemb_model *m);
/* The product context (posemb/precision.h) the model's dense layers use from
 * now on: borrowed, so the caller keeps it alive while the model runs and
 * frees it; NULL (the default) is fp32 through OpenBLAS. */
POSEMB_API void posemb_model_set_matmul(posemb_model *m, posemb_matmul *mm);
POSEMB_API int posemb_model_n_params(const posemb_model *m);
/* Parameter i (NULL unless 0 <= i < n_params), or the one called name (NULL when none is). */
POSEMB_API const posemb_param *posemb_model_param(const posemb_model *m, int i);
POSEMB_API const posemb_param *posemb_model_find(const posemb_model *m, const char *name);
POSEMB_API float *posemb_model_weights(posemb_model *m); /* the parameter block, owned by the model */
POSEMB_API float *posemb_model_grads(posemb_model *m);   /* the gradient block, same layout */
POSEMB_API size_t posemb_model_n_floats(const posemb_model *m);
POSEMB_API void posemb_model_zero_grad(posemb_model *m);

/* Loads a checkpoint folder (config.json + model.safetensors) or a
 * .safetensors file into a model built from its config. Names may carry a
 * head prefix (bert., roberta., transformer.); buffers such as
 * embeddings.position_ids and h.N.attn.bias are accepted; a tensor that does
 * not fit the config is refused with its name. The caller owns *out
 * (posemb_model_free); on failure (EIO, EFORMAT naming the file and the
 * tensor, EINVAL for a PE spec it refuses, ENOMEM) *out is NULL. */
POSEMB_API posemb_status posemb_model_load(posemb_model **out, const char *dir, posemb_error *err);
/* Fine-tuning and --init: reads dir/model.safetensors into a model built
 * from another config (a classifier from a masked-LM checkpoint, another PE
 * than the checkpoint's): tensors the checkpoint lacks keep their
 * initialisation (*missing counts them), tensors the model lacks are
 * ignored, a shape mismatch is still an error. Fails as
 * posemb_model_load_weights. */
POSEMB_API posemb_status posemb_model_init_from(posemb_model *m, const char *dir, int *missing, posemb_error *err);
/* Writes dir/config.json and dir/model.safetensors (atomically each: a
 * failure, EIO with the path, leaves no partial file). */
POSEMB_API posemb_status posemb_model_save(const posemb_model *m, const char *dir, posemb_error *err);

/* A batch: B sequences of T tokens. */
typedef struct posemb_batch {
    int B, T;
    const int32_t *ids;   /* [B, T] */
    const int32_t *types; /* [B, T] or NULL (all 0) */
    const float *mask;    /* [B, T] 1 token, 0 padding; NULL: all 1 */
    /* [B, T] Hugging Face's position_ids (packed documents restarting at 0, a continuation starting at an
     * offset), read by every PE that reads positions: APE rows (RoBERTa's from pad + 1, as HF's), rotary
     * angles, biases by distance; NULL: HF's default (0..T-1; RoBERTa's from the padding) */
    const int32_t *positions;
    /* [3, B, T] multi-axis position_ids (Qwen2-VL's temporal, height, width: HF's position_ids of shape
     * [3, B, T]) for a PE that reads them (M-RoPE, rope:mrope=), its rotation taking them in place of
     * positions; NULL: every axis is the token's position. Given to another PE: EINVAL. */
    const int32_t *axes;
} posemb_batch;

/* Runs the model; the activations stay in the model for backward and for
 * reading: hidden states (HF meaning: .0 the embedding output, .L the last
 * hidden state) and attention probabilities. A PE without a table of
 * positions runs at any length, past max_position_embeddings too, as HF's
 * do (posemb_pe_reserve). Fails on ids outside the vocabulary, positions
 * past a PE's table (an APE's max_position_embeddings rows) or negative, a
 * sequence longer than a PE's table, caller positions with randomized ones
 * (random:max=), or a batch past the arena (which grows to fit): EINVAL for
 * an empty batch, ERANGE naming the token, type, position or table, ENOMEM. */
POSEMB_API posemb_status posemb_model_forward(posemb_model *m, const posemb_batch *b, posemb_error *err);
/* hidden_states.i [B, T, D], i in 0..layers, of the last forward pass, as
 * HF's output_hidden_states gives them (the decoders' last after their final
 * norm, a pre-LN encoder's before it): owned by the model, valid until the
 * next forward. NULL before a forward pass, after a failed one, or for i out
 * of range. */
POSEMB_API const float *posemb_model_hidden(const posemb_model *m, int i);
/* last_hidden_state [B, T, D], what the heads read: hidden_states.layers,
 * or a pre-LN encoder's after its final LayerNorm. Same ownership; NULL
 * before a forward pass or after a failed one. */
POSEMB_API const float *posemb_model_last_hidden(const posemb_model *m);
/* attentions.l [B, H, T, T], as hidden_states (NULL for l out of range or after an inference-mode
 * forward, which keeps no probabilities). */
POSEMB_API const float *posemb_model_attention(const posemb_model *m, int l);
/* BERT/RoBERTa pooler_output [B, D] = tanh(dense(h[:, 0])); computed on
 * demand; NULL for a model without a pooler (GPT-2, a masked-LM model).
 * Owned by the model, valid until the next forward. */
POSEMB_API const float *posemb_model_pooled(posemb_model *m);

/* What the head is trained on; fields the head does not use may be NULL. */
typedef struct posemb_targets {
    const int32_t *tokens;        /* [B, T] MLM: the original token at masked positions, -100 elsewhere;
                                     CLM: labels as in HF (usually the ids), shifted inside, -100 ignored */
    const int32_t *labels;        /* [B] classification */
    const float *values;          /* [B] regression */
    const int32_t *starts, *ends; /* [B] span start and end token, HF's clamping to [0, T] (T: ignored) */
} posemb_targets;

typedef struct posemb_loss {
    double loss;  /* the mean loss, as HF reports it */
    long count;   /* rows it averages over (tokens, sequences) */
    long correct; /* argmax hits (LM tokens, classes; span: starts and ends both right) */
} posemb_loss;

/* The head's loss on the last forward batch. With grad_scale != 0, also the
 * gradient of grad_scale * loss through the head and the whole model
 * (accumulated into the gradient block). EINVAL without a forward pass,
 * without the targets the head needs, or for gradients after an inference
 * pass; ERANGE for a target outside its range (named). *out is zeroed on
 * failure. */
POSEMB_API posemb_status posemb_model_loss(posemb_model *m, const posemb_targets *t, float grad_scale, posemb_loss *out,
                                           posemb_error *err);
/* The head's outputs on the last forward batch: classification logits
 * [B, num_labels], regression [B], span logits [B, T, 2] (start, end);
 * owned by the model, valid until the next forward. NULL with EINVAL
 * without a forward pass or for a language-model head. */
POSEMB_API const float *posemb_model_head_logits(posemb_model *m, posemb_error *err);

/* The language-model head's logits on the last forward batch, every token:
 * out [B, T, vocab_size], caller-allocated. EINVAL without a forward pass or
 * for a model without an MLM or CLM head. */
POSEMB_API posemb_status posemb_model_lm_logits(posemb_model *m, float *out, posemb_error *err);

/* Training mode turns dropout on, its decisions keyed by (seed, step) so
 * that a resumed run drops exactly what an uninterrupted one would; eval
 * mode (the default) turns it off. */
POSEMB_API void posemb_model_set_train(posemb_model *m, int train, uint64_t seed, uint64_t step);

/* Inference passes (as torch.inference_mode): with on = 1, forward runs
 * every layer in the first layer's buffers, so a pass holds one layer's
 * activations instead of all of them (BERT-base, 8 x 128 tokens: 53 MB
 * instead of 640). The hidden states and the head's outputs are kept;
 * attention probabilities (posemb_model_attention: NULL) and backward are
 * not, until a forward pass with on = 0. */
POSEMB_API void posemb_model_set_inference(posemb_model *m, int on);

/* Backward from d loss / d last_hidden_state [B, T, D] through the whole
 * model, accumulating parameter gradients. Requires the forward's batch,
 * from a pass that was not an inference pass. */
POSEMB_API void posemb_model_backward(posemb_model *m, const float *dlast);

#ifdef __cplusplus
}
#endif
#endif
