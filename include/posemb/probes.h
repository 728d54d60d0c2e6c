/* Analysis of what a position embedding is and has learned (shared spec
 * ANALYSIS.md): where a PE comes from, the matrices its properties are read
 * on, and the probes of what a learned table encodes. */
#ifndef POSEMB_PROBES_H
#define POSEMB_PROBES_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/model.h"
#include "posemb/pe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sources ---- */

typedef enum posemb_source_kind { POSEMB_SRC_SPEC, POSEMB_SRC_MODEL, POSEMB_SRC_TENSOR } posemb_source_kind;

typedef struct posemb_source {
    posemb_source_kind kind;
    char name[512];        /* as given */
    char spec[400];        /* the canonical PE spec, or "table" for a bare tensor */
    char provenance[1024]; /* where the numbers come from, for reports */
    int n, dim;            /* positions analysed; width of the APE table */
    float *ape;            /* [n, dim] the positions' vectors (a model's: from its first position on), or NULL */
    float *rel;            /* [rel_rows, rel_dim] layer 0's relative key table, or NULL */
    int rel_rows, rel_dim;
    int rel_x0;   /* offset of the first row: -k (Shaw: rows are j - i), -(L-1) (HF: rows are i - j) */
    float *freqs; /* [n_freqs] sinusoid frequencies (sin, lsin, srpe, lsrpe, rope), or NULL */
    int n_freqs;
    posemb_model *model; /* for identical-word probing and correlation, or NULL */
    posemb_pe *own_pe;   /* a built-in spec's PE */
    posemb_arena arena;
} posemb_source;

typedef struct posemb_source_opts {
    const char *tensor; /* --tensor NAME: a 2-D tensor of a safetensors file */
    int len; /* positions (0: the table's rows, a model's max_position, or 512 for a spec; a model whose PE has no
              * table is rebuilt to take more than it was trained at, one with a table keeps its own) */
    int dim, heads; /* for a built-in spec (0: 768, and 12 heads or the most below 12 that divide dim) */
    uint64_t seed;  /* initialisation of learned built-in specs */
    int causal;     /* a built-in spec as a decoder's (0: an encoder's; PEs defined for decoders only need 1) */
} posemb_source_opts;

/* what: a PE spec ("sin", "lsin+lsrpe"), a model folder (posemb's or HF's:
 * config.json + model.safetensors), or with opts->tensor a .safetensors file.
 * Errors name the source and the problem (a 1-D tensor, a missing tensor):
 * EINVAL, EIO, EFORMAT, ENOMEM. s owns what it opens until posemb_source_close. */
POSEMB_API posemb_status posemb_source_open(posemb_source *s, const char *what, const posemb_source_opts *opts,
                                            posemb_error *err);
/* A table of positions [rows, dim] the caller holds in memory (copied), as
 * `posemb analyze FILE --tensor NAME` reads one from a file; name is what
 * reports call it. EINVAL for fewer than 2 rows, ENOMEM; close s with
 * posemb_source_close. */
POSEMB_API posemb_status posemb_source_open_table(posemb_source *s, const char *name, const float *table, int rows,
                                                  int dim, posemb_error *err);
POSEMB_API void posemb_source_close(posemb_source *s);

/* ---- matrices ---- */

/* Identical word probing: the first layer's attention logits for sequences
 * of n copies of one word, all positional terms included, averaged over
 * heads and over n_words words drawn with seed; mean and spread [n, n]
 * (std over words of the head-averaged logits), and the mean softmax, into
 * caller-allocated [n, n] arrays. Fails as posemb_model_forward does. */
POSEMB_API posemb_status posemb_identical_words(posemb_model *m, int n, int n_words, uint64_t seed, float *mean,
                                                float *spread, float *softmax, posemb_error *err);

/* Position-wise correlation P Wq_h Wk_h^T P^T of the first layer for each
 * head h, and their average: per_head [H, n, n] (may be NULL), mean [n, n];
 * ENOMEM. */
POSEMB_API posemb_status posemb_correlation(posemb_model *m, const float *P, int n, float *per_head, float *mean,
                                            posemb_error *err);

/* ---- probes of an APE table P [n, dim] ---- */

typedef struct posemb_regress {
    double mae_all;
    int n_ranges;
    double mae_by_range[64]; /* per range of 128 positions */
    int ranges[64][2];
    float *pred; /* [n] predicted positions (caller frees) */
} posemb_regress;

