/* The length study's private pieces: study_length.c (training, perplexity),
 * study_passkey.c (passkey retrieval), study_length_report.c (tables and
 * figures). */
#ifndef POSEMB_STUDY_LENGTH_IMPL_H
#define POSEMB_STUDY_LENGTH_IMPL_H

#include <stddef.h>

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
    long steps;
    long resumed_from; /* 0, or the checkpoint step training continued from: seconds then count from there */
    double seconds;
    char spec[512];
} length_result;

posemb_status study_length_tokenizer(const posemb_study_config *c, const char *out, posemb_tokenizer **tok, char *desc,
                                     size_t cap, posemb_error *err);
/* The held-out text's tokens (WikiText-2's test set), from out/cache. */
posemb_status study_length_held_out(const posemb_study_config *c, const char *out, const posemb_tokenizer *tok,
                                    const char *desc, posemb_corpus *held_out, posemb_error *err);
/* Each run's attention profile on the held-out text at every length, into
 * out/attention.jsonl (study_length_attention.c): the runs and lengths not
 * in it yet whose model is in out/models. */
posemb_status study_length_attention(const posemb_study_config *c, const char *out, posemb_error *err);
/* A run's attention at one length as attention.jsonl holds it: in (a line
 * is there), unreached (the PE's table ends first), and the means over
 * layers of its distance and first-token mass (NaN when not measured). */
typedef struct study_att_cell {
    int in, unreached;
    double dist, sink;
} study_att_cell;
/* The index of name (NULL: none) among n rows of width bytes (a config's pes or tasks), -1 when absent. */
int study_row_of(const char *names, size_t width, int n, const char *name);
/* The cell of task t, PE p, seed s, length m in an array of them (n_tasks x n_pes x n_seeds x n_mults). */
size_t study_att_index(const posemb_study_config *c, int t, int p, int s, int m);
/* out/attention.jsonl into cells (every cell first empty; the last line of a run and length wins, lines of other
 * configs skipped); no file is no line. */
posemb_status study_length_attention_read(const posemb_study_config *c, const char *out, study_att_cell *cells,
                                          posemb_error *err);
/* The passkey prompt of L tokens for key (five digits) with the needle at
 * depth (0..1) of the filler: ids [L], targets [L] (the answer's tokens, the
 * key, at the end; -100 elsewhere). *fits = 0 when L cannot
 * hold needle, question and answer. The tokenizer's errors. */
posemb_status study_passkey_prompt(const posemb_tokenizer *tok, const char *key, int L, double depth, int32_t *ids,
                                   int32_t *targets, int *fits, posemb_error *err);
/* posemb_lm_data's mix for passkey_train: a share of the training sequences
 * become passkey prompts of the training length, each with its own key and a
 * depth drawn uniformly, so that retrieval is learned at n_train and the
 * test asks whether it carries to longer contexts. A prompt that does not
 * fit (or a tokenizer error) leaves the text as it was. */
typedef struct study_passkey_train {
    const posemb_tokenizer *tok;
    uint64_t seed;
    double share;
} study_passkey_train;
void study_passkey_mix(void *ctx, long g, int T, int32_t *ids, int32_t *targets);
/* study_passkey_mix's work for sequence g: 1 when it made it a prompt. */
int study_passkey_apply(const study_passkey_train *m, long g, int T, int32_t *ids, int32_t *targets);

#endif
