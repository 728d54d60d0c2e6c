/* The study runner: one small encoder per (PE, task, seed), trained on
 * synthetic batches, evaluated at several lengths, recorded in results.jsonl. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "posemb/blas.h"
#include "core/fileio.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "study/study.h"
#include "core/timer.h"
#include "study/synthetic.h"
#include "posemb/pe.h"
#include "posemb/trainer.h"
#include "posemb/threads.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_ruler.h"

#define MAX_SPAN 8 /* longest answer the span decoder considers, as HF's max_answer_length */

static const char *const DEFAULT_PES[] = {"none",       "ape",     "sin",      "lsin",      "rpe",      "srpe",
                                          "lsrpe",      "ape+rpe", "ape+srpe", "ape+lsrpe", "lsin+rpe", "lsin+srpe",
                                          "lsin+lsrpe", "rope",    "alibi",    "t5"};

/* "copy" is left out of the default: no PE of the default's size learns it in 250 steps. */
static const char *const DEFAULT_TASKS[] = {"absolute", "order", "offset", "retrieve", "between", "reverse"};

/* Copies count names into rows of width bytes (a config's pes or tasks). */
void study_set_names(char *rows, size_t width, int *n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++) snprintf(rows + (size_t)i * width, width, "%s", names[i]);
    *n = count;
}

posemb_study_config posemb_study_default(void)
{
    posemb_study_config c = {
        .n_seeds = 3,
        .seeds = {1, 2, 3},
        .n_mults = 4,
        .mults = {1, 2, 4, 8},
        .layers = 2,
        .hidden = 64,
        .heads = 4,
        .intermediate = 128,
        .n_train = 32,
        .steps = 350,
        .batch = 32,
        .lr = 3e-3f,
        .eval_examples = 128,
        .curve_every = 50,
        .jobs = 2,
        .analyze = 1,
        /* the real-data study's own settings (posemb_study_data_default) */
        .pretrain_steps = 4000,
        .pretrain_batch = 32,
        .pretrain_lr = 5e-4f,
        .dropout = 0.1f,
        .squad_stride = 32,
        .squad_max_query = 32,
        .max_answer = 30,
        .ranks_per_run = 1,
    };
    study_set_names(c.pes[0], sizeof c.pes[0], &c.n_pes, DEFAULT_PES, (int)(sizeof DEFAULT_PES / sizeof *DEFAULT_PES));
    study_set_names(c.tasks[0], sizeof c.tasks[0], &c.n_tasks, DEFAULT_TASKS,
                    (int)(sizeof DEFAULT_TASKS / sizeof *DEFAULT_TASKS));
    /* Classification read from [CLS] at 3e-3 can settle early in a state it
     * never leaves (t5's [CLS] attends to A alone, so A's distance no longer
     * changes the answer): 18 of 48 collapse-prone runs collapse, 13 at 1000
     * steps; at 1e-3, 5. The span and LM tasks learn less at 1e-3 in 350
     * steps (ape's retrieve 0.74 to 0.21), so they keep 3e-3 (docs/study.md,
     * "The classification tasks' learning rate"). */
    c.n_budgets = 2;
    c.budgets[0] = (posemb_study_budget){"absolute", -1, -1, -1, 1e-3f};
    c.budgets[1] = (posemb_study_budget){"order", -1, -1, -1, 1e-3f};
    return c;
}

/* ---- one run ---- */

typedef struct run_buf {
    int32_t *ids, *labels, *starts, *ends, *targets;
    float *logits; /* causal LM: [B, T, V] of an evaluation batch */
} run_buf;

/* Whether a model says the same thing for every example: the first
 * prediction seen, and whether any other differed. A collapsed run did not
 * train (docs/study.md), whatever its metric. */
typedef struct same_pred {
    long first;
    int seen, varied;
} same_pred;

static void same_pred_add(same_pred *sp, long pred)
{
    if (!sp->seen) sp->first = pred;
    sp->varied |= sp->seen && pred != sp->first;
    sp->seen = 1;
}

