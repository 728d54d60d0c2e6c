/* rope: rotary position embedding (Su et al. 2021). Each pair of query and
 * key coordinates is rotated by pos * w_m, w_m = base^(-2m/r) for the r
 * rotated dimensions (r = d * frac, even), so q_i . k_j depends on j - i
 * only. Pairing halves (m, m + r/2; GPT-NeoX, LLaMA, HF default) or
 * interleaved (2m, 2m+1; GPT-J). Part of a head rotates as GPT-NeoX's
 * block (partial=neox: the first r dims) or HF's proportional form
 * (partial=proportional: pairs over the whole head, the lowest frequencies
 * 0); rope_scale.c reads which.
 *
 * Scaling, as Hugging Face's modeling_rope_utils.py computes the frequencies
 * (rope_scale.c): linear (position interpolation), ntk, dynamic (NTK
 * recomputed for the sequence's length), yarn, llama3 and longrope; yarn
 * and longrope multiply cos and sin by an attention factor, so q.k grows by
 * its square. p=P (p-RoPE) keeps only the fraction P of highest frequencies.
 * Frequencies that depend on the sequence length (dynamic; longrope past the
 * original length) are computed per call from the largest position in it;
 * the rest come from tables made at configure time.
 *
 * local_base=B with local_layers=LIST: in the listed layers the same pairs
 * rotate at the unscaled frequencies of base B, attention factor 1 (Gemma 3:
 * its sliding layers at rope_local_base_freq 10000, the global ones at
 * rope_theta 1e6 with linear scaling). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/simd.h"
#include "family.h"
#include "rope.h"
#include "rope_scale.h"
#include "rope_mrope.h"
#include "rope_string.h"
#include "rope_tables.h"
#include "core/arena_internal.h"

typedef struct rope_state {
    int halves;
    rope_scale sc;
    float *cos_t, *sin_t; /* [max_len, nfreq]: the short-length frequencies, attention factor included */
    /* xPos (xpos.c): pair m of a query at position x is scaled by zeta_m^((x - c)/gamma), a key's by the
     * inverse, c = L/2 of the call (x-transformers'); xscale [2 max_len + 1, nfreq] holds zeta_m^(t/gamma),
     * t = -max_len..max_len */
    int xpos;
    double gamma, *log_zeta; /* [nfreq] */
    float *xscale;
    /* dynamic, longrope: per thread, the tables of the last length past L0 (cos then sin, [max_len, nfreq] each),
     * that length and its frequencies */
    pe_slots long_tab;
    int *long_len;
    double *long_theta; /* [max_threads, nfreq] */
    /* local_base: the layers it holds in (local_on [n_layers]), its frequencies and tables [max_len, nfreq] */
    unsigned char *local_on;
    double *local_theta;
    float *lcos_t, *lsin_t;
    rope_string *string; /* STRING at evaluation (rope_string.c); NULL: off */
    rope_mrope *mrope;   /* M-RoPE's axis per pair (rope_mrope.c); NULL: one axis */
} rope_state;

/* zeta_m = (2m + 0.4 r)/(1.4 r) per pair and its power table. */
static posemb_status xpos_tables(pe_comp *c, rope_state *s, posemb_error *err)
{
    int nf = s->sc.nfreq, M = c->dims.max_len;
    s->log_zeta = malloc((size_t)nf * sizeof *s->log_zeta);
    s->xscale = malloc((size_t)(2 * M + 1) * nf * sizeof *s->xscale);
    if (!s->log_zeta || !s->xscale) return posemb_fail(err, POSEMB_ENOMEM, "xpos: out of memory");
    for (int m = 0; m < nf; m++) s->log_zeta[m] = log((2.0 * m + 0.4 * s->sc.rot) / (1.4 * s->sc.rot));
    for (int t = -M; t <= M; t++)
        for (int m = 0; m < nf; m++) s->xscale[(size_t)(t + M) * nf + m] = (float)exp(s->log_zeta[m] * t / s->gamma);
    return POSEMB_OK;
}

