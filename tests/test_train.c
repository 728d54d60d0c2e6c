/* Training runs: batches and masking, resume reproducing the loss curve
 * exactly, checkpoints, NaN handling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "posemb/comm.h"
#include "posemb/corpus.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/rng.h"
#include "posemb/threads.h"
#include "posemb/trainer.h"
#include "data/datasets.h"
#include "testutil.h"
#include "model/model_internal.h"
#include "core/rng_internal.h"

enum { V = 50, T = 10, NTOK = 4000 };
static int32_t tokens[NTOK];

/* A stream with structure: token t+1 is usually a function of token t. */
static void make_tokens(void)
{
    posemb_rng r;
    posemb_rng_seed(&r, 9, 9);
    tokens[0] = 5;
    for (int i = 1; i < NTOK; i++)
        tokens[i] =
            posemb_rng_uniform(&r) < 0.7 ? 5 + (tokens[i - 1] * 7 + 3) % (V - 5) : 5 + (int)posemb_rng_below(&r, V - 5);
}

static posemb_model *tiny_bert(const char *spec)
{
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_BERT);
    c.vocab_size = V;
    c.hidden = 16;
    c.layers = 2;
    c.heads = 2;
    c.intermediate = 32;
    c.max_position = 16;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, POSEMB_HEAD_MLM, 0, &err) || posemb_model_create(&m, &c, &err))
        fail_msg("%s", err.msg);
    posemb_model_init(m, 4);
    return m;
}

static void data(posemb_lm_data *d)
{
    posemb_error err;
    make_tokens();
    posemb_lm_data_opts o = {
        .T = T, .mlm = 1, .cls = 1, .sep = 2, .mask_id = 3, .vocab = V, .valid_frac = 0.1, .seed = 77};
    if (posemb_lm_data_init(d, tokens, NTOK, &o, &err)) fail_msg("%s", err.msg);
}

/* A held-out fraction outside [0, 1) would leave no training sequences (and
 * a division by zero in the batches): refused. */
static void test_bad_valid_frac(void **state)
{
    posemb_lm_data d;
    posemb_error err;
    make_tokens();
    const double bad[] = {1.0, 1.5, -0.1, NAN};
    for (int i = 0; i < 4; i++) {
        posemb_lm_data_opts o = {.T = T, .mlm = 1, .cls = 1, .sep = 2, .mask_id = 3, .vocab = V, .valid_frac = bad[i]};
        assert_int_equal(posemb_lm_data_init(&d, tokens, NTOK, &o, &err), POSEMB_EINVAL);
        assert_non_null(strstr(err.msg, "held-out fraction"));
        posemb_lm_data_free(&d);
    }
}

/* MLM masking: ~15% of body tokens, of those ~80% [MASK]; never [CLS]/[SEP];
 * batches are functions of their number; an epoch visits every sequence once. */
static void test_batches(void **state)
{
    posemb_lm_data d;
    data(&d);
    assert_int_equal(d.n_train + d.n_valid, NTOK / (T - 2));
    enum { B = 50 };
    int32_t ids[B * T], tg[B * T], ids2[B * T], tg2[B * T];
    long chosen = 0, masked = 0, body = 0;
    for (int k = 0; k < 40; k++) {
        posemb_lm_train_batch(&d, k, B, ids, tg);
        for (int i = 0; i < B * T; i++) {
            int t = i % T;
            if (t == 0 || t == T - 1) {
                assert_int_equal(tg[i], -100);
                assert_int_equal(ids[i], t == 0 ? 1 : 2);
                continue;
            }
            body++;
            chosen += tg[i] >= 0;
            masked += tg[i] >= 0 && ids[i] == 3;
        }
    }
    printf("masking: %.4f of body tokens chosen, %.4f of those [MASK]\n", (double)chosen / body,
           (double)masked / chosen);
    assert_true(fabs((double)chosen / body - 0.15) < 0.01);
    assert_true(fabs((double)masked / chosen - 0.8) < 0.03);
    posemb_lm_train_batch(&d, 7, B, ids, tg);
    posemb_lm_train_batch(&d, 3, B, ids2, tg2);
    posemb_lm_train_batch(&d, 7, B, ids2, tg2);
    assert_memory_equal(ids, ids2, sizeof ids);
    assert_memory_equal(tg, tg2, sizeof tg);
    /* one epoch = n_train sequences, each once */
    char *seen = calloc((size_t)d.n_train, 1);
    for (long g = 0; g < d.n_train; g++) {
        posemb_lm_train_batch(&d, g, 1, ids, tg);
        long s = d.perm[g % d.n_train];
        assert_int_equal(seen[s], 0);
        seen[s] = 1;
    }
    free(seen);
    posemb_lm_data_free(&d);
}

