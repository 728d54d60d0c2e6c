/* Indicators (TI, MONO, window, SYM) and position similarity: closed-form
 * cases, a hand-worked 4x4 example, and random matrices against a slow
 * re-computation written straight from the formulas. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/error.h"
#include "posemb/indicators.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"
#include "core/error_internal.h"

static posemb_indicators compute_ok(const float *A, int n, int K)
{
    posemb_indicators ind;
    posemb_error err;
    posemb_error_clear(&err);
    assert_int_equal(posemb_indicators_compute(A, n, K, &ind, &err), POSEMB_OK);
    assert_int_equal(ind.n, n);
    assert_int_equal(ind.K, K < n - 1 ? K : n - 1);
    return ind;
}

static float *matrix_new(int n)
{
    float *A = calloc((size_t)n * (size_t)n, sizeof *A);
    assert_non_null(A);
    return A;
}

/* ---- slow reference, from the formulas ---------------------------------- */

static int in_band(int i, int j, int K) { return abs(j - i) >= 1 && abs(j - i) <= K; }

typedef struct reference {
    double ti, mono_fwd, mono_bwd, sym;
    int window;
} reference;

/* W from explicit per-diagonal lists, T from a scan of the whole matrix. */
static double ref_ti(const float *A, int n, int K)
{
    double sum = 0.0, count = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (in_band(i, j, K)) {
                sum += A[i * n + j];
                count += 1.0;
            }
    double mu = sum / count, total = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (in_band(i, j, K)) total += (A[i * n + j] - mu) * (A[i * n + j] - mu);

    double within = 0.0;
    double *list = malloc((size_t)n * sizeof *list);
    assert_non_null(list);
    for (int m = -K; m <= K; m++) {
        if (m == 0) continue;
        int len = 0;
        for (int i = 0; i < n; i++)
            if (i + m >= 0 && i + m < n) list[len++] = A[i * n + i + m];
        double mean = 0.0;
        for (int t = 0; t < len; t++) mean += list[t] / len;
        for (int t = 0; t < len; t++) within += (list[t] - mean) * (list[t] - mean);
    }
    free(list);
    return 1.0 - within / total;
}

/* All ordered pairs (j, j') of the row, filtered by the definition. */
static void ref_mono(const float *A, int n, int K, double *fwd, double *bwd)
{
    double pairs[2] = {0, 0}, inv[2] = {0, 0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int jp = 0; jp < n; jp++) {
                if (!in_band(i, j, K) || !in_band(i, jp, K)) continue;
                if ((j > i) != (jp > i) || abs(jp - i) <= abs(j - i)) continue;
                int side = j > i ? 0 : 1;
                pairs[side] += 1.0;
                if (A[i * n + jp] > A[i * n + j]) inv[side] += 1.0;
            }
    *fwd = pairs[0] > 0 ? 1.0 - inv[0] / pairs[0] : 1.0;
    *bwd = pairs[1] > 0 ? 1.0 - inv[1] / pairs[1] : 1.0;
}

/* The whole profile f at once, by bucketing every entry by its offset. */
static int ref_window(const float *A, int n)
{
    double *sum = calloc((size_t)(2 * n - 1), sizeof *sum), *cnt = calloc((size_t)(2 * n - 1), sizeof *cnt);
    assert_non_null(sum);
    assert_non_null(cnt);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            sum[j - i + n - 1] += A[i * n + j];
            cnt[j - i + n - 1] += 1.0;
        }
    double *f = sum + n - 1; /* f[m], m in [-(n-1), n-1] */
    for (int m = -(n - 1); m <= n - 1; m++) f[m] /= cnt[m + n - 1];
    int w = 0;
    while (w + 1 <= n - 1 && f[w + 1] < f[w] && f[-(w + 1)] < f[-w]) w++;
    free(sum);
    free(cnt);
    return w;
}

