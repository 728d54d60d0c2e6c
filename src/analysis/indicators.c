/* Indicators of translation invariance, monotonicity and symmetry of an
 * n x n matrix A (row-major), over the band 1 <= |i - j| <= K:
 *
 *   band     = {(i, j) : 1 <= |j - i| <= K},  N = |band|,  mu = mean of A on it
 *   mu_m     = mean of the diagonal j - i = m (its n - |m| entries)
 *   T        = (1/N) sum_band (A_ij - mu)^2
 *   W        = (1/N) sum_band (A_ij - mu_{j-i})^2
 *   TI       = 1 - W / T
 *   pairs_s  = #{(i, j, j') : j, j' in the band on side s of i, |j' - i| > |j - i|}
 *   inv_s    = those of the pairs with A_ij' > A_ij (strictly; ties are no inversion)
 *   MONO_s   = 1 - inv_s / pairs_s          s = fwd (j > i) or bwd (j < i)
 *   MONO     = (MONO_fwd + MONO_bwd) / 2
 *   f(m)     = mu_m,  -(n-1) <= m <= n-1 (not limited to the band)
 *   window   = max w in [0, n-1]: f(m) < f(m-1) and f(-m) < f(-m+1) for 1 <= m <= w
 *   B_ij     = A_ij - mu on the band, 0 off it
 *   SYM      = 1 - ||B - B^T||_F / (2 ||B||_F)
 *
 * A band without variance (T = 0, hence B = 0) counts as translation
 * invariant and symmetric: TI = SYM = 1. A side without pairs counts as
 * monotone: MONO_s = 1. Sums are accumulated in double. */
#include "posemb/indicators.h"
#include "analysis/analysis.h"

#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* T below this share of the band's mean square is rounding, not variance:
 * the same band summed in a different order can leave ~1e-16 relative. */
#define DEGENERATE_REL 1e-12

static int diagonal_len(int n, int m) { return n - abs(m); }

/* Address of A[i][i+m] for the t-th entry of diagonal m. */
static const float *diagonal_at(const float *A, int n, int m, int t)
{
    int i = (m < 0 ? -m : 0) + t;
    return A + (size_t)i * (size_t)n + (size_t)(i + m);
}

static double diagonal_sum(const float *A, int n, int m)
{
    double s = 0.0;
    for (int t = 0; t < diagonal_len(n, m); t++) s += *diagonal_at(A, n, m, t);
    return s;
}

static double diagonal_mean(const float *A, int n, int m) { return diagonal_sum(A, n, m) / diagonal_len(n, m); }

/* Sum of (A_ij - c)^2 along diagonal m. */
static double diagonal_sq_dev(const float *A, int n, int m, double c)
{
    double s = 0.0;
    for (int t = 0; t < diagonal_len(n, m); t++) {
        double d = *diagonal_at(A, n, m, t) - c;
        s += d * d;
    }
    return s;
}

/* Sums over the band, which is the union of diagonals +-1 .. +-K. */
typedef struct band_sums {
    double count;  /* N */
    double mean;   /* mu */
    double total;  /* N T: squared deviations from mu */
    double within; /* N W: squared deviations from each diagonal's own mean */
    double square; /* sum of A_ij^2, the scale for the degeneracy test */
} band_sums;

static band_sums band_sums_compute(const float *A, int n, int K)
{
    band_sums b = {0};
    double sum = 0.0;
    for (int m = -K; m <= K; m++) {
        if (m == 0) continue;
        sum += diagonal_sum(A, n, m);
        b.count += diagonal_len(n, m);
    }
    b.mean = sum / b.count;
    for (int m = -K; m <= K; m++) {
        if (m == 0) continue;
        b.total += diagonal_sq_dev(A, n, m, b.mean);
        b.within += diagonal_sq_dev(A, n, m, diagonal_mean(A, n, m));
        b.square += diagonal_sq_dev(A, n, m, 0.0);
    }
    return b;
}

static int band_is_flat(const band_sums *b) { return b->total <= DEGENERATE_REL * b->square; }

static double translation_invariance(const band_sums *b)
{
    if (band_is_flat(b)) return 1.0;
    double ti = 1.0 - b->within / b->total;
    return ti < 0.0 ? 0.0 : ti; /* W <= T exactly; rounding may overshoot */
}

/* Pairs and inversions among the keys at[step * d], d = 1 .. len, which lie
 * at distance d from the query at[0] on one side of it. */
static void side_inversions(const float *at, ptrdiff_t step, int len, int64_t *pairs, int64_t *inv)
{
    for (int d = 1; d < len; d++) {
        float nearer = at[step * d];
        for (int e = d + 1; e <= len; e++) *inv += at[step * e] > nearer;
    }
    *pairs += (int64_t)len * (len - 1) / 2;
}

static double monotone_share(int64_t pairs, int64_t inv) { return pairs ? 1.0 - (double)inv / (double)pairs : 1.0; }

