/* The study's dispatcher: the three studies (synthetic, real data, length)
 * are rooms of one table, each with its checks, its preparation, the work
 * of its units and its report; this file checks what they share, lists the
 * units left and hands them to the worker pool. It is the top of
 * src/study: the rooms, the store and the pool never call it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "posemb/pe.h"
#include "study/study.h"
#include "study/synthetic.h"
#include "study_data_impl.h"
#include "study_length_impl.h"
#include "study_pool.h"
#include "study_report.h"
#include "study_store.h"
#include "study_synthetic.h"

/* How a study's units are cut and ordered: runs (PE, task, seed); runs with
 * every run of the first seed first; PEs (a PE's pretraining, then its runs). */
typedef enum study_units { UNITS_RUNS, UNITS_SEED_FIRST, UNITS_PES } study_units;

typedef struct study_room {
    const char *name;
    study_units units;
    posemb_status (*check)(const posemb_study_config *c, posemb_error *err); /* NULL: nothing of its own */
    posemb_status (*prepare)(const posemb_study_config *c, const char *out, posemb_error *err); /* NULL: none */
    study_work_fn work;
    /* left[run] = 1 for runs with work beyond their results.jsonl lines (NULL: none) */
    posemb_status (*left)(const posemb_study_config *c, const char *out, unsigned char *left, posemb_error *err);
    posemb_status (*tables)(const posemb_study_config *c, const char *out, posemb_error *err);
    posemb_status (*report)(const posemb_study_config *c, const char *out, posemb_error *err);
} study_room;

static const study_room ROOMS[STUDY_KINDS] = {
    [STUDY_SYNTHETIC] = {"synthetic", UNITS_RUNS, NULL, NULL, study_synthetic_work, NULL, study_runs_tables,
                         study_runs_report},
    [STUDY_DATA] = {"real data", UNITS_PES, posemb_study_data_check, posemb_study_data_prepare, study_data_work, NULL,
                    study_runs_tables, study_runs_report},
    [STUDY_LENGTH] = {"length", UNITS_SEED_FIRST, study_length_check, study_length_prepare, study_length_work,
                      study_extend_left, study_length_tables, study_length_report},
};

static const study_room *room_of(const posemb_study_config *c) { return &ROOMS[study_kind_of(c)]; }

/* The lists not empty, the sizes positive, the batches split evenly over a run's ranks. */
static posemb_status check_sizes(const posemb_study_config *c, posemb_error *err)
{
    if (c->n_pes < 1 || c->n_tasks < 1 || c->n_seeds < 1 || c->n_mults < 1)
        return posemb_fail(err, POSEMB_EINVAL, "study: no PEs, tasks, seeds or lengths");
    if (c->n_train < 16 || c->steps < 1 || c->batch < 1 || c->eval_examples < 1)
        return posemb_fail(err, POSEMB_EINVAL, "study: n_train >= 16, steps, batch and eval_examples >= 1 are needed");
    int rpr = c->ranks_per_run; /* each rank of a run's group takes an equal share of every batch */
    if (rpr < 1) return posemb_fail(err, POSEMB_EINVAL, "study: ranks_per_run must be at least 1");
    if (c->batch % rpr)
        return posemb_fail(err, POSEMB_EINVAL, "study: batch %d is not a multiple of ranks_per_run %d", c->batch, rpr);
    if (study_glue(c) && c->real.pretrain_batch % rpr)
        return posemb_fail(err, POSEMB_EINVAL, "study: pretrain_batch %d is not a multiple of ranks_per_run %d",
                           c->real.pretrain_batch, rpr);
    return POSEMB_OK;
}

/* EINVAL for a key of one kind of study given to another, or a key whose partner is missing: nothing would read it. */
static posemb_status check_scope(const posemb_study_config *c, posemb_error *err)
{
    if (!study_glue(c) && c->epochs > 0) /* synthetic tasks draw fresh examples: there are no passes to count */
        return posemb_fail(err, POSEMB_EINVAL, "study: \"epochs\" applies to the real-data study (--data) only");
    if (!study_glue(c) && (c->real.pre_ln || c->real.pretrain_seed || c->real.pretrain_warmup ||
                           c->real.vocab[0])) /* only it reads them */
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: \"pre_ln\", \"pretrain_seed\", \"pretrain_warmup\" and \"vocab\" apply to the "
                           "real-data study (--data) only");
    for (int i = 0; i < c->n_budgets; i++)
        if (!study_glue(c) && c->budgets[i].epochs > 0)
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: \"task_budgets\" of %s: \"epochs\" applies to the real-data study (--data) only",
                               c->budgets[i].task);
    if (!c->length && c->len.model[0])
        return posemb_fail(err, POSEMB_EINVAL, "study: \"model\" applies to the length study (--length) only");
    if (!c->length && c->len.passkey_train > 0)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"passkey_train\" applies to the length study (--length) only");
    if (!c->length && c->len.extend_keys)
        return posemb_fail(err, POSEMB_EINVAL, "study: the extend_* keys apply to the length study (--length) only");
    if (c->len.extend_keys && !c->len.n_extend_factors)
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: extend_* keys without \"extend_factors\": nothing is fine-tuned");
    if (!c->length && c->len.ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_tasks\" apply to the length study (--length) only");
    if (c->len.sink_every && !c->length)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"sink_every\" applies to the length study (--length) only");
    if (c->len.ruler_train > 0 && !c->len.ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_train\" %g names no \"ruler_tasks\" to train",
                           c->len.ruler_train);
    if ((c->len.ruler_keys || c->len.ruler_key_words) && !c->len.ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_keys\" or \"ruler_key_form\" without \"ruler_tasks\"");
    if (c->len.ruler_twice && !c->len.ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_needle\" without \"ruler_tasks\"");
    if (c->len.passkey_once && (!c->length || (!c->len.passkey_train && !c->len.passkey_trials)))
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: \"passkey_needle\" applies to the length study's passkey (--length, with "
                           "\"passkey_train\" or \"passkey_trials\") only");
    return POSEMB_OK;
}

