/* RoPE in Hugging Face's config.json, both ways: rope_theta, rope_scaling
 * (key "type" or "rope_type"; HF 5's rope_parameters), partial_rotary_factor
 * and GPT-NeoX's rotary_pct as posemb's rope spec (config_rope_spec), and a
 * rope spec as those keys (config_rope_as_hf). Shared by every decoder's
 * config (Llama, Gemma 3, Llama 4, SmolLM3, GPT-NeoX). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"
#include "pe/pe_internal.h"

/* Appends ",key=x" for a number of rope_scaling, when present. */
static posemb_status scaling_num(const cJSON *rs, const char *key, const char *opt, char *spec, size_t cap,
                                 const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rs, key);
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: rope_scaling \"%s\" is not a number", path, key);
    size_t n = strlen(spec);
    snprintf(spec + n, cap - n, ",%s=%.17g", opt, v->valuedouble);
    return POSEMB_OK;
}

/* rope_scaling's type and options (factor, original length, yarn's and
 * llama3's keys) appended to spec: kind k of the known list, 1..5. */
static posemb_status scaling_spec(const cJSON *r, const cJSON *rs, const char *ty, int k, const posemb_config *c,
                                  char *spec, size_t cap, const char *path, posemb_error *err)
{
    size_t n = strlen(spec);
    snprintf(spec + n, cap - n, ",scaling=%s", ty);
    /* dynamic compares lengths with max_position_embeddings; yarn and llama3 with rope_scaling's
     * original length; longrope, as HF's, with the config's own original_max_position_embeddings
     * (Phi-3), its factor then max_position_embeddings over it */
    int longrope = k == 5;
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(longrope ? r : rs, "original_max_position_embeddings");
    int L0 = cJSON_IsNumber(orig) && orig->valuedouble >= 1 && k != 2 ? (int)orig->valuedouble : c->max_position;
    n = strlen(spec);
    if (k != 1) snprintf(spec + n, cap - n, ",original=%d", L0);
    n = strlen(spec);
    posemb_status st = POSEMB_OK;
    if (longrope && cJSON_IsNumber(orig)) snprintf(spec + n, cap - n, ",factor=%.17g", (double)c->max_position / L0);
    else st = scaling_num(rs, "factor", "factor", spec, cap, path, err);
    static const char *const extra[] = {"beta_fast",        "beta_slow",       "mscale",           "mscale_all_dim",
                                        "attention_factor", "low_freq_factor", "high_freq_factor", NULL};
    for (int i = 0; !st && extra[i]; i++) st = scaling_num(rs, extra[i], extra[i], spec, cap, path, err);
    if (!st && longrope) { /* the factors sit in this very file */
        n = strlen(spec);
        snprintf(spec + n, cap - n, ",factors=config.json");
    }
    return st;
}

/* partial_rotary_factor, at the top level or (HF 5) in rope_parameters: 1 when absent. */
static posemb_status partial_factor(const cJSON *r, const cJSON *rs, double *f, const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "partial_rotary_factor");
    if (!v || cJSON_IsNull(v)) v = rs ? cJSON_GetObjectItemCaseSensitive(rs, "partial_rotary_factor") : NULL;
    *f = 1.0;
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 1))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: partial_rotary_factor must be a number in (0, 1]", path);
    *f = v->valuedouble;
    return POSEMB_OK;
}

/* HF's proportional rope (_compute_proportional_rope_parameters): the
 * fraction f of the head's pairs rotate at base^(-2m/d), then inv_freq /
 * factor, which is linear scaling of every frequency. */
static posemb_status proportional_spec(const cJSON *rs, double f, char *spec, size_t cap, const char *path,
                                       posemb_error *err)
{
    size_t n = strlen(spec);
    snprintf(spec + n, cap - n, ",frac=%.17g,partial=proportional", f);
    const cJSON *factor = cJSON_GetObjectItemCaseSensitive(rs, "factor");
    if (!factor || cJSON_IsNull(factor) || (cJSON_IsNumber(factor) && factor->valuedouble == 1.0)) return POSEMB_OK;
    n = strlen(spec);
    snprintf(spec + n, cap - n, ",scaling=linear");
    return scaling_num(rs, "factor", "factor", spec, cap, path, err);
}

