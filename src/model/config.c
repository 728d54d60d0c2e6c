/* Hugging Face config.json for BERT, RoBERTa and GPT-2. HF writes only the
 * keys that differ from its class defaults, so absent keys take those
 * defaults. Options posemb does not implement are refused, not ignored. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "posemb/model.h"

#include "model_impl.h"
#include "model/model_internal.h"

void posemb_config_defaults(posemb_config *c, posemb_arch arch)
{
    memset(c, 0, sizeof *c);
    c->arch = arch;
    c->initializer_range = 0.02f;
    c->hidden_dropout = c->attn_dropout = 0.1f;
    c->layers = c->heads = 12;
    c->hidden = 768;
    snprintf(c->pe, sizeof c->pe, "ape");
    if (arch == POSEMB_LLAMA) { /* HF's LlamaConfig, Llama 2 7B sizes */
        c->vocab_size = 32000;
        c->hidden = 4096;
        c->layers = c->heads = c->kv_heads = 32;
        c->intermediate = 11008;
        c->max_position = 2048;
        c->pad_token_id = -1;
        c->ln_eps = 1e-6f;
        c->hidden_dropout = c->attn_dropout = 0.0f;
        snprintf(c->model_type, sizeof c->model_type, "llama");
        snprintf(c->pe, sizeof c->pe, "rope");
        snprintf(c->architecture, sizeof c->architecture, "LlamaModel");
        return;
    }
    if (arch == POSEMB_NEOX) { /* HF's GPTNeoXConfig, GPT-NeoX-20B sizes */
        c->vocab_size = 50432;
        c->hidden = 6144;
        c->layers = 44;
        c->heads = 64;
        c->intermediate = 24576;
        c->max_position = 2048;
        c->pad_token_id = -1;
        c->ln_eps = 1e-5f;
        c->hidden_dropout = c->attn_dropout = 0.0f;
        c->act = POSEMB_NN_GELU_ERF;
        c->parallel_residual = c->attn_bias = c->attn_out_bias = 1;
        snprintf(c->model_type, sizeof c->model_type, "gpt_neox");
        snprintf(c->pe, sizeof c->pe, "rope:frac=0.25");
        snprintf(c->architecture, sizeof c->architecture, "GPTNeoXModel");
        return;
    }
    if (arch == POSEMB_GPT2) {
        c->vocab_size = 50257;
        c->max_position = 1024;
        c->intermediate = 4 * 768;
        c->pad_token_id = -1;
        c->ln_eps = 1e-5f;
        c->act = POSEMB_NN_GELU_TANH;
        c->tie_embeddings = 1; /* GPT2LMHeadModel's lm_head is wte unless tie_word_embeddings is false */
        snprintf(c->architecture, sizeof c->architecture, "GPT2Model");
        return;
    }
    c->vocab_size = 30522;
    c->max_position = 512;
    c->intermediate = 3072;
    c->type_vocab = 2;
    c->pad_token_id = arch == POSEMB_ROBERTA ? 1 : 0;
    c->ln_eps = 1e-12f;
    c->act = POSEMB_NN_GELU_ERF;
    snprintf(c->architecture, sizeof c->architecture, arch == POSEMB_ROBERTA ? "RobertaModel" : "BertModel");
}

static posemb_status parse_pe(const cJSON *root, posemb_config *c, const char *path, posemb_error *err)
{
    const char *own = config_get_string(root, "posemb_pe"), *hf = config_get_string(root, "position_embedding_type");
    if (own) snprintf(c->pe, sizeof c->pe, "%s", own);
    else if (!hf || !strcmp(hf, "absolute")) snprintf(c->pe, sizeof c->pe, "ape");
    else if (!strcmp(hf, "relative_key") || !strcmp(hf, "relative_key_query")) snprintf(c->pe, sizeof c->pe, "%s", hf);
    else return posemb_fail(err, POSEMB_EFORMAT, "%s: position_embedding_type \"%s\" is not supported", path, hf);
    return POSEMB_OK;
}

