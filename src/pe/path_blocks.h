/* path_blocks: PaTH's logits by blocks of tokens (internal to path.c).
 *
 * The logits s_ij = scale q_i^T H_i ... H_(j+1) k_j, H_t = I - beta_t w_t w_t^T, of one (sequence, head),
 * computed as the paper computes them (Yang et al. 2025): the tokens in blocks of C; the
 * product of a block's maps in compact WY form, H_b ... H_a = I - W^T T W with T = (I + diag(beta)
 * stril(W W^T))^-1 diag(beta) lower triangular (the UT transform); so that every logit is a sum of small
 * matrix products:
 *   in a block:        S = Q K^T - A T B,  A = tril(Q W^T), B = W K^T below the diagonal;
 *   between blocks:    s_ij = q~_i^T P_(m-1) ... P_(k+1) k~_j, q~ = q after its own block's maps up to i,
 *                      k~ = k after its own block's maps after j, P = I - W^T T W the block's whole map.
 * Work: O(n^2 d) for the logits, plus O(n^2 d^2 / C) for carrying each query block back through the d x d
 * maps of the blocks before it: with C = d, about twice the O(n^2 d) of carrying one vector per query back over
 * every key, done by sgemm; small C costs more (C = 1: O(n^2 d^2)).
 * The backward recomputes what the forward built (no state is kept between the calls). */
#ifndef POSEMB_PE_PATH_BLOCKS_H
#define POSEMB_PE_PATH_BLOCKS_H

#include <stddef.h>

typedef struct path_blocks {
    int n;             /* tokens (queries = keys) */
    int d;             /* head dim */
    int C;             /* tokens per block */
    const float *w;    /* [n, d] the maps' unit vectors */
    const float *beta; /* [n] their strengths, in (0, 2) */
    float scale;
} path_blocks;

/* Floats of work for n tokens of head dim d in blocks of C (the caller's, per thread). */
size_t path_blocks_floats(int n, int d, int C);

/* s [n, n] (ld lds) <- the logits; zero right of the diagonal. */
void path_blocks_forward(const path_blocks *h, const float *q, int ldq, const float *k, int ldk, float *s, int lds,
                         float *work);

/* From ds [n, n]: dq (overwritten), dk (overwritten, or added to when accumulate), dw [n, d] and dbeta [n]
 * added to. ds right of the diagonal is not read. */
void path_blocks_backward(const path_blocks *h, const float *q, int ldq, const float *k, int ldk, const float *ds,
                          int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate, float *dw, float *dbeta,
                          float *work);

#endif
