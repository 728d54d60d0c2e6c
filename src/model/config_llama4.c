/* Llama 4's text config.json (model_type llama4_text), on top of the Llama
 * family's keys (config_llama.c), as Llama4TextConfig and
 * modeling_llama4.py of transformers e2372ffabdf6 read them:
 *   - dense layers only: moe_layers must be [] (absent, HF makes every layer
 *     a mixture of experts, which posemb does not run); the MLP is
 *     intermediate_size_mlp wide (intermediate_size is the experts');
 *   - no_rope_layers[l] = 1 where layer l rotates ([] or absent: every
 *     no_rope_layer_interval-th layer, default 4, is NoPE); RoPE in Meta's
 *     interleaved pairs (the complex freqs_cis form), rope_theta 500000
 *     when absent, rope_scaling as the Llama family's;
 *   - use_qk_norm (default on): on the RoPE layers q and k heads are
 *     RMS-normalised without weight (Llama4TextL2Norm, eps rms_norm_eps),
 *     after RoPE in HF's code; a rotation keeps the norm, so normalising
 *     first, as posemb's engine does, is the same;
 *   - attention_chunk_size (default 8192) with layer_types (default:
 *     "chunked_attention" on the RoPE layers, "full_attention" on the NoPE
 *     ones); null means no chunks, as transformers 4.52 read it (5.x fails);
 *   - attn_temperature_tuning (default on) with floor_scale (8192) and
 *     attn_scale (0.1): the NoPE layers' queries scaled (posemb's
 *     temperature PE).
 * The PE becomes "rope:...,pairing=interleaved,layers=ROPE+temperature:...,
 * layers=NOPE" (posemb_pe, when set, takes its place). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

int config_qk_unit_norm(const posemb_config *c, int l)
{
    return c->llama4 && c->qk_unit_norm && l >= 0 && l < c->layers && config_bit(c->rope_layers, l);
}

int config_any_qk_unit_norm(const posemb_config *c)
{
    int any = 0;
    for (int l = 0; l < c->layers; l++) any |= config_qk_unit_norm(c, l);
    return any;
}

int posemb_config_chunk(const posemb_config *c, int l)
{
    int on = l >= 0 && l < 8 * (int)sizeof c->chunked_layers && config_bit(c->chunked_layers, l);
    return on ? c->attention_chunk : 0;
}

void config_layer_list(const unsigned char *bits, int n, int want, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int l = 0; l < n; l++) {
        if (config_bit(bits, l) != want || (l > 0 && config_bit(bits, l - 1) == want)) continue;
        int last = l;
        while (last + 1 < n && config_bit(bits, last + 1) == want) last++;
        size_t k = strlen(buf);
        if (last > l) snprintf(buf + k, cap - k, "%s%d-%d", k ? "|" : "", l, last);
        else snprintf(buf + k, cap - k, "%s%d", k ? "|" : "", l);
    }
}

/* moe_layers: present and empty. */
static posemb_status dense_only(const cJSON *r, const char *path, posemb_error *err)
{
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(r, "moe_layers");
    if (cJSON_IsArray(moe) && cJSON_GetArraySize(moe) == 0) return POSEMB_OK;
    return posemb_fail(err, POSEMB_EFORMAT, "%s: %s; posemb runs Llama 4's dense layers only (moe_layers [])", path,
                       cJSON_IsArray(moe) ? "moe_layers lists mixture-of-experts layers"
                                          : "without moe_layers HF makes every layer a mixture of experts");
}

