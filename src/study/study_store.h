/* The bottom of the study: where a study keeps its models and its results.
 * results.jsonl holds one JSON line per finished run and evaluation length;
 * workers append whole lines under a lock, and a resumed study counts the
 * lines each run has to know what is left. Every part of the study may call
 * this; it calls no part of the study above it. */
#ifndef POSEMB_STUDY_STORE_H
#define POSEMB_STUDY_STORE_H

#include <stddef.h>
#include <stdio.h>

#include "study/study.h"

/* The three studies, told apart by the config (posemb_study_config): the
 * length study (--length), the real-data study (--data), the synthetic one. */
typedef enum study_kind { STUDY_SYNTHETIC, STUDY_DATA, STUDY_LENGTH, STUDY_KINDS } study_kind;
static inline study_kind study_kind_of(const posemb_study_config *c)
{
    return c->length ? STUDY_LENGTH : c->data[0] ? STUDY_DATA : STUDY_SYNTHETIC;
}
/* 1 for the real-data study of GLUE and SQuAD (units are PEs, pretraining first). */
static inline int study_glue(const posemb_study_config *c) { return study_kind_of(c) == STUDY_DATA; }
/* Index into done[] of (pe, task, seed). */
static inline size_t study_run_index(const posemb_study_config *c, int p, int t, int s)
{
    return ((size_t)p * c->n_tasks + t) * c->n_seeds + s;
}

/* Copies count names into rows of width bytes (a config's pes or tasks). */
void study_set_names(char *rows, size_t width, int *n, const char *const *names, int count);
/* A PE spec as a folder name ("ape+rpe" -> "ape_rpe"). */
void study_folder_of(const char *spec, char *buf, size_t cap);
/* Where a study keeps a model: OUT/models/PE_FOLDER (task NULL: the synthetic
 * study's first task's, the report's) or OUT/models/PE_FOLDER/TASK-sSEED (a
 * synthetic task's first seed, a real-data fine-tuning). -1 when it does not
 * fit in cap. */
int study_model_dir(const char *out, const char *pe_folder, const char *task, int seed, char *buf, size_t cap);

/* Lines of a results.jsonl run under other OpenBLAS kernels or another small products' library than this process's. */
typedef struct study_kernels {
    int other;       /* how many */
    char first[160]; /* the first one's kernels and small products' library */
} study_kernels;
/* done[study_run_index] = the lines out/results.jsonl holds of each run; kernels (may be NULL).
 * EINVAL when a length study's line was run with another "model" or other RULER settings. */
posemb_status study_read_done(const posemb_study_config *c, const char *out, int *done, study_kernels *kernels,
                              posemb_error *err);
/* Calls fn on each line of f that parses as JSON (n: its line number, from 1), whatever
 * the lines' length; stops at fn's first failure and returns it. */
struct cJSON;
typedef posemb_status (*study_line_fn)(const struct cJSON *line, int n, void *ctx, posemb_error *err);
posemb_status study_each_line(FILE *f, study_line_fn fn, void *ctx, posemb_error *err);
/* Appends whole lines to results.jsonl under a lock (workers append concurrently). */
posemb_status study_append_results(const char *path, const char *lines, posemb_error *err);
/* The warm-up in steps of a real-data pretraining of steps steps: key
 * (pretrain_warmup) where set, else the trainer's default
 * (posemb_train_defaults), which every pretraining before the key had. Here
 * because the store checks lines by it and the pretraining uses it. */
int study_pretrain_warmup(int key, long steps);

/* The index of name (NULL: none) among n rows of width bytes (a config's pes or tasks), -1 when absent. */
int study_row_of(const char *names, size_t width, int n, const char *name);

/* o's number key (o a cJSON object of a line), NaN when absent or not a number. */
double study_num(const struct cJSON *o, const char *key);
/* The index of x among n ints (a config's seeds, factors), -1 when absent (NaN never matches). */
int study_int_index(const int *v, int n, double x);

#endif
