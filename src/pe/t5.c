/* t5: T5's relative attention bias (Raffel et al. 2020). A learned scalar
 * per (bucket, head), shared by all layers, added to the logits. The bucket
 * of distance r = j - i follows HF's T5Attention._relative_position_bucket
 * exactly, in float32 as HF computes it: bidirectional buckets are split by
 * sign, half of each side's buckets are exact distances, the rest are
 * log-spaced up to max_distance. Decoders use unidirectional buckets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "family.h"
#include "pe/pe_internal.h"

typedef struct t5_state {
    int buckets, max_distance, bidirectional;
    int *bucket_of; /* [2 max_distance + 1]: bucket of r + max_distance; beyond, the bucket saturates */
    pe_slots dbias; /* per thread: [buckets, H] */
} t5_state;

int posemb_pe_t5_bucket(int r, int buckets, int max_distance, int bidirectional)
{
    int ret = 0, n = buckets;
    if (bidirectional) {
        n /= 2;
        if (r > 0) ret += n;
        r = abs(r);
    } else {
        r = r < 0 ? -r : 0;
    }
    int max_exact = n / 2;
    if (r < max_exact) return ret + r;
    float ratio = logf((float)r / (float)max_exact) / (float)log((double)max_distance / max_exact);
    long large = max_exact + (long)(ratio * (float)(n - max_exact));
    if (large > n - 1) large = n - 1;
    return ret + (int)large;
}

static inline int t5_bucket_at(const t5_state *s, int32_t qp, int32_t kp)
{
    int64_t r = (int64_t)kp - qp;
    if (r < -s->max_distance) r = -s->max_distance;
    if (r > s->max_distance) r = s->max_distance;
    return s->bucket_of[r + s->max_distance];
}

static posemb_status t5_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    t5_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "t5: out of memory");
    c->state = s;
    posemb_status st = pe_opt_int(o, "buckets", 32, 2, 1 << 16, &s->buckets, err);
    if (!st) st = pe_opt_int(o, "max_distance", 128, 2, 1 << 24, &s->max_distance, err);
    if (!st) st = pe_opt_bool(o, "bidirectional", !c->dims.causal, &s->bidirectional, err);
    if (st) return st;
    int side = s->bidirectional ? s->buckets / 2 : s->buckets;
    if ((s->bidirectional && s->buckets % 2) || side < 2 || s->max_distance <= side / 2)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': t5 needs an even bucket count when bidirectional, >= 2 buckets a side and "
                           "max_distance > buckets a side / 2",
                           o->spec);
    pe_canon_add(c, "buckets=%d", s->buckets);
    pe_canon_add(c, "max_distance=%d", s->max_distance);
    pe_canon_add(c, "bidirectional=%s", s->bidirectional ? "on" : "off");
    s->bucket_of = malloc((size_t)(2 * s->max_distance + 1) * sizeof(int));
    if (!s->bucket_of) return posemb_fail(err, POSEMB_ENOMEM, "t5: out of memory");
    for (int r = -s->max_distance; r <= s->max_distance; r++)
        s->bucket_of[r + s->max_distance] = posemb_pe_t5_bucket(r, s->buckets, s->max_distance, s->bidirectional);
    st = pe_slots_init(&s->dbias, c->dims.max_threads, (size_t)s->buckets * c->dims.n_heads, err);
    if (st) return st;
    /* HF T5 initialises the bias N(0, d_model^-0.5). */
    if (pe_comp_param(c, "relative_attention_bias.weight", POSEMB_PE_SCOPE_MODEL, 0, s->buckets, c->dims.n_heads,
                      1.0f / sqrtf((float)c->dims.dim), 1, err) < 0)
        return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void t5_destroy(pe_comp *c)
{
    t5_state *s = c->state;
    if (!s) return;
    free(s->bucket_of);
    pe_slots_free(&s->dbias);
    free(s);
}

static void t5_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                              float *sc, int lds)
{
    const t5_state *s = c->state;
    const float *bias = c->params[0].data;
    int H = c->dims.n_heads;
    for (int i = 0; i < h->nq; i++) {
        float *si = sc + (size_t)i * lds;
        for (int j = 0; j < h->nk; j++) si[j] += bias[t5_bucket_at(s, h->qpos[i], h->kpos[j]) * H + h->head];
    }
}

static void t5_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                               const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    t5_state *s = c->state;
    float *dbias = pe_slot(&s->dbias, h->slot);
    int H = c->dims.n_heads;
    for (int i = 0; i < h->nq; i++) {
        const float *dsi = ds + (size_t)i * ldds;
        for (int j = 0; j < h->nk; j++) dbias[t5_bucket_at(s, h->qpos[i], h->kpos[j]) * H + h->head] += dsi[j];
    }
}

static void t5_layer_backward_end(pe_comp *c, int layer)
{
    t5_state *s = c->state;
    pe_slots_fold(&s->dbias, c->params[0].grad);
}

static float t5_bias(const pe_comp *c, int h, int i, int j)
{
    return c->params[0].data[t5_bucket_at(c->state, i, j) * c->dims.n_heads + h];
}

static posemb_status t5_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const t5_state *s = c->state;
    int H = c->dims.n_heads;
    posemb_pe_named_matrix *b =
        pe_export_add(out, a, "buckets", "row i, column j: the bucket of distance j - i", n, n, err);
    posemb_pe_named_matrix *w = b ? pe_export_add(out, a, "relative_attention_bias",
                                                  "row b, column h: the bias of bucket b in head h", s->buckets, H, err)
                                  : NULL;
    if (!w) return err ? err->code : POSEMB_ENOMEM;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) b->data[(size_t)i * n + j] = (float)t5_bucket_at(s, i, j);
    for (int i = 0; i < s->buckets * H; i++) w->data[i] = c->params[0].data[i];
    return pe_export_head_biases(c, n, a, out, "row i, column j: the bias head h adds to logit (i, j)", t5_bias, err);
}

const pe_family pe_family_t5 = {
    .name = "t5",
    .logits_by_rows = 1,
    .kind = PE_KIND_ATTENTION,
    .summary = "learned scalar per (bucket, head), log-spaced buckets, shared by all layers (Raffel et al. 2020)",
    .options = "buckets=INT (32), max_distance=INT (128), bidirectional=on|off (off in decoders)",
    .configure = t5_configure,
    .destroy = t5_destroy,
    .logits_forward = t5_logits_forward,
    .logits_backward = t5_logits_backward,
    .layer_backward_end = t5_layer_backward_end,
    .export = t5_export,
};
