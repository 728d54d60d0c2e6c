/* The study (shared spec STUDY.md): train a model with each PE on each task
 * and seed, evaluate it at longer lengths, tabulate mean +- std with Welch
 * t-tests against ape, and report. Runs are recorded one JSON line per run
 * and evaluation length in results.jsonl; a resumed study skips the runs
 * recorded there (an interrupted run is redone from its start: it is a
 * function of its seed, so the record is the same). */
#ifndef POSEMB_STUDY_H
#define POSEMB_STUDY_H

#include "posemb/comm.h"
#include "posemb/error.h"
#include "posemb/model.h"
#include "study/synthetic.h"
#include "posemb/tokenizer.h"
#include "model/model_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSEMB_STUDY_MAX_PES 32
#define POSEMB_STUDY_MAX_TASKS 16
/* Points of a run's training curve (every curve_every steps): a config whose
 * steps / curve_every would make more is refused, not cut. */
#define POSEMB_STUDY_MAX_CURVE 64

/* One task's training budget in place of the study's steps, epochs,
 * curve_every and lr (a config's "task_budgets": {"TASK": {"steps": N,
 * "epochs": E, "curve_every": K, "lr": R}}); -1 keeps the study's value. A
 * span task that must find a place in 128-512 tokens needs more updates, and
 * larger ones, than a sentence classifier: the real-data default gives
 * SQuAD-locate its own. */
typedef struct posemb_study_budget {
    char task[32];
    int steps;
    float epochs;
    int curve_every;
    float lr;
} posemb_study_budget;

/* The real-data study's own settings (study_data.c, study_finetune.c):
 * MLM pretraining once per PE, then fine-tuning (the common steps, batch, lr)
 * per task and seed from it. */
typedef struct posemb_study_data_settings {
    int pretrain_steps, pretrain_batch;
    float pretrain_lr;
    int squad_stride, squad_max_query, max_answer; /* SQuAD windows (HF's doc_stride) and decoding */
    /* The pretraining's text: files or folders under data (n_corpora 0:
     * wikitext-2, janeausten, tinyshakespeare); corpus_tokens > 0 keeps that
     * many of their tokens, in evenly spaced blocks so that each corpus keeps
     * its share (0: all); pretrain_keep checkpoints are kept (0: 1), so that
     * a read-out can follow the pretraining; pretrain_seed (0: 1) draws the
     * pretraining's initial weights and dropout, 1 being the draw of every
     * pretraining before the key existed (the order of the text and its masks
     * stay, so held-out losses are on the same masks): a second seed is a
     * second pretraining, the study's unit of replication; pre_ln 1
     * pretrains (and so fine-tunes) BERT with pre-LN layers (posemb_config's
     * pre_ln), 0 post-LN as BERT is; pretrain_warmup the pretraining's
     * linear warm-up in steps (0: a tenth of pretrain_steps rounded down,
     * the trainer's default; 1: one update at rate 0);
     * vocab a WordPiece vocab.txt inside data ("":
     * bert-base-uncased/vocab.txt), which tokenizes the pretraining text
     * and every task. */
    int n_corpora;
    char corpora[8][128];
    char vocab[128];
    int corpus_tokens, pretrain_keep, pretrain_seed, pre_ln, pretrain_warmup;
} posemb_study_data_settings;

/* The real-data study's default vocabulary, inside its data folder. */
#define STUDY_DEFAULT_VOCAB "bert-base-uncased/vocab.txt"
/* The vocabulary the real-data study reads, inside its data folder. */
#define STUDY_VOCAB(c) ((c)->real.vocab[0] ? (c)->real.vocab : STUDY_DEFAULT_VOCAB)

/* The length study's own settings (study_length.c): tasks are decoders
 * ("gpt2", "llama", "llama4", "smollm3") trained as causal LMs at n_train tokens on data's text,
 * then scored at n_train x lengths on eval_tokens held-out tokens
 * (WikiText-2's test set), RoPE also under each of scalings (applied without
 * retraining), and on passkey retrieval with passkey_trials prompts per
 * length and depth (0: none). tokenizer: "bytes" (ids are bytes) or "gpt2"
 * (data/gpt2's BPE). */
