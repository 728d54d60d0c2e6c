/* The cos and sin tables of a rotation and the turn of one pair: what rope.c
 * and rope_mrope.c both rotate with. Header only. */
#ifndef POSEMB_PE_ROPE_TABLES_H
#define POSEMB_PE_ROPE_TABLES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The cos and sin tables [max_len, nfreq] a rotation uses and the frequencies
 * for positions past them. */
typedef struct rope_tables {
    const float *cos_t, *sin_t; /* attention factor included */
    const double *theta;
    double attn; /* the attention factor the tables hold */
} rope_tables;

/* cos_t, sin_t [max_len, nf] <- attn cos(theta_m p), attn sin(theta_m p). */
static inline void rope_tables_fill(const double *theta, int nf, int max_len, double attn, float *cos_t, float *sin_t)
{
    for (int p = 0; p < max_len; p++)
        for (int m = 0; m < nf; m++) {
            double a = theta[m] * p;
            cos_t[(size_t)p * nf + m] = (float)(attn * cos(a));
            sin_t[(size_t)p * nf + m] = (float)(attn * sin(a));
        }
}

/* cos and sin (times the attention factor) of pair m of nf at position pos:
 * from the tables for 0 <= pos < max_len, else computed in double. */
static inline void rope_tables_cs(const rope_tables *t, int nf, int max_len, int32_t pos, int m, float *cs, float *sn)
{
    if (pos >= 0 && pos < max_len) {
        *cs = t->cos_t[(size_t)pos * nf + m];
        *sn = t->sin_t[(size_t)pos * nf + m];
        return;
    }
    double a = t->theta[m] * pos;
    *cs = (float)(t->attn * cos(a));
    *sn = (float)(t->attn * sin(a));
}

/* Turns pair m of nf in row (halves: m with m + nf; else 2m with 2m + 1) by
 * the angle whose cos and sin are cs, sn. */
static inline void rope_turn(float *row, int m, int nf, int halves, float cs, float sn)
{
    int ia = halves ? m : 2 * m, ib = halves ? m + nf : 2 * m + 1;
    float a = row[ia], b = row[ib];
    row[ia] = a * cs - b * sn;
    row[ib] = a * sn + b * cs;
}

#endif
