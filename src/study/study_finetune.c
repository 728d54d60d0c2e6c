/* The real-data study's fine-tuning: a classifier, regressor or span head on
 * a pretrained encoder, trained on a task's train set (batches cut to their
 * longest example), evaluated on its dev set every curve_every steps, the
 * best evaluation's model kept in out/models/PE/TASK-sSEED. A run is a
 * function of its seed; at each evaluation it leaves a checkpoint in
 * TASK-sSEED/resume, from which a killed run continues to the lines an
 * uninterrupted one writes (SQuAD-locate's runs take half an hour); the
 * pretraining it starts from resumes from its own checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "data/datasets.h"
#include "data/features.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/rng.h"
#include "core/fileio.h"
#include "core/timer.h"
#include "posemb/trainer.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_pool.h"
#include "study_store.h"
#include "core/rng_internal.h"
#include "train/trainer_internal.h"

#define MAX_MULTS 8

/* A task's data, loaded once per worker. */
typedef struct task_data {
    int loaded, squad;
    posemb_glue_data dev;            /* GLUE: labels and metrics of the dev set */
    posemb_squad sq;                 /* SQuAD: the file, split by article */
    int *eval_idx, n_eval;           /* SQuAD: the questions evaluated */
    posemb_features train;           /* at n_train */
    posemb_features eval[MAX_MULTS]; /* GLUE: [0] only; SQuAD: windows of n_train * mults[m] */
    double chance;                   /* main metric of a constant predictor */
    double match[MAX_MULTS];         /* span tasks: F1 of posemb_squad_match_logits (no model); NAN otherwise */
} task_data;

static void task_data_free(task_data *td)
{
    posemb_glue_free(&td->dev);
    if (td->squad) posemb_squad_free(&td->sq);
    free(td->eval_idx);
    posemb_features_free(&td->train);
    for (int m = 0; m < MAX_MULTS; m++) posemb_features_free(&td->eval[m]);
    memset(td, 0, sizeof *td);
}

/* GLUE's majority class of train, predicted for every dev example: the chance row. */
static double glue_chance(const posemb_glue_data *dev, const posemb_features *train)
{
    if (!dev->label || !train->label) return 0; /* regression: a constant has no correlation */
    long count[16] = {0};
    int best = 0;
    for (int i = 0; i < train->n; i++) count[train->label[i] & 15]++;
    for (int k = 1; k < 16; k++) best = count[k] > count[best] ? k : best;
    int32_t *pred = malloc((size_t)dev->n * sizeof *pred);
    double v[2] = {0, 0};
    posemb_error err;
    for (int i = 0; pred && i < dev->n; i++) pred[i] = best;
    if (pred && posemb_glue_evaluate(dev, pred, NULL, v, &err)) v[0] = 0;
    free(pred);
    return isnan(v[0]) ? 0 : v[0];
}

static posemb_status load_glue(const posemb_study_config *c, const posemb_tokenizer *tok, int t, task_data *td,
                               posemb_error *err)
{
    char dir[POSEMB_PATH_MAX];
    posemb_glue_data train;
    posemb_glue_task task = (posemb_glue_task)posemb_glue_task_from_name(c->tasks[t]);
    snprintf(dir, sizeof dir, "%s/glue", c->data);
    posemb_status st = posemb_glue_load(dir, task, "train", &train, err);
    if (!st) st = posemb_glue_features(tok, &train, c->n_train, &td->train, err);
    if (!st) posemb_glue_free(&train);
    if (!st) st = posemb_glue_load(dir, task, "dev", &td->dev, err);
    if (!st) st = posemb_glue_features(tok, &td->dev, c->n_train, &td->eval[0], err);
    if (!st) td->chance = glue_chance(&td->dev, &td->train);
    return st;
}

/* The eval questions' answers decoded from logits of f, scored: values = {F1, EM} as fractions. */
static posemb_status squad_score(const task_data *td, const posemb_features *f, const float *logits, int max_answer,
                                 double *values, posemb_error *err)
{
    char **answers = NULL;
    double em = 0, f1 = 0;
    posemb_status st = posemb_squad_decode(&td->sq, td->eval_idx, td->n_eval, f, logits, max_answer, &answers, err);
    if (!st) st = posemb_squad_evaluate(&td->sq, td->eval_idx, td->n_eval, (const char *const *)answers, &em, &f1, err);
    posemb_squad_answers_free(answers, td->n_eval);
    values[0] = f1 / 100;
    values[1] = em / 100;
    return st;
}