typedef struct posemb_study_length_settings {
    int eval_tokens, passkey_trials;
    /* The share of training sequences that are passkey prompts of n_train
     * tokens (key and depth drawn per sequence): a small LM trained on text
     * alone never copies a key, so retrieval is taught at the training
     * length and the test measures how far it carries. 0: text only
     * (the length study's default is 0.25, docs/study.md). */
    float passkey_train;
    /* RULER-style tasks (study_ruler.c), bit t for task t (0: none): taught
     * to a share ruler_train of the training sequences the passkey leaves,
     * and scored at every length with ruler_trials prompts per depth;
     * ruler_keys and ruler_key_words draw their keys (study_ruler_keys:
     * 0 and 0 as RULER does). */
    unsigned ruler_tasks;
    float ruler_train;
    int ruler_trials, ruler_keys, ruler_key_words;
    /* The tables' effective length of each RULER task: the longest length
     * up to which every length's accuracy (answered whole, mean over seeds)
     * is at least ruler_threshold, fixed before a slice runs (0.8 by
     * default; RULER's own is 0.856, Llama 2 7B's score at 4K). Read only
     * by the tables and report, so a folder takes any. */
    float ruler_threshold;
    /* Departures from the two tasks' needles, to find what a small decoder
     * needs to learn a copy (control 5 of results/length/ruler):
     * passkey_once says the passkey's key once ("The pass key is 48213.
     * Remember it."), ruler_twice says the niah tasks' value twice
     * ("key 417 = 58213. Remember it. 58213 is key 417."). 0: as the
     * passkey and RULER say them. */
    int passkey_once, ruler_twice;
    /* Hugging Face config.json keys set over each decoder's config (the
     * text of a JSON object, "" none; posemb_config_override): ablations
     * of the architectures, e.g. {"tie_word_embeddings": true} on Llama. */
    char model[1024];
    int n_scalings;
    char scalings[8][16];
    char tokenizer[16];
    /* The short fine-tune at a longer context (study_extend.c), the setting
     * of Position Interpolation and YaRN: each "rope" run, once trained, is
     * fine-tuned at n_train x each of extend_factors (none: no fine-tune)
     * under each of extend_scalings ("none" is plain RoPE) for extend_steps
     * updates of extend_batch sequences (0: batch / factor, the pretraining's
     * tokens per update) at extend_lr (0: lr / 10), its perplexity read
     * every extend_every steps. */
    int n_extend_factors, extend_factors[4];
    int n_extend_scalings;
    char extend_scalings[8][16];
    int extend_steps, extend_every, extend_batch;
    /* When does a sink form: a checkpoint kept every sink_every steps of each
     * run's training (0: none), and each one's first-token attention read at
     * n_train tokens on held-out text (study_length_sinks). */
    int sink_every;
    float extend_lr;
    int extend_keys; /* how many extend_* keys the config gave (refused without extend_factors) */
} posemb_study_length_settings;

/* A study's config: what every study has, then each room's own settings
 * (real: the real-data study's, len: the length study's; a key of one room
 * in another's config is refused). */
typedef struct posemb_study_config {
    int n_pes, n_tasks, n_seeds, n_mults;
    char pes[POSEMB_STUDY_MAX_PES][128];
    char tasks[POSEMB_STUDY_MAX_TASKS][32];
    int seeds[16];
    int mults[8]; /* evaluation lengths, multiples of n_train */
    int layers, hidden, heads, intermediate;
    int n_train; /* training sequence length */
    int steps, batch;
    float lr;
    int eval_examples; /* per evaluation length */
    int curve_every;   /* steps between points of the training curve (0: none) */
    int jobs;          /* worker processes */
    int threads;       /* threads per worker, set from the command line; 0: 1 in each forked worker, the
                        * process's own when jobs is 1 (a count given is set process-wide) */
    int analyze;       /* analyse the first seed's models (the first task's into the report) */
    int pe_defined;    /* 1: absolute PEs at the amplitude their spec defines; 0 (default): the amplitude rule
                          of docs/study.md: they start at the token embeddings' RMS and learn it */
    /* The study with real text: a folder laid out like ../shared/data, ""
     * for the synthetic study; PATH_MAX long at most, so that the paths in
     * it fit POSEMB_PATH_MAX. length = 1: the length study on it, else the
     * real-data study. */
    char data[4096];
    int length;
    float dropout;
    float epochs; /* > 0: a task fine-tunes min(steps, epochs passes over its training set) steps */
    /* Each update's batch cut into this many equal micro-batches: under MPI,
     * a group of as many ranks trains each run together (data parallel);
     * in one process, the micro-batches run one after another. A run's
     * result depends on this number, not on which computes it (to float
     * rounding). 1 by default. */
    int ranks_per_run;
    int n_budgets;
    posemb_study_budget budgets[POSEMB_STUDY_MAX_TASKS];
    posemb_study_data_settings real;
    posemb_study_length_settings len;
} posemb_study_config;

