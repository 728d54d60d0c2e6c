/* Synthetic tasks that need position to be solved: the embedded default of
 * the study, generated from a seed, no files. Every example is a function of
 * (task, seed, index, length), so training batches and evaluation sets are
 * reproducible and resumable.
 *
 * Vocabulary: 0 [PAD], 1 [CLS], 2 [SEP], 3 [MASK], 4 marker A, 5 marker B,
 * 6..15 the digits 0..9, 16.. content tokens. Sequences start with [CLS]. */
#ifndef POSEMB_SYNTHETIC_H
#define POSEMB_SYNTHETIC_H

#include <stdint.h>

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SYN_PAD = 0, SYN_CLS = 1, SYN_SEP = 2, SYN_MASK = 3, SYN_A = 4, SYN_B = 5, SYN_DIGIT = 6, SYN_CONTENT = 16 };
#define POSEMB_SYN_VOCAB 64

/* Classification reads [CLS]; span predicts start and end tokens; LM is a
 * causal language model (a GPT-2-style decoder) scored on the tokens after [SEP]. */
typedef enum posemb_syn_kind { POSEMB_SYN_CLASSIFY, POSEMB_SYN_SPAN, POSEMB_SYN_LM } posemb_syn_kind;

typedef struct posemb_syn_task {
    const char *name;
    posemb_syn_kind kind;
    const char *what; /* one line for reports */
} posemb_syn_task;

/* "classification", "span", "lm" (results.jsonl's kind), and the metric each
 * reports (static strings). */
const char *posemb_syn_kind_name(posemb_syn_kind k);
const char *posemb_syn_metric_name(posemb_syn_kind k);

/* The tasks, by name, or by index 0..count-1; NULL when unknown or out of
 * range. Static descriptions: nothing to free. */
const posemb_syn_task *posemb_syn_find(const char *name);
int posemb_syn_count(void);
const posemb_syn_task *posemb_syn_at(int i);

/* B examples of length T (T >= 16) for a model trained at n_train: ids
 * [B, T]; classification: labels [B]; span: starts, ends [B] (inclusive
 * token indices). Examples are k0, k0+1, ... of the (task, seed) stream. */
void posemb_syn_batch(const posemb_syn_task *t, uint64_t seed, long k0, int B, int T, int n_train, int32_t *ids,
                      int32_t *labels, int32_t *starts, int32_t *ends);

/* Causal-LM targets of B rows of task t's ids [B, T] (t from posemb_syn_find
 * or posemb_syn_at, as for posemb_syn_batch): the ids after the
 * row's first [SEP] that the task scores (all but [PAD]; seq_add_hints: the
 * digits, not the hints), -100 (ignored) elsewhere. HF's shift inside the
 * loss makes the logits at t - 1 predict the token at t. */
void posemb_syn_lm_targets(const posemb_syn_task *t, const int32_t *ids, int B, int T, int32_t *targets);

/* A wrong answer token of a copy, reverse or lookup task (seq_copy*, seq_reverse*, reverse,
 * seq_lookup*): row [T] its example, k its index among the row's scored tokens (seq_lookup: the
 * query), pred the token predicted. Returns SEQ_ERR_POSITION |
 * SEQ_ERR_CONTENT (0: neither; -1: the task has no such reading, or k is outside the answer) and in
 * chance[3] the share of the other symbols in the position set, the content set and the content set
 * alone (synthetic_seq.c says how each is read). */
enum { SEQ_ERR_POSITION = 1, SEQ_ERR_CONTENT = 2 };
int posemb_syn_error_class(const posemb_syn_task *t, const int32_t *row, int T, int k, int32_t pred, double chance[3]);

/* The accuracy a constant or random predictor gets at length T (the
 * majority class rate; for spans, 1 / the number of candidate spans). */
double posemb_syn_chance(const posemb_syn_task *t, int T, int n_train);

#ifdef __cplusplus
}
#endif
#endif
