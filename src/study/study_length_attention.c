/* Where each length-study decoder attends at each evaluation length, on the
 * held-out text: per layer, the attention-weighted distance sum_j p_ij |i-j|
 * and the mass on the first token, averaged over heads and query rows
 * (posemb_attn_profile_of). Past the training length this shows what a PE
 * does with the positions it never saw: attention that spreads towards
 * uniform, or stays local. Kept in out/attention.jsonl, one line per run and
 * length, so that a report needs only the models not measured yet. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "core/fileio.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_store.h"
#include "study_length_impl.h"
#include "model/model_internal.h"

size_t study_att_index(const posemb_study_config *c, int t, int p, int s, int m)
{
    return (((size_t)t * c->n_pes + p) * c->n_seeds + s) * c->n_mults + m;
}

/* The mean of a JSON array of numbers; NaN when empty or when one is not a number (NaN was written as null). */
static double array_mean(const cJSON *a)
{
    double sum = 0;
    int n = 0;
    for (const cJSON *x = cJSON_IsArray(a) ? a->child : NULL; x; x = x->next, n++) {
        if (!cJSON_IsNumber(x)) return NAN;
        sum += x->valuedouble;
    }
    return n ? sum / n : NAN;
}

typedef struct att_read {
    const posemb_study_config *c;
    study_att_cell *cells;
} att_read;

/* One attention.jsonl line into its cell (a study_line_fn): lines of other
 * tasks, PEs, seeds or lengths are skipped, and a later line of the same
 * run and length replaces an earlier one. */
static posemb_status read_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n;
    (void)err;
    const posemb_study_config *c = ((const att_read *)ctx)->c;
    study_att_cell *cells = ((const att_read *)ctx)->cells;
    int t =
        study_row_of(c->tasks[0], sizeof c->tasks[0], c->n_tasks, cJSON_GetStringValue(cJSON_GetObjectItem(j, "task")));
    int p = study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, cJSON_GetStringValue(cJSON_GetObjectItem(j, "pe")));
    const cJSON *seed = cJSON_GetObjectItem(j, "seed"), *len = cJSON_GetObjectItem(j, "length");
    int s = -1, m = -1;
    for (int k = 0; cJSON_IsNumber(seed) && k < c->n_seeds; k++)
        if (seed->valueint == c->seeds[k]) s = k;
    for (int k = 0; cJSON_IsNumber(len) && k < c->n_mults; k++)
        if (len->valueint == c->n_train * c->mults[k]) m = k;
    if (t < 0 || p < 0 || s < 0 || m < 0) return POSEMB_OK;
    study_att_cell *cl = &cells[study_att_index(c, t, p, s, m)];
    cl->in = 1;
    cl->unreached = cJSON_GetObjectItem(j, "not_measured") != NULL;
    cl->dist = array_mean(cJSON_GetObjectItem(j, "mean_distance"));
    cl->sink = array_mean(cJSON_GetObjectItem(j, "first_token_mass"));
    return POSEMB_OK;
}

