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

#ifdef __cplusplus
}
#endif
#endif