static posemb_train_args args_for(const char *out, long steps)
{
    posemb_train_args a = posemb_train_defaults(out, steps);
    a.batch = 8;
    a.accum = 2;
    a.lr = 3e-3f;
    a.warmup = 2;
    a.save_every = 3;
    a.eval_every = 6;
    a.eval_batches = 2;
    a.log_every = 0;
    return a;
}

/* ape:frozen=on: the table is a constant. Trained with weight decay, it
 * ends bitwise as drawn while plain ape's moves and the rest of the model
 * trains; the forward pass is plain ape's (the same first loss). */
static void test_frozen_table(void **state)
{
    posemb_threads_set(1);
    char *dir = tu_tmpdir(), run[2][1100];
    posemb_lm_data d;
    data(&d);
    posemb_error err;
    const char *specs[2] = {"ape:frozen=on", "ape"};
    double first[2];
    for (int k = 0; k < 2; k++) {
        snprintf(run[k], sizeof run[k], "%s/%d", dir, k);
        posemb_model *m = tiny_bert(specs[k]);
        if (k == 0) assert_non_null(strstr(posemb_model_config(m)->pe, "frozen=on"));
        const posemb_param *table = posemb_model_find(m, "embeddings.position_embeddings.weight"),
                           *word = posemb_model_find(m, "embeddings.word_embeddings.weight");
        assert_true(table && word);
        assert_int_equal(table->decay, k);
        size_t nt = table->numel * sizeof(float), nw = word->numel * sizeof(float);
        float *t0 = malloc(nt), *w0 = malloc(nw);
        memcpy(t0, posemb_model_weights(m) + table->offset, nt);
        memcpy(w0, posemb_model_weights(m) + word->offset, nw);
        posemb_train_args a = args_for(run[k], 6);
        a.weight_decay = 0.1f;
        posemb_train_result r;
        if (posemb_train(m, &d, &a, 0, &r, &err)) fail_msg("%s", err.msg);
        first[k] = r.history[0].loss;
        posemb_train_result_free(&r);
        int same_table = !memcmp(t0, posemb_model_weights(m) + table->offset, nt);
        assert_int_equal(same_table, k == 0); /* frozen: unchanged; plain: trained */
        assert_true(memcmp(w0, posemb_model_weights(m) + word->offset, nw) != 0);
        free(t0);
        free(w0);
        posemb_model_free(m);
    }
    posemb_lm_data_free(&d);
    assert_true(first[0] == first[1]);
    printf("frozen table: unchanged over 6 steps with weight decay 0.1, first loss %.6f as plain ape's\n", first[0]);
    tu_rmtree(dir);
    free(dir);
}

