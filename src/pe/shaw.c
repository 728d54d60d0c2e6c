/* rpe, srpe, lsrpe: Shaw-form relative PEs (Shaw et al. 2018; the seed
 * paper's Eq. 4). Per layer, shared by the heads, width d, distances
 * clipped to [-k, k]:
 *     e_ij = q_i . (k_j + aK[r]) / sqrt(d),   z_i = sum_j p_ij (v_j + aV[r]),
 *     r = clip(j - i, -k, k).
 * rpe learns aK and aV; srpe fixes aK = aV = sinusoid of r (NEZHA); lsrpe
 * learns the sinusoid's d/2 frequencies per layer. values=off drops aV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "reltable.h"

typedef enum { SHAW_LEARNED, SHAW_FIXED_SIN, SHAW_LEARNED_SIN } shaw_kind;

typedef struct shaw_state {
    shaw_kind kind;
    int values, clip, rows; /* rows = 2 clip + 1 */
    double base;
    double init_std; /* rpe: N(0, init_std) for the learned tables */
    rel_map map;
    float *sin_tables;     /* srpe: one [rows, d] table; lsrpe: one per layer, from the frequencies */
    pe_slots scratch;      /* per thread: the gather/scatter matrix */
    pe_slots dkey, dvalue; /* per thread: d loss / d table of the layer in backward */
    float *dtable_sum;     /* lsrpe: the folded gradient of a layer's table */
} shaw_state;

/* Parameter index of layer's key table (rpe), value table (rpe), frequencies (lsrpe). */
static int key_param(const shaw_state *s, int layer) { return layer * (s->values ? 2 : 1); }

static const float *key_table(const pe_comp *c, int layer)
{
    const shaw_state *s = c->state;
    size_t size = (size_t)s->rows * c->head_dim;
    switch (s->kind) {
    case SHAW_LEARNED:
        return c->params[key_param(s, layer)].data;
    case SHAW_FIXED_SIN:
        return s->sin_tables;
    default:
        return s->sin_tables + (size_t)layer * size;
    }
}

static const float *value_table(const pe_comp *c, int layer)
{
    const shaw_state *s = c->state;
    return s->kind == SHAW_LEARNED ? c->params[key_param(s, layer) + 1].data : key_table(c, layer);
}

static posemb_status declare_params(pe_comp *c, shaw_state *s, posemb_error *err)
{
    int d = c->head_dim;
    for (int l = 0; l < c->dims.n_layers; l++) {
        int bad = 0;
        if (s->kind == SHAW_LEARNED) {
            float std = (float)s->init_std;
            bad |= pe_comp_param(c, "rpe.key.weight", POSEMB_PE_SCOPE_LAYER, l, s->rows, d, std, 1, err) < 0;
            if (s->values)
                bad |= pe_comp_param(c, "rpe.value.weight", POSEMB_PE_SCOPE_LAYER, l, s->rows, d, std, 1, err) < 0;
        } else if (s->kind == SHAW_LEARNED_SIN) {
            bad |= pe_comp_param(c, "rpe.frequencies", POSEMB_PE_SCOPE_LAYER, l, d / 2, 0, -1.0f, 0, err) < 0;
        }
        if (bad) return err ? err->code : POSEMB_ERANGE;
    }
    return POSEMB_OK;
}