static posemb_status parse_encoder(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    if ((st = config_get_sizes(r, c, path, err)) ||
        (st = config_get_int(r, "type_vocab_size", 0, 1 << 16, &c->type_vocab, path, err)) ||
        (st = config_get_int(r, "pad_token_id", -1, CONFIG_MAX_VOCAB, &c->pad_token_id, path, err)) ||
        (st = config_get_float(r, "layer_norm_eps", 0, 1, &c->ln_eps, path, err)) ||
        (st = config_get_float(r, "initializer_range", 0, 10, &c->initializer_range, path, err)) ||
        (st = config_get_float(r, "hidden_dropout_prob", 0, 1, &c->hidden_dropout, path, err)) ||
        (st = config_get_float(r, "attention_probs_dropout_prob", 0, 1, &c->attn_dropout, path, err)))
        return st;
    if ((st = config_parse_act(config_get_string(r, "hidden_act"), &c->act, path, err))) return st;
    /* BERT with pre-LN layers is posemb's own; RoBERTa's says so by its model_type */
    const cJSON *own_ln = cJSON_GetObjectItemCaseSensitive(r, "posemb_pre_ln");
    if (own_ln && c->arch != POSEMB_BERT)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: \"posemb_pre_ln\" is for model_type bert (RoBERTa's is "
                           "model_type roberta-prelayernorm)",
                           path);
    if ((st = config_get_bool(r, "posemb_pre_ln", &c->pre_ln, path, err))) return st;
    return parse_pe(r, c, path, err);
}

static posemb_status refuse_true(const cJSON *r, const char *key, const char *path, posemb_error *err)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, key))
               ? posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\": true is not supported", path, key)
               : POSEMB_OK;
}

static posemb_status parse_gpt2(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    int inner = 0;
    if ((st = config_get_int(r, "vocab_size", 1, CONFIG_MAX_VOCAB, &c->vocab_size, path, err)) ||
        (st = config_get_int(r, "n_embd", 1, CONFIG_MAX_WIDTH, &c->hidden, path, err)) ||
        (st = config_get_int(r, "n_layer", 1, CONFIG_MAX_LAYERS, &c->layers, path, err)) ||
        (st = config_get_int(r, "n_head", 1, CONFIG_MAX_HEADS, &c->heads, path, err)) ||
        (st = config_get_int(r, "n_inner", 1, CONFIG_MAX_INTERMEDIATE, &inner, path, err)) ||
        (st = config_get_int(r, "n_positions", 1, CONFIG_MAX_POSITIONS, &c->max_position, path, err)) ||
        (st = config_get_float(r, "layer_norm_epsilon", 0, 1, &c->ln_eps, path, err)) ||
        (st = config_get_float(r, "initializer_range", 0, 10, &c->initializer_range, path, err)) ||
        (st = config_get_float(r, "resid_pdrop", 0, 1, &c->hidden_dropout, path, err)) ||
        (st = config_get_float(r, "attn_pdrop", 0, 1, &c->attn_dropout, path, err)) ||
        (st = refuse_true(r, "scale_attn_by_inverse_layer_idx", path, err)) ||
        (st = refuse_true(r, "reorder_and_upcast_attn", path, err)))
        return st;
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(r, "scale_attn_weights");
    if (cJSON_IsFalse(scale))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"scale_attn_weights\": false is not supported", path);
    c->intermediate = inner ? inner : 4 * c->hidden;
    c->tie_embeddings = 1; /* GPT2Config's */
    if ((st = config_get_bool(r, "tie_word_embeddings", &c->tie_embeddings, path, err))) return st;
    if ((st = config_parse_act(config_get_string(r, "activation_function"), &c->act, path, err))) return st;
    const char *own = config_get_string(r, "posemb_pe");
    if (own) snprintf(c->pe, sizeof c->pe, "%s", own);
    return POSEMB_OK;
}

