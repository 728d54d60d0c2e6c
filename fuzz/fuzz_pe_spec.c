/* PE spec strings ("ape+rpe:k=16", "rope:base=500000,scaling=ntk,factor=4"):
 * parsed for a small model and, when valid, allocated, initialised and
 * exported, and its canonical spec parsed again to the same PE. The first
 * byte picks causal or not. PEs of more than 2^22 parameters are parsed but
 * not allocated: a large table (rpe:k=1000000) runs the same code and only
 * costs the campaign seconds per input. */
#include <stdlib.h>
#include <string.h>

#include "posemb/pe.h"
#include "posemb/rng.h"
#include "pe/pe_internal.h"
#include "core/arena_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *spec = malloc(size);
    if (!spec) return 0;
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = '\0';
    posemb_pe_dims dims = {
        .dim = 16, .n_heads = 2, .n_layers = 2, .max_len = 24, .causal = data[0] & 1, .max_threads = 1};
    posemb_error err;
    posemb_pe *p = NULL;
    if (!posemb_pe_create(&p, spec, &dims, &err) && posemb_pe_n_floats(p) <= (size_t)1 << 22 &&
        !posemb_pe_alloc(p, &err)) {
        posemb_rng rng;
        posemb_rng_seed(&rng, 1, 1);
        posemb_pe_init_params(p, &rng);
        posemb_arena a;
        posemb_arena_init(&a, 0);
        posemb_pe_export ex;
        posemb_pe_export_matrices(p, 8, &a, &ex, &err);
        posemb_arena_free(&a);
        posemb_pe *again = NULL;
        if (posemb_pe_create(&again, posemb_pe_spec(p), &dims, &err) ||
            strcmp(posemb_pe_spec(again), posemb_pe_spec(p)))
            abort();
        posemb_pe_free(again);
    }
    posemb_pe_free(p);
    free(spec);
    return 0;
}
