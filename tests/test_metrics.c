/* Task metrics and the Welch t-test against hand-worked examples and
 * values from scipy 1.10.1 (Debian bookworm's python3-scipy). */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/metrics.h"
#include "eval/squad_eval.h"
#include "eval/stats.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof(a)[0]))

static const double PI = 3.14159265358979323846;

/* ------------------------------------------------------ classification */

/* pred vs gold, position by position:
 *   i     0  1  2  3  4  5  6  7
 *   pred  1  1  0  1  0  0  1  0
 *   gold  1  0  0  1  1  0  1  1
 *         TP FP TN TP FN TN TP FN   ->  TP 3, TN 2, FP 1, FN 2 */
static const int32_t PRED[8] = {1, 1, 0, 1, 0, 0, 1, 0};
static const int32_t GOLD[8] = {1, 0, 0, 1, 1, 0, 1, 1};

static void test_accuracy(void **state)
{
    (void)state;
    TU_CLOSE(posemb_accuracy(PRED, GOLD, 8), 5.0 / 8, 1e-15, 0, "accuracy", 0);
    TU_CLOSE(posemb_accuracy(PRED, PRED, 8), 1.0, 0, 0, "accuracy self", 0);
    assert_true(isnan(posemb_accuracy(PRED, GOLD, 0)));
}

static void test_f1_binary(void **state)
{
    (void)state;
    /* 2 TP / (2 TP + FP + FN) = 6 / (6 + 1 + 2) */
    TU_CLOSE(posemb_f1_binary(PRED, GOLD, 8), 6.0 / 9, 1e-15, 0, "f1", 0);
    /* no positive anywhere: 0/0, which sklearn's zero_division makes 0 */
    const int32_t zeros[4] = {0, 0, 0, 0};
    TU_CLOSE(posemb_f1_binary(zeros, zeros, 4), 0.0, 0, 0, "f1 all negative", 0);
    /* only class 1 is positive: label 2 counts as negative */
    const int32_t p3[3] = {1, 2, 2}, g3[3] = {1, 1, 2};
    TU_CLOSE(posemb_f1_binary(p3, g3, 3), 2.0 / 3, 1e-15, 0, "f1 other labels", 0); /* TP 1, FN 1 */
}

static void test_matthews(void **state)
{
    (void)state;
    /* (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))
     *   = (3*2 - 1*2) / sqrt(4 * 5 * 3 * 4) = 4 / sqrt(240) */
    TU_CLOSE(posemb_matthews(PRED, GOLD, 8, 2), 4.0 / sqrt(240.0), 1e-15, 0, "mcc", 0);
    TU_CLOSE(posemb_matthews(GOLD, GOLD, 8, 2), 1.0, 1e-15, 0, "mcc perfect", 0);
    int32_t flipped[8];
    for (int i = 0; i < 8; i++) flipped[i] = 1 - GOLD[i];
    TU_CLOSE(posemb_matthews(flipped, GOLD, 8, 2), -1.0, 1e-15, 0, "mcc inverse", 0);
    /* a constant prediction: a denominator is 0, sklearn returns 0 */
    const int32_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    TU_CLOSE(posemb_matthews(ones, GOLD, 8, 2), 0.0, 0, 0, "mcc constant", 0);
    /* three classes: gold 0 1 2 0 1 2, pred 0 2 1 0 0 2; correct 3 of n 6,
     * true counts t = (2, 2, 2), predicted p = (3, 1, 2):
     * cov(t,p) = 3*6 - (6 + 2 + 4) = 6, cov(p,p) = 36 - 14 = 22,
     * cov(t,t) = 36 - 12 = 24, MCC = 6 / sqrt(24 * 22) */
    const int32_t g6[6] = {0, 1, 2, 0, 1, 2}, p6[6] = {0, 2, 1, 0, 0, 2};
    TU_CLOSE(posemb_matthews(p6, g6, 6, 3), 6.0 / sqrt(528.0), 1e-15, 0, "mcc 3 classes", 0);
    /* a label outside [0, n_classes) */
    assert_true(isnan(posemb_matthews(p6, g6, 6, 2)));
    assert_true(isnan(posemb_matthews(p6, g6, 0, 3)));
}

/* ---------------------------------------------------------- regression */

