/* A PE and its exported matrices in one owned object: what `posemb pe`
 * prints and what bindings (python/posemb) hand to their users. */
#include <stdlib.h>

#include "posemb/pe.h"
#include "pe/pe_internal.h"
#include "core/arena_internal.h"

struct posemb_pe_tables {
    posemb_pe *pe;
    posemb_arena arena; /* the matrices' memory */
    posemb_pe_export ex;
};

posemb_status posemb_pe_tables_new(posemb_pe_tables **out, const char *spec, const posemb_pe_dims *dims, int n,
                                   uint64_t seed, posemb_error *err)
{
    *out = NULL;
    posemb_pe_tables *t = calloc(1, sizeof *t);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "spec '%s': out of memory", spec);
    posemb_arena_init(&t->arena, 0);
    posemb_status st = posemb_pe_create(&t->pe, spec, dims, err);
    if (!st) st = posemb_pe_alloc(t->pe, err);
    if (!st) {
        posemb_rng rng;
        posemb_rng_seed(&rng, seed, 0);
        posemb_pe_init_params(t->pe, &rng);
        st = posemb_pe_export_matrices(t->pe, n, &t->arena, &t->ex, err);
    }
    if (st) {
        posemb_pe_tables_free(t);
        return st;
    }
    *out = t;
    return POSEMB_OK;
}

posemb_pe *posemb_pe_tables_pe(const posemb_pe_tables *t) { return t->pe; }

const posemb_pe_export *posemb_pe_tables_export(const posemb_pe_tables *t) { return &t->ex; }

void posemb_pe_tables_free(posemb_pe_tables *t)
{
    if (!t) return;
    posemb_pe_free(t->pe);
    posemb_arena_free(&t->arena);
    free(t);
}
