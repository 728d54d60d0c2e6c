/* The rotary core (rope.c) that xpos (xpos.c) shares: the same rotation,
 * scalings and tables, with xPos's per-pair scale on top. */
#ifndef POSEMB_PE_ROPE_H
#define POSEMB_PE_ROPE_H

#include "family.h"

/* rope's configure; xpos = 1 adds xPos's scale (option scale_base, gamma). */
posemb_status rope_configure_as(pe_comp *c, pe_opts *o, int xpos, posemb_error *err);
void rope_destroy(pe_comp *c);
void rope_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk);
void rope_qk_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk, float *dq,
                      int lddq, float *dk, int lddk);
posemb_status rope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err);

#endif
