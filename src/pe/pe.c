/* A PE: up to one input component, one attention component and one scale
 * component, their parameters, and the dispatch of the five hooks. The input integration
 * (add, or concat followed by a learned projection) is generic and serves
 * every absolute family. */
#include <cblas.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "posemb/threads.h"
#include "spec.h"
#include "pe/pe_internal.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"

#define PE_MAX_COMPS 4

struct posemb_pe {
    posemb_pe_dims dims;
    char name[128], spec[400];
    int n_comps;
    pe_comp comps[PE_MAX_COMPS];
    pe_comp *input, *attn, *scale, *positions; /* positions: random:max=, drawn positions for the others */
    pe_slots qscale;    /* scale: per thread, a call's factors f [max_len], df [max_len] and q before them */
    int concat;         /* input integration: 0 add, 1 concat + projection */
    double input_scale; /* add: y = x + s P, s = input_scale (the amplitude question, docs/study.md) */
    int learned_scale, scale_param; /* learned_scale=on: s is params[scale_param], starting at input_scale */
    int proj_w; /* concat: index of the projection weight [D, D + width] in params, then the bias [D] */
    int n_params, cap_params;
    posemb_pe_param *params;
    size_t n_floats;
    float *own;             /* posemb_pe_alloc: params then grads */
    int has_data, has_grad; /* posemb_pe_bind was given parameter / gradient memory */
    int len0;               /* max_len of the first build (pe_comp.len0) */
};

int pe_comp_param(pe_comp *c, const char *name, posemb_pe_scope scope, int layer, int rows, int cols, float init_std,
                  int decay, posemb_error *err)
{
    posemb_pe *p = c->owner;
    if (p->n_params == p->cap_params) {
        posemb_fail(err, POSEMB_ERANGE, "PE %s: too many parameter tensors", c->fam->name);
        return -1;
    }
    posemb_pe_param *t = &p->params[p->n_params++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->scope = scope;
    t->layer = layer;
    t->ndim = cols > 0 ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols > 0 ? cols : 0;
    t->numel = (size_t)rows * (size_t)(cols > 0 ? cols : 1);
    t->offset = p->n_floats;
    t->decay = decay;
    t->init_std = init_std;
    t->input = c->fam->kind == PE_KIND_INPUT;
    p->n_floats += t->numel;
    return c->n_params++;
}

static posemb_status check_dims(const posemb_pe_dims *d, posemb_error *err)
{
    if (d->dim < 1 || d->n_heads < 1 || (!d->head_dim && d->dim % d->n_heads))
        return posemb_fail(err, POSEMB_EINVAL, "PE dims: width %d is not a positive multiple of %d heads", d->dim,
                           d->n_heads);
    if (d->head_dim < 0) return posemb_fail(err, POSEMB_EINVAL, "PE dims: head width %d (need >= 0)", d->head_dim);
    if (d->n_layers < 1) return posemb_fail(err, POSEMB_EINVAL, "PE dims: %d layers (need >= 1)", d->n_layers);
    if (d->max_len < 1) return posemb_fail(err, POSEMB_EINVAL, "PE dims: max_len %d (need >= 1)", d->max_len);
    return POSEMB_OK;
}

/* Reads the integration options every absolute family takes. */
static posemb_status input_options(posemb_pe *p, pe_comp *c, pe_opts *o, posemb_error *err)
{
    static const char *const modes[] = {"add", "concat", NULL};
    static const char *const onoff[] = {"off", "on", NULL};
    double scale;
    int learned;
    posemb_status st = pe_opt_enum(o, "integration", modes, 0, &p->concat, err);
    if (!st) st = pe_opt_int(o, "width", p->dims.dim, 1, 1 << 20, &c->width, err);
    if (!st) st = pe_opt_double(o, "scale", 1.0, 1e-6, 1e6, &scale, err);
    if (!st) st = pe_opt_enum(o, "learned_scale", onoff, 0, &learned, err);
    if (st) return st;
    p->input_scale = scale;
    p->learned_scale = learned; /* its parameter comes after the family's own */
    if (p->concat && (scale != 1.0 || learned))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s options scale and learned_scale need integration=add",
                           o->spec, o->family);
    if (!p->concat && c->width != p->dims.dim)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option width needs integration=concat", o->spec,
                           o->family);
    return POSEMB_OK;
}

static posemb_status reject_unused(const pe_opts *o, const pe_family *f, posemb_error *err)
{
    for (int i = 0; i < o->n; i++)
        if (!o->used[i])
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s has no option '%s' (options: %s)", o->spec, f->name,
                               o->key[i], f->options[0] ? f->options : "none");
    return POSEMB_OK;
}

