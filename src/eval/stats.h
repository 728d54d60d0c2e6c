/* The study's significance test: a two-sided Welch t-test (scipy's
 * ttest_ind(a, b, equal_var=False)) and the special functions it needs;
 * t intervals (one-sample, paired, Welch) of the claims register. */
#ifndef POSEMB_STATS_H
#define POSEMB_STATS_H

#include "posemb/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_welch {
    double t;  /* (mean_a - mean_b) / sqrt(var_a / n_a + var_b / n_b) */
    double df; /* Welch-Satterthwaite degrees of freedom */
    double p;  /* two-sided p-value */
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

/* The q-quantile of Student's t with df > 0 degrees of freedom: the t with
 * P(T <= t) = q, for q in (0, 1) (0 at q = 0.5, odd around it), by
 * bisection on posemb_student_t_p2 to double precision. NaN for q outside
 * (0, 1), a NaN q or df <= 0. */
double posemb_student_t_quantile(double q, double df);

/* A t interval of an effect: the two-sided 95% interval and p-value of a
 * t statistic effect / se with df degrees of freedom, and the minimum
 * detectable effect (mde): the effect a two-sided test at 0.05 detects
 * with 80% power at this standard error, (t_0.975 + t_0.80) se. */
typedef struct posemb_t_ci {
    double effect, lo, hi; /* the estimate and its 95% interval */
    double se, df, p;      /* its standard error, degrees of freedom and two-sided p */
    double mde;
} posemb_t_ci;

/* The interval of effect with standard error se on df degrees of freedom.
 * se = 0 (every unit alike): lo = hi = effect, p = 0 for an effect other
 * than 0 (1 for 0), mde = 0. se < 0, NaN arguments or df <= 0 with se > 0:
 * every field NaN but effect. */
posemb_t_ci posemb_t_ci_of(double effect, double se, double df);
/* The mean of x[0..n) with se = sd / sqrt(n) on n - 1 degrees of freedom
 * (a paired difference is the one-sample interval of the differences).
 * n < 2: every field NaN but the mean (NaN too for n < 1). */
posemb_t_ci posemb_t_ci_one_sample(const double *x, int n);
/* mean a - mean b with Welch's standard error and Welch-Satterthwaite
 * degrees of freedom (as posemb_welch_ttest). n_a or n_b < 2: NaN but the
 * effect. */
posemb_t_ci posemb_t_ci_welch(const double *a, int n_a, const double *b, int n_b);

#ifdef __cplusplus
}
#endif

#endif
