/* Gemma 3's text config.json (model_type gemma3_text), on top of the Llama
 * family's keys (config_llama.c): the block (c->gemma: 1 + w norms, the
 * norms after attention and the MLP, sqrt(hidden) embeddings, GeGLU),
 * query_pre_attn_scalar, and RoPE per layer type: the global layers at
 * rope_theta with rope_scaling, the sliding ones at rope_local_base_freq
 * unscaled (transformers 4.5x's keys), or transformers 5's rope_parameters
 * keyed by "full_attention" and "sliding_attention"; as the spec
 * rope:...,local_base=B,local_layers=<the sliding layers>. Softcapping
 * (Gemma 2's) and bidirectional attention are refused, not ignored.
 * Read against modeling_gemma3.py of transformers 0018aa647bb1 (search
 * index) and Gemma3TextConfig's defaults. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

/* A key that must be absent or null (a feature posemb does not run). */
static posemb_status refuse_set(const cJSON *r, const char *key, const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return POSEMB_OK;
    return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" is not supported (Gemma 3 leaves it null)", path, key);
}

/* The sliding layers as a layers= list ("0-4|6-10"); "" when none. */
static void sliding_list(const posemb_config *c, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int l = 0; l < c->layers; l++) {
        if (!posemb_config_window(c, l) || (l > 0 && posemb_config_window(c, l - 1))) continue;
        int last = l;
        while (last + 1 < c->layers && posemb_config_window(c, last + 1)) last++;
        size_t n = strlen(buf);
        if (last > l) snprintf(buf + n, cap - n, "%s%d-%d", n ? "|" : "", l, last);
        else snprintf(buf + n, cap - n, "%s%d", n ? "|" : "", l);
    }
}

/* The global layers' RoPE keys and the local base, from either form. */
static posemb_status rope_sources(const cJSON *r, cJSON *global, double *local, const char *path, posemb_error *err)
{
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(r, "rope_parameters");
    const cJSON *full = cJSON_IsObject(rp) ? cJSON_GetObjectItemCaseSensitive(rp, "full_attention") : NULL;
    const cJSON *theta = cJSON_GetObjectItemCaseSensitive(r, "rope_theta");
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(r, "rope_local_base_freq");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r, "rope_scaling");
    if (full) { /* transformers 5: one rope_parameters per layer type */
        const cJSON *sl = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
        const char *ty = sl ? config_get_string(sl, "rope_type") : NULL;
        if (ty && strcmp(ty, "default"))
            return posemb_fail(err, POSEMB_EFORMAT,
                               "%s: sliding_attention's rope_type \"%s\" is not supported "
                               "(default)",
                               path, ty);
        theta = cJSON_GetObjectItemCaseSensitive(full, "rope_theta");
        loc = sl ? cJSON_GetObjectItemCaseSensitive(sl, "rope_theta") : NULL;
        rs = full;
    }
    cJSON_AddNumberToObject(global, "rope_theta", cJSON_IsNumber(theta) ? theta->valuedouble : 1e6);
    if (rs && !cJSON_IsNull(rs)) cJSON_AddItemToObject(global, "rope_scaling", cJSON_Duplicate(rs, 1));
    *local = cJSON_IsNumber(loc) ? loc->valuedouble : 10000.0;
    if (!(*local > 1.0)) return posemb_fail(err, POSEMB_EFORMAT, "%s: rope_local_base_freq must exceed 1", path);
    return POSEMB_OK;
}

/* c->pe: the global layers' rope, the sliding ones at the local base. */
static posemb_status gemma_rope(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    cJSON *global = cJSON_CreateObject();
    double local = 10000.0;
    posemb_status st = global ? rope_sources(r, global, &local, path, err)
                              : posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    if (!st) st = config_rope_spec(global, c, 0, path, err);
    cJSON_Delete(global);
    char list[512];
    sliding_list(c, list, sizeof list);
    size_t n = strlen(c->pe);
    if (!st && list[0] &&
        snprintf(c->pe + n, sizeof c->pe - n, ",local_base=%.17g,local_layers=%s", local, list) >=
            (int)(sizeof c->pe - n))
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: the layer types make a RoPE spec too long for posemb", path);
    return st;
}

