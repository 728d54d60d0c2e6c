/* Probes of what an APE table encodes: linear regression of the position
 * (seed paper's protocol and 5-fold), logistic regression of the order of
 * two positions, per-dimension ranges, and psi(m). Solved in closed form
 * or by Newton's method with LAPACK, in double. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/probes.h"
#include "posemb/rng.h"
#include "core/rng_internal.h"

/* ---- least squares ---- */

/* Fits y ~ X w + b on the rows `rows` of P (m of them): features and target
 * centred on those rows, minimum-norm solution (dgelsy), ridge by stacking
 * sqrt(ridge) I under X. w [dim]; *b the intercept. */
static posemb_status fit_linear(const float *P, int dim, const int *rows, int m, double ridge, double *w, double *b,
                                posemb_error *err)
{
    int extra = ridge > 0 ? dim : 0, mm = m + extra, ldb = mm > dim ? mm : dim;
    double *X = calloc((size_t)mm * dim, sizeof *X), *y = calloc((size_t)ldb, sizeof *y),
           *mu = calloc((size_t)dim, sizeof *mu);
    double *sv = calloc((size_t)(m < dim ? m : dim) + (size_t)extra + 1, sizeof *sv), ym = 0;
    if (!X || !y || !mu || !sv) {
        free(X);
        free(y);
        free(mu);
        free(sv);
        return posemb_fail(err, POSEMB_ENOMEM, "regression: out of memory");
    }
    for (int i = 0; i < m; i++) {
        ym += rows[i];
        for (int d = 0; d < dim; d++) mu[d] += P[(size_t)rows[i] * dim + d];
    }
    ym /= m;
    for (int d = 0; d < dim; d++) mu[d] /= m;
    for (int i = 0; i < m; i++) {
        y[i] = rows[i] - ym;
        for (int d = 0; d < dim; d++) X[(size_t)i * dim + d] = P[(size_t)rows[i] * dim + d] - mu[d];
    }
    for (int d = 0; d < extra; d++) X[(size_t)(m + d) * dim + d] = sqrt(ridge);
    lapack_int rank, *jpvt = calloc((size_t)dim, sizeof *jpvt);
    /* complete orthogonal factorisation with pivoting: rank-revealing like an SVD, several times faster */
    lapack_int info = jpvt ? LAPACKE_dgelsy(LAPACK_ROW_MAJOR, mm, dim, 1, X, dim, y, 1, jpvt, 1e-10, &rank) : -1;
    free(jpvt);
    posemb_status st =
        info ? posemb_fail(err, POSEMB_ERANGE, "regression: least squares failed (LAPACK info %d)", (int)info)
             : POSEMB_OK;
    double dot = 0;
    for (int d = 0; !st && d < dim; d++) {
        w[d] = y[d];
        dot += y[d] * mu[d];
    }
    *b = ym - dot;
    free(X);
    free(y);
    free(mu);
    free(sv);
    return st;
}

static double predict(const float *row, const double *w, double b, int dim)
{
    double s = b;
    for (int d = 0; d < dim; d++) s += w[d] * row[d];
    return s;
}

