/* sin and lsin: sinusoidal absolute PEs (Vaswani et al. 2017).
 *   P_x[2k] = sin(w_k x), P_x[2k+1] = cos(w_k x), w_k = base^(-2k/D)
 * (layout=halves puts the sines first, then the cosines). sin's frequencies
 * are fixed; lsin learns them, initialised to sin's. A table of the first
 * max_len positions is kept; later positions are computed on demand, so both
 * extrapolate to any length. */
#include <stdlib.h>
#include <string.h>

#include "family.h"

typedef struct sin_state {
    int learned, halves, nfreq;
    double base;
    double *freq;   /* [nfreq]: sin's closed form; lsin's parameter, widened in prepare */
    float *table;   /* [max_len, width] for the current frequencies */
    float *far_row; /* [width]: a row past the table, in backward */
} sin_state;

static posemb_status configure(pe_comp *c, pe_opts *o, posemb_error *err, int learned)
{
    static const char *const layouts[] = {"interleaved", "halves", NULL};
    sin_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", c->fam->name);
    c->state = s;
    s->learned = learned;
    posemb_status st = pe_opt_enum(o, "layout", layouts, 0, &s->halves, err);
    if (!st) st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (st) return st;
    if (c->width % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s needs an even width, got %d", o->spec, c->fam->name,
                           c->width);
    pe_canon_add(c, "layout=%s", layouts[s->halves]);
    pe_canon_num(c, "base", s->base);
    s->nfreq = c->width / 2;
    s->table = calloc((size_t)c->dims.max_len * c->width, sizeof(float));
    s->far_row = calloc((size_t)c->width, sizeof(float));
    s->freq = malloc((size_t)s->nfreq * sizeof(double));
    if (!s->table || !s->far_row || !s->freq) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", c->fam->name);
    pe_sinusoid_freqs(s->base, c->width, s->freq);
    if (learned)
        return pe_comp_param(c, "position_frequencies", POSEMB_PE_SCOPE_MODEL, 0, s->nfreq, 0, -1.0f, 0, err) < 0
                   ? (err ? err->code : POSEMB_ERANGE)
                   : POSEMB_OK;
    pe_sinusoid_table(s->freq, s->nfreq, s->halves, 0, c->dims.max_len, s->table);
    return POSEMB_OK;
}

static posemb_status sin_configure(pe_comp *c, pe_opts *o, posemb_error *err) { return configure(c, o, err, 0); }
static posemb_status lsin_configure(pe_comp *c, pe_opts *o, posemb_error *err) { return configure(c, o, err, 1); }

static void lsin_init(pe_comp *c)
{
    sin_state *s = c->state;
    pe_sinusoid_freqs_f(s->base, c->width, c->params[0].data);
}

static void lsin_prepare(pe_comp *c)
{
    sin_state *s = c->state;
    if (!c->params[0].data) return;
    pe_freqs_widen(c->params[0].data, s->nfreq, s->freq);
    pe_sinusoid_table(s->freq, s->nfreq, s->halves, 0, c->dims.max_len, s->table);
}

static void sin_destroy(pe_comp *c)
{
    sin_state *s = c->state;
    if (!s) return;
    free(s->freq);
    free(s->table);
    free(s->far_row);
    free(s);
}

static void sin_rows(pe_comp *c, const int32_t *pos, long n, float *out)
{
    const sin_state *s = c->state;
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) {
        if (pos[t] < c->dims.max_len) memcpy(out + (size_t)t * w, s->table + (size_t)pos[t] * w, w * sizeof *out);
        else pe_sinusoid_table(s->freq, s->nfreq, s->halves, pos[t], 1, out + (size_t)t * w);
    }
}

static void lsin_rows_backward(pe_comp *c, const int32_t *pos, long n, const float *dout)
{
    const sin_state *s = c->state;
    size_t w = (size_t)c->width;
    for (long t = 0; t < n; t++) {
        const float *row = s->table + (size_t)pos[t] * w;
        if (pos[t] >= c->dims.max_len) {
            pe_sinusoid_table(s->freq, s->nfreq, s->halves, pos[t], 1, s->far_row);
            row = s->far_row;
        }
        pe_sinusoid_table_backward(s->nfreq, s->halves, pos[t], 1, row, dout + (size_t)t * w, c->params[0].grad);
    }
}

static posemb_status sin_export(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err)
{
    const sin_state *s = c->state;
    posemb_pe_named_matrix *m =
        pe_export_add(out, a, "ape", "row x: the sinusoid vector of position x", n, c->width, err);
    posemb_pe_named_matrix *f =
        m ? pe_export_add(out, a, "frequencies", "row k: frequency w_k (radians per position)", s->nfreq, 1, err)
          : NULL;
    if (!f) return err ? err->code : POSEMB_ENOMEM;
    pe_sinusoid_table(s->freq, s->nfreq, s->halves, 0, n, m->data);
    for (int k = 0; k < s->nfreq; k++) f->data[k] = (float)s->freq[k];
    return POSEMB_OK;
}

const pe_family pe_family_sin = {
    .name = "sin",
    .kind = PE_KIND_INPUT,
    .summary = "fixed sinusoidal absolute PE, w_k = base^(-2k/D) (Vaswani et al. 2017)",
    .options = "layout=interleaved|halves, base=NUM (10000), integration=add|concat, width=INT (concat), scale=NUM (1, "
               "add), learned_scale=on|off",
    .configure = sin_configure,
    .destroy = sin_destroy,
    .rows = sin_rows,
    .export = sin_export,
};

const pe_family pe_family_lsin = {
    .name = "lsin",
    .kind = PE_KIND_INPUT,
    .summary = "sinusoidal absolute PE with D/2 learned frequencies, initialised to sin's",
    .options = "layout=interleaved|halves, base=NUM (10000), integration=add|concat, width=INT (concat), scale=NUM (1, "
               "add), learned_scale=on|off",
    .configure = lsin_configure,
    .init = lsin_init,
    .prepare = lsin_prepare,
    .destroy = sin_destroy,
    .rows = sin_rows,
    .rows_backward = lsin_rows_backward,
    .export = sin_export,
};
