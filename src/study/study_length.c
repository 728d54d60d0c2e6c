/* The length study, "train short, test long" on real text: for each decoder
 * (GPT-2, Llama), PE and seed, a causal LM trained at n_train tokens of the
 * data folder's text (WikiText-2's validation set, Jane Austen, Tiny
 * Shakespeare), then scored on WikiText-2's test set at n_train x lengths
 * (RoPE also under each scaling of rope_scalings, applied without
 * retraining), and on passkey retrieval over a grid of length x depth
 * (study_passkey.c). A run resumes from its checkpoints; its lines, one per
 * length, go to results.jsonl when all its evaluations are done. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "posemb/corpus.h"
#include "core/fileio.h"
#include "posemb/model.h"
#include "core/timer.h"
#include "posemb/trainer.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_pool.h"
#include "study_store.h"
#include "study_length_impl.h"
#include "text/tokenizer_internal.h"
#include "train/trainer_internal.h"
#include "model/model_internal.h"
#include "study_ruler.h"

static const char *const LENGTH_PES[] = {"none",
                                         "ape",
                                         "sin",
                                         "rope",
                                         "alibi",
                                         "t5",
                                         "kerple",
                                         "sandwich",
                                         "fire",
                                         "xpos",
                                         "cope",
                                         "fox",
                                         "rope+random:max=2048"};
static const char *const LENGTH_TASKS[] = {"gpt2", "llama"};
static const char *const LENGTH_SCALINGS[] = {"linear", "ntk", "dynamic", "yarn"};
/* Training text and the held-out text, paths under the data folder. */
static const char *const TRAIN_TEXT[] = {"wikitext-2/wiki.valid.tokens", "janeausten", "tinyshakespeare"};
static const char *const HELD_OUT[] = {"wikitext-2/wiki.test.tokens"};
#define N_OF(a) (int)(sizeof(a) / sizeof *(a))

posemb_study_config posemb_study_length_default(const char *data_dir)
{
    posemb_study_config c = posemb_study_data_default(data_dir); /* its model sizes and training length */
    c.length = 1;
    study_set_names(c.pes[0], sizeof c.pes[0], &c.n_pes, LENGTH_PES, N_OF(LENGTH_PES));
    study_set_names(c.tasks[0], sizeof c.tasks[0], &c.n_tasks, LENGTH_TASKS, N_OF(LENGTH_TASKS));
    for (int i = 0; i < N_OF(LENGTH_SCALINGS); i++)
        snprintf(c.len.scalings[i], sizeof c.len.scalings[i], "%s", LENGTH_SCALINGS[i]);
    c.len.n_scalings = N_OF(LENGTH_SCALINGS);
    const int mults[] = {1, 2, 4, 8, 16};
    c.n_mults = N_OF(mults);
    memcpy(c.mults, mults, sizeof mults);
    c.steps = 2000;
    c.epochs = 0;
    c.n_budgets = 0; /* the span task's budget is not one of these tasks' */
    c.batch = 32;
    c.lr = 1e-3f;
    c.dropout = 0;
    c.curve_every = 100;
    c.len.eval_tokens = 65536;
    c.len.passkey_trials = 10;
    c.len.passkey_train = 0.25f;
    c.len.ruler_tasks = 0; /* opt in: results/length/ruler/study-ruler.json */
    c.len.ruler_train = 0;
    c.len.ruler_trials = 10;
    c.len.ruler_threshold = 0.8f;
    c.len.ruler_keys = c.len.ruler_key_words = c.len.ruler_twice = c.len.passkey_once = 0;
    static const char *const extend[] = {"none", "linear", "ntk", "dynamic", "yarn", "llama3"};
    for (int i = 0; i < N_OF(extend); i++) /* used once extend_factors asks (docs/study.md) */
        snprintf(c.len.extend_scalings[i], sizeof c.len.extend_scalings[i], "%s", extend[i]);
    c.len.n_extend_scalings = N_OF(extend);
    c.len.extend_steps = 400;
    c.len.extend_every = 100;
    c.analyze = 0;
    snprintf(c.len.tokenizer, sizeof c.len.tokenizer, "bytes");
    return c;
}

static posemb_status length_config(const posemb_study_config *c, int p, int t, int vocab, posemb_config *cfg,
                                   posemb_error *err);

/* EINVAL naming the first RULER task whose prompts do not fit in n_train:
 * ruler_train would leave those sequences text, silently. */