/* B as a full dense matrix, then the two Frobenius norms. */
static double ref_sym(const float *A, int n, int K)
{
    double sum = 0.0, count = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (in_band(i, j, K)) {
                sum += A[i * n + j];
                count += 1.0;
            }
    double *B = calloc((size_t)n * (size_t)n, sizeof *B);
    assert_non_null(B);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (in_band(i, j, K)) B[i * n + j] = A[i * n + j] - sum / count;
    double d2 = 0.0, b2 = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            d2 += (B[i * n + j] - B[j * n + i]) * (B[i * n + j] - B[j * n + i]);
            b2 += B[i * n + j] * B[i * n + j];
        }
    free(B);
    return 1.0 - sqrt(d2) / (2.0 * sqrt(b2));
}

static reference reference_compute(const float *A, int n, int K)
{
    if (K > n - 1) K = n - 1;
    reference r;
    r.ti = ref_ti(A, n, K);
    ref_mono(A, n, K, &r.mono_fwd, &r.mono_bwd);
    r.window = ref_window(A, n);
    r.sym = ref_sym(A, n, K);
    return r;
}

/* ---- closed-form cases -------------------------------------------------- */

/* A[i][j] = g(j - i), g(m) != g(-m): each diagonal is constant, so W = 0
 * and TI = 1 exactly; B is not symmetric, so SYM < 1. */
static void test_toeplitz(void **state)
{
    const int n = 24;
    float *A = matrix_new(n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int m = j - i;
            A[i * n + j] = (float)(m > 0 ? 1.0 / m : m < 0 ? 0.3 * m : 5.0);
        }
    for (int K = 1; K <= n; K += 5) {
        posemb_indicators ind = compute_ok(A, n, K);
        TU_CLOSE(ind.ti, 1.0, 1e-9, 0, "ti", K);
        assert_true(ind.sym < 1.0 - 1e-3);
        reference r = reference_compute(A, n, K);
        TU_CLOSE(ind.sym, r.sym, 1e-9, 0, "sym", K);
    }
    /* g = 1/m forward falls, g = 0.3 m backward falls: window n - 1, MONO 1 */
    posemb_indicators ind = compute_ok(A, n, 8);
    assert_int_equal(ind.window, n - 1);
    TU_CLOSE(ind.mono, 1.0, 0, 0, "mono", 0);
    free(A);
}

/* A symmetric matrix: B = B^T exactly, SYM = 1. An antisymmetric one
 * (A^T = -A, zero diagonal) has band mean 0, so B is antisymmetric:
 * ||B - B^T|| = ||2B|| = 2 ||B|| and SYM = 1 - 2||B|| / (2||B||) = 0. */
static void test_symmetry_extremes(void **state)
{
    const int n = 30;
    float *S = matrix_new(n), *Q = matrix_new(n);
    posemb_rng rng;
    posemb_rng_seed(&rng, 11, 0);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            float x = (float)posemb_rng_normal(&rng), y = (float)posemb_rng_normal(&rng);
            S[i * n + j] = S[j * n + i] = x;
            Q[i * n + j] = i == j ? 0.0f : y;
            Q[j * n + i] = -Q[i * n + j];
        }
    for (int K = 1; K < n; K += 7) {
        TU_CLOSE(compute_ok(S, n, K).sym, 1.0, 1e-12, 0, "sym(symmetric)", K);
        TU_CLOSE(compute_ok(Q, n, K).sym, 0.0, 1e-9, 0, "sym(antisymmetric)", K);
    }
    free(S);
    free(Q);
}

/* A[i][j] = -|i - j| + c_i: every row falls strictly with distance on both
 * sides (c_i shifts a whole row, so no pair changes order): MONO = 1. The
 * profile f(m) = -|m| + (mean of c_i over the rows of diagonal m) falls by
 * at least 1 - 2 max|c| > 0 per step: window = n - 1. With c = 0, A is
 * Toeplitz: TI = 1. */