static posemb_status add_comp(posemb_pe *p, pe_spec_comp *sc, posemb_error *err)
{
    const pe_family *f = pe_family_find(sc->family);
    if (!f) {
        char known[512] = "none";
        for (int i = 0; i < PE_N_FAMILIES; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), ", %s", PE_FAMILIES[i]->name);
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': unknown PE '%s' (known: %s)", p->spec, sc->family, known);
    }
    pe_comp **slot = f->kind == PE_KIND_INPUT       ? &p->input
                     : f->kind == PE_KIND_ATTENTION ? &p->attn
                     : f->kind == PE_KIND_SCALE     ? &p->scale
                                                    : &p->positions;
    if (*slot)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': both %s and %s are %s PEs; combine at most one absolute PE "
                           "with one relative PE or bias (and one logit scale)",
                           p->spec, (*slot)->fam->name, f->name,
                           f->kind == PE_KIND_INPUT       ? "absolute"
                           : f->kind == PE_KIND_ATTENTION ? "attention"
                           : f->kind == PE_KIND_SCALE     ? "logit-scale"
                                                          : "position");
    pe_comp *c = &p->comps[p->n_comps++];
    memset(c, 0, sizeof *c);
    *slot = c;
    c->fam = f;
    c->owner = p;
    c->dims = p->dims;
    c->len0 = p->len0;
    c->head_dim = p->dims.head_dim;
    c->width = p->dims.dim;
    c->max_pos = INT32_MAX;
    c->params = p->params + p->n_params;
    snprintf(c->canon, sizeof c->canon, "%s", f->name);
    c->hooks = (f->qk_forward ? PE_HOOK_QK : 0) | (f->logits_forward ? PE_HOOK_LOGITS : 0) |
               (f->values_forward ? PE_HOOK_VALUES : 0) | (f->layer_input_forward ? PE_HOOK_LAYER_INPUT : 0) |
               (f->weights_forward ? PE_HOOK_WEIGHTS : 0) | (f->scores_forward ? PE_HOOK_SCORES : 0);
    posemb_status st = f->kind == PE_KIND_INPUT ? input_options(p, c, &sc->opts, err) : POSEMB_OK;
    if (!st) st = f->configure(c, &sc->opts, err);
    if (!st && (f->kind == PE_KIND_ATTENTION || f->kind == PE_KIND_SCALE)) st = pe_layers_configure(c, &sc->opts, err);
    if (!st) st = reject_unused(&sc->opts, f, err);
    if (st || f->kind != PE_KIND_INPUT) return st;
    if (!p->concat) pe_canon_add(c, "integration=add");
    if (p->input_scale != 1.0) pe_canon_num(c, "scale", p->input_scale); /* spelled out only when set: old specs stay */
    if (p->learned_scale) {
        pe_canon_add(c, "learned_scale=on");
        if ((p->scale_param = pe_comp_param(c, "position_scale", POSEMB_PE_SCOPE_MODEL, 0, 1, 0, -1.0f, 0, err)) < 0)
            return err ? err->code : POSEMB_ERANGE;
    }
    if (p->concat) {
        pe_canon_add(c, "integration=concat");
        pe_canon_add(c, "width=%d", c->width);
        int D = p->dims.dim;
        p->proj_w = p->n_params;
        if (pe_comp_param(c, "position_projection.weight", POSEMB_PE_SCOPE_MODEL, 0, D, D + c->width, 0.02f, 1, err) <
                0 ||
            pe_comp_param(c, "position_projection.bias", POSEMB_PE_SCOPE_MODEL, 0, D, 0, 0.0f, 0, err) < 0)
            return err ? err->code : POSEMB_ERANGE;
    }
    return POSEMB_OK;
}

static void join_names(posemb_pe *p)
{
    char canon[sizeof p->spec] = "";
    p->name[0] = '\0';
    for (int i = 0; i < p->n_comps; i++) {
        const char *sep = i ? "+" : "";
        snprintf(p->name + strlen(p->name), sizeof p->name - strlen(p->name), "%s%s", sep, p->comps[i].fam->name);
        snprintf(canon + strlen(canon), sizeof canon - strlen(canon), "%s%s", sep, p->comps[i].canon);
    }
    if (!p->n_comps) snprintf(p->name, sizeof p->name, "none");
    snprintf(p->spec, sizeof p->spec, "%s", p->n_comps ? canon : "none");
}

static int is_none(const pe_spec_comp *sc) { return sc->family[0] == 'n' && !strcmp(sc->family, "none"); }

/* 0 for absolute families, 2 for scale families, 3 for position families,
 * 1 for the rest (and unknown names, reported by add_comp). */
static int comp_rank(const pe_spec_comp *sc)
{
    const pe_family *f = pe_family_find(sc->family);
    if (!f) return 1;
    return f->kind == PE_KIND_INPUT ? 0 : f->kind == PE_KIND_SCALE ? 2 : f->kind == PE_KIND_POSITIONS ? 3 : 1;
}

/* A scale multiplies q.k: it composes with a q/k transform (a rotation) or
 * with none, not with a bias or value term, which it would leave unscaled. */
