/* Arena allocation: many allocations, one release. Models size their arenas
 * up front from the config (parameters, gradients, activations), so the
 * training loop never calls malloc. Memory is zeroed and 64-byte aligned so
 * that vector loads never straddle cache lines. */
#ifndef POSEMB_ARENA_H
#define POSEMB_ARENA_H

#include "posemb/api.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POSEMB_ARENA_ALIGN 64

typedef struct posemb_arena_block posemb_arena_block;

typedef struct posemb_arena {
    posemb_arena_block *head; /* newest block first */
    size_t block_size;        /* minimum size of a new block */
    size_t used;              /* bytes handed out, alignment padding included */
    int fixed;                /* 1: never grow past the first block */
} posemb_arena;

/* A growable arena whose blocks are at least block_size bytes. */
POSEMB_API void posemb_arena_init(posemb_arena *a, size_t block_size);

/* A fixed arena of exactly capacity bytes, allocated now; allocations past
 * it fail (return NULL) instead of growing. Returns 0, or -1 when out of memory. */
POSEMB_API int posemb_arena_init_fixed(posemb_arena *a, size_t capacity);

/* bytes of zeroed memory aligned to POSEMB_ARENA_ALIGN, or NULL when out of
 * memory (or when a fixed arena is full, or bytes overflows). The memory
 * belongs to the arena: valid until posemb_arena_free, never freed alone. */
POSEMB_API void *posemb_arena_alloc(posemb_arena *a, size_t bytes);

/* n zeroed floats; NULL as above. */
POSEMB_API float *posemb_arena_floats(posemb_arena *a, size_t n);

/* Releases every block; the arena can be initialised again. */
POSEMB_API void posemb_arena_free(posemb_arena *a);

#ifdef __cplusplus
}
#endif
#endif