static const char *const ARCH_PREFIX[] = {"Bert", "Roberta", "GPT2", "Llama", "GPTNeoX"};

/* The HF class prefix: the architecture's, or for the Llama family its model_type's. */
static const char *arch_prefix(const posemb_config *c)
{
    if (c->arch == POSEMB_ROBERTA && c->pre_ln) return "RobertaPreLayerNorm";
    if (c->arch != POSEMB_LLAMA) return ARCH_PREFIX[c->arch];
    return !strcmp(c->model_type, "mistral")       ? "Mistral"
           : !strcmp(c->model_type, "qwen2")       ? "Qwen2"
           : !strcmp(c->model_type, "qwen3")       ? "Qwen3"
           : config_vl_text(c) == 2                ? "Qwen2VL"
           : config_vl_text(c) == 3                ? "Qwen3VL"
           : !strcmp(c->model_type, "gemma3_text") ? "Gemma3"
           : !strcmp(c->model_type, "llama4_text") ? "Llama4"
           : !strcmp(c->model_type, "smollm3")     ? "SmolLM3"
                                                   : "Llama";
}
/* HF's base class of a multimodal family's text decoder is *TextModel (its *Model is the multimodal one). */
static int text_model(const posemb_config *c)
{
    return !strcmp(c->model_type, "gemma3_text") || !strcmp(c->model_type, "llama4_text") || config_vl_text(c);
}

static const char *const HEAD_SUFFIX[] = {"Model",
                                          "ForMaskedLM",
                                          "LMHeadModel",
                                          "ForSequenceClassification",
                                          "ForSequenceClassification",
                                          "ForQuestionAnswering"};

posemb_status posemb_config_set_head(posemb_config *c, posemb_head head, int num_labels, posemb_error *err)
{
    int dec = c->arch == POSEMB_GPT2 || c->arch == POSEMB_LLAMA || c->arch == POSEMB_NEOX;
    if (dec ? (head != POSEMB_HEAD_NONE && head != POSEMB_HEAD_CLM) : head == POSEMB_HEAD_CLM)
        return posemb_fail(err, POSEMB_EINVAL, "%s models have no %s head", arch_prefix(c), HEAD_SUFFIX[head]);
    if (head == POSEMB_HEAD_CLASSIFY && num_labels < 2)
        return posemb_fail(err, POSEMB_EINVAL, "classification needs >= 2 labels, got %d", num_labels);
    c->head = head;
    c->num_labels = head == POSEMB_HEAD_CLASSIFY ? num_labels : head == POSEMB_HEAD_REGRESS ? 1 : 0;
    snprintf(c->architecture, sizeof c->architecture, "%s%s", arch_prefix(c),
             c->arch != POSEMB_GPT2 && head == POSEMB_HEAD_CLM ? "ForCausalLM"
             : text_model(c) && head == POSEMB_HEAD_NONE ? "TextModel" /* HF's Gemma3Model is the multimodal one */
                                                         : HEAD_SUFFIX[head]);
    return POSEMB_OK;
}

