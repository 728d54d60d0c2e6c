/* Pretraining data: plain-text corpora tokenized once and cached, cut into
 * sequences, served as batches that depend only on (seed, step), so that a
 * resumed run sees exactly what an uninterrupted one would. */
#ifndef POSEMB_CORPUS_H
#define POSEMB_CORPUS_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/error.h"
#include "posemb/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_corpus {
    int32_t *tokens;
    long n;
    int n_files;
    int from_cache; /* 1 when read from the cache, not tokenized */
} posemb_corpus;

/* Reads path (a text file, or every regular file below a folder, in sorted
 * order, hidden ones skipped), tokenizes each file without special tokens
 * and concatenates them. The token stream is cached in cache_path
 * (safetensors, I32 "tokens"); a cache whose sources (paths, sizes, times)
 * and tokenizer (tok_desc) match is read instead of tokenizing again.
 * cache_path may be NULL. Errors name the file: unreadable, not text (a NUL
 * byte), or a corpus with no tokens: EIO, EFORMAT, ENOMEM, EINVAL for
 * folders nested over 16 deep, the tokenizer's errors; a cache that cannot
 * be written fails the load too. c is zeroed on failure; the caller frees it
 * with posemb_corpus_free. */
POSEMB_API posemb_status posemb_corpus_load(posemb_corpus *c, const char *path, const posemb_tokenizer *tok,
                                            const char *tok_desc, const char *cache_path, posemb_error *err);
POSEMB_API void posemb_corpus_free(posemb_corpus *c);

/* Sequences and batches for masked or causal language modelling. */
typedef struct posemb_lm_data {
    const int32_t *tokens;
    long n_tokens;
    int T;                     /* sequence length */
    int mlm;                   /* 1: [CLS] body [SEP] with 15% masking; 0: causal windows of T tokens */
    int body;                  /* stream tokens per sequence */
    long n_train, n_valid;     /* sequences: the last n_valid are held out */
    int32_t cls, sep, mask_id; /* MLM special ids */
    int vocab;
    uint64_t seed;
    long perm_epoch; /* the epoch whose order is in perm (-1: none) */
    long *perm;      /* [n_train] */
    /* Optional, set after init: called on each training sequence once it is
     * filled, g its number in the run's stream (batch k's b-th is k * B + b),
     * and may rewrite ids and targets [T], to mix other text into the corpus
     * (the length study's passkey prompts). A function of g alone keeps
     * resumed runs exact. Validation batches are never mixed. */
    void (*mix)(void *ctx, long g, int T, int32_t *ids, int32_t *targets);
    void *mix_ctx;
} posemb_lm_data;

/* What posemb_lm_data_init cuts and how: sequences of T tokens; mlm 1 for
 * masked LM (BERT's [CLS] ... [SEP] with 15% of the tokens masked; cls, sep,
 * mask_id the tokenizer's ids, read only then), 0 for causal LM; vocab for
 * MLM's random replacements; valid_frac of the sequences held out; seed
 * draws the order of each epoch and the masks. */
typedef struct posemb_lm_data_opts {
    int T, mlm;
    int32_t cls, sep, mask_id;
    int vocab;
    double valid_frac;
    uint64_t seed;
} posemb_lm_data_opts;

/* Cuts tokens into sequences of o->T; holds out o->valid_frac of them (at
 * least one when there are two or more). ERANGE when the corpus holds no
 * full sequence. EINVAL for a T too short, a missing MLM id or valid_frac
 * outside [0, 1), ENOMEM. d points into tokens (not copied), which must
 * outlive it; free d with posemb_lm_data_free. */
POSEMB_API posemb_status posemb_lm_data_init(posemb_lm_data *d, const int32_t *tokens, long n,
                                             const posemb_lm_data_opts *o, posemb_error *err);
POSEMB_API void posemb_lm_data_free(posemb_lm_data *d);

/* Batch number k (k = step * accum + micro) of B training sequences, drawn
 * without replacement within each epoch (a seeded shuffle per epoch):
 * ids [B, T] and targets [B, T] (MLM: HF's 80/10/10 masking of 15% of the
 * non-special tokens, -100 elsewhere; CLM: the ids). */
POSEMB_API void posemb_lm_train_batch(posemb_lm_data *d, long k, int B, int32_t *ids, int32_t *targets);
/* Validation batch i: sequences i*B.. (wrapping), masking keyed by i. */
POSEMB_API void posemb_lm_valid_batch(const posemb_lm_data *d, long i, int B, int32_t *ids, int32_t *targets);

#ifdef __cplusplus
}
#endif
#endif