static void test_pearson(void **state)
{
    (void)state;
    /* x - 3 = (-2 -1 0 1 2), y - 4 = (-2 0 1 0 1): sxy 6, sxx 10, syy 6,
     * r = 6 / sqrt(60); scipy.stats.pearsonr gives 0.7745966692414835. */
    const float x[5] = {1, 2, 3, 4, 5}, y[5] = {2, 4, 5, 4, 5};
    TU_CLOSE(posemb_pearson(x, y, 5), 6.0 / sqrt(60.0), 1e-15, 0, "pearson", 0);
    TU_CLOSE(posemb_pearson(x, y, 5), 0.7745966692414835, 1e-15, 0, "pearson scipy", 0);
    TU_CLOSE(posemb_pearson(x, x, 5), 1.0, 1e-15, 0, "pearson self", 0);
    const float c[5] = {2, 2, 2, 2, 2};
    assert_true(isnan(posemb_pearson(x, c, 5))); /* constant input: scipy gives nan */
    assert_true(isnan(posemb_pearson(x, y, 1)));
    const float with_nan[5] = {1, 2, NAN, 4, 5};
    assert_true(isnan(posemb_pearson(with_nan, y, 5)));
}

static void test_spearman_ties(void **state)
{
    (void)state;
    /* x = 10 20 20 30 40 -> ranks 1 2.5 2.5 4 5 (the tie shares (2+3)/2)
     * y =  1  3  2  2  5 -> ranks 1 4 2.5 2.5 5
     * centred (mean 3): rx - 3 = (-2 -.5 -.5 1 2), ry - 3 = (-2 1 -.5 -.5 2)
     * sxy = 4 - .5 + .25 - .5 + 4 = 7.25, sxx = syy = 9.5, rho = 7.25 / 9.5.
     * scipy.stats.spearmanr gives 0.7631578947368421. */
    const float x[5] = {10, 20, 20, 30, 40}, y[5] = {1, 3, 2, 2, 5};
    double rank[5];
    posemb_rank_average(y, 5, rank);
    const double want_rank[5] = {1, 4, 2.5, 2.5, 5};
    for (int i = 0; i < 5; i++) TU_CLOSE(rank[i], want_rank[i], 0, 0, "rank", i);
    TU_CLOSE(posemb_spearman(x, y, 5), 7.25 / 9.5, 1e-15, 0, "spearman", 0);
    TU_CLOSE(posemb_spearman(x, y, 5), 0.7631578947368421, 1e-15, 0, "spearman scipy", 0);
    /* monotone but not linear: rho 1, r < 1 */
    const float sq[5] = {1, 4, 9, 16, 25}, lin[5] = {1, 2, 3, 4, 5};
    TU_CLOSE(posemb_spearman(lin, sq, 5), 1.0, 1e-15, 0, "spearman monotone", 0);
    assert_true(posemb_pearson(lin, sq, 5) < 0.99);
    const float all_tied[4] = {7, 7, 7, 7}, four[4] = {1, 2, 3, 4};
    assert_true(isnan(posemb_spearman(all_tied, four, 4)));
}

static void test_metric_names(void **state)
{
    (void)state;
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_ACCURACY), "accuracy");
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_F1), "f1");
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_MCC), "mcc");
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_PEARSON), "pearson");
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_SPEARMAN), "spearman");
    assert_string_equal(posemb_metric_name(POSEMB_METRIC_COUNT), "?");
}

/* --------------------------------------------------------------- SQuAD */

static void expect_normal(const char *in, const char *want)
{
    char *got = posemb_squad_normalize(in);
    assert_non_null(got);
    if (strcmp(got, want) != 0) print_error("normalize(\"%s\") = \"%s\", expected \"%s\"\n", in, got, want);
    assert_string_equal(got, want);
    free(got);
}

/* Expected values are the output of evaluate-v1.1.py's normalize_answer
 * under Python 3.11 (str.lower, string.punctuation, re's Unicode \b). */