/* The head from HF's class name and label settings. */
static posemb_status parse_head(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    const char *arch = c->architecture, *pre = arch_prefix(c);
    size_t n = strlen(pre);
    if (strncmp(arch, pre, n))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: architecture %s does not match model_type", path, arch);
    const char *suffix = arch + n;
    posemb_head head = POSEMB_HEAD_NONE;
    if (!strcmp(suffix, "ForMaskedLM") || !strcmp(suffix, "ForPreTraining")) head = POSEMB_HEAD_MLM;
    else if (!strcmp(suffix, c->arch == POSEMB_GPT2 ? "LMHeadModel" : "ForCausalLM")) head = POSEMB_HEAD_CLM;
    else if (!strcmp(suffix, "ForSequenceClassification")) head = POSEMB_HEAD_CLASSIFY;
    else if (!strcmp(suffix, "ForQuestionAnswering")) head = POSEMB_HEAD_SPAN;
    else if (strcmp(suffix, text_model(c) ? "TextModel" : "Model"))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: architecture %s is not supported", path, arch);
    int labels = 2;
    const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(r, "id2label");
    if (cJSON_IsObject(id2label)) labels = cJSON_GetArraySize(id2label);
    posemb_status st = config_get_int(r, "num_labels", 1, 1 << 20, &labels, path, err);
    const char *problem = config_get_string(r, "problem_type");
    if (!st && head == POSEMB_HEAD_CLASSIFY && (labels == 1 || (problem && !strcmp(problem, "regression"))))
        head = POSEMB_HEAD_REGRESS;
    if (!st) st = posemb_config_set_head(c, head, labels, err);
    return st;
}

static posemb_status parse_root(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    const char *type = config_get_string(r, "model_type");
    if (!type) return posemb_fail(err, POSEMB_EFORMAT, "%s: no \"model_type\" string", path);
    posemb_arch arch;
    if (!strcmp(type, "bert")) arch = POSEMB_BERT;
    else if (!strcmp(type, "roberta") || !strcmp(type, "roberta-prelayernorm")) arch = POSEMB_ROBERTA;
    else if (!strcmp(type, "gpt2")) arch = POSEMB_GPT2;
    else if (!strcmp(type, "llama") || !strcmp(type, "mistral") || !strcmp(type, "qwen2") || !strcmp(type, "qwen3") ||
             !strcmp(type, "qwen2_vl_text") || !strcmp(type, "qwen3_vl_text") || !strcmp(type, "gemma3_text") ||
             !strcmp(type, "llama4_text") || !strcmp(type, "smollm3"))
        arch = POSEMB_LLAMA;
    else if (!strcmp(type, "gpt_neox")) arch = POSEMB_NEOX;
    else
        return posemb_fail(
            err, POSEMB_EFORMAT,
            "%s: model_type \"%s\" is not supported (bert, roberta, roberta-prelayernorm, gpt2, llama, mistral, qwen2, "
            "qwen3, qwen2_vl_text, qwen3_vl_text, gemma3_text, llama4_text, smollm3, gpt_neox)",
            path, type);
    posemb_config_defaults(c, arch);
    if (arch == POSEMB_LLAMA) snprintf(c->model_type, sizeof c->model_type, "%s", type);
    c->pre_ln = !strcmp(type, "roberta-prelayernorm");
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(r, "architectures");
    if (cJSON_IsArray(archs) && cJSON_IsString(cJSON_GetArrayItem(archs, 0)))
        snprintf(c->architecture, sizeof c->architecture, "%s", cJSON_GetArrayItem(archs, 0)->valuestring);
    posemb_status st = arch == POSEMB_GPT2    ? parse_gpt2(r, c, path, err)
                       : arch == POSEMB_LLAMA ? config_parse_llama(r, c, path, err)
                       : arch == POSEMB_NEOX  ? config_parse_neox(r, c, path, err)
                                              : parse_encoder(r, c, path, err);
    if (!st) st = parse_head(r, c, path, err);
    if (!st) st = config_resolve_factors(c, path, err);
    if (st) return st;
    posemb_error check;
    if (posemb_config_check(c, &check)) return posemb_fail(err, POSEMB_EFORMAT, "%s: %s", path, check.msg);
    return POSEMB_OK;
}

posemb_status posemb_config_load(posemb_config *c, const char *path, posemb_error *err)
{
    cJSON *root;
    posemb_status rd = config_read_json(path, 1u << 20, &root, err);
    if (rd) return rd;
    posemb_status st = cJSON_IsObject(root) ? parse_root(root, c, path, err)
                                            : posemb_fail(err, POSEMB_EFORMAT, "%s: not a JSON object", path);
    cJSON_Delete(root);
    return st;
}