/* N steps straight == N/2, stop, resume, N/2: identical losses (one thread). */
static void test_resume_identical(void **state)
{
    posemb_threads_set(1);
    char *dir = tu_tmpdir(), run_a[1100], run_b[1100];
    snprintf(run_a, sizeof run_a, "%s/a", dir);
    snprintf(run_b, sizeof run_b, "%s/b", dir);
    posemb_lm_data d;
    data(&d);
    posemb_error err;
    posemb_train_result ra, rb1, rb2;
    posemb_model *m = tiny_bert("rpe:k=4");
    posemb_train_args a = args_for(run_a, 12);
    if (posemb_train(m, &d, &a, 0, &ra, &err)) fail_msg("%s", err.msg);
    posemb_model_free(m);

    m = tiny_bert("rpe:k=4");
    posemb_train_args b = args_for(run_b, 12);
    b.stop_at = 7; /* stops after step 7 with a checkpoint */
    if (posemb_train(m, &d, &b, 0, &rb1, &err)) fail_msg("%s", err.msg);
    assert_int_equal(rb1.step, 7);
    posemb_model_free(m);
    m = tiny_bert("rpe:k=4"); /* a fresh process would start from a fresh model */
    b.stop_at = 0;
    if (posemb_train(m, &d, &b, 1, &rb2, &err)) fail_msg("%s", err.msg);
    assert_int_equal(rb2.resumed_from, 7);
    assert_int_equal(rb2.n_history, 12);
    for (long i = 0; i < 12; i++) {
        if (ra.history[i].loss != rb2.history[i].loss)
            fail_msg("step %ld: loss %.9g straight, %.9g resumed", i + 1, ra.history[i].loss, rb2.history[i].loss);
    }
    printf("resume: 12 steps straight and 7 + resume + 5 give identical losses (%.6f -> %.6f)\n", ra.history[0].loss,
           ra.history[11].loss);
    assert_true(isfinite(ra.history[11].loss));
    /* the run folder is a model; only the newest checkpoints remain */
    /* the resumed log keeps the evaluation of step 6: it is the uninterrupted run's log, line for line */
    char log_a[1200], log_b[1200], *text_a = NULL, *text_b = NULL;
    size_t len_a = 0, len_b = 0;
    snprintf(log_a, sizeof log_a, "%s/train_log.jsonl", run_a);
    snprintf(log_b, sizeof log_b, "%s/train_log.jsonl", run_b);
    if (posemb_read_data_file(log_a, 1 << 20, &text_a, &len_a, &err) ||
        posemb_read_data_file(log_b, 1 << 20, &text_b, &len_b, &err))
        fail_msg("%s", err.msg);
    assert_non_null(strstr(text_b, "\"kind\": \"eval\", \"step\": 6,"));
    assert_string_equal(text_a, text_b);
    free(text_a);
    free(text_b);
    posemb_model *back;
    if (posemb_model_load(&back, run_b, &err)) fail_msg("%s", err.msg);
    assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float));
    char path[1200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/checkpoint-12/optimizer.safetensors", run_b);
    assert_int_equal(stat(path, &sb), 0);
    snprintf(path, sizeof path, "%s/checkpoint-3", run_b);
    assert_int_not_equal(stat(path, &sb), 0);
    posemb_model_free(back);
    posemb_model_free(m);
    posemb_train_result_free(&ra);
    posemb_train_result_free(&rb1);
    posemb_train_result_free(&rb2);
    posemb_lm_data_free(&d);
    tu_rmtree(dir);
    free(dir);
    posemb_threads_set(2);
}

/* A resumed run reads trainer_state.json from the checkpoint: a step or a
 * history entry that is not a whole number in range is a one-line error (a
 * cast of 1e300 to long was undefined behaviour; found by fuzz_checkpoint). */
