/* GLUE metrics (classification and regression): see posemb/metrics.h. */
#include "eval/metrics.h"

#include <math.h>
#include <stdlib.h>

const char *posemb_metric_name(posemb_metric m)
{
    static const char *const names[POSEMB_METRIC_COUNT] = {"accuracy", "f1", "mcc", "pearson", "spearman"};
    return (m >= 0 && m < POSEMB_METRIC_COUNT) ? names[m] : "?";
}

/* ====================================================== classification */

double posemb_accuracy(const int32_t *pred, const int32_t *gold, int n)
{
    if (n <= 0) return NAN;
    long correct = 0;
    for (int i = 0; i < n; i++) correct += pred[i] == gold[i];
    return (double)correct / n;
}

double posemb_f1_binary(const int32_t *pred, const int32_t *gold, int n)
{
    if (n <= 0) return NAN;
    long tp = 0, fp = 0, fn = 0;
    for (int i = 0; i < n; i++) {
        int p = pred[i] == 1, g = gold[i] == 1;
        tp += p && g;
        fp += p && !g;
        fn += !p && g;
    }
    long denom = 2 * tp + fp + fn;
    return denom ? 2.0 * tp / (double)denom : 0.0;
}

/* sklearn's matthews_corrcoef from the confusion matrix C:
 *   cov(t, p) = correct * n - sum_k t_k p_k
 *   cov(p, p) = n^2 - sum_k p_k^2,   cov(t, t) = n^2 - sum_k t_k^2
 * with t_k, p_k the true and predicted counts of class k. All terms are
 * integers below 2^53 for any n that fits an int, so doubles hold them
 * exactly. */
double posemb_matthews(const int32_t *pred, const int32_t *gold, int n, int n_classes)
{
    if (n <= 0 || n_classes < 2) return NAN;
    double *true_count = calloc((size_t)n_classes * 2, sizeof *true_count);
    if (!true_count) return NAN;
    double *pred_count = true_count + n_classes;
    double correct = 0;
    for (int i = 0; i < n; i++) {
        if (pred[i] < 0 || pred[i] >= n_classes || gold[i] < 0 || gold[i] >= n_classes) {
            free(true_count);
            return NAN;
        }
        true_count[gold[i]] += 1;
        pred_count[pred[i]] += 1;
        correct += pred[i] == gold[i];
    }
    double tp_dot = 0, pp_dot = 0, tt_dot = 0;
    for (int k = 0; k < n_classes; k++) {
        tp_dot += true_count[k] * pred_count[k];
        pp_dot += pred_count[k] * pred_count[k];
        tt_dot += true_count[k] * true_count[k];
    }
    free(true_count);
    double nn = (double)n * n;
    double cov_tp = correct * n - tp_dot, cov_pp = nn - pp_dot, cov_tt = nn - tt_dot;
    if (cov_pp * cov_tt == 0) return 0.0;
    return cov_tp / sqrt(cov_tt * cov_pp);
}

/* ========================================================== regression */

/* Pearson's r of doubles: means first, then centred sums (no cancellation
 * from sum x^2 - n mean^2). */
static double pearson_d(const double *x, const double *y, int n)
{
    if (n < 2) return NAN;
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (!(sxx > 0) || !(syy > 0)) return NAN; /* constant input, or NaN */
    double r = sxy / sqrt(sxx * syy);
    /* Rounding can push |r| a hair past 1; scipy clips too. */
    return r > 1 ? 1 : r < -1 ? -1 : r;
}

static int has_nan(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (isnan(x[i])) return 1;
    return 0;
}

double posemb_pearson(const float *x, const float *y, int n)
{
    if (n < 2 || has_nan(x, n) || has_nan(y, n)) return NAN;
    double *buf = malloc((size_t)n * 2 * sizeof *buf);
    if (!buf) return NAN;
    for (int i = 0; i < n; i++) {
        buf[i] = x[i];
        buf[n + i] = y[i];
    }
    double r = pearson_d(buf, buf + n, n);
    free(buf);
    return r;
}

typedef struct ranked {
    float value;
    int index;
} ranked;

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->value != b->value) return a->value < b->value ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index); /* stable: qsort is not */
}

/* Sorts, then gives each run of equal values the mean of its 1-based
 * positions (i + 1 .. j): (i + 1 + j) / 2. */
void posemb_rank_average(const float *x, int n, double *rank)
{
    if (n <= 0) return;
    ranked *order = malloc((size_t)n * sizeof *order);
    if (!order) {
        for (int i = 0; i < n; i++) rank[i] = NAN;
        return;
    }
    for (int i = 0; i < n; i++) order[i] = (ranked){x[i], i};
    qsort(order, (size_t)n, sizeof *order, cmp_ranked);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && order[j].value == order[i].value) j++;
        double mean_rank = 0.5 * ((double)(i + 1) + (double)j);
        for (int k = i; k < j; k++) rank[order[k].index] = mean_rank;
        i = j;
    }
    free(order);
}

double posemb_spearman(const float *x, const float *y, int n)
{
    if (n < 2 || has_nan(x, n) || has_nan(y, n)) return NAN;
    double *ranks = malloc((size_t)n * 2 * sizeof *ranks);
    if (!ranks) return NAN;
    posemb_rank_average(x, n, ranks);
    posemb_rank_average(y, n, ranks + n);
    double rho = pearson_d(ranks, ranks + n, n);
    free(ranks);
    return rho;
}