static posemb_status ruler_train_fits(const posemb_study_config *c, const posemb_tokenizer *tok, posemb_error *err)
{
    int32_t *ids = malloc((size_t)c->n_train * sizeof *ids), *targets = malloc((size_t)c->n_train * sizeof *targets);
    posemb_status st = ids && targets ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (int t = 0; !st && t < STUDY_RULER_TASKS; t++)
        for (uint64_t draw = 1; !st && (c->len.ruler_tasks >> t & 1u) && draw < 64; draw += 2) {
            int fits = 0;
            st = study_ruler_prompt(tok, t, study_ruler_keys_of(c), draw, c->n_train, 0.5, ids, targets, &fits, err);
            if (!st && !fits)
                st = posemb_fail(err, POSEMB_EINVAL,
                                 "study: ruler_train: %s's prompts do not fit in n_train %d tokens (drop the task or "
                                 "raise n_train)",
                                 study_ruler_task_name(t), c->n_train);
        }
    free(ids);
    free(targets);
    return st;
}

static int is_file_or_dir(const char *path)
{
    struct stat sb;
    return !stat(path, &sb) && (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode));
}

posemb_status study_length_check(const posemb_study_config *c, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    for (int t = 0; t < c->n_tasks; t++)
        if (strcmp(c->tasks[t], "gpt2") && strcmp(c->tasks[t], "llama") && strcmp(c->tasks[t], "llama4") &&
            strcmp(c->tasks[t], "smollm3"))
            return posemb_fail(err, POSEMB_EINVAL,
                               "study: the length study's tasks are decoders, gpt2, llama, llama4 or smollm3, not '%s'",
                               c->tasks[t]);
    for (int i = 0; i < N_OF(TRAIN_TEXT) + N_OF(HELD_OUT); i++) {
        const char *name = i < N_OF(TRAIN_TEXT) ? TRAIN_TEXT[i] : HELD_OUT[i - N_OF(TRAIN_TEXT)];
        snprintf(path, sizeof path, "%s/%s", c->data, name);
        if (!is_file_or_dir(path)) return posemb_fail(err, POSEMB_EIO, "%s: missing (the length study's text)", path);
    }
    if (!strcmp(c->len.tokenizer, "gpt2")) {
        snprintf(path, sizeof path, "%s/gpt2/vocab.bpe", c->data);
        if (!is_file_or_dir(path)) return posemb_fail(err, POSEMB_EIO, "%s: missing (GPT-2's BPE)", path);
    }
    long longest = (long)c->n_train * c->mults[c->n_mults - 1];
    if (c->len.eval_tokens < longest)
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: eval_tokens %d is less than one window of the longest length %ld",
                           c->len.eval_tokens, longest);
    if (c->len.n_extend_factors && study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, "rope") < 0)
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: \"extend_factors\": no \"rope\" among the PEs, nothing to fine-tune");
    if (c->len.n_extend_factors &&
        (c->len.extend_steps + c->len.extend_every - 1) / c->len.extend_every + 1 > STUDY_EXTEND_POINTS)
        return posemb_fail(err, POSEMB_EINVAL, "study: \"extend_steps\" / \"extend_every\" is over %d points",
                           STUDY_EXTEND_POINTS - 1);
    posemb_config cfg;
    for (int t = 0; t < c->n_tasks; t++) /* a "model" key a decoder does not take fails now, not after a run */
        for (int p = 0; p < c->n_pes; p++) {
            posemb_status st = length_config(c, p, t, 256, &cfg, err);
            if (st) return st;
        }
    return POSEMB_OK;
}

/* The tokenizer: out/tokenizer.json for bytes (written by prepare), or data/gpt2's BPE; desc keys the caches. */
posemb_status study_length_tokenizer(const posemb_study_config *c, const char *out, posemb_tokenizer **tok, char *desc,
                                     size_t cap, posemb_error *err)
{
    if (!strcmp(c->len.tokenizer, "gpt2")) {
        char merges[POSEMB_PATH_MAX];
        snprintf(desc, cap, "%s/gpt2/encoder.json", c->data);
        snprintf(merges, sizeof merges, "%s/gpt2/vocab.bpe", c->data);
        return posemb_tokenizer_load_bpe(desc, merges, tok, err);
    }
    snprintf(desc, cap, "%s/tokenizer.json", out);
    return posemb_tokenizer_load_json(desc, tok, err);
}

