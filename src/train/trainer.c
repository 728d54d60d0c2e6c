/* The training loop: micro-batches accumulated into one AdamW update per
 * step, evaluation on held-out sequences, progress, checkpoints. Batches,
 * masks and dropout are functions of (seed, step), so resuming from a
 * checkpoint reproduces the uninterrupted run. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/timer.h"
#include "train_impl.h"
#include "train/trainer_internal.h"

posemb_train_args posemb_train_defaults(const char *out, long steps)
{
    posemb_train_args a = {0};
    a.out = out;
    a.steps = steps;
    a.batch = 32;
    a.accum = 1;
    a.lr = 1e-4f;
    a.weight_decay = 0.01f;
    a.clip = 1.0f;
    a.warmup = steps / 10;
    a.seed = 0;
    a.log_every = steps >= 20 ? steps / 20 : 1;
    a.eval_every = steps >= 5 ? steps / 5 : steps;
    a.save_every = steps >= 5 ? steps / 5 : steps;
    a.eval_batches = 8;
    a.keep = 2;
    return a;
}

/* Buffers for one micro-batch. */
typedef struct batch_buf {
    int32_t *ids, *targets;
} batch_buf;

/* Mean validation loss and token accuracy over eval_batches batches, in
 * eval mode; a group shares the batches out and sums its counts. */
static posemb_status evaluate(posemb_model *m, const posemb_lm_data *d, const posemb_train_args *a, batch_buf *bb,
                              double *loss, double *acc, posemb_error *err)
{
    double sum = 0, count = 0, correct = 0;
    int group = posemb_comm_active(a->comm);
    posemb_model_set_train(m, 0, 0, 0);
    for (int i = group ? a->comm->rank : 0; i < a->eval_batches; i += group ? a->comm->size : 1) {
        posemb_lm_valid_batch(d, i, a->batch, bb->ids, bb->targets);
        posemb_batch b = {.B = a->batch, .T = d->T, .ids = bb->ids};
        posemb_targets t = {.tokens = bb->targets};
        posemb_loss l;
        posemb_status st = posemb_model_forward(m, &b, err);
        if (!st) st = posemb_model_loss(m, &t, 0.0f, &l, err);
        if (st) return st;
        sum += l.loss * (double)l.count;
        count += (double)l.count;
        correct += (double)l.correct;
    }
    double totals[3] = {sum, count, correct};
    posemb_status st = group ? a->comm->sum_f64(a->comm->ctx, totals, 3, err) : POSEMB_OK;
    *loss = totals[1] > 0 ? totals[0] / totals[1] : 0;
    *acc = totals[1] > 0 ? totals[2] / totals[1] : 0;
    return st;
}

/* One run of posemb_train: what its batch source and hooks share. */
typedef struct lm_run {
    posemb_lm_data *d;
    const posemb_train_args *a;
    batch_buf *bb;
    train_state *s;
    posemb_train_result *res;
    FILE *log;
    int leader;
    long first, stop;
    double t0;
} lm_run;

/* Micro-batch k = step * accum + micro of the training stream. */
static posemb_status next_lm_batch(void *ctx, long step, int micro, posemb_batch *b, posemb_targets *t,
                                   posemb_error *err)
{
    (void)err;
    lm_run *r = ctx;
    int B = r->a->batch;
    posemb_lm_train_batch(r->d, step * r->a->accum + micro, B, r->bb->ids, r->bb->targets);
    *b = (posemb_batch){.B = B, .T = r->d->T, .ids = r->bb->ids};
    t->tokens = r->bb->targets;
    return POSEMB_OK;
}

static void format_eta(double seconds, char *buf, size_t cap)
{
    long s = seconds > 0 && seconds < 1e7 ? (long)seconds : 0;
    snprintf(buf, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

static void report(const posemb_train_args *a, const posemb_train_point *p, double tok_s, double elapsed, long done,
                   long left)
{
    char eta[32];
    format_eta(done ? elapsed / (double)done * (double)left : 0, eta, sizeof eta);
    if (a->progress) {
        int width = 24, fill = (int)(width * (double)p->step / (double)a->steps);
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
        bar[width] = '\0';
        fprintf(stderr, "\r%6ld/%ld [%s] loss %.4f  lr %.2e  %.0f tok/s  ETA %s ", p->step, a->steps, bar, p->loss,
                p->lr, tok_s, eta);
    } else {
        fprintf(stderr, "step %ld/%ld loss %.4f lr %.3e grad_norm %.3f %.0f tok/s eta %s\n", p->step, a->steps, p->loss,
                p->lr, p->grad_norm, tok_s, eta);
    }
}

/* train_log.jsonl: one JSON object per line, appended. */
static void log_line(FILE *f, const char *kind, long step, double loss, double extra, const char *extra_name)
{
    if (!f) return;
    fprintf(f, "{\"kind\": \"%s\", \"step\": %ld, \"loss\": %.9g, \"%s\": %.9g}\n", kind, step, loss, extra_name,
            extra);
    fflush(f);
}

/* The lines of an old train_log.jsonl up to step (evaluations included),
 * or NULL when it cannot be read. */
static char *log_kept(const char *path, long step)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *kept = malloc(cap), line[1024];
    while (kept && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "step");
        size_t n = strlen(line);
        if (cJSON_IsNumber(at) && at->valuedouble <= (double)step && line[n - 1] == '\n') {
            if (len + n + 1 > cap) {
                char *grown = realloc(kept, cap *= 2);
                if (!grown) free(kept);
                kept = grown;
            }
            if (kept) {
                memcpy(kept + len, line, n);
                len += n;
            }
        }
        cJSON_Delete(j);
    }
    fclose(f);
    if (kept) kept[len] = '\0';
    return kept;
}

