/* longrope's factors in a saved model. A spec names them by file
 * (rope:scaling=longrope,factors=FILE.json), which a model folder moved to
 * another machine would lose. So the folder's config.json carries them
 * itself, under "rope_scaling" as Hugging Face writes longrope, and the spec
 * it stores says factors=config.json; a relative factors path in a loaded
 * config is taken relative to the config's folder. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

#define FACTORS_KEY "factors="

/* The value of factors= in spec: *at its offset, return its length; 0 when absent. */
static size_t factors_value(const char *spec, size_t *at)
{
    for (const char *p = strstr(spec, FACTORS_KEY); p; p = strstr(p + 1, FACTORS_KEY))
        if (p == spec || p[-1] == ',' || p[-1] == ':') {
            *at = (size_t)(p - spec) + strlen(FACTORS_KEY);
            return strcspn(spec + *at, ",+");
        }
    return 0;
}

/* spec with its factors value replaced by value, into out (cap bytes). */
static int replace_value(const char *spec, size_t at, size_t len, const char *value, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%.*s%s%s", (int)at, spec, value, spec + at + len);
    return n >= 0 && (size_t)n < cap;
}

posemb_status config_embed_factors(const char *spec, cJSON *root, char *out, size_t cap, const char *path,
                                   posemb_error *err)
{
    size_t at, len = factors_value(spec, &at);
    snprintf(out, cap, "%s", spec);
    if (!len) return POSEMB_OK;
    char file[1024];
    snprintf(file, sizeof file, "%.*s", (int)len, spec + at);
    cJSON *src;
    posemb_status st = config_read_json(file, 1u << 24, &src, err);
    if (st) return st;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(src, "rope_scaling");
    if (!cJSON_IsObject(obj)) obj = src;
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(obj, "short_factor"),
                *lf = cJSON_GetObjectItemCaseSensitive(obj, "long_factor");
    if (!cJSON_IsArray(sf) || !cJSON_IsArray(lf)) {
        cJSON_Delete(src);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: no short_factor and long_factor arrays", file);
    }
    cJSON *rs = cJSON_AddObjectToObject(root, "rope_scaling");
    cJSON_AddStringToObject(rs, "rope_type", "longrope");
    cJSON_AddItemToObject(rs, "short_factor", cJSON_Duplicate(sf, 1));
    cJSON_AddItemToObject(rs, "long_factor", cJSON_Duplicate(lf, 1));
    cJSON_Delete(src);
    if (!replace_value(spec, at, len, "config.json", out, cap))
        return posemb_fail(err, POSEMB_EINVAL, "%s: the PE spec does not fit with factors=config.json", path);
    return POSEMB_OK;
}

posemb_status config_resolve_factors(posemb_config *c, const char *path, posemb_error *err)
{
    size_t at, len = factors_value(c->pe, &at);
    if (!len || c->pe[at] == '/') return POSEMB_OK;
    const char *slash = strrchr(path, '/');
    if (!slash) return POSEMB_OK; /* the config is in the working folder: the path is right as it is */
    char value[1024], spec[sizeof c->pe];
    snprintf(value, sizeof value, "%.*s/%.*s", (int)(slash - path), path, (int)len, c->pe + at);
    if (!replace_value(c->pe, at, len, value, spec, sizeof spec))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: posemb_pe with factors=%s does not fit in %zu bytes", path, value,
                           sizeof c->pe);
    snprintf(c->pe, sizeof c->pe, "%s", spec);
    return POSEMB_OK;
}
