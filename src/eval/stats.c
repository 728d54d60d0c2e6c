/* The Welch t-test and the Student-t tail it needs: see posemb/stats.h. */
#include "eval/stats.h"

#include <math.h>

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
    posemb_welch w = {.t = NAN, .df = NAN, .p = NAN, .mean_a = NAN, .mean_b = NAN, .var_a = NAN, .var_b = NAN};
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

double posemb_student_t_quantile(double q, double df)
{
    if (!(q > 0 && q < 1) || !(df > 0)) return NAN;
    if (q == 0.5) return 0;
    if (q < 0.5) return -posemb_student_t_quantile(1 - q, df);
    /* the upper tail P(T > t) = p2 / 2 falls with t: bracket 1 - q, then halve */
    double tail = 1 - q, lo = 0, hi = 1;
    while (posemb_student_t_p2(hi, df) / 2 > tail && hi < 1e300) {
        lo = hi;
        hi *= 2;
    }
    for (int i = 0; i < 2000 && lo < hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break; /* adjacent doubles: as close as it gets */
        if (posemb_student_t_p2(mid, df) / 2 > tail) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

posemb_t_ci posemb_t_ci_of(double effect, double se, double df)
{
    posemb_t_ci r = {.effect = effect, .lo = NAN, .hi = NAN, .se = se, .df = df, .p = NAN, .mde = NAN};
    if (isnan(effect) || !(se >= 0)) return r;
    if (se == 0) { /* no spread: the effect is known exactly (scripts/claims' convention) */
        r.lo = r.hi = effect;
        r.p = effect != 0 ? 0 : 1;
        r.mde = 0;
        return r;
    }
    if (!(df > 0)) return r;
    double tc = posemb_student_t_quantile(0.975, df);
    r.lo = effect - tc * se;
    r.hi = effect + tc * se;
    r.p = posemb_student_t_p2(effect / se, df);
    r.mde = (tc + posemb_student_t_quantile(0.8, df)) * se;
    return r;
}

posemb_t_ci posemb_t_ci_one_sample(const double *x, int n)
{
    double mean, var;
    mean_var(x, n, &mean, &var);
    if (n < 2) return posemb_t_ci_of(mean, NAN, NAN);
    return posemb_t_ci_of(mean, sqrt(var / n), n - 1);
}

posemb_t_ci posemb_t_ci_welch(const double *a, int n_a, const double *b, int n_b)
{
    posemb_welch w = posemb_welch_ttest(a, n_a, b, n_b);
    double diff = w.mean_a - w.mean_b;
    if (n_a < 2 || n_b < 2) return posemb_t_ci_of(diff, NAN, NAN);
    double se_a = w.var_a / n_a, se_b = w.var_b / n_b;
    return posemb_t_ci_of(diff, sqrt(se_a + se_b), w.df);
}
