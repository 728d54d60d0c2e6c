/* The length study's short fine-tune at a longer context (extend_factors),
 * the setting Position Interpolation (Chen et al. 2023) and YaRN (Peng et
 * al. 2023) make their claims in: each "rope" run, once trained at n_train,
 * is fine-tuned at n_train x factor under each RoPE scaling ("none": plain
 * RoPE, extrapolation then fine-tuning) from its final model, and its
 * held-out perplexity is read at the target length every extend_every
 * steps (step 0: the trained model under the scaling, no fine-tune) and at
 * every evaluation length at the end.
 *
 * Each fine-tune runs in RUN/extend-SCALING-xFACTOR (resumed from its newest
 * checkpoint) and, once read, is one line of out/extend.jsonl: results.jsonl
 * keeps one line per run and length, which the study counts to know what is
 * done. A run's fine-tunes come before its results.jsonl lines, so a run
 * with its lines has its fine-tunes, and a run killed between them does its
 * fine-tunes' missing lines again, never a line twice. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/timer.h"
#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "model/model_internal.h"
#include "study_impl.h"
#include "study_length_impl.h"
#include "study_store.h"

int study_extend_applies(const posemb_study_config *c, int p)
{
    return c->len.n_extend_factors > 0 && !strcmp(c->pes[p], "rope");
}

/* The fine-tune's batch and learning rate: the config's, or the pretraining's tokens per update and a tenth of its
 * rate (PI fine-tunes at 2e-5 after pretraining at 3e-4). */
static int extend_batch(const posemb_study_config *c, int factor)
{
    if (c->len.extend_batch) return c->len.extend_batch;
    return c->batch / factor > 1 ? c->batch / factor : 1;
}
/* DroPE recalibrates at the pretraining's own rate (the paper's 1e-3 after pretraining at 3e-4: a new model to
 * settle, not a small step from the trained one). */
static float extend_lr(const posemb_study_config *c, int drope)
{
    return c->len.extend_lr > 0 ? c->len.extend_lr : drope ? c->lr : c->lr / 10;
}
/* The rate as a line holds it: the float as a config writes it, not its binary expansion. */
static double extend_lr_written(const posemb_study_config *c, int drope)
{
    char text[32];
    snprintf(text, sizeof text, "%.6g", extend_lr(c, drope));
    return strtod(text, NULL);
}

/* DroPE (the "drope" scaling) recalibrates at the training length whatever the factor: the pretraining's batch,
 * one folder for every factor; the others fine-tune at n_train x factor. */
static int is_drope(const posemb_study_config *c, int k) { return !strcmp(c->len.extend_scalings[k], "drope"); }
static int train_factor(const posemb_study_config *c, int k, int f)
{
    return is_drope(c, k) ? 1 : c->len.extend_factors[f];
}

/* Index of fine-tune (scaling k, factor f) of run r in the array study_extend_done fills. */
static size_t extend_index(const posemb_study_config *c, size_t r, int k, int f)
{
    return (r * (size_t)c->len.n_extend_scalings + (size_t)k) * (size_t)c->len.n_extend_factors + (size_t)f;
}

typedef struct extend_read {
    const posemb_study_config *c;
    const char *path;
    unsigned char *have;
} extend_read;

/* One extend.jsonl line into have (a study_line_fn); lines of other runs are skipped, a line of this config's run
 * with other settings is refused: it would count as done for settings that did not make it. */