posemb_status posemb_regress_seed(const float *P, int n, int dim, double ridge, posemb_regress *out, posemb_error *err)
{
    memset(out, 0, sizeof *out);
    if (n < 4 || dim < 1)
        return posemb_fail(err, POSEMB_EINVAL, "regression: %d positions x %d dims (need >= 4 x 1)", n, dim);
    int m = (n + 1) / 2, *rows = malloc((size_t)m * sizeof *rows);
    double *w = malloc((size_t)dim * sizeof *w), b;
    out->pred = malloc((size_t)n * sizeof *out->pred);
    if (!rows || !w || !out->pred) {
        free(rows);
        free(w);
        free(out->pred);
        out->pred = NULL;
        return posemb_fail(err, POSEMB_ENOMEM, "regression: out of memory");
    }
    for (int i = 0; i < m; i++) rows[i] = 2 * i; /* fit on the even positions */
    posemb_status st = fit_linear(P, dim, rows, m, ridge, w, &b, err);
    double total = 0;
    for (int x = 0; !st && x < n; x++) {
        out->pred[x] = (float)predict(P + (size_t)x * dim, w, b, dim);
        double e = fabs(out->pred[x] - x);
        total += e;
        int r = x / 128;
        if (r < 64) {
            out->mae_by_range[r] += e;
            out->ranges[r][0] = r * 128;
            out->ranges[r][1] = x;
            out->n_ranges = r + 1;
        }
    }
    for (int r = 0; r < out->n_ranges; r++) out->mae_by_range[r] /= out->ranges[r][1] - out->ranges[r][0] + 1;
    out->mae_all = total / n;
    free(rows);
    free(w);
    if (st) { /* nothing for the caller to free on any failure */
        free(out->pred);
        out->pred = NULL;
    }
    return st;
}

/* A seeded permutation of 0..n-1. */
static void shuffled(int *idx, int n, uint64_t seed)
{
    posemb_rng r;
    posemb_rng_seed(&r, seed, 3);
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)posemb_rng_below(&r, (uint32_t)i + 1), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

posemb_status posemb_regress_cv(const float *P, int n, int dim, int folds, uint64_t seed, double ridge, double *mae,
                                posemb_error *err)
{
    if (folds < 2 || n < 2 * folds)
        return posemb_fail(err, POSEMB_EINVAL, "regression: %d positions for %d folds", n, folds);
    int *idx = malloc((size_t)n * sizeof *idx), *train = malloc((size_t)n * sizeof *train);
    double *w = malloc((size_t)dim * sizeof *w), b, total = 0;
    if (!idx || !train || !w) {
        free(idx);
        free(train);
        free(w);
        return posemb_fail(err, POSEMB_ENOMEM, "regression: out of memory");
    }
    shuffled(idx, n, seed);
    posemb_status st = POSEMB_OK;
    for (int f = 0; !st && f < folds; f++) {
        int lo = (int)((long)f * n / folds), hi = (int)((long)(f + 1) * n / folds), m = 0;
        for (int i = 0; i < n; i++)
            if (i < lo || i >= hi) train[m++] = idx[i];
        st = fit_linear(P, dim, train, m, ridge, w, &b, err);
        for (int i = lo; !st && i < hi; i++)
            total += fabs(round(predict(P + (size_t)idx[i] * dim, w, b, dim)) - idx[i]);
    }
    *mae = total / n;
    free(idx);
    free(train);
    free(w);
    return st;
}

/* ---- logistic regression ---- */

/* One Newton step's direction: solves (X^T W X + lambda I) delta = g for X
 * [m, d], d <= m (the dual fit handles wider problems). */
static int newton_direction(const double *X, int m, int d, const double *wts, double lambda, const double *g,
                            double *delta, double *work)
{
    double *H = work, *WX = work + (size_t)d * d;
    for (int i = 0; i < m; i++)
        for (int k = 0; k < d; k++) WX[(size_t)i * d + k] = wts[i] * X[(size_t)i * d + k];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, m, 1.0, X, d, WX, d, 0.0, H, d);
    for (int k = 0; k < d; k++) H[(size_t)k * d + k] += lambda;
    memcpy(delta, g, (size_t)d * sizeof *delta);
    return LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', d, 1, H, d, delta, 1);
}

