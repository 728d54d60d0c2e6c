/* Spec options: "family:key=value,key=value". Families read the keys they
 * know; pe.c reports any key left unread. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

static const char *opt_find(pe_opts *o, const char *key)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->key[i], key)) {
            o->used[i] = 1;
            return o->val[i];
        }
    return NULL;
}

const char *pe_opt_str(pe_opts *o, const char *key) { return opt_find(o, key); }

int pe_opt_given(const pe_opts *o, const char *key)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->key[i], key)) return 1;
    return 0;
}

posemb_status pe_opt_int(pe_opts *o, const char *key, int def, int lo, int hi, int *out, posemb_error *err)
{
    const char *v = opt_find(o, key);
    if (!v) {
        *out = def;
        return POSEMB_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s='%s' is not an integer", o->spec, o->family,
                           key, v);
    if (errno == ERANGE || x < lo || x > hi)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s=%s is outside [%d, %d]", o->spec, o->family,
                           key, v, lo, hi);
    *out = (int)x;
    return POSEMB_OK;
}

posemb_status pe_opt_double(pe_opts *o, const char *key, double def, double lo, double hi, double *out,
                            posemb_error *err)
{
    const char *v = opt_find(o, key);
    if (!v) {
        *out = def;
        return POSEMB_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s='%s' is not a number", o->spec, o->family, key,
                           v);
    if (x < lo || x > hi)
        return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s=%g is outside [%g, %g]", o->spec, o->family,
                           key, x, lo, hi);
    *out = x;
    return POSEMB_OK;
}

posemb_status pe_opt_enum(pe_opts *o, const char *key, const char *const *choices, int def, int *out, posemb_error *err)
{
    const char *v = opt_find(o, key);
    if (!v) {
        *out = def;
        return POSEMB_OK;
    }
    char known[256] = "";
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(v, choices[i])) {
            *out = i;
            return POSEMB_OK;
        }
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? "|" : "", choices[i]);
    }
    return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s='%s' is not one of %s", o->spec, o->family, key, v,
                       known);
}

posemb_status pe_opt_bool(pe_opts *o, const char *key, int def, int *out, posemb_error *err)
{
    static const char *const choices[] = {"off", "on", "false", "true", "0", "1", "no", "yes", NULL};
    int idx;
    posemb_status st = pe_opt_enum(o, key, choices, def, &idx, err);
    if (st) return st;
    *out = idx % 2; /* choices alternate off/on; def 0 or 1 indexes "off"/"on" */
    return POSEMB_OK;
}

void pe_canon_add(pe_comp *c, const char *fmt, ...)
{
    size_t len = strlen(c->canon);
    int first = strchr(c->canon, ':') == NULL;
    if (len + 2 >= sizeof c->canon) return;
    c->canon[len++] = first ? ':' : ',';
    c->canon[len] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->canon + len, sizeof c->canon - len, fmt, ap);
    va_end(ap);
}

void pe_canon_num(pe_comp *c, const char *key, double x)
{
    char buf[40];
    for (int digits = 6; digits <= 17; digits++) { /* the shortest form that reads back exactly */
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    char *plus = strchr(buf, '+'); /* "5e+06" -> "5e06": '+' joins PE components */
    if (plus) memmove(plus, plus + 1, strlen(plus));
    pe_canon_add(c, "%s=%s", key, buf);
}
