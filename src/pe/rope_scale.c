/* RoPE scaling: the effective frequencies w_m (angle = position x w_m) and
 * the attention factor of each Hugging Face rope_type, with d the rotated
 * dims, w_m = base^(-2m/d), s the factor, L0 the original length and L the
 * sequence's length (docs/pe.md gives the formulas and their sources). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "rope_scale.h"

#define TWO_PI 6.283185307179586476925286766559 /* strict C11 has no M_PI */

static const char *const KINDS[] = {"none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope", NULL};

/* HF's get_mscale: the YaRN attention factor for scale s. */
static double yarn_mscale(double s, double mscale) { return s <= 1.0 ? 1.0 : 0.1 * mscale * log(s) + 1.0; }

/* An option that belongs to other scaling types is an error, not ignored. */
static posemb_status only_for(const rope_scale *s, pe_opts *o, const char *key, unsigned kinds, const char *which,
                              posemb_error *err)
{
    if (!pe_opt_given(o, key) || (kinds >> s->kind & 1u)) return POSEMB_OK;
    return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope option %s needs %s", o->spec, key, which);
}

#define K(kind) (1u << (kind))

static posemb_status check_applicable(const rope_scale *s, pe_opts *o, posemb_error *err)
{
    const unsigned L0 = K(ROPE_DYNAMIC) | K(ROPE_YARN) | K(ROPE_LLAMA3) | K(ROPE_LONGROPE);
    const char *yarn = "scaling=yarn", *llama3 = "scaling=llama3";
    posemb_status st = only_for(s, o, "original", L0, "scaling=dynamic, yarn, llama3 or longrope", err);
    if (!st) st = only_for(s, o, "attention_factor", K(ROPE_YARN) | K(ROPE_LONGROPE), "scaling=yarn or longrope", err);
    if (!st) st = only_for(s, o, "beta_fast", K(ROPE_YARN), yarn, err);
    if (!st) st = only_for(s, o, "beta_slow", K(ROPE_YARN), yarn, err);
    if (!st) st = only_for(s, o, "mscale", K(ROPE_YARN), yarn, err);
    if (!st) st = only_for(s, o, "mscale_all_dim", K(ROPE_YARN), yarn, err);
    if (!st) st = only_for(s, o, "truncate", K(ROPE_YARN), yarn, err);
    if (!st) st = only_for(s, o, "low_freq_factor", K(ROPE_LLAMA3), llama3, err);
    if (!st) st = only_for(s, o, "high_freq_factor", K(ROPE_LLAMA3), llama3, err);
    if (!st) st = only_for(s, o, "factors", K(ROPE_LONGROPE), "scaling=longrope", err);
    return st;
}

/* One of longrope's factor lists: nfreq positive numbers. */
static posemb_status read_factor_list(const cJSON *obj, const char *key, int n, double **out, const char *path,
                                      posemb_error *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s must be a list of %d numbers (half the rotated dims)", path,
                           key, n);
    *out = malloc((size_t)n * sizeof **out);
    if (!*out) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: %s[%d] is not a positive number", path, key, i);
        (*out)[i++] = v->valuedouble;
    }
    return POSEMB_OK;
}

/* longrope's short_factor and long_factor, from a JSON file holding them at
 * its top level or under "rope_scaling" (a Hugging Face config.json). */
static posemb_status read_factors(rope_scale *s, const char *path, posemb_error *err)
{
    char *text;
    size_t n;
    posemb_status st = posemb_read_data_file(path, 1u << 24, &text, &n, err);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!cJSON_IsObject(obj)) obj = root;
    if (!cJSON_IsObject(obj)) st = posemb_fail(err, POSEMB_EFORMAT, "%s: not a JSON object", path);
    if (!st) st = read_factor_list(obj, "short_factor", s->nfreq, &s->short_f, path, err);
    if (!st) st = read_factor_list(obj, "long_factor", s->nfreq, &s->long_f, path, err);
    cJSON_Delete(root);
    return st;
}

/* Which dims rotate. neox (GPT-NeoX's rotary_pct, HF's partial_rotary_factor
 * for gpt_neox and phi): the first r = frac d, pairs inside them, w_m =
 * base^(-2m/r). proportional (HF's rope_type "proportional", Gemma's
 * rope_proportion): pairs over the whole head, w_m = base^(-2m/d) for the
 * first floor(frac d/2) pairs and 0 after. p-RoPE drops the lowest
 * frequencies of the rotated pairs; at frac=1 that is proportional's rule,
 * so the two are not given together. Counts floor as HF's int() does. */
static posemb_status read_partial(rope_scale *s, pe_comp *c, pe_opts *o, posemb_error *err)
{
    static const char *const PARTIAL[] = {"neox", "proportional", NULL};
    posemb_status st = pe_opt_enum(o, "partial", PARTIAL, 0, &s->proportional, err);
    if (st) return st;
    if (s->proportional && s->p != 1.0)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope p= and partial=proportional both pick the pairs that rotate; give one "
                           "(p=P is partial=proportional,frac=P)",
                           o->spec);
    if (s->proportional && c->head_dim % 2)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope partial=proportional needs an even head width, not %d",
                           o->spec, c->head_dim);
    s->rot = s->proportional ? c->head_dim : 2 * (int)(c->head_dim * s->frac / 2);
    s->nfreq = s->rot / 2;
    s->keep = (int)floor((s->proportional ? s->frac : s->p) * s->nfreq);
    return POSEMB_OK;
}