static posemb_status check_scale_comp(posemb_pe *p, posemb_error *err)
{
    if (!p->scale) return POSEMB_OK;
    if (p->attn && (p->attn->hooks & (PE_HOOK_LOGITS | PE_HOOK_VALUES | PE_HOOK_LAYER_INPUT | PE_HOOK_SCORES)))
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': %s scales q.k, not %s's bias or values; combine it with a rotary PE (rope, "
                           "lrope, xpos) or use it alone",
                           p->spec, p->scale->fam->name, p->attn->fam->name);
    int n = p->dims.max_len;
    return pe_slots_init(&p->qscale, p->dims.max_threads, (size_t)n * (2 + (size_t)p->dims.head_dim), err);
}

/* random:max=N feeds drawn positions to the other components: there must be
 * one that reads positions, and every table must reach N - 1. */
static posemb_status check_positions_comp(posemb_pe *p, posemb_error *err)
{
    const pe_comp *r = p->positions;
    if (!r) return POSEMB_OK;
    int reads = p->input || (p->attn && !p->attn->fam->no_positions) || (p->scale && !p->scale->fam->no_positions);
    if (!reads)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': random draws the positions another PE reads; combine it with one that reads "
                           "positions (ape+random:max=N, rope+random:max=N, ...)",
                           p->spec);
    for (int i = 0; i < p->n_comps; i++)
        if (&p->comps[i] != r && p->comps[i].max_pos < r->draw_max)
            return posemb_fail(err, POSEMB_EINVAL,
                               "spec '%s': random:max=%d draws positions up to %d, but %s takes positions below %d "
                               "(give the model max_len >= %d)",
                               p->spec, r->draw_max, r->draw_max - 1, p->comps[i].fam->name, p->comps[i].max_pos,
                               r->draw_max);
    return POSEMB_OK;
}

static posemb_status build(posemb_pe *p, const char *spec, posemb_error *err)
{
    pe_spec_comp sc[PE_MAX_COMPS];
    int n;
    posemb_status st = pe_spec_parse(spec, sc, PE_MAX_COMPS, &n, err);
    if (st) return st;
    for (int i = 0; i < n; i++)
        if (is_none(&sc[i]) && (n > 1 || sc[i].opts.n))
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': 'none' stands alone and takes no options", spec);
    /* The absolute component first, whatever the spec's order: parameters,
     * the canonical spec and exports then follow the Transformer's order,
     * so "rpe+ape" and "ape+rpe" lay out their parameters identically. */
    for (int rank = 0; rank < 4; rank++)
        for (int i = 0; i < n; i++)
            if (!is_none(&sc[i]) && comp_rank(&sc[i]) == rank && (st = add_comp(p, &sc[i], err))) return st;
    join_names(p);
    st = check_positions_comp(p, err);
    return st ? st : check_scale_comp(p, err);
}

/* posemb_pe_create with the length defaults of a build for len0 positions. */
static posemb_status create_at(posemb_pe **out, const char *spec, const posemb_pe_dims *dims, int len0,
                               posemb_error *err)
{
    *out = NULL;
    posemb_status st = check_dims(dims, err);
    if (st) return st;
    posemb_pe *p = calloc(1, sizeof *p);
    if (!p) return posemb_fail(err, POSEMB_ENOMEM, "PE: out of memory");
    p->dims = *dims;
    p->len0 = len0;
    if (p->dims.max_threads <= 0) p->dims.max_threads = posemb_threads_max();
    if (!p->dims.head_dim) p->dims.head_dim = dims->dim / dims->n_heads;
    p->cap_params = 4 * dims->n_layers + 16;
    p->params = calloc((size_t)p->cap_params, sizeof *p->params);
    snprintf(p->spec, sizeof p->spec, "%s", spec ? spec : "");
    if (!p->params) st = posemb_fail(err, POSEMB_ENOMEM, "PE: out of memory");
    if (!st) st = build(p, spec, err);
    if (st) {
        posemb_pe_free(p);
        return st;
    }
    *out = p;
    return POSEMB_OK;
}

posemb_status posemb_pe_create(posemb_pe **out, const char *spec, const posemb_pe_dims *dims, posemb_error *err)
{
    return create_at(out, spec, dims, dims ? dims->max_len : 0, err);
}

/* The component whose table of positions bounds the PE, or NULL when none has one. */
static const pe_comp *table_comp(const posemb_pe *p)
{
    const pe_comp *t = NULL;
    for (int i = 0; i < p->n_comps; i++)
        if (p->comps[i].max_pos < INT32_MAX && (!t || p->comps[i].max_pos < t->max_pos)) t = &p->comps[i];
    return t;
}

/* The block the parameters (or gradients) are bound to, or NULL. */
static float *bound_block(const posemb_pe *p, int grads)
{
    if (!p->n_params) return NULL;
    float *x = grads ? p->params[0].grad : p->params[0].data;
    return x ? x - p->params[0].offset : NULL;
}

