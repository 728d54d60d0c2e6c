/* SmolLM3's config.json (model_type smollm3): a Llama with NoPE layers, as
 * huggingface/transformers reads it (configuration_smollm3.py @6551e17,
 * modular_smollm3.py @cbc6e94, modeling_smollm3.py @b0fc62d; transformers
 * 5's rope_parameters too):
 *   - no_rope_layers[l] = 1 where layer l rotates (absent: every
 *     no_rope_layer_interval-th layer, default 4, is NoPE), RoPE as Llama's
 *     (halves), rope_theta 2000000 when absent (SmolLM3Config.default_theta);
 *   - sliding windows only with use_sliding_window (default off) and
 *     sliding_window, on the layers layer_types calls "sliding_attention"
 *     (default: the NoPE layers);
 *   - tie_word_embeddings on by default (config_llama.c).
 * The PE becomes "rope:...,layers=<the RoPE layers>" ("none" when no layer
 * rotates); posemb_pe, when set, takes its place. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "model_impl.h"

/* use_sliding_window, sliding_window and layer_types into c's windows. */
static posemb_status smollm3_windows(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    int use = 0;
    memset(c->sliding_layers, 0, sizeof c->sliding_layers);
    c->sliding_window = 0;
    posemb_status st = config_get_bool(r, "use_sliding_window", &use, path, err);
    if (!st) st = config_get_int(r, "sliding_window", 1, 1 << 30, &c->sliding_window, path, err);
    if (st || !use || !c->sliding_window) {
        c->sliding_window = 0; /* HF's attention slides only with both */
        return st;
    }
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(r, "layer_types");
    if (types && !cJSON_IsNull(types))
        return config_layer_types(types, c, "sliding_attention", c->sliding_layers, path, err);
    for (int l = 0; l < c->layers; l++)
        if (!config_bit(c->rope_layers, l)) config_set_bit(c->sliding_layers, l);
    return POSEMB_OK;
}

posemb_status config_parse_smollm3(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st = config_rope_layers(r, c, path, err);
    if (!st) st = smollm3_windows(r, c, path, err);
    if (st) return st;
    const char *own = config_get_string(r, "posemb_pe");
    if (own) {
        snprintf(c->pe, sizeof c->pe, "%s", own);
        return POSEMB_OK;
    }
    cJSON *keys = cJSON_Duplicate(r, 1);
    if (!keys) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(keys, "rope_parameters");
    if (!cJSON_GetObjectItemCaseSensitive(keys, "rope_theta") &&
        !(cJSON_IsObject(rp) && cJSON_GetObjectItemCaseSensitive(rp, "rope_theta")))
        cJSON_AddNumberToObject(keys, "rope_theta", 2000000.0);
    st = config_rope_spec(keys, c, 0, path, err);
    cJSON_Delete(keys);
    if (st) return st;
    char on[512], off[512];
    config_layer_list(c->rope_layers, c->layers, 1, on, sizeof on);
    config_layer_list(c->rope_layers, c->layers, 0, off, sizeof off);
    size_t n = strlen(c->pe);
    if (!on[0]) snprintf(c->pe, sizeof c->pe, "none");
    else if (off[0] && snprintf(c->pe + n, sizeof c->pe - n, ",layers=%s", on) >= (int)(sizeof c->pe - n))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: the RoPE layers make a PE spec too long for posemb", path);
    return POSEMB_OK;
}

/* The rope part of c->pe without its layers= when that is exactly the RoPE
 * layers, into base and rs: 1 when HF's keys can say it. */
static int rope_as_hf(const posemb_config *c, double *base, cJSON *rs)
{
    char on[512], off[512], spec[sizeof c->pe];
    config_layer_list(c->rope_layers, c->layers, 1, on, sizeof on);
    config_layer_list(c->rope_layers, c->layers, 0, off, sizeof off);
    if (!on[0]) return !strcmp(c->pe, "none");
    if (strchr(c->pe, '+')) return 0; /* HF's keys say RoPE alone */
    snprintf(spec, sizeof spec, "%s", c->pe);
    if (off[0] && !config_take_opt(spec, "layers", on)) return 0;
    return config_rope_as_hf(spec, base, NULL, rs) != 0;
}

void config_smollm3_json(cJSON *r, const posemb_config *c)
{
    config_put_no_pad(r, c);
    cJSON *nr = cJSON_AddArrayToObject(r, "no_rope_layers");
    for (int l = 0; l < c->layers; l++) cJSON_AddItemToArray(nr, cJSON_CreateNumber(config_bit(c->rope_layers, l)));
    if (cJSON_GetObjectItemCaseSensitive(r, "layer_types")) cJSON_AddTrueToObject(r, "use_sliding_window");
    double base = 2000000.0;
    cJSON *rs = cJSON_CreateObject();
    if (!rope_as_hf(c, &base, rs)) { /* posemb_pe says it */
        cJSON_Delete(rs);
        config_put_posemb_pe(r, c);
        return;
    }
    config_put_rope(r, c, base, rs);
}
