/* GLUE's task metrics as their benchmarks define them (SQuAD's are in
 * posemb/squad_eval.h, the study's significance test in posemb/stats.h):
 *
 *   - classification: accuracy; binary F1 with class 1 positive (as GLUE
 *     scores MRPC, sklearn's f1_score); Matthews correlation (CoLA,
 *     sklearn's matthews_corrcoef, 0 when a denominator is 0);
 *   - regression (STS-B): Pearson and Spearman correlation (scipy's
 *     pearsonr and spearmanr: average ranks for ties).
 *
 * Sums are accumulated in double. Scores are fractions in [0, 1] (GLUE
 * leaderboards print 100 times these). Every function is pure and
 * thread-safe. */
#ifndef POSEMB_METRICS_H
#define POSEMB_METRICS_H

#include "posemb/api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The metrics a GLUE task reports (posemb_glue_task_info lists them). */
typedef enum posemb_metric {
    POSEMB_METRIC_ACCURACY = 0,
    POSEMB_METRIC_F1,  /* binary, class 1 positive */
    POSEMB_METRIC_MCC, /* Matthews correlation */
    POSEMB_METRIC_PEARSON,
    POSEMB_METRIC_SPEARMAN,
    POSEMB_METRIC_COUNT
} posemb_metric;

/* "accuracy", "f1", "mcc", "pearson", "spearman" (the keys of the study's
 * results.jsonl); "?" for an unknown value. */
const char *posemb_metric_name(posemb_metric m);

/* ------------------------------------------------------ classification */

/* Fraction of i with pred[i] == gold[i]; NaN when n <= 0. */
double posemb_accuracy(const int32_t *pred, const int32_t *gold, int n);

/* Binary F1 of class 1 (every other label counts as negative):
 * 2 TP / (2 TP + FP + FN), and 0 when that denominator is 0 (sklearn's
 * zero_division default). NaN when n <= 0. */
double posemb_f1_binary(const int32_t *pred, const int32_t *gold, int n);

/* Matthews correlation of labels in [0, n_classes) (the multiclass formula
 * of sklearn, which for two classes is
 * (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))); 0 when a
 * denominator is 0 (a constant prediction or a constant truth), as sklearn.
 * NaN when n <= 0, n_classes < 2 or a label lies outside [0, n_classes). */
double posemb_matthews(const int32_t *pred, const int32_t *gold, int n, int n_classes);

/* ---------------------------------------------------------- regression */

/* Pearson's r (two passes: means, then centred sums). NaN when n < 2, when
 * either input is constant (scipy warns and returns nan) or holds a NaN. */
double posemb_pearson(const float *x, const float *y, int n);

/* Spearman's rho: Pearson's r of the ranks, ties getting their average rank
 * (scipy.stats.rankdata's "average"). NaN as posemb_pearson (a NaN input
 * gives NaN, scipy's nan_policy="propagate"). */
double posemb_spearman(const float *x, const float *y, int n);

/* Average ranks (1-based, ties share the mean of their positions) of n
 * values into rank; NaN values are not allowed (their ranks are
 * unspecified). */
void posemb_rank_average(const float *x, int n, double *rank);

#ifdef __cplusplus
}
#endif

#endif