static void test_hostile_trainer_state(void **state)
{
    static const char *const BAD[] = {
        "{\"step\": 1e300, \"history\": []}",
        "{\"step\": -3, \"history\": []}",
        "{\"step\": 2.5, \"history\": []}",
        "{\"step\": 3, \"history\": [[1e300, 1, 0.1, 1]]}",
        "{\"step\": 3, \"history\": [[1, null, 0.1, 1]]}",
        "{\"step\": 3, \"history\": [[1, 2, 3]]}",
        "{\"step\": \"3\", \"history\": []}",
    };
    char *dir = tu_tmpdir(), run[1100], path[1200];
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(path, sizeof path, "%s/checkpoint-3/trainer_state.json", run);
    posemb_lm_data d;
    data(&d);
    posemb_error err;
    posemb_train_result res;
    posemb_model *m = tiny_bert("ape");
    posemb_train_args a = args_for(run, 3);
    if (posemb_train(m, &d, &a, 0, &res, &err)) fail_msg("%s", err.msg);
    posemb_train_result_free(&res);
    a.steps = 6;
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        assert_int_equal(tu_write_file(path, BAD[i], strlen(BAD[i])), 0);
        assert_int_equal(posemb_train(m, &d, &a, 1, &res, &err), POSEMB_EFORMAT);
        if (!strstr(err.msg, "trainer_state.json: ")) fail_msg("%s: %s", BAD[i], err.msg);
        posemb_train_result_free(&res);
    }
    posemb_model_free(m);
    posemb_lm_data_free(&d);
    tu_rmtree(dir);
    free(dir);
}

/* A non-finite loss stops the run naming the step; the checkpoint before stays. */
/* The one listing of checkpoint-STEP folders: numeric order, only exact
 * names, complete (trainer_state.json) or all; the latest of the complete. */
