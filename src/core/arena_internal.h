/* What the other layers, the CLI and the tests call of posemb/arena.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_CORE_ARENA_INTERNAL_H
#define POSEMB_CORE_ARENA_INTERNAL_H

#include "posemb/arena.h"

/* A growable arena whose blocks are at least block_size bytes. */
void posemb_arena_init(posemb_arena *a, size_t block_size);
/* A fixed arena of exactly capacity bytes, allocated now; allocations past
 * it fail (return NULL) instead of growing. Returns 0, or -1 when out of memory. */
int posemb_arena_init_fixed(posemb_arena *a, size_t capacity);
/* bytes of zeroed memory aligned to POSEMB_ARENA_ALIGN, or NULL when out of
 * memory (or when a fixed arena is full, or bytes overflows). The memory
 * belongs to the arena: valid until posemb_arena_free, never freed alone. */
void *posemb_arena_alloc(posemb_arena *a, size_t bytes);
/* n zeroed floats; NULL as above. */
float *posemb_arena_floats(posemb_arena *a, size_t n);
/* Releases every block; the arena can be initialised again. */
void posemb_arena_free(posemb_arena *a);

#endif
