#include "reltable.h"

#include <cblas.h>
#include <string.h>

/* The table rows [lo, hi] that pairs of this head can read. */
static void rows_used(rel_map m, const pe_head *h, int *lo, int *hi)
{
    int32_t qmin = h->qpos[0], qmax = h->qpos[0], kmin = h->kpos[0], kmax = h->kpos[0];
    for (int i = 1; i < h->nq; i++) {
        if (h->qpos[i] < qmin) qmin = h->qpos[i];
        if (h->qpos[i] > qmax) qmax = h->qpos[i];
    }
    for (int j = 1; j < h->nk; j++) {
        if (h->kpos[j] < kmin) kmin = h->kpos[j];
        if (h->kpos[j] > kmax) kmax = h->kpos[j];
    }
    int a = rel_row(m, qmax, kmin), b = rel_row(m, qmin, kmax); /* smallest and largest distance */
    *lo = a < b ? a : b;
    *hi = a < b ? b : a;
}

size_t rel_scratch_floats(rel_map m, int n) { return (size_t)n * ((size_t)2 * (size_t)m.clip + 1); }

void rel_logits_forward(rel_map m, const pe_head *h, int key_side, const float *x, int ldx, const float *table,
                        float *s, int lds, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1, nx = key_side ? h->nk : h->nq;
    float *xt = scratch; /* [nx, R]: x . T[row]^T, scaled */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nx, R, d, h->scale, x, ldx, table + (size_t)lo * d, d, 0.0f,
                xt, R);
    for (int i = 0; i < h->nq; i++) {
        float *si = s + (size_t)i * lds;
        for (int j = 0; j < h->nk; j++) {
            int r = rel_row(m, h->qpos[i], h->kpos[j]) - lo;
            si[j] += key_side ? xt[(size_t)j * R + r] : xt[(size_t)i * R + r];
        }
    }
}

void rel_logits_backward(rel_map m, const pe_head *h, int key_side, const float *x, int ldx, const float *table,
                         const float *ds, int ldds, float *dx, int lddx, float *dtable, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1, nx = key_side ? h->nk : h->nq;
    float *w = scratch; /* [nx, R]: ds summed over the pairs that share a row */
    memset(w, 0, (size_t)nx * R * sizeof *w);
    for (int i = 0; i < h->nq; i++) {
        const float *dsi = ds + (size_t)i * ldds;
        for (int j = 0; j < h->nk; j++) {
            int r = rel_row(m, h->qpos[i], h->kpos[j]) - lo;
            if (key_side) w[(size_t)j * R + r] += dsi[j];
            else w[(size_t)i * R + r] += dsi[j];
        }
    }
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nx, d, R, h->scale, w, R, table + (size_t)lo * d, d,
                    1.0f, dx, lddx);
    if (dtable)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, d, nx, h->scale, w, R, x, ldx, 1.0f,
                    dtable + (size_t)lo * d, d);
}

/* w[i][row] = sum of prob[i][j] over the keys j that read row. */
static void sum_prob_by_row(rel_map m, const pe_head *h, int lo, int R, const float *prob, int ldp, float *w)
{
    memset(w, 0, (size_t)h->nq * R * sizeof *w);
    for (int i = 0; i < h->nq; i++) {
        const float *pi = prob + (size_t)i * ldp;
        float *wi = w + (size_t)i * R;
        for (int j = 0; j < h->nk; j++) wi[rel_row(m, h->qpos[i], h->kpos[j]) - lo] += pi[j];
    }
}

void rel_values_forward(rel_map m, const pe_head *h, const float *table, const float *prob, int ldp, float *z, int ldz,
                        float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1;
    sum_prob_by_row(m, h, lo, R, prob, ldp, scratch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h->nq, d, R, 1.0f, scratch, R, table + (size_t)lo * d, d,
                1.0f, z, ldz);
}

void rel_values_backward(rel_map m, const pe_head *h, const float *table, const float *prob, int ldp, const float *dz,
                         int lddz, float *dprob, int lddp, float *dtable, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1;
    float *g = scratch; /* [nq, R]: dz_i . T[row] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h->nq, R, d, 1.0f, dz, lddz, table + (size_t)lo * d, d, 0.0f,
                g, R);
    for (int i = 0; i < h->nq; i++) {
        float *dpi = dprob + (size_t)i * lddp;
        const float *gi = g + (size_t)i * R;
        for (int j = 0; j < h->nk; j++) dpi[j] += gi[rel_row(m, h->qpos[i], h->kpos[j]) - lo];
    }
    if (!dtable) return;
    sum_prob_by_row(m, h, lo, R, prob, ldp, scratch);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, d, h->nq, 1.0f, scratch, R, dz, lddz, 1.0f,
                dtable + (size_t)lo * d, d);
}
