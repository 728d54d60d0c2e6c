#include "posemb/arena.h"
#include "core/arena_internal.h"

#include <stdint.h>
#include <stdlib.h>

struct posemb_arena_block {
    posemb_arena_block *next;
    size_t size;         /* usable bytes after the header */
    size_t off;          /* bytes used */
    unsigned char *base; /* aligned, inside raw */
    void *raw;
};

/* calloc, not malloc and memset: a large block comes from the kernel's zero
 * pages and becomes resident only where it is written, so buffers a run
 * never uses (backward scratch in an inference pass) cost no memory. */
static posemb_arena_block *block_new(size_t size)
{
    posemb_arena_block *b = malloc(sizeof *b);
    if (!b) return NULL;
    b->raw = size <= SIZE_MAX - POSEMB_ARENA_ALIGN ? calloc(1, size + POSEMB_ARENA_ALIGN) : NULL;
    if (!b->raw) {
        free(b);
        return NULL;
    }
    b->base = (unsigned char *)(((uintptr_t)b->raw + POSEMB_ARENA_ALIGN - 1) & ~(uintptr_t)(POSEMB_ARENA_ALIGN - 1));
    b->size = size;
    b->off = 0;
    b->next = NULL;
    return b;
}

static size_t round_up(size_t n) { return (n + POSEMB_ARENA_ALIGN - 1) & ~(size_t)(POSEMB_ARENA_ALIGN - 1); }

void posemb_arena_init(posemb_arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? round_up(block_size) : (size_t)1 << 20;
    a->used = 0;
    a->fixed = 0;
}

int posemb_arena_init_fixed(posemb_arena *a, size_t capacity)
{
    posemb_arena_init(a, capacity);
    a->fixed = 1;
    a->head = block_new(a->block_size);
    return a->head ? 0 : -1;
}

void *posemb_arena_alloc(posemb_arena *a, size_t bytes)
{
    if (bytes > SIZE_MAX - POSEMB_ARENA_ALIGN) return NULL;
    size_t need = round_up(bytes ? bytes : 1);
    posemb_arena_block *b = a->head;
    if (!b || b->size - b->off < need) {
        if (a->fixed) return NULL;
        b = block_new(need > a->block_size ? need : a->block_size);
        if (!b) return NULL;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->base + b->off;
    b->off += need;
    a->used += need;
    return p;
}

float *posemb_arena_floats(posemb_arena *a, size_t n)
{
    if (n > SIZE_MAX / sizeof(float)) return NULL;
    return posemb_arena_alloc(a, n * sizeof(float));
}

void posemb_arena_free(posemb_arena *a)
{
    posemb_arena_block *b = a->head;
    while (b) {
        posemb_arena_block *next = b->next;
        free(b->raw);
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}
