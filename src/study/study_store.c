/* The study's results store and folders (study_store.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/fileio.h"
#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "posemb/trainer.h"
#include "study_ruler.h"
#include "study_store.h"

/* Copies count names into rows of width bytes (a config's pes or tasks). */
void study_set_names(char *rows, size_t width, int *n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++) snprintf(rows + (size_t)i * width, width, "%s", names[i]);
    *n = count;
}

/* Appends a run's lines under a lock: whole lines, whatever the other workers do. */
posemb_status study_append_results(const char *path, const char *lines, posemb_error *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
    flock(fd, LOCK_EX);
    size_t n = strlen(lines), done = 0;
    while (done < n) {
        ssize_t w = write(fd, lines + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    fsync(fd);
    flock(fd, LOCK_UN);
    close(fd);
    return done == n ? POSEMB_OK : posemb_fail(err, POSEMB_EIO, "%s: write failed", path);
}

/* EINVAL when line n of path was run with other "model" keys than c's: its
 * runs would count as done, under a header naming c's keys. */
static posemb_status same_model(const posemb_study_config *c, const cJSON *line, const char *path, int n,
                                posemb_error *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(line, "model");
    char *text = m ? cJSON_PrintUnformatted(m) : NULL;
    int same = !strcmp(text ? text : "", c->len.model);
    posemb_status st = same ? POSEMB_OK
                            : posemb_fail(err, POSEMB_EINVAL,
                                          "%s: line %d was run with \"model\" %s, this config has %s: use another "
                                          "--out folder",
                                          path, n, text ? text : "{}", c->len.model[0] ? c->len.model : "{}");
    cJSON_free(text);
    return st;
}

/* EINVAL when line n of path was run with other RULER tasks, share,
 * trials or keys than c's (a length study's line; no "ruler_keys" reads
 * as 0, no "ruler_key_form" as "ruler"): its runs would count as done
 * without the tasks c asks for, or with numbers of another mix. */
static posemb_status same_ruler(const posemb_study_config *c, const cJSON *line, const char *path, int n,
                                posemb_error *err)
{
    unsigned tasks = 0;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(line, "ruler_tasks"), *x;
    cJSON_ArrayForEach(x, names) if (cJSON_IsString(x) && study_ruler_task_of(x->valuestring) >= 0) tasks |=
        1u << study_ruler_task_of(x->valuestring);
    const cJSON *share = cJSON_GetObjectItemCaseSensitive(line, "ruler_train");
    const cJSON *trials = cJSON_GetObjectItemCaseSensitive(line, "ruler_trials");
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(line, "ruler_keys");
    const cJSON *form = cJSON_GetObjectItemCaseSensitive(line, "ruler_key_form");
    int words = cJSON_IsString(form) && !strcmp(form->valuestring, "words");
    int same = tasks == c->len.ruler_tasks &&
               (!tasks || (cJSON_IsNumber(share) && (float)share->valuedouble == c->len.ruler_train &&
                           cJSON_IsNumber(trials) && trials->valueint == c->len.ruler_trials &&
                           (keys ? cJSON_IsNumber(keys) && keys->valueint == c->len.ruler_keys : !c->len.ruler_keys) &&
                           (form ? cJSON_IsString(form) : 1) && words == c->len.ruler_key_words));
    return same ? POSEMB_OK
                : posemb_fail(err, POSEMB_EINVAL,
                              "%s: line %d was run with other \"ruler_tasks\", \"ruler_train\", \"ruler_trials\", "
                              "\"ruler_keys\" or \"ruler_key_form\" than this config's: use another --out folder",
                              path, n);
}

/* Whether line's field name agrees with c's value v: absent when v is 0,
 * the string other when v is 1 (a departure is written only when taken). */
static int same_choice(const cJSON *line, const char *name, const char *other, int v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(line, name);
    return x ? v && cJSON_IsString(x) && !strcmp(x->valuestring, other) : !v;
}

/* EINVAL when line n of path said the passkey's key or RULER's values
 * another number of times than c does ("passkey_needle", "ruler_needle"):
 * its runs would count as done on other prompts. */
static posemb_status same_needles(const posemb_study_config *c, const cJSON *line, const char *path, int n,
                                  posemb_error *err)
{
    if (same_choice(line, "passkey_needle", "once", c->len.passkey_once) &&
        same_choice(line, "ruler_needle", "twice", c->len.ruler_twice))
        return POSEMB_OK;
    return posemb_fail(err, POSEMB_EINVAL,
                       "%s: line %d was run with another \"passkey_needle\" or \"ruler_needle\" than this config's: "
                       "use another --out folder",
                       path, n);
}

posemb_status study_each_line(FILE *f, study_line_fn fn, void *ctx, posemb_error *err)
{
    char *line = NULL; /* any length: a line cut in two would parse as neither, and its run be redone */
    size_t cap = 0;
    posemb_status st = POSEMB_OK;
    for (int n = 1; !st && getline(&line, &cap, f) > 0; n++) {
        cJSON *j = cJSON_Parse(line);
        if (j) st = fn(j, n, ctx, err);
        cJSON_Delete(j);
    }
    free(line);
    return st;
}

int study_pretrain_warmup(int key, long steps) { return key ? key : (int)posemb_train_defaults("", steps).warmup; }

/* EINVAL when line n of path came from another pretraining draw than c's
 * (a real-data line; no "pretrain_seed": draw 1), another vocabulary (no
 * "vocab": bert-base-uncased's), another warm-up (no "pretrain_warmup": a
 * tenth of the steps) or another layer norm placement (no "pre_ln":
 * post-LN): its runs would count as done for a pretraining that did not run
 * them. */
static posemb_status same_draw(const posemb_study_config *c, const cJSON *line, const char *path, int n,
                               posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, "pretrain_seed");
    int theirs = cJSON_IsNumber(v) ? v->valueint : 1, ours = c->real.pretrain_seed > 1 ? c->real.pretrain_seed : 1;
    if (theirs != ours)
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: line %d came from the pretraining with \"pretrain_seed\" %d, this config has %d: use "
                           "another --out folder",
                           path, n, theirs, ours);
    const cJSON *voc = cJSON_GetObjectItemCaseSensitive(line, "vocab"); /* absent: bert-base-uncased's */
    const char *theirs_v = cJSON_IsString(voc) ? voc->valuestring : "";
    if (strcmp(theirs_v, c->real.vocab))
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: line %d came from a pretraining with \"vocab\" \"%s\", this config's is \"%s\": use "
                           "another --out folder",
                           path, n, theirs_v, c->real.vocab);
    /* a line without the key warmed up by the default for its own steps */
    const cJSON *wu = cJSON_GetObjectItemCaseSensitive(line, "pretrain_warmup"),
                *ps = cJSON_GetObjectItemCaseSensitive(line, "pretrain_steps");
    long steps = cJSON_IsNumber(ps) ? (long)ps->valuedouble : c->real.pretrain_steps;
    int theirs_w = study_pretrain_warmup(cJSON_IsNumber(wu) ? wu->valueint : 0, steps),
        ours_w = study_pretrain_warmup(c->real.pretrain_warmup, c->real.pretrain_steps);
    if (theirs_w != ours_w)
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: line %d came from a pretraining with a warm-up of %d step%s, this config's is %d "
                           "(\"pretrain_warmup\"): use another --out folder",
                           path, n, theirs_w, theirs_w == 1 ? "" : "s", ours_w);
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(line, "pre_ln"); /* absent: post-LN */
    int pre = cJSON_IsNumber(ln) && ln->valueint == 1;
    return pre == (c->real.pre_ln == 1)
               ? POSEMB_OK
               : posemb_fail(err, POSEMB_EINVAL,
                             "%s: line %d came from a %s pretraining, this config's is %s "
                             "(\"pre_ln\"): use another --out folder",
                             path, n, pre ? "pre-LN" : "post-LN", c->real.pre_ln ? "pre-LN" : "post-LN");
}

