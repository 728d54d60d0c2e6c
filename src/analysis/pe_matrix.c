#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "posemb/indicators.h"
#include "pe/pe_internal.h"
#include "core/arena_internal.h"

/* The item called name, or the first of its per-layer or per-head copies
 * ("rel.layer0", "bias.head3"). */
static const posemb_pe_named_matrix *find(const posemb_pe_export *ex, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < ex->n; i++) {
        const char *item = ex->items[i].name;
        if (!strncmp(item, name, n) && (item[n] == '\0' || item[n] == '.')) return &ex->items[i];
    }
    return NULL;
}

static posemb_status similarity_of(const posemb_pe_named_matrix *m, posemb_arena *a, const char *what,
                                   posemb_pe_matrix *out, posemb_error *err)
{
    out->size = m->rows;
    out->data = posemb_arena_floats(a, (size_t)m->rows * m->rows);
    if (!out->data) return posemb_fail(err, POSEMB_ENOMEM, "similarity: out of memory");
    posemb_similarity(m->data, m->rows, m->cols, 0, out->data);
    snprintf(out->what, sizeof out->what, "%s", what);
    return POSEMB_OK;
}

/* Head average of the per-head bias matrices. */
static posemb_status bias_mean(const posemb_pe_export *ex, int n, posemb_arena *a, posemb_pe_matrix *out,
                               posemb_error *err)
{
    int heads = 0;
    out->size = n;
    out->data = posemb_arena_floats(a, (size_t)n * n);
    if (!out->data) return posemb_fail(err, POSEMB_ENOMEM, "bias: out of memory");
    for (int i = 0; i < ex->n; i++) {
        if (strncmp(ex->items[i].name, "bias.head", 9)) continue;
        for (size_t k = 0; k < (size_t)n * n; k++) out->data[k] += ex->items[i].data[k];
        heads++;
    }
    for (size_t k = 0; k < (size_t)n * n; k++) out->data[k] /= (float)heads;
    snprintf(out->what, sizeof out->what, "logit bias averaged over %d heads", heads);
    return POSEMB_OK;
}

static posemb_status matrix_of(posemb_pe *p, int n, posemb_arena *a, posemb_pe_matrix *out, posemb_error *err)
{
    posemb_pe_export ex;
    posemb_status st = posemb_pe_export_matrices(p, n, a, &ex, err);
    if (st) return st;
    const posemb_pe_named_matrix *m;
    if ((m = find(&ex, "ape"))) return similarity_of(m, a, "dot similarity of the APE rows", out, err);
    if ((m = find(&ex, "rel_key")) || (m = find(&ex, "rel")))
        return similarity_of(m, a, "dot similarity of the relative key vectors (layer 0)", out, err);
    if ((m = find(&ex, "distance_embedding")))
        return similarity_of(m, a, "dot similarity of distance_embedding rows (layer 0)", out, err);
    if ((m = find(&ex, "kernel"))) {
        out->size = m->rows;
        out->data = m->data;
        snprintf(out->what, sizeof out->what, "%s",
                 find(&ex, "xpos_zeta")          ? "xPos kernel: RoPE's with a per-pair decay"
                 : find(&ex, "mrope_axis")       ? "M-RoPE kernel on text (every axis the token's position)"
                 : find(&ex, "kernel_grid")      ? "2D RoPE kernel over the patch grid, tokens row by row"
                 : find(&ex, "pope_frequencies") ? "PoPE kernel sum_c cos((i - j) theta_c - delta_c), equal magnitudes"
                                                 : "RoPE kernel a^2 sum_m cos(theta_m (j - i))");
        return POSEMB_OK;
    }
    if (find(&ex, "bias")) return bias_mean(&ex, n, a, out, err);
    /* CoPE's term depends on the content; what is fixed is its table over counts */
    if ((m = find(&ex, "cope_pos")))
        return similarity_of(m, a, "dot similarity of CoPE's vectors by count (layer 0)", out, err);
    if (find(&ex, "fox_bias") || find(&ex, "path_beta_bias"))
        return posemb_fail(err, POSEMB_ERANGE,
                           "%s: data-dependent: its %s computed from the layer input, no fixed matrix to analyse",
                           posemb_pe_name(p), find(&ex, "fox_bias") ? "decay is" : "maps between key and query are");
    /* stick-breaking: a key's weight is what the keys between it and the query leave of the stick */
    if (posemb_pe_has_weights(p))
        return posemb_fail(err, POSEMB_ERANGE,
                           "%s: data-dependent: a key's weight depends on the logits of every key between it and "
                           "the query, no fixed matrix to analyse",
                           posemb_pe_name(p));
    return posemb_fail(err, POSEMB_ERANGE, "%s adds no positional term to analyse", posemb_pe_name(p));
}

/* A matrix of zeros (CoPE's table as initialised) has no shape to measure:
 * its indicators would read as perfect, so it is refused. */
posemb_status posemb_pe_matrix_of(posemb_pe *p, int n, posemb_arena *a, posemb_pe_matrix *out, posemb_error *err)
{
    posemb_status st = matrix_of(p, n, a, out, err);
    if (st) return st;
    for (size_t k = 0; k < (size_t)out->size * out->size; k++)
        if (out->data[k] != 0.0f) return POSEMB_OK;
    return posemb_fail(err, POSEMB_ERANGE, "%s: %s is zero everywhere (untrained?): nothing to analyse",
                       posemb_pe_name(p), out->what);
}