posemb_status study_length_held_out(const posemb_study_config *c, const char *out, const posemb_tokenizer *tok,
                                    const char *desc, posemb_corpus *held_out, posemb_error *err)
{
    return study_load_corpora(c, out, tok, desc, HELD_OUT, N_OF(HELD_OUT), held_out, err);
}

/* The training text's tokens (train) and the held-out text's (held_out), from out/cache. */
static posemb_status load_texts(const posemb_study_config *c, const char *out, const posemb_tokenizer *tok,
                                const char *desc, posemb_corpus *train, posemb_corpus *held_out, posemb_error *err)
{
    posemb_status st = study_load_corpora(c, out, tok, desc, TRAIN_TEXT, N_OF(TRAIN_TEXT), train, err);
    if (!st) st = study_length_held_out(c, out, tok, desc, held_out, err);
    if (st) posemb_corpus_free(train);
    return st;
}

/* EINVAL naming the length a passkey prompt needs when it does not fit in
 * n_train: passkey_train would leave every sequence text, silently. */
static posemb_status passkey_train_fits(const posemb_study_config *c, const posemb_tokenizer *tok, posemb_error *err)
{
    int need = 0;
    posemb_status st = posemb_passkey_min_length(tok, c->len.passkey_once, &need, err);
    if (!st && need > c->n_train)
        st = posemb_fail(err, POSEMB_EINVAL,
                         "study: passkey_train: a passkey prompt needs %d tokens, more than n_train %d (set "
                         "\"passkey_train\": 0 to train on text alone)",
                         need, c->n_train);
    return st;
}

posemb_status study_length_prepare(const posemb_study_config *c, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], desc[POSEMB_PATH_MAX];
    posemb_status st = POSEMB_OK;
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    if (!strcmp(c->len.tokenizer, "bytes")) st = posemb_tokenizer_write_bytes(path, err);
    posemb_tokenizer *tok = NULL;
    posemb_corpus train = {0}, held_out = {0};
    if (!st) st = study_length_tokenizer(c, out, &tok, desc, sizeof desc, err);
    if (!st && c->len.passkey_train > 0) st = passkey_train_fits(c, tok, err);
    if (!st && c->len.ruler_train > 0) st = ruler_train_fits(c, tok, err);
    if (!st) st = load_texts(c, out, tok, desc, &train, &held_out, err);
    if (!st)
        fprintf(stderr, "posemb study: training text %ld tokens from %d files, held-out text %ld tokens (%s)\n",
                train.n, train.n_files, held_out.n, c->len.tokenizer);
    if (!st && held_out.n < c->len.eval_tokens)
        st = posemb_fail(err, POSEMB_EINVAL, "study: eval_tokens %d is more than the held-out text's %ld tokens",
                         c->len.eval_tokens, held_out.n);
    posemb_corpus_free(&train);
    posemb_corpus_free(&held_out);
    posemb_tokenizer_free(tok);
    return st;
}

/* config.json keys over cfg, the PE kept: a run's PE is the study's spec,
 * whatever the keys (Llama 4's or SmolLM3's layer roles) would make of it;
 * where they cannot say it, config.json holds posemb_pe. */
static posemb_status override_keeping_pe(posemb_config *cfg, const char *keys, const char *what, posemb_error *err)
{
    char pe[sizeof cfg->pe];
    snprintf(pe, sizeof pe, "%s", cfg->pe);
    posemb_status st = posemb_config_override(cfg, keys, what, err);
    if (!st) snprintf(cfg->pe, sizeof cfg->pe, "%s", pe);
    return st;
}

/* Task llama4: the Llama decoder made Llama 4's dense text decoder
 * (model_type llama4_text, as Llama4TextConfig builds it): its layer roles
 * from no_rope_layers' default, every fourth layer NoPE, with q and k
 * RMS-normalised on the others; rms_norm_eps 1e-5 (Llama4TextConfig's; the
 * Llama config carries Llama's 1e-6, which would stay); the same sizes,
 * head_dim and SwiGLU width as the llama task. The PE stays the study's
 * spec, not the one Llama 4's keys make, so an iRoPE run writes its layers
 * out (rope:pairing=interleaved,layers=0-2+temperature:...,layers=3) and
 * another spec acts on every layer it names whatever their roles; chunked
 * attention comes from "model" (attention_chunk_size). */