/* The first-matching-word reference's F1 at each evaluation length (the tables' row beside chance). */
static posemb_status squad_match(const posemb_study_config *c, task_data *td, posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    for (int m = 0; !st && m < c->n_mults && m < MAX_MULTS; m++) {
        const posemb_features *f = &td->eval[m];
        float *logits = malloc((size_t)f->n * f->T * 2 * sizeof *logits);
        double v[2] = {NAN, NAN};
        if (!logits) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        st = posemb_squad_match_logits(f, logits, err);
        if (!st) st = squad_score(td, f, logits, c->real.max_answer, v, err);
        td->match[m] = v[0];
        free(logits);
    }
    return st;
}

static posemb_status load_squad(const posemb_study_config *c, int t, const posemb_tokenizer *tok, task_data *td,
                                posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    snprintf(path, sizeof path, "%s/squad/dev-v1.1.json", c->data);
    posemb_status st = posemb_squad_load(path, &td->sq, err);
    if (st) return st;
    td->squad = 1;
    if (study_is_squad_locate(c->tasks[t])) posemb_squad_ask_answers(&td->sq);
    int *train_idx = malloc((size_t)td->sq.n * sizeof *train_idx);
    td->eval_idx = malloc((size_t)td->sq.n * sizeof *td->eval_idx);
    if (!train_idx || !td->eval_idx) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int n_train = st ? 0 : posemb_squad_split(&td->sq, POSEMB_SQUAD_TRAIN, train_idx);
    if (!st) td->n_eval = posemb_squad_split(&td->sq, POSEMB_SQUAD_EVAL, td->eval_idx);
    if (!st && td->n_eval > c->eval_examples) td->n_eval = c->eval_examples;
    if (!st)
        st = posemb_squad_features(tok, &td->sq, train_idx, n_train, c->n_train, c->real.squad_stride,
                                   c->real.squad_max_query, &td->train, err);
    for (int m = 0; !st && m < c->n_mults && m < MAX_MULTS; m++) /* longer windows, the stride in proportion */
        st = posemb_squad_features(tok, &td->sq, td->eval_idx, td->n_eval, c->n_train * c->mults[m],
                                   c->real.squad_stride * c->mults[m], c->real.squad_max_query, &td->eval[m], err);
    free(train_idx);
    return st ? st : squad_match(c, td, err);
}

static posemb_status load_task(const posemb_study_config *c, const posemb_tokenizer *tok, int t, task_data *td,
                               posemb_error *err)
{
    if (td->loaded) return POSEMB_OK;
    for (int m = 0; m < MAX_MULTS; m++) td->match[m] = NAN;
    posemb_status st = study_is_squad(c->tasks[t]) ? load_squad(c, t, tok, td, err) : load_glue(c, tok, t, td, err);
    if (st) task_data_free(td);
    else td->loaded = 1;
    return st;
}

/* ---- batches ---- */

typedef struct batch_buf {
    int32_t *ids, *types, *labels, *starts, *ends;
    float *mask, *values;
} batch_buf;

static int batch_alloc(batch_buf *b, int B, int T)
{
    size_t n = (size_t)B * T;
    b->ids = malloc(n * sizeof *b->ids);
    b->types = malloc(n * sizeof *b->types);
    b->mask = malloc(n * sizeof *b->mask);
    b->labels = malloc((size_t)B * sizeof *b->labels);
    b->starts = malloc((size_t)B * sizeof *b->starts);
    b->ends = malloc((size_t)B * sizeof *b->ends);
    b->values = malloc((size_t)B * sizeof *b->values);
    return b->ids && b->types && b->mask && b->labels && b->starts && b->ends && b->values ? 0 : -1;
}

static void batch_free(batch_buf *b)
{
    free(b->ids);
    free(b->types);
    free(b->mask);
    free(b->labels);
    free(b->starts);
    free(b->ends);
    free(b->values);
}

/* Rows rows[0..B) of f into b; with cut, the columns past the longest real
 * example are dropped (padding changes nothing but the cost). Returns T. */
static int gather(const posemb_features *f, const int *rows, int B, int cut, batch_buf *b)
{
    int T = cut ? 1 : f->T;
    for (int i = 0; cut && i < B; i++)
        for (int k = f->T - 1; k >= T; k--)
            if (f->mask[(size_t)rows[i] * f->T + k] > 0) T = k + 1;
    for (int i = 0; i < B; i++) {
        size_t src = (size_t)rows[i] * f->T, dst = (size_t)i * T;
        memcpy(b->ids + dst, f->ids + src, (size_t)T * sizeof *b->ids);
        memcpy(b->types + dst, f->types + src, (size_t)T * sizeof *b->types);
        memcpy(b->mask + dst, f->mask + src, (size_t)T * sizeof *b->mask);
        if (f->label) b->labels[i] = f->label[rows[i]];
        if (f->score) b->values[i] = f->score[rows[i]];
        if (f->starts) {
            b->starts[i] = f->starts[rows[i]];
            b->ends[i] = f->ends[rows[i]];
        }
    }
    return T;
}

