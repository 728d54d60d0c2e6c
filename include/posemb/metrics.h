/* Task metrics as their benchmarks define them, and the significance test
 * of the study.
 *
 *   - classification (GLUE): accuracy; binary F1 with class 1 positive (as
 *     GLUE scores MRPC, sklearn's f1_score); Matthews correlation (CoLA,
 *     sklearn's matthews_corrcoef, 0 when a denominator is 0);
 *   - regression (STS-B): Pearson and Spearman correlation (scipy's
 *     pearsonr and spearmanr: average ranks for ties);
 *   - SQuAD v1.1: exact match and token F1 of the official
 *     evaluate-v1.1.py, maximum over the gold answers;
 *   - a two-sided Welch t-test (scipy's ttest_ind(a, b, equal_var=False)).
 *
 * Sums are accumulated in double. Scores are fractions in [0, 1] (the
 * official SQuAD script and GLUE leaderboards print 100 times these).
 * Every function is pure and thread-safe (except posemb_welch_ttest, see
 * there). */
#ifndef POSEMB_METRICS_H
#define POSEMB_METRICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The metrics a GLUE task reports (posemb_glue_task_info lists them). */
typedef enum posemb_metric {
    POSEMB_METRIC_ACCURACY = 0,
    POSEMB_METRIC_F1,       /* binary, class 1 positive */
    POSEMB_METRIC_MCC,      /* Matthews correlation */
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

/* --------------------------------------------------------------- SQuAD */

/* The official answer normalisation of evaluate-v1.1.py, on UTF-8 text:
 *   1. lower case as Python's str.lower (full mapping: U+0130 becomes
 *      "i" + U+0307; a capital sigma at the end of a word becomes final
 *      sigma, Python's Final_Sigma rule);
 *   2. remove every character of Python's string.punctuation (the 32 ASCII
 *      symbols !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~; other punctuation stays);
 *   3. replace the words "a", "an", "the" by a space: a word is a maximal
 *      run of the characters of Python's regex \w (str.isalnum, i.e. the
 *      Unicode categories L* and N*, or "_");
 *   4. split on Python whitespace (str.split()) and join with one space.
 * Invalid UTF-8 bytes (which a Python str cannot hold) become U+FFFD.
 * Unicode data comes from utf8proc (Unicode 15.0) where Python 3.11 has
 * 14.0: only characters new in 15.0 can differ. Checked against Python
 * 3.11's normalize_answer on every code point assigned in Unicode 14, each
 * in nine contexts (word boundaries, whitespace, final sigma on both sides),
 * and on every context, question and answer of SQuAD's dev set.
 * Returns a malloc'ed string, or NULL when out of memory. */
char *posemb_squad_normalize(const char *text);

/* 1 if the normalised prediction equals the normalised form of any gold
 * answer, else 0 (0 when n_golds <= 0). */
double posemb_squad_exact_match(const char *prediction, const char *const *golds, int n_golds);

/* The official token F1, maximum over the golds: the normalised texts split
 * on whitespace, common = the bag-of-tokens intersection (Counter & Counter),
 * 0 when it is empty (so two empty answers score 0, as v1.1 does), else
 * 2 P R / (P + R). 0 when n_golds <= 0. NaN when out of memory. */
double posemb_squad_f1(const char *prediction, const char *const *golds, int n_golds);

/* ---------------------------------------------------------- statistics */

typedef struct posemb_welch {
    double t;      /* (mean_a - mean_b) / sqrt(var_a / n_a + var_b / n_b) */
    double df;     /* Welch-Satterthwaite degrees of freedom */
    double p;      /* two-sided p-value */
    double mean_a, mean_b;
    double var_a, var_b; /* sample variances (n - 1 in the denominator) */
} posemb_welch;

/* Two-sided Welch t-test of a[0..n_a) against b[0..n_b), as scipy's
 * ttest_ind(a, b, equal_var=False):
 *   - n_a < 2 or n_b < 2 (no sample variance): t, df and p are NaN (means
 *     and variances are still filled where defined);
 *   - both variances 0: Welch's formula is 0/0; here p = 1 and t = 0 when
 *     the means are equal, else p = 0 and t = +-infinity, with
 *     df = n_a + n_b - 2 as a convention (scipy gives nan instead);
 *   - a NaN in either sample gives NaN results.
 * The p-value is I_{df/(df+t^2)}(df/2, 1/2), the Student-t tail, through
 * posemb_betainc. Uses lgamma, which glibc makes thread-safe in practice
 * but which writes the global signgam. */
posemb_welch posemb_welch_ttest(const double *a, int n_a, const double *b, int n_b);

/* The regularized incomplete beta function I_x(a, b) for a, b > 0 and
 * 0 <= x <= 1, by the continued fraction of Numerical Recipes (modified
 * Lentz), using the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the
 * fraction converges slowly. Against scipy.special.betainc on a grid of
 * a, b in [0.5, 1e6] and x in [1e-10, 1 - 1e-12]: relative error below
 * 1e-12 for a, b <= 1000, 1e-8 at a = 1e6 (lgamma's cancellation in the
 * prefactor; the study's degrees of freedom are below 100). NaN for
 * arguments outside the domain or when the fraction does not converge. */
double posemb_betainc(double a, double b, double x);

/* Two-sided p-value of Student's t with df > 0 degrees of freedom:
 * P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2). NaN for a NaN t or df <= 0. */
double posemb_student_t_p2(double t, double df);

#ifdef __cplusplus
}
#endif
#endif
