/* Relative tables evaluated the efficient way (shared spec, section 2): the
 * n x n x d tensor of relative vectors is never built. A table T has one
 * row of width d per clipped distance; a (query, key) pair reads row
 *     row(i, j) = clip + sign * clamp(kpos_j - qpos_i, -clip, clip)
 * Shaw et al. use sign +1 (r = j - i, rows -k..k); Hugging Face's
 * relative_key uses sign -1 (row = i - j + L - 1, clip = L - 1).
 * Products go through BLAS on the rows a head actually touches; the
 * gathers and scatters are O(nq nk). */
#ifndef POSEMB_PE_RELTABLE_H
#define POSEMB_PE_RELTABLE_H

#include "posemb/pe.h"

typedef struct rel_map {
    int clip, sign;
} rel_map;

static inline int rel_row(rel_map m, int32_t qp, int32_t kp)
{
    int64_t r = (int64_t)kp - (int64_t)qp;
    if (r < -m.clip) r = -m.clip;
    if (r > m.clip) r = m.clip;
    return m.clip + m.sign * (int)r;
}

/* Floats of scratch the functions below need for a head of at most n
 * queries and keys (clamping keeps every head within 2 clip + 1 rows). */
size_t rel_scratch_floats(rel_map m, int n);

/* s[i][j] += scale * x_i . T[row(i,j)] (key_side = 0, x = queries) or
 *            scale * x_j . T[row(i,j)] (key_side = 1, x = keys). */
void rel_logits_forward(rel_map m, const posemb_pe_head *h, int key_side, const float *x, int ldx, const float *table,
                        float *s, int lds, float *scratch);
/* Backward of the above: dx += d/dx (may be NULL), dtable += d/dT (may be NULL). */
void rel_logits_backward(rel_map m, const posemb_pe_head *h, int key_side, const float *x, int ldx, const float *table,
                         const float *ds, int ldds, float *dx, int lddx, float *dtable, float *scratch);
/* z_i += sum_j prob[i][j] T[row(i,j)]. */
void rel_values_forward(rel_map m, const posemb_pe_head *h, const float *table, const float *prob, int ldp, float *z,
                        int ldz, float *scratch);
/* dprob[i][j] += dz_i . T[row(i,j)]; dtable[row] += sum prob[i][j] dz_i (dtable may be NULL). */
void rel_values_backward(rel_map m, const posemb_pe_head *h, const float *table, const float *prob, int ldp,
                         const float *dz, int lddz, float *dprob, int lddp, float *dtable, float *scratch);

#endif