/* Each task's curve and sink checkpoints within what a run keeps. */
static posemb_status check_curves(const posemb_study_config *c, posemb_error *err)
{
    for (int t = 0; t < c->n_tasks; t++) { /* steps bounds the updates (epochs can only cut them) */
        posemb_study_config own;
        const posemb_study_config *b = posemb_study_for_task(c, c->tasks[t], &own);
        if (b->curve_every > 0 && b->steps / b->curve_every > POSEMB_STUDY_MAX_CURVE)
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: task %s: %d steps with curve_every %d make %d curve points; at most %d are "
                               "kept (raise curve_every)",
                               c->tasks[t], b->steps, b->curve_every, b->steps / b->curve_every,
                               POSEMB_STUDY_MAX_CURVE);
        int every = c->len.sink_every; /* each run's own steps: a task budget may change them */
        if (every && (b->steps % every || b->steps / every > POSEMB_STUDY_MAX_CURVE))
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: task %s: \"sink_every\" %d must divide its %d steps into at most %d parts",
                               c->tasks[t], every, b->steps, POSEMB_STUDY_MAX_CURVE);
    }
    return POSEMB_OK;
}

/* Every task known and every PE spec built as its runs will build it: a bad one fails now, not in a worker. */
static posemb_status check_specs(const posemb_study_config *c, posemb_error *err)
{
    for (int t = 0; !c->data[0] && t < c->n_tasks; t++)
        if (!posemb_syn_find(c->tasks[t]))
            return posemb_fail(err, POSEMB_EINVAL, "study: unknown task '%s'", c->tasks[t]);
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++) {
            /* decoder tasks build a causal model: decoder-only PEs (xpos) are checked as the run will build them */
            int causal = posemb_study_task_kind(c, t) == POSEMB_SYN_LM;
            posemb_pe *probe; /* tables as long as the models': the longest evaluation; the length study's n_train */
            posemb_pe_dims d = {.dim = c->hidden,
                                .n_heads = c->heads,
                                .n_layers = c->layers,
                                .max_len = c->length ? c->n_train : c->n_train * c->mults[c->n_mults - 1],
                                .causal = causal,
                                .max_threads = 1};
            posemb_error why;
            if (posemb_pe_create(&probe, c->pes[p], &d, &why))
                return posemb_fail(err, POSEMB_EINVAL, "study: task %s (%s): %s", c->tasks[t],
                                   causal ? "a decoder" : "an encoder", why.msg);
            int32_t drawn = posemb_pe_random_max(probe), longest = c->n_train * c->mults[c->n_mults - 1];
            posemb_pe_free(probe);
            if (drawn && drawn < longest) /* else the first evaluation past it fails, after the training */
                return posemb_fail(err, POSEMB_EINVAL,
                                   "study: spec '%s': positions drawn from [0, %d) cannot cover the longest "
                                   "evaluation, %d tokens (max=%d or more)",
                                   c->pes[p], drawn, longest, longest);
        }
    return POSEMB_OK;
}

static posemb_status check_config(const posemb_study_config *c, posemb_error *err)
{
    posemb_status st;
    if ((st = check_sizes(c, err)) || (st = check_scope(c, err)) || (st = check_curves(c, err))) return st;
    const study_room *room = room_of(c);
    if (room->check && (st = room->check(c, err))) return st;
    return check_specs(c, err);
}

int posemb_study_n_units(const posemb_study_config *c)
{
    return room_of(c)->units == UNITS_PES ? c->n_pes : c->n_pes * c->n_tasks * c->n_seeds;
}

