/* What the other layers, the CLI and the tests call of posemb/pe.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_PE_PE_INTERNAL_H
#define POSEMB_PE_PE_INTERNAL_H

#include "posemb/pe.h"

/* The matrices that define the PE for positions 0..n-1 (what `posemb pe`
 * writes), allocated from a, which owns them. EINVAL for n < 1, ERANGE for
 * n past an APE table's rows, ENOMEM. */
posemb_status posemb_pe_export_matrices(posemb_pe *p, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err);
/* Closed forms, for tests and analysis: HF T5's bucket of distance r = j - i
 * (computed in float32 as HF does). */
int posemb_pe_t5_bucket(int r, int buckets, int max_distance, int bidirectional);
/* ALiBi's slopes for H heads (BLOOM's rule when H is not a power of two). */
void posemb_pe_alibi_slopes(int H, float *out);
/* Where the first component of a spec ends: at the '+' that joins it to the
 * next (a '+' in a number's exponent, as in base=1e+4, joins nothing), or at
 * the terminating NUL. */
const char *posemb_pe_component_end(const char *comp);

/* 1 when the PE computes the logits from q and k itself (PoPE, PaTH, RoPE with STRING: hook 7). */
int posemb_pe_has_scores(const posemb_pe *p);
/* 1 when the PE has no logits hook, or one that takes a block of query rows (pe_family.logits_by_rows). */
int posemb_pe_logits_by_rows(const posemb_pe *p);
/* POSEMB_PE_AXES when the PE reads a position per axis (rope:mrope=), 1 otherwise: a model refuses
 * multi-axis position ids for a PE that would not read them. */
int posemb_pe_n_axes(const posemb_pe *p);

/* 1 when parameter memory (and, with with_grads, gradient memory) is bound;
 * forward passes need the first, backward passes both. */
int posemb_pe_is_bound(const posemb_pe *p, int with_grads);
/* pos [T]: T distinct positions drawn uniformly from [0, N) and sorted, a
 * function of key alone: what a model feeds such a PE instead of 0..T-1.
 * EINVAL without random:max=; ERANGE for T outside [1, N]. */
posemb_status posemb_pe_draw_positions(const posemb_pe *p, uint64_t key, int T, int32_t *pos, posemb_error *err);

/* Logits in place of the engine's scale q k^T (PoPE), for the engine:
 * s [nq, nk] <- one head's scaled logits; returns 1 when it did so (the
 * component acts in h->layer), 0 when the engine's product applies. */
int posemb_pe_scores_forward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                             float *s, int lds);
/* Its backward: dq [nq, d] overwritten, dk [nk, d] overwritten or (accumulate)
 * added to, from ds = d loss / d s; returns 0 (nothing done) where the
 * forward returned 0. */
int posemb_pe_scores_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                              const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate);

/* Attention weights in place of the softmax (stick-breaking), for the engine:
 * 1 when p's attention component has them (in some layer). */
int posemb_pe_has_weights(const posemb_pe *p);
/* s [nq, nk]: the masked, scaled logits of one head, turned into its weights;
 * returns 1 when it did so (the component acts in h->layer), 0 when the
 * engine's softmax applies. */
int posemb_pe_weights_forward(posemb_pe *p, const posemb_pe_head *h, float *s, int lds);
/* dw [nq, nk], d loss / d weights, becomes d loss / d logits, given the
 * weights w; returns 1, or 0 (nothing done) where the forward returned 0. */
int posemb_pe_weights_backward(posemb_pe *p, const posemb_pe_head *h, const float *w, int ldw, float *dw, int lddw);

#endif
