/* STRING (rope_string.c): RoPE's logits with large distances shifted onto
 * well-trained ones at evaluation, for rope.c's scores hook. */
#ifndef POSEMB_PE_ROPE_STRING_H
#define POSEMB_PE_ROPE_STRING_H

#include "family.h"

typedef struct rope_string rope_string;

/* Rotates n rows of x (stride ld) by the angle of position pos times sign,
 * without an attention factor: what rope.c gives STRING. */
typedef void (*rope_rotate_fn)(const pe_comp *c, float *x, int ld, int n, int32_t pos, float sign);

/* Reads string=S, string_window=W, string_factor=F into *out (NULL when the
 * spec gives no string=: STRING is off). EINVAL for W >= S, ENOMEM. */
posemb_status rope_string_configure(pe_comp *c, pe_opts *o, rope_string **out, posemb_error *err);
void rope_string_free(rope_string *s);
/* s [nq, nk] <- the scaled logits of the rotated q and k, shifted past S. */
void rope_string_scores_forward(const rope_string *s, pe_comp *c, rope_rotate_fn rot, const posemb_pe_head *h,
                                const float *q, int ldq, const float *k, int ldk, float *out, int lds);
/* Its backward to the rotated q (overwritten) and k (overwritten, or added to when accumulate). */
void rope_string_scores_backward(const rope_string *s, pe_comp *c, rope_rotate_fn rot, const posemb_pe_head *h,
                                 const float *q, int ldq, const float *k, int ldk, const float *ds, int ldds, float *dq,
                                 int lddq, float *dk, int lddk, int accumulate);

#endif