/* ---- evaluation ---- */

/* Head logits of rows i0 .. i0 + nb - 1 of f (cut: as gather); NULL with *st set on failure. */
static const float *forward_rows(posemb_model *m, const posemb_features *f, int i0, int nb, int cut, batch_buf *b,
                                 posemb_status *st, posemb_error *err)
{
    int rows[4096];
    for (int i = 0; i < nb; i++) rows[i] = i0 + i;
    posemb_batch batch = {.B = nb, .T = gather(f, rows, nb, cut, b), .ids = b->ids, .types = b->types, .mask = b->mask};
    const float *z = (*st = posemb_model_forward(m, &batch, err)) ? NULL : posemb_model_head_logits(m, err);
    if (!z && !*st) *st = POSEMB_EINVAL;
    return z;
}

/* 1 when all n values are equal: a model that predicts a constant. */
static int all_equal_i32(const int32_t *x, int n)
{
    for (int i = 1; i < n; i++)
        if (x[i] != x[0]) return 0;
    return n > 0;
}

static int all_equal_f32(const float *x, int n)
{
    for (int i = 1; i < n; i++)
        if (x[i] != x[0]) return 0;
    return n > 0;
}

/* GLUE dev metrics: values[k] for the task's metrics; *collapsed: one class (or score) for all. */
static posemb_status eval_glue(posemb_model *m, const task_data *td, int B, batch_buf *b, double *values,
                               int *collapsed, posemb_error *err)
{
    const posemb_features *f = &td->eval[0];
    int32_t *pred = malloc((size_t)f->n * sizeof *pred);
    float *score = malloc((size_t)f->n * sizeof *score);
    posemb_status st = pred && score ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int classes = posemb_model_config(m)->num_labels;
    for (int i0 = 0; !st && i0 < f->n; i0 += B) {
        int nb = f->n - i0 < B ? f->n - i0 : B;
        const float *z = forward_rows(m, f, i0, nb, 1, b, &st, err);
        for (int i = 0; z && i < nb; i++) {
            if (!f->label) {
                score[i0 + i] = z[i];
                continue;
            }
            int best = 0;
            for (int k = 1; k < classes; k++) best = z[i * classes + k] > z[i * classes + best] ? k : best;
            pred[i0 + i] = best;
        }
    }
    if (!st) st = posemb_glue_evaluate(&td->dev, f->label ? pred : NULL, f->label ? NULL : score, values, err);
    if (!st) *collapsed = f->label ? all_equal_i32(pred, f->n) : all_equal_f32(score, f->n);
    free(pred);
    free(score);
    return st;
}

/* Whether every window's start and end argmax are the same token positions. */
static int squad_collapsed(const float *logits, int n, int T)
{
    int32_t first[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * T * 2;
        int32_t best[2] = {0, 0};
        for (int t = 1; t < T; t++)
            for (int k = 0; k < 2; k++) best[k] = z[t * 2 + k] > z[best[k] * 2 + k] ? t : best[k];
        if (!i) memcpy(first, best, sizeof best);
        else if (best[0] != first[0] || best[1] != first[1]) return 0;
    }
    return n > 0;
}

/* SQuAD on the eval questions with windows of length index mi: values = {F1, EM} as fractions;
 * *collapsed: the same start and end positions in every window. */
static posemb_status eval_squad(posemb_model *m, const task_data *td, int mi, int B, int max_answer, batch_buf *b,
                                double *values, int *collapsed, posemb_error *err)
{
    const posemb_features *f = &td->eval[mi];
    float *logits = malloc((size_t)f->n * f->T * 2 * sizeof *logits);
    posemb_status st = logits ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (int i0 = 0; !st && i0 < f->n; i0 += B) {
        int nb = f->n - i0 < B ? f->n - i0 : B;
        const float *z = forward_rows(m, f, i0, nb, 0, b, &st, err);
        if (z) memcpy(logits + (size_t)i0 * f->T * 2, z, (size_t)nb * f->T * 2 * sizeof *z);
    }
    if (!st) *collapsed = squad_collapsed(logits, f->n, f->T);
    if (!st) st = squad_score(td, f, logits, max_answer, values, err);
    free(logits);
    return st;
}

