/* relative_key and relative_key_query: Hugging Face BERT's relative types,
 * so that those checkpoints load and match. One table R of (2L - 1) x d per
 * layer ("distance_embedding"), no clipping, indexed by i - j + L - 1:
 *     relative_key:        e_ij = (q_i.k_j + q_i.R[i-j+L-1]) / sqrt(d)
 *     relative_key_query:  adds k_j.R[i-j+L-1] (Huang et al. 2020)
 * Positions must lie in [0, L). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "reltable.h"

typedef struct hfrel_state {
    int key_query;
    rel_map map;
    pe_slots scratch, dtable;
} hfrel_state;

static posemb_status configure(pe_comp *c, pe_opts *o, posemb_error *err, int key_query)
{
    hfrel_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", c->fam->name);
    c->state = s;
    s->key_query = key_query;
    int L = c->dims.max_len, d = c->head_dim, T = c->dims.max_threads;
    c->max_pos = L;
    s->map = (rel_map){L - 1, -1};
    posemb_status st = pe_slots_init(&s->scratch, T, rel_scratch_floats(s->map, L), err);
    if (!st) st = pe_slots_init(&s->dtable, T, (size_t)(2 * L - 1) * d, err);
    for (int l = 0; !st && l < c->dims.n_layers; l++)
        if (pe_comp_param(c, "distance_embedding.weight", POSEMB_PE_SCOPE_LAYER, l, 2 * L - 1, d, 0.02f, 1, err) < 0)
            st = err ? err->code : POSEMB_ERANGE;
    return st;
}

static posemb_status rk_configure(pe_comp *c, pe_opts *o, posemb_error *err) { return configure(c, o, err, 0); }
static posemb_status rkq_configure(pe_comp *c, pe_opts *o, posemb_error *err) { return configure(c, o, err, 1); }

static void hfrel_destroy(pe_comp *c)
{
    hfrel_state *s = c->state;
    if (!s) return;
    pe_slots_free(&s->scratch);
    pe_slots_free(&s->dtable);
    free(s);
}

static void hfrel_logits_forward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                 float *sc, int lds)
{
    hfrel_state *s = c->state;
    const float *table = c->params[h->layer].data;
    float *scratch = pe_slot(&s->scratch, h->slot);
    rel_logits_forward(s->map, h, 0, q, ldq, table, sc, lds, scratch);
    if (s->key_query) rel_logits_forward(s->map, h, 1, k, ldk, table, sc, lds, scratch);
}

static void hfrel_logits_backward(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                                  const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    hfrel_state *s = c->state;
    const float *table = c->params[h->layer].data;
    float *scratch = pe_slot(&s->scratch, h->slot), *dtable = pe_slot(&s->dtable, h->slot);
    rel_logits_backward(s->map, h, 0, q, ldq, table, ds, ldds, dq, lddq, dtable, scratch);
    if (s->key_query) rel_logits_backward(s->map, h, 1, k, ldk, table, ds, ldds, dk, lddk, dtable, scratch);
}

static void hfrel_layer_backward_end(pe_comp *c, int layer)
{
    hfrel_state *s = c->state;
    pe_slots_fold(&s->dtable, c->params[layer].grad);
}

static posemb_status hfrel_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    int L = c->dims.max_len, d = c->head_dim;
    char name[64];
    for (int l = 0; l < c->dims.n_layers; l++) {
        snprintf(name, sizeof name, c->dims.n_layers > 1 ? "distance_embedding.layer%d" : "distance_embedding", l);
        posemb_pe_named_matrix *m =
            pe_export_add(out, a, name, "row i - j + L - 1: the vector of distance i - j", 2 * L - 1, d, err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        memcpy(m->data, c->params[l].data, (size_t)(2 * L - 1) * d * sizeof(float));
    }
    return POSEMB_OK;
}

#define HFREL_HOOKS                                                                                                    \
    .kind = PE_KIND_ATTENTION, .destroy = hfrel_destroy, .logits_forward = hfrel_logits_forward,                       \
    .logits_backward = hfrel_logits_backward, .layer_backward_end = hfrel_layer_backward_end, .export = hfrel_export,  \
    .options = ""

const pe_family pe_family_relative_key = {
    .name = "relative_key",
    .summary = "HF BERT relative_key: q_i . R[i-j+L-1], (2L-1) x d per layer, unclipped",
    .configure = rk_configure,
    HFREL_HOOKS,
};

const pe_family pe_family_relative_key_query = {
    .name = "relative_key_query",
    .summary = "HF BERT relative_key_query: adds k_j . R[i-j+L-1] (Huang et al. 2020)",
    .configure = rkq_configure,
    HFREL_HOOKS,
};