posemb_pe_dims config_pe_dims(const posemb_config *c)
{
    return (posemb_pe_dims){.dim = c->hidden,
                            .n_heads = c->heads,
                            .head_dim = posemb_config_head_dim(c),
                            .n_layers = c->layers,
                            .max_len = c->max_position,
                            .causal = c->arch == POSEMB_GPT2 || c->arch == POSEMB_LLAMA || c->arch == POSEMB_NEOX};
}

/* Builds c's PE for max_len positions and frees it. */
static posemb_status try_pe(const posemb_config *c, int max_len, posemb_error *err)
{
    posemb_pe_dims dims = config_pe_dims(c);
    dims.max_len = max_len;
    dims.max_threads = 1; /* one slot of scratch: the PE is only checked */
    posemb_pe *pe;
    posemb_status st = posemb_pe_create(&pe, c->pe, &dims, err);
    int kv = c->arch == POSEMB_LLAMA && c->kv_heads ? c->kv_heads : c->heads;
    if (!st && kv < c->heads && posemb_pe_qk_per_head(pe))
        st = posemb_fail(err, POSEMB_EINVAL,
                         "config: PE %s transforms each head's keys apart, but its %d heads share %d key/value heads "
                         "(grouped-query attention); give it one key/value head per head or one transform for all",
                         c->pe, c->heads, kv);
    posemb_pe_free(pe);
    return st;
}

/* The PE spec is checked by building the PE for c: an option its family
 * does not have, a value out of range, options that do not go together are
 * refused here, so that what loads also saves (a stray factors= would send
 * the save looking for a file). Built first for a few positions, as tables
 * for a long context (a Llama's 131072 rotary angles) take most of a second
 * to fill; only a spec refused there is built at full length, where it may
 * be right (random:max=N needs a table of N rows). */
posemb_status posemb_config_check(const posemb_config *c, posemb_error *err)
{
    enum { CHECK_LEN = 64 };
    posemb_status st = config_check_sizes(c, err);
    if (!st && (st = try_pe(c, c->max_position < CHECK_LEN ? c->max_position : CHECK_LEN, err)) &&
        c->max_position > CHECK_LEN)
        st = try_pe(c, c->max_position, err);
    return st;
}

posemb_status config_check_sizes(const posemb_config *c, posemb_error *err)
{
    if (c->vocab_size < 1 || c->hidden < 1 || c->layers < 1 || c->heads < 1 || c->intermediate < 1 ||
        c->max_position < 1)
        return posemb_fail(err, POSEMB_EINVAL, "config: sizes must be positive");
    if (c->arch == POSEMB_LLAMA && (c->kv_heads < 1 || c->kv_heads > c->heads || c->heads % c->kv_heads))
        return posemb_fail(err, POSEMB_EINVAL, "config: %d key/value heads do not divide %d heads", c->kv_heads,
                           c->heads);
    if (c->arch == POSEMB_LLAMA && c->attn_out_bias != c->attn_bias && strcmp(c->model_type, "qwen2") &&
        config_vl_text(c) != 2)
        return posemb_fail(err, POSEMB_EINVAL, "config: a %s has biases on all of q, k, v, o or on none",
                           c->model_type[0] ? c->model_type : "llama");
    if (c->head_dim && c->arch != POSEMB_LLAMA)
        return posemb_fail(err, POSEMB_EINVAL, "config: head_dim is a Llama-family key");
    if (c->head_dim < 0 || c->head_dim > 1 << 16)
        return posemb_fail(err, POSEMB_EINVAL, "config: head_dim %d outside [0, 65536]", c->head_dim);
    if (!c->head_dim && c->hidden % c->heads)
        return posemb_fail(err, POSEMB_EINVAL, "config: hidden size %d is not a multiple of %d heads", c->hidden,
                           c->heads);
    if (c->pre_ln && c->arch != POSEMB_BERT && c->arch != POSEMB_ROBERTA)
        return posemb_fail(err, POSEMB_EINVAL, "config: pre_ln is an encoder's (BERT, RoBERTa) setting");
    if (c->arch == POSEMB_ROBERTA && c->max_position <= c->pad_token_id + 1)
        return posemb_fail(err, POSEMB_EINVAL, "config: RoBERTa needs max_position_embeddings > pad_token_id + 1");
    if (c->pad_token_id >= c->vocab_size)
        return posemb_fail(err, POSEMB_EINVAL, "config: pad_token_id %d >= vocab_size %d", c->pad_token_id,
                           c->vocab_size);
    return POSEMB_OK;
}

