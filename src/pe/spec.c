/* Spec strings: "comp[+comp]", comp = "family[:key=value[,key=value]...]". */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "spec.h"
#include "pe/pe_internal.h"

/* Copies s[0..n) into dst without surrounding blanks; fails if too long. */
static int copy_trimmed(char *dst, size_t cap, const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

static posemb_status parse_option(const char *spec, pe_spec_comp *c, const char *s, size_t n, posemb_error *err)
{
    const char *eq = memchr(s, '=', n);
    if (!eq)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': option '%.*s' of %s is not key=value", spec, (int)n, s,
                           c->family);
    if (c->opts.n == PE_MAX_OPTS)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s has more than %d options", spec, c->family, PE_MAX_OPTS);
    int k = c->opts.n;
    if (copy_trimmed(c->opts.key[k], sizeof c->opts.key[k], s, (size_t)(eq - s)) ||
        copy_trimmed(c->opts.val[k], sizeof c->opts.val[k], eq + 1, n - (size_t)(eq - s) - 1))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': option '%.*s' is too long", spec, (int)n, s);
    if (!c->opts.key[k][0] || !c->opts.val[k][0])
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': option '%.*s' of %s has an empty key or value", spec, (int)n,
                           s, c->family);
    for (int i = 0; i < k; i++)
        if (!strcmp(c->opts.key[i], c->opts.key[k]))
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': option %s of %s is given twice", spec, c->opts.key[k],
                               c->family);
    c->opts.n++;
    return POSEMB_OK;
}

static posemb_status parse_comp(const char *spec, const char *s, size_t n, pe_spec_comp *c, posemb_error *err)
{
    memset(c, 0, sizeof *c);
    const char *colon = memchr(s, ':', n);
    size_t name_len = colon ? (size_t)(colon - s) : n;
    if (copy_trimmed(c->family, sizeof c->family, s, name_len) || !c->family[0])
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': empty or overlong PE name", spec);
    c->opts.spec = spec;
    c->opts.family = c->family;
    if (!colon) return POSEMB_OK;
    const char *p = colon + 1, *end = s + n;
    if (p == end) return posemb_fail(err, POSEMB_EINVAL, "spec '%s': ':' after %s but no options", spec, c->family);
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        posemb_status st = parse_option(spec, c, p, (size_t)(stop - p), err);
        if (st) return st;
        p = comma ? comma + 1 : end;
        if (comma && p == end) return posemb_fail(err, POSEMB_EINVAL, "spec '%s': trailing ','", spec);
    }
    return POSEMB_OK;
}

/* pe.h: a '+' inside a number's exponent ("5e+06") joins no components. */
const char *posemb_pe_component_end(const char *comp)
{
    for (const char *q = strchr(comp, '+'); q; q = strchr(q + 1, '+')) {
        int in_exponent = q - comp >= 2 && (q[-1] == 'e' || q[-1] == 'E') &&
                          (isdigit((unsigned char)q[-2]) || q[-2] == '.') && isdigit((unsigned char)q[1]);
        if (!in_exponent) return q;
    }
    return comp + strlen(comp);
}

posemb_status pe_spec_parse(const char *spec, pe_spec_comp *comps, int max_comps, int *n_comps, posemb_error *err)
{
    if (!spec || !*spec) return posemb_fail(err, POSEMB_EINVAL, "empty PE spec (try 'ape', 'sin', 'rpe', 'ape+rpe')");
    if (strlen(spec) > 400) return posemb_fail(err, POSEMB_EINVAL, "PE spec is longer than 400 characters");
    for (const char *c = spec; *c; c++) /* refused before any message echoes the spec */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return posemb_fail(err, POSEMB_EINVAL, "PE spec has a control character (byte 0x%02x at offset %d)",
                               (unsigned char)*c, (int)(c - spec));
    *n_comps = 0;
    const char *p = spec, *end = spec + strlen(spec);
    while (p <= end) {
        const char *stop = posemb_pe_component_end(p), *plus = *stop ? stop : NULL;
        if (*n_comps == max_comps)
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': more than %d components", spec, max_comps);
        posemb_status st = parse_comp(spec, p, (size_t)(stop - p), &comps[*n_comps], err);
        if (st) return st;
        (*n_comps)++;
        if (!plus) break;
        p = plus + 1;
    }
    return POSEMB_OK;
}