static void test_checkpoint_listing(void **state)
{
    char *run = tu_tmpdir(), p[600];
    const char *dirs[] = {"checkpoint-10", "checkpoint-2",         "checkpoint-30", "checkpoint-x",
                          "checkpoint-5a", ".checkpoint-40.tmp.1", "checkpoint--3"};
    for (int i = 0; i < 7; i++) {
        snprintf(p, sizeof p, "%s/%s", run, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
        if (i != 2) { /* checkpoint-30 is incomplete */
            snprintf(p, sizeof p, "%s/%s/trainer_state.json", run, dirs[i]);
            assert_int_equal(tu_write_file(p, "{}", 2), 0);
        }
    }
    long *steps;
    assert_int_equal(posemb_checkpoint_steps(run, 1, &steps), 2);
    assert_int_equal(steps[0], 2);
    assert_int_equal(steps[1], 10);
    free(steps);
    assert_int_equal(posemb_checkpoint_steps(run, 0, &steps), 3);
    assert_int_equal(steps[2], 30);
    free(steps);
    char latest[600] = "";
    assert_int_equal(posemb_checkpoint_latest(run, latest, sizeof latest), 10);
    snprintf(p, sizeof p, "%s/checkpoint-10", run);
    assert_string_equal(latest, p);
    snprintf(p, sizeof p, "%s/none", run);
    assert_int_equal(posemb_checkpoint_steps(p, 1, &steps), -1);
    assert_null(steps);
    tu_rmtree(run);
    free(run);
}

static void test_nan_stops(void **state)
{
    char *dir = tu_tmpdir(), run[1100];
    snprintf(run, sizeof run, "%s/r", dir);
    posemb_lm_data d;
    data(&d);
    posemb_model *m = tiny_bert("ape");
    posemb_train_args a = args_for(run, 6);
    a.stop_at = 3;
    posemb_error err;
    posemb_train_result r;
    if (posemb_train(m, &d, &a, 0, &r, &err)) fail_msg("%s", err.msg);
    posemb_train_result_free(&r);
    posemb_model_weights(m)[0] = NAN;                                  /* poison the word embeddings' first row... */
    for (int i = 0; i < 16 * V; i++) posemb_model_weights(m)[i] = NAN; /* ...all of them */
    a.stop_at = 0;
    assert_int_equal(posemb_train(m, &d, &a, 0, &r, &err), POSEMB_EFORMAT);
    /* a fresh run in the same folder fails at its first step; the earlier checkpoint survives */
    if (!strstr(err.msg, "step 1: the loss is") || !strstr(err.msg, run)) fail_msg("message: %s", err.msg);
    char path[1200];
    long last = posemb_checkpoint_latest(run, path, sizeof path);
    assert_int_equal(last, 3);
    posemb_train_result_free(&r);
    posemb_model_free(m);
    posemb_lm_data_free(&d);
    tu_rmtree(dir);
    free(dir);
}

/* ---- posemb_train_run, the one loop: its hooks' cadence, and a run split
 * at any step equal to the whole one, bit for bit. ---- */

typedef struct loop_trace {
    posemb_lm_data *d;
    int32_t ids[8 * T], targets[8 * T];
    char calls[256]; /* "sN eN cN " in the order the hooks ran */
} loop_trace;

static posemb_status trace_batch(void *ctx, long step, int micro, posemb_batch *b, posemb_targets *t, posemb_error *err)
{
    (void)err;
    loop_trace *tr = ctx;
    posemb_lm_train_batch(tr->d, step * 2 + micro, 8, tr->ids, tr->targets);
    *b = (posemb_batch){.B = 8, .T = T, .ids = tr->ids};
    t->tokens = tr->targets;
    return POSEMB_OK;
}

static void trace_add(loop_trace *tr, char kind, long step)
{
    size_t n = strlen(tr->calls);
    snprintf(tr->calls + n, sizeof tr->calls - n, "%c%ld ", kind, step);
}

static posemb_status trace_step(void *ctx, const posemb_train_point *p, posemb_error *err)
{
    (void)err;
    trace_add(ctx, 's', p->step);
    return POSEMB_OK;
}

static posemb_status trace_eval(void *ctx, posemb_model *m, long step, posemb_error *err)
{
    (void)m, (void)err;
    trace_add(ctx, 'e', step);
    return POSEMB_OK;
}

static posemb_status trace_save(void *ctx, const posemb_model *m, const posemb_adamw *o, long step, posemb_error *err)
{
    (void)m, (void)o, (void)err;
    trace_add(ctx, 'c', step);
    return POSEMB_OK;
}

/* Steps first .. stop - 1 of a 7-step schedule, 2 micro-batches each. */
static posemb_status run_loop(posemb_model *m, posemb_adamw *o, const posemb_adamw_config *oc, loop_trace *tr,
                              long first, long stop, posemb_train_point *last, posemb_error *err)
{
    posemb_train_loop l = {.first = first,
                           .stop = stop,
                           .steps = 7,
                           .accum = 2,
                           .seed = 3,
                           .oc = oc,
                           .next = trace_batch,
                           .eval_every = 3,
                           .save_every = 2,
                           .ctx = tr,
                           .on_step = trace_step,
                           .evaluate = trace_eval,
                           .checkpoint = trace_save};
    return posemb_train_run(m, o, &l, last, err);
}

static void test_train_run_hooks(void **state)
{
    (void)state;
    posemb_lm_data d;
    data(&d);
    posemb_adamw_config oc = posemb_adamw_defaults(1e-3f, 1, 7);
    posemb_error err;
    posemb_model *whole = tiny_bert("ape"), *split = tiny_bert("ape");
    posemb_adamw ow, os;
    loop_trace a = {.d = &d}, b = {.d = &d};
    posemb_train_point last;
    if (posemb_adamw_init(&ow, whole, &err) || posemb_adamw_init(&os, split, &err)) fail_msg("%s", err.msg);
    if (run_loop(whole, &ow, &oc, &a, 0, 7, &last, &err)) fail_msg("%s", err.msg);
    /* evaluate at multiples of 3 and the schedule's end; checkpoint at multiples of 2 and the stop */
    assert_string_equal(a.calls, "s1 s2 c2 s3 e3 s4 c4 s5 s6 e6 c6 s7 e7 c7 ");
    assert_int_equal(last.step, 7);
    if (run_loop(split, &os, &oc, &b, 0, 5, NULL, &err)) fail_msg("%s", err.msg);
    assert_string_equal(b.calls, "s1 s2 c2 s3 e3 s4 c4 s5 c5 ");
    b.calls[0] = '\0';
    if (run_loop(split, &os, &oc, &b, 5, 7, NULL, &err)) fail_msg("%s", err.msg);
    assert_string_equal(b.calls, "s6 e6 c6 s7 e7 c7 ");
    assert_memory_equal(posemb_model_weights(whole), posemb_model_weights(split),
                        posemb_model_n_floats(whole) * sizeof(float));
    posemb_train_loop bad = {.first = 5, .stop = 4, .steps = 7, .accum = 1, .oc = &oc, .next = trace_batch};
    assert_int_equal(posemb_train_run(whole, &ow, &bad, NULL, &err), POSEMB_EINVAL);
    /* a loss that is not finite: EFORMAT, last names it, the weights stay */
    for (int i = 0; i < 16 * V; i++) posemb_model_weights(split)[i] = NAN;
    float keep = posemb_model_weights(split)[16 * V];
    assert_int_equal(run_loop(split, &os, &oc, &b, 6, 7, &last, &err), POSEMB_EFORMAT);
    assert_int_equal(last.step, 7);
    assert_true(isnan(last.loss));
    assert_true(posemb_model_weights(split)[16 * V] == keep);
    posemb_adamw_free(&ow);
    posemb_adamw_free(&os);
    posemb_model_free(whole);
    posemb_model_free(split);
    posemb_lm_data_free(&d);
}

/* ---- a group (posemb/comm.h) without MPI: two forked processes joined by a
 * socket pair implement its three calls; posemb_train over them must train
 * the model one process trains with the same batch and accum, to the grouping
 * of the gradient sums, and rank 1 writes nothing. Runs under the
 * sanitizers, which the MPI build does not (test_mpi.c). ---- */

enum { GROUP_STEPS = 12 };

static int full_io(int fd, void *buf, size_t n, int writing)
{
    for (size_t done = 0; done < n;) {
        ssize_t k = writing ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
        if (k <= 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

/* Two ranks over a socket: rank 1 sends its x, rank 0 adds in rank order and sends the sum back. */
typedef struct pair {
    int fd, rank;
} pair;

static posemb_status pair_sum(pair *p, void *x, size_t n, size_t size, posemb_error *err)
{
    void *other = malloc(n * size);
    int bad = !other;
    if (!bad && p->rank == 1) bad = full_io(p->fd, x, n * size, 1) || full_io(p->fd, x, n * size, 0);
    if (!bad && p->rank == 0) {
        bad = full_io(p->fd, other, n * size, 0);
        for (size_t i = 0; !bad && i < n; i++)
            if (size == sizeof(float)) ((float *)x)[i] = ((float *)x)[i] + ((float *)other)[i];
            else ((double *)x)[i] = ((double *)x)[i] + ((double *)other)[i];
        bad = bad || full_io(p->fd, x, n * size, 1);
    }
    free(other);
    return bad ? posemb_fail(err, POSEMB_EIO, "pair: the other rank is gone") : POSEMB_OK;
}

static posemb_status sum_f32(void *ctx, float *x, size_t n, posemb_error *err)
{
    return pair_sum(ctx, x, n, sizeof *x, err);
}

static posemb_status sum_f64(void *ctx, double *x, size_t n, posemb_error *err)
{
    return pair_sum(ctx, x, n, sizeof *x, err);
}

static posemb_status bcast(void *ctx, void *buf, size_t n, posemb_error *err)
{
    pair *p = ctx;
    int bad = full_io(p->fd, buf, n, p->rank == 0);
    return bad ? posemb_fail(err, POSEMB_EIO, "pair: the other rank is gone") : POSEMB_OK;
}

/* Trains in run (with group g, or alone); returns the run's result. */
static posemb_status train(const char *run, const posemb_comm *g, posemb_train_result *res, posemb_model **m,
                           posemb_error *err)
{
    posemb_lm_data d;
    data(&d);
    *m = tiny_bert("lsin+rpe:k=4");
    posemb_train_args a = args_for(run, GROUP_STEPS);
    a.comm = g;
    posemb_status st = posemb_train(*m, &d, &a, 0, res, err);
    posemb_lm_data_free(&d);
    return st;
}

static void test_pair_trains_as_one(void **state)
{
    posemb_threads_set(1);
    char *dir = tu_tmpdir(), one[1100], two[1100], path[1200];
    snprintf(one, sizeof one, "%s/one", dir);
    snprintf(two, sizeof two, "%s/two", dir);
    posemb_error err;
    posemb_train_result ra, rb;
    posemb_model *ma, *mb;
    if (train(one, NULL, &ra, &ma, &err)) fail_msg("%s", err.msg);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fflush(NULL);
    pid_t child = fork();
    pair p = {child == 0 ? sv[1] : sv[0], child == 0};
    posemb_comm g = {p.rank, 2, &p, sum_f32, sum_f64, bcast};
    if (child == 0) { /* rank 1: trains, writes nothing, exits with its status */
        close(sv[0]);
        posemb_status st = train(two, &g, &rb, &mb, &err);
        _exit(st ? 1 : 0);
    }
    close(sv[1]);
    posemb_status st = train(two, &g, &rb, &mb, &err);
    int status;
    waitpid(child, &status, 0);
    if (st) fail_msg("rank 0: %s", err.msg);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(rb.n_history, GROUP_STEPS);
    double worst = 0;
    for (int i = 0; i < GROUP_STEPS; i++) {
        TU_CLOSE(rb.history[i].loss, ra.history[i].loss, 0, 1e-5, "loss", i);
        worst = fmax(worst, fabs(rb.history[i].loss / ra.history[i].loss - 1));
    }
    TU_CLOSE(rb.eval_loss, ra.eval_loss, 0, 1e-5, "eval loss", 0);
    const float *wa = posemb_model_weights(ma), *wb = posemb_model_weights(mb);
    for (size_t i = 0; i < posemb_model_n_floats(ma); i++) TU_CLOSE(wb[i], wa[i], 1e-6, 1e-4, "weight", (long)i);
    snprintf(path, sizeof path, "%s/model.safetensors", two);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0); /* rank 0 saved the final model */
    printf("2 ranks over a socket pair: %d losses within %.1e of one process's\n", GROUP_STEPS, worst);
    posemb_train_result_free(&ra);
    posemb_train_result_free(&rb);
    posemb_model_free(ma);
    posemb_model_free(mb);
    tu_rmtree(dir);
    free(dir);
}

/* An accum the ranks cannot share is refused before anything is written. */
static void test_accum_refused(void **state)
{
    pair p = {-1, 0};
    posemb_comm g = {0, 3, &p, sum_f32, sum_f64, bcast};
    posemb_lm_data d;
    posemb_error err;
    data(&d);
    posemb_model *m = tiny_bert("ape");
    posemb_train_args a = args_for("/nonexistent/run", GROUP_STEPS);
    a.comm = &g;
    posemb_train_result res;
    assert_int_equal(posemb_train(m, &d, &a, 0, &res, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "accum 2 is not a multiple of the 3 ranks"));
    posemb_train_result_free(&res);
    posemb_model_free(m);
    posemb_lm_data_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_bad_valid_frac),
        cmocka_unit_test(test_resume_identical),
        cmocka_unit_test(test_frozen_table),
        cmocka_unit_test(test_nan_stops),
        cmocka_unit_test(test_train_run_hooks),
        cmocka_unit_test(test_hostile_trainer_state),
        cmocka_unit_test(test_checkpoint_listing),
        cmocka_unit_test(test_pair_trains_as_one),
        cmocka_unit_test(test_accum_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