/* The task's metrics at length index mi (values[0] is the main one); *collapsed as eval_glue, eval_squad. */
static posemb_status evaluate(posemb_model *m, const posemb_study_config *c, const task_data *td, int mi, batch_buf *b,
                              double *values, int *collapsed, posemb_error *err)
{
    posemb_model_set_train(m, 0, 0, 0);
    values[0] = values[1] = NAN;
    *collapsed = 0;
    return td->squad ? eval_squad(m, td, mi, c->batch, c->real.max_answer, b, values, collapsed, err)
                     : eval_glue(m, td, c->batch, b, values, collapsed, err);
}

/* ---- one fine-tuning run ---- */

typedef struct ft_result {
    double metric[MAX_MULTS][2]; /* at each length: main, second (NAN if none) */
    int collapsed[MAX_MULTS];    /* at each length: constant predictions */
    double curve[POSEMB_STUDY_MAX_CURVE][2];
    int n_curve;
    double seconds;
    int steps;      /* the updates it made (ft_steps) */
    long resumed;   /* the step it continued from (0: it ran from the start) */
    char spec[512]; /* the canonical PE spec the model ran with (the amplitude rule's rewrite) */
} ft_result;

/* The fine-tuning model: the pretrained encoder of dir under the task's head. */
static posemb_status ft_model(const posemb_study_config *c, const task_data *td, const char *pretrain, int seed,
                              posemb_model **m, posemb_error *err)
{
    posemb_config cfg;
    char path[POSEMB_PATH_MAX];
    snprintf(path, sizeof path, "%.4400s/config.json", pretrain);
    posemb_status st = posemb_config_load(&cfg, path, err);
    cfg.hidden_dropout = cfg.attn_dropout = c->dropout;
    posemb_head head = td->squad ? POSEMB_HEAD_SPAN : td->train.label ? POSEMB_HEAD_CLASSIFY : POSEMB_HEAD_REGRESS;
    if (!st) st = posemb_config_set_head(&cfg, head, td->squad ? 2 : td->train.label ? td->dev.n_classes : 1, err);
    if (!st) st = posemb_model_create(m, &cfg, err);
    if (!st) posemb_model_init(*m, 7777u + (uint64_t)seed);
    int missing = 0;
    if (!st) st = posemb_model_init_from(*m, pretrain, &missing, err);
    return st;
}

/* Train rows in a seeded order per epoch: row k of the run is a function of (seed, k). */
typedef struct shuffle {
    int *order, n;
    long epoch; /* whose order is in order (-1: none) */
    uint64_t seed;
} shuffle;

static int shuffled_row(shuffle *s, long k)
{
    long e = k / s->n;
    if (e != s->epoch) {
        posemb_rng r;
        posemb_rng_seed(&r, s->seed, (uint64_t)e);
        for (int j = 0; j < s->n; j++) s->order[j] = j;
        for (int j = s->n - 1; j > 0; j--) { /* Fisher-Yates */
            int x = (int)posemb_rng_below(&r, (uint32_t)(j + 1)), tmp = s->order[j];
            s->order[j] = s->order[x];
            s->order[x] = tmp;
        }
        s->epoch = e;
    }
    return s->order[k % s->n];
}

/* The fine-tuning batch of one step: rows of the shuffled training set. */
typedef struct ft_source {
    const task_data *td;
    shuffle *sh;
    batch_buf *b;
    int B, micro_B; /* the update's rows; each micro-batch's share */
} ft_source;

/* A fine-tuning run's state, for the training loop's hooks. */
typedef struct ft_run {
    const posemb_study_config *c;
    const task_data *td;
    ft_source *src;
    const char *dir, *run;
    double *best, before, t0; /* before: the seconds of its earlier tries */
    ft_result *r;
    int leader;
    long steps;
} ft_run;

static posemb_status next_ft_batch(void *ctx, long step, int micro, posemb_batch *batch, posemb_targets *tg,
                                   posemb_error *err)
{
    (void)err;
    const ft_source *s = ((const ft_run *)ctx)->src;
    const posemb_features *f = &s->td->train;
    batch_buf *b = s->b;
    int rows[4096], B = s->micro_B;
    for (int i = 0; i < B; i++) rows[i] = shuffled_row(s->sh, step * s->B + (long)micro * B + i);
    *batch = (posemb_batch){.B = B, .T = gather(f, rows, B, 1, b), .ids = b->ids, .types = b->types, .mask = b->mask};
    *tg = (posemb_targets){.labels = f->label ? b->labels : NULL,
                           .values = f->score ? b->values : NULL,
                           .starts = f->starts ? b->starts : NULL,
                           .ends = f->ends ? b->ends : NULL};
    return POSEMB_OK;
}