/* Reopens train_log.jsonl (for appending) holding only the steps the resumed
 * state has: the old lines up to its step, evaluations too, or the history
 * when the old log is gone. The shortened log replaces the old one
 * atomically: a kill in between leaves one or the other, never a cut one. */
static FILE *open_log(const posemb_train_args *a, const train_state *s)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, a->out, "train_log.jsonl")) return NULL;
    char *kept = log_kept(path, s->step);
    posemb_error err;
    posemb_atomic_file af;
    int ok = !posemb_atomic_open(&af, path, &err);
    if (ok && kept) fputs(kept, af.f);
    for (long i = 0; ok && !kept && i < s->n_history; i++)
        log_line(af.f, "train", s->history[i].step, s->history[i].loss, s->history[i].lr, "lr");
    if (ok) ok = !posemb_atomic_commit(&af, &err);
    free(kept);
    return ok ? fopen(path, "a") : NULL;
}

static posemb_status lm_on_step(void *ctx, const posemb_train_point *p, posemb_error *err)
{
    lm_run *r = ctx;
    const posemb_train_args *a = r->a;
    r->s->step = p->step;
    if (train_history_add(r->s, *p)) return posemb_fail(err, POSEMB_ENOMEM, "train: out of memory");
    double elapsed = posemb_timer_now() - r->t0;
    r->res->tokens_per_s =
        (double)(p->step - r->first) * a->batch * a->accum * r->d->T / (elapsed > 0 ? elapsed : 1e-9);
    log_line(r->log, "train", p->step, p->loss, p->lr, "lr");
    if (r->leader && (a->progress || (a->log_every && p->step % a->log_every == 0) || p->step == r->stop))
        report(a, p, r->res->tokens_per_s, elapsed, p->step - r->first, r->stop - p->step);
    return POSEMB_OK;
}

static posemb_status lm_evaluate(void *ctx, posemb_model *m, long step, posemb_error *err)
{
    lm_run *r = ctx;
    posemb_status st = evaluate(m, r->d, r->a, r->bb, &r->res->eval_loss, &r->res->eval_accuracy, err);
    log_line(r->log, "eval", step, r->res->eval_loss, r->res->eval_accuracy, "accuracy");
    return st;
}

/* accum not a multiple of the ranks: the nearest split of the same global
 * batch that they can share, if there is one. */
posemb_status posemb_train_check_group(const posemb_train_args *a, posemb_error *err)
{
    if (!posemb_comm_active(a->comm) || a->accum < 1 || a->accum % a->comm->size == 0) return POSEMB_OK;
    long global = (long)a->batch * a->accum;
    int n = a->comm->size;
    for (long acc = n; acc <= global; acc += n)
        if (global % acc == 0)
            return posemb_fail(err, POSEMB_EINVAL,
                               "train: accum %d is not a multiple of the %d ranks: each rank computes whole "
                               "micro-batches (batch %ld and accum %ld make the same global batch)",
                               a->accum, n, global / acc, acc);
    return posemb_fail(err, POSEMB_EINVAL,
                       "train: accum %d is not a multiple of the %d ranks, and the global batch %ld (batch x accum) "
                       "cannot be shared among them",
                       a->accum, n, global);
}

static posemb_status check_args(const posemb_train_args *a, const posemb_lm_data *d, posemb_error *err)
{
    if (a->steps < 1 || a->batch < 1 || a->accum < 1 || a->keep < 1 || a->eval_batches < 0)
        return posemb_fail(err, POSEMB_EINVAL, "train: steps, batch, accum and keep must be positive");
    if (!(a->lr > 0) || a->weight_decay < 0 || a->warmup < 0)
        return posemb_fail(err, POSEMB_EINVAL, "train: lr must be positive, weight decay and warm-up not negative");
    if (!d->n_train) return posemb_fail(err, POSEMB_ERANGE, "train: no training sequences");
    return posemb_train_check_group(a, err);
}

/* Restores model, optimizer and history from the newest checkpoint of a run. */
static posemb_status resume_from(posemb_model *m, posemb_adamw *o, train_state *s, const posemb_train_args *a,
                                 posemb_train_result *res, posemb_error *err)
{
    char dir[POSEMB_PATH_MAX];
    if (!posemb_checkpoint_latest(a->out, dir, sizeof dir)) return POSEMB_OK;
    posemb_status st = train_checkpoint_load(dir, m, o, s, err);
    if (!st && o->step != s->step)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: optimizer step %ld and trainer step %ld differ", dir, o->step,
                         s->step);
    res->resumed_from = s->step;
    return st;
}

