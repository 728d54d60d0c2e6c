/* The three properties of a position embedding as indicators in [0, 1]
 * (shared spec ANALYSIS.md section 3; formulas in docs/indicators.md),
 * computed on any n x n matrix A over the band 1 <= |i - j| <= K:
 *   TI   = 1 - W / T: W the pooled within-diagonal variance (each diagonal
 *          j - i = m weighted by its length), T the variance of the band;
 *   MONO = 1 - inversions / pairs, per row and per side: keys j, j' in the
 *          band with |j' - i| > |j - i| but A[i][j'] > A[i][j];
 *          forward (j > i), backward (j < i), and their mean;
 *   window: the largest w for which the row-averaged profile
 *          f(m) = mean_i A[i][i+m] falls strictly on both sides as |m|
 *          grows from 0 to w;
 *   SYM  = 1 - ||B - B^T||_F / (2 ||B||_F), B the band with its mean removed.
 * Degenerate cases (a band with no variance) count as holding the property. */
#ifndef POSEMB_INDICATORS_H
#define POSEMB_INDICATORS_H

#include "posemb/api.h"

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_indicators {
    int n, K;
    double ti;
    double mono, mono_fwd, mono_bwd;
    int window;
    double sym;
} posemb_indicators;

/* A: n x n row-major. K >= 1 (clamped to n - 1). EINVAL for n < 2 or K < 1. */
POSEMB_API posemb_status posemb_indicators_compute(const float *A, int n, int K, posemb_indicators *out,
                                                   posemb_error *err);

/* Position similarity of the rows of P [n, dim]: S = P P^T (cosine = 0) or
 * the cosine of each pair (cosine = 1; zero rows give 0). S: n x n. */
POSEMB_API void posemb_similarity(const float *P, int n, int dim, int cosine, float *S);

#ifdef __cplusplus
}
#endif
#endif