/* rope_theta (GPT-NeoX: rotary_emb_base) as a number > 1, 10000 when absent. */
static posemb_status rope_base(const cJSON *r, const cJSON *rs, int neox, double *base, const char *path,
                               posemb_error *err)
{
    const cJSON *theta = neox ? cJSON_GetObjectItemCaseSensitive(r, "rotary_emb_base") : NULL;
    if (!cJSON_IsNumber(theta)) theta = cJSON_GetObjectItemCaseSensitive(r, "rope_theta");
    if (!cJSON_IsNumber(theta) && rs) theta = cJSON_GetObjectItemCaseSensitive(rs, "rope_theta");
    *base = cJSON_IsNumber(theta) ? theta->valuedouble : 10000.0;
    if (!(*base > 1.0) || !isfinite(*base))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s must exceed 1", path, neox ? "rotary_emb_base" : "rope_theta");
    return POSEMB_OK;
}

/* GPT-NeoX's fraction of each head that rotates (rotary_pct, HF 4.45+'s
 * partial_rotary_factor): int(d f) dims, which HF's rotate_half needs even. */
static posemb_status neox_fraction(const cJSON *r, const cJSON *rs, const posemb_config *c, double *f, const char *path,
                                   posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "rotary_pct");
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 1))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: rotary_pct must be a number in (0, 1]", path);
        *f = v->valuedouble;
    } else {
        posemb_status st = partial_factor(r, rs, f, path, err);
        if (st) return st;
        if (!v && !cJSON_GetObjectItemCaseSensitive(r, "partial_rotary_factor") &&
            !(rs && cJSON_GetObjectItemCaseSensitive(rs, "partial_rotary_factor")))
            *f = 0.25; /* GPTNeoXConfig's default */
    }
    int d = posemb_config_head_dim(c), rot = (int)(d * *f);
    if (rot < 2 || rot % 2)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: rotary_pct %g rotates int(%d x %g) = %d dims of each head; HF's rotate_half needs "
                           "an even number >= 2",
                           path, *f, d, *f, rot);
    return POSEMB_OK;
}

/* rope_theta and rope_scaling (HF 5: rope_parameters, rope_theta inside it)
 * as a rope spec. For the Llama family partial_rotary_factor < 1 is refused
 * but for rope_type proportional: its apply_rotary_pos_emb rotates the whole
 * head, so HF either ignores it (compute_default_rope_parameters takes
 * head_dim; transformers #48630) or fails on the shorter cos; posemb would
 * otherwise have to pick one of the three partial forms without HF's word.
 * GPT-NeoX (neox) rotates the first rotary_pct of each head with any scaling. */
posemb_status config_rope_spec(const cJSON *r, posemb_config *c, int neox, const char *path, posemb_error *err)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) rs = cJSON_GetObjectItemCaseSensitive(r, "rope_parameters");
    if (cJSON_IsNull(rs)) rs = NULL;
    if (rs && !cJSON_IsObject(rs)) return posemb_fail(err, POSEMB_EFORMAT, "%s: rope_scaling is not an object", path);
    double base, f;
    posemb_status st = rope_base(r, rs, neox, &base, path, err);
    if (!st) st = neox ? neox_fraction(r, rs, c, &f, path, err) : partial_factor(r, rs, &f, path, err);
    if (st) return st;
    char spec[sizeof c->pe];
    snprintf(spec, sizeof spec, "rope:base=%.17g", base);
    const char *ty = rs ? config_get_string(rs, "rope_type") : NULL;
    if (rs && !ty) ty = config_get_string(rs, "type");
    if (rs && !ty) return posemb_fail(err, POSEMB_EFORMAT, "%s: rope_scaling has no \"rope_type\"", path);
    if (!ty) ty = "default";
    if (!strcmp(ty, "mrope") && config_vl_text(c)) ty = "default"; /* HF's Qwen2VLTextConfig: "mrope" is "default" */
    static const char *const known[] = {"default", "linear",   "dynamic",      "yarn",
                                        "llama3",  "longrope", "proportional", NULL};
    int k = 0;
    while (known[k] && strcmp(ty, known[k])) k++;
    if (!known[k] || (neox && k == 6))
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: rope_scaling type \"%s\" is not supported (linear, dynamic, yarn, llama3, "
                           "longrope%s)",
                           path, ty, neox ? "" : ", proportional");
    if (!neox && k != 6 && f != 1.0)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: partial_rotary_factor %g with rope_type %s: HF's %s rotates the whole head there "
                           "(only rope_type \"proportional\" rotates part of it)",
                           path, f, ty, c->model_type);
    size_t n = strlen(spec);
    if (neox && f != 1.0) snprintf(spec + n, sizeof spec - n, ",frac=%.17g", f);
    if (k == 6) st = proportional_spec(rs, f, spec, sizeof spec, path, err);
    else if (k > 0) st = scaling_spec(r, rs, ty, k, c, spec, sizeof spec, path, err);
    if (st) return st;
    snprintf(c->pe, sizeof c->pe, "%s", spec);
    return POSEMB_OK;
}