posemb_status config_parse_gemma(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    c->gemma = 1;
    c->query_pre_attn_scalar = 256.0f; /* Gemma3TextConfig's */
    const char *act = config_get_string(r, "hidden_activation");
    if (act && strcmp(act, "gelu_pytorch_tanh"))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: hidden_activation \"%s\" is not supported (gelu_pytorch_tanh)",
                           path, act);
    posemb_status st;
    if ((st = config_get_float(r, "query_pre_attn_scalar", 1e-6, 1e9, &c->query_pre_attn_scalar, path, err)) ||
        (st = refuse_set(r, "final_logit_softcapping", path, err)) ||
        (st = refuse_set(r, "attn_logit_softcapping", path, err)) ||
        (st = refuse_set(r, "use_bidirectional_attention", path, err)))
        return st;
    const char *own = config_get_string(r, "posemb_pe");
    if (own) {
        snprintf(c->pe, sizeof c->pe, "%s", own);
        return POSEMB_OK;
    }
    return gemma_rope(r, c, path, err);
}

/* spec without its local_base= and local_layers= options, into out; *local the base (0: none). */
static void split_local(const char *spec, char *out, size_t cap, double *local, char *layers, size_t lcap)
{
    *local = 0.0;
    layers[0] = '\0';
    snprintf(out, cap, "%s", spec);
    for (char *o = strstr(out, ",local_"); o; o = strstr(out, ",local_")) {
        char *end = strchr(o + 1, ',');
        size_t n = end ? (size_t)(end - o) : strlen(o);
        if (!strncmp(o, ",local_base=", 12)) *local = strtod(o + 12, NULL);
        else if (!strncmp(o, ",local_layers=", 14)) snprintf(layers, lcap, "%.*s", (int)(n - 14), o + 14);
        memmove(o, o + n, strlen(o + n) + 1);
    }
}

void config_gemma_json(cJSON *r, const posemb_config *c)
{
    cJSON_DeleteItemFromObjectCaseSensitive(r, "hidden_act");
    cJSON_DeleteItemFromObjectCaseSensitive(r, "mlp_bias");
    cJSON_AddStringToObject(r, "hidden_activation", "gelu_pytorch_tanh");
    cJSON_AddNumberToObject(r, "query_pre_attn_scalar", c->query_pre_attn_scalar);
    cJSON_AddNullToObject(r, "final_logit_softcapping");
    cJSON_AddNullToObject(r, "attn_logit_softcapping");
    char global[sizeof c->pe], layers[512], sliding[512];
    double local, base;
    split_local(c->pe, global, sizeof global, &local, layers, sizeof layers);
    sliding_list(c, sliding, sizeof sliding);
    cJSON *rs = cJSON_CreateObject();
    int hf = local > 0.0 && !strcmp(layers, sliding) ? config_rope_as_hf(global, &base, NULL, rs) : 0;
    if (hf) { /* HF can say it: rope_theta, rope_scaling, rope_local_base_freq, no posemb_pe */
        cJSON_ReplaceItemInObjectCaseSensitive(r, "rope_theta", cJSON_CreateNumber(base));
        cJSON_DeleteItemFromObjectCaseSensitive(r, "rope_scaling");
        if (hf == 2) config_legacy_scaling(rs, c->max_position);
        if (hf == 2) cJSON_AddItemToObject(r, "rope_scaling", rs);
        else cJSON_Delete(rs);
        cJSON_AddNumberToObject(r, "rope_local_base_freq", local);
        cJSON_DeleteItemFromObjectCaseSensitive(r, "posemb_pe");
    } else cJSON_Delete(rs);
}
