/* A min-heap of 64-bit keys: the BPE merge queues (rank << 32 | position,
 * so the lowest rank comes first, then the leftmost pair). */
#include <stdlib.h>

#include "tokenizer_impl.h"

int tok_heap_push(tok_heap *h, uint64_t v)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        uint64_t *a = realloc(h->v, cap * sizeof *a);
        if (!a) return -1;
        h->v = a;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i && h->v[(i - 1) / 2] > v) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = v;
    return 0;
}

uint64_t tok_heap_pop(tok_heap *h)
{
    uint64_t top = h->v[0], v = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
        if (h->v[c] >= v) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = v;
    return top;
}

void tok_heap_free(tok_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
