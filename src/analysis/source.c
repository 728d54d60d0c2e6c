/* Where a PE to analyse comes from: a built-in spec, a model folder, or a
 * 2-D tensor of a safetensors file. Each gives the position vectors it
 * has (an APE table, a relative table, frequencies) and, for models, the
 * first layer that identical-word probing and correlation read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/probes.h"
#include "posemb/safetensors.h"
#include "model/model_internal.h"
#include "pe/pe_internal.h"
#include "formats/safetensors_internal.h"
#include "core/arena_internal.h"

static const posemb_pe_named_matrix *find_item(const posemb_pe_export *ex, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < ex->n; i++) /* the item, or its first per-layer copy */
        if (!strncmp(ex->items[i].name, name, n) && (!ex->items[i].name[n] || ex->items[i].name[n] == '.'))
            return &ex->items[i];
    return NULL;
}

/* Copies what a PE's exported matrices hold into the source. */
static posemb_status take_export(posemb_source *s, posemb_pe *p, int n, posemb_error *err)
{
    posemb_pe_export ex;
    posemb_status st = posemb_pe_export_matrices(p, n, &s->arena, &ex, err);
    if (st) return st;
    const posemb_pe_named_matrix *m = find_item(&ex, "ape");
    if (m && !s->ape) {
        s->ape = m->data;
        s->dim = m->cols;
    }
    const char *rels[] = {"rel_key", "rel", "distance_embedding"};
    for (int i = 0; i < 3 && !s->rel; i++)
        if ((m = find_item(&ex, rels[i]))) {
            s->rel = m->data;
            s->rel_rows = m->rows;
            s->rel_dim = m->cols;
            s->rel_x0 = -(m->rows - 1) / 2;
        }
    const char *freqs[] = {"frequencies", "rel_frequencies", "rope_frequencies"};
    for (int i = 0; i < 3 && !s->freqs; i++)
        if ((m = find_item(&ex, freqs[i]))) {
            s->freqs = m->data;
            s->n_freqs = m->rows;
        }
    return POSEMB_OK;
}

/* Heads when none are given: BERT-base's 12, or the most below 12 that
 * divide the width, so that a PE without heads (sin, ape) needs no --heads
 * at any width and one with heads gets BERT's where the width allows. */
static int default_heads(int dim)
{
    int h = 12;
    while (h > 1 && dim % h) h--;
    return h;
}

static posemb_status open_spec(posemb_source *s, const char *spec, const posemb_source_opts *o, posemb_error *err)
{
    int dim = o->dim ? o->dim : 768, heads = o->heads ? o->heads : default_heads(dim);
    s->n = o->len ? o->len : 512;
    posemb_pe_dims dims = {
        .dim = dim, .n_heads = heads, .n_layers = 1, .max_len = s->n, .max_threads = 1, .causal = o->causal};
    posemb_status st = posemb_pe_create(&s->own_pe, spec, &dims, err);
    if (!st) st = posemb_pe_alloc(s->own_pe, err);
    if (st) return st;
    posemb_rng rng;
    posemb_rng_seed(&rng, o->seed, 0);
    posemb_pe_init_params(s->own_pe, &rng);
    snprintf(s->spec, sizeof s->spec, "%s", posemb_pe_spec(s->own_pe));
    snprintf(s->provenance, sizeof s->provenance, "built-in PE %s, %d positions, width %d, %d heads%s%s", s->spec, s->n,
             dim, heads, o->causal ? ", causal" : "",
             posemb_pe_n_params(s->own_pe) ? " (learned parameters at their seeded initialisation)" : "");
    s->dim = dim;
    return take_export(s, s->own_pe, s->n, err);
}

/* The first len rows (0: all) of table [rows, dim], already in the source's
 * arena, as the positions' vectors. */
static void take_table(posemb_source *s, float *table, int64_t rows, int64_t dim, int len)
{
    s->n = len && len < rows ? len : (int)rows;
    s->dim = (int)dim;
    s->ape = table;
    snprintf(s->spec, sizeof s->spec, "table");
}

static posemb_status open_tensor(posemb_source *s, const char *path, const posemb_source_opts *o, posemb_error *err)
{
    posemb_st_file f;
    posemb_status st = posemb_st_open(&f, path, err);
    if (st) return st;
    const posemb_st_entry *e = posemb_st_find(&f, o->tensor);
    if (!e) st = posemb_fail(err, POSEMB_EINVAL, "%s: no tensor '%s' (see 'posemb inspect %s')", path, o->tensor, path);
    else if (e->ndim != 2 || !posemb_dtype_is_float(e->dtype) || e->shape[0] < 2 || e->shape[1] < 1)
        st = posemb_fail(err, POSEMB_EINVAL,
                         "%s: tensor '%s' is %s with %d dimensions; a table of positions is 2-D "
                         "float with at least 2 rows",
                         path, o->tensor, posemb_dtype_name(e->dtype), e->ndim);
    float *all = st ? NULL : posemb_arena_floats(&s->arena, (size_t)e->numel);
    if (!st && !all) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    if (!st) st = posemb_st_read_f32(&f, e, all, err);
    if (!st) {
        take_table(s, all, e->shape[0], e->shape[1], o->len);
        snprintf(s->provenance, sizeof s->provenance, "tensor %s [%lld, %lld] of %s, first %d rows", o->tensor,
                 (long long)e->shape[0], (long long)e->shape[1], path, s->n);
    }
    posemb_st_close(&f);
    return st;
}