typedef struct done_count {
    const posemb_study_config *c;
    const char *path;
    int *done;
    study_kernels *kernels;
} done_count;

static posemb_status count_done(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    const done_count *d = ctx;
    const posemb_study_config *c = d->c;
    const cJSON *spec = cJSON_GetObjectItem(j, "pe"), *task = cJSON_GetObjectItem(j, "task"),
                *seed = cJSON_GetObjectItem(j, "seed"), *blas = cJSON_GetObjectItemCaseSensitive(j, "blas"),
                *products = cJSON_GetObjectItemCaseSensitive(j, "products");
    int length = study_kind_of(c) == STUDY_LENGTH;
    posemb_status st = length ? same_model(c, j, d->path, n, err) : POSEMB_OK;
    if (!st && length) st = same_ruler(c, j, d->path, n, err);
    if (!st && length) st = same_needles(c, j, d->path, n, err);
    if (!st && study_kind_of(c) == STUDY_DATA) st = same_draw(c, j, d->path, n, err);
    if (st) return st;
    /* lines from before "products" was recorded say nothing of it */
    int other = (cJSON_IsString(blas) && strcmp(blas->valuestring, posemb_blas_core())) ||
                (cJSON_IsString(products) && strcmp(products->valuestring, posemb_small_products()));
    if (d->kernels && other && d->kernels->other++ == 0)
        snprintf(d->kernels->first, sizeof d->kernels->first, "OpenBLAS's %s kernels, small products: %s",
                 cJSON_IsString(blas) ? blas->valuestring : "(not recorded)",
                 cJSON_IsString(products) ? products->valuestring : "(not recorded)");
    for (int p = 0; cJSON_IsString(spec) && p < c->n_pes; p++)
        for (int t = 0; cJSON_IsString(task) && t < c->n_tasks; t++)
            for (int s = 0; cJSON_IsNumber(seed) && s < c->n_seeds; s++)
                if (!strcmp(spec->valuestring, c->pes[p]) && !strcmp(task->valuestring, c->tasks[t]) &&
                    seed->valueint == c->seeds[s])
                    d->done[study_run_index(c, p, t, s)]++;
    return POSEMB_OK;
}

/* How many lines results.jsonl holds of each run, done[(pe * n_tasks + task) * n_seeds + seed];
 * a run is finished when it has one per evaluation length. No file: none.
 * kernels (may be NULL) counts the lines run under other BLAS kernels or small products' library. */
posemb_status study_read_done(const posemb_study_config *c, const char *out, int *done, study_kernels *kernels,
                              posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return POSEMB_OK;
    done_count d = {c, path, done, kernels};
    posemb_status st = study_each_line(f, count_done, &d, err);
    fclose(f);
    return st;
}

int study_model_dir(const char *out, const char *pe_folder, const char *task, int seed, char *buf, size_t cap)
{
    int n = task ? snprintf(buf, cap, "%s/models/%s/%s-s%d", out, pe_folder, task, seed)
                 : snprintf(buf, cap, "%s/models/%s", out, pe_folder);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

void study_folder_of(const char *spec, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = spec; *p && n + 1 < cap; p++)
        buf[n++] = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ? *p : '_';
    buf[n] = '\0';
}

posemb_status posemb_study_append(const char *out, const char *lines, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    return study_append_results(path, lines, err);
}

int study_row_of(const char *names, size_t width, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names + (size_t)i * width, name)) return i;
    return -1;
}

double study_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int study_int_index(const int *v, int n, double x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}