/* HF knows these PEs; any other is written as posemb_pe. */
static const char *hf_pe_type(const char *spec)
{
    if (!strcmp(spec, "ape") || !strcmp(spec, "ape:integration=add")) return "absolute";
    if (!strcmp(spec, "relative_key") || !strcmp(spec, "relative_key_query")) return spec;
    return NULL;
}

static cJSON *encoder_json(const posemb_config *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "model_type",
                            c->arch == POSEMB_BERT ? "bert"
                            : c->pre_ln            ? "roberta-prelayernorm"
                                                   : "roberta");
    if (c->arch == POSEMB_BERT && c->pre_ln) cJSON_AddBoolToObject(r, "posemb_pre_ln", 1);
    config_sizes_json(r, c);
    cJSON_AddNumberToObject(r, "type_vocab_size", c->type_vocab);
    cJSON_AddNumberToObject(r, "pad_token_id", c->pad_token_id);
    cJSON_AddNumberToObject(r, "layer_norm_eps", config_shortest(c->ln_eps));
    cJSON_AddNumberToObject(r, "hidden_dropout_prob", config_shortest(c->hidden_dropout));
    cJSON_AddNumberToObject(r, "attention_probs_dropout_prob", config_shortest(c->attn_dropout));
    cJSON_AddStringToObject(r, "hidden_act", c->act == POSEMB_NN_GELU_ERF ? "gelu" : "gelu_new");
    const char *hf = hf_pe_type(c->pe);
    cJSON_AddStringToObject(r, "position_embedding_type", hf ? hf : "absolute");
    return r;
}

static cJSON *gpt2_json(const posemb_config *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "model_type", "gpt2");
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "n_embd", c->hidden);
    cJSON_AddNumberToObject(r, "n_layer", c->layers);
    cJSON_AddNumberToObject(r, "n_head", c->heads);
    cJSON_AddNumberToObject(r, "n_inner", c->intermediate);
    cJSON_AddNumberToObject(r, "n_positions", c->max_position);
    cJSON_AddNumberToObject(r, "layer_norm_epsilon", config_shortest(c->ln_eps));
    cJSON_AddNumberToObject(r, "resid_pdrop", config_shortest(c->hidden_dropout));
    cJSON_AddNumberToObject(r, "embd_pdrop", config_shortest(c->hidden_dropout));
    cJSON_AddNumberToObject(r, "attn_pdrop", config_shortest(c->attn_dropout));
    cJSON_AddStringToObject(r, "activation_function", c->act == POSEMB_NN_GELU_ERF ? "gelu" : "gelu_new");
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    return r;
}

