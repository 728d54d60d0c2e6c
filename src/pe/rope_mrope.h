/* M-RoPE (rope_mrope.c): rope's pairs split between the temporal, height and
 * width axes of a multi-axis position, each pair rotated by its own axis's id
 * (Qwen2-VL's sections; Qwen3-VL's interleaved form). */
#ifndef POSEMB_PE_ROPE_MROPE_H
#define POSEMB_PE_ROPE_MROPE_H

#include "family.h"
#include "rope_tables.h"
#include "rope_scale.h"

typedef struct rope_mrope {
    int sections[POSEMB_PE_AXES]; /* pairs per axis, summing to the rotated pairs */
    int interleaved;              /* Qwen3-VL: T H W T H W ... instead of T..T H..H W..W */
    unsigned char axis[ROPE_MAX_FREQ];
} rope_mrope;

/* Reads mrope=T|H|W and mrope_interleaved=on|off for nfreq rotated pairs; *out
 * stays NULL when the spec has no mrope= (EINVAL: sections that do not sum to
 * nfreq, mrope_interleaved alone; ENOMEM). Sets c->multi_axis. */
posemb_status rope_mrope_configure(pe_comp *c, pe_opts *o, int nfreq, rope_mrope **out, posemb_error *err);
void rope_mrope_free(rope_mrope *mr);

/* Rotates n rows of x [n, ld] by sign (-1: the transpose): pair m of nf
 * (halves: m with m + nf; else 2m with 2m + 1) of row i by the angle of
 * position axes[axis_m * stride + i]. */
void rope_mrope_rotate_rows(const rope_mrope *mr, const pe_comp *c, const rope_tables *t, int nf, int halves, float *x,
                            int ld, int n, const int32_t *axes, long stride, float sign);

/* The kernel of two image patches at the same time over a side x side grid:
 * out [(2 side - 1)^2], row dy + side - 1, column dx + side - 1, is the sum over
 * pairs of cos(w_m offset), the offset of pair m's axis (0 on the temporal one). */
void rope_mrope_kernel_grid(const rope_mrope *mr, const double *theta, int nfreq, double attn, int side, float *out);

#endif