static posemb_status read_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    const extend_read *x = ctx;
    const posemb_study_config *c = x->c;
    int p = study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, cJSON_GetStringValue(cJSON_GetObjectItem(j, "pe")));
    int t =
        study_row_of(c->tasks[0], sizeof c->tasks[0], c->n_tasks, cJSON_GetStringValue(cJSON_GetObjectItem(j, "task")));
    int k = study_row_of(c->len.extend_scalings[0], sizeof c->len.extend_scalings[0], c->len.n_extend_scalings,
                         cJSON_GetStringValue(cJSON_GetObjectItem(j, "scaling")));
    int s = study_int_index(c->seeds, c->n_seeds, study_num(j, "seed"));
    int f = study_int_index(c->len.extend_factors, c->len.n_extend_factors, study_num(j, "factor"));
    if (p < 0 || t < 0 || k < 0 || s < 0 || f < 0) return POSEMB_OK;
    posemb_study_config budgeted; /* a task's own budget (its lr) is the one its fine-tunes ran with */
    const posemb_study_config *ct = posemb_study_for_task(c, c->tasks[t], &budgeted);
    const cJSON *steps = cJSON_GetObjectItem(j, "steps"), *every = cJSON_GetObjectItem(j, "every"),
                *batch = cJSON_GetObjectItem(j, "batch"), *lr = cJSON_GetObjectItem(j, "lr");
    if (!cJSON_IsNumber(steps) || steps->valueint != c->len.extend_steps || !cJSON_IsNumber(every) ||
        every->valueint != c->len.extend_every || !cJSON_IsNumber(batch) ||
        batch->valueint != extend_batch(ct, train_factor(c, k, f)) || !cJSON_IsNumber(lr) ||
        lr->valuedouble != extend_lr_written(ct, is_drope(c, k)))
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: line %d was run with other \"extend_steps\", \"extend_every\", \"extend_batch\" or "
                           "\"extend_lr\" than this config's: use another --out folder",
                           x->path, n);
    x->have[extend_index(c, study_run_index(c, p, t, s), k, f)] = 1;
    return POSEMB_OK;
}

/* have[extend_index(...)] = 1 for each fine-tune out/extend.jsonl holds; no file: none. */
static posemb_status extend_done(const posemb_study_config *c, const char *out, unsigned char *have, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "extend.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return POSEMB_OK;
    extend_read x = {c, path, have};
    posemb_status st = study_each_line(f, read_line, &x, err);
    fclose(f);
    return st;
}

/* have as extend_done fills it, allocated (free it), for every run. */
static posemb_status extend_have(const posemb_study_config *c, const char *out, unsigned char **have, posemb_error *err)
{
    size_t n = extend_index(c, (size_t)c->n_pes * c->n_tasks * c->n_seeds, 0, 0);
    *have = calloc(n ? n : 1, 1);
    if (!*have) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = extend_done(c, out, *have, err);
    if (st) {
        free(*have);
        *have = NULL;
    }
    return st;
}

posemb_status study_extend_left(const posemb_study_config *c, const char *out, unsigned char *left, posemb_error *err)
{
    unsigned char *have = NULL;
    posemb_status st = c->len.n_extend_factors ? extend_have(c, out, &have, err) : POSEMB_OK;
    for (int p = 0; !st && p < c->n_pes; p++)
        for (int t = 0; study_extend_applies(c, p) && t < c->n_tasks; t++)
            for (int s = 0; s < c->n_seeds; s++) {
                size_t r = study_run_index(c, p, t, s);
                for (int k = 0; k < c->len.n_extend_scalings; k++)
                    for (int f = 0; f < c->len.n_extend_factors; f++) left[r] |= !have[extend_index(c, r, k, f)];
            }
    free(have);
    return st;
}

/* What a fine-tuned model reads at every length at the end: loss, DroPE's temperature, the passkey. */
typedef struct extend_end {
    int valid;
    double loss[8], beta[8], keys[8][2];
} extend_end;

/* One fine-tune: its settings, what it reads, where it goes. */
typedef struct extend_job {
    const posemb_study_config *c;
    const study_extend_data *data;
    const char *base;                  /* the trained run's folder */
    int p, t, s, k, factor, train_len; /* train_len: n_train x factor, or n_train (DroPE) */
    posemb_config cfg;                 /* the base config under the scaling, as fine-tuned */
    struct extend_end *drope;          /* DroPE's end readings, shared by its factors (one model); else NULL */
    char dir[POSEMB_PATH_MAX];
} extend_job;