static posemb_status as_llama4(posemb_config *cfg, posemb_error *err)
{
    char keys[256];
    snprintf(keys, sizeof keys,
             "{\"architectures\": [\"Llama4ForCausalLM\"], \"model_type\": \"llama4_text\", \"moe_layers\": [], "
             "\"intermediate_size_mlp\": %d, \"rms_norm_eps\": 1e-5}",
             cfg->intermediate);
    return override_keeping_pe(cfg, keys, "study: the llama4 task", err);
}

/* Task smollm3: the Llama decoder written as SmolLM3 (model_type smollm3),
 * whose config names its NoPE layers (no_rope_layers) and its windows
 * (use_sliding_window, sliding_window, layer_types), so that Hugging Face
 * reads an interleaving of RoPE and NoPE layers, with or without windows,
 * as trained: SmolLM3's own (every fourth layer NoPE) and Command A's
 * (windows on the RoPE layers, the NoPE layers global) through "model".
 * The head stays untied, as the llama task's (SmolLM3Config ties it), and
 * the PE stays the study's spec; where it is not what no_rope_layers says,
 * config.json holds posemb_pe. */
static posemb_status as_smollm3(posemb_config *cfg, posemb_error *err)
{
    return override_keeping_pe(cfg,
                               "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"model_type\": \"smollm3\", "
                               "\"tie_word_embeddings\": false}",
                               "study: the smollm3 task", err);
}

/* The decoder of task t with PE p: Llama's SwiGLU gets 2/3 of intermediate
 * (three matrices instead of two: the same parameters as GPT-2's MLP). */
static posemb_status length_config(const posemb_study_config *c, int p, int t, int vocab, posemb_config *cfg,
                                   posemb_error *err)
{
    posemb_arch arch = strcmp(c->tasks[t], "gpt2") ? POSEMB_LLAMA : POSEMB_GPT2; /* llama, llama4, smollm3 */
    posemb_config_defaults(cfg, arch);
    cfg->vocab_size = vocab;
    cfg->hidden = c->hidden;
    cfg->layers = c->layers;
    cfg->heads = c->heads;
    cfg->intermediate = arch == POSEMB_LLAMA ? (2 * c->intermediate / 3 + 7) / 8 * 8 : c->intermediate;
    if (arch == POSEMB_LLAMA) cfg->kv_heads = c->heads;
    cfg->hidden_dropout = cfg->attn_dropout = c->dropout;
    cfg->max_position = c->n_train; /* learned tables hold the trained positions only */
    posemb_pe_dims dims = {.dim = c->hidden,
                           .n_heads = c->heads,
                           .n_layers = c->layers,
                           .max_len = c->n_train,
                           .causal = 1,
                           .max_threads = 1};
    posemb_status st = POSEMB_OK;
    if (c->pe_defined) snprintf(cfg->pe, sizeof cfg->pe, "%s", c->pes[p]);
    else st = study_amplitude_rule(c->pes[p], &dims, c->n_train, cfg->initializer_range, cfg->pe, sizeof cfg->pe, err);
    if (!st) st = posemb_config_set_head(cfg, POSEMB_HEAD_CLM, 0, err);
    if (!st && !strcmp(c->tasks[t], "llama4")) st = as_llama4(cfg, err);
    if (!st && !strcmp(c->tasks[t], "smollm3")) st = as_smollm3(cfg, err);
    if (!st && c->len.model[0]) st = override_keeping_pe(cfg, c->len.model, "study: \"model\"", err);
    return st;
}