posemb_status config_rope_layers(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    memset(c->rope_layers, 0, sizeof c->rope_layers);
    const cJSON *nr = cJSON_GetObjectItemCaseSensitive(r, "no_rope_layers");
    if (nr && !cJSON_IsNull(nr) && !cJSON_IsArray(nr))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: no_rope_layers is not a list", path);
    if (cJSON_IsArray(nr) && !cJSON_GetArraySize(nr) && !strcmp(c->model_type, "smollm3"))
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: no_rope_layers is [] (SmolLM3 keeps it and fails on layer 0; absent or null: "
                           "the default)",
                           path);
    if (cJSON_GetArraySize(nr) == 0) { /* HF's default (Llama 4's [] too) */
        int every = 4;
        posemb_status st = config_get_int(r, "no_rope_layer_interval", 1, 1 << 20, &every, path, err);
        for (int l = 0; !st && l < c->layers; l++)
            if ((l + 1) % every) config_set_bit(c->rope_layers, l);
        return st;
    }
    if (cJSON_GetArraySize(nr) != c->layers)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: no_rope_layers must list 0 or 1 for each of the %d layers", path,
                           c->layers);
    int l = 0;
    for (const cJSON *v = nr->child; v; v = v->next, l++) {
        if (!cJSON_IsNumber(v) || (v->valuedouble != 0 && v->valuedouble != 1))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: no_rope_layers[%d] is not 0 or 1", path, l);
        if (v->valuedouble == 1) config_set_bit(c->rope_layers, l);
    }
    return POSEMB_OK;
}

/* attention_chunk_size and layer_types into c->attention_chunk, c->chunked_layers. */
static posemb_status parse_chunks(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    memset(c->chunked_layers, 0, sizeof c->chunked_layers);
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(r, "attention_chunk_size");
    c->attention_chunk = cJSON_IsNull(cs) ? 0 : 8192;
    posemb_status st = config_get_int(r, "attention_chunk_size", 1, 1 << 30, &c->attention_chunk, path, err);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(r, "layer_types");
    if (st || !c->attention_chunk) return st;
    if (!types || cJSON_IsNull(types)) {
        memcpy(c->chunked_layers, c->rope_layers, sizeof c->chunked_layers);
        return POSEMB_OK;
    }
    return config_layer_types(types, c, "chunked_attention", c->chunked_layers, path, err);
}

/* c->pe from the RoPE keys, the RoPE layers and the temperature keys. */
static posemb_status llama4_pe(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    int tuning = 1;
    float floor_scale = 8192.0f, attn_scale = 0.1f;
    const cJSON *tt = cJSON_GetObjectItemCaseSensitive(r, "attn_temperature_tuning");
    posemb_status st = POSEMB_OK;
    if (cJSON_IsNumber(tt)) tuning = tt->valuedouble != 0; /* 4.51's default 4, in Llama 4's own configs: truthy */
    else st = config_get_bool(r, "attn_temperature_tuning", &tuning, path, err);
    if (!st) st = config_get_float(r, "floor_scale", 1, 1e12, &floor_scale, path, err);
    if (!st) st = config_get_float(r, "attn_scale", 0, 1e6, &attn_scale, path, err);
    cJSON *keys = st ? NULL : cJSON_Duplicate(r, 1);
    if (!st && !keys) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    const cJSON *rp = keys ? cJSON_GetObjectItemCaseSensitive(keys, "rope_parameters") : NULL;
    if (keys && !cJSON_GetObjectItemCaseSensitive(keys, "rope_theta") &&
        !(cJSON_IsObject(rp) && cJSON_GetObjectItemCaseSensitive(rp, "rope_theta")))
        cJSON_AddNumberToObject(keys, "rope_theta", 500000.0); /* Llama4TextConfig's default_theta */
    if (!st) st = config_rope_spec(keys, c, 0, path, err);
    cJSON_Delete(keys);
    if (st) return st;
    char rope[sizeof c->pe], on[512], off[512];
    config_layer_list(c->rope_layers, c->layers, 1, on, sizeof on);
    config_layer_list(c->rope_layers, c->layers, 0, off, sizeof off);
    int n = 0;
    if (!on[0]) n = snprintf(rope, sizeof rope, "%s", ""); /* every layer NoPE */
    else
        n = snprintf(rope, sizeof rope, "%s,pairing=interleaved%s%s", c->pe, off[0] ? ",layers=" : "",
                     off[0] ? on : "");
    if (n >= 0 && (size_t)n < sizeof rope && tuning && off[0])
        n += snprintf(rope + n, sizeof rope - (size_t)n, "%stemperature:attn_scale=%.9g,floor_scale=%.9g%s%s",
                      on[0] ? "+" : "", attn_scale, floor_scale, on[0] ? ",layers=" : "", on[0] ? off : "");
    if (n < 0 || (size_t)n >= sizeof c->pe)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: the RoPE layers make a PE spec too long for posemb", path);
    snprintf(c->pe, sizeof c->pe, "%s", rope[0] ? rope : "none");
    return POSEMB_OK;
}