posemb_status rope_configure_as(pe_comp *c, pe_opts *o, int xpos, posemb_error *err)
{
    static const char *const pairings[] = {"halves", "interleaved", NULL};
    rope_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    c->state = s;
    int interleaved;
    posemb_status st = pe_opt_enum(o, "pairing", pairings, 0, &interleaved, err);
    if (!st) st = rope_scale_configure(&s->sc, c, o, pairings[interleaved], err);
    if (!st && xpos) st = pe_opt_double(o, "scale_base", 512.0, 1e-3, 1e9, &s->gamma, err);
    if (st) return st;
    if (s->sc.by_length) {
        int T = c->dims.max_threads;
        s->long_len = calloc((size_t)T, sizeof *s->long_len);
        s->long_theta = calloc((size_t)T * s->sc.nfreq, sizeof *s->long_theta);
        if (!s->long_len || !s->long_theta) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
        if ((st = pe_slots_init(&s->long_tab, T, (size_t)2 * c->dims.max_len * s->sc.nfreq, err))) return st;
    }
    if ((s->xpos = xpos)) {
        pe_canon_num(c, "scale_base", s->gamma);
        if ((st = xpos_tables(c, s, err))) return st;
    }
    s->halves = !interleaved;
    int nf = s->sc.nfreq;
    size_t n = (size_t)c->dims.max_len * nf;
    s->cos_t = malloc(n * sizeof(float));
    s->sin_t = malloc(n * sizeof(float));
    if (!s->cos_t || !s->sin_t) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    rope_tables_fill(s->sc.theta, nf, c->dims.max_len, s->sc.attn, s->cos_t, s->sin_t);
    return POSEMB_OK;
}

/* local_base and local_layers: both or neither. */
static posemb_status local_configure(pe_comp *c, rope_state *s, pe_opts *o, posemb_error *err)
{
    double base;
    posemb_status st = pe_opt_double(o, "local_base", 10000.0, 1.0 + 1e-9, 1e12, &base, err);
    if (st) return st;
    if (!pe_opt_given(o, "local_base") != !pe_opt_given(o, "local_layers"))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope local_base and local_layers go together", o->spec);
    if (!pe_opt_given(o, "local_base")) return POSEMB_OK;
    pe_canon_num(c, "local_base", base);
    if ((st = pe_opt_layers(c, o, "local_layers", &s->local_on, err))) return st;
    int nf = s->sc.nfreq;
    size_t n = (size_t)c->dims.max_len * nf;
    s->local_theta = malloc((size_t)nf * sizeof *s->local_theta);
    s->lcos_t = malloc(n * sizeof(float));
    s->lsin_t = malloc(n * sizeof(float));
    if (!s->local_theta || !s->lcos_t || !s->lsin_t) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    rope_scale_base_freqs(&s->sc, base, s->local_theta);
    rope_tables_fill(s->local_theta, nf, c->dims.max_len, 1.0, s->lcos_t, s->lsin_t);
    return POSEMB_OK;
}

/* string=S: the scores hook instead of the engine's q.k, on plain or statically scaled RoPE. */
static posemb_status string_configure(pe_comp *c, rope_state *s, pe_opts *o, posemb_error *err)
{
    posemb_status st = rope_string_configure(c, o, &s->string, err);
    if (st || !s->string) {
        c->hooks &= ~(unsigned)PE_HOOK_SCORES;
        return st;
    }
    if (s->local_on || s->sc.by_length || s->sc.attn != 1.0)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope string= shifts plain RoPE's distances: not with local_base, a scaling "
                           "that depends on the length (dynamic, longrope) or one with an attention factor (yarn)",
                           o->spec);
    return POSEMB_OK;
}

/* mrope=T|H|W: on RoPE whose frequencies do not depend on the length or the layer. */
static posemb_status mrope_configure(pe_comp *c, rope_state *s, pe_opts *o, posemb_error *err)
{
    posemb_status st = rope_mrope_configure(c, o, s->sc.nfreq, &s->mrope, err);
    if (st || !s->mrope) return st;
    if (s->local_on || s->sc.by_length || s->string)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope mrope= is built for frequencies fixed per pair: not with local_base, "
                           "string= or a scaling that depends on the length (dynamic, longrope)",
                           o->spec);
    return POSEMB_OK;
}

static posemb_status rope_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    posemb_status st = rope_configure_as(c, o, 0, err);
    if (!st) st = local_configure(c, c->state, o, err);
    if (!st) st = string_configure(c, c->state, o, err);
    return st ? st : mrope_configure(c, c->state, o, err);
}

void rope_destroy(pe_comp *c)
{
    rope_state *s = c->state;
    if (!s) return;
    rope_scale_free(&s->sc);
    free(s->cos_t);
    free(s->sin_t);
    free(s->log_zeta);
    free(s->xscale);
    pe_slots_free(&s->long_tab);
    free(s->long_len);
    free(s->long_theta);
    free(s->local_on);
    free(s->local_theta);
    free(s->lcos_t);
    free(s->lsin_t);
    rope_string_free(s->string);
    rope_mrope_free(s->mrope);
    free(s);
}