/* Held-out loss per token of the model in dir under cfg at length L, on the held-out text's first eval_tokens
 * (slice 0, what every number is read on) or the next ones (slice 1, where DroPE's temperature is fitted). */
static posemb_status loss_on(const extend_job *j, const posemb_config *cfg, const char *dir, int L, int slice,
                             double *loss, posemb_error *err)
{
    posemb_lm_length l;
    long n = j->c->len.eval_tokens;
    if ((slice + 1) * n > j->data->held_out->n)
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: drope: the held-out text has %ld tokens, fewer than 2 x eval_tokens",
                           j->data->held_out->n);
    posemb_status st = posemb_lm_eval_length(dir, cfg, j->data->held_out->tokens + slice * n, n, L, 0, &l, err);
    *loss = !st && l.count ? l.nll / (double)l.count : NAN;
    return st;
}

static posemb_status loss_at(const extend_job *j, const char *dir, int L, double *loss, posemb_error *err)
{
    return loss_on(j, &j->cfg, dir, L, 0, loss, err);
}

/* cfg with DroPE's temperature beta at length L: c = (beta - 1) / ln(L / n_train). */
static void drope_at(const extend_job *j, int L, double beta, posemb_config *cfg)
{
    *cfg = j->cfg;
    snprintf(cfg->pe, sizeof cfg->pe, "drope:c=%.9g,original=%d", (beta - 1) / log((double)L / j->c->n_train),
             j->c->n_train);
}

/* DroPE at length L > n_train: the temperature beta in [1, 3] that minimises the loss on the held-out text's
 * second slice (golden-section search to 0.01; the paper tunes it on held-out text at the target length), and
 * the loss with it on the first slice. */
static posemb_status drope_fit(const extend_job *j, int L, double *beta, double *loss, posemb_error *err)
{
    const double g = (sqrt(5.0) - 1) / 2;
    double a = 1, b = 3, x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = NAN, f2 = NAN;
    posemb_config cfg;
    drope_at(j, L, x1, &cfg);
    posemb_status st = loss_on(j, &cfg, j->dir, L, 1, &f1, err);
    drope_at(j, L, x2, &cfg);
    if (!st) st = loss_on(j, &cfg, j->dir, L, 1, &f2, err);
    while (!st && b - a > 0.01) {
        if (f1 <= f2) { /* the minimum is in [a, x2] */
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            drope_at(j, L, x1, &cfg);
            st = loss_on(j, &cfg, j->dir, L, 1, &f1, err);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            drope_at(j, L, x2, &cfg);
            st = loss_on(j, &cfg, j->dir, L, 1, &f2, err);
        }
    }
    *beta = (a + b) / 2;
    if (!st && *beta > 2.98)
        fprintf(stderr, "posemb study: drope: the temperature fitted at %d tokens is at the search's bound, 3\n", L);
    drope_at(j, L, *beta, &cfg);
    return st ? st : loss_on(j, &cfg, j->dir, L, 0, loss, err);
}

/* Fine-tunes j's model into j->dir (resumed from its newest checkpoint), every checkpoint kept. */
static posemb_status extend_train(const extend_job *j, long *resumed_from, posemb_error *err)
{
    const posemb_study_config *c = j->c;
    int L = j->train_len, context = 0;
    study_length_mix mix = study_length_mix_of(c, j->data->tok, c->seeds[j->s]);
    posemb_model *m = NULL;
    posemb_lm_data d = {0};
    posemb_train_result res = {0};
    posemb_status st = posemb_lm_load_at(j->base, &j->cfg, L, &m, &context, err);
    if (!st && context != L)
        st = posemb_fail(err, POSEMB_EINVAL, "%s: %s cannot take %d tokens", j->base, j->cfg.pe, L);
    if (!st)
        st = posemb_lm_data_init(
            &d, j->data->train->tokens, j->data->train->n,
            &(posemb_lm_data_opts){
                .T = L, .vocab = j->cfg.vocab_size, .valid_frac = 0.01, .seed = (uint64_t)c->seeds[j->s]},
            err);
    if (!st && (c->len.passkey_train > 0 || c->len.ruler_train > 0)) {
        d.mix = study_length_mix_apply;
        d.mix_ctx = &mix;
    }
    posemb_train_args a = posemb_train_defaults(j->dir, c->len.extend_steps);
    a.batch = extend_batch(c, j->train_len / c->n_train);
    a.lr = extend_lr(c, is_drope(c, j->k));
    a.warmup = c->len.extend_steps / 20; /* PI: 20 of 1000 steps; YaRN: 20 of 400 */
    a.seed = (uint64_t)c->seeds[j->s];
    a.save_every = c->len.extend_every;
    a.keep = c->len.extend_steps / c->len.extend_every + 1; /* the curve reads every checkpoint */
    a.eval_every = 0;
    a.log_every = c->len.extend_steps >= 10 ? c->len.extend_steps / 10 : 1;
    if (!st) st = posemb_train(m, &d, &a, 1, &res, err);
    *resumed_from = res.resumed_from;
    posemb_train_result_free(&res);
    posemb_lm_data_free(&d);
    posemb_model_free(m);
    return st;
}