/* Trains the run into dir (resumed from its newest checkpoint), data parallel over group. */
static posemb_status length_train(const posemb_study_config *c, const posemb_config *cfg, int seed,
                                  const posemb_corpus *train, const posemb_tokenizer *tok, const char *dir,
                                  const posemb_comm *group, length_result *r, posemb_error *err)
{
    study_length_mix mix = study_length_mix_of(c, tok, seed);
    posemb_model *m = NULL;
    posemb_lm_data d = {0};
    posemb_train_result res = {0};
    posemb_status st = posemb_model_create(&m, cfg, err);
    if (!st) posemb_model_init(m, 1000003u * (uint64_t)seed + 17);
    if (!st)
        st = posemb_lm_data_init(
            &d, train->tokens, train->n,
            &(posemb_lm_data_opts){
                .T = c->n_train, .vocab = cfg->vocab_size, .valid_frac = 0.01, .seed = (uint64_t)seed},
            err);
    if (!st && (c->len.passkey_train > 0 || c->len.ruler_train > 0)) {
        d.mix = study_length_mix_apply;
        d.mix_ctx = &mix;
    }
    posemb_train_args a = posemb_train_defaults(dir, c->steps);
    a.batch = c->batch / c->ranks_per_run;
    a.accum = c->ranks_per_run;
    a.comm = group;
    a.lr = c->lr;
    a.seed = (uint64_t)seed;
    a.keep = 1;
    a.eval_batches = 4;
    a.eval_every = c->curve_every;
    a.log_every = c->steps >= 10 ? c->steps / 10 : 1;
    if (c->curve_every) a.save_every = c->curve_every; /* a kill loses one curve step, not a fifth of the run */
    if (c->len.sink_every) {                           /* study_length_sinks reads every one */
        a.save_every = c->len.sink_every;
        a.keep = c->steps / c->len.sink_every + 1;
    }
    if (!st) st = posemb_train(m, &d, &a, 1, &res, err);
    for (long i = c->curve_every; !st && c->curve_every && i <= res.n_history && r->n_curve < POSEMB_STUDY_MAX_CURVE;
         i += c->curve_every) {
        r->curve[r->n_curve][0] = (double)i;
        r->curve[r->n_curve++][1] = res.history[i - 1].loss;
    }
    r->steps = res.step;
    r->resumed_from = res.resumed_from;
    posemb_train_result_free(&res);
    posemb_lm_data_free(&d);
    posemb_model_free(m);
    return st;
}

/* The RULER tasks at length i (L tokens) through the checkpoint in dir. */
static posemb_status ruler_eval(const posemb_study_config *c, const posemb_config *cfg, const posemb_tokenizer *tok,
                                const char *dir, int L, int seed, length_result *r, int i, posemb_error *err)
{
    posemb_model *m = NULL;
    int context = 0;
    posemb_status st = posemb_lm_load_at(dir, cfg, L, &m, &context, err);
    if (!st) {
        posemb_model_set_train(m, 0, 0, 0);
        posemb_model_set_inference(m, 1);
        r->ruler_context[i] = context;
    }
    for (int t = 0; !st && t < STUDY_RULER_TASKS; t++)
        if (c->len.ruler_tasks >> t & 1u)
            st = study_ruler_eval(m, context, tok, t, study_ruler_keys_of(c), L, seed, c->len.ruler_trials,
                                  r->ruler[i][t], r->ruler_part[i][t], err);
    posemb_model_free(m);
    return st;
}

/* Perplexity at every length, the scalings of the rope row, passkey retrieval, the RULER tasks. */
static posemb_status length_eval(const posemb_study_config *c, int p, const posemb_config *cfg,
                                 const posemb_corpus *held_out, const posemb_tokenizer *tok, const char *dir, int seed,
                                 length_result *r, posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    int scaled = !strcmp(c->pes[p], "rope");
    for (int i = 0; !st && i < c->n_mults; i++) {
        int L = c->n_train * c->mults[i];
        st = posemb_lm_eval_length(dir, cfg, held_out->tokens, c->len.eval_tokens, L, 0, &r->ppl[i], err);
        for (int s = 0; !st && s < c->len.n_scalings; s++) {
            r->scaled[s][i] = NAN;
            if (!scaled || (c->mults[i] == 1 && strcmp(c->len.scalings[s], "string"))) continue; /* STRING acts at 1x */
            posemb_config sc = *cfg;
            posemb_lm_length l;
            study_rope_spec(c->len.scalings[s], c->n_train, c->mults[i], sc.pe, sizeof sc.pe);
            st = posemb_lm_eval_length(dir, &sc, held_out->tokens, c->len.eval_tokens, L, 0, &l, err);
            if (!st) r->scaled[s][i] = l.nll / (double)l.count;
        }
        if (!st && c->len.passkey_trials)
            st = posemb_passkey(dir, cfg, tok, c->len.passkey_once, L, seed, c->len.passkey_trials, r->passkey[i],
                                r->digits[i], &r->passkey_context[i], err);
        if (!st && c->len.ruler_tasks && c->len.ruler_trials) st = ruler_eval(c, cfg, tok, dir, L, seed, r, i, err);
    }
    if (!st && c->len.sink_every) st = study_length_sinks(c, cfg, held_out, dir, r->sink, &r->n_sink, err);
    return st;
}