/* Rotates the pairs of one row by angle(pos) * sign (sign -1: the transpose),
 * times the attention factor. */
static void rotate_row(const pe_comp *c, float *x, int32_t pos, float sign, const rope_tables *t)
{
    const rope_state *s = c->state;
    int half = s->sc.nfreq;
    for (int m = 0; m < half; m++) {
        float cs, sn;
        rope_tables_cs(t, half, c->dims.max_len, pos, m, &cs, &sn);
        rope_turn(x, m, half, s->halves, cs, sn * sign);
    }
}

/* rotate_row for n rows; a position inside the tables turns its row by
 * rope_turn in a loop over pairs with the pairing fixed, which the compiler
 * vectorises (rotate_row's per-pair lookup kept the loop scalar). The same
 * float operations in the same order: no FMA contraction (-std=c11, and
 * -ffp-contract=off on this file in CMakeLists.txt against other defaults),
 * so every clone gives rotate_row's bits. */
POSEMB_KERNEL static void rotate_rows(const pe_comp *c, float *x, int ld, int n, const int32_t *pos, float sign,
                                      const rope_tables *t)
{
    const rope_state *s = c->state;
    int half = s->sc.nfreq;
    for (int i = 0; i < n; i++) {
        float *xr = x + (size_t)i * ld;
        if (pos[i] < 0 || pos[i] >= c->dims.max_len) {
            rotate_row(c, xr, pos[i], sign, t);
            continue;
        }
        const float *cr = t->cos_t + (size_t)pos[i] * half, *sr = t->sin_t + (size_t)pos[i] * half;
        if (s->halves)
            for (int m = 0; m < half; m++) rope_turn(xr, m, half, 1, cr[m], sr[m] * sign);
        else
            for (int m = 0; m < half; m++) rope_turn(xr, m, half, 0, cr[m], sr[m] * sign);
    }
}

/* The tables of sequence length L past the original length, in the thread's
 * slot: made once while the calls of a thread keep that length (a batch's
 * heads and layers), so a call costs no more than plain RoPE's. */
static rope_tables long_tables(const pe_comp *c, rope_state *s, int slot, int L)
{
    int nf = s->sc.nfreq, n = L < c->dims.max_len ? L : c->dims.max_len;
    float *cos_t = pe_slot(&s->long_tab, slot), *sin_t = cos_t + (size_t)c->dims.max_len * nf;
    double *theta = s->long_theta + (size_t)slot * nf;
    if (s->long_len[slot] != L) {
        rope_scale_freqs(&s->sc, L, theta);
        rope_tables_fill(theta, nf, n, s->sc.attn, cos_t, sin_t);
        s->long_len[slot] = L;
    }
    return (rope_tables){.cos_t = cos_t, .sin_t = sin_t, .theta = theta, .attn = s->sc.attn};
}

/* The sequence length a call sees: its largest position + 1 (as HF's
 * max(position_ids) + 1). */
static int call_length(const posemb_pe_head *h)
{
    int32_t top = 0;
    for (int i = 0; i < h->nq; i++)
        if (h->qpos[i] > top) top = h->qpos[i];
    for (int j = 0; j < h->nk; j++)
        if (h->kpos[j] > top) top = h->kpos[j];
    return top + 1;
}

/* xPos: each pair of row i times zeta_m^(dir (pos_i - center)/gamma). A
 * pair's scale commutes with its rotation, so forward and backward apply
 * the same factors. */
static void xpos_scale_rows(const rope_state *s, int M, float *x, int ld, int n, const int32_t *pos, long center,
                            int dir)
{
    int nf = s->sc.nfreq;
    for (int i = 0; i < n; i++) {
        long t = dir * ((long)pos[i] - center);
        float *row = x + (size_t)i * ld;
        const float *f = t >= -M && t <= M ? s->xscale + (size_t)(t + M) * nf : NULL;
        for (int m = 0; m < nf; m++) {
            float g = f ? f[m] : (float)exp(s->log_zeta[m] * t / s->gamma);
            row[s->halves ? m : 2 * m] *= g;
            row[s->halves ? m + nf : 2 * m + 1] *= g;
        }
    }
}