static void test_decreasing_profile(void **state)
{
    const int n = 20;
    float *A = matrix_new(n);
    for (int shifted = 0; shifted <= 1; shifted++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) A[i * n + j] = (float)(-abs(i - j) + (shifted ? 0.4 * sin(1.7 * i) : 0.0));
        for (int K = 1; K <= n + 3; K += 4) {
            posemb_indicators ind = compute_ok(A, n, K);
            TU_CLOSE(ind.mono, 1.0, 0, 0, "mono", K);
            TU_CLOSE(ind.mono_fwd, 1.0, 0, 0, "mono_fwd", K);
            TU_CLOSE(ind.mono_bwd, 1.0, 0, 0, "mono_bwd", K);
            assert_int_equal(ind.window, n - 1);
            if (!shifted) TU_CLOSE(ind.ti, 1.0, 1e-12, 0, "ti", K);
            if (shifted && K > 1) assert_true(ind.ti < 1.0 - 1e-3);
            if (!shifted) TU_CLOSE(ind.sym, 1.0, 1e-12, 0, "sym", K);
        }
    }
    /* the reversed profile: every pair is an inversion, f rises at once */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) A[i * n + j] = (float)abs(i - j);
    posemb_indicators ind = compute_ok(A, n, 6);
    TU_CLOSE(ind.mono, 0.0, 0, 0, "mono(reversed)", 0);
    TU_CLOSE(ind.mono_fwd, 0.0, 0, 0, "mono_fwd(reversed)", 0);
    TU_CLOSE(ind.mono_bwd, 0.0, 0, 0, "mono_bwd(reversed)", 0);
    assert_int_equal(ind.window, 0);
    TU_CLOSE(ind.ti, 1.0, 1e-12, 0, "ti(reversed)", 0);
    free(A);
}

/* A constant band has no variance (TI = SYM = 1 by convention), only ties
 * (no strict inversion: MONO = 1) and a flat profile (window 0). */
static void test_constant(void **state)
{
    const int n = 9;
    float *A = matrix_new(n);
    for (int t = 0; t < n * n; t++) A[t] = 0.7f;
    for (int K = 1; K < n; K += 3) {
        posemb_indicators ind = compute_ok(A, n, K);
        TU_CLOSE(ind.ti, 1.0, 0, 0, "ti", K);
        TU_CLOSE(ind.sym, 1.0, 0, 0, "sym", K);
        TU_CLOSE(ind.mono, 1.0, 0, 0, "mono", K);
        assert_int_equal(ind.window, 0);
    }
    memset(A, 0, (size_t)n * n * sizeof *A); /* all zeros: 0 / 0 must not leak out */
    posemb_indicators ind = compute_ok(A, n, 3);
    TU_CLOSE(ind.ti, 1.0, 0, 0, "ti(zero)", 0);
    TU_CLOSE(ind.sym, 1.0, 0, 0, "sym(zero)", 0);
    free(A);
}

/* Hand-worked, n = 4, K = 2 (the corners A[0][3] = 7, A[3][0] = -5 lie
 * outside the band and must not count; the diagonal is 9):
 *
 *        [  9  2  3  7 ]     diagonal m=+1: 2 5 5  mean 4    m=-1: 2 3 1  mean 2
 *    A = [  2  9  5  1 ]              m=+2: 3 1    mean 2    m=-2: 4 4    mean 4
 *        [  4  3  9  5 ]
 *        [ -5  4  1  9 ]     band: N = 10, sum 30, mu = 3
 *
 * T:  m=+1 (-1)^2+2^2+2^2 = 9, m=+2 0+4 = 4, m=-1 1+0+4 = 5, m=-2 1+1 = 2
 *     -> 20 / 10 = 2
 * W:  m=+1 4+1+1 = 6, m=+2 1+1 = 2, m=-1 0+1+1 = 2, m=-2 0 -> 10 / 10 = 1
 * TI = 1 - 1/2 = 0.5
 *
 * MONO fwd: row 0 (2, 3): 3 > 2 inversion; row 1 (5, 1): none;
 *           row 2 has one key -> 2 pairs, 1 inversion, mono_fwd = 0.5
 * MONO bwd: row 2 (A21 = 3, A20 = 4): inversion; row 3 (A32 = 1, A31 = 4):
 *           inversion (A30 is at distance 3 > K) -> 2 pairs, 2 inversions,
 *           mono_bwd = 0; MONO = 0.25
 *
 * SYM: B = A - 3 on the band; mirrored pairs (B_ij, B_ji):
 *      (0,1) (-1,-1) d 0, (1,2) (2,0) d 2, (2,3) (2,-2) d 4,
 *      (0,2) (0,1) d -1, (1,3) (-2,1) d -3
 *      ||B - B^T||^2 = 2 (0 + 4 + 16 + 1 + 9) = 60, ||B||^2 = N T = 20
 *      SYM = 1 - sqrt(60) / (2 sqrt(20)) = 1 - sqrt(3)/2 = 0.1339746
 *
 * window: f(0) = 9; f(1) = 4 < 9 and f(-1) = 2 < 9; f(2) = 2 < 4 but
 *         f(-2) = 4 > 2 -> window = 1 */