/* Evaluates at step; a better main metric than *best saves the model to dir. */
static posemb_status ft_checkpoint(posemb_model *m, const posemb_study_config *c, const task_data *td, long step,
                                   const char *dir, batch_buf *b, double *best, ft_result *r, posemb_error *err)
{
    double v[2];
    int collapsed;
    posemb_status st = evaluate(m, c, td, 0, b, v, &collapsed, err);
    if (st) return st;
    if (r->n_curve < POSEMB_STUDY_MAX_CURVE) {
        r->curve[r->n_curve][0] = (double)step;
        r->curve[r->n_curve++][1] = v[0];
    }
    if (!(v[0] > *best) && !isnan(*best)) return POSEMB_OK; /* NaN (a constant prediction) never wins over a number */
    *best = v[0];
    r->metric[0][0] = v[0];
    r->metric[0][1] = v[1];
    r->collapsed[0] = collapsed;
    return posemb_model_save(m, dir, err);
}

/* ---- resuming a run ---- */

/* A double as JSON that reads back bit for bit; NaN as null. */
static size_t put_exact(char *out, size_t cap, const char *before, double x)
{
    return (size_t)(isnan(x) ? snprintf(out, cap, "%snull", before) : snprintf(out, cap, "%s%.17g", before, x));
}

/* The run's progress at a checkpoint: what the rest of it needs to end as
 * the uninterrupted run does (the best evaluation so far, whose model is in
 * the run's folder, and the curve). */
static char *ft_notes(const ft_result *r, float lr, double best, double seconds)
{
    size_t cap = 256 + 64 * (size_t)r->n_curve, n = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    n += put_exact(s + n, cap - n, "{\"steps\": ", r->steps);
    n += put_exact(s + n, cap - n, ", \"lr\": ", lr);
    n += put_exact(s + n, cap - n, ", \"best\": ", best);
    n += put_exact(s + n, cap - n, ", \"metric\": [", r->metric[0][0]);
    n += put_exact(s + n, cap - n, ", ", r->metric[0][1]);
    n += (size_t)snprintf(s + n, cap - n, "], \"collapsed\": %d, \"seconds\": %.3f, \"curve\": [", r->collapsed[0],
                          seconds);
    for (int k = 0; k < r->n_curve; k++) {
        n += put_exact(s + n, cap - n, k ? ", [" : "[", r->curve[k][0]);
        n += put_exact(s + n, cap - n, ", ", r->curve[k][1]);
        n += (size_t)snprintf(s + n, cap - n, "]");
    }
    snprintf(s + n, cap - n, "]}");
    return s;
}

/* A number or null (NaN) of notes; 0 when it is neither. */
static int get_exact(const cJSON *v, double *x)
{
    *x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    return cJSON_IsNumber(v) || cJSON_IsNull(v);
}

static int read_pair(const cJSON *a, double *x, double *y)
{
    return cJSON_IsArray(a) && cJSON_GetArraySize(a) == 2 && get_exact(cJSON_GetArrayItem(a, 0), x) &&
           get_exact(cJSON_GetArrayItem(a, 1), y);
}

static posemb_status ft_read_notes(const char *notes, const char *run, float lr, ft_result *r, double *best,
                                   double *seconds, posemb_error *err)
{
    cJSON *j = cJSON_Parse(notes);
    const cJSON *curve = cJSON_GetObjectItemCaseSensitive(j, "curve"), *p;
    const cJSON *collapsed = cJSON_GetObjectItemCaseSensitive(j, "collapsed");
    double steps, run_lr;
    int ok = get_exact(cJSON_GetObjectItemCaseSensitive(j, "steps"), &steps) && steps == r->steps &&
             get_exact(cJSON_GetObjectItemCaseSensitive(j, "lr"), &run_lr) && run_lr == lr &&
             get_exact(cJSON_GetObjectItemCaseSensitive(j, "best"), best) &&
             read_pair(cJSON_GetObjectItemCaseSensitive(j, "metric"), &r->metric[0][0], &r->metric[0][1]) &&
             get_exact(cJSON_GetObjectItemCaseSensitive(j, "seconds"), seconds) && cJSON_IsNumber(collapsed) &&
             cJSON_IsArray(curve) && cJSON_GetArraySize(curve) <= 64;
    r->collapsed[0] = ok && collapsed->valueint != 0;
    for (p = ok ? curve->child : NULL; p && ok; p = p->next) {
        ok = read_pair(p, &r->curve[r->n_curve][0], &r->curve[r->n_curve][1]);
        r->n_curve += ok;
    }
    cJSON_Delete(j);
    return ok ? POSEMB_OK
              : posemb_fail(
                    err, POSEMB_EFORMAT,
                    "%s: the newest checkpoint's notes.json is not the progress of this fine-tuning of "
                    "%d steps at lr %g (steps, lr, best, metric, collapsed, seconds, curve); remove the folder to "
                    "start over",
                    run, r->steps, lr);
}

