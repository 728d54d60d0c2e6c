/* BPE merge tables: the pair (left, right) of symbol ids -> its rank and the
 * symbol it merges into, in an open-addressing table keyed by
 * (left << 32 | right) + 1 (0 marks an empty slot). */
#include <stdlib.h>

#include "tokenizer_impl.h"

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

static size_t slot(const tok_merges *t, uint64_t key)
{
    size_t i = mix64(key) & (t->cap - 1);
    while (t->key[i] && t->key[i] != key) i = (i + 1) & (t->cap - 1);
    return i;
}

int64_t tok_merges_get(const tok_merges *t, int32_t a, int32_t b, int32_t *res)
{
    if (!t->cap) return -1;
    size_t i = slot(t, pair_key(a, b));
    if (!t->key[i]) return -1;
    *res = t->res[i];
    return t->rank[i];
}

static int grow(tok_merges *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    tok_merges old = *t;
    t->key = calloc(cap, sizeof *t->key);
    t->rank = malloc(cap * sizeof *t->rank);
    t->res = malloc(cap * sizeof *t->res);
    if (!t->key || !t->rank || !t->res) {
        free(t->key);
        free(t->rank);
        free(t->res);
        *t = old;
        return -1;
    }
    t->cap = cap;
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.key[i]) continue;
        size_t j = slot(t, old.key[i]);
        t->key[j] = old.key[i];
        t->rank[j] = old.rank[i];
        t->res[j] = old.res[i];
    }
    free(old.key);
    free(old.rank);
    free(old.res);
    return 0;
}

int tok_merges_put(tok_merges *t, int32_t a, int32_t b, int32_t res, uint32_t rank, int keep_first, uint32_t *prev)
{
    if ((t->n + 1) * 2 > t->cap && grow(t)) return -1;
    uint64_t key = pair_key(a, b);
    size_t i = slot(t, key);
    if (t->key[i]) {
        if (prev) *prev = t->rank[i];
        if (keep_first) return 1;
    } else {
        t->n++;
    }
    t->key[i] = key;
    t->rank[i] = rank;
    t->res[i] = res;
    return 0;
}

void tok_merges_free(tok_merges *t)
{
    free(t->key);
    free(t->rank);
    free(t->res);
    t->key = NULL;
    t->rank = NULL;
    t->res = NULL;
    t->cap = t->n = 0;
}