/* Points the component pointers of to, a copy of from, at its own components. */
static void relink(posemb_pe *to, const posemb_pe *from)
{
    pe_comp **slots[] = {&to->input, &to->attn, &to->scale, &to->positions};
    for (int i = 0; i < 4; i++)
        if (*slots[i]) *slots[i] = to->comps + (*slots[i] - from->comps);
    for (int i = 0; i < to->n_comps; i++) to->comps[i].owner = to;
}

/* Families size their per-thread buffers by max_len; a PE without a table
 * is rebuilt for a longer length from its canonical spec (length defaults
 * kept through len0) and takes over the old one's memory, so that pointers
 * to it and its parameters stay valid. */
posemb_status posemb_pe_reserve(posemb_pe *p, int len, posemb_error *err)
{
    if (len <= p->dims.max_len) return POSEMB_OK;
    for (int i = 0; i < p->n_comps; i++) {
        const pe_comp *t = &p->comps[i];
        if (t->max_pos < INT32_MAX && !t->fam->table_by_position)
            return posemb_fail(err, POSEMB_ERANGE, "PE %s: %d tokens are past %s's table of %d positions", p->name, len,
                               t->fam->name, t->max_pos);
    }
    posemb_pe_dims d = p->dims;
    d.max_len = len;
    posemb_pe *np;
    posemb_status st = create_at(&np, p->spec, &d, p->len0, err);
    if (st) return st;
    if (np->n_floats != p->n_floats || strcmp(np->spec, p->spec)) {
        posemb_pe_free(np);
        return posemb_fail(err, POSEMB_EINVAL, "PE %s: built for %d positions it is another PE", p->spec, len);
    }
    float *data = bound_block(p, 0), *grad = bound_block(p, 1), *own = p->own;
    posemb_pe old = *p;
    *p = *np;
    *np = old;
    relink(p, np);
    relink(np, p);
    np->own = NULL; /* the block p is bound to */
    p->own = own;
    posemb_pe_bind(p, data, grad);
    if (p->has_data) posemb_pe_prepare(p);
    posemb_pe_free(np);
    return POSEMB_OK;
}

void posemb_pe_free(posemb_pe *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_comps; i++) {
        if (p->comps[i].fam->destroy) p->comps[i].fam->destroy(&p->comps[i]);
        free(p->comps[i].layer_on);
    }
    pe_slots_free(&p->qscale);
    free(p->params);
    free(p->own);
    free(p);
}

const char *posemb_pe_spec(const posemb_pe *p) { return p->spec; }
const char *posemb_pe_name(const posemb_pe *p) { return p->name; }
const posemb_pe_dims *posemb_pe_get_dims(const posemb_pe *p) { return &p->dims; }

int posemb_pe_has_input(const posemb_pe *p) { return p->input != NULL; }
int posemb_pe_has_qk(const posemb_pe *p) { return p->scale || (p->attn && (p->attn->hooks & PE_HOOK_QK)); }
int posemb_pe_has_scale(const posemb_pe *p) { return p->scale != NULL; }
int posemb_pe_qk_per_head(const posemb_pe *p) { return p->attn && p->attn->qk_per_head; }
int posemb_pe_has_scores(const posemb_pe *p) { return p->attn && (p->attn->hooks & PE_HOOK_SCORES); }
int posemb_pe_n_axes(const posemb_pe *p) { return p->attn && p->attn->multi_axis ? POSEMB_PE_AXES : 1; }
int posemb_pe_has_logits(const posemb_pe *p) { return p->attn && (p->attn->hooks & PE_HOOK_LOGITS); }
int posemb_pe_logits_by_rows(const posemb_pe *p) { return !posemb_pe_has_logits(p) || p->attn->fam->logits_by_rows; }
int posemb_pe_has_values(const posemb_pe *p) { return p->attn && (p->attn->hooks & PE_HOOK_VALUES); }
int posemb_pe_has_layer_input(const posemb_pe *p) { return p->attn && (p->attn->hooks & PE_HOOK_LAYER_INPUT); }
int posemb_pe_has_weights(const posemb_pe *p) { return p->attn && (p->attn->hooks & PE_HOOK_WEIGHTS); }

int posemb_pe_n_params(const posemb_pe *p) { return p->n_params; }
const posemb_pe_param *posemb_pe_get_param(const posemb_pe *p, int i)
{
    return (i >= 0 && i < p->n_params) ? &p->params[i] : NULL;
}
size_t posemb_pe_n_floats(const posemb_pe *p) { return p->n_floats; }

const posemb_pe_param *posemb_pe_find_param(const posemb_pe *p, const char *name, int layer)
{
    for (int i = 0; i < p->n_params; i++)
        if (!strcmp(p->params[i].name, name) &&
            (p->params[i].scope == POSEMB_PE_SCOPE_MODEL || p->params[i].layer == layer))
            return &p->params[i];
    return NULL;
}