static posemb_status configure(pe_comp *c, pe_opts *o, posemb_error *err, shaw_kind kind)
{
    shaw_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", c->fam->name);
    c->state = s;
    s->kind = kind;
    int d = c->head_dim;
    posemb_status st = pe_opt_int(o, "k", 64, 1, 1 << 20, &s->clip, err);
    if (!st) st = pe_opt_bool(o, "values", 1, &s->values, err);
    if (!st && kind != SHAW_LEARNED) st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (!st && kind == SHAW_LEARNED) st = pe_opt_double(o, "init_std", 0.02, 1e-6, 10, &s->init_std, err);
    if (st) return st;
    if (kind != SHAW_LEARNED && d % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s needs an even head width, got %d", o->spec, c->fam->name,
                           d);
    pe_canon_add(c, "k=%d", s->clip);
    pe_canon_add(c, "values=%s", s->values ? "on" : "off");
    if (kind == SHAW_LEARNED && s->init_std != 0.02) pe_canon_num(c, "init_std", s->init_std); /* only when set */
    if (!s->values) c->hooks &= ~PE_HOOK_VALUES;
    if (kind != SHAW_LEARNED) pe_canon_num(c, "base", s->base);
    s->rows = 2 * s->clip + 1;
    s->map = (rel_map){s->clip, +1};
    size_t tsize = (size_t)s->rows * d;
    int T = c->dims.max_threads, learned = kind != SHAW_FIXED_SIN; /* srpe has nothing to learn */
    if ((st = pe_slots_init(&s->scratch, T, rel_scratch_floats(s->map, c->dims.max_len), err)) ||
        (learned && (st = pe_slots_init(&s->dkey, T, tsize, err))) ||
        (learned && s->values && (st = pe_slots_init(&s->dvalue, T, tsize, err))))
        return st;
    if (kind != SHAW_LEARNED) {
        size_t n = kind == SHAW_FIXED_SIN ? tsize : tsize * c->dims.n_layers;
        s->sin_tables = calloc(n, sizeof(float));
        s->dtable_sum = calloc(tsize, sizeof(float));
        if (!s->sin_tables || !s->dtable_sum) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", c->fam->name);
    }
    if (kind == SHAW_FIXED_SIN) {
        double freq[d / 2];
        pe_sinusoid_freqs(s->base, d, freq);
        pe_sinusoid_table(freq, d / 2, 0, -s->clip, s->rows, s->sin_tables);
    }
    return declare_params(c, s, err);
}

static posemb_status rpe_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    return configure(c, o, err, SHAW_LEARNED);
}
static posemb_status srpe_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    return configure(c, o, err, SHAW_FIXED_SIN);
}
static posemb_status lsrpe_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    return configure(c, o, err, SHAW_LEARNED_SIN);
}

static void lsrpe_init(pe_comp *c)
{
    shaw_state *s = c->state;
    for (int l = 0; l < c->dims.n_layers; l++) pe_sinusoid_freqs_f(s->base, c->head_dim, c->params[l].data);
}

static void lsrpe_prepare(pe_comp *c)
{
    shaw_state *s = c->state;
    int d = c->head_dim;
    double freq[d / 2];
    for (int l = 0; l < c->dims.n_layers; l++) {
        if (!c->params[l].data) continue;
        pe_freqs_widen(c->params[l].data, d / 2, freq);
        pe_sinusoid_table(freq, d / 2, 0, -s->clip, s->rows, s->sin_tables + (size_t)l * s->rows * d);
    }
}

static void shaw_destroy(pe_comp *c)
{
    shaw_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->scratch);
    pe_slots_free(&s->dkey);
    pe_slots_free(&s->dvalue);
    free(s->sin_tables);
    free(s->dtable_sum);
    free(s);
}

static void shaw_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                float *sc, int lds)
{
    shaw_state *s = c->state;
    rel_logits_forward(s->map, h, 0, q, ldq, key_table(c, h->layer), sc, lds, pe_slot(&s->scratch, h->slot));
}

static void shaw_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    shaw_state *s = c->state;
    float *dtable = s->kind == SHAW_FIXED_SIN ? NULL : pe_slot(&s->dkey, h->slot);
    rel_logits_backward(s->map, h, 0, q, ldq, key_table(c, h->layer), ds, ldds, dq, lddq, dtable,
                        pe_slot(&s->scratch, h->slot));
}

static void shaw_values_forward(pe_comp *c, const posemb_pe_head *h, const float *prob, int ldp, float *z, int ldz)
{
    shaw_state *s = c->state;
    rel_values_forward(s->map, h, value_table(c, h->layer), prob, ldp, z, ldz, pe_slot(&s->scratch, h->slot));
}

static void shaw_values_backward(pe_comp *c, const posemb_pe_head *h, const float *prob, int ldp, const float *dz,
                                 int lddz, float *dprob, int lddp)
{
    shaw_state *s = c->state;
    float *dtable = s->kind == SHAW_FIXED_SIN ? NULL : pe_slot(&s->dvalue, h->slot);
    rel_values_backward(s->map, h, value_table(c, h->layer), prob, ldp, dz, lddz, dprob, lddp, dtable,
                        pe_slot(&s->scratch, h->slot));
}