/* The seed protocol: least squares (minimum norm; ridge when > 0) from P_x
 * to x on the even positions, predicting every position. out->pred is
 * malloc'ed for the caller to free(); on any failure (EINVAL for n < 4,
 * ENOMEM, ERANGE when LAPACK fails) it is NULL. */
POSEMB_API posemb_status posemb_regress_seed(const float *P, int n, int dim, double ridge, posemb_regress *out,
                                             posemb_error *err);
/* Wang and Chen's protocol: rows shuffled with seed, k folds, score = mean
 * |round(pred) - x| over the held-out rows; fails as posemb_regress_seed. */
POSEMB_API posemb_status posemb_regress_cv(const float *P, int n, int dim, int folds, uint64_t seed, double ridge,
                                           double *mae, posemb_error *err);
/* Relative order: logistic regression (L2, strength lambda) on [P_i; P_j]
 * predicting j > i over `pairs` sampled pairs, k-fold; the error rate.
 * EINVAL for too few positions or pairs for the folds or lambda <= 0,
 * ENOMEM, ERANGE when the Newton system is singular. */
POSEMB_API posemb_status posemb_relative_order(const float *P, int n, int dim, int pairs, int folds, uint64_t seed,
                                               double lambda, double *error, posemb_error *err);
/* Per-dimension variation: range [dim] of P[x][d] over x < n; *moving counts
 * the dimensions whose range exceeds frac times the largest range. */
POSEMB_API void posemb_dim_ranges(const float *P, int n, int dim, double frac, float *range, int *moving);
/* psi(m) = sum_k cos(w_k m), m < n, and the last m up to which it strictly falls. */
POSEMB_API void posemb_psi(const float *freqs, int n_freqs, int n, float *psi, int *decreasing_until);

/* ---- word order, read off a masked-LM model's loss ---- */

/* Windows of len - 2 tokens are drawn from a token stream and wrapped in
 * [CLS] ... [SEP]; mask_rate of the inner tokens become [MASK]. A window's
 * start, masks and shuffle are drawn from (seed, its index), so the first k
 * windows are the same for any number of windows. */
typedef struct posemb_order_opts {
    int windows;            /* windows (32) */
    int len;                /* tokens per window, [CLS] and [SEP] included, >= 3 (128) */
    double mask_rate;       /* share of the inner tokens masked, in (0, 1] (0.15) */
    uint64_t seed;          /* windows, masks and shuffles (3) */
    int32_t cls, sep, mask; /* the special ids; -1 (the default): the model's, see posemb_order_cost_dir */
} posemb_order_opts;

POSEMB_API posemb_order_opts posemb_order_defaults(void);

/* The masked-LM cross-entropy (nats per masked token) on the same masked
 * windows four ways. The word-order cost is shuffled - as_is: 0 for a model
 * blind to order, whose predictions move with their tokens. */
typedef struct posemb_order_result {
    double as_is;
    double shuffled; /* each window's inner tokens shuffled, each loss read at its token's new place */
    double reversed; /* each window reversed whole ([CLS] last): 0 cost for a PE symmetric in i - j */
    double scale0;   /* the PE's learned scale (ape:learned_scale=on, ...) set to 0; NaN when it has none */
    int has_scale;
    long masked;                    /* masked tokens, over which each loss is the mean */
    int32_t cls, sep, mask;         /* the ids used */
    char specials[POSEMB_PATH_MAX]; /* where they come from: a tokenizer file's path, "BERT's defaults", "given" */
    char spec[400];                 /* the model's canonical PE spec */
} posemb_order_result;

/* Runs m (a BERT or RoBERTa masked-LM model; left in eval mode) on windows
 * of tokens[0..n) (ids of m's vocabulary), the special ids -1 taken as
 * BERT's 101, 102, 103. EINVAL for a model without an MLM head, options out
 * of range, n below one window (len - 2 tokens) or no masked token; ERANGE
 * for a token or special id outside the vocabulary; else as
 * posemb_model_forward. out is zeroed on failure. */
POSEMB_API posemb_status posemb_order_cost(posemb_model *m, const int32_t *tokens, long n, const posemb_order_opts *o,
                                           posemb_order_result *out, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