/* Appends "key": [numbers] (NaN as null) to j. */
static void add_numbers(cJSON *o, const char *key, const double *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
}

/* The training mix a fine-tune reads (its sequences come from the study's mix), as results.jsonl's lines say
 * it: the passkey's share (%g, as there) and needle, RULER's tasks, share, keys and needle, the "model" keys.
 * Not ruler_trials: a fine-tune scores no RULER task. */
static void mix_fields(const posemb_study_config *c, cJSON *o)
{
    char g[32];
    snprintf(g, sizeof g, "%g", c->len.passkey_train);
    cJSON_AddNumberToObject(o, "passkey_train", strtod(g, NULL));
    if (c->len.passkey_once) cJSON_AddStringToObject(o, "passkey_needle", "once");
    if (c->len.ruler_tasks) {
        cJSON *t = cJSON_AddArrayToObject(o, "ruler_tasks");
        for (int k = 0; t && k < STUDY_RULER_TASKS; k++)
            if (c->len.ruler_tasks >> k & 1u) cJSON_AddItemToArray(t, cJSON_CreateString(study_ruler_task_name(k)));
        snprintf(g, sizeof g, "%.9g", c->len.ruler_train);
        cJSON_AddNumberToObject(o, "ruler_train", strtod(g, NULL));
        if (c->len.ruler_keys) cJSON_AddNumberToObject(o, "ruler_keys", c->len.ruler_keys);
        if (c->len.ruler_key_words) cJSON_AddStringToObject(o, "ruler_key_form", "words");
        if (c->len.ruler_twice) cJSON_AddStringToObject(o, "ruler_needle", "twice");
    }
    if (c->len.model[0]) cJSON_AddItemToObject(o, "model", cJSON_Parse(c->len.model));
}