/* n rows turned by their M-RoPE axes when the spec has sections and the call
 * gives axes, else by their 1D positions. */
static void rotate_side(const pe_comp *c, const rope_tables *t, float *x, int ld, int n, const int32_t *pos,
                        const int32_t *axes, int axis_stride, float sign)
{
    const rope_state *s = c->state;
    if (s->mrope && axes)
        rope_mrope_rotate_rows(s->mrope, c, t, s->sc.nfreq, s->halves, x, ld, n, axes, axis_stride, sign);
    else rotate_rows(c, x, ld, n, pos, sign, t);
}

/* q and k rotated forward (sign 1) or back (-1), with the frequencies of the
 * call's length where they depend on it, and xPos's scales. */
static void rotate_qk(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk, float sign)
{
    rope_state *s = c->state;
    int L = s->sc.by_length || s->xpos ? call_length(h) : 0;
    if (s->sc.by_length && h->batch_len > L) L = h->batch_len; /* HF: the batch's, not the row's */
    rope_tables t = {.cos_t = s->cos_t, .sin_t = s->sin_t, .theta = s->sc.theta, .attn = s->sc.attn};
    int local = s->local_on && h->layer >= 0 && h->layer < c->dims.n_layers && s->local_on[h->layer];
    if (local) t = (rope_tables){.cos_t = s->lcos_t, .sin_t = s->lsin_t, .theta = s->local_theta, .attn = 1.0};
    else if (s->sc.by_length && L > s->sc.original) t = long_tables(c, s, h->slot, L);
    rotate_side(c, &t, q, ldq, h->nq, h->qpos, h->qaxes, h->axis_stride, sign);
    rotate_side(c, &t, k, ldk, h->nk, h->kpos, h->kaxes, h->axis_stride, sign);
    if (s->xpos) { /* xpos never parses mrope=: no 3D rows reach here */
        xpos_scale_rows(s, c->dims.max_len, q, ldq, h->nq, h->qpos, L / 2, 1);
        xpos_scale_rows(s, c->dims.max_len, k, ldk, h->nk, h->kpos, L / 2, -1);
    }
}

/* n rows rotated by the angle of one position (STRING's shift), from the plain tables. */
static void rotate_const(const pe_comp *c, float *x, int ld, int n, int32_t pos, float sign)
{
    const rope_state *s = c->state;
    rope_tables t = {.cos_t = s->cos_t, .sin_t = s->sin_t, .theta = s->sc.theta, .attn = s->sc.attn};
    for (int i = 0; i < n; i++) rotate_row(c, x + (size_t)i * ld, pos, sign, &t);
}

static void rope_scores_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *s, int lds)
{
    rope_string_scores_forward(((rope_state *)c->state)->string, c, rotate_const, h, q, ldq, k, ldk, s, lds);
}

static void rope_scores_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate)
{
    rope_string_scores_backward(((rope_state *)c->state)->string, c, rotate_const, h, q, ldq, k, ldk, ds, ldds, dq,
                                lddq, dk, lddk, accumulate);
}

void rope_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    rotate_qk(c, h, q, ldq, k, ldk, 1.0f);
}

void rope_qk_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk, float *dq,
                      int lddq, float *dk, int lddk)
{
    (void)q, (void)ldq, (void)k, (void)ldk; /* the rotation is fixed: its transpose needs no rows */
    rotate_qk(c, h, dq, lddq, dk, lddk, -1.0f);
}

/* xPos's q.k factor for query i and key j: zeta_m^((i - j)/gamma); 1 without xPos. */
static double xpos_factor(const rope_state *s, int m, int i, int j)
{
    return s->xpos ? exp(s->log_zeta[m] * (i - j) / s->gamma) : 1.0;
}

/* M-RoPE's kernel over an image's patches (row dy + G - 1, column dx + G - 1) and each pair's axis. */
static posemb_status mrope_export(const rope_state *s, const double *theta, posemb_arena *a, posemb_pe_export *out,
                                  posemb_error *err)
{
    enum { G = 16 };
    int nf = s->sc.nfreq;
    posemb_pe_named_matrix *g = pe_export_add(
        out, a, "kernel_grid",
        "row dy + 15, column dx + 15: q.k of constant unit pairs for two patches of one frame offset by (dx, dy)",
        2 * G - 1, 2 * G - 1, err);
    posemb_pe_named_matrix *ax =
        g ? pe_export_add(out, a, "mrope_axis", "row m: the axis pair m reads (0 temporal, 1 height, 2 width)", nf, 1,
                          err)
          : NULL;
    if (!ax) return err ? err->code : POSEMB_ENOMEM;
    rope_mrope_kernel_grid(s->mrope, theta, nf, s->sc.attn, G, g->data);
    for (int m = 0; m < nf; m++) ax->data[m] = s->mrope->axis[m];
    return POSEMB_OK;
}

