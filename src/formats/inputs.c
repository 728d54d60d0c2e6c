#include "formats/inputs.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

/* Reads a [B][T] matrix of integers in [lo, hi] into out (B, T set by the first call). */
static posemb_status read_matrix(const cJSON *v, const char *key, const char *path, int *B, int *T, long lo, long hi,
                                 int32_t *out, posemb_error *err)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != *B)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" must be a list of %d rows", path, key, *B);
    for (int b = 0; b < *B; b++) {
        const cJSON *row = cJSON_GetArrayItem(v, b);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != *T)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\"[%d] must be a list of %d integers", path, key, b, *T);
        for (int t = 0; t < *T; t++) {
            const cJSON *x = cJSON_GetArrayItem(row, t);
            double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
            if (!(d >= lo && d <= hi) || d != floor(d))
                return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\"[%d][%d] must be an integer in [%ld, %ld]", path,
                                   key, b, t, lo, hi);
            out[(size_t)b * *T + t] = (int32_t)d;
        }
    }
    return POSEMB_OK;
}

/* Every key is one posemb reads, or a comment ("_note"): a key HF's
 * tokenizer or a script adds that posemb would not act on is refused, not
 * ignored. */
static posemb_status check_keys(const cJSON *root, const char *path, posemb_error *err)
{
    static const char *const KEYS[] = {"input_ids", "attention_mask", "token_type_ids", "position_ids", NULL};
    for (const cJSON *k = root->child; k; k = k->next) {
        int known = k->string[0] == '_';
        for (int i = 0; !known && KEYS[i]; i++) known = !strcmp(k->string, KEYS[i]);
        if (!known)
            return posemb_fail(err, POSEMB_EFORMAT,
                               "%s: unknown key \"%s\" (posemb reads input_ids, attention_mask, token_type_ids, "
                               "position_ids; keys starting with '_' are comments)",
                               path, k->string);
    }
    return POSEMB_OK;
}

/* An optional [B][T] integer matrix (absent or null: *out stays NULL). */
static posemb_status read_optional(const cJSON *root, const char *key, const char *path, posemb_inputs *in, long lo,
                                   long hi, int32_t **out, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return POSEMB_OK;
    if (!(*out = malloc((size_t)in->B * in->T * sizeof **out)))
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    return read_matrix(v, key, path, &in->B, &in->T, lo, hi, *out, err);
}

/* position_ids [3][B][T]: Qwen2-VL's temporal, height and width ids (M-RoPE). */
static int three_axes(const cJSON *v)
{
    const cJSON *first = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 0) : NULL;
    return cJSON_IsArray(first) && cJSON_IsArray(cJSON_GetArrayItem(first, 0));
}

static posemb_status read_axes(const cJSON *v, const char *path, posemb_inputs *in, posemb_error *err)
{
    if (cJSON_GetArraySize(v) != 3)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: 3D \"position_ids\" must be 3 axes of [%d][%d]", path, in->B,
                           in->T);
    size_t n = (size_t)in->B * in->T;
    if (!(in->axes = malloc(3 * n * sizeof *in->axes)))
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    posemb_status st = POSEMB_OK;
    for (int a = 0; a < 3 && !st; a++) {
        char key[32];
        snprintf(key, sizeof key, "position_ids[%d]", a); /* axis a, named in the messages */
        st = read_matrix(cJSON_GetArrayItem(v, a), key, path, &in->B, &in->T, 0, INT32_MAX - 1, in->axes + a * n, err);
    }
    return st;
}

static posemb_status parse(const cJSON *root, posemb_inputs *in, const char *path, posemb_error *err)
{
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(root, "input_ids");
    posemb_status st = check_keys(root, path, err);
    if (st) return st;
    if (!cJSON_IsArray(ids) || !cJSON_GetArraySize(ids) || !cJSON_IsArray(cJSON_GetArrayItem(ids, 0)) ||
        !cJSON_GetArraySize(cJSON_GetArrayItem(ids, 0)))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"input_ids\" must be a non-empty list of non-empty lists", path);
    in->B = cJSON_GetArraySize(ids);
    in->T = cJSON_GetArraySize(cJSON_GetArrayItem(ids, 0));
    size_t n = (size_t)in->B * in->T;
    in->ids = malloc(n * sizeof *in->ids);
    in->mask = malloc(n * sizeof *in->mask);
    if (!in->ids || !in->mask) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    st = read_matrix(ids, "input_ids", path, &in->B, &in->T, 0, INT32_MAX, in->ids, err);
    for (size_t i = 0; i < n; i++) in->mask[i] = 1.0f;
    int32_t *mask = NULL;
    if (!st) st = read_optional(root, "attention_mask", path, in, 0, 1, &mask, err);
    for (size_t i = 0; !st && mask && i < n; i++) in->mask[i] = (float)mask[i];
    free(mask);
    if (!st) st = read_optional(root, "token_type_ids", path, in, 0, INT32_MAX, &in->types, err);
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "position_ids");
    if (!st && three_axes(pos)) st = read_axes(pos, path, in, err);
    else if (!st) st = read_optional(root, "position_ids", path, in, 0, INT32_MAX - 1, &in->positions, err);
    return st;
}

posemb_status posemb_inputs_load(posemb_inputs *in, const char *path, posemb_error *err)
{
    memset(in, 0, sizeof *in);
    char *text;
    size_t n;
    posemb_status st = posemb_read_data_file(path, 64u << 20, &text, &n, err); /* grows with the file, up to 64 MiB */
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    st = cJSON_IsObject(root) ? parse(root, in, path, err)
                              : posemb_fail(err, POSEMB_EFORMAT, "%s: not a JSON object", path);
    cJSON_Delete(root);
    if (st) posemb_inputs_free(in);
    return st;
}

void posemb_inputs_free(posemb_inputs *in)
{
    free(in->ids);
    free(in->types);
    free(in->mask);
    free(in->positions);
    free(in->axes);
    memset(in, 0, sizeof *in);
}