/* j's extend.jsonl line: perplexity at the target length at each curve step, and at every length at the end. */
static char *extend_line(const extend_job *j, const double *steps, const double *curve, int n_curve, const double *end,
                         const double *beta, const double (*keys)[2], double seconds, long resumed_from)
{
    const posemb_study_config *c = j->c;
    cJSON *o = cJSON_CreateObject();
    double ppl[STUDY_EXTEND_POINTS], lengths[8], end_ppl[8];
    for (int i = 0; i < n_curve; i++) ppl[i] = exp(curve[i]);
    for (int i = 0; i < c->n_mults; i++) {
        lengths[i] = (double)c->n_train * c->mults[i];
        end_ppl[i] = exp(end[i]);
    }
    cJSON_AddStringToObject(o, "pe", c->pes[j->p]);
    cJSON_AddStringToObject(o, "task", c->tasks[j->t]);
    cJSON_AddNumberToObject(o, "seed", c->seeds[j->s]);
    cJSON_AddStringToObject(o, "scaling", c->len.extend_scalings[j->k]);
    cJSON_AddNumberToObject(o, "factor", j->factor);
    cJSON_AddStringToObject(o, "spec", j->cfg.pe);
    cJSON_AddNumberToObject(o, "n_train", c->n_train);
    cJSON_AddNumberToObject(o, "length", c->n_train * j->factor);
    cJSON_AddNumberToObject(o, "steps", c->len.extend_steps);
    cJSON_AddNumberToObject(o, "every", c->len.extend_every);
    cJSON_AddNumberToObject(o, "batch", extend_batch(c, j->train_len / c->n_train));
    cJSON_AddNumberToObject(o, "train_length", j->train_len);
    cJSON_AddNumberToObject(o, "lr", extend_lr_written(c, is_drope(c, j->k)));
    add_numbers(o, "curve_steps", steps, n_curve);
    add_numbers(o, "curve_perplexity", ppl, n_curve);
    add_numbers(o, "eval_lengths", lengths, c->n_mults);
    add_numbers(o, "perplexity", end_ppl, c->n_mults);
    if (is_drope(c, j->k)) add_numbers(o, "beta", beta, c->n_mults); /* the temperature fitted at each length */
    double pk[2][8];
    for (int i = 0; i < c->n_mults; i++) {
        pk[0][i] = keys[i][0];
        pk[1][i] = keys[i][1];
    }
    if (c->len.passkey_trials) {
        add_numbers(o, "passkey", pk[0], c->n_mults);
        add_numbers(o, "passkey_digits", pk[1], c->n_mults);
    }
    mix_fields(c, o);
    cJSON_AddNumberToObject(o, "seconds", round(seconds * 100) / 100);
    cJSON_AddStringToObject(o, "blas", posemb_blas_core());
    cJSON_AddStringToObject(o, "products", posemb_small_products());
    if (resumed_from) cJSON_AddNumberToObject(o, "resumed_from", (double)resumed_from);
    char *body = cJSON_PrintUnformatted(o), *line = NULL;
    cJSON_Delete(o);
    size_t n = body ? strlen(body) : 0;
    if (body && (line = malloc(n + 2))) {
        memcpy(line, body, n);
        memcpy(line + n, "\n", 2);
    }
    cJSON_free(body);
    return line;
}

/* Passkey retrieval of the fine-tuned model under cfg at length L, means over depths: keys[0] retrieved whole,
 * keys[1] their digits (NaN without passkey_trials). */
static posemb_status keys_at(const extend_job *j, const posemb_config *cfg, int L, double keys[2], posemb_error *err)
{
    double whole[POSEMB_PASSKEY_DEPTHS], digits[POSEMB_PASSKEY_DEPTHS];
    int context = 0;
    keys[0] = keys[1] = NAN;
    if (!j->c->len.passkey_trials) return POSEMB_OK;
    posemb_status st = posemb_passkey(j->dir, cfg, j->data->tok, j->c->len.passkey_once, L, j->c->seeds[j->s],
                                      j->c->len.passkey_trials, whole, digits, &context, err);
    keys[0] = keys[1] = 0;
    for (int d = 0; !st && d < POSEMB_PASSKEY_DEPTHS; d++) {
        keys[0] += whole[d] / POSEMB_PASSKEY_DEPTHS;
        keys[1] += digits[d] / POSEMB_PASSKEY_DEPTHS;
    }
    return st;
}

/* The fine-tuned model at every length: its loss (DroPE's with the temperature fitted there), the passkey. */
static posemb_status end_readings(const extend_job *j, extend_end *e, posemb_error *err)
{
    const posemb_study_config *c = j->c;
    posemb_status st = POSEMB_OK;
    for (int i = 0; !st && i < c->n_mults; i++) {
        int L = c->n_train * c->mults[i];
        posemb_config at = j->cfg;
        e->beta[i] = 1;
        st = is_drope(c, j->k) && L > c->n_train ? drope_fit(j, L, &e->beta[i], &e->loss[i], err)
                                                 : loss_at(j, j->dir, L, &e->loss[i], err);
        if (!st && e->beta[i] != 1) drope_at(j, L, e->beta[i], &at);
        if (!st) st = keys_at(j, &at, L, e->keys[i], err);
    }
    e->valid = !st;
    return st;
}

