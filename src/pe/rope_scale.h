/* RoPE's frequencies and attention factor under Hugging Face's scaling types
 * (modeling_rope_utils.py), the two ways to rotate part of a head and
 * p-RoPE: the options of rope (rope.c) that shape them, and the
 * frequencies at a sequence length. */
#ifndef POSEMB_ROPE_SCALE_H
#define POSEMB_ROPE_SCALE_H

#include "family.h"

#define ROPE_MAX_FREQ 1024 /* rotated pairs per head: head width <= 2048 */

typedef enum rope_kind {
    ROPE_NONE,
    ROPE_LINEAR,
    ROPE_NTK,
    ROPE_DYNAMIC,
    ROPE_YARN,
    ROPE_LLAMA3,
    ROPE_LONGROPE
} rope_kind;

typedef struct rope_scale {
    rope_kind kind;
    int rot, nfreq;   /* rotated dims, pairs (nfreq = rot / 2); the whole head with partial=proportional */
    int proportional; /* partial=proportional: frac picks the pairs of the whole head that rotate */
    int original;     /* L0: the context the model was trained at (original=; default the PE's max-len) */
    int by_length;    /* frequencies change past L0 (dynamic, longrope) */
    int keep;         /* p-RoPE, proportional: the pairs that rotate, the highest frequencies first */
    int truncate;     /* yarn: floor/ceil the correction range */
    double base, frac, factor, p;
    double beta_fast, beta_slow, low_freq_factor, high_freq_factor;
    double attn;              /* the attention factor on cos and sin */
    double *theta;            /* [nfreq] the frequencies up to L0 */
    double *short_f, *long_f; /* longrope's factors [nfreq] */
} rope_scale;

/* Reads base, frac, scaling and the scaling's options (pairing: the name
 * rope read, for the canonical spec, which keeps its historical order). */
posemb_status rope_scale_configure(rope_scale *s, pe_comp *c, pe_opts *o, const char *pairing, posemb_error *err);

/* theta [nfreq] <- the effective frequencies at sequence length L (angle =
 * position x theta_m). */
void rope_scale_freqs(const rope_scale *s, int L, double *theta);
/* theta [nfreq] <- the unscaled frequencies of another base over the same
 * rotated dims (rope's local_base: Gemma 3's local layers). */
void rope_scale_base_freqs(const rope_scale *s, double base, double *theta);

void rope_scale_free(rope_scale *s);

#endif