void posemb_pe_bind(posemb_pe *p, float *params, float *grads)
{
    p->has_data = params != NULL || p->n_floats == 0;
    p->has_grad = grads != NULL || p->n_floats == 0;
    for (int i = 0; i < p->n_params; i++) {
        p->params[i].data = params ? params + p->params[i].offset : NULL;
        p->params[i].grad = grads ? grads + p->params[i].offset : NULL;
    }
}

posemb_status posemb_pe_alloc(posemb_pe *p, posemb_error *err)
{
    /* the new block first: on failure the PE keeps what it was bound to */
    float *own = calloc(2 * p->n_floats + 1, sizeof(float));
    if (!own) return posemb_fail(err, POSEMB_ENOMEM, "PE %s: cannot allocate %zu parameters", p->name, p->n_floats);
    free(p->own);
    p->own = own;
    posemb_pe_bind(p, p->own, p->own + p->n_floats);
    return POSEMB_OK;
}

int posemb_pe_is_bound(const posemb_pe *p, int with_grads)
{
    return (p->has_data || !p->n_floats) && (!with_grads || p->has_grad || !p->n_floats);
}

void posemb_pe_init_params(posemb_pe *p, posemb_rng *rng)
{
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 0), "posemb_pe_init_params before posemb_pe_bind or posemb_pe_alloc");
    for (int i = 0; i < p->n_params; i++) {
        posemb_pe_param *t = &p->params[i];
        if (t->init_std > 0) posemb_rng_fill_normal(rng, t->data, (long)t->numel, t->init_std);
        else if (t->init_std == 0) memset(t->data, 0, t->numel * sizeof(float));
    }
    for (int i = 0; i < p->n_comps; i++)
        if (p->comps[i].fam->init) p->comps[i].fam->init(&p->comps[i]);
    if (p->learned_scale) p->params[p->scale_param].data[0] = (float)p->input_scale;
    posemb_pe_prepare(p);
}

void posemb_pe_zero_grad(posemb_pe *p)
{
    for (int i = 0; i < p->n_params; i++)
        if (p->params[i].grad) memset(p->params[i].grad, 0, p->params[i].numel * sizeof(float));
}

void posemb_pe_prepare(posemb_pe *p)
{
    for (int i = 0; i < p->n_comps; i++)
        if (p->comps[i].fam->prepare) p->comps[i].fam->prepare(&p->comps[i]);
}

int32_t posemb_pe_random_max(const posemb_pe *p) { return p->positions ? p->positions->draw_max : 0; }

posemb_status posemb_pe_draw_positions(const posemb_pe *p, uint64_t key, int T, int32_t *pos, posemb_error *err)
{
    int32_t max = posemb_pe_random_max(p);
    if (!max) return posemb_fail(err, POSEMB_EINVAL, "PE %s: no randomized positions (random:max=N)", p->name);
    if (T < 1 || T > max)
        return posemb_fail(err, POSEMB_ERANGE, "PE %s: %d distinct positions cannot be drawn from [0, %d)", p->spec, T,
                           max);
    pe_draw_positions(max, key, T, pos);
    return POSEMB_OK;
}

int32_t posemb_pe_position_limit(const posemb_pe *p)
{
    int32_t lim = INT32_MAX;
    for (int i = 0; i < p->n_comps; i++)
        if (p->comps[i].max_pos < lim) lim = p->comps[i].max_pos;
    return lim;
}

posemb_status posemb_pe_check_positions(const posemb_pe *p, const int32_t *pos, long n, posemb_error *err)
{
    const pe_comp *t = table_comp(p);
    int32_t lim = t ? t->max_pos : INT32_MAX;
    for (long i = 0; i < n; i++)
        if (pos[i] < 0 || pos[i] >= lim)
            return pos[i] < 0 ? posemb_fail(err, POSEMB_ERANGE, "PE %s: position %d (token %ld) is negative", p->name,
                                            pos[i], i)
                              : posemb_fail(err, POSEMB_ERANGE,
                                            "PE %s: position %d (token %ld) is past %s's table of %d positions",
                                            p->name, pos[i], i, t->fam->name, lim);
    return POSEMB_OK;
}

/* ---- 1. input hook ---------------------------------------------------- */

/* The amplitude s of an added absolute PE: fixed, or the learned scalar. */
static float input_scale(const posemb_pe *p)
{
    return p->learned_scale ? p->params[p->scale_param].data[0] : (float)p->input_scale;
}

size_t posemb_pe_input_scratch_floats(const posemb_pe *p, long ntok)
{
    if (!p->input) return 0;
    /* rows of P; for concat also their gradient and dx before it is copied out */
    size_t w = (size_t)p->input->width;
    return (size_t)ntok * (p->concat ? 2 * w + (size_t)p->dims.dim : w);
}