static void test_squad_normalize(void **state)
{
    (void)state;
    expect_normal("The cat.", "cat");                               /* case, article, punctuation */
    expect_normal("  A  quick,   brown fox!! ", "quick brown fox"); /* whitespace collapsed */
    expect_normal("an apple and the pear", "apple and pear");
    expect_normal("theater", "theater"); /* articles only as whole words */
    expect_normal("Anne then thee", "anne then thee");
    expect_normal("THE END", "end");
    expect_normal("don't", "dont");
    expect_normal("the_cat", "thecat"); /* "_" is in string.punctuation */
    expect_normal("a-b", "ab");         /* punctuation goes before articles */
    expect_normal("the", "");
    expect_normal("", "");
    expect_normal("\xc3\x89"
                  "COLE",
                  "\xc3\xa9"
                  "cole");                                                                  /* ÉCOLE -> école */
    expect_normal("\xce\x9f\xce\x94\xce\x9f\xce\xa3.", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82"); /* ΟΔΟΣ. -> οδος, final ς */
    expect_normal("a\xc2\xa0"
                  "b",
                  "b"); /* NBSP is whitespace */
    expect_normal("2\xe2\x80\x94"
                  "3",
                  "2\xe2\x80\x94"
                  "3");                                   /* an em dash is not ASCII punctuation */
    expect_normal("\xc4\xb0stanbul", "i\xcc\x87stanbul"); /* U+0130 -> i + U+0307 */
    expect_normal("\xc3\x91"
                  "and\xc3\xba, the  \xe2\x80\x83 bird\xe3\x80\x80"
                  "a",
                  "\xc3\xb1"
                  "and\xc3\xba bird");                 /* Ñandú, the <EM SPACE> bird<IDEOGRAPHIC SPACE>a */
    expect_normal("x\xe2\x80\xa8the\xc2\x85y", "x y"); /* U+2028 and U+0085 split words */
}

static void test_squad_exact_match(void **state)
{
    (void)state;
    const char *cat[1] = {"cat"};
    assert_true(posemb_squad_exact_match("The cat.", cat, 1) == 1.0);
    assert_true(posemb_squad_exact_match("cats", cat, 1) == 0.0);
    const char *broncos[3] = {"Denver Broncos", "Broncos", "the Denver Broncos"};
    assert_true(posemb_squad_exact_match("broncos!", broncos, 3) == 1.0); /* max over golds */
    assert_true(posemb_squad_exact_match("Denver", broncos, 3) == 0.0);
    assert_true(posemb_squad_exact_match("x", broncos, 0) == 0.0);
    /* two answers that normalise to nothing are equal */
    const char *a[1] = {"a"};
    assert_true(posemb_squad_exact_match("The", a, 1) == 1.0);
}

static void test_squad_f1(void **state)
{
    (void)state;
    /* "big red dog" vs "red dog barked": common 2, P = R = 2/3, F1 = 2/3 */
    const char *dog[1] = {"a red dog barked"};
    TU_CLOSE(posemb_squad_f1("the big red dog", dog, 1), 2.0 / 3, 1e-15, 0, "f1 partial", 0);
    /* bag of tokens: "dog dog cat" & "dog cat cat" = {dog: 1, cat: 1}: P = R = 2/3 */
    const char *cats[1] = {"dog cat cat"};
    TU_CLOSE(posemb_squad_f1("dog dog cat", cats, 1), 2.0 / 3, 1e-15, 0, "f1 bag", 0);
    /* "dog dog dog" vs "dog": common 1, P = 1/3, R = 1, F1 = 2 (1/3) / (4/3) = 1/2 */
    const char *one[1] = {"Dog."};
    TU_CLOSE(posemb_squad_f1("dog dog dog", one, 1), 0.5, 1e-15, 0, "f1 repeats", 0);
    /* max over golds: vs "red dog barked", P = 1, R = 2/3, F1 = 0.8 */
    const char *two[2] = {"cat", "red dog barked"};
    TU_CLOSE(posemb_squad_f1("red dog", two, 2), 0.8, 1e-15, 0, "f1 max", 0);
    TU_CLOSE(posemb_squad_f1("The cat.", (const char *[]){"cat"}, 1), 1.0, 0, 0, "f1 exact", 0);
    /* two empty answers: EM 1 but F1 0 in v1.1 (no common token) */
    const char *a[1] = {"a"};
    TU_CLOSE(posemb_squad_f1("the", a, 1), 0.0, 0, 0, "f1 empty", 0);
    TU_CLOSE(posemb_squad_f1("x", a, 0), 0.0, 0, 0, "f1 no golds", 0);
}

/* ---------------------------------------------------------- statistics */

static void test_betainc(void **state)
{
    (void)state;
    /* I_x(2, 3) = sum_{j=2..4} C(4,j) x^j (1-x)^(4-j); at 0.4:
     * 6 .16 .36 + 4 .064 .6 + .0256 = .5248 */
    TU_CLOSE(posemb_betainc(2, 3, 0.4), 0.5248, 1e-15, 1e-14, "I_0.4(2,3)", 0);
    /* I_x(1/2, 1/2) = (2/pi) asin(sqrt(x)) */
    TU_CLOSE(posemb_betainc(0.5, 0.5, 0.3), 2 / PI * asin(sqrt(0.3)), 0, 1e-13, "I_0.3(.5,.5)", 0);
    /* scipy.special.betainc */
    TU_CLOSE(posemb_betainc(10, 0.5, 0.99), 0.6579281751567843, 0, 1e-13, "I_0.99(10,.5)", 0);
    TU_CLOSE(posemb_betainc(5, 5, 0.5), 0.5, 0, 1e-13, "I_0.5(5,5)", 0);
    TU_CLOSE(posemb_betainc(3, 4, 0), 0, 0, 0, "I_0", 0);
    TU_CLOSE(posemb_betainc(3, 4, 1), 1, 0, 0, "I_1", 0);
    assert_true(isnan(posemb_betainc(0, 1, 0.5)));
    assert_true(isnan(posemb_betainc(1, 1, 1.5)));
    assert_true(isnan(posemb_betainc(1, 1, NAN)));
}

static void test_student_t(void **state)
{
    (void)state;
    /* df = 1 (Cauchy): p = 1 - (2/pi) atan|t|; df = 2: p = 1 - |t| / sqrt(2 + t^2) */
    const double ts[5] = {0.1, 1, 2.5, 10, 300};
    for (int i = 0; i < 5; i++) {
        double t = ts[i];
        TU_CLOSE(posemb_student_t_p2(t, 1), 1 - 2 / PI * atan(t), 1e-16, 1e-12, "t df1", i);
        TU_CLOSE(posemb_student_t_p2(-t, 2), 1 - t / sqrt(2 + t * t), 1e-16, 1e-12, "t df2", i);
    }
    /* 2 * scipy.stats.t.sf(t, df) */
    TU_CLOSE(posemb_student_t_p2(2.0, 3), 0.1393259685588431, 0, 1e-12, "t(2, 3)", 0);
    TU_CLOSE(posemb_student_t_p2(1e-3, 7), 0.9992300172449988, 0, 1e-12, "t(1e-3, 7)", 0);
    TU_CLOSE(posemb_student_t_p2(40, 2.5), 0.00014195634290493385, 0, 1e-12, "t(40, 2.5)", 0);
    TU_CLOSE(posemb_student_t_p2(3, 1000), 0.0027667090442381878, 0, 1e-10, "t(3, 1000)", 0);
    TU_CLOSE(posemb_student_t_p2(0, 5), 1.0, 0, 0, "t = 0", 0);
    TU_CLOSE(posemb_student_t_p2(INFINITY, 5), 0.0, 0, 0, "t = inf", 0);
    assert_true(isnan(posemb_student_t_p2(1, 0)));
    assert_true(isnan(posemb_student_t_p2(NAN, 3)));
}

/* Student's t quantile against the closed forms of df = 1 (Cauchy: tan(pi (q - 1/2))) and df = 2
 * ((2q - 1) / sqrt(2 q (1 - q))), and as the inverse of the two-sided p at a Welch-like df. */
static void test_student_t_quantile(void **state)
{
    (void)state;
    const double qs[5] = {0.6, 0.8, 0.9, 0.975, 0.999};
    for (int i = 0; i < 5; i++) {
        double q = qs[i];
        TU_CLOSE(posemb_student_t_quantile(q, 1), tan(PI * (q - 0.5)), 0, 1e-11, "q df1", i);
        TU_CLOSE(posemb_student_t_quantile(q, 2), (2 * q - 1) / sqrt(2 * q * (1 - q)), 0, 1e-11, "q df2", i);
        TU_CLOSE(posemb_student_t_quantile(1 - q, 2), -(2 * q - 1) / sqrt(2 * q * (1 - q)), 0, 1e-11, "odd", i);
        double t = posemb_student_t_quantile(q, 6.339157939115634);
        TU_CLOSE(posemb_student_t_p2(t, 6.339157939115634), 2 * (1 - q), 0, 1e-11, "p2 of q", i);
    }
    /* the familiar table value t_0.975 with 10 degrees of freedom, 2.228 */
    TU_CLOSE(posemb_student_t_quantile(0.975, 10), 2.228, 5e-4, 0, "t 0.975 df10", 0);
    TU_CLOSE(posemb_student_t_quantile(0.5, 3), 0, 0, 0, "median", 0);
    assert_true(isnan(posemb_student_t_quantile(1, 3)));
    assert_true(isnan(posemb_student_t_quantile(0, 3)));
    assert_true(isnan(posemb_student_t_quantile(0.9, 0)));
}

/* One-sample and Welch intervals: x = {1, 2, 4} has mean 7/3, sd sqrt(7/3), se sqrt(7) / 3 on 2 degrees of
 * freedom, so t = sqrt(7), p = 1 - sqrt(7) / 3 (df 2's closed form) and the interval and the minimum detectable
 * effect follow from df 2's quantiles, t_0.975 = 0.95 / sqrt(0.04875), t_0.8 = 0.6 / sqrt(0.32). */
static void test_t_intervals(void **state)
{
    (void)state;
    const double x[3] = {1, 2, 4}, se = sqrt(7.0) / 3, t975 = 0.95 / sqrt(0.04875), t80 = 0.6 / sqrt(0.32);
    posemb_t_ci r = posemb_t_ci_one_sample(x, 3);
    TU_CLOSE(r.effect, 7.0 / 3, 0, 1e-15, "mean", 0);
    TU_CLOSE(r.se, se, 0, 1e-15, "se", 0);
    TU_CLOSE(r.lo, 7.0 / 3 - t975 * se, 0, 1e-11, "lo", 0);
    TU_CLOSE(r.hi, 7.0 / 3 + t975 * se, 0, 1e-11, "hi", 0);
    TU_CLOSE(r.p, 1 - sqrt(7.0) / 3, 0, 1e-12, "p", 0);
    TU_CLOSE(r.mde, (t975 + t80) * se, 0, 1e-11, "mde", 0);
    /* every unit alike: the effect is known exactly, as scripts/claims has it */
    r = posemb_t_ci_one_sample((const double[]){0.5, 0.5}, 2);
    assert_true(r.lo == 0.5 && r.hi == 0.5 && r.p == 0 && r.mde == 0);
    r = posemb_t_ci_one_sample(x, 1);
    assert_true(r.effect == 1 && isnan(r.lo) && isnan(r.p));
    /* Welch: scipy's t and p of WELCH's "seeds" case (below) on 6.339 degrees of freedom; its interval's ends
     * are where the two-sided p of (end - effect) / se is 0.05 */
    const double a[5] = {0.81, 0.83, 0.79, 0.84, 0.80}, b[4] = {0.76, 0.78, 0.80, 0.75};
    r = posemb_t_ci_welch(a, 5, b, 4);
    TU_CLOSE(r.effect, 0.814 - 0.7725, 0, 1e-12, "welch effect", 0);
    TU_CLOSE(r.effect / r.se, 2.8711874879126147, 0, 1e-12, "welch t", 0);
    TU_CLOSE(r.p, 0.026695975997463418, 0, 1e-10, "welch p", 0);
    TU_CLOSE(posemb_student_t_p2((r.hi - r.effect) / r.se, 6.339157939115634), 0.05, 0, 1e-10, "welch hi", 0);
    TU_CLOSE(r.effect - r.lo, r.hi - r.effect, 0, 1e-12, "welch symmetric", 0);
}

typedef struct welch_case {
    const char *name;
    double a[16];
    int n_a;
    double b[16];
    int n_b;
    double t, df, p;
} welch_case;

/* t and p: scipy.stats.ttest_ind(a, b, equal_var=False) in scipy 1.10.1;
 * df: (va + vb)^2 / (va^2 / (na - 1) + vb^2 / (nb - 1)) with
 * va = np.var(a, ddof=1) / na (scipy does not return it). Command:
 *   python3 -c "from scipy import stats; print(stats.ttest_ind(a, b, equal_var=False))"
 * "wikipedia" is the first example of the Welch's t-test article
 * (t = -2.46, df = 24.99, p = 0.021). */
static const welch_case WELCH[] = {
    {"seeds",
     {0.81, 0.83, 0.79, 0.84, 0.80},
     5,
     {0.76, 0.78, 0.80, 0.75},
     4,
     2.8711874879126147,
     6.339157939115634,
     0.026695975997463418},
    {"wikipedia",
     {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4},
     15,
     {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4},
     15,
     -2.455356398286006,
     24.988529290231416,
     0.021378001462866985},
    {"tiny p", {1, 1.1, 0.9}, 3, {5, 5.2, 4.9}, 3, -38.2635596880374, 3.448275862068967, 1.1739206749972869e-05},
    {"one constant", {1, 1, 1}, 3, {2, 3, 4}, 3, -3.464101615137755, 2.0, 0.07417990022744853},
};

static void test_welch(void **state)
{
    (void)state;
    for (int i = 0; i < N_OF(WELCH); i++) {
        const welch_case *c = &WELCH[i];
        posemb_welch w = posemb_welch_ttest(c->a, c->n_a, c->b, c->n_b);
        TU_CLOSE(w.t, c->t, 0, 1e-12, c->name, i);
        TU_CLOSE(w.df, c->df, 0, 1e-12, c->name, i);
        TU_CLOSE(w.p, c->p, 0, 1e-10, c->name, i);
    }
    /* swapping the samples flips t and keeps df and p */
    posemb_welch ab = posemb_welch_ttest(WELCH[0].a, 5, WELCH[0].b, 4);
    posemb_welch ba = posemb_welch_ttest(WELCH[0].b, 4, WELCH[0].a, 5);
    TU_CLOSE(ba.t, -ab.t, 0, 1e-14, "swap t", 0);
    TU_CLOSE(ba.p, ab.p, 0, 1e-14, "swap p", 0);
    TU_CLOSE(ab.mean_a, 0.814, 1e-15, 0, "mean", 0);
    TU_CLOSE(ab.var_a, 0.00043, 1e-15, 0, "var", 0); /* deviations -.004 .016 -.024 .026 -.014: sum sq .00172 / 4 */
}

static void test_welch_degenerate(void **state)
{
    (void)state;
    const double same[3] = {0.5, 0.5, 0.5}, other[4] = {0.7, 0.7, 0.7, 0.7};
    posemb_welch w = posemb_welch_ttest(same, 3, same, 3);
    assert_true(w.p == 1.0 && w.t == 0.0 && w.df == 4.0); /* both variances 0, equal means */
    w = posemb_welch_ttest(same, 3, other, 4);
    assert_true(w.p == 0.0 && isinf(w.t) && w.t < 0 && w.df == 5.0);
    w = posemb_welch_ttest(same, 1, other, 4); /* n < 2: no variance, no test */
    assert_true(isnan(w.p) && isnan(w.t) && isnan(w.df));
    TU_CLOSE(w.mean_a, 0.5, 0, 0, "mean n=1", 0);
    w = posemb_welch_ttest(same, 3, other, 0);
    assert_true(isnan(w.p) && isnan(w.mean_b));
    const double with_nan[3] = {1, NAN, 2};
    w = posemb_welch_ttest(with_nan, 3, other, 4);
    assert_true(isnan(w.p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy),         cmocka_unit_test(test_f1_binary),
        cmocka_unit_test(test_matthews),         cmocka_unit_test(test_pearson),
        cmocka_unit_test(test_spearman_ties),    cmocka_unit_test(test_metric_names),
        cmocka_unit_test(test_squad_normalize),  cmocka_unit_test(test_squad_exact_match),
        cmocka_unit_test(test_squad_f1),         cmocka_unit_test(test_betainc),
        cmocka_unit_test(test_student_t),        cmocka_unit_test(test_welch),
        cmocka_unit_test(test_welch_degenerate), cmocka_unit_test(test_student_t_quantile),
        cmocka_unit_test(test_t_intervals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
