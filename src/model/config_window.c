/* Sliding-window attention in the Llama family's config.json, as
 * transformers reads it: an explicit layer_types list ("sliding_attention"
 * or "full_attention" per layer) first; else Mistral's sliding_window on
 * every layer (MistralConfig's default 4096 when the key is absent, none
 * when null); else Qwen2's and Qwen3's use_sliding_window with
 * sliding_window on the layers from max_window_layers (default 28) on; else
 * Gemma 3's sliding_window_pattern (default 6: every sixth layer global,
 * the others sliding, sliding_window 4096 by default). The
 * window W lets query i see keys i - W < j <= i (masking_utils.py). */
#include <cjson/cJSON.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

posemb_status config_layer_types(const cJSON *types, const posemb_config *c, const char *kind, unsigned char *bits,
                                 const char *path, posemb_error *err)
{
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != c->layers)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: layer_types must list one type for each of the %d layers", path,
                           c->layers);
    int l = 0;
    for (const cJSON *t = types->child; t; t = t->next, l++) {
        const char *s = cJSON_IsString(t) ? t->valuestring : "";
        if (!strcmp(s, kind)) config_set_bit(bits, l);
        else if (strcmp(s, "full_attention"))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: layer_types[%d] is not \"full_attention\" or \"%s\"", path, l,
                               kind);
    }
    return POSEMB_OK;
}

/* Qwen2 and Qwen3: use_sliding_window, and the layers from max_window_layers on. */
static posemb_status parse_qwen_windows(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    int use = 0, first = 28; /* Qwen2Config's max_window_layers */
    posemb_status st = config_get_bool(r, "use_sliding_window", &use, path, err);
    if (!st) st = config_get_int(r, "max_window_layers", 0, 1 << 20, &first, path, err);
    if (!st && use && c->sliding_window > 0)
        for (int l = first; l < c->layers; l++) config_set_bit(c->sliding_layers, l);
    return st;
}

/* Gemma 3 before layer_types: layer i slides unless (i + 1) is a multiple of sliding_window_pattern. */
static posemb_status parse_gemma_pattern(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    int pattern = 6;
    posemb_status st = config_get_int(r, "sliding_window_pattern", 1, 1 << 20, &pattern, path, err);
    for (int l = 0; !st && c->sliding_window > 0 && l < c->layers; l++)
        if ((l + 1) % pattern) config_set_bit(c->sliding_layers, l);
    return st;
}

posemb_status config_parse_windows(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    memset(c->sliding_layers, 0, sizeof c->sliding_layers);
    c->sliding_window = 0;
    int mistral = !strcmp(c->model_type, "mistral"), qwen = !strncmp(c->model_type, "qwen", 4), gemma = c->gemma;
    if (!mistral && !qwen && !gemma) return POSEMB_OK; /* LlamaConfig has no windows */
    if (c->layers > 8 * (int)sizeof c->sliding_layers)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %d layers: posemb's sliding windows take at most %d", path,
                           c->layers, 8 * (int)sizeof c->sliding_layers);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(r, "sliding_window");
    c->sliding_window = cJSON_IsNull(sw) ? 0 : 4096; /* MistralConfig's and Qwen2Config's default */
    posemb_status st = config_get_int(r, "sliding_window", 1, 1 << 30, &c->sliding_window, path, err);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(r, "layer_types");
    if (st) return st;
    if (types && !cJSON_IsNull(types))
        st = config_layer_types(types, c, "sliding_attention", c->sliding_layers, path, err);
    else if (mistral && c->sliding_window > 0)
        for (int l = 0; l < c->layers; l++) config_set_bit(c->sliding_layers, l);
    else if (qwen) st = parse_qwen_windows(r, c, path, err);
    else if (gemma) st = parse_gemma_pattern(r, c, path, err);
    int any = 0;
    for (size_t i = 0; i < sizeof c->sliding_layers; i++) any |= c->sliding_layers[i];
    if (!st && any && c->sliding_window == 0)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: layer_types has sliding layers but sliding_window is null", path);
    return st;
}

/* The first layer from which every layer slides and none before it does; -1 when the pattern is another. */
static int qwen_first_window(const posemb_config *c)
{
    int first = c->layers;
    while (first > 0 && posemb_config_window(c, first - 1)) first--;
    for (int l = 0; l < first; l++)
        if (posemb_config_window(c, l)) return -1;
    return first;
}

void config_windows_json(cJSON *r, const posemb_config *c)
{
    int any = 0;
    for (int l = 0; l < c->layers; l++) any |= posemb_config_window(c, l) > 0;
    if (!any) { /* Mistral's, Qwen's and Gemma's configs default to a window: say there is none */
        if (strcmp(c->model_type, "mistral") && strncmp(c->model_type, "qwen", 4) && !c->gemma) return;
        cJSON_AddNullToObject(r, "sliding_window");
        if (!strncmp(c->model_type, "qwen", 4)) cJSON_AddFalseToObject(r, "use_sliding_window");
        cJSON *full = c->gemma ? cJSON_AddArrayToObject(r, "layer_types") : NULL; /* not its default pattern */
        for (int l = 0; full && l < c->layers; l++) cJSON_AddItemToArray(full, cJSON_CreateString("full_attention"));
        return;
    }
    cJSON_AddNumberToObject(r, "sliding_window", c->sliding_window);
    cJSON *types = cJSON_AddArrayToObject(r, "layer_types"); /* what transformers 4.53+ read */
    for (int l = 0; l < c->layers; l++)
        cJSON_AddItemToArray(types,
                             cJSON_CreateString(posemb_config_window(c, l) ? "sliding_attention" : "full_attention"));
    int first = qwen_first_window(c); /* and the keys older versions read, where they can say it */
    if (!strncmp(c->model_type, "qwen", 4) && first >= 0) {
        cJSON_AddTrueToObject(r, "use_sliding_window");
        cJSON_AddNumberToObject(r, "max_window_layers", first);
    }
}