static double ppl_of(const posemb_lm_length *l) { return l->count ? exp(l->nll / (double)l->count) : NAN; }

/* v in fmt, or null (JSON has no NaN): a passkey prompt longer than the length, a run without the number. */
static const char *jnum(char buf[32], const char *fmt, double v)
{
    if (!isfinite(v)) return "null";
    snprintf(buf, 32, fmt, v);
    return buf;
}

/* Appends printf output to the line being built. */
typedef struct line_buf {
    char *s;
    size_t len, cap;
} line_buf;

static void add(line_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(line_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0) b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n : b->cap - 1;
}

_Static_assert(STUDY_RULER_DEPTHS == PASSKEY_DEPTHS, "mean_depths averages both");

static double mean_depths(const double *v)
{
    double mean = 0;
    for (int k = 0; k < PASSKEY_DEPTHS; k++) mean += v[k] / PASSKEY_DEPTHS;
    return mean;
}

/* The passkey fields of length i: means over depths, each depth, the tokens read. */
static void passkey_fields(line_buf *b, const length_result *r, int i)
{
    char x[2][32];
    add(b, ", \"passkey\": %s, \"passkey_digits\": %s}", jnum(x[0], "%.4f", mean_depths(r->passkey[i])),
        jnum(x[1], "%.4f", mean_depths(r->digits[i])));
    for (int k = 0; k < PASSKEY_DEPTHS; k++)
        add(b, "%s%s", k ? ", " : ", \"passkey_depths\": [", jnum(x[0], "%.4f", r->passkey[i][k]));
    for (int k = 0; k < PASSKEY_DEPTHS; k++)
        add(b, "%s%s", k ? ", " : "], \"passkey_digit_depths\": [", jnum(x[0], "%.4f", r->digits[i][k]));
    add(b, "], \"passkey_context\": %d", r->passkey_context[i]);
}

/* The RULER fields of length i: the tasks, share and trials (whenever
 * tasks are set: they change training), then, when they were scored, each
 * task's means over depths (answered whole, answer tokens right), its
 * accuracy at each depth and the tokens the model read. */
static void ruler_fields(line_buf *b, const posemb_study_config *c, const length_result *r, int i)
{
    char x[32];
    for (int t = 0, n = 0; t < STUDY_RULER_TASKS; t++)
        if (c->len.ruler_tasks >> t & 1u)
            add(b, "%s\"%s\"", n++ ? ", " : ", \"ruler_tasks\": [", study_ruler_task_name(t));
    add(b, "], \"ruler_train\": %.9g, \"ruler_trials\": %d", c->len.ruler_train, c->len.ruler_trials);
    if (c->len.ruler_keys) add(b, ", \"ruler_keys\": %d", c->len.ruler_keys); /* absent: 0, as before the key */
    if (c->len.ruler_key_words) add(b, ", \"ruler_key_form\": \"words\"");    /* absent: "ruler" */
    if (c->len.ruler_twice) add(b, ", \"ruler_needle\": \"twice\"");          /* absent: "once", RULER's */
    if (!c->len.ruler_trials) return;
    const char *field[3] = {"ruler", "ruler_part", "ruler_depths"};
    for (int f = 0; f < 3; f++) {
        add(b, ", \"%s\": {", field[f]);
        for (int t = 0, n = 0; t < STUDY_RULER_TASKS; t++) {
            if (!(c->len.ruler_tasks >> t & 1u)) continue;
            add(b, "%s\"%s\": ", n++ ? ", " : "", study_ruler_task_name(t));
            if (f < 2) add(b, "%s", jnum(x, "%.4f", mean_depths(f ? r->ruler_part[i][t] : r->ruler[i][t])));
            for (int d = 0; f == 2 && d < STUDY_RULER_DEPTHS; d++)
                add(b, "%s%s%s", d ? ", " : "[", jnum(x, "%.4f", r->ruler[i][t][d]),
                    d + 1 == STUDY_RULER_DEPTHS ? "]" : "");
        }
        add(b, "}");
    }
    add(b, ", \"ruler_context\": %d", r->ruler_context[i]);
}