/* c as HF's config.json into *out (path names the file in messages). */
static posemb_status config_json(const posemb_config *c, const char *path, cJSON **out, posemb_error *err)
{
    cJSON *r = c->arch == POSEMB_GPT2    ? gpt2_json(c)
               : c->arch == POSEMB_LLAMA ? config_llama_json(c)
               : c->arch == POSEMB_NEOX  ? config_neox_json(c)
                                         : encoder_json(c);
    cJSON *archs = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(c->architecture));
    cJSON_AddNumberToObject(r, "initializer_range", config_shortest(c->initializer_range));
    if (c->head == POSEMB_HEAD_CLASSIFY || c->head == POSEMB_HEAD_REGRESS) {
        cJSON *id2label = cJSON_AddObjectToObject(r, "id2label"), *label2id = cJSON_AddObjectToObject(r, "label2id");
        char key[32], label[48];
        for (int i = 0; i < c->num_labels; i++) {
            snprintf(key, sizeof key, "%d", i);
            snprintf(label, sizeof label, "LABEL_%d", i);
            cJSON_AddStringToObject(id2label, key, label);
            cJSON_AddNumberToObject(label2id, label, i);
        }
        cJSON_AddStringToObject(r, "problem_type",
                                c->head == POSEMB_HEAD_REGRESS ? "regression" : "single_label_classification");
    }
    cJSON_AddStringToObject(r, "torch_dtype", "float32");
    int hf_has_pe = c->arch == POSEMB_GPT2 ? !strcmp(hf_pe_type(c->pe) ? hf_pe_type(c->pe) : "", "absolute")
                                           : hf_pe_type(c->pe) != NULL;
    char spec[sizeof c->pe];
    posemb_status st = config_embed_factors(c->pe, r, spec, sizeof spec, path, err);
    if (st) {
        cJSON_Delete(r);
        return st;
    }
    int rope_arch = c->arch == POSEMB_LLAMA || c->arch == POSEMB_NEOX; /* their writers said the PE */
    if (rope_arch && strcmp(spec, c->pe))                              /* the writer wrote c->pe; the factors moved */
        cJSON_ReplaceItemInObject(r, "posemb_pe", cJSON_CreateString(spec));
    else if (!hf_has_pe && !rope_arch) cJSON_AddStringToObject(r, "posemb_pe", spec);
    *out = r;
    return POSEMB_OK;
}

/* The keys HF's configs hold as floats, at the top level, in rope_scaling,
 * and (lists of floats) longrope's factors. */
static int is_float_key(const char *key)
{
    static const char *const KEYS[] = {"layer_norm_eps",
                                       "layer_norm_epsilon",
                                       "rms_norm_eps",
                                       "hidden_dropout_prob",
                                       "attention_probs_dropout_prob",
                                       "resid_pdrop",
                                       "embd_pdrop",
                                       "attn_pdrop",
                                       "attention_dropout",
                                       "hidden_dropout",
                                       "rotary_pct",
                                       "initializer_range",
                                       "rope_theta",
                                       "factor",
                                       "beta_fast",
                                       "beta_slow",
                                       "mscale",
                                       "mscale_all_dim",
                                       "attention_factor",
                                       "low_freq_factor",
                                       "high_freq_factor",
                                       "short_factor",
                                       "long_factor",
                                       NULL};
    for (int i = 0; key && KEYS[i]; i++)
        if (!strcmp(key, KEYS[i])) return 1;
    return 0;
}

/* x as Python writes a float: the shortest text that reads back as x, with
 * ".0" when it would read as an integer. NULL when out of memory. */
static cJSON *float_item(double x)
{
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (!strpbrk(buf, ".eni")) strcat(buf, ".0"); /* not 2, nor 1e-12.0 or inf.0 */
    return cJSON_CreateRaw(buf);
}

/* Every number under a float key of obj (recursively) as float text: cJSON
 * prints 2.0 as 2, and transformers before 4.43 refuse a rope_scaling
 * factor that is not a float ("must be an float > 1"). */