posemb_status study_length_attention_read(const posemb_study_config *c, const char *out, study_att_cell *cells,
                                          posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    size_t n = study_att_index(c, c->n_tasks, 0, 0, 0);
    for (size_t i = 0; i < n; i++) cells[i] = (study_att_cell){0, 0, NAN, NAN};
    if (posemb_path_join(path, sizeof path, out, "attention.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return POSEMB_OK; /* nothing measured yet */
    att_read ctx = {c, cells};
    posemb_status st = study_each_line(f, read_line, &ctx, err);
    fclose(f);
    return st;
}

/* The profile of model m on B windows of L held-out tokens, averaged over heads, per layer. */
static posemb_status profile_at(posemb_model *m, const posemb_corpus *held_out, int L, double *dist, double *sink,
                                posemb_error *err)
{
    posemb_attn_profile pr = {0};
    posemb_status st = study_length_profile(m, held_out, L, &pr, err);
    for (int l = 0; !st && l < pr.layers; l++) {
        dist[l] = sink[l] = 0;
        for (int h = 0; h < pr.heads; h++) {
            dist[l] += pr.mean_dist[l * pr.heads + h] / pr.heads;
            sink[l] += pr.sink[l * pr.heads + h] / pr.heads;
        }
    }
    posemb_attn_profile_free(&pr);
    return st;
}

/* The line of one run at length L (dist, sink: per layer; NULL: the PE's
 * table ends before L, nothing measured); NULL when out of memory. */
static char *att_line(const posemb_study_config *c, int t, int p, int s, int L, int layers, int windows,
                      const double *dist, const double *sink)
{
    cJSON *j = cJSON_CreateObject();
    char *text = NULL;
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "task", c->tasks[t]);
    cJSON_AddStringToObject(j, "pe", c->pes[p]);
    cJSON_AddNumberToObject(j, "seed", c->seeds[s]);
    cJSON_AddNumberToObject(j, "length", L);
    if (dist) {
        cJSON_AddNumberToObject(j, "windows", windows);
        cJSON_AddItemToObject(j, "mean_distance", cJSON_CreateDoubleArray(dist, layers));
        cJSON_AddItemToObject(j, "first_token_mass", cJSON_CreateDoubleArray(sink, layers));
    } else {
        cJSON_AddStringToObject(j, "not_measured", "the PE's table ends before this length");
    }
    char *body = cJSON_PrintUnformatted(j);
    size_t n = body ? strlen(body) : 0;
    if (body && (text = malloc(n + 2))) {
        memcpy(text, body, n);
        memcpy(text + n, "\n", 2);
    }
    cJSON_free(body);
    cJSON_Delete(j);
    return text;
}

/* Run (t, p, s)'s model folder into dir; 1 when it holds a trained model. */
static int trained_model(const posemb_study_config *c, const char *out, int t, int p, int s, char *dir, size_t cap)
{
    char name[160], file[POSEMB_PATH_MAX];
    struct stat sb;
    study_folder_of(c->pes[p], name, sizeof name);
    int n = snprintf(dir, cap, "%s/models/%s-%s-s%d", out, c->tasks[t], name, c->seeds[s]);
    return n > 0 && (size_t)n < cap && !posemb_path_join(file, sizeof file, dir, "model.safetensors") &&
           !stat(file, &sb) && !posemb_path_join(file, sizeof file, dir, "config.json") && !stat(file, &sb);
}

/* Run (t, p, s) at each length not yet in (in[m] = 0), from its model
 * folder dir, appended to path; a length its PE's table cannot reach gets a
 * line that says so. */
static posemb_status measure_run(const posemb_study_config *c, int t, int p, int s, const char *dir,
                                 const unsigned char *in, const posemb_corpus *held_out, const char *path,
                                 posemb_error *err)
{
    char file[POSEMB_PATH_MAX];
    posemb_config cfg;
    posemb_status st = posemb_path_join(file, sizeof file, dir, "config.json")
                           ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir)
                           : posemb_config_load(&cfg, file, err);
    if (!st) st = posemb_config_set_head(&cfg, POSEMB_HEAD_CLM, 0, err);
    double *dist = st ? NULL : calloc((size_t)cfg.layers * 2, sizeof *dist);
    if (!st && !dist) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (int m = 0; !st && m < c->n_mults; m++) {
        if (in[m]) continue;
        int L = c->n_train * c->mults[m], context;
        posemb_model *model = NULL;
        st = posemb_lm_load_at(dir, &cfg, L, &model, &context, err);
        int reached = !st && context == L;
        if (reached) st = profile_at(model, held_out, L, dist, dist + cfg.layers, err);
        char *line = st ? NULL
                        : att_line(c, t, p, s, L, cfg.layers, posemb_attn_windows(cfg.layers, cfg.heads, L),
                                   reached ? dist : NULL, dist + cfg.layers);
        if (!st) st = line ? study_append_results(path, line, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        free(line);
        posemb_model_free(model);
    }
    free(dist);
    return st;
}

posemb_status study_length_attention(const posemb_study_config *c, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], desc[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX];
    study_att_cell *cells = malloc(study_att_index(c, c->n_tasks, 0, 0, 0) * sizeof *cells);
    if (!cells) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = posemb_path_join(path, sizeof path, out, "attention.jsonl")
                           ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out)
                           : study_length_attention_read(c, out, cells, err);
    posemb_tokenizer *tok = NULL;
    posemb_corpus held_out = {0};
    unsigned char in[8];
    for (int t = 0; !st && t < c->n_tasks; t++)
        for (int p = 0; !st && p < c->n_pes; p++)
            for (int s = 0; !st && s < c->n_seeds; s++) {
                int missing = 0;
                for (int m = 0; m < c->n_mults; m++) missing |= !(in[m] = cells[study_att_index(c, t, p, s, m)].in);
                if (!missing || !trained_model(c, out, t, p, s, dir, sizeof dir)) continue; /* none, or not yet */
                if (!tok) st = study_length_tokenizer(c, out, &tok, desc, sizeof desc, err);
                if (!st && !held_out.tokens) st = study_length_held_out(c, out, tok, desc, &held_out, err);
                if (!st) st = measure_run(c, t, p, s, dir, in, &held_out, path, err);
            }
    posemb_corpus_free(&held_out);
    posemb_tokenizer_free(tok);
    free(cells);
    return st;
}
