/* layers=LIST on any attention PE: the PE acts in the listed layers only;
 * the others attend without it (NoPE layers, as SmolLM3's no_rope_layers;
 * Kazemnejad et al. 2023). LIST is layer numbers and ranges joined by '|'
 * ("0|2|4-7"), since ',' separates options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"

/* One "A" or "A-B" item of LIST into on[]; 0 on a malformed item. */
static int mark(const char *s, size_t n, int layers, unsigned char *on, int *bad_layer)
{
    char item[32], *end;
    if (n == 0 || n >= sizeof item) return 0;
    memcpy(item, s, n);
    item[n] = '\0';
    long a = strtol(item, &end, 10), b = a;
    if (end == item) return 0;
    if (*end == '-') {
        char *start = end + 1;
        b = strtol(start, &end, 10);
        if (end == start) return 0;
    }
    if (*end || a > b) return 0;
    if (a < 0 || b >= layers) {
        *bad_layer = (int)(a < 0 ? a : b);
        return 0;
    }
    for (long l = a; l <= b; l++) on[l] = 1;
    return 1;
}

/* The canonical LIST: ascending, runs as ranges. */
static void canon_list(pe_comp *c, const char *key, const unsigned char *on, int layers)
{
    char list[200] = "";
    for (int l = 0; l < layers; l++) {
        if (!on[l] || (l > 0 && on[l - 1])) continue;
        int last = l;
        while (last + 1 < layers && on[last + 1]) last++;
        size_t len = strlen(list);
        if (last > l) snprintf(list + len, sizeof list - len, "%s%d-%d", len ? "|" : "", l, last);
        else snprintf(list + len, sizeof list - len, "%s%d", len ? "|" : "", l);
    }
    pe_canon_add(c, "%s=%s", key, list);
}

posemb_status pe_opt_layers(pe_comp *c, pe_opts *o, const char *key, unsigned char **on, posemb_error *err)
{
    int L = c->dims.n_layers, bad = -1;
    const char *list = pe_opt_str(o, key);
    *on = NULL;
    if (!list) return POSEMB_OK;
    if (!(*on = calloc((size_t)L, 1))) return posemb_fail(err, POSEMB_ENOMEM, "PE: out of memory");
    for (const char *s = list;;) {
        size_t n = strcspn(s, "|");
        if (!mark(s, n, L, *on, &bad)) {
            if (bad >= 0)
                return posemb_fail(err, POSEMB_EINVAL, "spec '%s': %s option %s: layer %d is outside 0..%d", o->spec,
                                   o->family, key, bad, L - 1);
            return posemb_fail(err, POSEMB_EINVAL,
                               "spec '%s': %s option %s='%s' is not a list of layers and ranges joined by '|' "
                               "(e.g. 0|2|4-7)",
                               o->spec, o->family, key, list);
        }
        if (!s[n]) break;
        s += n + 1;
    }
    canon_list(c, key, *on, L);
    return POSEMB_OK;
}

posemb_status pe_layers_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    return pe_opt_layers(c, o, "layers", &c->layer_on, err);
}

int pe_layer_on(const pe_comp *c, int layer)
{
    return !c->layer_on || (layer >= 0 && layer < c->dims.n_layers && c->layer_on[layer]);
}