posemb_status posemb_pe_input_forward(posemb_pe *p, const int32_t *pos, long ntok, const float *x, float *y,
                                      float *scratch, posemb_error *err)
{
    size_t D = (size_t)p->dims.dim, n = (size_t)ntok * D;
    if (!p->input) {
        if (y != x) memcpy(y, x, n * sizeof *y);
        return POSEMB_OK;
    }
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 0), "PE forward before posemb_pe_bind or posemb_pe_alloc");
    posemb_status st = posemb_pe_check_positions(p, pos, ntok, err);
    if (st) return st;
    pe_comp *c = p->input;
    float *rows = scratch; /* [ntok, width] */
    c->fam->rows(c, pos, ntok, rows);
    if (!p->concat) {
        float s = input_scale(p);
        for (size_t i = 0; i < n; i++) y[i] = x[i] + s * rows[i];
        return POSEMB_OK;
    }
    /* y = x W[:, :D]^T + rows W[:, D:]^T + b, with W [D, D + width] row-major. */
    const posemb_pe_param *w = &p->params[p->proj_w], *b = &p->params[p->proj_w + 1];
    int ldw = (int)D + c->width;
    for (long t = 0; t < ntok; t++) memcpy(y + (size_t)t * D, b->data, D * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ntok, (int)D, (int)D, 1.0f, x, (int)D, w->data, ldw, 1.0f,
                y, (int)D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ntok, (int)D, c->width, 1.0f, rows, c->width, w->data + D,
                ldw, 1.0f, y, (int)D);
    return POSEMB_OK;
}

void posemb_pe_input_backward(posemb_pe *p, const int32_t *pos, long ntok, const float *x, const float *dy, float *dx,
                              float *scratch)
{
    size_t D = (size_t)p->dims.dim, n = (size_t)ntok * D;
    pe_comp *c = p->input;
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 1), "PE backward without gradient memory (posemb_pe_bind)");
    if (!c || !p->concat) {
        if (dx != dy) memcpy(dx, dy, n * sizeof *dx);
        if (!c) return;
        float s = input_scale(p);
        if (p->learned_scale) { /* ds = sum dy . P */
            c->fam->rows(c, pos, ntok, scratch);
            double ds = 0;
            for (size_t i = 0; i < n; i++) ds += (double)dy[i] * scratch[i];
            p->params[p->scale_param].grad[0] += (float)ds;
        }
        if (!c->fam->rows_backward) return;
        const float *drows = dy;
        if (s != 1.0f) { /* dP = s dy, in the rows' scratch */
            for (size_t i = 0; i < n; i++) scratch[i] = s * dy[i];
            drows = scratch;
        }
        c->fam->rows_backward(c, pos, ntok, drows);
        return;
    }
    const posemb_pe_param *w = &p->params[p->proj_w], *b = &p->params[p->proj_w + 1];
    int ldw = (int)D + c->width;
    float *rows = scratch, *drows = scratch + (size_t)ntok * c->width;
    c->fam->rows(c, pos, ntok, rows);
    for (long t = 0; t < ntok; t++)
        for (size_t i = 0; i < D; i++) b->grad[i] += dy[(size_t)t * D + i];
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)D, (int)D, (int)ntok, 1.0f, dy, (int)D, x, (int)D, 1.0f,
                w->grad, ldw);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)D, c->width, (int)ntok, 1.0f, dy, (int)D, rows, c->width,
                1.0f, w->grad + D, ldw);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ntok, c->width, (int)D, 1.0f, dy, (int)D, w->data + D,
                ldw, 0.0f, drows, c->width);
    if (c->fam->rows_backward) c->fam->rows_backward(c, pos, ntok, drows);
    /* dx = dy W[:, :D], computed aside because dx may alias dy. */
    float *dxs = drows + (size_t)ntok * c->width;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ntok, (int)D, (int)D, 1.0f, dy, (int)D, w->data, ldw,
                0.0f, dxs, (int)D);
    memcpy(dx, dxs, n * sizeof *dx);
}

/* ---- 2-4. attention hooks --------------------------------------------- */

/* 1 when p's attention component has hook (PE_HOOK_*) and acts in layer. */
static int attn_hook_on(const posemb_pe *p, unsigned hook, int layer)
{
    return p->attn && (p->attn->hooks & hook) && pe_layer_on(p->attn, layer);
}

static int scale_on(const posemb_pe *p, const posemb_pe_head *h)
{
    return p->scale && h->nq > 0 && pe_layer_on(p->scale, h->layer);
}

void posemb_pe_qk_forward(posemb_pe *p, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk)
{
    if (attn_hook_on(p, PE_HOOK_QK, h->layer)) p->attn->fam->qk_forward(p->attn, h, q, ldq, k, ldk);
    if (!scale_on(p, h)) return;
    float *f = pe_slot(&p->qscale, h->slot);
    p->scale->fam->q_factors(p->scale, h, f);
    for (int i = 0; i < h->nq; i++)
        for (int t = 0; t < p->dims.head_dim; t++) q[(size_t)i * ldq + t] *= f[i];
}