static void shaw_layer_backward_end(pe_comp *c, int layer)
{
    shaw_state *s = c->state;
    if (s->kind == SHAW_LEARNED) {
        pe_slots_fold(&s->dkey, c->params[key_param(s, layer)].grad);
        if (s->values) pe_slots_fold(&s->dvalue, c->params[key_param(s, layer) + 1].grad);
        return;
    }
    if (s->kind == SHAW_FIXED_SIN) return;
    /* lsrpe: aK = aV share one table, so both gradients reach the frequencies. */
    int d = c->head_dim;
    size_t tsize = (size_t)s->rows * d;
    float *dtable = s->dtable_sum;
    memset(dtable, 0, tsize * sizeof *dtable);
    pe_slots_fold(&s->dkey, dtable);
    if (s->values) pe_slots_fold(&s->dvalue, dtable);
    pe_sinusoid_table_backward(d / 2, 0, -s->clip, s->rows, key_table(c, layer), dtable, c->params[layer].grad);
}

static posemb_status shaw_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    shaw_state *s = c->state;
    int d = c->head_dim, layers = s->kind == SHAW_FIXED_SIN ? 1 : c->dims.n_layers;
    char name[64];
    for (int l = 0; l < layers; l++) {
        for (int v = 0; v < (s->kind == SHAW_LEARNED && s->values ? 2 : 1); v++) {
            const char *what = s->kind != SHAW_LEARNED ? "rel" : v ? "rel_value" : "rel_key";
            if (layers > 1) snprintf(name, sizeof name, "%s.layer%d", what, l);
            else snprintf(name, sizeof name, "%s", what);
            posemb_pe_named_matrix *m =
                pe_export_add(out, a, name, "row r + k: the vector of clipped distance r = j - i", s->rows, d, err);
            if (!m) return err ? err->code : POSEMB_ENOMEM;
            memcpy(m->data, v ? value_table(c, l) : key_table(c, l), (size_t)s->rows * d * sizeof(float));
        }
        if (s->kind == SHAW_LEARNED) continue;
        snprintf(name, sizeof name, layers > 1 ? "rel_frequencies.layer%d" : "rel_frequencies", l);
        posemb_pe_named_matrix *f =
            pe_export_add(out, a, name, "row m: frequency w_m (radians per unit of distance)", d / 2, 1, err);
        if (!f) return err ? err->code : POSEMB_ENOMEM;
        if (s->kind == SHAW_LEARNED_SIN) memcpy(f->data, c->params[l].data, (size_t)(d / 2) * sizeof(float));
        else pe_sinusoid_freqs_f(s->base, d, f->data);
    }
    return POSEMB_OK;
}

#define SHAW_HOOKS                                                                                                     \
    .kind = PE_KIND_ATTENTION, .destroy = shaw_destroy, .logits_forward = shaw_logits_forward,                         \
    .logits_backward = shaw_logits_backward, .values_forward = shaw_values_forward,                                    \
    .values_backward = shaw_values_backward, .layer_backward_end = shaw_layer_backward_end, .export = shaw_export

const pe_family pe_family_rpe = {
    .name = "rpe",
    .summary = "learned relative vectors on keys and values, per layer, clipped at k (Shaw et al. 2018)",
    .options = "k=INT clip distance (64), values=on|off (on), init_std=NUM (0.02)",
    .configure = rpe_configure,
    SHAW_HOOKS,
};

const pe_family pe_family_srpe = {
    .name = "srpe",
    .summary = "fixed sinusoidal relative vectors, aK = aV (NEZHA, Wei et al. 2019)",
    .options = "k=INT clip distance (64), values=on|off (on), base=NUM (10000)",
    .configure = srpe_configure,
    SHAW_HOOKS,
};

const pe_family pe_family_lsrpe = {
    .name = "lsrpe",
    .summary = "sinusoidal relative vectors with d/2 learned frequencies per layer",
    .options = "k=INT clip distance (64), values=on|off (on), base=NUM (10000)",
    .configure = lsrpe_configure,
    .init = lsrpe_init,
    .prepare = lsrpe_prepare,
    SHAW_HOOKS,
};