static posemb_status floats_as_floats(cJSON *obj, const char *path, posemb_error *err)
{
    for (cJSON *it = obj->child; it; it = it->next) {
        if (cJSON_IsObject(it)) {
            posemb_status st = floats_as_floats(it, path, err);
            if (st) return st;
            continue;
        }
        if (!is_float_key(it->string)) continue;
        cJSON *arr = cJSON_IsArray(it) ? it : NULL;
        for (int i = 0; arr && i < cJSON_GetArraySize(arr); i++) {
            cJSON *x = cJSON_GetArrayItem(arr, i), *f = cJSON_IsNumber(x) ? float_item(x->valuedouble) : x;
            if (!f) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
            if (f != x) cJSON_ReplaceItemInArray(arr, i, f);
        }
        if (!cJSON_IsNumber(it)) continue;
        cJSON *f = float_item(it->valuedouble);
        const char *key = it->string;
        if (!f || !cJSON_ReplaceItemInObjectCaseSensitive(obj, key, f)) {
            cJSON_Delete(f);
            return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
        }
        it = f;
    }
    return POSEMB_OK;
}

posemb_status posemb_config_save(const posemb_config *c, const char *path, posemb_error *err)
{
    cJSON *r;
    posemb_status st = config_json(c, path, &r, err);
    if (!st) st = floats_as_floats(r, path, err);
    if (st) {
        cJSON_Delete(r);
        return st;
    }
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    if (!text) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    st = posemb_write_text(path, text, err);
    cJSON_free(text);
    return st;
}

/* Each key of keys must read back from c as set: a key the architecture does
 * not read (or reads into something else) would otherwise be dropped silently. */
static posemb_status check_applied(const posemb_config *c, const cJSON *keys, const char *what, posemb_error *err)
{
    cJSON *back;
    posemb_status st = config_json(c, what, &back, err);
    if (st) return st;
    for (const cJSON *k = keys->child; k && !st; k = k->next)
        if (!cJSON_Compare(k, cJSON_GetObjectItemCaseSensitive(back, k->string), 1))
            st =
                posemb_fail(err, POSEMB_EINVAL,
                            "%s: \"%s\" is not a setting posemb's %s config takes (or not this value)", what, k->string,
                            c->arch == POSEMB_GPT2    ? "gpt2"
                            : c->arch == POSEMB_LLAMA ? "llama"
                            : c->arch == POSEMB_NEOX  ? "gpt_neox"
                                                      : "encoder");
    cJSON_Delete(back);
    return st;
}

posemb_status posemb_config_override(posemb_config *c, const char *json, const char *what, posemb_error *err)
{
    /* config.json would carry longrope's factors, read back relative to a folder there is not */
    if (strstr(c->pe, "factors="))
        return posemb_fail(err, POSEMB_EINVAL, "%s: a PE with factors= (longrope) cannot take config.json keys", what);
    cJSON *keys = cJSON_Parse(json);
    if (!cJSON_IsObject(keys)) {
        cJSON_Delete(keys);
        return posemb_fail(err, POSEMB_EINVAL, "%s: not a JSON object of config.json keys", what);
    }
    cJSON *r = NULL;
    posemb_status st = config_json(c, what, &r, err);
    for (const cJSON *k = keys->child; !st && k; k = k->next) {
        cJSON *v = cJSON_Duplicate(k, 1);
        if (!v) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", what);
        else if (cJSON_GetObjectItemCaseSensitive(r, k->string))
            cJSON_ReplaceItemInObjectCaseSensitive(r, k->string, v);
        else cJSON_AddItemToObject(r, k->string, v);
    }
    posemb_config next;
    posemb_error parsed;
    if (!st && (st = parse_root(r, &next, what, &parsed))) /* a refused value is the caller's argument, not a file's */
        st = posemb_fail(err, st == POSEMB_ENOMEM ? st : POSEMB_EINVAL, "%s", parsed.msg);
    if (!st) st = check_applied(&next, keys, what, err);
    if (!st && next.arch == POSEMB_LLAMA && c->arch == POSEMB_LLAMA)
        next.hidden_dropout = c->hidden_dropout; /* posemb's own, not a key of Llama's config.json */
    if (!st) *c = next;
    cJSON_Delete(r);
    cJSON_Delete(keys);
    return st;
}
