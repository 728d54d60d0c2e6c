/* ape: a learned table, one row per position (BERT, RoBERTa, GPT-2).
 * Positions past the table are an error (posemb_pe_check_positions); the
 * table keeps the rows of the first build, so a longer input whose given
 * positions fit runs (posemb_pe_reserve). */
#include <string.h>

#include "family.h"

static posemb_status ape_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    c->max_pos = c->len0;
    if (pe_comp_param(c, "position_embeddings.weight", POSEMB_PE_SCOPE_MODEL, 0, c->len0, c->width, 0.02f, 1, err) < 0)
        return err ? err->code : POSEMB_ERANGE;
    return POSEMB_OK;
}

static void ape_rows(pe_comp *c, const int32_t *pos, long n, float *out)
{
    const float *table = c->params[0].data;
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) memcpy(out + (size_t)t * w, table + (size_t)pos[t] * w, w * sizeof *out);
}

static void ape_rows_backward(pe_comp *c, const int32_t *pos, long n, const float *dout)
{
    float *g = c->params[0].grad;
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) {
        float *gr = g + (size_t)pos[t] * w;
        const float *dr = dout + (size_t)t * w;
        for (size_t i = 0; i < w; i++) gr[i] += dr[i];
    }
}

static posemb_status ape_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    if (n > c->max_pos)
        return posemb_fail(err, POSEMB_ERANGE, "ape: %d positions asked, the table has %d rows", n, c->max_pos);
    posemb_pe_named_matrix *m =
        pe_export_add(out, a, "ape", "row x: the learned vector of position x", n, c->width, err);
    if (!m) return err ? err->code : POSEMB_ENOMEM;
    memcpy(m->data, c->params[0].data, (size_t)n * c->width * sizeof(float));
    return POSEMB_OK;
}

const pe_family pe_family_ape = {
    .name = "ape",
    .kind = PE_KIND_INPUT,
    .table_by_position = 1,
    .summary = "learned absolute table, max_len x D, N(0, 0.02) (BERT, RoBERTa, GPT-2)",
    .options = "integration=add|concat, width=INT (concat), scale=NUM (1, add), learned_scale=on|off",
    .configure = ape_configure,
    .rows = ape_rows,
    .rows_backward = ape_rows_backward,
    .export = ape_export,
};