/* The folder of a run's resume checkpoints, inside its run folder DIR. */
static const char *ft_resume_dir(const char *dir, char run[POSEMB_PATH_MAX])
{
    snprintf(run, POSEMB_PATH_MAX, "%.4400s/resume", dir);
    return run;
}

static posemb_status ft_save_resume(const char *run, const posemb_model *m, const posemb_adamw *o, const ft_result *r,
                                    float lr, double best, double seconds, posemb_error *err)
{
    char *notes = ft_notes(r, lr, best, seconds);
    posemb_status st =
        notes ? posemb_checkpoint_save(run, m, o, notes, 1, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    free(notes);
    return st;
}

/* Continues the run from its newest checkpoint in run, if any: *first is the
 * step it resumes after (0: a fresh start), the rest of the state as then. */
static posemb_status ft_resume(const char *run, const posemb_comm *group, float lr, posemb_model *m, posemb_adamw *o,
                               long *first, double *best, double *seconds, ft_result *r, posemb_error *err)
{
    char *notes = NULL;
    posemb_status st = posemb_checkpoint_resume(run, group, m, o, &notes, err);
    *first = st ? 0 : o->step;
    if (!st && notes) st = ft_read_notes(notes, run, lr, r, best, seconds, err);
    else if (!st && *first && posemb_comm_leader(group))
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: the newest checkpoint has no notes.json", run);
    free(notes);
    return st;
}

/* Every curve_every steps and at the end: the dev evaluation, the model kept when it is the best (the leader's). */
static posemb_status ft_evaluate(void *ctx, posemb_model *m, long step, posemb_error *err)
{
    ft_run *f = ctx;
    return f->leader ? ft_checkpoint(m, f->c, f->td, step, f->dir, f->src->b, f->best, f->r, err) : POSEMB_OK;
}

/* Every curve_every steps but the last: the state a killed run resumes from (the leader's). */
static posemb_status ft_keep_resume(void *ctx, const posemb_model *m, const posemb_adamw *o, long step,
                                    posemb_error *err)
{
    const ft_run *f = ctx;
    if (!f->leader || step >= f->steps) return POSEMB_OK;
    return ft_save_resume(f->run, m, o, f->r, f->c->lr, *f->best, f->before + posemb_timer_now() - f->t0, err);
}

/* A task's fine-tuning length: steps, or fewer when `epochs` passes over
 * its training set take fewer (RTE's 2.5k pairs need not run as long as
 * SST-2's 67k sentences). */
static int ft_steps(const posemb_study_config *c, const task_data *td)
{
    double n = c->epochs > 0 ? ceil(c->epochs * td->train.n / c->batch) : c->steps;
    return n < 1 ? 1 : n < c->steps ? (int)n : c->steps;
}

/* Fine-tunes PE p's pretrained model on task t with seed s; the best model ends in dir. In a
 * group every rank trains; the leader alone evaluates and writes. */
static posemb_status finetune(const posemb_study_config *c, const char *pretrain, const task_data *td, int seed,
                              const char *dir, const posemb_comm *group, ft_result *r, posemb_error *err)
{
    int leader = posemb_comm_leader(group);
    posemb_model *m = NULL;
    posemb_adamw o = {0};
    batch_buf b = {0};
    shuffle sh = {malloc((size_t)td->train.n * sizeof(int)), td->train.n, -1, (uint64_t)seed};
    double best = NAN, before = 0, t0 = posemb_timer_now(); /* before: the seconds of its earlier tries */
    int longest = c->n_train * c->mults[c->n_mults - 1];
    long first = 0;
    char run[POSEMB_PATH_MAX];
    ft_resume_dir(dir, run);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < MAX_MULTS; k++) r->metric[k][0] = r->metric[k][1] = NAN;
    posemb_status st =
        sh.order && !batch_alloc(&b, c->batch, longest) ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = ft_model(c, td, pretrain, seed, &m, err);
    if (!st) snprintf(r->spec, sizeof r->spec, "%s", posemb_model_config(m)->pe);
    if (!st) st = posemb_adamw_init(&o, m, err);
    int steps = r->steps = ft_steps(c, td);
    if (!st) st = ft_resume(run, group, c->lr, m, &o, &first, &best, &before, r, err);
    r->resumed = first;
    posemb_adamw_config oc = posemb_adamw_defaults(c->lr, steps / 10, steps);
    ft_source src = {.td = td, .sh = &sh, .b = &b, .B = c->batch, .micro_B = c->batch / c->ranks_per_run};
    ft_run fr = {c, td, &src, dir, run, &best, before, t0, r, leader, steps};
    posemb_train_loop l = {.first = first,
                           .stop = steps,
                           .steps = steps,
                           .accum = c->ranks_per_run,
                           .seed = (uint64_t)seed,
                           .oc = &oc,
                           .comm = group,
                           .next = next_ft_batch,
                           .eval_every = c->curve_every,
                           .save_every = c->curve_every,
                           .ctx = &fr,
                           .evaluate = ft_evaluate,
                           .checkpoint = ft_keep_resume};
    posemb_train_point last = {0};
    if (!st) st = posemb_train_run(m, &o, &l, &last, err);
    if (st == POSEMB_EFORMAT && !isfinite(last.loss))
        st = posemb_fail(err, st, "fine-tuning step %ld: the loss is %g", last.step, last.loss);
    posemb_adamw_free(&o);
    posemb_model_free(m);
    m = NULL;
    if (!st && leader && td->squad) st = posemb_model_load(&m, dir, err); /* the best model, every window length */
    for (int k = 1; !st && leader && td->squad && k < c->n_mults; k++)
        st = evaluate(m, c, td, k, &b, r->metric[k], &r->collapsed[k], err);
    posemb_model_free(m);
    batch_free(&b);
    free(sh.order);
    r->seconds = before + posemb_timer_now() - t0;
    return st;
}

