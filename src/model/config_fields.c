/* Reading and writing config.json's fields, for every architecture's config
 * file: typed getters with their limits (a value outside them is refused,
 * naming the file and the key), the sizes every model has, floats written
 * as floats, the file itself read with a size limit. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "posemb/model.h"
#include "model_impl.h"
#include "model/model_internal.h"

/* Reads integer key into *out when present; it must be a whole number in [lo, hi]. */
posemb_status config_get_int(const cJSON *root, const char *key, int lo, int hi, int *out, const char *path,
                             posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, hi);
    *out = (int)v->valuedouble;
    return POSEMB_OK;
}

posemb_status config_get_float(const cJSON *root, const char *key, double lo, double hi, float *out, const char *path,
                               posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" must be a number in [%g, %g]", path, key, lo, hi);
    *out = (float)v->valuedouble;
    return POSEMB_OK;
}

const char *config_get_string(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

posemb_status config_parse_act(const char *act, posemb_nn_gelu_kind *out, const char *path, posemb_error *err)
{
    if (!act) return POSEMB_OK;
    if (!strcmp(act, "gelu")) *out = POSEMB_NN_GELU_ERF;
    else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh")) *out = POSEMB_NN_GELU_TANH;
    else return posemb_fail(err, POSEMB_EFORMAT, "%s: activation \"%s\" is not supported (gelu, gelu_new)", path, act);
    return POSEMB_OK;
}

posemb_status config_get_bool(const cJSON *r, const char *key, int *out, const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!cJSON_IsBool(v)) return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" must be true or false", path, key);
    *out = cJSON_IsTrue(v);
    return POSEMB_OK;
}

void config_sizes_json(cJSON *r, const posemb_config *c)
{
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "hidden_size", c->hidden);
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->layers);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->heads);
    cJSON_AddNumberToObject(r, "intermediate_size", c->intermediate);
    cJSON_AddNumberToObject(r, "max_position_embeddings", c->max_position);
}

posemb_status config_get_sizes(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    if ((st = config_get_int(r, "vocab_size", 1, CONFIG_MAX_VOCAB, &c->vocab_size, path, err)) ||
        (st = config_get_int(r, "hidden_size", 1, CONFIG_MAX_WIDTH, &c->hidden, path, err)) ||
        (st = config_get_int(r, "num_hidden_layers", 1, CONFIG_MAX_LAYERS, &c->layers, path, err)) ||
        (st = config_get_int(r, "num_attention_heads", 1, CONFIG_MAX_HEADS, &c->heads, path, err)) ||
        (st = config_get_int(r, "intermediate_size", 1, CONFIG_MAX_INTERMEDIATE, &c->intermediate, path, err)))
        return st;
    return config_get_int(r, "max_position_embeddings", 1, CONFIG_MAX_POSITIONS, &c->max_position, path, err);
}

posemb_status config_read_json(const char *path, size_t max_bytes, cJSON **root, posemb_error *err)
{
    char *text;
    size_t n;
    posemb_status st = posemb_read_data_file(path, max_bytes, &text, &n, err);
    *root = st ? NULL : cJSON_ParseWithLength(text, n);
    if (!st) free(text);
    return st;
}

int posemb_config_head_dim(const posemb_config *c) { return c->head_dim ? c->head_dim : c->hidden / c->heads; }

int posemb_config_window(const posemb_config *c, int l)
{
    int on = l >= 0 && l < 8 * (int)sizeof c->sliding_layers && config_bit(c->sliding_layers, l);
    return on ? c->sliding_window : 0;
}

/* The shortest decimal that reads back as the same float: 1e-12, not 9.99999996e-13. */
double config_shortest(float x)
{
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)x);
        if ((float)strtod(buf, NULL) == x) break;
    }
    return strtod(buf, NULL);
}

int config_vl_text(const posemb_config *c)
{
    return !strcmp(c->model_type, "qwen2_vl_text") ? 2 : !strcmp(c->model_type, "qwen3_vl_text") ? 3 : 0;
}
