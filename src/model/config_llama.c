/* Llama-family config.json (model_type llama, mistral, qwen2, qwen3; gemma3_text and llama4_text
 * patch their own keys in, config_gemma.c and config_llama4.c): sizes,
 * grouped-query heads, RMSNorm's eps, tied embeddings, Qwen2's q/k/v biases,
 * and RoPE from rope_theta and rope_scaling (key "type" or "rope_type"; HF
 * 5's rope_parameters) with partial_rotary_factor,
 * turned into posemb's rope spec so that every scaling of docs/pe.md
 * applies. posemb's own "posemb_pe" key (a model trained with another PE)
 * takes precedence. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

posemb_status config_parse_llama(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    c->kv_heads = 0;
    if ((st = config_get_sizes(r, c, path, err)) ||
        (st = config_get_int(r, "num_key_value_heads", 1, CONFIG_MAX_HEADS, &c->kv_heads, path, err)) ||
        (st = config_get_int(r, "pad_token_id", -1, CONFIG_MAX_VOCAB, &c->pad_token_id, path, err)) ||
        (st = config_get_float(r, "rms_norm_eps", 0, 1, &c->ln_eps, path, err)) ||
        (st = config_get_float(r, "initializer_range", 0, 10, &c->initializer_range, path, err)) ||
        (st = config_get_float(r, "attention_dropout", 0, 1, &c->attn_dropout, path, err)))
        return st;
    if (!c->kv_heads) c->kv_heads = c->heads;
    c->gemma = !strcmp(c->model_type, "gemma3_text");
    const char *act = config_get_string(r, "hidden_act");
    if (act && strcmp(act, c->gemma ? "gelu_pytorch_tanh" : "silu"))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: hidden_act \"%s\" is not supported (silu)", path, act);
    c->head_dim = 0;
    if ((st = config_get_int(r, "head_dim", 1, CONFIG_MAX_WIDTH, &c->head_dim, path, err))) return st;
    if (c->head_dim * c->heads == c->hidden) c->head_dim = 0; /* the usual width, said explicitly */
    if (!c->head_dim && c->hidden % c->heads)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: hidden_size %d is not a multiple of %d heads (and no head_dim)",
                           path, c->hidden, c->heads);
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(r, "tie_word_embeddings");
    int ties = c->gemma || !strcmp(c->model_type, "smollm3"); /* Gemma3TextConfig and SmolLM3Config tie by default */
    c->tie_embeddings = cJSON_IsTrue(tie) || (ties && !tie);
    /* Qwen2 has q, k, v biases whatever the config says; Llama's attention_bias puts them on o_proj too */
    int qwen2 = !strcmp(c->model_type, "qwen2") || config_vl_text(c) == 2;
    int attention_bias = !qwen2 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "attention_bias"));
    c->attn_bias = qwen2 || attention_bias;
    c->attn_out_bias = attention_bias;
    c->qk_norm = !strcmp(c->model_type, "qwen3") || config_vl_text(c) == 3; /* no MLP biases, whatever mlp_bias says */
    c->qk_norm = c->qk_norm || c->gemma; /* Gemma 3 normalises each head too, and has no MLP biases */
    c->mlp_bias = !qwen2 && !c->qk_norm && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "mlp_bias"));
    if ((st = config_parse_windows(r, c, path, err))) return st;
    if (c->gemma) return config_parse_gemma(r, c, path, err);
    if (!strcmp(c->model_type, "llama4_text")) return config_parse_llama4(r, c, path, err);
    if (!strcmp(c->model_type, "smollm3")) return config_parse_smollm3(r, c, path, err);
    const char *own = config_get_string(r, "posemb_pe");
    if (own) {
        snprintf(c->pe, sizeof c->pe, "%s", own);
        return POSEMB_OK;
    }
    posemb_status rs = config_rope_spec(r, c, 0, path, err);
    return rs || !config_vl_text(c) ? rs : config_mrope_spec(r, c, path, err);
}

cJSON *config_llama_json(const posemb_config *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "model_type", c->model_type[0] ? c->model_type : "llama");
    config_sizes_json(r, c);
    cJSON_AddNumberToObject(r, "num_key_value_heads", c->kv_heads ? c->kv_heads : c->heads);
    cJSON_AddNumberToObject(r, "head_dim", posemb_config_head_dim(c));
    cJSON_AddNumberToObject(r, "rms_norm_eps", config_shortest(c->ln_eps));
    cJSON_AddStringToObject(r, "hidden_act", "silu");
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    cJSON_AddBoolToObject(r, "attention_bias", c->attn_bias);
    cJSON_AddBoolToObject(r, "mlp_bias", c->mlp_bias);
    cJSON_AddNumberToObject(r, "attention_dropout", config_shortest(c->attn_dropout));
    if (c->pad_token_id >= 0) cJSON_AddNumberToObject(r, "pad_token_id", c->pad_token_id);
    config_windows_json(r, c);
    /* HF reads rope_theta and rope_scaling; posemb reads posemb_pe first, exactly */
    double base = 10000.0;
    cJSON *rs = cJSON_CreateObject();
    int hf = config_rope_as_hf(c->pe, &base, NULL, rs);
    if (hf == 2) config_legacy_scaling(rs, c->max_position);
    cJSON_AddNumberToObject(r, "rope_theta", base);
    if (hf == 2) cJSON_AddItemToObject(r, "rope_scaling", rs);
    else cJSON_Delete(rs);
    if (hf != 1) cJSON_AddStringToObject(r, "posemb_pe", c->pe);
    if (c->gemma) config_gemma_json(r, c);
    if (c->llama4) config_llama4_json(r, c);
    if (!strcmp(c->model_type, "smollm3")) config_smollm3_json(r, c);
    config_mrope_json(r, c);
    return r;
}
