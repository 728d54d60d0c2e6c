/* Task metrics (GLUE, SQuAD) and the Welch t-test: see posemb/metrics.h. */
#include "posemb/metrics.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

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

/* =============================================================== SQuAD */

/* Python's str.isspace: bidirectional class WS, B or S, or category Zs. */
static int py_isspace(int32_t cp)
{
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20);
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
           p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

/* Python's regex \w on str: str.isalnum() or "_". isalnum is exactly the
 * categories L* and N* (checked over all code points with Python 3.11). */
static int py_isword(int32_t cp)
{
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}

/* string.punctuation: the 32 printable ASCII characters that are neither
 * letters, digits nor space. */
static int py_punctuation(int32_t cp)
{
    return cp < 0x80 && cp > 0x20 && cp < 0x7f && !(cp >= '0' && cp <= '9') && !(cp >= 'a' && cp <= 'z') &&
           !(cp >= 'A' && cp <= 'Z');
}

/* Unicode's Case_Ignorable (for the Final_Sigma rule): categories Mn, Me,
 * Cf, Lm, Sk, and Word_Break MidLetter, MidNumLet and Single_Quote. */
static int case_ignorable(int32_t cp)
{
    switch (cp) {
    case 0x27: case 0x2e: case 0x3a: case 0xb7: case 0x387: case 0x55f: case 0x5f4: case 0x2018: case 0x2019:
    case 0x2024: case 0x2027: case 0xfe13: case 0xfe52: case 0xfe55: case 0xff07: case 0xff0e: case 0xff1a:
        return 1;
    default:
        break;
    }
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return 1;
    default:
        return 0;
    }
}

/* Unicode's Cased: Lu, Ll, Lt, and the Other_Lowercase/Other_Uppercase
 * characters that have a case mapping (utf8proc knows no Other_* property). */
static int cased(int32_t cp)
{
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
           utf8proc_islower(cp) || utf8proc_isupper(cp);
}

/* CPython's handle_capital_sigma: U+03A3 at index i lowers to final sigma
 * U+03C2 when a cased letter precedes it (skipping case-ignorables) and
 * none follows it (skipping case-ignorables); otherwise to U+03C3. */
static int32_t lower_sigma(const int32_t *cp, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && case_ignorable(cp[j - 1])) j--;
    if (j == 0 || !cased(cp[j - 1])) return 0x3c3;
    size_t k = i + 1;
    while (k < n && case_ignorable(cp[k])) k++;
    return (k == n || !cased(cp[k])) ? 0x3c2 : 0x3c3;
}

/* UTF-8 to code points (invalid bytes become U+FFFD, one per byte). */
static int32_t *decode(const char *text, size_t *n)
{
    size_t len = strlen(text);
    int32_t *cp = malloc((len + 1) * sizeof *cp);
    if (!cp) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t used = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (used <= 0) {
            c = 0xfffd;
            used = 1;
        }
        cp[k++] = c;
        i += (size_t)used;
    }
    *n = k;
    return cp;
}

/* Step 1, str.lower, into a new array (U+0130 grows to two code points). */
static int32_t *py_lower(const int32_t *src, size_t n, size_t *out_n)
{
    int32_t *out = malloc((2 * n + 1) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = src[i];
        if (c < 0x80) {
            out[k++] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        } else if (c == 0x130) {
            out[k++] = 'i';
            out[k++] = 0x307;
        } else if (c == 0x3a3) {
            out[k++] = lower_sigma(src, n, i);
        } else {
            out[k++] = utf8proc_tolower(c);
        }
    }
    *out_n = k;
    return out;
}

/* Step 2, remove_punc, in place. */
static size_t remove_punctuation(int32_t *cp, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!py_punctuation(cp[i])) cp[k++] = cp[i];
    return k;
}

static int is_article(const int32_t *w, size_t len)
{
    if (len == 1) return w[0] == 'a';
    if (len == 2) return w[0] == 'a' && w[1] == 'n';
    return len == 3 && w[0] == 't' && w[1] == 'h' && w[2] == 'e';
}

/* Step 3, re.sub(r"\b(a|an|the)\b", " ", text): \b on both sides makes a
 * match exactly a whole maximal run of word characters; in place. */
static size_t remove_articles(int32_t *cp, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (!py_isword(cp[i])) {
            cp[k++] = cp[i++];
            continue;
        }
        size_t j = i;
        while (j < n && py_isword(cp[j])) j++;
        if (is_article(cp + i, j - i)) {
            cp[k++] = ' ';
        } else {
            memmove(cp + k, cp + i, (j - i) * sizeof *cp);
            k += j - i;
        }
        i = j;
    }
    return k;
}

/* Step 4, " ".join(text.split()), encoded back to UTF-8. */
static char *join_words(const int32_t *cp, size_t n)
{
    char *out = malloc(4 * n + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (py_isspace(cp[i])) {
            i++;
            continue;
        }
        if (k) out[k++] = ' ';
        for (; i < n && !py_isspace(cp[i]); i++) k += (size_t)utf8proc_encode_char(cp[i], (utf8proc_uint8_t *)out + k);
    }
    out[k] = '\0';
    return out;
}

char *posemb_squad_normalize(const char *text)
{
    size_t n = 0, m = 0;
    int32_t *cp = decode(text, &n);
    if (!cp) return NULL;
    int32_t *lower = py_lower(cp, n, &m);
    free(cp);
    if (!lower) return NULL;
    m = remove_punctuation(lower, m);
    m = remove_articles(lower, m);
    char *out = join_words(lower, m);
    free(lower);
    return out;
}

