/* rope: rotary position embedding (Su et al. 2021). Each pair of query and
 * key coordinates is rotated by pos * theta_m, theta_m = base^(-2m/r) for
 * the r rotated dimensions (r = d * frac, even), so q_i . k_j depends on
 * j - i only. Pairing halves (m, m + r/2; GPT-NeoX, LLaMA, HF default) or
 * interleaved (2m, 2m+1; GPT-J). Scaling linear divides positions by
 * factor (position interpolation, Chen et al. 2023); ntk raises the base to
 * base * factor^(r/(r-2)) (NTK-aware scaling). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "core/simd.h"

typedef struct rope_state {
    int halves, rot, nfreq; /* rot = rotated dims; nfreq = rot / 2 */
    int scaling;            /* 0 none, 1 linear, 2 ntk */
    double base, frac, factor, eff_base, pos_div;
    double *theta;        /* [nfreq]: fixed, so kept in double (the closed form to float rounding) */
    float *cos_t, *sin_t; /* [max_len, nfreq] */
} rope_state;

static posemb_status read_options(pe_comp *c, rope_state *s, pe_opts *o, posemb_error *err)
{
    static const char *const pairings[] = {"halves", "interleaved", NULL};
    static const char *const scalings[] = {"none", "linear", "ntk", NULL};
    int interleaved;
    posemb_status st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (!st) st = pe_opt_enum(o, "pairing", pairings, 0, &interleaved, err);
    if (!st) st = pe_opt_double(o, "frac", 1.0, 1e-9, 1.0, &s->frac, err);
    if (!st) st = pe_opt_enum(o, "scaling", scalings, 0, &s->scaling, err);
    if (!st) st = pe_opt_double(o, "factor", 1.0, 1.0, 1e6, &s->factor, err);
    if (st) return st;
    if (!s->scaling && s->factor != 1.0)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope option factor needs scaling=linear or scaling=ntk",
                           o->spec);
    s->halves = !interleaved;
    s->rot = 2 * (int)(c->head_dim * s->frac / 2);
    if (s->rot < 2 || (s->scaling == 2 && s->rot < 4))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope rotates %d of %d dims (frac=%g); need >= %d", o->spec,
                           s->rot, c->head_dim, s->frac, s->scaling == 2 ? 4 : 2);
    pe_canon_num(c, "base", s->base);
    pe_canon_add(c, "pairing=%s", pairings[interleaved]);
    pe_canon_num(c, "frac", s->frac);
    pe_canon_add(c, "scaling=%s", scalings[s->scaling]);
    if (s->scaling) pe_canon_num(c, "factor", s->factor);
    return POSEMB_OK;
}

static posemb_status rope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    rope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    c->state = s;
    posemb_status st = read_options(c, s, o, err);
    if (st) return st;
    s->nfreq = s->rot / 2;
    s->eff_base = s->scaling == 2 ? s->base * pow(s->factor, (double)s->rot / (s->rot - 2)) : s->base;
    s->pos_div = s->scaling == 1 ? s->factor : 1.0;
    size_t n = (size_t)c->dims.max_len * s->nfreq;
    s->theta = malloc((size_t)s->nfreq * sizeof(double));
    s->cos_t = malloc(n * sizeof(float));
    s->sin_t = malloc(n * sizeof(float));
    if (!s->theta || !s->cos_t || !s->sin_t) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    pe_sinusoid_freqs(s->eff_base, s->rot, s->theta);
    for (int p = 0; p < c->dims.max_len; p++)
        for (int m = 0; m < s->nfreq; m++) {
            double a = s->theta[m] * (p / s->pos_div);
            s->cos_t[(size_t)p * s->nfreq + m] = (float)cos(a);
            s->sin_t[(size_t)p * s->nfreq + m] = (float)sin(a);
        }
    return POSEMB_OK;
}

