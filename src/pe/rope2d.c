/* rope2d: rotary embedding over a 2D grid of image patches (Heo et al.
 * 2024, "Rotary Position Embedding for Vision Transformer", reference code
 * naver-ai/rope-vit, models/vit_rope.py: compute_axial_cis and
 * init_random_2d_freqs). Token p of a sequence is the patch at column
 * x = u mod W and row y = floor(u / W) of a grid W wide (grid=, 16: a
 * ViT-B/14's 224-pixel image), u = p, or
 * u = p - 1 after a class token that is not rotated (cls=on, rope-vit's
 * [CLS]). Pair m of a head's row (interleaved: 2m, 2m + 1, as the
 * reference's complex view) is turned by
 *   angle_m = fx_m x + fy_m y.
 * - Axial (mixed=off, RoPE-Axial): the first d/4 pairs turn by
 *   x theta^(-4k/d), the next d/4 by y theta^(-4k/d), k < d/4 (theta 100,
 *   the reference's). Fixed, no parameters.
 * - Mixed (mixed=on, RoPE-Mixed): fx, fy learned per layer and head,
 *   initialised as the reference's: magnitudes theta^(-4k/d) (theta 10)
 *   along a direction a per head for the first d/4 pairs and a + pi/2 for
 *   the next d/4; a drawn uniformly per layer and head from a fixed PCG
 *   stream (the reference draws it from torch's generator).
 * The logit of q_i and k_j depends on the offset (x_i - x_j, y_i - y_j)
 * alone. The learned frequencies' gradients read the rotated rows, as
 * lrope's do: d angle_m / d fx_m = x, / d fy_m = y, so
 * dfx_m += x (a' db' - b' da') and dfy_m += y (a' db' - b' da'). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "core/rng_internal.h"

#define PI 3.14159265358979323846

typedef struct rope2d_state {
    int grid, cls, mixed;
    int rows;             /* frequency rows per layer: H (mixed) or 1 */
    int layers;           /* layers with their own frequencies: n_layers (mixed) or 1 */
    int nf;               /* pairs: d / 2 */
    double theta;         /* the frequencies' base */
    float *fx, *fy;       /* axial: [nf] each; mixed: read from the parameters */
    float *cos_t, *sin_t; /* [layers, rows, max_len, nf] */
    pe_slots dfreq;       /* mixed, per thread: the layer's [H, 2 nf] (fx then fy), folded at its end */
} rope2d_state;