/* The options every rope has, and the scaling type. */
static posemb_status read_common(rope_scale *s, pe_comp *c, pe_opts *o, int *kind, posemb_error *err)
{
    posemb_status st = pe_opt_double(o, "base", 10000.0, 1.0 + 1e-9, 1e12, &s->base, err);
    if (!st) st = pe_opt_double(o, "frac", 1.0, 1e-9, 1.0, &s->frac, err);
    if (!st) st = pe_opt_enum(o, "scaling", KINDS, 0, kind, err);
    if (!st) st = pe_opt_double(o, "factor", 1.0, 1.0, 1e6, &s->factor, err);
    if (!st) st = pe_opt_int(o, "original", c->len0, 1, 1 << 30, &s->original, err);
    if (!st) st = pe_opt_double(o, "p", 1.0, 0.0, 1.0, &s->p, err);
    if (!st) st = read_partial(s, c, o, err);
    if (st) return st;
    s->kind = (rope_kind)*kind;
    int ntk_like = s->kind == ROPE_NTK || s->kind == ROPE_DYNAMIC;
    if (s->rot < 2 || (ntk_like && s->rot < 4))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope rotates %d of %d dims (frac=%g); need >= %d", o->spec,
                           s->rot, c->head_dim, s->frac, ntk_like ? 4 : 2);
    if (s->nfreq > ROPE_MAX_FREQ)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope rotates %d dims; at most %d", o->spec, s->rot,
                           2 * ROPE_MAX_FREQ);
    if (s->kind == ROPE_NONE && s->factor != 1.0)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope option factor needs scaling=linear, ntk, dynamic, "
                           "yarn, llama3 or longrope",
                           o->spec);
    return POSEMB_OK;
}

static posemb_status read_yarn(rope_scale *s, pe_opts *o, posemb_error *err)
{
    double mscale, mscale_all, af;
    posemb_status st = pe_opt_double(o, "beta_fast", 32.0, 1e-9, 1e9, &s->beta_fast, err);
    if (!st) st = pe_opt_double(o, "beta_slow", 1.0, 1e-9, 1e9, &s->beta_slow, err);
    if (!st) st = pe_opt_double(o, "mscale", 0.0, 0.0, 1e3, &mscale, err);
    if (!st) st = pe_opt_double(o, "mscale_all_dim", 0.0, 0.0, 1e3, &mscale_all, err);
    if (!st) st = pe_opt_bool(o, "truncate", 1, &s->truncate, err);
    if (!st) st = pe_opt_double(o, "attention_factor", 0.0, 0.0, 1e3, &af, err);
    if (st) return st;
    if (s->beta_fast < s->beta_slow)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope beta_fast=%g must be >= beta_slow=%g", o->spec,
                           s->beta_fast, s->beta_slow);
    if (af > 0) s->attn = af;
    else if (mscale > 0 && mscale_all > 0)
        s->attn = yarn_mscale(s->factor, mscale) / yarn_mscale(s->factor, mscale_all);
    else s->attn = yarn_mscale(s->factor, 1.0);
    return POSEMB_OK;
}

static posemb_status read_llama3(rope_scale *s, pe_opts *o, posemb_error *err)
{
    posemb_status st = pe_opt_double(o, "low_freq_factor", 1.0, 1e-9, 1e9, &s->low_freq_factor, err);
    if (!st) st = pe_opt_double(o, "high_freq_factor", 4.0, 1e-9, 1e9, &s->high_freq_factor, err);
    if (!st && s->high_freq_factor <= s->low_freq_factor)
        st = posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope high_freq_factor=%g must exceed low_freq_factor=%g",
                         o->spec, s->high_freq_factor, s->low_freq_factor);
    return st;
}

static posemb_status read_longrope(rope_scale *s, pe_opts *o, posemb_error *err)
{
    double af;
    posemb_status st = pe_opt_double(o, "attention_factor", 0.0, 0.0, 1e3, &af, err);
    if (st) return st;
    const char *path = pe_opt_str(o, "factors");
    if (!path)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope scaling=longrope needs factors=FILE.json (short_factor "
                           "and long_factor)",
                           o->spec);
    if ((st = read_factors(s, path, err))) return st;
    s->attn = af > 0 ? af : s->factor <= 1.0 ? 1.0 : sqrt(1.0 + log(s->factor) / log((double)s->original));
    return POSEMB_OK;
}