posemb_status posemb_source_open_table(posemb_source *s, const char *name, const float *table, int rows, int dim,
                                       posemb_error *err)
{
    memset(s, 0, sizeof *s);
    posemb_arena_init(&s->arena, 0);
    s->kind = POSEMB_SRC_TENSOR;
    snprintf(s->name, sizeof s->name, "%s", name);
    if (rows < 2 || dim < 1)
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: a %d x %d table; a table of positions has "
                           "at least 2 rows and 1 column",
                           name, rows, dim);
    float *copy = posemb_arena_floats(&s->arena, (size_t)rows * (size_t)dim);
    if (!copy) {
        posemb_source_close(s);
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", name);
    }
    memcpy(copy, table, (size_t)rows * (size_t)dim * sizeof *copy);
    take_table(s, copy, rows, dim, 0);
    snprintf(s->provenance, sizeof s->provenance, "table %s [%d, %d]", name, rows, dim);
    return POSEMB_OK;
}

/* The model in dir rebuilt for len positions past its first when its PE
 * has no table of positions (posemb_lm_load_at), so that its attention can
 * be read beyond the length it was trained at. A PE with a table, or a
 * checkpoint posemb_lm_load_at cannot read (sharded), keeps the model as
 * loaded, and the analysis its length (the provenance says which). */
static void load_longer(posemb_source *s, const char *dir, int len)
{
    posemb_config c = *posemb_model_config(s->model);
    int first = c.arch == POSEMB_ROBERTA ? c.pad_token_id + 1 : 0, context;
    if (len <= c.max_position - first) return;
    posemb_model *longer = NULL;
    posemb_error quiet;
    if (posemb_lm_load_at(dir, &c, len + first, &longer, &context, &quiet) || context <= c.max_position) {
        posemb_model_free(longer);
        return;
    }
    posemb_model_free(s->model);
    s->model = longer;
}

/* A model's APE rows start at its first position: RoBERTa's at pad + 1. */
static posemb_status open_model(posemb_source *s, const char *dir, const posemb_source_opts *o, posemb_error *err)
{
    posemb_status st = posemb_model_load(&s->model, dir, err);
    if (st) return st;
    if (o->len) load_longer(s, dir, o->len);
    const posemb_config *c = posemb_model_config(s->model);
    posemb_pe *p = posemb_model_pe(s->model);
    int first = c->arch == POSEMB_ROBERTA ? c->pad_token_id + 1 : 0;
    int avail = c->max_position - first;
    s->n = o->len && o->len < avail ? o->len : avail;
    snprintf(s->spec, sizeof s->spec, "%s", posemb_pe_spec(p));
    snprintf(s->provenance, sizeof s->provenance,
             "model %s (%s, %d layers, width %d, %d heads), PE %s, positions "
             "%d..%d",
             dir, c->architecture, c->layers, c->hidden, c->heads, s->spec, first, first + s->n - 1);
    s->dim = c->hidden;
    if ((st = take_export(s, p, c->max_position, err))) return st;
    if (s->ape && first) s->ape += (size_t)first * s->dim;
    return POSEMB_OK;
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

posemb_status posemb_source_open(posemb_source *s, const char *what, const posemb_source_opts *opts, posemb_error *err)
{
    posemb_source_opts none = {0};
    const posemb_source_opts *o = opts ? opts : &none;
    memset(s, 0, sizeof *s);
    posemb_arena_init(&s->arena, 0);
    snprintf(s->name, sizeof s->name, "%s", what);
    posemb_status st;
    if (o->tensor) {
        s->kind = POSEMB_SRC_TENSOR;
        st = open_tensor(s, what, o, err);
    } else if (is_dir(what)) {
        s->kind = POSEMB_SRC_MODEL;
        st = open_model(s, what, o, err);
    } else if (ends_with(what, ".safetensors"))
        st = posemb_fail(err, POSEMB_EINVAL, "%s: name the table with --tensor NAME (see 'posemb inspect %s')", what,
                         what);
    else {
        s->kind = POSEMB_SRC_SPEC;
        st = open_spec(s, what, o, err);
    }
    if (!st && s->n < 2) st = posemb_fail(err, POSEMB_EINVAL, "%s: %d positions; at least 2 are needed", what, s->n);
    if (st) posemb_source_close(s);
    return st;
}

void posemb_source_close(posemb_source *s)
{
    posemb_model_free(s->model);
    posemb_pe_free(s->own_pe);
    posemb_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}
