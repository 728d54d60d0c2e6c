/* Analysis of built-in position embeddings. */
#ifndef POSEMB_ANALYSIS_H
#define POSEMB_ANALYSIS_H

#include "posemb/api.h"

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/pe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_pe_matrix {
    int size;       /* the matrix is size x size */
    float *data;    /* from the arena */
    char what[128]; /* e.g. "dot similarity of the APE rows" */
} posemb_pe_matrix;

/* The matrix whose properties describe a PE over n positions (its first
 * component when combined): an APE's dot similarity P P^T; a relative
 * table's similarity over its vectors (one row per distance); RoPE's kernel
 * sum_m cos(theta_m (j - i)); a bias's head average; CoPE's similarity
 * over its vectors by count. ERANGE for 'none', which has no positional
 * term, for a matrix of zeros (CoPE's table as initialised), or n past an
 * APE table; EINVAL for n < 1, ENOMEM. out->data comes from a, valid until it is freed. */
POSEMB_API posemb_status posemb_pe_matrix_of(posemb_pe *p, int n, posemb_arena *a, posemb_pe_matrix *out,
                                             posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