/* The embedded default: the seed paper's 13 PEs plus rope, alibi, t5; the
 * six synthetic tasks; 3 seeds; a 2-layer width-64 encoder trained at 32
 * tokens and evaluated at 32, 64, 128 and 256. */
posemb_study_config posemb_study_default(void);
/* The real-data default: a 4-layer width-128 BERT pretrained with MLM on the
 * text corpora of data_dir (3000 steps), fine-tuned on CoLA, SST-2, MRPC,
 * STS-B, RTE (3 epochs, at most 1200 steps, the best dev evaluation every
 * 100 kept) and SQuAD-locate (10 epochs, at most 3600 steps, every 300), for none, ape, sin, lsin, rpe, srpe, lsrpe, ape+rpe,
 * lsin+lsrpe, rope, alibi, t5; 3 seeds. */
posemb_study_config posemb_study_data_default(const char *data_dir);
/* The length study's default ("train short, test long" on real text): GPT-2
 * and Llama decoders, 4 layers, width 128, trained at 128 bytes of
 * data_dir's text (2000 steps of 32), with none, ape, sin, rope, alibi, t5,
 * kerple, sandwich, fire, xpos, cope, fox and randomized rope; perplexity
 * at 128 .. 2048 bytes (RoPE also scaled by linear, ntk, dynamic, yarn);
 * passkey retrieval at each length and 5 depths; 3 seeds. */
posemb_study_config posemb_study_length_default(const char *data_dir);
/* Reads a JSON config over c (keys absent keep c's values): EIO when it
 * cannot be read, EFORMAT past 1 MiB, EINVAL naming the file and the key for
 * anything else (unknown keys are refused; a file that is not JSON is EINVAL
 * too), ENOMEM; c may be partly updated on failure. */
posemb_status posemb_study_config_load(posemb_study_config *c, const char *path, posemb_error *err);
/* c with task's entry of budgets (if any) applied to steps, epochs,
 * curve_every and lr, into *out; returns out. */
const posemb_study_config *posemb_study_for_task(const posemb_study_config *c, const char *task,
                                                 posemb_study_config *out);

/* Runs every run not yet in out/results.jsonl, then writes the tables and
 * the report. EINVAL for a config it cannot run (a spec refused by a task,
 * named), EIO for out, ENOMEM; a failed run stops the study with its error
 * (with jobs > 1: EFORMAT "N worker(s) failed", each worker's error on
 * stderr), the finished runs kept for the next call. */
posemb_status posemb_study_run(const posemb_study_config *c, const char *out, posemb_error *err);

/* The kind of task t (GLUE tasks, regression included, are classification;
 * SQuAD is span) and the name of the metric its tables show (a static
 * string). */
posemb_syn_kind posemb_study_task_kind(const posemb_study_config *c, int t);
const char *posemb_study_task_metric(const posemb_study_config *c, int t);

/* A study shared by processes that need not be forks of one another (the
 * posemb program's MPI ranks: src/cli/cli_study_mpi.c): what
 * posemb_study_run does, in pieces. Its units are the runs of the synthetic
 * study (index (pe * n_tasks + task) * n_seeds + seed) or the PEs of the
 * real-data study (a PE's pretraining, then its fine-tunings). One process
 * calls prepare (folders, the corpora's cache) and pending (the units
 * results.jsonl does not finish, in order, into pending[n_units]); each
 * calls work, which computes the units q hands it; one calls finish (tables
 * and report) when all are done. Each run is a function of its seed, so any
 * split gives the lines of one process. */
