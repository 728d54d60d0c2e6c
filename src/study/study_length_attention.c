/* Where each length-study decoder attends at each evaluation length, on the
 * held-out text: per layer, the attention-weighted distance sum_j p_ij |i-j|
 * and the mass on the first token, averaged over heads and query rows
 * (posemb_attn_profile_of). Past the training length this shows what a PE
 * does with the positions it never saw: attention that spreads towards
 * uniform, or stays local. Kept in out/attention.jsonl, one line per run and
 * length, so that a report needs only the models not measured yet. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/analysis.h"
#include "posemb/fileio.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_length_impl.h"

/* Windows per length: 8 up to 256 tokens, then fewer, so that the maps a
 * forward pass keeps (windows x heads x L^2 per layer) stay near 64 MB a
 * layer for 4 heads at 2048. */
static int windows_at(int L)
{
    int w = 2048 / L;
    return w > 8 ? 8 : w < 1 ? 1 : w;
}

/* What attention.jsonl holds: which (task, pe, seed, length) are in. */
typedef struct att_seen {
    const posemb_study_config *c;
    unsigned char *in; /* [task][pe][seed][mult] */
} att_seen;

static size_t seen_at(const posemb_study_config *c, int t, int p, int s, int m)
{
    return (((size_t)t * c->n_pes + p) * c->n_seeds + s) * c->n_mults + m;
}

static int index_in(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

/* One attention.jsonl line into its att_seen (a study_line_fn); lines of
 * other configs are kept in the file and not counted. */
static posemb_status mark_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n;
    (void)err;
    att_seen *a = ctx;
    const posemb_study_config *c = a->c;
    const char *pes[POSEMB_STUDY_MAX_PES], *tasks[POSEMB_STUDY_MAX_TASKS];
    for (int p = 0; p < c->n_pes; p++) pes[p] = c->pes[p];
    for (int t = 0; t < c->n_tasks; t++) tasks[t] = c->tasks[t];
    int t = index_in(tasks, c->n_tasks, cJSON_GetStringValue(cJSON_GetObjectItem(j, "task")));
    int p = index_in(pes, c->n_pes, cJSON_GetStringValue(cJSON_GetObjectItem(j, "pe")));
    const cJSON *seed = cJSON_GetObjectItem(j, "seed"), *len = cJSON_GetObjectItem(j, "length");
    for (int s = 0; t >= 0 && p >= 0 && cJSON_IsNumber(seed) && s < c->n_seeds; s++)
        for (int m = 0; cJSON_IsNumber(len) && seed->valueint == c->seeds[s] && m < c->n_mults; m++)
            if (len->valueint == c->n_train * c->mults[m]) a->in[seen_at(c, t, p, s, m)] = 1;
    return POSEMB_OK;
}

static posemb_status read_seen(const posemb_study_config *c, const char *path, att_seen *a, posemb_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return POSEMB_OK; /* nothing measured yet */
    posemb_status st = study_each_line(f, mark_line, a, err);
    fclose(f);
    return st;
}

/* The profile of model m on B windows of L held-out tokens, averaged over heads, per layer. */
static posemb_status profile_at(posemb_model *m, const posemb_corpus *held_out, int L, double *dist, double *sink,
                                posemb_error *err)
{
    int B = windows_at(L);
    if ((long)B * L > held_out->n)
        return posemb_fail(err, POSEMB_EINVAL, "study: attention: %d windows of %d need more than the %ld held-out "
                           "tokens", B, L, held_out->n);
    posemb_batch b = {.B = B, .T = L, .ids = held_out->tokens};
    posemb_attn_profile pr = {0};
    posemb_model_set_train(m, 0, 0, 0);
    posemb_status st = posemb_model_forward(m, &b, err);
    if (!st) st = posemb_attn_profile_of(m, &b, 1, &pr, err);
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
static char *att_line(const posemb_study_config *c, int t, int p, int s, int L, int layers, const double *dist,
                      const double *sink)
{
    cJSON *j = cJSON_CreateObject();
    char *text = NULL;
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "task", c->tasks[t]);
    cJSON_AddStringToObject(j, "pe", c->pes[p]);
    cJSON_AddNumberToObject(j, "seed", c->seeds[s]);
    cJSON_AddNumberToObject(j, "length", L);
    if (dist) {
        cJSON_AddNumberToObject(j, "windows", windows_at(L));
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
           !stat(file, &sb);
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
        char *line = st ? NULL : att_line(c, t, p, s, L, cfg.layers, reached ? dist : NULL, dist + cfg.layers);
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
    size_t cells = (size_t)c->n_tasks * c->n_pes * c->n_seeds * c->n_mults;
    att_seen a = {.c = c, .in = calloc(cells, 1)};
    if (!a.in) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = posemb_path_join(path, sizeof path, out, "attention.jsonl")
                           ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out)
                           : read_seen(c, path, &a, err);
    posemb_tokenizer *tok = NULL;
    posemb_corpus held_out = {0};
    for (int t = 0; !st && t < c->n_tasks; t++)
        for (int p = 0; !st && p < c->n_pes; p++)
            for (int s = 0; !st && s < c->n_seeds; s++) {
                int missing = 0;
                for (int m = 0; m < c->n_mults; m++) missing |= !a.in[seen_at(c, t, p, s, m)];
                if (!missing || !trained_model(c, out, t, p, s, dir, sizeof dir)) continue; /* none, or not yet */
                if (!tok) st = study_length_tokenizer(c, out, &tok, desc, sizeof desc, err);
                if (!st && !held_out.tokens) st = study_length_held_out(c, out, tok, desc, &held_out, err);
                if (!st) st = measure_run(c, t, p, s, dir, a.in + seen_at(c, t, p, s, 0), &held_out, path, err);
            }
    posemb_corpus_free(&held_out);
    posemb_tokenizer_free(tok);
    free(a.in);
    return st;
}