/* results.jsonl lines of a run (STUDY.md section 5), one per evaluation length. */
static char *ft_lines(const posemb_study_config *c, int p, int t, int s, const task_data *td, const ft_result *r)
{
    const posemb_glue_info *g =
        td->squad ? NULL : posemb_glue_task_info((posemb_glue_task)posemb_glue_task_from_name(c->tasks[t]));
    const char *k0 = td->squad ? "f1" : posemb_metric_name(g->metrics[0]);
    const char *k1 = td->squad ? "exact_match" : g->n_metrics > 1 ? posemb_metric_name(g->metrics[1]) : NULL;
    const char *kind = td->squad ? "span" : td->train.label ? "classification" : "regression";
    size_t cap = 8192 * (size_t)c->n_mults, len = 0;
    char *out = malloc(cap);
    for (int m = 0; out && m < posemb_study_lines_per_run(c, t); m++) {
        len += (size_t)snprintf(out + len, cap - len,
                                "{\"pe\": \"%s\", \"spec\": \"%s\", \"task\": \"%s\", \"kind\": \"%s\", "
                                "\"seed\": %d, \"n_train\": %d, \"eval_len\": %d, \"metrics\": {\"%s\": %.6f",
                                c->pes[p], r->spec, c->tasks[t], kind, c->seeds[s], c->n_train,
                                c->n_train * c->mults[m], k0, r->metric[m][0]);
        if (k1) len += (size_t)snprintf(out + len, cap - len, ", \"%s\": %.6f", k1, r->metric[m][1]);
        len += (size_t)snprintf(out + len, cap - len,
                                "}, \"chance\": %.6f, \"collapsed\": %s, \"steps\": %d, \"pretrain_steps\": %d, "
                                "\"seconds\": %.2f, \"blas\": \"%s\", \"products\": \"%s\"",
                                td->chance, r->collapsed[m] ? "true" : "false", r->steps, c->real.pretrain_steps,
                                r->seconds, posemb_blas_core(), posemb_small_products());
        if (c->real.pretrain_seed > 1) /* another draw of the pretraining (lines without the key: draw 1) */
            len += (size_t)snprintf(out + len, cap - len, ", \"pretrain_seed\": %d", c->real.pretrain_seed);
        if (c->real.pre_ln) /* pre-LN layers (lines without the key: post-LN, as BERT's) */
            len += (size_t)snprintf(out + len, cap - len, ", \"pre_ln\": 1");
        if (study_pretrain_warmup(c->real.pretrain_warmup, c->real.pretrain_steps) !=
            study_pretrain_warmup(0, c->real.pretrain_steps)) /* another warm-up (lines without: the default's) */
            len += (size_t)snprintf(out + len, cap - len, ", \"pretrain_warmup\": %d", c->real.pretrain_warmup);
        if (c->real.vocab[0]) /* another vocabulary (lines without the key: bert-base-uncased's) */
            len += (size_t)snprintf(out + len, cap - len, ", \"vocab\": \"%s\"", c->real.vocab);
        if (!isnan(td->match[m]))
            len += (size_t)snprintf(out + len, cap - len, ", \"token_match\": %.6f", td->match[m]);
        for (int k = 0; m == 0 && k < r->n_curve; k++)
            len += (size_t)snprintf(out + len, cap - len, "%s[%.0f, %.4f]%s", k ? ", " : ", \"curve\": [",
                                    r->curve[k][0], r->curve[k][1], k + 1 == r->n_curve ? "]" : "");
        len += (size_t)snprintf(out + len, cap - len, "}\n");
    }
    return out;
}