/* L2-regularised logistic regression (loss summed over rows) by Newton's method. */
static posemb_status fit_logistic(const double *X, const double *y, int m, int d, double lambda, double *w,
                                  posemb_error *err)
{
    size_t work_n = (size_t)d * d + (size_t)m * d;
    double *p = malloc((size_t)m * sizeof *p), *g = malloc((size_t)d * sizeof *g),
           *delta = malloc((size_t)d * sizeof *delta);
    double *work = malloc(work_n * sizeof *work);
    posemb_status st =
        p && g && delta && work ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "logistic probe: out of memory");
    for (int k = 0; k < d; k++) w[k] = 0;
    for (int it = 0; !st && it < 100; it++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, m, d, 1.0, X, d, w, 1, 0.0, p, 1);
        for (int i = 0; i < m; i++) p[i] = 1.0 / (1.0 + exp(-p[i]));
        for (int k = 0; k < d; k++) g[k] = lambda * w[k];
        for (int i = 0; i < m; i++) cblas_daxpy(d, p[i] - y[i], X + (size_t)i * d, 1, g, 1);
        for (int i = 0; i < m; i++) p[i] = fmax(p[i] * (1.0 - p[i]), 1e-12); /* the weights of the Hessian */
        if (newton_direction(X, m, d, p, lambda, g, delta, work))
            st = posemb_fail(err, POSEMB_ERANGE, "logistic probe: the Newton system is singular");
        double step = 0;
        for (int k = 0; !st && k < d; k++) {
            w[k] -= delta[k];
            step = fmax(step, fabs(delta[k]));
        }
        if (step < 1e-9) break;
    }
    free(p);
    free(g);
    free(delta);
    free(work);
    return st;
}

/* Sampled pairs i != j and their labels j > i. */
static void sample_pairs(int n, int pairs, uint64_t seed, int *pi, int *pj, double *y)
{
    posemb_rng r;
    posemb_rng_seed(&r, seed, 5);
    for (int s = 0; s < pairs; s++) {
        pi[s] = (int)posemb_rng_below(&r, (uint32_t)n);
        do pj[s] = (int)posemb_rng_below(&r, (uint32_t)n);
        while (pj[s] == pi[s]);
        y[s] = pj[s] > pi[s];
    }
}

/* Rows [P_i; P_j; 1] of the pairs. */
static void pair_features(const float *P, int dim, const int *pi, const int *pj, int pairs, double *X)
{
    int d = 2 * dim + 1;
    for (int s = 0; s < pairs; s++) {
        double *row = X + (size_t)s * d;
        for (int k = 0; k < dim; k++) {
            row[k] = P[(size_t)pi[s] * dim + k];
            row[dim + k] = P[(size_t)pj[s] * dim + k];
        }
        row[2 * dim] = 1.0;
    }
}

/* The same logistic regression in the dual, for more features than pairs:
 * w = X^T a stays in the rows' span, and every product needs only the Gram
 * matrix K = X X^T (m x m). Newton on a: with r = p - y, g_X = X g = K r +
 * lambda z, v = (lambda W^-1 + K)^-1 g_X, the step is (r + lambda a - v) /
 * lambda on a and (g_X - K v) / lambda on the logits z = K a. */
static posemb_status fit_logistic_dual(const double *K, const double *y, int m, double lambda, double *a,
                                       posemb_error *err)
{
    double *z = calloc((size_t)m, sizeof *z), *r = malloc((size_t)m * sizeof *r), *gx = malloc((size_t)m * sizeof *gx);
    double *v = malloc((size_t)m * sizeof *v), *M = malloc((size_t)m * m * sizeof *M),
           *kv = malloc((size_t)m * sizeof *kv);
    posemb_status st =
        z && r && gx && v && M && kv ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "logistic probe: out of memory");
    for (int i = 0; i < m; i++) a[i] = 0;
    for (int it = 0; !st && it < 100; it++) {
        double step = 0;
        for (int i = 0; i < m; i++) {
            double p = 1.0 / (1.0 + exp(-z[i]));
            r[i] = p - y[i];
            v[i] = fmax(p * (1.0 - p), 1e-12); /* W */
        }
        cblas_dgemv(CblasRowMajor, CblasNoTrans, m, m, 1.0, K, m, r, 1, 0.0, gx, 1);
        for (int i = 0; i < m; i++) gx[i] += lambda * z[i];
        memcpy(M, K, (size_t)m * m * sizeof *M);
        for (int i = 0; i < m; i++) M[(size_t)i * m + i] += lambda / v[i];
        memcpy(v, gx, (size_t)m * sizeof *v);
        if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', m, 1, M, m, v, 1)) {
            st = posemb_fail(err, POSEMB_ERANGE, "logistic probe: the Newton system is singular");
            break;
        }
        cblas_dgemv(CblasRowMajor, CblasNoTrans, m, m, 1.0, K, m, v, 1, 0.0, kv, 1);
        for (int i = 0; i < m; i++) {
            double da = (r[i] + lambda * a[i] - v[i]) / lambda;
            a[i] -= da;
            z[i] -= (gx[i] - kv[i]) / lambda;
            step = fmax(step, fabs(da));
        }
        if (step < 1e-9) break;
    }
    free(z);
    free(r);
    free(gx);
    free(v);
    free(M);
    free(kv);
    return st;
}