static posemb_status make_model(const posemb_study_config *c, const char *posemb_pe_spec, const posemb_syn_task *t,
                                int seed, posemb_model **m, posemb_error *err)
{
    posemb_config cfg;
    int lm = t->kind == POSEMB_SYN_LM; /* causal LM tasks train a GPT-2-style decoder */
    posemb_config_defaults(&cfg, lm ? POSEMB_GPT2 : POSEMB_BERT);
    cfg.vocab_size = POSEMB_SYN_VOCAB;
    cfg.hidden = c->hidden;
    cfg.layers = c->layers;
    cfg.heads = c->heads;
    cfg.intermediate = c->intermediate;
    cfg.type_vocab = lm ? 0 : 1;
    cfg.hidden_dropout = cfg.attn_dropout = 0.0f;
    int longest = 0;
    for (int i = 0; i < c->n_mults; i++)
        longest = c->mults[i] * c->n_train > longest ? c->mults[i] * c->n_train : longest;
    /* Learned tables have rows for the longest evaluation; rows past n_train are never trained
     * and keep their initialisation: the policy docs/study.md describes. */
    cfg.max_position = longest;
    posemb_pe_dims dims = {.dim = cfg.hidden,
                           .n_heads = cfg.heads,
                           .n_layers = cfg.layers,
                           .max_len = cfg.max_position,
                           .causal = lm,
                           .max_threads = 1};
    posemb_status st = c->pe_defined ? POSEMB_OK
                                     : study_amplitude_rule(posemb_pe_spec, &dims, c->n_train, cfg.initializer_range,
                                                            cfg.pe, sizeof cfg.pe, err);
    if (st) return st;
    if (c->pe_defined) snprintf(cfg.pe, sizeof cfg.pe, "%s", posemb_pe_spec);
    posemb_head head = lm ? POSEMB_HEAD_CLM : t->kind == POSEMB_SYN_SPAN ? POSEMB_HEAD_SPAN : POSEMB_HEAD_CLASSIFY;
    st = posemb_config_set_head(&cfg, head, lm ? 0 : 2, err);
    if (!st) st = posemb_model_create(m, &cfg, err);
    if (!st) posemb_model_init(*m, (uint64_t)seed);
    return st;
}

/* Best span: start <= end < start + MAX_SPAN maximising start + end logits. */
static void best_span(const float *logits, int T, int *s, int *e)
{
    float best = -INFINITY;
    *s = *e = 0;
    for (int i = 0; i < T; i++)
        for (int j = i; j < T && j < i + MAX_SPAN; j++)
            if (logits[i * 2] + logits[j * 2 + 1] > best) {
                best = logits[i * 2] + logits[j * 2 + 1];
                *s = i;
                *e = j;
            }
}

/* Teacher-forced accuracy on the answer tokens of a causal-LM batch: adds hits and tokens,
 * and the examples whose every scored answer token is right (what greedy decoding in the
 * same frame would get right whole, its first wrong token being the teacher-forced one's;
 * docs/study.md says when decoding a growing prefix differs); each token and example into
 * tally (may be NULL); the argmax at each answer token into sp. */
static posemb_status lm_hits(posemb_model *m, const posemb_syn_task *t, const posemb_batch *batch, run_buf *b,
                             long *right, long *total, long *whole, study_tally *tally, same_pred *sp,
                             posemb_error *err)
{
    posemb_syn_lm_targets(t, batch->ids, batch->B, batch->T, b->targets);
    posemb_targets tg = {.tokens = b->targets};
    posemb_loss l;
    posemb_status st = posemb_model_loss(m, &tg, 1.0f, &l, err);
    if (!st) {
        *right += l.correct;
        *total += l.count;
        st = posemb_model_lm_logits(m, b->logits, err);
    }
    int V = posemb_model_config(m)->vocab_size, T = batch->T;
    for (int r = 0; !st && r < batch->B; r++) {
        int scored = 0, hits = 0, input_len = 0; /* the tokens between [CLS] and [SEP]: the instance's size */
        while (input_len + 1 < T && batch->ids[(size_t)r * T + input_len + 1] != SYN_SEP) input_len++;
        for (int i = r * T; i < r * T + T - 1; i++) { /* logits at t predict the token at t+1 */
            if (b->targets[i + 1] < 0) continue;
            const float *z = b->logits + (size_t)i * V;
            int best = 0;
            for (int v = 1; v < V; v++) best = z[v] > z[best] ? v : best;
            int hit = best == b->targets[i + 1];
            if (tally) study_tally_token(tally, scored, hit);
            scored++;
            hits += hit;
            same_pred_add(sp, best);
        }
        *whole += hits == scored;
        if (tally) study_tally_example(tally, input_len, scored, hits);
    }
    return st;
}