posemb_status posemb_study_pending(const posemb_study_config *c, const char *out, int *pending, int *n,
                                   posemb_error *err)
{
    size_t runs = (size_t)c->n_pes * c->n_tasks * c->n_seeds;
    int *done = calloc(runs, sizeof *done);
    unsigned char *more = calloc(runs, 1);
    study_kernels kernels = {0};
    posemb_status st =
        done && more ? study_read_done(c, out, done, &kernels, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st && room_of(c)->left) st = room_of(c)->left(c, out, more, err);
    if (!st && kernels.other) /* their runs are other draws (the rounding differs), not continued ones */
        fprintf(stderr,
                "posemb study: %s/results.jsonl: %d line(s) ran under %s, this process under OpenBLAS's %s kernels, "
                "small products: %s: the runs to go are other draws of the experiment, not bit-for-bit continuations "
                "(posemb --version)\n",
                out, kernels.other, kernels.first, posemb_blas_core(), posemb_small_products());
    if (st) {
        free(done);
        free(more);
        return st;
    }
    *n = 0;
    if (room_of(c)->units == UNITS_SEED_FIRST) { /* every run of the first seed first: a partial study has every row */
        for (int s = 0; s < c->n_seeds; s++)
            for (int p = 0; p < c->n_pes; p++)
                for (int t = 0; t < c->n_tasks; t++)
                    if (done[study_run_index(c, p, t, s)] < posemb_study_lines_per_run(c, t) ||
                        more[study_run_index(c, p, t, s)])
                        pending[(*n)++] = (int)study_run_index(c, p, t, s);
    } else {
        int by_pe = room_of(c)->units == UNITS_PES; /* a real-data unit: a PE, pretraining first */
        for (int p = 0; p < c->n_pes; p++) {
            int pe_pending = 0;
            for (int t = 0; t < c->n_tasks; t++)
                for (int s = 0; s < c->n_seeds; s++) {
                    int left = done[study_run_index(c, p, t, s)] < posemb_study_lines_per_run(c, t) ||
                               more[study_run_index(c, p, t, s)];
                    pe_pending |= left;
                    if (left && !by_pe) pending[(*n)++] = (int)study_run_index(c, p, t, s);
                }
            if (pe_pending && by_pe) pending[(*n)++] = p;
        }
    }
    free(done);
    free(more);
    return POSEMB_OK;
}

/* The line that says what a study has left: n pending units on workers. */
static void say_pending(const posemb_study_config *c, const char *out, int n, int workers)
{
    int total = c->n_pes * c->n_tasks * c->n_seeds;
    if (room_of(c)->units == UNITS_PES)
        fprintf(stderr,
                "posemb study: %d runs (%d PEs x %d tasks x %d seeds) in %s; %d PE(s) with runs to go on %d "
                "worker(s)\n",
                total, c->n_pes, c->n_tasks, c->n_seeds, out, n, workers);
    else
        fprintf(stderr,
                "posemb study: %d runs (%d PEs x %d tasks x %d seeds), %d already in %s/results.jsonl, %d to go "
                "on %d worker(s)\n",
                total, c->n_pes, c->n_tasks, c->n_seeds, total - n, out, n, workers);
}

posemb_status posemb_study_prepare(const posemb_study_config *c, const char *out, posemb_error *err)
{
    posemb_status st = check_config(c, err);
    if (st) return st;
    char path[POSEMB_PATH_MAX];
    if (mkdir(out, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", out, strerror(errno));
    if (posemb_path_join(path, sizeof path, out, "models") || (mkdir(path, 0755) && errno != EEXIST))
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create", path);
    /* A real-data study's lines are checked against c before its corpora are tokenized: a config they
     * refuse (another draw, vocabulary or placement) must not retokenize out's cache with its vocabulary
     * first. (The length study checks its lines after its prepare, which refuses configs of its own.) */
    if (study_glue(c)) {
        int *done = calloc((size_t)c->n_pes * c->n_tasks * c->n_seeds, sizeof *done);
        study_kernels kernels = {0};
        st = done ? study_read_done(c, out, done, &kernels, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        free(done);
    }
    const study_room *room = room_of(c); /* the real-data and length studies tokenize their corpora once */
    return st || !room->prepare ? st : room->prepare(c, out, err);
}

posemb_status posemb_study_finish(const posemb_study_config *c, const char *out, posemb_error *err)
{
    posemb_status st = posemb_study_tables(c, out, err);
    return st ? st : posemb_study_report(c, out, err);
}

posemb_status posemb_study_run(const posemb_study_config *c, const char *out, posemb_error *err)
{
    posemb_status st = posemb_study_prepare(c, out, err);
    int n = 0, *pending = st ? NULL : malloc((size_t)posemb_study_n_units(c) * sizeof *pending);
    if (!st && !pending) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = posemb_study_pending(c, out, pending, &n, err);
    if (!st) say_pending(c, out, n, c->jobs);
    if (!st && n) st = study_run_workers(c, out, pending, n, posemb_study_work, err);
    free(pending);
    return st ? st : posemb_study_finish(c, out, err);
}

posemb_status posemb_study_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                posemb_error *err)
{
    return room_of(c)->work(c, out, q, err);
}

posemb_status posemb_study_tables(const posemb_study_config *c, const char *out, posemb_error *err)
{
    return room_of(c)->tables(c, out, err);
}

posemb_status posemb_study_report(const posemb_study_config *c, const char *out, posemb_error *err)
{
    return room_of(c)->report(c, out, err);
}