/* K[s][t] = [P_is; P_js; 1] . [P_it; P_jt; 1] = S[is][it] + S[js][jt] + 1, from S = P P^T. */
static void pair_gram(const double *S, int n, const int *pi, const int *pj, const int *rows, int m, const int *cols,
                      int k, double *K)
{
    for (int s = 0; s < m; s++)
        for (int t = 0; t < k; t++) {
            int a = rows[s], b = cols[t];
            K[(size_t)s * k + t] = S[(size_t)pi[a] * n + pi[b]] + S[(size_t)pj[a] * n + pj[b]] + 1.0;
        }
}

/* Error count on fold [lo, hi) of a dual fit on the other pairs. */
static posemb_status dual_fold(const double *S, int n, const int *pi, const int *pj, const double *y, int pairs, int lo,
                               int hi, double lambda, long *wrong, posemb_error *err)
{
    int m = pairs - (hi - lo), *train = malloc((size_t)m * sizeof *train),
        *test = malloc((size_t)(hi - lo) * sizeof *test);
    double *K = malloc((size_t)m * m * sizeof *K), *Kt = malloc((size_t)(hi - lo) * m * sizeof *Kt);
    double *yt = malloc((size_t)m * sizeof *yt), *a = malloc((size_t)m * sizeof *a);
    posemb_status st = train && test && K && Kt && yt && a
                           ? POSEMB_OK
                           : posemb_fail(err, POSEMB_ENOMEM, "relative probe: out of memory");
    for (int s = 0, k = 0, t = 0; !st && s < pairs; s++)
        if (s < lo || s >= hi) {
            train[k] = s;
            yt[k++] = y[s];
        } else test[t++] = s;
    if (!st) {
        pair_gram(S, n, pi, pj, train, m, train, m, K);
        pair_gram(S, n, pi, pj, test, hi - lo, train, m, Kt);
        st = fit_logistic_dual(K, yt, m, lambda, a, err);
    }
    for (int t = 0; !st && t < hi - lo; t++)
        *wrong += (cblas_ddot(m, Kt + (size_t)t * m, 1, a, 1) > 0) != (y[test[t]] > 0.5);
    free(train);
    free(test);
    free(K);
    free(Kt);
    free(yt);
    free(a);
    return st;
}

/* Error count on fold [lo, hi) of a primal fit on the other pairs. */
static posemb_status primal_fold(const double *X, const double *y, int pairs, int d, int lo, int hi, double lambda,
                                 long *wrong, posemb_error *err)
{
    int m = pairs - (hi - lo);
    double *Xt = malloc((size_t)m * d * sizeof *Xt), *yt = malloc((size_t)m * sizeof *yt),
           *w = malloc((size_t)d * sizeof *w);
    posemb_status st = Xt && yt && w ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "relative probe: out of memory");
    for (int s = 0, k = 0; !st && s < pairs; s++)
        if (s < lo || s >= hi) {
            memcpy(Xt + (size_t)k * d, X + (size_t)s * d, (size_t)d * sizeof *X);
            yt[k++] = y[s];
        }
    if (!st) st = fit_logistic(Xt, yt, m, d, lambda, w, err);
    for (int s = lo; !st && s < hi; s++) *wrong += (cblas_ddot(d, X + (size_t)s * d, 1, w, 1) > 0) != (y[s] > 0.5);
    free(Xt);
    free(yt);
    free(w);
    return st;
}