typedef struct posemb_study_queue {
    void *ctx;
    int (*next)(void *ctx); /* the next unit for this process, or -1 when none is left */
    /* appends one run's lines (whole lines, results.jsonl's format) to out/results.jsonl */
    posemb_status (*append)(void *ctx, const char *lines, posemb_error *err);
    /* The ranks that compute each unit together (ranks_per_run of them), or
     * NULL for one process. Only the group's rank 0 calls next and append,
     * evaluates and writes; it hands each unit to the others by bcast. */
    const posemb_comm *group;
} posemb_study_queue;
int posemb_study_n_units(const posemb_study_config *c);
posemb_status posemb_study_prepare(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status posemb_study_pending(const posemb_study_config *c, const char *out, int *pending, int *n,
                                   posemb_error *err);
posemb_status posemb_study_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                posemb_error *err);
posemb_status posemb_study_finish(const posemb_study_config *c, const char *out, posemb_error *err);
/* Appends whole lines to out/results.jsonl under a file lock (EIO). */
posemb_status posemb_study_append(const char *out, const char *lines, posemb_error *err);

/* The real-data study's pieces (study_data.c): check: EINVAL for settings
 * the data cannot run, EIO for a missing data folder or vocabulary;
 * prepare: tokenizes the corpora into out/cache once (EIO, EFORMAT, ENOMEM). */
posemb_status posemb_study_data_check(const posemb_study_config *c, posemb_error *err);
posemb_status posemb_study_data_prepare(const posemb_study_config *c, const char *out, posemb_error *err);
/* Lines results.jsonl holds of a finished run of task t. */
int posemb_study_lines_per_run(const posemb_study_config *c, int t);

/* Passkey retrieval (study_passkey.c), the length study's test, for any
 * decoder: trials prompts of L tokens per depth (the needle at 0, 1/4, 1/2,
 * 3/4, 1 of the filler), their keys drawn from seed as the study draws them
 * for a run of that seed. The model in dir is built with cfg (its PE may be
 * replaced); tok encodes the prompts, the needle saying its key once when
 * key_once (passkey_needle "once"), else twice. acc[d]: the fraction of keys retrieved
 * whole (argmax on every token of the key, teacher forced), digits[d]: of
 * the keys' tokens predicted, NaN for a depth with no prompt that fits;
 * *context: L, or the model's max_position when its PE's table ends first
 * (the prompt's last tokens are read then). A length that holds no prompt
 * gives NaN at every depth; EINVAL when it holds some prompts and not others
 * (a tokenizer that splits keys into more or fewer tokens), or for L or
 * trials below 1; the tokenizer's errors, those of posemb_lm_load_at and of
 * the forward pass, ENOMEM. */
#define POSEMB_PASSKEY_DEPTHS 5
posemb_status posemb_passkey(const char *dir, const posemb_config *cfg, const posemb_tokenizer *tok, int key_once,
                             int L, int seed, int trials, double acc[POSEMB_PASSKEY_DEPTHS],
                             double digits[POSEMB_PASSKEY_DEPTHS], int *context, posemb_error *err);
/* The tokens a passkey prompt of tok needs with the key 00000 (said once
 * when key_once, else twice) and no filler: every key's for a tokenizer
 * that gives each digit a token (one that merges digits can need more or
 * fewer for other keys). */
posemb_status posemb_passkey_min_length(const posemb_tokenizer *tok, int key_once, int *n, posemb_error *err);

/* From out/results.jsonl: tables.md, tables.csv; then report.html (the
 * second call). The length study's tables first measure, into
 * out/attention.jsonl, where each kept model not measured yet attends at
 * each length (forward passes on the held-out text; a failure there is a
 * warning, the tables are written without it). EIO when results.jsonl
 * cannot be read or an output written (a malformed line is skipped),
 * EINVAL for a path too long, ENOMEM. */
posemb_status posemb_study_tables(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status posemb_study_report(const posemb_study_config *c, const char *out, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