static void test_hand_worked(void **state)
{
    const float A[16] = {9, 2, 3, 7, 2, 9, 5, 1, 4, 3, 9, 5, -5, 4, 1, 9};
    posemb_indicators ind = compute_ok(A, 4, 2);
    TU_CLOSE(ind.ti, 0.5, 1e-12, 0, "ti", 0);
    TU_CLOSE(ind.mono_fwd, 0.5, 0, 0, "mono_fwd", 0);
    TU_CLOSE(ind.mono_bwd, 0.0, 0, 0, "mono_bwd", 0);
    TU_CLOSE(ind.mono, 0.25, 0, 0, "mono", 0);
    TU_CLOSE(ind.sym, 1.0 - sqrt(3.0) / 2.0, 1e-12, 0, "sym", 0);
    assert_int_equal(ind.window, 1);
}

/* ---- random matrices against the slow reference -------------------------- */

/* A mix of an offset profile (drives TI), a falling trend (drives MONO and
 * the window) and noise, in random proportions. */
static void random_matrix(posemb_rng *rng, int n, float *A)
{
    double profile = posemb_rng_uniform(rng), trend = posemb_rng_uniform(rng), noise = posemb_rng_uniform(rng);
    double *g = malloc((size_t)(2 * n - 1) * sizeof *g);
    assert_non_null(g);
    for (int m = 0; m < 2 * n - 1; m++) g[m] = posemb_rng_normal(rng);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            A[i * n + j] = (float)(profile * g[j - i + n - 1] - trend * abs(i - j) + noise * posemb_rng_normal(rng));
    free(g);
}

static void test_random_against_reference(void **state)
{
    const int sizes[] = {2, 3, 5, 17, 40, 64};
    const int widths[] = {1, 2, 3, 8, 100};
    int checked = 0;
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (size_t b = 0; b < sizeof widths / sizeof *widths; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                int n = sizes[a], K = widths[b], id = (int)(a * 100 + b * 10 + seed);
                posemb_rng rng;
                posemb_rng_seed(&rng, seed, (uint64_t)(n * 1000 + K));
                float *A = matrix_new(n);
                random_matrix(&rng, n, A);
                posemb_indicators ind = compute_ok(A, n, K);
                reference r = reference_compute(A, n, K);
                TU_CLOSE(ind.ti, r.ti, 1e-9, 0, "ti", id);
                TU_CLOSE(ind.mono_fwd, r.mono_fwd, 1e-12, 0, "mono_fwd", id);
                TU_CLOSE(ind.mono_bwd, r.mono_bwd, 1e-12, 0, "mono_bwd", id);
                TU_CLOSE(ind.mono, 0.5 * (r.mono_fwd + r.mono_bwd), 1e-12, 0, "mono", id);
                assert_int_equal(ind.window, r.window);
                TU_CLOSE(ind.sym, r.sym, 1e-9, 0, "sym", id);
                assert_true(ind.ti >= 0.0 && ind.ti <= 1.0 && ind.sym >= 0.0 && ind.sym <= 1.0);
                free(A);
                checked++;
            }
    assert_int_equal(checked, 90);
}

/* ---- position similarity ------------------------------------------------ */