/* What an evaluation gives: accuracy (classification, LM tokens) or exact match (span);
 * exact: for LM tasks, the share of examples with every answer token right; collapsed:
 * every example got the same prediction (class, span, or answer token); tally (NULL or
 * initialised by the caller): LM tasks' hits by input length and answer position. */
typedef struct eval_out {
    double metric, exact;
    int collapsed;
    study_tally *tally;
} eval_out;

/* Evaluates m on n examples of length T into o. */
static posemb_status evaluate(posemb_model *m, const posemb_syn_task *t, uint64_t data_seed, int T, int n_train, int n,
                              run_buf *b, int B, eval_out *o, posemb_error *err)
{
    long right = 0, total = 0, whole = 0;
    same_pred sp = {0};
    posemb_model_set_train(m, 0, 0, 0); /* eval mode: no dropout */
    for (int k0 = 0; k0 < n; k0 += B) {
        int nb = n - k0 < B ? n - k0 : B;
        posemb_syn_batch(t, data_seed, 1000000L + k0, nb, T, n_train, b->ids, b->labels, b->starts, b->ends);
        posemb_batch batch = {.B = nb, .T = T, .ids = b->ids};
        posemb_status st = posemb_model_forward(m, &batch, err);
        if (!st && t->kind == POSEMB_SYN_LM) {
            if ((st = lm_hits(m, t, &batch, b, &right, &total, &whole, o->tally, &sp, err))) return st;
            continue;
        }
        const float *z = st ? NULL : posemb_model_head_logits(m, err);
        if (!z) return st ? st : POSEMB_EINVAL;
        for (int i = 0; i < nb; i++) {
            if (t->kind == POSEMB_SYN_CLASSIFY) {
                int yes = z[i * 2 + 1] > z[i * 2];
                right += yes == (b->labels[i] == 1);
                same_pred_add(&sp, yes);
            } else {
                int s, e;
                best_span(z + (size_t)i * T * 2, T, &s, &e);
                right += s == b->starts[i] && e == b->ends[i];
                same_pred_add(&sp, (long)s * T + e);
            }
        }
    }
    o->metric = (double)right / (t->kind == POSEMB_SYN_LM ? (total ? total : 1) : n);
    o->exact = (double)whole / n;
    o->collapsed = sp.seen && !sp.varied;
    return POSEMB_OK;
}

typedef struct run_result {
    double metric[8], exact[8], curve[POSEMB_STUDY_MAX_CURVE][2], seconds; /* exact: LM tasks' whole answers right */
    int collapsed[8];
    study_tally tally[8]; /* LM tasks' hits by input length and answer position (freed by run_result_free) */
    int n_curve;
    char spec[512]; /* the canonical spec the model ran with (the amplitude rule's rewrite) */
} run_result;

/* The synthetic task's batch of one step (data_seed fixes the stream). */
typedef struct syn_source {
    const posemb_study_config *c;
    const posemb_syn_task *t;
    uint64_t data_seed;
    run_buf *b;
    long step;
} syn_source;

static posemb_status next_syn_batch(void *ctx, int micro, posemb_batch *batch, posemb_targets *tg, posemb_error *err)
{
    const syn_source *s = ctx;
    const posemb_study_config *c = s->c;
    run_buf *b = s->b;
    int lm = s->t->kind == POSEMB_SYN_LM, B = c->batch / c->ranks_per_run; /* micro-batch m: rows m B .. */
    posemb_syn_batch(s->t, s->data_seed, s->step * c->batch + (long)micro * B, B, c->n_train, c->n_train, b->ids,
                     b->labels, b->starts, b->ends);
    if (lm) posemb_syn_lm_targets(s->t, b->ids, B, c->n_train, b->targets);
    *batch = (posemb_batch){.B = B, .T = c->n_train, .ids = b->ids};
    *tg = (posemb_targets){.tokens = lm ? b->targets : NULL, .labels = b->labels, .starts = b->starts, .ends = b->ends};
    return POSEMB_OK;
}

