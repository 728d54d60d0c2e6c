/* The study's line figures: up to STUDY_LINES_ONE_AXIS series on one axis;
 * more as small multiples, one panel per PE family, with "none" as a grey
 * reference in every panel (a dozen PEs on one axis is a tangle). */
#include <stdlib.h>
#include <string.h>

#include "posemb/pe.h"
#include "plot/plot.h"
#include "study_impl.h"
#include "pe/pe_internal.h"

static const char *const FAMILY_TITLE[STUDY_FAMILIES] = {
    "no PE",
    "absolute (added to the input)",
    "rotary (rotates queries and keys)",
    "relative (learned tables)",
    "biases on the attention logits",
    "data-dependent (from the content)",
    "absolute + relative",
    "other",
};

const char *study_family_title(study_family f) { return (unsigned)f < STUDY_FAMILIES ? FAMILY_TITLE[f] : NULL; }

/* The PE's dims for asking what it is: a small decoder (CoPE and FoX are
 * decoders only) whose tables reach any random:max= a study uses. */
static posemb_status probe(const char *spec, posemb_pe **p)
{
    posemb_pe_dims d = {.dim = 32, .n_heads = 2, .n_layers = 1, .max_len = 1 << 16, .causal = 1, .max_threads = 1};
    posemb_error quiet;
    return posemb_pe_create(p, spec, &d, &quiet);
}

/* Whether an attention PE reads the positions it is given. pe.h does not
 * say it, but the registry refuses random:max= beside a PE that reads none
 * (CoPE counts its positions from the content), so adding one tells. */
static int reads_positions(const char *spec)
{
    char with[512];
    posemb_pe *p = NULL;
    if (snprintf(with, sizeof with, "%s+random:max=16", spec) >= (int)sizeof with) return 1;
    if (probe(with, &p)) return 0;
    posemb_pe_free(p);
    return 1;
}

study_family study_pe_family(const char *spec)
{
    posemb_pe *p = NULL;
    if (!spec || probe(spec, &p)) return STUDY_FAMILY_OTHER;
    study_family f = STUDY_FAMILY_NONE;
    int random = posemb_pe_random_max(p) > 0;
    int scores = posemb_pe_has_scores(p);
    int attention = posemb_pe_has_qk(p) || posemb_pe_has_logits(p) || posemb_pe_has_values(p) || scores;
    if (posemb_pe_has_input(p) && attention) f = STUDY_FAMILY_BOTH;
    else if (posemb_pe_has_layer_input(p) && (random || reads_positions(spec)))
        f = STUDY_FAMILY_ROTARY; /* decoupled: a rotary sub-head, projected from the layer input */
    else if (posemb_pe_has_layer_input(p)) f = STUDY_FAMILY_DATA;
    else if (scores)
        f = random || reads_positions(spec) ? STUDY_FAMILY_ROTARY : STUDY_FAMILY_DATA; /* PoPE's polar turn */
    else if (posemb_pe_has_qk(p) && !posemb_pe_has_logits(p) && strstr(posemb_pe_spec(p), "pairing="))
        f = STUDY_FAMILY_ROTARY;                            /* tupe's q/k hook only scales; ssmax's too */
    else if (posemb_pe_has_scale(p)) f = STUDY_FAMILY_BIAS; /* a factor on the logits: ssmax, temperature alone */
    else if (posemb_pe_has_values(p)) f = STUDY_FAMILY_RELATIVE;
    else if (posemb_pe_has_logits(p)) f = !random && !reads_positions(spec) ? STUDY_FAMILY_DATA : STUDY_FAMILY_BIAS;
    else if (posemb_pe_has_input(p)) f = STUDY_FAMILY_ABSOLUTE;
    posemb_pe_free(p);
    return f;
}

int study_panels_by_family(const posemb_series *s, int n, posemb_series *sorted, posemb_panel *panels,
                           const posemb_series **ref)
{
    study_family *fam = malloc((size_t)n * sizeof *fam);
    if (!fam) return -1;
    for (int k = 0; k < n; k++) fam[k] = s[k].label ? study_pe_family(s[k].label) : STUDY_FAMILY_OTHER;
    *ref = NULL;
    int used = 0, np = 0;
    for (int k = 0; k < n; k++)
        if (fam[k] == STUDY_FAMILY_NONE && !*ref) *ref = &s[k];
    for (int f = 0; f < STUDY_FAMILIES; f++) {
        int first = used;
        for (int k = 0; k < n; k++)
            if ((int)fam[k] == f && &s[k] != *ref) sorted[used++] = s[k];
        if (used > first) panels[np++] = (posemb_panel){FAMILY_TITLE[f], sorted + first, used - first};
    }
    free(fam);
    return np;
}

static posemb_grid_opts grid_opts(const posemb_lines_opts *o, const posemb_series *ref)
{
    posemb_grid_opts g = posemb_grid_defaults();
    g.title = o->title;
    g.xlabel = o->xlabel;
    g.ylabel = o->ylabel;
    g.xmin = o->xmin;
    g.xmax = o->xmax;
    g.ymin = o->ymin;
    g.ymax = o->ymax;
    g.xlog2 = o->xlog2;
    g.reference = ref;
    return g;
}

posemb_status study_lines_figure(const char *path, const posemb_series *s, int n, const posemb_lines_opts *o,
                                 posemb_error *err)
{
    if (n <= STUDY_LINES_ONE_AXIS) return posemb_plot_lines(path, s, n, o, err);
    posemb_series *sorted = malloc((size_t)n * sizeof *sorted);
    posemb_panel panels[STUDY_FAMILIES];
    const posemb_series *ref = NULL;
    int np = sorted ? study_panels_by_family(s, n, sorted, panels, &ref) : -1;
    posemb_status st = POSEMB_OK;
    if (np < 0) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    else if (np == 0) st = posemb_plot_lines(path, s, n, o, err); /* "none" alone */
    else {
        posemb_grid_opts g = grid_opts(o, ref);
        st = posemb_plot_lines_grid(path, panels, np, &g, err);
    }
    free(sorted);
    return st;
}