posemb_status config_parse_llama4(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    c->llama4 = 1;
    c->intermediate = 16384; /* Llama4TextConfig's intermediate_size_mlp */
    c->qk_unit_norm = 1;
    if (!cJSON_GetObjectItemCaseSensitive(r, "head_dim")) /* Llama4TextConfig's 128, not hidden / heads */
        c->head_dim = 128 * c->heads == c->hidden ? 0 : 128;
    if (!cJSON_GetObjectItemCaseSensitive(r, "rms_norm_eps")) c->ln_eps = 1e-5f;
    if (c->layers > 8 * (int)sizeof c->rope_layers)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %d layers: posemb's Llama 4 takes at most %d", path, c->layers,
                           8 * (int)sizeof c->rope_layers);
    posemb_status st = dense_only(r, path, err);
    if (!st) st = config_get_int(r, "intermediate_size_mlp", 1, CONFIG_MAX_WIDTH, &c->intermediate, path, err);
    if (!st) st = config_get_bool(r, "use_qk_norm", &c->qk_unit_norm, path, err);
    if (!st) st = config_rope_layers(r, c, path, err);
    if (!st) st = parse_chunks(r, c, path, err);
    if (st) return st;
    const char *own = config_get_string(r, "posemb_pe");
    if (own) {
        snprintf(c->pe, sizeof c->pe, "%s", own);
        return POSEMB_OK;
    }
    return llama4_pe(r, c, path, err);
}

int config_take_opt(char *spec, const char *key, const char *value)
{
    char pat[64];
    snprintf(pat, sizeof pat, ",%s=", key);
    char *o = strstr(spec, pat);
    if (!o) { /* the first option, after the family's ':' */
        pat[0] = ':';
        o = strstr(spec, pat);
    }
    if (!o) return 0;
    char *v = o + strlen(pat), *end = v + strcspn(v, ",+");
    int same = !value || ((size_t)(end - v) == strlen(value) && !strncmp(v, value, (size_t)(end - v)));
    if (*o == ':' && *end == ',') { /* "fam:k=v,rest" -> "fam:rest"; "fam:k=v" -> "fam" */
        o++;
        end++;
    }
    memmove(o, end, strlen(end) + 1);
    return same;
}

void config_put_posemb_pe(cJSON *r, const posemb_config *c)
{
    if (!cJSON_GetObjectItemCaseSensitive(r, "posemb_pe")) cJSON_AddStringToObject(r, "posemb_pe", c->pe);
}

void config_put_rope(cJSON *r, const posemb_config *c, double base, cJSON *rs)
{
    cJSON_ReplaceItemInObjectCaseSensitive(r, "rope_theta", cJSON_CreateNumber(base));
    cJSON_DeleteItemFromObjectCaseSensitive(r, "rope_scaling");
    if (cJSON_GetArraySize(rs) > 0) {
        config_legacy_scaling(rs, c->max_position);
        cJSON_AddItemToObject(r, "rope_scaling", rs);
    } else cJSON_Delete(rs);
    cJSON_DeleteItemFromObjectCaseSensitive(r, "posemb_pe");
}