double posemb_squad_exact_match(const char *prediction, const char *const *golds, int n_golds)
{
    char *pred = posemb_squad_normalize(prediction);
    if (!pred) return NAN;
    double best = 0;
    for (int g = 0; g < n_golds && best < 1; g++) {
        char *gold = posemb_squad_normalize(golds[g]);
        if (!gold) {
            best = NAN;
            break;
        }
        if (strcmp(pred, gold) == 0) best = 1;
        free(gold);
    }
    free(pred);
    return best;
}

/* A normalised answer cut into its tokens, sorted (for the bag overlap). */
typedef struct bag {
    char *text;
    char **tok;
    int n;
} bag;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int bag_of(const char *answer, bag *b)
{
    memset(b, 0, sizeof *b);
    b->text = posemb_squad_normalize(answer);
    if (!b->text) return -1;
    size_t len = strlen(b->text);
    b->tok = malloc((len / 2 + 1) * sizeof *b->tok); /* tokens are separated by single spaces */
    if (!b->tok) return -1;
    for (char *s = b->text; *s;) {
        b->tok[b->n++] = s;
        char *sp = strchr(s, ' ');
        if (!sp) break;
        *sp = '\0';
        s = sp + 1;
    }
    qsort(b->tok, (size_t)b->n, sizeof *b->tok, cmp_str);
    return 0;
}

static void bag_free(bag *b)
{
    free(b->text);
    free(b->tok);
}

/* sum over tokens of min(count in a, count in b): a merge of sorted lists. */
static int bag_overlap(const bag *a, const bag *b)
{
    int i = 0, j = 0, same = 0;
    while (i < a->n && j < b->n) {
        int c = strcmp(a->tok[i], b->tok[j]);
        if (c == 0) {
            same++;
            i++;
            j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    return same;
}

static double token_f1(const bag *pred, const bag *gold)
{
    int same = bag_overlap(pred, gold);
    if (same == 0) return 0;
    double precision = (double)same / pred->n, recall = (double)same / gold->n;
    return 2 * precision * recall / (precision + recall);
}

double posemb_squad_f1(const char *prediction, const char *const *golds, int n_golds)
{
    bag pred;
    double best = 0;
    if (bag_of(prediction, &pred)) {
        best = NAN;
        n_golds = 0;
    }
    for (int g = 0; g < n_golds; g++) {
        bag gold;
        if (bag_of(golds[g], &gold)) {
            bag_free(&gold);
            best = NAN;
            break;
        }
        double f1 = token_f1(&pred, &gold);
        if (f1 > best) best = f1;
        bag_free(&gold);
    }
    bag_free(&pred);
    return best;
}

/* ========================================================== statistics */

/* Continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified
 * Lentz): converges fast for x < (a + 1) / (a + b + 2), in about
 * O(sqrt(max(a, b))) terms. */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300, eps = 1e-16;
    const int max_terms = 1000000;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= max_terms; m++) {
        int m2 = 2 * m;
        /* even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)) */
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        /* odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) */
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double step = d * c;
        h *= step;
        if (fabs(step - 1) < eps) return h;
    }
    return NAN;
}

/* I_x(a, b) with y = 1 - x given separately, so that callers who know y
 * more precisely than 1 - x (the t tail) keep that precision. */
static double betainc_xy(double a, double b, double x, double y)
{
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(y >= 0) || !isfinite(a) || !isfinite(b)) return NAN;
    if (x == 0) return 0;
    if (y == 0) return 1;
    /* x^a y^b / B(a, b), the factor in front of both fractions */
    double log_front = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(y);
    double front = exp(log_front);
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, y) / b;
}

double posemb_betainc(double a, double b, double x)
{
    if (!(x >= 0 && x <= 1)) return NAN;
    return betainc_xy(a, b, x, 1 - x);
}

double posemb_student_t_p2(double t, double df)
{
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return 0;
    double t2 = t * t;
    /* x = df / (df + t^2) and 1 - x = t^2 / (df + t^2), each computed
     * directly: for large |t| the tail lives in x, for small |t| in 1 - x. */
    double p = betainc_xy(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2));
    return p > 1 ? 1 : p;
}

static void mean_var(const double *x, int n, double *mean, double *var)
{
    double m = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m = n > 0 ? m / n : NAN;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    *mean = m;
    *var = n > 1 ? ss / (n - 1) : NAN;
}

posemb_welch posemb_welch_ttest(const double *a, int n_a, const double *b, int n_b)
{
    posemb_welch w = {NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    mean_var(a, n_a, &w.mean_a, &w.var_a);
    mean_var(b, n_b, &w.mean_b, &w.var_b);
    if (n_a < 2 || n_b < 2 || isnan(w.var_a) || isnan(w.var_b)) return w;
    double se_a = w.var_a / n_a, se_b = w.var_b / n_b; /* squared standard errors of the means */
    double diff = w.mean_a - w.mean_b;
    if (se_a + se_b == 0) {
        w.df = n_a + n_b - 2;
        w.t = diff == 0 ? 0 : diff > 0 ? INFINITY : -INFINITY;
        w.p = diff == 0 ? 1 : 0;
        return w;
    }
    w.t = diff / sqrt(se_a + se_b);
    w.df = (se_a + se_b) * (se_a + se_b) / (se_a * se_a / (n_a - 1) + se_b * se_b / (n_b - 1));
    w.p = posemb_student_t_p2(w.t, w.df);
    return w;
}
