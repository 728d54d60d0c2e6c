/* M-RoPE (Wang et al. 2024, Qwen2-VL): each rotated pair of q and k belongs to
 * one axis of a 3D position (temporal, height, width) and turns by that
 * axis's id. Text gives every axis the same id, which is plain RoPE.
 *
 * Which pair reads which axis, as Hugging Face computes it:
 * - sections (Qwen2-VL, apply_multimodal_rotary_pos_emb of
 *   transformers 928b5565ecea's modeling_qwen2_vl.py): cos and sin split
 *   into mrope_section * 2 chunks, chunk i from axis i % 3, so pair m reads
 *   the axis whose section holds m (both halves alike);
 * - interleaved (Qwen3-VL, apply_interleaved_mrope of transformers
 *   00709b862bb8's modeling_qwen3_vl.py): pair m reads axis 1 when
 *   m % 3 == 1 and m < 3 H, axis 2 when m % 3 == 2 and m < 3 W, axis 0
 *   otherwise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rope_mrope.h"

/* "T|H|W" into three section sizes; 0 on a malformed list. */
static int parse_sections(const char *s, int out[POSEMB_PE_AXES])
{
    for (int a = 0; a < POSEMB_PE_AXES; a++) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > ROPE_MAX_FREQ) return 0;
        out[a] = (int)v;
        if (a < POSEMB_PE_AXES - 1 && *end != '|') return 0;
        s = end + (a < POSEMB_PE_AXES - 1);
        if (a == POSEMB_PE_AXES - 1 && *end) return 0;
    }
    return 1;
}

static void make_axis_map(rope_mrope *mr, int nfreq)
{
    for (int m = 0, a = 0, left = mr->sections[0]; m < nfreq; m++) {
        if (mr->interleaved) {
            int r = m % 3;
            mr->axis[m] = (unsigned char)(r > 0 && m < 3 * mr->sections[r] ? r : 0);
            continue;
        }
        while (left == 0 && a < POSEMB_PE_AXES - 1) left = mr->sections[++a];
        mr->axis[m] = (unsigned char)a;
        left--;
    }
}

posemb_status rope_mrope_configure(pe_comp *c, pe_opts *o, int nfreq, rope_mrope **out, posemb_error *err)
{
    *out = NULL;
    int interleaved;
    posemb_status st = pe_opt_bool(o, "mrope_interleaved", 0, &interleaved, err);
    if (st) return st;
    const char *list = pe_opt_str(o, "mrope");
    if (!list) {
        if (pe_opt_given(o, "mrope_interleaved"))
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope mrope_interleaved needs mrope=T|H|W", o->spec);
        return POSEMB_OK;
    }
    rope_mrope *mr = calloc(1, sizeof *mr);
    if (!mr) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    int *sec = mr->sections;
    if (!parse_sections(list, sec) || sec[0] + sec[1] + sec[2] != nfreq) {
        free(mr);
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope mrope=%s must be three pair counts T|H|W summing to the %d rotated pairs",
                           o->spec, list, nfreq);
    }
    mr->interleaved = interleaved;
    make_axis_map(mr, nfreq);
    pe_canon_add(c, "mrope=%d|%d|%d", sec[0], sec[1], sec[2]);
    if (interleaved) pe_canon_add(c, "mrope_interleaved=on");
    c->multi_axis = 1;
    *out = mr;
    return POSEMB_OK;
}

void rope_mrope_free(rope_mrope *mr) { free(mr); }

void rope_mrope_rotate_rows(const rope_mrope *mr, const pe_comp *c, const rope_tables *t, int nf, int halves, float *x,
                            int ld, int n, const int32_t *axes, long stride, float sign)
{
    for (int i = 0; i < n; i++) {
        float *row = x + (size_t)i * ld;
        for (int m = 0; m < nf; m++) {
            float cs, sn;
            rope_tables_cs(t, nf, c->dims.max_len, axes[mr->axis[m] * stride + i], m, &cs, &sn);
            rope_turn(row, m, nf, halves, cs, sn * sign);
        }
    }
}

void rope_mrope_kernel_grid(const rope_mrope *mr, const double *theta, int nfreq, double attn, int side, float *out)
{
    int w = 2 * side - 1;
    for (int dy = -(side - 1); dy < side; dy++)
        for (int dx = -(side - 1); dx < side; dx++) {
            double acc = 0.0;
            for (int m = 0; m < nfreq; m++) {
                int off = mr->axis[m] == 1 ? dy : mr->axis[m] == 2 ? dx : 0;
                acc += cos(theta[m] * off);
            }
            out[(size_t)(dy + side - 1) * w + dx + side - 1] = (float)(attn * attn * acc);
        }
}
