/* The length study's private pieces: study_length.c (training, perplexity),
 * study_passkey.c (passkey retrieval), study_length_report.c (tables and
 * figures). */
#ifndef POSEMB_STUDY_LENGTH_IMPL_H
#define POSEMB_STUDY_LENGTH_IMPL_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "posemb/corpus.h"
#include "posemb/model.h"
#include "study/study.h"
#include "study/study_ruler.h"
#include "posemb/tokenizer.h"
#include "posemb/trainer.h"
#include "train/trainer_internal.h"

#define PASSKEY_DEPTHS POSEMB_PASSKEY_DEPTHS /* the needle at 0, 1/4, 1/2, 3/4 and all of the way into the filler */

typedef struct length_result {
    posemb_lm_length ppl[8];           /* per length */
    double scaled[8][8];               /* [scaling][length]: loss per token under the scaling; NAN: not run */
    double passkey[8][PASSKEY_DEPTHS]; /* [length][depth]: fraction of prompts whose key is retrieved */
    double digits[8][PASSKEY_DEPTHS];  /* [length][depth]: fraction of the keys' tokens predicted */
    int passkey_context[8];            /* [length]: the tokens the model read (less: its last ones) */
    double ruler[8][STUDY_RULER_TASKS][STUDY_RULER_DEPTHS];      /* [length][task][depth]: answered whole */
    double ruler_part[8][STUDY_RULER_TASKS][STUDY_RULER_DEPTHS]; /* [length][task][depth]: answer tokens right */
    int ruler_context[8];                                        /* [length]: the tokens the model read */
    double curve[POSEMB_STUDY_MAX_CURVE][2];                     /* training loss every curve_every steps */
    int n_curve;
    double sink[POSEMB_STUDY_MAX_CURVE][4]; /* step, first-token mass: mean, largest head's, share of heads > 0.3 */
    int n_sink;
    long steps;
    long resumed_from; /* 0, or the checkpoint step training continued from: seconds then count from there */
    double seconds;
    char spec[512];
} length_result;

posemb_status study_length_tokenizer(const posemb_study_config *c, const char *out, posemb_tokenizer **tok, char *desc,
                                     size_t cap, posemb_error *err);
/* The study's tokenizer files into model folder dir: tokenizer.json (bytes), or GPT-2's vocab.json and
 * merges.txt, so that the folder loads alone (posemb perplexity, posemb passkey, HF). EIO, EINVAL. */
posemb_status study_length_tokenizer_into(const posemb_study_config *c, const char *dir, posemb_error *err);
/* RoPE under a scaling ("none", linear, ntk, dynamic, yarn, llama3, string)
 * for a context factor x the trained length n_train, as a spec. */
void study_rope_spec(const char *scaling, int n_train, int factor, char *out, size_t cap);
/* The held-out text's tokens (WikiText-2's test set), from out/cache. */
posemb_status study_length_held_out(const posemb_study_config *c, const char *out, const posemb_tokenizer *tok,
                                    const char *desc, posemb_corpus *held_out, posemb_error *err);
/* Each run's attention profile on the held-out text at every length, into
 * out/attention.jsonl (study_length_attention.c): the runs and lengths not
 * in it yet whose model is in out/models. */
posemb_status study_length_attention(const posemb_study_config *c, const char *out, posemb_error *err);
/* Model m's attention profile (posemb_attn_profile_of, one bin) on B windows
 * of L held-out tokens, B = posemb_attn_windows (free pr after, either
 * way): EINVAL when the text is too short, the forward pass's errors. */
posemb_status study_length_profile(posemb_model *m, const posemb_corpus *held_out, int L, posemb_attn_profile *pr,
                                   posemb_error *err);
/* The first-token attention of the checkpoints a run kept every sink_every
 * steps in dir, read at n_train tokens on B held-out windows
 * (posemb_attn_windows): per checkpoint its step, the first-token mass
 * averaged over layers and heads, the largest head's, and the share of heads
 * whose mass passes 0.3 (Gu et al.'s sink threshold), into sink[*n]
 * (POSEMB_STUDY_MAX_CURVE rows; the config check keeps the points within
 * them). The checkpoint's load and forward errors (a run folder trained
 * without this sink_every lacks the checkpoints); EINVAL when the held-out
 * text is too short. */