static void monotonicity(const float *A, int n, int K, posemb_indicators *out)
{
    int64_t pairs_fwd = 0, inv_fwd = 0, pairs_bwd = 0, inv_bwd = 0;
    for (int i = 0; i < n; i++) {
        const float *diag = A + (size_t)i * (size_t)n + (size_t)i;
        int len_fwd = n - 1 - i < K ? n - 1 - i : K, len_bwd = i < K ? i : K;
        side_inversions(diag, 1, len_fwd, &pairs_fwd, &inv_fwd);
        side_inversions(diag, -1, len_bwd, &pairs_bwd, &inv_bwd);
    }
    out->mono_fwd = monotone_share(pairs_fwd, inv_fwd);
    out->mono_bwd = monotone_share(pairs_bwd, inv_bwd);
    out->mono = 0.5 * (out->mono_fwd + out->mono_bwd);
}

/* Grows w while the profile keeps falling on both sides; f is computed
 * lazily, so a short window costs O(n w), not O(n^2). */
static int monotone_window(const float *A, int n)
{
    double fwd_prev = diagonal_mean(A, n, 0), bwd_prev = fwd_prev;
    int w = 0;
    while (w < n - 1) {
        double fwd = diagonal_mean(A, n, w + 1), bwd = diagonal_mean(A, n, -(w + 1));
        if (!(fwd < fwd_prev && bwd < bwd_prev)) break;
        fwd_prev = fwd;
        bwd_prev = bwd;
        w++;
    }
    return w;
}

/* Walks each pair of mirrored band entries (i, i+m), (i+m, i) once; each
 * pair contributes twice to ||B - B^T||^2. */
static double symmetry(const float *A, int n, int K, const band_sums *b)
{
    if (band_is_flat(b)) return 1.0;
    double diff2 = 0.0, norm2 = 0.0;
    for (int m = 1; m <= K; m++) {
        for (int t = 0; t < diagonal_len(n, m); t++) {
            double upper = *diagonal_at(A, n, m, t) - b->mean;
            double lower = *diagonal_at(A, n, -m, t) - b->mean;
            diff2 += 2.0 * (upper - lower) * (upper - lower);
            norm2 += upper * upper + lower * lower;
        }
    }
    double sym = 1.0 - sqrt(diff2) / (2.0 * sqrt(norm2));
    return sym < 0.0 ? 0.0 : sym; /* ||B - B^T|| <= 2 ||B|| exactly; rounding may overshoot */
}

int posemb_indicators_band(int K, int n) { return K < n - 1 ? K : n - 1; }

posemb_status posemb_indicators_compute(const float *A, int n, int K, posemb_indicators *out, posemb_error *err)
{
    if (!A || !out) return posemb_fail(err, POSEMB_EINVAL, "indicators: matrix or output is NULL");
    if (n < 2) return posemb_fail(err, POSEMB_EINVAL, "indicators: matrix size n = %d, need n >= 2", n);
    if (K < 1) return posemb_fail(err, POSEMB_EINVAL, "indicators: band width K = %d, need K >= 1", K);
    K = posemb_indicators_band(K, n);

    band_sums b = band_sums_compute(A, n, K);
    out->n = n;
    out->K = K;
    out->ti = translation_invariance(&b);
    monotonicity(A, n, K, out);
    out->window = monotone_window(A, n);
    out->sym = symmetry(A, n, K, &b);
    return POSEMB_OK;
}

/* Turns the upper triangle of S = P P^T into cosines. Rows are visited in
 * order and S[i][i] is overwritten last, so every squared norm S[j][j]
 * (j >= i) is still intact when row i needs it; no scratch is allocated. */
static void upper_to_cosine(float *S, int n)
{
    for (int i = 0; i < n; i++) {
        float *row = S + (size_t)i * (size_t)n;
        double sq_i = row[i];
        for (int j = i + 1; j < n; j++) {
            double sq_j = S[(size_t)j * (size_t)n + (size_t)j];
            double c = sq_i > 0.0 && sq_j > 0.0 ? row[j] / sqrt(sq_i * sq_j) : 0.0;
            row[j] = (float)(c > 1.0 ? 1.0 : c < -1.0 ? -1.0 : c); /* rounding can leave |c| a hair above 1 */
        }
        row[i] = sq_i > 0.0 ? 1.0f : 0.0f;
    }
}

static void mirror_upper(float *S, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) S[(size_t)j * (size_t)n + (size_t)i] = S[(size_t)i * (size_t)n + (size_t)j];
}

void posemb_similarity(const float *P, int n, int dim, int cosine, float *S)
{
    if (n <= 0) return;
    if (dim <= 0) { /* empty rows: every dot product (and cosine) is 0; BLAS rejects lda = 0 */
        memset(S, 0, (size_t)n * (size_t)n * sizeof *S);
        return;
    }
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, dim, 1.0f, P, dim, 0.0f, S, n);
    if (cosine) upper_to_cosine(S, n);
    mirror_upper(S, n);
}