static void rope_destroy(pe_comp *c)
{
    rope_state *s = c->state;
    if (!s) return;
    free(s->theta);
    free(s->cos_t);
    free(s->sin_t);
    free(s);
}

/* Rotates the pairs of one row by angle(pos) * sign (sign -1: the transpose). */
static void rotate_row(const pe_comp *c, float *x, int32_t pos, float sign)
{
    const rope_state *s = c->state;
    int half = s->nfreq;
    for (int m = 0; m < half; m++) {
        float cs, sn;
        if (pos >= 0 && pos < c->dims.max_len) {
            cs = s->cos_t[(size_t)pos * half + m];
            sn = s->sin_t[(size_t)pos * half + m];
        } else {
            double a = s->theta[m] * (pos / s->pos_div);
            cs = (float)cos(a);
            sn = (float)sin(a);
        }
        sn *= sign;
        int ia = s->halves ? m : 2 * m, ib = s->halves ? m + half : 2 * m + 1;
        float a = x[ia], b = x[ib];
        x[ia] = a * cs - b * sn;
        x[ib] = a * sn + b * cs;
    }
}

POSEMB_KERNEL static void rotate_rows(const pe_comp *c, float *x, int ld, int n, const int32_t *pos, float sign)
{
    for (int i = 0; i < n; i++) rotate_row(c, x + (size_t)i * ld, pos[i], sign);
}

static void rope_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    rotate_rows(c, q, ldq, h->nq, h->qpos, 1.0f);
    rotate_rows(c, k, ldk, h->nk, h->kpos, 1.0f);
}

static void rope_qk_backward(pe_comp *c, const posemb_pe_head *h, float *dq, int ldq, float *dk, int ldk)
{
    rotate_rows(c, dq, ldq, h->nq, h->qpos, -1.0f);
    rotate_rows(c, dk, ldk, h->nk, h->kpos, -1.0f);
}

static posemb_status rope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    rope_state *s = c->state;
    posemb_pe_named_matrix *k =
        pe_export_add(out, a, "kernel", "sum_m cos(theta_m (i - j) / scale): q.k of constant unit pairs", n, n, err);
    posemb_pe_named_matrix *f =
        k ? pe_export_add(out, a, "rope_frequencies", "row m: theta_m (radians per position)", s->nfreq, 1, err) : NULL;
    posemb_pe_named_matrix *ang =
        f ? pe_export_add(out, a, "angles", "row x, column m: the rotation angle of pair m at position x", n, s->nfreq,
                          err)
          : NULL;
    if (!ang) return err ? err->code : POSEMB_ENOMEM;
    for (int m = 0; m < s->nfreq; m++) f->data[m] = (float)s->theta[m];
    for (int x = 0; x < n; x++)
        for (int m = 0; m < s->nfreq; m++)
            ang->data[(size_t)x * s->nfreq + m] = (float)(s->theta[m] * (x / s->pos_div));
    /* The kernel depends on |i - j| only: one profile, then a Toeplitz fill. */
    float *profile = posemb_arena_floats(a, (size_t)n);
    if (!profile) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    for (int dist = 0; dist < n; dist++) {
        double acc = 0.0;
        for (int m = 0; m < s->nfreq; m++) acc += cos(s->theta[m] * (dist / s->pos_div));
        profile[dist] = (float)acc;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) k->data[(size_t)i * n + j] = profile[abs(j - i)];
    return POSEMB_OK;
}

const pe_family pe_family_rope = {
    .name = "rope",
    .kind = PE_KIND_ATTENTION,
    .summary = "rotary embedding of q and k per head (Su et al. 2021)",
    .options = "base=NUM (10000), pairing=halves|interleaved, frac=NUM (1), scaling=none|linear|ntk, factor=NUM (1)",
    .configure = rope_configure,
    .destroy = rope_destroy,
    .qk_forward = rope_qk_forward,
    .qk_backward = rope_qk_backward,
    .export = rope_export,
};
