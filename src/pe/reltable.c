#include "reltable.h"

#include <cblas.h>
#include <stddef.h>
#include <string.h>

/* The table rows [lo, hi] that pairs of this head can read. */
static void rows_used(rel_map m, const posemb_pe_head *h, int *lo, int *hi)
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

/* Keys at consecutive positions (kpos[j] = kpos[0] + j, the usual case) read
 * the table in at most three runs per query: keys [0, a) clamped to row r0,
 * keys [a, b) rows mid + sign j, keys [b, nk) clamped to row r1. The runs
 * replace a clamp per pair with plain strided loops. Rows are relative to lo. */
typedef struct key_runs {
    int a, b;
    ptrdiff_t r0, mid, r1;
} key_runs;

static int keys_consecutive(const posemb_pe_head *h)
{
    for (int j = 1; j < h->nk; j++)
        if ((int64_t)h->kpos[j] != (int64_t)h->kpos[0] + j) return 0;
    return 1;
}

static int clamp_index(int64_t v, int n) { return v < 0 ? 0 : v > n ? n : (int)v; }

static key_runs runs_of(rel_map m, int lo, int32_t qp, const posemb_pe_head *h)
{
    int64_t off = (int64_t)h->kpos[0] - qp; /* kpos[j] - qp = off + j */
    key_runs k;
    k.a = clamp_index(-m.clip - off, h->nk);
    k.b = clamp_index(m.clip - off + 1, h->nk);
    k.r0 = m.clip - (ptrdiff_t)m.sign * m.clip - lo;
    k.r1 = m.clip + (ptrdiff_t)m.sign * m.clip - lo;
    k.mid = m.clip + m.sign * off - lo;
    return k;
}

/* dst[j] += src[j * jstride + row(j)] for the keys j of one query. */
static void gather_add(float *restrict dst, const float *restrict src, int jstride, key_runs k, int sign, int nk)
{
    ptrdiff_t step = jstride + sign;
    for (int j = 0; j < k.a; j++) dst[j] += src[(ptrdiff_t)j * jstride + k.r0];
    for (int j = k.a; j < k.b; j++) dst[j] += src[k.mid + j * step];
    for (int j = k.b; j < nk; j++) dst[j] += src[(ptrdiff_t)j * jstride + k.r1];
}

/* w[j * jstride + row(j)] += src[j] for the keys j of one query. */
static void scatter_add(float *restrict w, const float *restrict src, int jstride, key_runs k, int sign, int nk)
{
    ptrdiff_t step = jstride + sign;
    for (int j = 0; j < k.a; j++) w[(ptrdiff_t)j * jstride + k.r0] += src[j];
    for (int j = k.a; j < k.b; j++) w[k.mid + j * step] += src[j];
    for (int j = k.b; j < nk; j++) w[(ptrdiff_t)j * jstride + k.r1] += src[j];
}

/* Query i's keys: dst[j] += src[j * jstride + row(i, j)]. */
static void gather_query(rel_map m, const posemb_pe_head *h, int lo, int fast, int i, float *dst, const float *src,
                         int jstride)
{
    if (fast) {
        gather_add(dst, src, jstride, runs_of(m, lo, h->qpos[i], h), m.sign, h->nk);
        return;
    }
    for (int j = 0; j < h->nk; j++) dst[j] += src[(size_t)j * jstride + rel_row(m, h->qpos[i], h->kpos[j]) - lo];
}

/* Query i's keys: w[j * jstride + row(i, j)] += src[j]. */
static void scatter_query(rel_map m, const posemb_pe_head *h, int lo, int fast, int i, float *w, const float *src,
                          int jstride)
{
    if (fast) {
        scatter_add(w, src, jstride, runs_of(m, lo, h->qpos[i], h), m.sign, h->nk);
        return;
    }
    for (int j = 0; j < h->nk; j++) w[(size_t)j * jstride + rel_row(m, h->qpos[i], h->kpos[j]) - lo] += src[j];
}

size_t rel_scratch_floats(rel_map m, int n) { return (size_t)n * ((size_t)2 * (size_t)m.clip + 1); }

void rel_logits_forward(rel_map m, const posemb_pe_head *h, int key_side, const float *x, int ldx, const float *table,
                        float *s, int lds, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1, nx = key_side ? h->nk : h->nq;
    float *xt = scratch; /* [nx, R]: x . T[row]^T, scaled */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nx, R, d, h->scale, x, ldx, table + (size_t)lo * d, d, 0.0f,
                xt, R);
    int fast = keys_consecutive(h);
    for (int i = 0; i < h->nq; i++)
        gather_query(m, h, lo, fast, i, s + (size_t)i * lds, key_side ? xt : xt + (size_t)i * R, key_side ? R : 0);
}

void rel_logits_backward(rel_map m, const posemb_pe_head *h, int key_side, const float *x, int ldx, const float *table,
                         const float *ds, int ldds, float *dx, int lddx, float *dtable, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1, nx = key_side ? h->nk : h->nq;
    float *w = scratch; /* [nx, R]: ds summed over the pairs that share a row */
    memset(w, 0, (size_t)nx * R * sizeof *w);
    int fast = keys_consecutive(h);
    for (int i = 0; i < h->nq; i++)
        scatter_query(m, h, lo, fast, i, key_side ? w : w + (size_t)i * R, ds + (size_t)i * ldds, key_side ? R : 0);
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nx, d, R, h->scale, w, R, table + (size_t)lo * d, d,
                    1.0f, dx, lddx);
    if (dtable)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, d, nx, h->scale, w, R, x, ldx, 1.0f,
                    dtable + (size_t)lo * d, d);
}

/* w[i][row] = sum of prob[i][j] over the keys j that read row. */
static void sum_prob_by_row(rel_map m, const posemb_pe_head *h, int lo, int R, const float *prob, int ldp, float *w)
{
    int fast = keys_consecutive(h);
    memset(w, 0, (size_t)h->nq * R * sizeof *w);
    for (int i = 0; i < h->nq; i++) scatter_query(m, h, lo, fast, i, w + (size_t)i * R, prob + (size_t)i * ldp, 0);
}

void rel_values_forward(rel_map m, const posemb_pe_head *h, const float *table, const float *prob, int ldp, float *z,
                        int ldz, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1;
    sum_prob_by_row(m, h, lo, R, prob, ldp, scratch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h->nq, d, R, 1.0f, scratch, R, table + (size_t)lo * d, d,
                1.0f, z, ldz);
}

void rel_values_backward(rel_map m, const posemb_pe_head *h, const float *table, const float *prob, int ldp,
                         const float *dz, int lddz, float *dprob, int lddp, float *dtable, float *scratch)
{
    if (h->nq <= 0 || h->nk <= 0) return;
    int lo, hi, d = h->d;
    rows_used(m, h, &lo, &hi);
    int R = hi - lo + 1;
    float *g = scratch; /* [nq, R]: dz_i . T[row] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h->nq, R, d, 1.0f, dz, lddz, table + (size_t)lo * d, d, 0.0f,
                g, R);
    int fast = keys_consecutive(h);
    for (int i = 0; i < h->nq; i++) gather_query(m, h, lo, fast, i, dprob + (size_t)i * lddp, g + (size_t)i * R, 0);
    if (!dtable) return;
    sum_prob_by_row(m, h, lo, R, prob, ldp, scratch);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, d, h->nq, 1.0f, scratch, R, dz, lddz, 1.0f,
                dtable + (size_t)lo * d, d);
}