/* The training curve is the group leader's: the others go on to the next step's sum. */
static posemb_status train_run(const posemb_study_config *c, posemb_model *m, const posemb_syn_task *t,
                               uint64_t data_seed, const posemb_comm *group, run_buf *b, run_result *r,
                               posemb_error *err)
{
    posemb_adamw o;
    posemb_adamw_config oc = posemb_adamw_defaults(c->lr, c->steps / 10, c->steps);
    syn_source src = {.c = c, .t = t, .data_seed = data_seed, .b = b};
    posemb_train_step_args s = {.accum = c->ranks_per_run, .next = next_syn_batch, .ctx = &src, .comm = group};
    int leader = posemb_comm_leader(group);
    posemb_status st = posemb_adamw_init(&o, m, err);
    for (int step = 0; !st && step < c->steps; step++) {
        double loss;
        src.step = step;
        s.key = (uint64_t)step;
        st = posemb_train_step(m, &o, &oc, &s, step, &loss, NULL, err);
        if (!st && leader && c->curve_every && (step + 1) % c->curve_every == 0 &&
            r->n_curve < POSEMB_STUDY_MAX_CURVE) {
            eval_out e = {0};
            st = evaluate(m, t, data_seed, c->n_train, c->n_train, 128, b, c->batch, &e, err);
            r->curve[r->n_curve][0] = step + 1;
            r->curve[r->n_curve++][1] = e.metric;
        }
    }
    posemb_adamw_free(&o);
    return st;
}

/* The data stream of (task, seed): FNV-1a of the task's name, so that a study of one
 * cell draws the examples the whole study drew, whatever the task's place in its list. */
static uint64_t task_data_seed(const char *task, int seed)
{
    uint64_t h = 14695981039346656037u;
    for (const unsigned char *p = (const unsigned char *)task; *p; p++) h = (h ^ *p) * 1099511628211u;
    return h + 7919 * (uint64_t)seed;
}

/* Saves m into dir, its parent made first (models/PE, for a task's model in
 * models/PE/TASK-sSEED, may not exist yet: another worker runs that PE's
 * first task). */