/* HF's keys for c->pe when it is what llama4_pe makes of them: 1 with base, rs
 * and the temperature's values set; 0 when HF cannot say it. */
static int pe_as_hf(const posemb_config *c, double *base, cJSON *rs, int *tuning, double *scale, double *floor_scale)
{
    char spec[sizeof c->pe], on[512], off[512];
    config_layer_list(c->rope_layers, c->layers, 1, on, sizeof on);
    config_layer_list(c->rope_layers, c->layers, 0, off, sizeof off);
    snprintf(spec, sizeof spec, "%s", c->pe);
    char *temp = strstr(spec, "temperature:");
    *tuning = temp != NULL;
    if (temp) {
        if (temp > spec) temp[-1] = '\0'; /* the '+' */
        char *opts = temp + strlen("temperature:") - 1, *e;
        *opts = ',';
        char *a = strstr(opts, ",attn_scale="), *f = strstr(opts, ",floor_scale=");
        *scale = a ? strtod(a + 12, &e) : 0.1;
        *floor_scale = f ? strtod(f + 13, &e) : 8192.0;
        config_take_opt(opts, "attn_scale", NULL);
        config_take_opt(opts, "floor_scale", NULL);
        int layers_ok = on[0] ? config_take_opt(opts, "layers", off) : !strstr(opts, ",layers=");
        if (!layers_ok || opts[0] || !off[0]) return 0;
        if (temp == spec) spec[0] = '\0';
    }
    if (!on[0]) return !spec[0] || !strcmp(spec, "none");
    if (!config_take_opt(spec, "pairing", "interleaved") || (off[0] ? !config_take_opt(spec, "layers", on) : 0))
        return 0;
    return config_rope_as_hf(spec, base, NULL, rs) != 0;
}

void config_put_no_pad(cJSON *r, const posemb_config *c)
{
    if (c->pad_token_id < 0 && !cJSON_GetObjectItemCaseSensitive(r, "pad_token_id"))
        cJSON_AddNullToObject(r, "pad_token_id");
}

void config_llama4_json(cJSON *r, const posemb_config *c)
{
    config_put_no_pad(r, c);
    cJSON_AddNumberToObject(r, "intermediate_size_mlp", c->intermediate);
    cJSON_AddItemToObject(r, "moe_layers", cJSON_CreateArray());
    cJSON_AddBoolToObject(r, "use_qk_norm", c->qk_unit_norm);
    cJSON *nr = cJSON_AddArrayToObject(r, "no_rope_layers");
    for (int l = 0; l < c->layers; l++) cJSON_AddItemToArray(nr, cJSON_CreateNumber(config_bit(c->rope_layers, l)));
    if (c->attention_chunk) {
        cJSON_AddNumberToObject(r, "attention_chunk_size", c->attention_chunk);
        cJSON *types = cJSON_AddArrayToObject(r, "layer_types");
        for (int l = 0; l < c->layers; l++)
            cJSON_AddItemToArray(
                types, cJSON_CreateString(posemb_config_chunk(c, l) ? "chunked_attention" : "full_attention"));
    } else cJSON_AddNullToObject(r, "attention_chunk_size");
    double base = 500000.0, scale = 0.1, floor_scale = 8192.0;
    int tuning = 0;
    cJSON *rs = cJSON_CreateObject();
    if (!pe_as_hf(c, &base, rs, &tuning, &scale, &floor_scale)) { /* posemb_pe says it */
        cJSON_Delete(rs);
        cJSON_AddBoolToObject(r, "attn_temperature_tuning", 0);
        config_put_posemb_pe(r, c);
        return;
    }
    config_put_rope(r, c, base, rs);
    cJSON_AddBoolToObject(r, "attn_temperature_tuning", tuning);
    cJSON_AddNumberToObject(r, "attn_scale", config_shortest((float)scale));
    cJSON_AddNumberToObject(r, "floor_scale", config_shortest((float)floor_scale));
}