/* ---- the worker ---- */

typedef struct worker_state {
    const posemb_study_config *c;
    const char *out;
    const posemb_study_queue *q;
    posemb_tokenizer *tok;
    task_data td[POSEMB_STUDY_MAX_TASKS];
} worker_state;

static posemb_status one_finetune(worker_state *ws, int p, int t, int s, posemb_error *err)
{
    posemb_study_config budgeted;
    const posemb_study_config *c = posemb_study_for_task(ws->c, ws->c->tasks[t], &budgeted);
    char name[160], pretrain[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX], resume[POSEMB_PATH_MAX];
    study_folder_of(c->pes[p], name, sizeof name);
    snprintf(pretrain, sizeof pretrain, "%s/models/%s/pretrain", ws->out, name);
    if (study_model_dir(ws->out, name, c->tasks[t], c->seeds[s], dir, sizeof dir))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", ws->out);
    ft_result r;
    posemb_status st = load_task(c, ws->tok, t, &ws->td[t], err);
    if (!st) st = finetune(c, pretrain, &ws->td[t], c->seeds[s], dir, ws->q->group, &r, err);
    if (!st && !posemb_comm_leader(ws->q->group)) return POSEMB_OK; /* the leader reports the run */
    if (!st) { /* before the lines: a kill between the two redoes the run, never leaves its checkpoints behind */
        posemb_checkpoint_remove(ft_resume_dir(dir, resume));
    }
    char *lines = st ? NULL : ft_lines(c, p, t, s, &ws->td[t], &r);
    if (!st) st = lines ? ws->q->append(ws->q->ctx, lines, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    free(lines);
    char resumed[48] = "";
    if (!st && r.resumed) snprintf(resumed, sizeof resumed, ", resumed at step %ld", r.resumed);
    if (!st)
        fprintf(stderr, "posemb study: %-8s %-6s seed %d  %s %.3f at %d tokens  (%.0f s, %d steps%s)\n", c->pes[p],
                c->tasks[t], c->seeds[s], posemb_study_task_metric(c, t), r.metric[0][0], c->n_train, r.seconds,
                r.steps, resumed);
    return st;
}

/* Each unit of q is a PE: its pretraining (resumed from its checkpoints), then
 * its fine-tunings that results.jsonl does not hold yet. */
posemb_status study_data_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                              posemb_error *err)
{
    worker_state ws = {c, out, q, NULL, {{0}}};
    char desc[POSEMB_PATH_MAX];
    int *done = calloc((size_t)c->n_pes * c->n_tasks * c->n_seeds, sizeof *done);
    posemb_status st =
        done ? study_read_done(c, out, done, NULL, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = study_load_tokenizer(c, &ws.tok, desc, sizeof desc, err);
    /* A group's ranks agree on done[]: they read it before their first unit's
     * first gradient sum, which its leader's first line comes after. */
    int p = -1;
    if (!st) st = study_next_unit(q, &p, err);
    while (!st && p >= 0) {
        st = study_pretrain(c, out, p, q->group, err);
        for (int t = 0; !st && t < c->n_tasks; t++)
            for (int s = 0; !st && s < c->n_seeds; s++)
                if (done[study_run_index(c, p, t, s)] < posemb_study_lines_per_run(c, t))
                    st = one_finetune(&ws, p, t, s, err);
        if (!st) st = study_next_unit(q, &p, err);
    }
    for (int t = 0; t < POSEMB_STUDY_MAX_TASKS; t++) task_data_free(&ws.td[t]);
    posemb_tokenizer_free(ws.tok);
    free(done);
    return st;
}