static posemb_status save_in(const posemb_model *m, const char *dir, posemb_error *err)
{
    char parent[POSEMB_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = '\0';
    if (slash && mkdir(parent, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", parent, strerror(errno));
    return posemb_model_save(m, dir, err);
}

/* Trains and evaluates one (PE, task, seed); saves the model when save_dir is given. In a group,
 * every rank trains; the leader alone evaluates and saves. */
static posemb_status one_run(const posemb_study_config *c, int pi, int task, int seed, const char *save_dir,
                             const posemb_comm *group, run_result *r, posemb_error *err)
{
    const posemb_syn_task *t = posemb_syn_find(c->tasks[task]);
    memset(r, 0, sizeof *r);
    if (!t) return posemb_fail(err, POSEMB_EINVAL, "study: unknown task '%s'", c->tasks[task]);
    double t0 = posemb_timer_now();
    int longest = c->n_train * c->mults[c->n_mults - 1], B = c->batch;
    run_buf b = {malloc((size_t)B * longest * sizeof(int32_t)),
                 malloc((size_t)B * sizeof(int32_t)),
                 malloc((size_t)B * sizeof(int32_t)),
                 malloc((size_t)B * sizeof(int32_t)),
                 malloc((size_t)B * longest * sizeof(int32_t)),
                 t->kind == POSEMB_SYN_LM ? malloc((size_t)B * longest * POSEMB_SYN_VOCAB * sizeof(float)) : NULL};
    posemb_model *m = NULL;
    uint64_t data_seed = task_data_seed(t->name, c->seeds[seed]);
    posemb_status st = b.ids && b.labels && b.starts && b.ends && b.targets && (b.logits || t->kind != POSEMB_SYN_LM)
                           ? POSEMB_OK
                           : posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    if (!st) st = make_model(c, c->pes[pi], t, c->seeds[seed], &m, err);
    if (!st) snprintf(r->spec, sizeof r->spec, "%s", posemb_pe_spec(posemb_model_pe(m)));
    if (!st) st = train_run(c, m, t, data_seed, group, &b, r, err);
    int leader = posemb_comm_leader(group);
    for (int i = 0; !st && leader && i < c->n_mults; i++) {
        eval_out o = {0};
        int L = c->n_train * c->mults[i];
        if (t->kind == POSEMB_SYN_LM) st = study_tally_init(o.tally = &r->tally[i], L + 1, err);
        if (!st) st = evaluate(m, t, data_seed, L, c->n_train, c->eval_examples, &b, B, &o, err);
        r->metric[i] = o.metric;
        r->exact[i] = o.exact;
        r->collapsed[i] = o.collapsed;
    }
    if (!st && leader && save_dir) st = save_in(m, save_dir, err);
    r->seconds = posemb_timer_now() - t0;
    posemb_model_free(m);
    free(b.ids);
    free(b.labels);
    free(b.starts);
    free(b.ends);
    free(b.targets);
    free(b.logits);
    return st;
}

/* ---- results.jsonl ---- */

static void run_result_free(run_result *r)
{
    for (size_t i = 0; i < sizeof r->tally / sizeof *r->tally; i++) study_tally_free(&r->tally[i]);
}

/* The lines of a run, one per evaluation length (STUDY.md section 5). */
static char *result_lines(const posemb_study_config *c, int pi, int task, int seed, const run_result *r)
{
    const posemb_syn_task *t = posemb_syn_find(c->tasks[task]);
    size_t cap = (size_t)r->n_curve * 48, len = 0;
    for (int i = 0; i < c->n_mults; i++) cap += 4096 + sizeof r->spec + study_tally_json_cap(&r->tally[i]);
    char *s = malloc(cap);
    if (!s) return NULL;
    for (int i = 0; i < c->n_mults; i++) {
        int L = c->n_train * c->mults[i];
        char whole[128] = ""; /* the first metric is the tables'; an LM task's whole answers follow it */
        double by_length = study_tally_length_mean(&r->tally[i]);
        if (t->kind == POSEMB_SYN_LM) snprintf(whole, sizeof whole, ", \"exact_match\": %.6f", r->exact[i]);
        if (t->kind == POSEMB_SYN_LM && !isnan(by_length))
            snprintf(whole + strlen(whole), sizeof whole - strlen(whole), ", \"length_mean_accuracy\": %.6f",
                     by_length);
        len +=
            (size_t)snprintf(s + len, cap - len,
                             "{\"pe\": \"%s\", \"spec\": \"%s\", \"task\": \"%s\", \"kind\": \"%s\", "
                             "\"seed\": %d, \"n_train\": %d, \"eval_len\": %d, \"metrics\": {\"%s\": %.6f%s}, "
                             "\"chance\": %.6f, \"collapsed\": %s, \"steps\": %d, \"seconds\": %.2f, \"blas\": \"%s\"",
                             c->pes[pi], r->spec, t->name, posemb_syn_kind_name(t->kind), c->seeds[seed], c->n_train, L,
                             posemb_syn_metric_name(t->kind), r->metric[i], whole, posemb_syn_chance(t, L, c->n_train),
                             r->collapsed[i] ? "true" : "false", c->steps, r->seconds, posemb_blas_core());
        if (r->tally[i].cap) len += study_tally_json(&r->tally[i], s + len, cap - len);
        if (i == 0 && r->n_curve) {
            len += (size_t)snprintf(s + len, cap - len, ", \"curve\": [");
            for (int k = 0; k < r->n_curve; k++)
                len += (size_t)snprintf(s + len, cap - len, "%s[%.0f, %.4f]", k ? ", " : "", r->curve[k][0],
                                        r->curve[k][1]);
            len += (size_t)snprintf(s + len, cap - len, "]");
        }
        len += (size_t)snprintf(s + len, cap - len, "}\n");
    }
    return s;
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
    int same = !strcmp(text ? text : "", c->model);
    posemb_status st = same ? POSEMB_OK
                            : posemb_fail(err, POSEMB_EINVAL,
                                          "%s: line %d was run with \"model\" %s, this config has %s: use another "
                                          "--out folder",
                                          path, n, text ? text : "{}", c->model[0] ? c->model : "{}");
    cJSON_free(text);
    return st;
}

/* EINVAL when line n of path was run with other RULER tasks, share or
 * trials than c's (a length study's line): its runs would count as done
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
    int same =
        tasks == c->ruler_tasks && (!tasks || (cJSON_IsNumber(share) && (float)share->valuedouble == c->ruler_train &&
                                               cJSON_IsNumber(trials) && trials->valueint == c->ruler_trials));
    return same ? POSEMB_OK
                : posemb_fail(err, POSEMB_EINVAL,
                              "%s: line %d was run with other \"ruler_tasks\", \"ruler_train\" or \"ruler_trials\" "
                              "than this config's: use another --out folder",
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
                *seed = cJSON_GetObjectItem(j, "seed"), *blas = cJSON_GetObjectItemCaseSensitive(j, "blas");
    posemb_status st = c->length ? same_model(c, j, d->path, n, err) : POSEMB_OK;
    if (!st && c->length) st = same_ruler(c, j, d->path, n, err);
    if (st) return st;
    if (d->kernels && cJSON_IsString(blas) && strcmp(blas->valuestring, posemb_blas_core()) && d->kernels->other++ == 0)
        snprintf(d->kernels->first, sizeof d->kernels->first, "%s", blas->valuestring);
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
 * kernels (may be NULL) counts the lines run under other BLAS kernels. */
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

/* ---- the runner ---- */

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

/* Run k of the synthetic study (study_run_index order), its lines handed to q. */
static posemb_status synthetic_run(const posemb_study_config *study, const char *out, int k,
                                   const posemb_study_queue *q, posemb_error *err)
{
    int s = k % study->n_seeds, t = k / study->n_seeds % study->n_tasks, p = k / study->n_seeds / study->n_tasks;
    posemb_study_config budgeted;
    const posemb_study_config *c = posemb_study_for_task(study, study->tasks[t], &budgeted);
    /* The first seed's model of each task, for the analysis: the first task's
     * in models/PE (the report's), the others' in models/PE/TASK-sSEED. */
    int keep = c->analyze && s == 0;
    char save[POSEMB_PATH_MAX], name[160];
    study_folder_of(c->pes[p], name, sizeof name);
    if (keep && study_model_dir(out, name, t ? c->tasks[t] : NULL, c->seeds[s], save, sizeof save))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    run_result r;
    posemb_status st = one_run(c, p, t, s, keep ? save : NULL, q->group, &r, err);
    if (st || !posemb_comm_leader(q->group)) { /* the leader reports the run */
        run_result_free(&r);
        if (!st) return POSEMB_OK;
        char msg[POSEMB_ERROR_MSG];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return posemb_fail(err, st, "study run %s / %s / seed %d: %s", c->pes[p], c->tasks[t], c->seeds[s], msg);
    }
    char *lines = result_lines(c, p, t, s, &r);
    run_result_free(&r);
    st = lines ? q->append(q->ctx, lines, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    free(lines);
    if (!st)
        fprintf(stderr, "posemb study: run %d/%d  %-12s %-9s seed %d  %.3f at %d tokens, %.3f at %d  (%.1f s)\n", k + 1,
                c->n_pes * c->n_tasks * c->n_seeds, c->pes[p], c->tasks[t], c->seeds[s], r.metric[0], c->n_train,
                r.metric[c->n_mults - 1], c->n_train * c->mults[c->n_mults - 1], r.seconds);
    return st;
}

posemb_status posemb_study_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                posemb_error *err)
{
    if (c->length) return study_length_work(c, out, q, err);
    if (c->data[0]) return study_data_work(c, out, q, err);
    int k;
    posemb_status st = study_next_unit(q, &k, err);
    while (!st && k >= 0) { /* a failed run stops the worker with its error */
        st = synthetic_run(c, out, k, q, err);
        if (!st) st = study_next_unit(q, &k, err);
    }
    return st;
}

posemb_status study_next_unit(const posemb_study_queue *q, int *k, posemb_error *err)
{
    *k = posemb_comm_leader(q->group) ? q->next(q->ctx) : -1;
    return posemb_comm_active(q->group) ? q->group->bcast(q->group->ctx, k, sizeof *k, err) : POSEMB_OK;
}

/* The queue of one local worker: every jobs-th pending unit from w, results appended under a lock. */
typedef struct local_queue {
    const int *pending;
    int n, at, jobs;
    char results[POSEMB_PATH_MAX];
} local_queue;

static int local_next(void *ctx)
{
    local_queue *l = ctx;
    int k = l->at < l->n ? l->pending[l->at] : -1;
    l->at += l->jobs;
    return k;
}

static posemb_status local_append(void *ctx, const char *lines, posemb_error *err)
{
    return study_append_results(((local_queue *)ctx)->results, lines, err);
}

static posemb_status local_worker(const posemb_study_config *c, const char *out, const int *pending, int n, int w,
                                  int jobs, posemb_error *err)
{
    local_queue l = {pending, n, w, jobs, ""};
    if (posemb_path_join(l.results, sizeof l.results, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "path too long");
    posemb_study_queue q = {&l, local_next, local_append, NULL};
    return posemb_study_work(c, out, &q, err);
}

/* Forks jobs workers (or runs in-process for one) and waits for them. */
static posemb_status run_workers(const posemb_study_config *c, const char *out, const int *pending, int n,
                                 posemb_error *err)
{
    int jobs = c->jobs > 1 ? c->jobs : 1;
    if (jobs == 1) {
        if (c->threads > 0) posemb_threads_set(c->threads);
        return local_worker(c, out, pending, n, 0, 1, err);
    }
    pid_t pids[64];
    int forked = 0, failed = 0;
    fflush(NULL);
    for (int w = 0; w < jobs && w < 64; w++) {
        pid_t pid = fork();
        if (pid == 0) { /* one thread by default: small models parallelise better by runs */
            posemb_threads_set(c->threads > 0 ? c->threads : 1);
            posemb_error e;
            posemb_status st = local_worker(c, out, pending, n, w, jobs, &e);
            if (st) fprintf(stderr, "posemb study: %s\n", e.msg);
            fflush(NULL);
            _exit(st ? 1 : 0);
        }
        if (pid > 0) pids[forked++] = pid;
    }
    for (int i = 0; i < forked; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {}
        failed += !WIFEXITED(status) || WEXITSTATUS(status);
    }
    return failed ? posemb_fail(err, POSEMB_EFORMAT,
                                "study: %d worker(s) failed (see above); finished runs are kept, "
                                "run the study again to continue",
                                failed)
                  : POSEMB_OK;
}

static posemb_status check_config(const posemb_study_config *c, posemb_error *err)
{
    if (c->n_pes < 1 || c->n_tasks < 1 || c->n_seeds < 1 || c->n_mults < 1)
        return posemb_fail(err, POSEMB_EINVAL, "study: no PEs, tasks, seeds or lengths");
    if (c->n_train < 16 || c->steps < 1 || c->batch < 1 || c->eval_examples < 1)
        return posemb_fail(err, POSEMB_EINVAL, "study: n_train >= 16, steps, batch and eval_examples >= 1 are needed");
    int rpr = c->ranks_per_run; /* each rank of a run's group takes an equal share of every batch */
    if (rpr < 1) return posemb_fail(err, POSEMB_EINVAL, "study: ranks_per_run must be at least 1");
    if (c->batch % rpr)
        return posemb_fail(err, POSEMB_EINVAL, "study: batch %d is not a multiple of ranks_per_run %d", c->batch, rpr);
    if (study_glue(c) && c->pretrain_batch % rpr)
        return posemb_fail(err, POSEMB_EINVAL, "study: pretrain_batch %d is not a multiple of ranks_per_run %d",
                           c->pretrain_batch, rpr);
    if (!study_glue(c) && c->epochs > 0) /* synthetic tasks draw fresh examples: there are no passes to count */
        return posemb_fail(err, POSEMB_EINVAL, "study: \"epochs\" applies to the real-data study (--data) only");
    for (int i = 0; i < c->n_budgets; i++)
        if (!study_glue(c) && c->budgets[i].epochs > 0)
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: \"task_budgets\" of %s: \"epochs\" applies to the real-data study (--data) only",
                               c->budgets[i].task);
    if (!c->length && c->model[0])
        return posemb_fail(err, POSEMB_EINVAL, "study: \"model\" applies to the length study (--length) only");
    if (!c->length && c->passkey_train > 0)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"passkey_train\" applies to the length study (--length) only");
    if (!c->length && c->ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_tasks\" apply to the length study (--length) only");
    if (c->ruler_train > 0 && !c->ruler_tasks)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"ruler_train\" %g names no \"ruler_tasks\" to train",
                           c->ruler_train);
    for (int t = 0; t < c->n_tasks; t++) { /* steps bounds the updates (epochs can only cut them) */
        posemb_study_config own;
        const posemb_study_config *b = posemb_study_for_task(c, c->tasks[t], &own);
        if (b->curve_every > 0 && b->steps / b->curve_every > POSEMB_STUDY_MAX_CURVE)
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: task %s: %d steps with curve_every %d make %d curve points; at most %d are "
                               "kept (raise curve_every)",
                               c->tasks[t], b->steps, b->curve_every, b->steps / b->curve_every,
                               POSEMB_STUDY_MAX_CURVE);
    }
    posemb_status st = c->length    ? study_length_check(c, err)
                       : c->data[0] ? posemb_study_data_check(c, err)
                                    : POSEMB_OK;
    if (st) return st;
    for (int t = 0; !c->data[0] && t < c->n_tasks; t++)
        if (!posemb_syn_find(c->tasks[t]))
            return posemb_fail(err, POSEMB_EINVAL, "study: unknown task '%s'", c->tasks[t]);
    for (int p = 0; p < c->n_pes; p++) /* a bad spec fails now, not in a worker */
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

posemb_status posemb_study_append(const char *out, const char *lines, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    return study_append_results(path, lines, err);
}

int posemb_study_n_units(const posemb_study_config *c)
{
    return study_glue(c) ? c->n_pes : c->n_pes * c->n_tasks * c->n_seeds;
}

posemb_status posemb_study_pending(const posemb_study_config *c, const char *out, int *pending, int *n,
                                   posemb_error *err)
{
    int *done = calloc((size_t)c->n_pes * c->n_tasks * c->n_seeds, sizeof *done);
    study_kernels kernels = {0};
    posemb_status st =
        done ? study_read_done(c, out, done, &kernels, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st && kernels.other) /* their runs are other draws (the rounding differs), not continued ones */
        fprintf(stderr,
                "posemb study: %s/results.jsonl: %d line(s) ran under OpenBLAS's %s kernels, this process runs %s: "
                "the runs to go are other draws of the experiment, not bit-for-bit continuations (posemb --version)\n",
                out, kernels.other, kernels.first, posemb_blas_core());
    if (st) {
        free(done);
        return st;
    }
    *n = 0;
    if (c->length) { /* runs, every run of the first seed first: a partial study has every row */
        for (int s = 0; s < c->n_seeds; s++)
            for (int p = 0; p < c->n_pes; p++)
                for (int t = 0; t < c->n_tasks; t++)
                    if (done[study_run_index(c, p, t, s)] < posemb_study_lines_per_run(c, t))
                        pending[(*n)++] = (int)study_run_index(c, p, t, s);
        free(done);
        return POSEMB_OK;
    }
    for (int p = 0; p < c->n_pes; p++) {
        int pe_pending = 0;
        for (int t = 0; t < c->n_tasks; t++)
            for (int s = 0; s < c->n_seeds; s++) {
                int left = done[study_run_index(c, p, t, s)] < posemb_study_lines_per_run(c, t);
                pe_pending |= left;
                if (left && !c->data[0]) pending[(*n)++] = (int)study_run_index(c, p, t, s);
            }
        if (pe_pending && c->data[0]) pending[(*n)++] = p; /* a real-data unit: a PE, pretraining first */
    }
    free(done);
    return POSEMB_OK;
}

void study_say_pending(const posemb_study_config *c, const char *out, int n, int workers)
{
    int total = c->n_pes * c->n_tasks * c->n_seeds;
    if (study_glue(c))
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
    if (c->length) return study_length_prepare(c, out, err);
    return c->data[0] ? posemb_study_data_prepare(c, out, err) : POSEMB_OK; /* tokenize the corpora once */
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
    if (!st) study_say_pending(c, out, n, c->jobs);
    if (!st && n) st = run_workers(c, out, pending, n, err);
    free(pending);
    return st ? st : posemb_study_finish(c, out, err);
}