posemb_status study_length_sinks(const posemb_study_config *c, const posemb_config *cfg, const posemb_corpus *held_out,
                                 const char *dir, double (*sink)[4], int *n, posemb_error *err);
/* A run's attention at one length as attention.jsonl holds it: in (a line
 * is there), unreached (the PE's table ends first), and the means over
 * layers of its distance and first-token mass (NaN when not measured). */
typedef struct study_att_cell {
    int in, unreached;
    double dist, sink;
} study_att_cell;
/* The cell of task t, PE p, seed s, length m in an array of them (n_tasks x n_pes x n_seeds x n_mults). */
size_t study_att_index(const posemb_study_config *c, int t, int p, int s, int m);
/* out/attention.jsonl into cells (every cell first empty; the last line of a run and length wins, lines of other
 * configs skipped); no file is no line. */
posemb_status study_length_attention_read(const posemb_study_config *c, const char *out, study_att_cell *cells,
                                          posemb_error *err);
/* The passkey prompt of L tokens for key (five digits) with the needle at
 * depth (0..1) of the filler, the key said once in it when once (else
 * twice, the passkey's): ids [L], targets [L] (the answer's tokens, the
 * key, at the end; -100 elsewhere). *fits = 0 when L cannot
 * hold needle, question and answer. The tokenizer's errors. */
posemb_status study_passkey_prompt(const posemb_tokenizer *tok, const char *key, int once, int L, double depth,
                                   int32_t *ids, int32_t *targets, int *fits, posemb_error *err);
/* posemb_lm_data's mix for passkey_train: a share of the training sequences
 * become passkey prompts of the training length, each with its own key and a
 * depth drawn uniformly, so that retrieval is learned at n_train and the
 * test asks whether it carries to longer contexts. A prompt that does not
 * fit (or a tokenizer error) leaves the text as it was. */
typedef struct study_passkey_train {
    const posemb_tokenizer *tok;
    uint64_t seed;
    double share;
    int once; /* the key said once (posemb_study_length_settings' passkey_once) */
} study_passkey_train;
void study_passkey_mix(void *ctx, long g, int T, int32_t *ids, int32_t *targets);
/* The training mix of a length run (posemb_lm_data's mix, ctx a
 * study_length_mix): a sequence becomes a passkey prompt (its draw as
 * before RULER's tasks existed, so runs without them are unchanged), or
 * else, with its own draw, a RULER prompt. */
typedef struct study_length_mix {
    study_passkey_train passkey;
    study_ruler_train ruler;
} study_length_mix;
study_length_mix study_length_mix_of(const posemb_study_config *c, const posemb_tokenizer *tok, int seed);
void study_length_mix_apply(void *ctx, long g, int T, int32_t *ids, int32_t *targets);

/* How c draws RULER's keys (study_ruler_keys). */
study_ruler_keys study_ruler_keys_of(const posemb_study_config *c);
/* study_passkey_mix's work for sequence g: 1 when it made it a prompt. */
int study_passkey_apply(const study_passkey_train *m, long g, int T, int32_t *ids, int32_t *targets);

/* study_extend.c: the short fine-tune at a longer context (extend_factors, posemb_study_length_settings). */
#define STUDY_EXTEND_POINTS 33 /* points of a fine-tune's curve: extend_steps / extend_every + 1 at most */
typedef struct study_extend_data {
    const posemb_tokenizer *tok;
    const posemb_corpus *train, *held_out;
} study_extend_data;
/* 1 when PE p's runs are fine-tuned: extend_factors set and p "rope" (its scalings are RoPE's). */
int study_extend_applies(const posemb_study_config *c, int p);
/* left[run] = 1 (study_run_index order; others untouched) for each run with a fine-tune out/extend.jsonl lacks.
 * EINVAL naming a line of this config's runs made with other fine-tune settings; EIO, ENOMEM. */
posemb_status study_extend_left(const posemb_study_config *c, const char *out, unsigned char *left, posemb_error *err);
/* Run (p, t, s)'s missing fine-tunes (none unless study_extend_applies), from its trained model folder dir built
 * with cfg, each appended to out/extend.jsonl when read. The errors of training and evaluation. */
posemb_status study_extend_run(const posemb_study_config *c, const char *out, int p, int t, int s,
                               const posemb_config *cfg, const study_extend_data *data, const char *dir,
                               posemb_error *err);

#endif