/* Runs job j: fine-tune, the curve at steps 0, every, 2 every, ... and the last (0 from the base folder, the last
 * from the final model, the others from their checkpoints), then every length. */
static posemb_status extend_one(const extend_job *j, const char *path, posemb_error *err)
{
    const posemb_study_config *c = j->c;
    double t0 = posemb_timer_now(), steps[STUDY_EXTEND_POINTS], curve[STUDY_EXTEND_POINTS];
    long resumed_from = 0;
    int L = c->n_train * j->factor, n = 0;
    for (int step = 0; step < c->len.extend_steps; step += c->len.extend_every) steps[n++] = step;
    steps[n++] = c->len.extend_steps;
    char ckpt[POSEMB_PATH_MAX + 32];
    posemb_status st = extend_train(j, &resumed_from, err);
    if (!st) st = study_length_tokenizer_into(c, j->dir, err); /* the folder loads alone (posemb passkey) */
    for (int i = 0; !st && i < n; i++) {
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint-%.0f", j->dir, steps[i]);
        st = loss_at(j, i == 0 ? j->base : i == n - 1 ? j->dir : ckpt, L, &curve[i], err);
    }
    extend_end own = {0}, *e = j->drope ? j->drope : &own;
    if (!st && !e->valid) st = end_readings(j, e, err);
    char *line =
        st ? NULL : extend_line(j, steps, curve, n, e->loss, e->beta, e->keys, posemb_timer_now() - t0, resumed_from);
    if (!st) st = line ? study_append_results(path, line, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    free(line);
    if (!st)
        fprintf(stderr,
                "posemb study: %-5s rope seed %d  %-7s x%d fine-tuned %d steps: perplexity %.3f -> %.3f at %d\n",
                c->tasks[j->t], c->seeds[j->s], c->len.extend_scalings[j->k], j->factor, c->len.extend_steps,
                exp(curve[0]), exp(curve[n - 1]), L);
    return st;
}

posemb_status study_extend_run(const posemb_study_config *c, const char *out, int p, int t, int s,
                               const posemb_config *cfg, const study_extend_data *data, const char *dir,
                               posemb_error *err)
{
    if (!study_extend_applies(c, p)) return POSEMB_OK;
    char path[POSEMB_PATH_MAX];
    unsigned char *have = NULL;
    posemb_status st = posemb_path_join(path, sizeof path, out, "extend.jsonl")
                           ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out)
                           : extend_have(c, out, &have, err);
    size_t r = study_run_index(c, p, t, s);
    extend_end drope_end = {0};
    for (int f = 0; !st && f < c->len.n_extend_factors; f++)
        for (int k = 0; !st && k < c->len.n_extend_scalings; k++) {
            if (have[extend_index(c, r, k, f)]) continue;
            extend_job j = {.c = c, .data = data, .base = dir, .p = p, .t = t, .s = s, .k = k};
            j.drope = is_drope(c, k) ? &drope_end : NULL;
            j.factor = c->len.extend_factors[f];
            j.train_len = c->n_train * train_factor(c, k, f);
            j.cfg = *cfg;
            j.cfg.max_position = j.train_len;
            int n = is_drope(c, k)
                        ? snprintf(j.dir, sizeof j.dir, "%s/extend-drope", dir)
                        : snprintf(j.dir, sizeof j.dir, "%s/extend-%s-x%d", dir, c->len.extend_scalings[k], j.factor);
            if (is_drope(c, k)) snprintf(j.cfg.pe, sizeof j.cfg.pe, "drope:original=%d", c->n_train); /* NoPE */
            else study_rope_spec(c->len.extend_scalings[k], c->n_train, j.factor, j.cfg.pe, sizeof j.cfg.pe);
            if (n >= (int)sizeof j.dir) st = posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
            if (!st) st = extend_one(&j, path, err);
        }
    free(have);
    return st;
}