/* The scale's backward: q_out = f q_in, so d loss / d f_i = q_in_i . dq_i
 * and dq_in = f dq. q_in = q_out / f goes to qin for the attention
 * component's backward; where f_i = 0 (SSMax's first query, log 1 = 0)
 * dq_in_i is 0, so no gradient depends on that row and it is set to 0. */
static void scale_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, float *dq, int lddq,
                           float *qin)
{
    int d = p->dims.head_dim, n = p->dims.max_len;
    float *f = pe_slot(&p->qscale, h->slot), *df = f + n;
    p->scale->fam->q_factors(p->scale, h, f);
    for (int i = 0; i < h->nq; i++) {
        const float *qi = q + (size_t)i * ldq;
        float *dqi = dq + (size_t)i * lddq, inv = f[i] != 0.0f ? 1.0f / f[i] : 0.0f;
        double g = 0.0;
        for (int t = 0; t < d; t++) {
            qin[(size_t)i * d + t] = qi[t] * inv;
            g += (double)qi[t] * inv * dqi[t];
            dqi[t] *= f[i];
        }
        df[i] = (float)g;
    }
    if (p->scale->fam->q_factors_backward) p->scale->fam->q_factors_backward(p->scale, h, df);
}

void posemb_pe_qk_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                           float *dq, int lddq, float *dk, int lddk)
{
    if (scale_on(p, h)) {
        float *qin = pe_slot(&p->qscale, h->slot) + 2 * (size_t)p->dims.max_len;
        scale_backward(p, h, q, ldq, dq, lddq, qin);
        q = qin;
        ldq = p->dims.head_dim;
    }
    if (attn_hook_on(p, PE_HOOK_QK, h->layer))
        p->attn->fam->qk_backward(p->attn, h, q, ldq, k, ldk, dq, lddq, dk, lddk);
}

void posemb_pe_logits_forward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                              float *s, int lds)
{
    if (posemb_pe_has_logits(p) && pe_layer_on(p->attn, h->layer))
        p->attn->fam->logits_forward(p->attn, h, q, ldq, k, ldk, s, lds);
}

void posemb_pe_logits_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                               const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk)
{
    if (posemb_pe_has_logits(p) && pe_layer_on(p->attn, h->layer))
        p->attn->fam->logits_backward(p->attn, h, q, ldq, k, ldk, ds, ldds, dq, lddq, dk, lddk);
}

void posemb_pe_values_forward(posemb_pe *p, const posemb_pe_head *h, const float *prob, int ldp, float *z, int ldz)
{
    if (posemb_pe_has_values(p) && pe_layer_on(p->attn, h->layer))
        p->attn->fam->values_forward(p->attn, h, prob, ldp, z, ldz);
}

void posemb_pe_values_backward(posemb_pe *p, const posemb_pe_head *h, const float *prob, int ldp, const float *dz,
                               int lddz, float *dprob, int lddp)
{
    if (posemb_pe_has_values(p) && pe_layer_on(p->attn, h->layer))
        p->attn->fam->values_backward(p->attn, h, prob, ldp, dz, lddz, dprob, lddp);
}

int posemb_pe_scores_forward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                             float *s, int lds)
{
    if (!attn_hook_on(p, PE_HOOK_SCORES, h->layer)) return 0;
    p->attn->fam->scores_forward(p->attn, h, q, ldq, k, ldk, s, lds);
    return 1;
}

int posemb_pe_scores_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                              const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate)
{
    if (!attn_hook_on(p, PE_HOOK_SCORES, h->layer)) return 0;
    p->attn->fam->scores_backward(p->attn, h, q, ldq, k, ldk, ds, ldds, dq, lddq, dk, lddk, accumulate);
    return 1;
}

int posemb_pe_weights_forward(posemb_pe *p, const posemb_pe_head *h, float *s, int lds)
{
    if (!attn_hook_on(p, PE_HOOK_WEIGHTS, h->layer)) return 0;
    p->attn->fam->weights_forward(p->attn, h, s, lds);
    return 1;
}

int posemb_pe_weights_backward(posemb_pe *p, const posemb_pe_head *h, const float *w, int ldw, float *dw, int lddw)
{
    if (!attn_hook_on(p, PE_HOOK_WEIGHTS, h->layer)) return 0;
    p->attn->fam->weights_backward(p->attn, h, w, ldw, dw, lddw);
    return 1;
}

/* ---- 5. layer-input hook ---------------------------------------------- */

size_t posemb_pe_layer_scratch_floats(const posemb_pe *p, long ntok)
{
    return posemb_pe_has_layer_input(p) ? p->attn->fam->layer_scratch(p->attn, ntok) : 0;
}