static void test_similarity_against_loop(void **state)
{
    const int n = 37, dim = 13;
    float *P = malloc((size_t)n * dim * sizeof *P), *S = matrix_new(n);
    assert_non_null(P);
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 0);
    posemb_rng_fill_normal(&rng, P, (long)n * dim, 1.0f);
    memset(P + 4 * dim, 0, (size_t)dim * sizeof *P); /* row 4 is zero */

    posemb_similarity(P, n, dim, 0, S);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double dot = 0.0;
            for (int k = 0; k < dim; k++) dot += (double)P[i * dim + k] * P[j * dim + k];
            TU_CLOSE(S[i * n + j], dot, 1e-5, 1e-5, "dot", i * n + j);
            assert_true(S[i * n + j] == S[j * n + i]);
        }

    posemb_similarity(P, n, dim, 1, S);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double dot = 0.0, ni = 0.0, nj = 0.0;
            for (int k = 0; k < dim; k++) {
                dot += (double)P[i * dim + k] * P[j * dim + k];
                ni += (double)P[i * dim + k] * P[i * dim + k];
                nj += (double)P[j * dim + k] * P[j * dim + k];
            }
            double cosine = ni > 0 && nj > 0 ? dot / sqrt(ni * nj) : 0.0;
            TU_CLOSE(S[i * n + j], cosine, 1e-5, 0, "cosine", i * n + j);
            assert_true(S[i * n + j] == S[j * n + i]);
        }
    for (int i = 0; i < n; i++) TU_CLOSE(S[i * n + i], i == 4 ? 0.0 : 1.0, 0, 0, "cosine diagonal", i);

    posemb_similarity(P, n, 0, 1, S); /* no dimensions: all zero */
    for (int t = 0; t < n * n; t++) TU_CLOSE(S[t], 0.0, 0, 0, "dim 0", t);
    free(P);
    free(S);
}

/* Sinusoidal APE, P_x[2k] = sin(w_k x), P_x[2k+1] = cos(w_k x): the dot
 * product sum_k cos(w_k (x - y)) depends on the offset only and is even in
 * it, so S is a symmetric Toeplitz matrix: TI = 1 and SYM = 1 up to float
 * rounding. */
static void test_similarity_sinusoidal(void **state)
{
    const int n = 128, D = 64;
    float *P = malloc((size_t)n * D * sizeof *P), *S = matrix_new(n);
    assert_non_null(P);
    for (int x = 0; x < n; x++)
        for (int k = 0; k < D / 2; k++) {
            double w = pow(10000.0, -2.0 * k / D);
            P[x * D + 2 * k] = (float)sin(w * x);
            P[x * D + 2 * k + 1] = (float)cos(w * x);
        }
    for (int cosine = 0; cosine <= 1; cosine++) {
        posemb_similarity(P, n, D, cosine, S);
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) TU_CLOSE(S[i * n + j], S[j - i], 1e-4, 0, "S[i][i+m] vs S[0][m]", i * n + j);
        TU_CLOSE(S[0], cosine ? 1.0 : D / 2, 1e-5, 1e-6, "S[0][0]", cosine);
        for (int K = 8; K <= 64; K *= 2) {
            posemb_indicators ind = compute_ok(S, n, K);
            TU_CLOSE(ind.ti, 1.0, 1e-5, 0, "ti(sinusoidal)", K);
            TU_CLOSE(ind.sym, 1.0, 1e-12, 0, "sym(sinusoidal)", K);
        }
    }
    free(P);
    free(S);
}

/* ---- errors ------------------------------------------------------------- */

static void test_errors(void **state)
{
    float A[16] = {0};
    posemb_indicators ind;
    posemb_error err;
    posemb_error_clear(&err);
    assert_int_equal(posemb_indicators_compute(A, 1, 1, &ind, &err), POSEMB_EINVAL);
    assert_int_equal(err.code, POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "n = 1"));
    posemb_error_clear(&err);
    assert_int_equal(posemb_indicators_compute(A, 4, 0, &ind, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "K = 0"));
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(posemb_indicators_compute(A, 4, -2, &ind, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_indicators_compute(A, 0, 1, &ind, NULL), POSEMB_EINVAL);
    assert_int_equal(posemb_indicators_compute(NULL, 4, 1, &ind, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_indicators_compute(A, 4, 1, NULL, &err), POSEMB_EINVAL);
    /* K beyond the matrix is clamped, not an error */
    assert_int_equal(posemb_indicators_compute(A, 4, 99, &ind, &err), POSEMB_OK);
    assert_int_equal(ind.K, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toeplitz),
        cmocka_unit_test(test_symmetry_extremes),
        cmocka_unit_test(test_decreasing_profile),
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_hand_worked),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_similarity_against_loop),
        cmocka_unit_test(test_similarity_sinusoidal),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
