/* The real-data study's pretraining in the tables and the report: each
 * PE's held-out MLM loss at the end, and how much it still moved over the
 * last fifth of the steps (the plateau the budget is meant to reach), from
 * models/PE/pretrain/train_log.jsonl; and the curves as a figure. Each log is
 * also kept as pretrain/PE.train_log.jsonl, read when the model is gone: a
 * study carried from one machine to the next without its models (19 MB
 * each) keeps its pretraining table, as analysis/ keeps the indicators. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "plot/plot.h"
#include "study_impl.h"
#include "study_store.h"

#define MAX_EVALS 256

/* A PE's evaluations: step, held-out loss, accuracy. */
typedef struct pretrain_curve {
    double step[MAX_EVALS], loss[MAX_EVALS], acc[MAX_EVALS];
    int n;
} pretrain_curve;

/* PE p's log in its model's folder (model) and the copy kept of it (kept); 0, or -1 when a path is too long. */
static int log_paths(const posemb_study_config *c, const char *out, int p, char *model, char *kept)
{
    char name[160];
    study_folder_of(c->pes[p], name, sizeof name);
    int a = snprintf(model, POSEMB_PATH_MAX, "%s/models/%s/pretrain/train_log.jsonl", out, name);
    int b = snprintf(kept, POSEMB_PATH_MAX, "%s/pretrain/%s.train_log.jsonl", out, c->pes[p]);
    return a < 0 || a >= POSEMB_PATH_MAX || b < 0 || b >= POSEMB_PATH_MAX ? -1 : 0;
}

static void read_curve(const posemb_study_config *c, const char *out, int p, pretrain_curve *pc)
{
    char model[POSEMB_PATH_MAX], kept[POSEMB_PATH_MAX], line[512];
    pc->n = 0;
    if (log_paths(c, out, p, model, kept)) return;
    FILE *f = fopen(model, "r");
    if (!f) f = fopen(kept, "r");
    while (f && pc->n < MAX_EVALS && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *kind = cJSON_GetObjectItem(j, "kind"), *step = cJSON_GetObjectItem(j, "step"),
                    *loss = cJSON_GetObjectItem(j, "loss"), *acc = cJSON_GetObjectItem(j, "accuracy");
        if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "eval") && cJSON_IsNumber(step) &&
            cJSON_IsNumber(loss) && cJSON_IsNumber(acc)) {
            pc->step[pc->n] = step->valuedouble;
            pc->loss[pc->n] = loss->valuedouble;
            pc->acc[pc->n++] = acc->valuedouble;
        }
        cJSON_Delete(j);
    }
    if (f) fclose(f);
}

/* The relative fall of the loss over the last fifth of the steps (NAN without an evaluation there). */
static double last_fifth_fall(const pretrain_curve *pc)
{
    if (pc->n < 2) return NAN;
    double at = pc->step[pc->n - 1] * 0.8;
    int k = 0;
    while (k < pc->n - 1 && pc->step[k] < at) k++;
    return k < pc->n - 1 ? (pc->loss[k] - pc->loss[pc->n - 1]) / pc->loss[k] : NAN;
}

/* Copies each model's pretraining log to pretrain/PE.train_log.jsonl (whole or not at all). */
posemb_status study_pretrain_keep(const posemb_study_config *c, const char *out, posemb_error *err)
{
    char model[POSEMB_PATH_MAX], kept[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX];
    if (posemb_path_join(dir, sizeof dir, out, "pretrain"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    posemb_status st = POSEMB_OK;
    for (int p = 0; !st && p < c->n_pes; p++) {
        if (log_paths(c, out, p, model, kept)) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
        struct stat info;
        if (stat(model, &info)) continue; /* not pretrained here */
        if (mkdir(dir, 0755) && errno != EEXIST) st = posemb_fail(err, POSEMB_EIO, "%s: cannot create", dir);
        if (!st) st = posemb_copy_file(model, kept, (size_t)1 << 30, err);
    }
    return st;
}

void study_pretrain_md(FILE *f, const posemb_study_config *c, const char *out)
{
    pretrain_curve *pc = malloc(sizeof *pc);
    if (!pc) return;
    fprintf(f, "## Pretraining: held-out masked-LM loss\n\n| PE | step | loss | accuracy | fall over the last fifth |\n"
               "|---|---:|---:|---:|---:|\n");
    for (int p = 0; p < c->n_pes; p++) {
        read_curve(c, out, p, pc);
        if (!pc->n) continue;
        int e = pc->n - 1;
        double fall = last_fifth_fall(pc);
        char cell[32] = "-";
        if (!isnan(fall)) snprintf(cell, sizeof cell, "%.1f%%", 100 * fall);
        fprintf(f, "| %s | %.0f | %.3f | %.3f | %s |\n", c->pes[p], pc->step[e], pc->loss[e], pc->acc[e], cell);
    }
    fprintf(f, "\n");
    free(pc);
}

posemb_status study_pretrain_figure(posemb_report *rep, const posemb_study_config *c, const char *out,
                                    posemb_error *err)
{
    pretrain_curve *pc = calloc((size_t)c->n_pes, sizeof *pc);
    posemb_series *s = calloc((size_t)c->n_pes, sizeof *s);
    char path[POSEMB_PATH_MAX];
    posemb_status st = pc && s ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int ns = 0;
    for (int p = 0; !st && p < c->n_pes; p++) {
        read_curve(c, out, p, &pc[p]);
        if (pc[p].n) s[ns++] = (posemb_series){c->pes[p], pc[p].step, pc[p].loss, pc[p].n, 0};
    }
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = "Pretraining: held-out masked-LM loss";
    o.xlabel = "pretraining step";
    o.ylabel = "loss (nats)";
    o.width = 760;
    o.height = 480;
    o.legend = 1;
    if (!st && ns && posemb_path_join(path, sizeof path, out, "pretrain_curves.png"))
        st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st && ns) st = study_lines_figure(path, s, ns, &o, err);
    if (!st && ns) st = posemb_report_image(rep, path, o.title, err);
    free(pc);
    free(s);
    return st;
}
