/* The study's amplitude rule (docs/study.md, "The amplitude rule"): a
 * position vector starts at the RMS of the vectors it is added to. An added
 * absolute PE starts at the token embeddings' initialisation and learns its
 * amplitude, whatever its family: a fixed sinusoid (RMS 0.71) added to
 * tokens drawn at 0.02 swamps them, a learned table drawn like the tokens
 * does not. A learned relative table added to keys and values (a family with
 * an init_std option: rpe) is drawn at the keys' RMS at initialisation,
 * sigma sqrt(D) (LayerNorm's unit rows times weights drawn at sigma), not at
 * sigma: 8 times too small at width 64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/pe.h"
#include "posemb/rng.h"
#include "study_impl.h"
#include "pe/pe_internal.h"

/* RMS of p's absolute rows over positions [0, n) at initialisation: the
 * drawing std of a learned table (what any seed gives, up to sampling), or
 * the rows themselves for a family that computes them. */
static posemb_status input_rms(posemb_pe *p, int n, double *rms, posemb_error *err)
{
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        if (t->input && t->init_std > 0) {
            *rms = t->init_std;
            return POSEMB_OK;
        }
    }
    int D = posemb_pe_get_dims(p)->dim;
    posemb_status st = posemb_pe_alloc(p, err);
    if (st) return st;
    posemb_rng rng;
    posemb_rng_seed(&rng, 0, 0);
    posemb_pe_init_params(p, &rng);
    size_t nf = (size_t)n * D;
    float *zero = calloc(nf, sizeof *zero), *rows = malloc(nf * sizeof *rows);
    float *scratch = malloc((posemb_pe_input_scratch_floats(p, n) + 1) * sizeof *scratch);
    int32_t *pos = malloc((size_t)n * sizeof *pos);
    st = zero && rows && scratch && pos ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    for (int i = 0; !st && i < n; i++) pos[i] = i;
    if (!st) st = posemb_pe_input_forward(p, pos, n, zero, rows, scratch, err);
    double sq = 0;
    for (size_t i = 0; !st && i < nf; i++) sq += (double)rows[i] * rows[i];
    *rms = st ? 0 : sqrt(sq / (double)nf);
    free(zero);
    free(rows);
    free(scratch);
    free(pos);
    return st;
}

/* The documentation of comp's family, or NULL for an unknown one. */
static const posemb_pe_family_doc *family_of(const char *comp, posemb_pe_family_doc *d)
{
    size_t n = strcspn(comp, ":");
    for (int i = 0; i < posemb_pe_family_count(); i++) {
        *d = posemb_pe_family_doc_at(i);
        if (strlen(d->name) == n && !strncmp(d->name, comp, n)) return d;
    }
    return NULL;
}

/* Whether comp's family takes option opt (its documented options name it). */
static int takes_option(const char *comp, const char *opt)
{
    posemb_pe_family_doc d;
    return family_of(comp, &d) && d.options && strstr(d.options, opt) != NULL;
}

/* One component of a spec, rewritten by the rule when it is an added
 * absolute PE whose amplitude the spec leaves unset (no scale=, and no
 * rms=, which fixes the rows' size), or a learned relative table whose
 * init_std it leaves unset. */
static posemb_status rule_component(const char *comp, const posemb_pe_dims *dims, int n_train, float sigma, char *out,
                                    size_t cap, posemb_error *err)
{
    const char *sep = strchr(comp, ':') ? "," : ":";
    if (takes_option(comp, "init_std=") && !strstr(comp, "init_std=")) {
        snprintf(out, cap, "%s%sinit_std=%.6g", comp, sep, sigma * sqrt((double)dims->dim));
        return POSEMB_OK;
    }
    posemb_pe_family_doc d;
    if (family_of(comp, &d) && d.positions_only) { /* random:max=N: no PE alone, no amplitude of its own */
        snprintf(out, cap, "%s", comp);
        return POSEMB_OK;
    }
    posemb_pe *p;
    posemb_status st = posemb_pe_create(&p, comp, dims, err);
    if (st) return st;
    /* The canonical spec names scale= (and learned_scale=) only away from their defaults, so an
     * option written at its default (ape:scale=1, HF's APE) is looked for in comp as well. */
    const char *canon = posemb_pe_spec(p);
    int keep = !posemb_pe_has_input(p) || strstr(canon, "integration=concat") || strstr(canon, "scale=") ||
               strstr(comp, "scale=") || strstr(canon, "rms="); /* ape:rms=R: the spec holds the rows' size itself */
    double rms = 0;
    if (!keep) st = input_rms(p, n_train, &rms, err);
    posemb_pe_free(p);
    if (st) return st;
    if (keep || !(rms > 0)) snprintf(out, cap, "%s", comp);
    else snprintf(out, cap, "%s%sscale=%.6g,learned_scale=on", comp, sep, sigma / rms);
    return POSEMB_OK;
}

posemb_status study_amplitude_rule(const char *spec, const posemb_pe_dims *dims, int n_train, float sigma, char *out,
                                   size_t cap, posemb_error *err)
{
    char comp[512], part[640]; /* part: comp and the options the rule adds */
    out[0] = '\0';
    posemb_status st =
        strlen(spec) < sizeof comp ? POSEMB_OK : posemb_fail(err, POSEMB_EINVAL, "spec '%.64s...': too long", spec);
    for (const char *p = spec; !st && *p;) { /* components split as the spec parser splits them (base=1e+4 is one) */
        const char *end = posemb_pe_component_end(p);
        snprintf(comp, sizeof comp, "%.*s", (int)(end - p), p);
        p = *end ? end + 1 : end;
        st = rule_component(comp, dims, n_train, sigma, part, sizeof part, err);
        size_t len = strlen(out);
        if (!st && len + strlen(part) + 2 > cap) st = posemb_fail(err, POSEMB_EINVAL, "spec '%s': too long", spec);
        if (!st) snprintf(out + len, cap - len, "%s%s", len ? "+" : "", part);
    }
    return st;
}