static posemb_status rope2d_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    rope2d_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "rope2d: out of memory");
    c->state = s;
    posemb_status st = pe_opt_int(o, "grid", 16, 1, 1 << 20, &s->grid, err); /* 16: a ViT's 224 / 14 patches */
    if (!st) st = pe_opt_bool(o, "mixed", 0, &s->mixed, err);
    if (!st) st = pe_opt_bool(o, "cls", 0, &s->cls, err);
    if (!st) st = pe_opt_double(o, "theta", s->mixed ? 10.0 : 100.0, 1.0 + 1e-9, 1e12, &s->theta, err);
    if (st) return st;
    if (c->head_dim % 4)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope2d splits pairs between x and y; head width %d is not "
                           "a multiple of 4",
                           o->spec, c->head_dim);
    pe_canon_add(c, "grid=%d,mixed=%s,cls=%s", s->grid, s->mixed ? "on" : "off", s->cls ? "on" : "off");
    pe_canon_num(c, "theta", s->theta);
    s->nf = c->head_dim / 2;
    s->rows = s->mixed ? c->dims.n_heads : 1;
    s->layers = s->mixed ? c->dims.n_layers : 1;
    c->qk_per_head = s->mixed;
    size_t n = (size_t)s->layers * s->rows * c->dims.max_len * s->nf;
    s->cos_t = malloc(n * sizeof(float));
    s->sin_t = malloc(n * sizeof(float));
    if (!s->cos_t || !s->sin_t) return posemb_fail(err, POSEMB_ENOMEM, "rope2d: out of memory");
    if (!s->mixed) {
        s->fx = calloc((size_t)s->nf, sizeof(float));
        s->fy = calloc((size_t)s->nf, sizeof(float));
        if (!s->fx || !s->fy) return posemb_fail(err, POSEMB_ENOMEM, "rope2d: out of memory");
        for (int k = 0; k < s->nf / 2; k++) {
            s->fx[k] = (float)pow(s->theta, -4.0 * k / c->head_dim);
            s->fy[s->nf / 2 + k] = s->fx[k];
        }
        return POSEMB_OK;
    }
    if ((st = pe_slots_init(&s->dfreq, c->dims.max_threads, (size_t)s->rows * 2 * s->nf, err))) return st;
    for (int l = 0; l < c->dims.n_layers; l++) /* per layer: [H, 2 nf], a head's fx then its fy */
        if (pe_comp_param(c, "rope2d.frequencies", POSEMB_PE_SCOPE_LAYER, l, s->rows, 2 * s->nf, -1.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

/* RoPE-Mixed's initial frequencies: per layer and head a direction a, magnitudes theta^(-4k/d). */
static void rope2d_init(pe_comp *c)
{
    const rope2d_state *s = c->state;
    if (!s->mixed) return;
    posemb_rng rng;
    posemb_rng_seed(&rng, 2024, 7);
    for (int l = 0; l < c->dims.n_layers; l++)
        for (int h = 0; h < s->rows; h++) {
            float *f = c->params[l].data + (size_t)h * 2 * s->nf;
            double a = 2 * PI * posemb_rng_uniform(&rng);
            for (int k = 0; k < s->nf / 2; k++) {
                double mag = pow(s->theta, -4.0 * k / c->head_dim);
                f[k] = (float)(mag * cos(a));                      /* fx, first d/4 pairs: direction a */
                f[s->nf / 2 + k] = (float)(mag * cos(PI / 2 + a)); /* fx, next d/4: a + pi/2 */
                f[s->nf + k] = (float)(mag * sin(a));              /* fy */
                f[s->nf + s->nf / 2 + k] = (float)(mag * sin(PI / 2 + a));
            }
        }
}

/* The patch coordinates of position p; 0 for the class token. */
static void coords(const rope2d_state *s, int32_t p, double *x, double *y)
{
    long u = s->cls ? (long)p - 1 : p;
    if (u < 0) {
        *x = *y = 0;
        return;
    }
    *x = (double)(u % s->grid);
    *y = (double)(u / s->grid);
}

/* Frequencies of (layer, row): fx and fy, nf each. */
static void freqs(const pe_comp *c, int layer, int row, const float **fx, const float **fy)
{
    const rope2d_state *s = c->state;
    if (!s->mixed) {
        *fx = s->fx;
        *fy = s->fy;
        return;
    }
    *fx = c->params[layer].data + (size_t)row * 2 * s->nf;
    *fy = *fx + s->nf;
}

static void rope2d_prepare(pe_comp *c)
{
    const rope2d_state *s = c->state;
    if (s->mixed && !c->params[0].data) return;
    int M = c->dims.max_len, nf = s->nf;
    for (int l = 0; l < s->layers; l++)
        for (int r = 0; r < s->rows; r++) {
            const float *fx, *fy;
            freqs(c, l, r, &fx, &fy);
            size_t at = ((size_t)l * s->rows + r) * M * nf;
            for (int p = 0; p < M; p++) {
                double x, y;
                coords(s, p, &x, &y);
                for (int m = 0; m < nf; m++) {
                    double a = (double)fx[m] * x + (double)fy[m] * y;
                    s->cos_t[at + (size_t)p * nf + m] = (float)cos(a);
                    s->sin_t[at + (size_t)p * nf + m] = (float)sin(a);
                }
            }
        }
}

static void rope2d_destroy(pe_comp *c)
{
    rope2d_state *s = c->state;
    if (!s) return;
    free(s->fx);
    free(s->fy);
    free(s->cos_t);
    free(s->sin_t);
    pe_slots_free(&s->dfreq);
    free(s);
}

/* Rotates n rows by their angles (sign -1: the transpose). */
static void rotate_rows(const pe_comp *c, const posemb_pe_head *h, float *v, int ld, int n, const int32_t *pos,
                        float sign)
{
    const rope2d_state *s = c->state;
    int M = c->dims.max_len, nf = s->nf, l = s->mixed ? h->layer : 0, r = s->mixed ? h->head : 0;
    const float *fx, *fy;
    freqs(c, l, r, &fx, &fy);
    size_t at = ((size_t)l * s->rows + r) * M * nf;
    for (int i = 0; i < n; i++) {
        float *row = v + (size_t)i * ld;
        double x, y;
        coords(s, pos[i], &x, &y);
        for (int m = 0; m < nf; m++) {
            float cs, sn;
            if (pos[i] >= 0 && pos[i] < M) {
                cs = s->cos_t[at + (size_t)pos[i] * nf + m];
                sn = s->sin_t[at + (size_t)pos[i] * nf + m];
            } else {
                double a = (double)fx[m] * x + (double)fy[m] * y;
                cs = (float)cos(a);
                sn = (float)sin(a);
            }
            sn *= sign;
            float a = row[2 * m], b = row[2 * m + 1];
            row[2 * m] = a * cs - b * sn;
            row[2 * m + 1] = a * sn + b * cs;
        }
    }
}

static void rope2d_qk_forward(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    rotate_rows(c, h, q, ldq, h->nq, h->qpos, 1.0f);
    rotate_rows(c, h, k, ldk, h->nk, h->kpos, 1.0f);
}

/* dfx_m += x (a' db' - b' da'), dfy_m += y (...) over n rotated rows y and their gradients dy. */
static void freq_grad(const rope2d_state *s, const float *v, int ld, const float *dv, int ldd, int n,
                      const int32_t *pos, float *dfx)
{
    float *dfy = dfx + s->nf;
    for (int i = 0; i < n; i++) {
        const float *vi = v + (size_t)i * ld, *di = dv + (size_t)i * ldd;
        double x, y;
        coords(s, pos[i], &x, &y);
        for (int m = 0; m < s->nf; m++) {
            float g = vi[2 * m] * di[2 * m + 1] - vi[2 * m + 1] * di[2 * m];
            dfx[m] += (float)x * g;
            dfy[m] += (float)y * g;
        }
    }
}

static void rope2d_qk_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                               float *dq, int lddq, float *dk, int lddk)
{
    const rope2d_state *s = c->state;
    if (s->mixed) {
        float *df = pe_slot(&s->dfreq, h->slot) + (size_t)h->head * 2 * s->nf;
        if (h->nq) freq_grad(s, q, ldq, dq, lddq, h->nq, h->qpos, df);
        if (h->nk) freq_grad(s, k, ldk, dk, lddk, h->nk, h->kpos, df);
    }
    rotate_rows(c, h, dq, lddq, h->nq, h->qpos, -1.0f);
    rotate_rows(c, h, dk, lddk, h->nk, h->kpos, -1.0f);
}

/* The threads' frequency gradients of layer into its parameter; slots zeroed. */
static void rope2d_layer_backward_end(pe_comp *c, int layer)
{
    rope2d_state *s = c->state;
    if (s->mixed) pe_slots_fold(&s->dfreq, c->params[layer].grad);
}

/* Layer 0's (first head's) kernel sum_m cos(angle_m(i) - angle_m(j)) over n tokens, and over the grid's offsets:
 * row dy + G - 1, column dx + W - 1 for the G rows a sequence of n tokens spans. */
static posemb_status rope2d_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const rope2d_state *s = c->state;
    const float *fx, *fy;
    freqs(c, 0, 0, &fx, &fy);
    posemb_pe_named_matrix *k = pe_export_add(
        out, a, "kernel", "layer 0, head 0: sum_m cos(angle_m(i) - angle_m(j)), q.k of constant unit pairs", n, n, err);
    if (!k) return err ? err->code : POSEMB_ENOMEM;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double xi, yi, xj, yj, acc = 0;
            coords(s, i, &xi, &yi);
            coords(s, j, &xj, &yj);
            for (int m = 0; m < s->nf; m++) acc += cos((double)fx[m] * (xi - xj) + (double)fy[m] * (yi - yj));
            k->data[(size_t)i * n + j] = (float)acc;
        }
    int W = s->grid, G = (n - s->cls + W - 1) / W;
    if (G < 1) G = 1;
    posemb_pe_named_matrix *g = pe_export_add(out, a, "kernel_grid",
                                              "layer 0, head 0: the kernel at offset (dx, dy): row dy + G - 1, "
                                              "column dx + W - 1",
                                              2 * G - 1, 2 * W - 1, err);
    if (!g) return err ? err->code : POSEMB_ENOMEM;
    for (int dy = 1 - G; dy < G; dy++)
        for (int dx = 1 - W; dx < W; dx++) {
            double acc = 0;
            for (int m = 0; m < s->nf; m++) acc += cos((double)fx[m] * dx + (double)fy[m] * dy);
            g->data[(size_t)(dy + G - 1) * (2 * W - 1) + dx + W - 1] = (float)acc;
        }
    return s->mixed
               ? pe_export_per_layer(c, "rope2d_frequencies",
                                     "row: head, columns: fx_0..fx_(d/2-1) then fy_0..fy_(d/2-1)", 0, 1, a, out, err)
               : POSEMB_OK;
}

const pe_family pe_family_rope2d = {
    .name = "rope2d",
    .kind = PE_KIND_ATTENTION,
    .summary = "2D rotary embedding over a grid of patches W wide, axial or with learned mixed frequencies (Heo et al. "
               "2024, RoPE-Axial and RoPE-Mixed)",
    .options = "grid=W the patch grid's width (16), mixed=on|off (off), cls=on|off (off): token 0 a class token left "
               "unrotated, "
               "theta=NUM (100 axial, 10 mixed)",
    .configure = rope2d_configure,
    .init = rope2d_init,
    .prepare = rope2d_prepare,
    .destroy = rope2d_destroy,
    .qk_forward = rope2d_qk_forward,
    .qk_backward = rope2d_qk_backward,
    .layer_backward_end = rope2d_layer_backward_end,
    .export = rope2d_export,
};