/* The canonical spec: the historical keys first, then what the type uses. */
static void write_canon(const rope_scale *s, pe_comp *c, pe_opts *o, const char *pairing)
{
    pe_canon_num(c, "base", s->base);
    pe_canon_add(c, "pairing=%s", pairing);
    pe_canon_num(c, "frac", s->frac);
    if (s->proportional) pe_canon_add(c, "partial=proportional");
    pe_canon_add(c, "scaling=%s", KINDS[s->kind]);
    if (s->kind != ROPE_NONE) pe_canon_num(c, "factor", s->factor);
    if (pe_opt_given(o, "original")) pe_canon_add(c, "original=%d", s->original);
    for (int i = 0; i < o->n; i++) {
        static const char *const kept[] = {
            "beta_fast",        "beta_slow",       "mscale",           "mscale_all_dim", "truncate",
            "attention_factor", "low_freq_factor", "high_freq_factor", "factors",        NULL};
        for (int k = 0; kept[k]; k++)
            if (!strcmp(o->key[i], kept[k])) pe_canon_add(c, "%s=%s", o->key[i], o->val[i]);
    }
    if (s->p != 1.0) pe_canon_num(c, "p", s->p);
}

posemb_status rope_scale_configure(rope_scale *s, pe_comp *c, pe_opts *o, const char *pairing, posemb_error *err)
{
    int kind;
    memset(s, 0, sizeof *s);
    s->attn = 1.0;
    posemb_status st = read_common(s, c, o, &kind, err);
    if (!st) st = check_applicable(s, o, err);
    if (!st && s->kind == ROPE_YARN) st = read_yarn(s, o, err);
    if (!st && s->kind == ROPE_LLAMA3) st = read_llama3(s, o, err);
    if (!st && s->kind == ROPE_LONGROPE) st = read_longrope(s, o, err);
    if (st) return st;
    s->by_length = s->kind == ROPE_DYNAMIC || s->kind == ROPE_LONGROPE;
    write_canon(s, c, o, pairing);
    s->theta = malloc((size_t)s->nfreq * sizeof *s->theta);
    if (!s->theta) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    rope_scale_freqs(s, s->original, s->theta);
    return POSEMB_OK;
}

void rope_scale_free(rope_scale *s)
{
    free(s->theta);
    free(s->short_f);
    free(s->long_f);
}

/* ---- the frequencies ---- */

/* theta [nfreq] <- base^(-2m/d). */
static void plain(const rope_scale *s, double base, double *theta)
{
    for (int m = 0; m < s->nfreq; m++) theta[m] = pow(base, -2.0 * m / s->rot);
}

/* YaRN: interpolate (w/s) the low frequencies, keep the high ones, ramp
 * between the dims where beta_slow and beta_fast rotations fit in L0. */
static void yarn(const rope_scale *s, double *theta)
{
    double d = s->rot, lb = log(s->base);
    double lo = d * log(s->original / (s->beta_fast * TWO_PI)) / (2 * lb);
    double hi = d * log(s->original / (s->beta_slow * TWO_PI)) / (2 * lb);
    if (s->truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    lo = lo < 0 ? 0 : lo;
    hi = hi > d - 1 ? d - 1 : hi;
    if (lo == hi) hi += 0.001; /* as HF: no division by zero */
    plain(s, s->base, theta);
    for (int m = 0; m < s->nfreq; m++) {
        double ramp = (m - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        theta[m] = theta[m] / s->factor * ramp + theta[m] * (1 - ramp);
    }
}

/* Llama 3.1: long wavelengths interpolated, short ones kept, a blend between. */
static void llama3(const rope_scale *s, double *theta)
{
    double lf = s->low_freq_factor, hf = s->high_freq_factor, L0 = s->original;
    plain(s, s->base, theta);
    for (int m = 0; m < s->nfreq; m++) {
        double wavelen = TWO_PI / theta[m];
        if (wavelen > L0 / lf) theta[m] /= s->factor;
        else if (wavelen >= L0 / hf) {
            double a = (L0 / wavelen - lf) / (hf - lf);
            theta[m] = (1 - a) * theta[m] / s->factor + a * theta[m];
        }
    }
}

void rope_scale_base_freqs(const rope_scale *s, double base, double *theta)
{
    plain(s, base, theta);
    for (int m = s->keep; m < s->nfreq; m++) theta[m] = 0.0;
}

void rope_scale_freqs(const rope_scale *s, int L, double *theta)
{
    double e = (double)s->rot / (s->rot - 2);
    switch (s->kind) {
    case ROPE_NONE:
        plain(s, s->base, theta);
        break;
    case ROPE_LINEAR:
        plain(s, s->base, theta);
        for (int m = 0; m < s->nfreq; m++) theta[m] /= s->factor;
        break;
    case ROPE_NTK:
        plain(s, s->base * pow(s->factor, e), theta);
        break;
    case ROPE_DYNAMIC:
        plain(s, L > s->original ? s->base * pow(s->factor * L / s->original - (s->factor - 1), e) : s->base, theta);
        break;
    case ROPE_YARN:
        yarn(s, theta);
        break;
    case ROPE_LLAMA3:
        llama3(s, theta);
        break;
    case ROPE_LONGROPE:
        plain(s, s->base, theta);
        for (int m = 0; m < s->nfreq; m++) theta[m] /= (L > s->original ? s->long_f : s->short_f)[m];
        break;
    }
    for (int m = s->keep; m < s->nfreq; m++) theta[m] = 0.0; /* p-RoPE, proportional: the lowest do not rotate */
}
