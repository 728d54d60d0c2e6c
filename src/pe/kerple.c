/* kerple: kernelized relative positional bias (Chi et al. 2022, "KERPLE").
 * Head h adds a conditionally positive definite kernel of the distance
 * d = |i - j| to its logits, with two learned parameters per head, shared by
 * all layers as in the authors' GPT-NeoX code (chijames/KERPLE):
 *   kind=log:   -r1 ln(1 + r2 d)
 *   kind=power: -r1 d^r2, 0 < r2 <= 2
 * Like the authors' code, r1 and r2 are projected after every update
 * (prepare) onto r >= 0.01 (and r2 <= 2 for power), so they stay positive.
 * The bias depends on d only: each call makes a table of it over the
 * distances it sees, so a head costs O(n) logarithms, not O(n^2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "family.h"

#define KERPLE_EPS 0.01f

typedef struct kerple_state {
    int power;        /* 0: log kernel, 1: power kernel */
    pe_slots table;   /* per thread: the bias (forward) or d loss / d bias (backward) by distance */
    pe_slots dparams; /* per thread: [2H] gradients of r1 and r2 */
    float *fold;      /* [2H]: the threads' gradients summed */
} kerple_state;

static posemb_status kerple_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    static const char *const kinds[] = {"log", "power", NULL};
    kerple_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "kerple: out of memory");
    c->state = s;
    posemb_status st = pe_opt_enum(o, "kind", kinds, 0, &s->power, err);
    if (st) return st;
    pe_canon_add(c, "kind=%s", kinds[s->power]);
    int H = c->dims.n_heads;
    if ((st = pe_slots_init(&s->table, c->dims.max_threads, (size_t)c->dims.max_len, err)) ||
        (st = pe_slots_init(&s->dparams, c->dims.max_threads, (size_t)2 * H, err)))
        return st;
    if (!(s->fold = calloc((size_t)2 * H, sizeof *s->fold)))
        return posemb_fail(err, POSEMB_ENOMEM, "kerple: out of memory");
    if (pe_comp_param(c, "kerple.r1", POSEMB_PE_SCOPE_MODEL, 0, H, 0, -1.0f, 0, err) < 0 ||
        pe_comp_param(c, "kerple.r2", POSEMB_PE_SCOPE_MODEL, 0, H, 0, -1.0f, 0, err) < 0)
        return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

/* KERPLE draws r1 and r2 uniformly (log: r1 in (0, 2), r2 in (0, 1); power:
 * r1 in (0, 1), r2 in (0, 2)); here head h takes the (h + 1/2)/H quantile
 * of r1's range and the reversed one of r2's, so heads cover the ranges
 * reproducibly, as ALiBi's slopes do. */
static void kerple_init(pe_comp *c)
{
    const kerple_state *s = c->state;
    int H = c->dims.n_heads;
    float r1_max = s->power ? 1.0f : 2.0f, r2_max = s->power ? 2.0f : 1.0f;
    for (int h = 0; h < H; h++) {
        float u = (h + 0.5f) / H;
        c->params[0].data[h] = r1_max * u;
        c->params[1].data[h] = r2_max * (1.0f - u);
    }
}

/* The projection onto the allowed region, after every parameter change. */
static void kerple_prepare(pe_comp *c)
{
    const kerple_state *s = c->state;
    if (!c->params[0].data) return;
    for (int h = 0; h < c->dims.n_heads; h++) {
        float *r1 = &c->params[0].data[h], *r2 = &c->params[1].data[h];
        if (*r1 < KERPLE_EPS) *r1 = KERPLE_EPS;
        if (*r2 < KERPLE_EPS) *r2 = KERPLE_EPS;
        if (s->power && *r2 > 2.0f) *r2 = 2.0f;
    }
}

static void kerple_destroy(pe_comp *c)
{
    kerple_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->table);
    pe_slots_free(&s->dparams);
    free(s->fold);
    free(s);
}

static inline double kernel(int power, double r1, double r2, double d)
{
    return power ? -r1 * pow(d, r2) : -r1 * log1p(r2 * d);
}

static inline long distance(const posemb_pe_head *h, int i, int j) { return labs((long)h->kpos[j] - h->qpos[i]); }