/* The rope row's perplexity under each scaling at length i (none at the training length). */
static void scaled_fields(line_buf *b, const posemb_study_config *c, const length_result *r, int i)
{
    char x[32];
    for (int k = 0, j = 0; k < c->len.n_scalings; k++)
        if (!isnan(r->scaled[k][i]))
            add(b, "%s\"%s\": %s", j++ ? ", " : ", \"scaled\": {", c->len.scalings[k],
                jnum(x, "%.6f", exp(r->scaled[k][i])));
    for (int k = 0; k < c->len.n_scalings; k++)
        if (!isnan(r->scaled[k][i])) {
            add(b, "}");
            break;
        }
}

/* results.jsonl lines of run (p, t, s), one per length. */
static char *length_lines(const posemb_study_config *c, int p, int t, int s, int vocab, const length_result *r)
{
    size_t cap = 8192 * (size_t)c->n_mults + (size_t)r->n_curve * 48 + (size_t)r->n_sink * 96;
    line_buf b = {malloc(cap), 0, cap};
    char x[2][32];
    for (int i = 0; b.s && i < c->n_mults; i++) {
        const posemb_lm_length *l = &r->ppl[i];
        double loss = l->count ? l->nll / (double)l->count : NAN;
        add(&b,
            "{\"pe\": \"%s\", \"spec\": \"%s\", \"task\": \"%s\", \"kind\": \"lm\", \"seed\": %d, \"n_train\": %d, "
            "\"eval_len\": %d, \"context\": %d, \"tokens\": %ld, \"metrics\": {\"perplexity\": %s, \"loss\": %s",
            c->pes[p], r->spec, c->tasks[t], c->seeds[s], c->n_train, l->length, l->context, l->count,
            jnum(x[0], "%.6f", exp(loss)), jnum(x[1], "%.6f", loss));
        if (c->len.passkey_trials) passkey_fields(&b, r, i);
        else add(&b, "}");
        scaled_fields(&b, c, r, i);
        if (c->len.ruler_tasks) ruler_fields(&b, c, r, i);
        add(&b,
            ", \"chance\": %d, \"passkey_train\": %g, \"steps\": %ld, \"seconds\": %.2f, \"blas\": \"%s\", "
            "\"products\": \"%s\"",
            vocab, c->len.passkey_train, r->steps, r->seconds, posemb_blas_core(), posemb_small_products());
        if (c->len.passkey_once) add(&b, ", \"passkey_needle\": \"once\""); /* absent: "twice", the passkey's */
        if (r->resumed_from) add(&b, ", \"resumed_from\": %ld", r->resumed_from);
        if (c->len.model[0]) add(&b, ", \"model\": %s", c->len.model);
        for (int k = 0; i == 0 && k < r->n_curve; k++)
            add(&b, "%s[%.0f, %.4f]%s", k ? ", " : ", \"curve\": [", r->curve[k][0], r->curve[k][1],
                k + 1 == r->n_curve ? "]" : "");
        for (int k = 0; i == 0 && k < r->n_sink; k++)
            add(&b, "%s[%.0f, %.6f, %.6f, %.6f]%s", k ? ", " : ", \"sink_curve\": [", r->sink[k][0], r->sink[k][1],
                r->sink[k][2], r->sink[k][3], k + 1 == r->n_sink ? "]" : "");
        add(&b, "}\n");
    }
    return b.s;
}

/* How many lines out/results.jsonl holds of run (p, t, s). */
static posemb_status run_lines(const posemb_study_config *c, const char *out, int p, int t, int s, int *lines,
                               posemb_error *err)
{
    int *done = calloc((size_t)c->n_pes * c->n_tasks * c->n_seeds, sizeof *done);
    posemb_status st =
        done ? study_read_done(c, out, done, NULL, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) *lines = done[study_run_index(c, p, t, s)];
    free(done);
    return st;
}

/* The shared state of a worker: the tokenizer and the texts, loaded once. */
typedef struct length_worker {
    posemb_tokenizer *tok;
    posemb_corpus train, held_out;
} length_worker;