posemb_status rope_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    rope_state *s = c->state;
    int nf = s->sc.nfreq;
    double theta[ROPE_MAX_FREQ];
    rope_scale_freqs(&s->sc, n, theta);
    posemb_pe_named_matrix *k = pe_export_add(
        out, a, "kernel",
        "attention_factor^2 sum_m [zeta_m^((i-j)/gamma)] cos(w_m (i - j)): q.k of constant unit pairs", n, n, err);
    posemb_pe_named_matrix *f =
        k ? pe_export_add(out, a, "rope_frequencies",
                          "row m: the effective frequency w_m at this length (radians per position)", nf, 1, err)
          : NULL;
    posemb_pe_named_matrix *af =
        f ? pe_export_add(out, a, "attention_factor", "the factor on cos and sin (q.k grows by its square)", 1, 1, err)
          : NULL;
    posemb_pe_named_matrix *ang =
        af ? pe_export_add(out, a, "angles", "row x, column m: the rotation angle of pair m at position x", n, nf, err)
           : NULL;
    if (!ang) return err ? err->code : POSEMB_ENOMEM;
    for (int m = 0; m < nf; m++) f->data[m] = (float)theta[m];
    af->data[0] = (float)s->sc.attn;
    for (int x = 0; x < n; x++)
        for (int m = 0; m < nf; m++) ang->data[(size_t)x * nf + m] = (float)(theta[m] * x);
    /* The kernel depends on i - j only: one profile, then a Toeplitz fill. */
    float *profile = posemb_arena_floats(a, (size_t)(2 * n - 1));
    if (!profile) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    for (int r = -(n - 1); r < n; r++) {
        double acc = 0.0;
        for (int m = 0; m < nf; m++) acc += xpos_factor(s, m, r, 0) * cos(theta[m] * r);
        profile[r + n - 1] = (float)(s->sc.attn * s->sc.attn * acc);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) k->data[(size_t)i * n + j] = profile[i - j + n - 1];
    if (s->mrope) return mrope_export(s, theta, a, out, err);
    if (!s->xpos) return POSEMB_OK;
    posemb_pe_named_matrix *z =
        pe_export_add(out, a, "xpos_zeta", "row m: zeta_m, the base of pair m's scale (2m + 0.4r)/(1.4r)", nf, 1, err);
    if (!z) return err ? err->code : POSEMB_ENOMEM;
    for (int m = 0; m < nf; m++) z->data[m] = (float)exp(s->log_zeta[m]);
    return POSEMB_OK;
}

const pe_family pe_family_rope = {
    .name = "rope",
    .kind = PE_KIND_ATTENTION,
    .summary = "rotary embedding of q and k per head (Su et al. 2021), with HF's scalings and p-RoPE",
    .options = "base=NUM (10000), pairing=halves|interleaved, frac=NUM (1), partial=neox|proportional (neox), "
               "scaling=none|linear|ntk|dynamic|yarn|llama3|longrope, factor=NUM (1), original=N (max-len), "
               "beta_fast=NUM (32), beta_slow=NUM (1), mscale=NUM, mscale_all_dim=NUM, attention_factor=NUM, "
               "truncate=on|off (on), low_freq_factor=NUM (1), high_freq_factor=NUM (4), factors=FILE.json "
               "(longrope), p=NUM (1), local_base=NUM with local_layers=LIST (those layers rotate at that base, "
               "unscaled: Gemma 3's local layers), string=S with string_window=W (128) and string_factor=F "
               "(1 + 0.1 ln 2): STRING at evaluation, distances d >= S read as d - S + W, mrope=T|H|W pairs per axis "
               "with mrope_interleaved=on|off (off): M-RoPE, each pair turned by its axis of a 3D position "
               "(Qwen2-VL; interleaved: Qwen3-VL)",
    .configure = rope_configure,
    .destroy = rope_destroy,
    .qk_forward = rope_qk_forward,
    .qk_backward = rope_qk_backward,
    .scores_forward = rope_scores_forward,
    .scores_backward = rope_scores_backward,
    .export = rope_export,
};