static void kerple_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                  float *sc, int lds)
{
    const kerple_state *s = c->state;
    double r1 = c->params[0].data[h->head], r2 = c->params[1].data[h->head];
    float *table = pe_slot(&s->table, h->slot);
    long n = pe_distance_span(h, c->dims.max_len);
    for (long d = 0; d < n; d++) table[d] = (float)kernel(s->power, r1, r2, (double)d);
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        for (int j = 0; j < h->nk; j++) {
            long d = distance(h, i, j);
            si[j] += d < n ? table[d] : (float)kernel(s->power, r1, r2, (double)d);
        }
    }
}

/* d bias(d) / d r1 and / d r2 at distance d, times g. */
static inline void kernel_grad(int power, double r1, double r2, double d, double g, double *dr1, double *dr2)
{
    if (power) {
        double dp = d > 0 ? pow(d, r2) : 0.0;
        *dr1 -= g * dp;
        *dr2 -= d > 0 ? g * r1 * dp * log(d) : 0.0;
    } else {
        *dr1 -= g * log1p(r2 * d);
        *dr2 -= g * r1 * d / (1.0 + r2 * d);
    }
}

static void kerple_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                   int ldk, const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    kerple_state *s = c->state;
    double r1 = c->params[0].data[h->head], r2 = c->params[1].data[h->head], dr1 = 0, dr2 = 0;
    float *by_d = pe_slot(&s->table, h->slot);
    long n = pe_distance_span(h, c->dims.max_len);
    for (long d = 0; d < n; d++) by_d[d] = 0.0f;
    for (int i = 0; i < h->nq; i++) {
        const float *dsi = ds + (size_t)i * ldds;
        for (int j = 0; j < h->nk; j++) {
            long d = distance(h, i, j);
            if (d < n) by_d[d] += dsi[j];
            else kernel_grad(s->power, r1, r2, (double)d, dsi[j], &dr1, &dr2);
        }
    }
    for (long d = 0; d < n; d++)
        if (by_d[d] != 0.0f) kernel_grad(s->power, r1, r2, (double)d, by_d[d], &dr1, &dr2);
    float *dp = pe_slot(&s->dparams, h->slot);
    dp[h->head] += (float)dr1;
    dp[c->dims.n_heads + h->head] += (float)dr2;
}

static void kerple_layer_backward_end(pe_comp *c, int layer)
{
    kerple_state *s = c->state;
    int H = c->dims.n_heads;
    for (int i = 0; i < 2 * H; i++) s->fold[i] = 0.0f;
    pe_slots_fold(&s->dparams, s->fold);
    for (int h = 0; h < H; h++) {
        c->params[0].grad[h] += s->fold[h];
        c->params[1].grad[h] += s->fold[H + h];
    }
}

static float kerple_bias(const pe_comp *c, int h, int i, int j)
{
    const kerple_state *s = c->state;
    return 0.0f + (float)kernel(s->power, c->params[0].data[h], c->params[1].data[h], abs(i - j));
}

static posemb_status kerple_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const kerple_state *s = c->state;
    int H = c->dims.n_heads;
    posemb_pe_named_matrix *p1 = pe_export_add(out, a, "r1", "row h: the kernel's scale r1 of head h", H, 1, err);
    posemb_pe_named_matrix *p2 =
        p1 ? pe_export_add(out, a, "r2", s->power ? "row h: the exponent r2 of head h" : "row h: r2 of head h", H, 1,
                           err)
           : NULL;
    if (!p2) return err ? err->code : POSEMB_ENOMEM;
    for (int h = 0; h < H; h++) {
        p1->data[h] = c->params[0].data[h];
        p2->data[h] = c->params[1].data[h];
    }
    return pe_export_head_biases(
        c, n, a, out, s->power ? "row i, column j: -r1 |i - j|^r2" : "row i, column j: -r1 ln(1 + r2 |i - j|)",
        kerple_bias, err);
}

const pe_family pe_family_kerple = {
    .name = "kerple",
    .logits_by_rows = 1,
    .kind = PE_KIND_ATTENTION,
    .summary = "learned kernel bias per head, -r1 ln(1 + r2 |i-j|) or -r1 |i-j|^r2 (Chi et al. 2022)",
    .options = "kind=log|power (log)",
    .configure = kerple_configure,
    .init = kerple_init,
    .prepare = kerple_prepare,
    .destroy = kerple_destroy,
    .logits_forward = kerple_logits_forward,
    .logits_backward = kerple_logits_backward,
    .layer_backward_end = kerple_layer_backward_end,
    .export = kerple_export,
};
