/* The synthetic study: one small encoder (or, for causal-LM tasks, a
 * decoder) per (PE, task, seed), trained on synthetic batches, evaluated at
 * several lengths, its lines handed to the queue (STUDY.md section 5). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/timer.h"
#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/pe.h"
#include "posemb/trainer.h"
#include "study/synthetic.h"
#include "study_impl.h"
#include "study_pool.h"
#include "study_store.h"
#include "study_synthetic.h"

#define MAX_SPAN 8 /* longest answer the span decoder considers, as HF's max_answer_length */

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
    posemb_status st = posemb_model_loss(m, &tg, 0.0f, &l, err); /* the counts only: no gradient */
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
            double chance[3];
            int cls =
                hit || !tally ? -1 : posemb_syn_error_class(t, batch->ids + (size_t)r * T, T, scored, best, chance);
            if (cls >= 0) study_tally_error(tally, cls, chance);
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

/* evaluate's passes over the examples (m in eval mode). */
static posemb_status eval_passes(posemb_model *m, const posemb_syn_task *t, uint64_t data_seed, int T, int n_train,
                                 int n, run_buf *b, int B, eval_out *o, posemb_error *err)
{
    long right = 0, total = 0, whole = 0;
    same_pred sp = {0};
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

/* Evaluates m on n examples of length T into o. Inference passes: every
 * layer in one layer's buffers, which at 256 tokens halves the memory the
 * attention probabilities sweep through. Turned off again before it
 * returns, so that the training step that follows keeps its activations. */
static posemb_status evaluate(posemb_model *m, const posemb_syn_task *t, uint64_t data_seed, int T, int n_train, int n,
                              run_buf *b, int B, eval_out *o, posemb_error *err)
{
    posemb_model_set_train(m, 0, 0, 0); /* eval mode: no dropout */
    posemb_model_set_inference(m, 1);
    posemb_status st = eval_passes(m, t, data_seed, T, n_train, n, b, B, o, err);
    posemb_model_set_inference(m, 0);
    return st;
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
    int leader;
    run_result *r;
} syn_source;

static posemb_status next_syn_batch(void *ctx, long step, int micro, posemb_batch *batch, posemb_targets *tg,
                                    posemb_error *err)
{
    (void)err;
    const syn_source *s = ctx;
    const posemb_study_config *c = s->c;
    run_buf *b = s->b;
    int lm = s->t->kind == POSEMB_SYN_LM, B = c->batch / c->ranks_per_run; /* micro-batch m: rows m B .. */
    posemb_syn_batch(s->t, s->data_seed, step * c->batch + (long)micro * B, B, c->n_train, c->n_train, b->ids,
                     b->labels, b->starts, b->ends);
    if (lm) posemb_syn_lm_targets(s->t, b->ids, B, c->n_train, b->targets);
    *batch = (posemb_batch){.B = B, .T = c->n_train, .ids = b->ids};
    *tg = (posemb_targets){.tokens = lm ? b->targets : NULL, .labels = b->labels, .starts = b->starts, .ends = b->ends};
    return POSEMB_OK;
}

/* The training curve is the group leader's: the others go on to the next step's sum. */
/* The training curve: the metric at the training length every curve_every
 * steps (the leader's). */
static posemb_status curve_point(void *ctx, posemb_model *m, long step, posemb_error *err)
{
    syn_source *s = ctx;
    const posemb_study_config *c = s->c;
    if (!s->leader || step % c->curve_every || s->r->n_curve >= POSEMB_STUDY_MAX_CURVE) return POSEMB_OK;
    eval_out e = {0};
    posemb_status st = evaluate(m, s->t, s->data_seed, c->n_train, c->n_train, 128, s->b, c->batch, &e, err);
    s->r->curve[s->r->n_curve][0] = (double)step;
    s->r->curve[s->r->n_curve++][1] = e.metric;
    return st;
}

static posemb_status train_run(const posemb_study_config *c, posemb_model *m, const posemb_syn_task *t,
                               uint64_t data_seed, const posemb_comm *group, run_buf *b, run_result *r,
                               posemb_error *err)
{
    posemb_adamw o;
    posemb_adamw_config oc = posemb_adamw_defaults(c->lr, c->steps / 10, c->steps);
    syn_source src = {.c = c, .t = t, .data_seed = data_seed, .b = b, .leader = posemb_comm_leader(group), .r = r};
    posemb_train_loop l = {.stop = c->steps,
                           .steps = c->steps,
                           .accum = c->ranks_per_run,
                           .oc = &oc,
                           .comm = group,
                           .next = next_syn_batch,
                           .eval_every = c->curve_every,
                           .ctx = &src,
                           .evaluate = c->curve_every ? curve_point : NULL};
    posemb_status st = posemb_adamw_init(&o, m, err);
    if (!st) st = posemb_train_run(m, &o, &l, NULL, err);
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
        len += (size_t)snprintf(
            s + len, cap - len,
            "{\"pe\": \"%s\", \"spec\": \"%s\", \"task\": \"%s\", \"kind\": \"%s\", "
            "\"seed\": %d, \"n_train\": %d, \"eval_len\": %d, \"metrics\": {\"%s\": %.6f%s}, "
            "\"chance\": %.6f, \"collapsed\": %s, \"steps\": %d, \"seconds\": %.2f, \"blas\": \"%s\", "
            "\"products\": \"%s\"",
            c->pes[pi], r->spec, t->name, posemb_syn_kind_name(t->kind), c->seeds[seed], c->n_train, L,
            posemb_syn_metric_name(t->kind), r->metric[i], whole, posemb_syn_chance(t, L, c->n_train),
            r->collapsed[i] ? "true" : "false", c->steps, r->seconds, posemb_blas_core(), posemb_small_products());
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

posemb_status study_synthetic_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                   posemb_error *err)
{
    int k;
    posemb_status st = study_next_unit(q, &k, err);
    while (!st && k >= 0) { /* a failed run stops the worker with its error */
        st = synthetic_run(c, out, k, q, err);
        if (!st) st = study_next_unit(q, &k, err);
    }
    return st;
}
