/* GPT-NeoX config.json (model_type gpt_neox: Pythia, GPT-NeoX-20B): sizes,
 * LayerNorm's eps, GELU, use_parallel_residual, attention_bias, untied
 * embed_out, and RoPE on the first rotary_pct of each head from
 * rotary_emb_base and rope_scaling (HF 4.45+ also writes rope_theta and
 * partial_rotary_factor, the same numbers), through config_llama.c's rope
 * spec. posemb's own "posemb_pe" key (a model trained with another PE)
 * takes precedence. GPTNeoXConfig's defaults fill absent keys. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "model_impl.h"

posemb_status config_parse_neox(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    int bias = 1;
    if ((st = config_get_sizes(r, c, path, err)) ||
        (st = config_get_int(r, "pad_token_id", -1, CONFIG_MAX_VOCAB, &c->pad_token_id, path, err)) ||
        (st = config_get_float(r, "layer_norm_eps", 0, 1, &c->ln_eps, path, err)) ||
        (st = config_get_float(r, "initializer_range", 0, 10, &c->initializer_range, path, err)) ||
        (st = config_get_float(r, "hidden_dropout", 0, 1, &c->hidden_dropout, path, err)) ||
        (st = config_get_float(r, "attention_dropout", 0, 1, &c->attn_dropout, path, err)) ||
        (st = config_get_bool(r, "use_parallel_residual", &c->parallel_residual, path, err)) ||
        (st = config_get_bool(r, "attention_bias", &bias, path, err)) ||
        (st = config_get_bool(r, "tie_word_embeddings", &c->tie_embeddings, path, err)) ||
        (st = config_parse_act(config_get_string(r, "hidden_act"), &c->act, path, err)))
        return st;
    c->attn_bias = c->attn_out_bias = bias;
    if (c->hidden % c->heads)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: hidden_size %d is not a multiple of %d heads", path, c->hidden,
                           c->heads);
    const char *own = config_get_string(r, "posemb_pe");
    if (own) {
        snprintf(c->pe, sizeof c->pe, "%s", own);
        return POSEMB_OK;
    }
    return config_rope_spec(r, c, 1, path, err);
}

/* The RoPE keys every transformers version reads (4.31's rotary_pct,
 * rotary_emb_base and {"type", "factor"} rope_scaling; 4.45+ takes them
 * too), or posemb_pe when the PE is not a rope HF's GPT-NeoX can say. */
static void rope_keys(cJSON *r, const posemb_config *c)
{
    double base = 10000.0, frac = 1.0;
    cJSON *rs = cJSON_CreateObject();
    int hf = config_rope_as_hf(c->pe, &base, &frac, rs);
    if (hf == 2) config_legacy_scaling(rs, c->max_position);
    cJSON_AddNumberToObject(r, "rotary_pct", hf ? frac : 1.0);
    cJSON_AddNumberToObject(r, "rotary_emb_base", base);
    if (hf == 2) cJSON_AddItemToObject(r, "rope_scaling", rs);
    else cJSON_Delete(rs);
    if (!hf) cJSON_AddStringToObject(r, "posemb_pe", c->pe);
}

cJSON *config_neox_json(const posemb_config *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "model_type", "gpt_neox");
    config_sizes_json(r, c);
    cJSON_AddNumberToObject(r, "layer_norm_eps", config_shortest(c->ln_eps));
    cJSON_AddNumberToObject(r, "hidden_dropout", config_shortest(c->hidden_dropout));
    cJSON_AddNumberToObject(r, "attention_dropout", config_shortest(c->attn_dropout));
    cJSON_AddStringToObject(r, "hidden_act", c->act == POSEMB_NN_GELU_ERF ? "gelu" : "gelu_new");
    cJSON_AddBoolToObject(r, "use_parallel_residual", c->parallel_residual);
    cJSON_AddBoolToObject(r, "attention_bias", c->attn_bias);
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    if (c->pad_token_id >= 0) cJSON_AddNumberToObject(r, "pad_token_id", c->pad_token_id);
    rope_keys(r, c);
    return r;
}
