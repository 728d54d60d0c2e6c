/* The text decoders of Qwen2-VL and Qwen3-VL (model_type qwen2_vl_text,
 * qwen3_vl_text): Qwen2's and Qwen3's layers with M-RoPE, whose pairs split
 * between the temporal, height and width ids of 3D position_ids. Their
 * config.json says the split in rope_scaling (HF 5: rope_parameters):
 * "mrope_section" [T, H, W] pairs. Qwen2-VL's layout is T..T H..H W..W
 * (HF's Qwen2VLTextConfig turns its "type": "mrope" into "default");
 * Qwen3-VL's Qwen3VLTextRotaryEmbedding always interleaves T H W T H W
 * (apply_interleaved_mrope, sections [24, 20, 20] when the key is absent).
 * The vision towers are not built: posemb runs the text decoder alone. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "model_impl.h"
#include "model/model_internal.h"

static const cJSON *rope_object(const cJSON *r)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r, "rope_scaling");
    if (!cJSON_IsObject(rs)) rs = cJSON_GetObjectItemCaseSensitive(r, "rope_parameters");
    return cJSON_IsObject(rs) ? rs : NULL;
}

posemb_status config_mrope_spec(const cJSON *r, posemb_config *c, const char *path, posemb_error *err)
{
    int vl = config_vl_text(c), sec[3] = {24, 20, 20};
    const cJSON *rs = rope_object(r);
    const cJSON *list = rs ? cJSON_GetObjectItemCaseSensitive(rs, "mrope_section") : NULL;
    const cJSON *inter = rs ? cJSON_GetObjectItemCaseSensitive(rs, "mrope_interleaved") : NULL;
    if (vl == 2 && !list)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: a qwen2_vl_text config needs rope_scaling \"mrope_section\"",
                           path);
    if (vl == 2 && inter && !cJSON_IsFalse(inter))
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: rope_scaling \"mrope_interleaved\" on qwen2_vl_text: HF's Qwen2-VL does not interleave "
                           "(qwen3_vl_text does)",
                           path);
    if (list) {
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != 3)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: rope_scaling \"mrope_section\" is not 3 numbers", path);
        for (int a = 0; a < 3; a++) {
            const cJSON *v = cJSON_GetArrayItem(list, a);
            if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1024 ||
                v->valuedouble != (int)v->valuedouble)
                return posemb_fail(err, POSEMB_EFORMAT,
                                   "%s: rope_scaling \"mrope_section\"[%d] is not a pair count in [0, 1024]", path, a);
            sec[a] = (int)v->valuedouble;
        }
    }
    size_t n = strlen(c->pe);
    snprintf(c->pe + n, sizeof c->pe - n, ",mrope=%d|%d|%d%s", sec[0], sec[1], sec[2],
             vl == 3 ? ",mrope_interleaved=on" : "");
    return POSEMB_OK;
}

/* c->pe without its mrope options into rest ("rope:..."), the sections into sec and the layout into *inter;
 * 0 when the spec is not one rope component with mrope=. */
static int split_mrope(const char *pe, char *rest, size_t cap, int sec[3], int *inter)
{
    if (strncmp(pe, "rope:", 5) || strchr(pe, '+')) return 0;
    char buf[sizeof((posemb_config *)0)->pe];
    snprintf(buf, sizeof buf, "%s", pe + 5);
    snprintf(rest, cap, "rope");
    int found = 0;
    *inter = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char end;
        if (sscanf(tok, "mrope=%d|%d|%d%c", &sec[0], &sec[1], &sec[2], &end) == 3) found = 1;
        else if (!strncmp(tok, "mrope=", 6)) return 0;
        else if (!strcmp(tok, "mrope_interleaved=on") || !strcmp(tok, "mrope_interleaved=off")) *inter = tok[19] == 'n';
        else snprintf(rest + strlen(rest), cap - strlen(rest), "%s%s", strlen(rest) > 4 ? "," : ":", tok);
    }
    return found;
}

void config_mrope_json(cJSON *r, const posemb_config *c)
{
    int vl = config_vl_text(c), sec[3], inter;
    if (!vl) return;
    char rest[sizeof c->pe];
    double base;
    cJSON *rs = cJSON_CreateObject();
    /* HF's class for this model_type runs one layout: another, or a spec HF cannot say, stays in posemb_pe */
    int hf = rs && split_mrope(c->pe, rest, sizeof rest, sec, &inter) && inter == (vl == 3)
                 ? config_rope_as_hf(rest, &base, NULL, rs)
                 : 0;
    if (!hf) {
        cJSON_Delete(rs);
        if (!cJSON_GetObjectItemCaseSensitive(r, "posemb_pe")) cJSON_AddStringToObject(r, "posemb_pe", c->pe);
        return;
    }
    if (hf == 1) cJSON_AddStringToObject(rs, "rope_type", "default");
    cJSON_AddItemToObject(rs, "mrope_section", cJSON_CreateIntArray(sec, 3));
    if (inter) cJSON_AddBoolToObject(rs, "mrope_interleaved", 1);
    cJSON_DeleteItemFromObjectCaseSensitive(r, "rope_scaling");
    cJSON_DeleteItemFromObjectCaseSensitive(r, "posemb_pe");
    cJSON_DeleteItemFromObjectCaseSensitive(r, "rope_theta");
    cJSON_AddNumberToObject(r, "rope_theta", base);
    cJSON_AddItemToObject(r, "rope_scaling", rs);
}