/* The group starts from rank 0's state: its weights (initialised or
 * resumed), AdamW's moments and step, and the trainer's step. */
static posemb_status share_state(const posemb_comm *c, posemb_model *m, posemb_adamw *o, train_state *s,
                                 posemb_train_result *res, posemb_error *err)
{
    long steps[2] = {s->step, res->resumed_from}; /* AdamW's step goes with its moments */
    posemb_status st = c->bcast(c->ctx, steps, sizeof steps, err);
    if (!st) st = train_share_weights(c, m, o, err);
    s->step = steps[0];
    res->resumed_from = steps[1];
    return st;
}

/* A checkpoint (the leader's), and the final model at the run's end. */
static posemb_status lm_checkpoint(void *ctx, const posemb_model *m, const posemb_adamw *o, long step,
                                   posemb_error *err)
{
    const lm_run *r = ctx;
    if (!r->leader) return POSEMB_OK;
    posemb_status st = train_checkpoint_save(r->a->out, m, o, r->s, r->a->keep, err);
    if (!st && step >= r->a->steps) st = posemb_model_save(m, r->a->out, err); /* the run folder is the final model */
    return st;
}

/* One process per run folder: a second one would interleave checkpoints.
 * The lock goes with the process, however it ends. Returns the descriptor or -1. */
static int lock_run(const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, ".lock")) {
        posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", path, strerror(errno));
    else if (flock(fd, LOCK_EX | LOCK_NB)) {
        posemb_fail(err, POSEMB_EIO, "%s: another posemb process is training in this folder", out);
        close(fd);
        fd = -1;
    }
    return fd;
}

posemb_status posemb_train(posemb_model *m, posemb_lm_data *d, const posemb_train_args *a, int resume,
                           posemb_train_result *res, posemb_error *err)
{
    memset(res, 0, sizeof *res);
    posemb_status st = check_args(a, d, err);
    if (st) return st;
    int leader = posemb_comm_leader(a->comm), lock = -1; /* only the leader touches the run folder */
    if (leader && mkdir(a->out, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create the run folder: %s", a->out, strerror(errno));
    if (leader && (lock = lock_run(a->out, err)) < 0) return err ? err->code : POSEMB_EIO;
    train_state s = {0, a->seed, NULL, 0, 0, NULL};
    posemb_adamw o = {0};
    posemb_adamw_config oc = {.lr = a->lr,
                              .beta1 = 0.9f,
                              .beta2 = 0.999f,
                              .eps = 1e-8f,
                              .weight_decay = a->weight_decay,
                              .clip = a->clip,
                              .warmup = a->warmup,
                              .total = a->steps};
    batch_buf bb = {malloc((size_t)a->batch * d->T * sizeof(int32_t)),
                    malloc((size_t)a->batch * d->T * sizeof(int32_t))};
    if (!bb.ids || !bb.targets) st = posemb_fail(err, POSEMB_ENOMEM, "train: out of memory");
    if (!st) st = posemb_adamw_init(&o, m, err);
    if (!st && resume && leader) st = resume_from(m, &o, &s, a, res, err);
    if (!st && posemb_comm_active(a->comm)) st = share_state(a->comm, m, &o, &s, res, err);
    FILE *log = st || !leader ? NULL : open_log(a, &s);
    long stop = a->stop_at > 0 && a->stop_at < a->steps ? a->stop_at : a->steps, first = s.step;
    lm_run run = {d, a, &bb, &s, res, log, leader, first, stop, posemb_timer_now()};
    posemb_train_loop l = {.first = first,
                           .stop = stop,
                           .steps = a->steps,
                           .accum = a->accum,
                           .seed = a->seed,
                           .oc = &oc,
                           .comm = a->comm,
                           .next = next_lm_batch,
                           .eval_every = a->eval_every,
                           .save_every = a->save_every,
                           .ctx = &run,
                           .on_step = lm_on_step,
                           .evaluate = a->eval_every ? lm_evaluate : NULL,
                           .checkpoint = lm_checkpoint};
    posemb_train_point last = {0};
    if (!st) st = posemb_train_run(m, &o, &l, &last, err);
    if (st == POSEMB_EFORMAT && !isfinite(last.loss))
        st = posemb_fail(err, st, "step %ld: the loss is %g; stopped, the last good checkpoint is kept in %s",
                         last.step, last.loss, a->out);
    /* Resumed at its last step: a kill between the last checkpoint and the
     * final model would otherwise leave the run folder without its model. */
    if (!st && leader && s.step >= a->steps && s.step == first) st = posemb_model_save(m, a->out, err);
    if (a->progress && leader) fputc('\n', stderr);
    if (log) fclose(log);
    res->step = s.step;
    res->history = s.history;
    res->n_history = s.n_history;
    posemb_adamw_free(&o);
    free(bb.ids);
    free(bb.targets);
    if (lock >= 0) close(lock);
    return st;
}

void posemb_train_result_free(posemb_train_result *res)
{
    free(res->history);
    memset(res, 0, sizeof *res);
}