void posemb_pe_layer_input_forward(posemb_pe *p, int layer, const float *x, int B, int T, float *scratch)
{
    if (posemb_pe_has_layer_input(p) && pe_layer_on(p->attn, layer))
        p->attn->fam->layer_input_forward(p->attn, layer, x, B, T, scratch);
}

void posemb_pe_layer_input_backward(posemb_pe *p, int layer, const float *x, int B, int T, float *dx, float *scratch)
{
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 1), "PE backward without gradient memory (posemb_pe_bind)");
    if (posemb_pe_has_layer_input(p) && pe_layer_on(p->attn, layer))
        p->attn->fam->layer_input_backward(p->attn, layer, x, B, T, dx, scratch);
}

void posemb_pe_layer_backward_end(posemb_pe *p, int layer)
{
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 1), "PE backward without gradient memory (posemb_pe_bind)");
    if (p->attn && p->attn->fam->layer_backward_end) p->attn->fam->layer_backward_end(p->attn, layer);
    if (p->scale && p->scale->fam->layer_backward_end) p->scale->fam->layer_backward_end(p->scale, layer);
}

/* ---- what the PE is, as numbers ---------------------------------------- */

posemb_pe_named_matrix *pe_export_add(posemb_pe_export *ex, posemb_arena *a, const char *name, const char *desc,
                                      int rows, int cols, posemb_error *err)
{
    for (int i = 0; i < ex->n; i++)
        POSEMB_REQUIRE(strcmp(ex->items[i].name, name), "two exported matrices share a name");
    if (ex->n == ex->cap) { /* grow; the old array stays in the arena until it is freed */
        int cap = ex->cap ? 2 * ex->cap : 16;
        posemb_pe_named_matrix *items = posemb_arena_alloc(a, (size_t)cap * sizeof *items);
        if (!items) {
            posemb_fail(err, POSEMB_ENOMEM, "PE export: out of memory");
            return NULL;
        }
        if (ex->n) memcpy(items, ex->items, (size_t)ex->n * sizeof *items);
        ex->items = items;
        ex->cap = cap;
    }
    posemb_pe_named_matrix *m = &ex->items[ex->n];
    m->data = posemb_arena_floats(a, (size_t)rows * (size_t)cols);
    if (!m->data) {
        posemb_fail(err, POSEMB_ENOMEM, "PE export: cannot allocate %s [%d, %d]", name, rows, cols);
        return NULL;
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->desc, sizeof m->desc, "%s", desc);
    m->rows = rows;
    m->cols = cols;
    ex->n++;
    return m;
}

posemb_status pe_export_per_layer(pe_comp *c, const char *base, const char *desc, int first, int stride,
                                  posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    char name[64];
    for (int l = 0; l < c->dims.n_layers; l++) {
        const posemb_pe_param *t = &c->params[first + stride * l];
        if (c->dims.n_layers > 1) snprintf(name, sizeof name, "%s.layer%d", base, l);
        else snprintf(name, sizeof name, "%s", base);
        int rows = (int)t->shape[0], cols = t->ndim == 2 ? (int)t->shape[1] : 1;
        posemb_pe_named_matrix *m = pe_export_add(out, a, name, desc, rows, cols, err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        memcpy(m->data, t->data, t->numel * sizeof(float));
    }
    return POSEMB_OK;
}

posemb_status pe_export_head_biases(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, const char *desc,
                                    pe_bias_fn bias, posemb_error *err)
{
    char name[64];
    for (int h = 0; h < c->dims.n_heads; h++) {
        snprintf(name, sizeof name, "bias.head%d", h);
        posemb_pe_named_matrix *m = pe_export_add(out, a, name, desc, n, n, err);
        if (!m) return err ? err->code : POSEMB_ENOMEM;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) m->data[(size_t)i * n + j] = bias(c, h, i, j);
    }
    return POSEMB_OK;
}

posemb_status posemb_pe_export_matrices(posemb_pe *p, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    out->n = out->cap = 0;
    out->items = NULL;
    if (n < 1) return posemb_fail(err, POSEMB_EINVAL, "PE export: length %d (need >= 1)", n);
    for (int i = 0; i < p->n_comps; i++) {
        pe_comp *c = &p->comps[i];
        posemb_status st = c->fam->export ? c->fam->export(c, n, a, out, err) : POSEMB_OK;
        if (st) return st;
    }
    return POSEMB_OK;
}

int posemb_pe_family_count(void) { return PE_N_FAMILIES; }

posemb_pe_family_doc posemb_pe_family_doc_at(int i)
{
    posemb_pe_family_doc d = {.name = PE_FAMILIES[i]->name,
                              .summary = PE_FAMILIES[i]->summary,
                              .options = PE_FAMILIES[i]->options,
                              .positions_only = PE_FAMILIES[i]->kind == PE_KIND_POSITIONS};
    return d;
}