posemb_status posemb_relative_order(const float *P, int n, int dim, int pairs, int folds, uint64_t seed, double lambda,
                                    double *error, posemb_error *err)
{
    if (n < 2 || folds < 2 || pairs < 2 * folds || !(lambda > 0))
        return posemb_fail(err, POSEMB_EINVAL, "relative probe: %d positions, %d pairs, %d folds, lambda %g", n, pairs,
                           folds, lambda);
    int d = 2 * dim + 1, dual = d > pairs - pairs / folds;
    int *pi = malloc((size_t)pairs * sizeof *pi), *pj = malloc((size_t)pairs * sizeof *pj);
    double *y = malloc((size_t)pairs * sizeof *y);
    double *F =
        dual ? malloc((size_t)n * n * sizeof *F) : malloc((size_t)pairs * d * sizeof *F); /* S, or the features */
    posemb_status st =
        pi && pj && y && F ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "relative probe: out of memory");
    long wrong = 0;
    if (!st) sample_pairs(n, pairs, seed, pi, pj, y);
    if (!st && dual) { /* S = P P^T in double */
        double *Pd = malloc((size_t)n * dim * sizeof *Pd);
        if (!Pd) st = posemb_fail(err, POSEMB_ENOMEM, "relative probe: out of memory");
        for (size_t k = 0; !st && k < (size_t)n * dim; k++) Pd[k] = P[k];
        if (!st) cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, dim, 1.0, Pd, dim, 0.0, F, n);
        for (int i = 0; !st && i < n; i++)
            for (int j = 0; j < i; j++) F[(size_t)i * n + j] = F[(size_t)j * n + i];
        free(Pd);
    } else if (!st) pair_features(P, dim, pi, pj, pairs, F);
    for (int f = 0; !st && f < folds; f++) {
        int lo = (int)((long)f * pairs / folds), hi = (int)((long)(f + 1) * pairs / folds);
        st = dual ? dual_fold(F, n, pi, pj, y, pairs, lo, hi, lambda, &wrong, err)
                  : primal_fold(F, y, pairs, d, lo, hi, lambda, &wrong, err);
    }
    *error = (double)wrong / pairs;
    free(pi);
    free(pj);
    free(y);
    free(F);
    return st;
}

/* ---- per dimension, psi ---- */

void posemb_dim_ranges(const float *P, int n, int dim, double frac, float *range, int *moving)
{
    float widest = 0;
    for (int d = 0; d < dim; d++) {
        float lo = P[d], hi = P[d];
        for (int x = 1; x < n; x++) {
            lo = fminf(lo, P[(size_t)x * dim + d]);
            hi = fmaxf(hi, P[(size_t)x * dim + d]);
        }
        range[d] = hi - lo;
        widest = fmaxf(widest, range[d]);
    }
    *moving = 0;
    for (int d = 0; d < dim; d++) *moving += range[d] > frac * widest;
}

void posemb_psi(const float *freqs, int n_freqs, int n, float *psi, int *decreasing_until)
{
    for (int m = 0; m < n; m++) {
        double s = 0;
        for (int k = 0; k < n_freqs; k++) s += cos((double)freqs[k] * m);
        psi[m] = (float)s;
    }
    int m = 0;
    while (m + 1 < n && psi[m + 1] < psi[m]) m++;
    *decreasing_until = m;
}