/* Run k (study_run_index order): train (every rank of the group), then evaluate and report (its leader). */
/* The run's lines: its evaluations at every length, appended by the leader. */
static posemb_status length_report_run(const posemb_study_config *c, int p, int t, int s, const posemb_config *cfg,
                                       const posemb_study_queue *q, length_worker *w, const char *dir, length_result *r,
                                       double t0, posemb_error *err)
{
    int vocab = posemb_tokenizer_vocab_size(w->tok);
    posemb_status st = length_eval(c, p, cfg, &w->held_out, w->tok, dir, c->seeds[s], r, err);
    r->seconds = posemb_timer_now() - t0;
    char *lines = st ? NULL : length_lines(c, p, t, s, vocab, r);
    if (!st) st = lines ? q->append(q->ctx, lines, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    free(lines);
    if (!st)
        fprintf(stderr, "posemb study: %-5s %-22s seed %d  perplexity %.3f at %d tokens, %.3f at %d  (%.0f s)\n",
                c->tasks[t], c->pes[p], c->seeds[s], ppl_of(&r->ppl[0]), c->n_train, ppl_of(&r->ppl[c->n_mults - 1]),
                r->ppl[c->n_mults - 1].length, r->seconds);
    return st;
}

/* Run k (study_run_index order): train (every rank of the group), then evaluate and report (its leader), then
 * its fine-tunes (study_extend.c). A run whose lines are in (pending for its fine-tunes alone) is not trained or
 * evaluated again. */
static posemb_status length_run(const posemb_study_config *study, const char *out, int k, const posemb_study_queue *q,
                                length_worker *w, posemb_error *err)
{
    int s = k % study->n_seeds, t = k / study->n_seeds % study->n_tasks, p = k / study->n_seeds / study->n_tasks;
    posemb_study_config budgeted;
    const posemb_study_config *c = posemb_study_for_task(study, study->tasks[t], &budgeted);
    char name[160], dir[POSEMB_PATH_MAX];
    study_folder_of(c->pes[p], name, sizeof name);
    snprintf(dir, sizeof dir, "%s/models/%s-%s-s%d", out, c->tasks[t], name, c->seeds[s]);
    length_result r;
    memset(&r, 0, sizeof r);
    double t0 = posemb_timer_now();
    posemb_config cfg;
    int have = 0;
    posemb_status st = length_config(c, p, t, posemb_tokenizer_vocab_size(w->tok), &cfg, err);
    if (!st) st = run_lines(study, out, p, t, s, &have, err);
    int done = have >= posemb_study_lines_per_run(c, t);
    if (!st) snprintf(r.spec, sizeof r.spec, "%s", cfg.pe);
    if (!st && !done) st = length_train(c, &cfg, c->seeds[s], &w->train, w->tok, dir, q->group, &r, err);
    if (st || !posemb_comm_leader(q->group)) return st; /* the leader evaluates, reports and fine-tunes */
    st = study_length_tokenizer_into(c, dir, err);      /* the model folder loads alone (posemb perplexity, HF) */
    if (!st && !done) st = length_report_run(c, p, t, s, &cfg, q, w, dir, &r, t0, err);
    study_extend_data data = {w->tok, &w->train, &w->held_out};
    return st ? st : study_extend_run(c, out, p, t, s, &cfg, &data, dir, err);
}

posemb_status study_length_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                posemb_error *err)
{
    length_worker w = {0};
    char desc[POSEMB_PATH_MAX];
    posemb_status st = study_length_tokenizer(c, out, &w.tok, desc, sizeof desc, err);
    if (!st) st = load_texts(c, out, w.tok, desc, &w.train, &w.held_out, err);
    int drope = c->len.n_extend_factors && study_row_of(c->len.extend_scalings[0], sizeof c->len.extend_scalings[0],
                                                        c->len.n_extend_scalings, "drope") >= 0;
    if (!st && drope && w.held_out.n < 2L * c->len.eval_tokens) /* refused now, not after a recalibration */
        st = posemb_fail(err, POSEMB_EINVAL,
                         "study: drope fits its temperature on a second eval_tokens of held-out text: %ld tokens "
                         "hold fewer than 2 x %d",
                         w.held_out.n, c->len.eval_tokens);
    int k = -1;
    if (!st) st = study_next_unit(q, &k, err);
    while (!st && k >= 0) {
        st = length_run(c, out, k, q, &w, err);
        if (st) {
            char msg[POSEMB_ERROR_MSG];
            snprintf(msg, sizeof msg, "%s", err->msg);
            int s = k % c->n_seeds, t = k / c->n_seeds % c->n_tasks, p = k / c->n_seeds / c->n_tasks;
            st = posemb_fail(err, st, "study run %s / %s / seed %d: %s", c->tasks[t], c->pes[p], c->seeds[s], msg);
        }
        if (!st) st = study_next_unit(q, &k, err);
    }
    posemb_corpus_free(&w.train);
    posemb_corpus_free(&w.held_out);
    posemb_tokenizer_free(w.tok);
    return st;
}