/* Options of a rope spec Hugging Face's rope_scaling can say, by HF key. */
static const char *const HF_SCALING_KEYS[][2] = {{"factor", "factor"},
                                                 {"beta_fast", "beta_fast"},
                                                 {"beta_slow", "beta_slow"},
                                                 {"mscale", "mscale"},
                                                 {"mscale_all_dim", "mscale_all_dim"},
                                                 {"attention_factor", "attention_factor"},
                                                 {"low_freq_factor", "low_freq_factor"},
                                                 {"high_freq_factor", "high_freq_factor"},
                                                 {"original", "original_max_position_embeddings"}};

/* A rope spec as HF's config keys: *base, and into rs (when it scales) the
 * rope_scaling object; *frac (when not NULL) the block of each head that
 * rotates, GPT-NeoX's rotary_pct. 0 when the spec says what HF cannot
 * (another PE or a second component, interleaved pairs, a partial rotation
 * where frac is NULL, p-RoPE, longrope's factor file, M-RoPE: config_mrope.c). */
int config_rope_as_hf(const char *spec, double *base, double *frac, cJSON *rs)
{
    if (strncmp(spec, "rope", 4) || (spec[4] && spec[4] != ':')) return 0;
    if (*posemb_pe_component_end(spec)) return 0; /* "rope:...+random:max=N": a second component */
    *base = 10000.0;
    if (frac) *frac = 1.0;
    char buf[sizeof((posemb_config *)0)->pe];
    snprintf(buf, sizeof buf, "%s", spec[4] ? spec + 5 : "");
    int scaled = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) return 0;
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        char *end;
        double x = strtod(v, &end);
        int num = end != v && !*end; /* the whole value a number (not "2+random:max=64") */
        if (!strcmp(k, "base") || (!strcmp(k, "frac") && frac)) {
            if (!num) return 0;
            *(!strcmp(k, "base") ? base : frac) = x;
        } else if (!strcmp(k, "partial") && frac && !strcmp(v, "neox")) continue;
        else if (!strcmp(k, "pairing") ? strcmp(v, "halves") : !strcmp(k, "frac") ? strcmp(v, "1") : 0) return 0;
        else if (!strcmp(k, "pairing") || !strcmp(k, "frac")) continue;
        else if (!strcmp(k, "truncate")) cJSON_AddBoolToObject(rs, "truncate", !strcmp(v, "on"));
        else if (!strcmp(k, "scaling")) {
            if (!strcmp(v, "none")) continue;
            if (!strcmp(v, "ntk") || !strcmp(v, "longrope")) return 0;
            cJSON_AddStringToObject(rs, "rope_type", v);
            cJSON_AddStringToObject(rs, "type", v); /* the key transformers before 4.45 read */
            scaled = 1;
        } else {
            size_t i = 0, n = sizeof HF_SCALING_KEYS / sizeof *HF_SCALING_KEYS;
            while (i < n && strcmp(k, HF_SCALING_KEYS[i][0])) i++;
            if (i == n || !num) return 0;
            cJSON_AddNumberToObject(rs, HF_SCALING_KEYS[i][1], x);
        }
    }
    return scaled ? 2 : 1;
}

/* linear and dynamic as transformers before 4.43 require them, exactly
 * {"type", "factor"} (a float), which later versions read too: dynamic's
 * original length is max_position_embeddings there, so it goes unsaid when
 * it is that. The newer types keep rope_type, which only newer versions
 * know anyway. */
void config_legacy_scaling(cJSON *rs, int max_position)
{
    const char *ty = config_get_string(rs, "type");
    if (!ty || (strcmp(ty, "linear") && strcmp(ty, "dynamic"))) return;
    cJSON_DeleteItemFromObjectCaseSensitive(rs, "rope_type");
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
    if (cJSON_IsNumber(orig) && orig->valuedouble == max_position)
        cJSON_DeleteItemFromObjectCaseSensitive(rs, "original_max_position_embeddings");
}
