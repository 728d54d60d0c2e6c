/* The tokenizers' string map: open addressing over an entry array, keys
 * in one byte pool (tokenizer_impl.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

/* FNV-1a: simple, and good enough for short token strings. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static int map_grow_slots(tok_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t e = 0; e < m->n; e++) {
        size_t i = m->hash[e] & (cap - 1);
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

static int map_grow_entries(tok_map *m)
{
    size_t ecap = m->ecap ? m->ecap * 2 : 64;
    uint32_t *hash = realloc(m->hash, ecap * sizeof *hash);
    if (hash) m->hash = hash;
    size_t *off = realloc(m->off, ecap * sizeof *off);
    if (off) m->off = off;
    uint32_t *len = realloc(m->len, ecap * sizeof *len);
    if (len) m->len = len;
    int32_t *val = realloc(m->val, ecap * sizeof *val);
    if (val) m->val = val;
    if (!hash || !off || !len || !val) return -1;
    m->ecap = ecap;
    return 0;
}

static int map_reserve_pool(tok_map *m, size_t extra)
{
    if (m->pool_len + extra <= m->pool_cap) return 0;
    size_t cap = m->pool_cap ? m->pool_cap : 4096;
    while (cap < m->pool_len + extra) cap *= 2;
    char *pool = realloc(m->pool, cap);
    if (!pool) return -1;
    m->pool = pool;
    m->pool_cap = cap;
    return 0;
}

static long map_lookup(const tok_map *m, const char *key, size_t len, uint32_t h, size_t *slot)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = h & mask;
    while (m->slots[i]) {
        size_t e = m->slots[i] - 1;
        if (m->hash[e] == h && m->len[e] == len && !memcmp(m->pool + m->off[e], key, len)) return (long)e;
        i = (i + 1) & mask;
    }
    if (slot) *slot = i;
    return -1;
}

int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, size_t *entry)
{
    if (len >= UINT32_MAX || m->n >= UINT32_MAX - 1) return -1;
    if ((m->n + 1) * 2 > m->cap && map_grow_slots(m)) return -1;
    uint32_t h = hash_bytes(key, len);
    size_t slot = 0;
    long found = map_lookup(m, key, len, h, &slot);
    if (found >= 0) {
        if (entry) *entry = (size_t)found;
        return 1;
    }
    if (m->n == m->ecap && map_grow_entries(m)) return -1;
    if (map_reserve_pool(m, len + 1)) return -1;
    size_t e = m->n++;
    memcpy(m->pool + m->pool_len, key, len);
    m->pool[m->pool_len + len] = '\0';
    m->off[e] = m->pool_len;
    m->pool_len += len + 1;
    m->len[e] = (uint32_t)len;
    m->hash[e] = h;
    m->val[e] = val;
    m->slots[slot] = (uint32_t)(e + 1);
    if (entry) *entry = e;
    return 0;
}

long tok_map_find(const tok_map *m, const char *key, size_t len)
{
    return map_lookup(m, key, len, hash_bytes(key, len), NULL);
}

int32_t tok_map_get(const tok_map *m, const char *key, size_t len)
{
    long e = tok_map_find(m, key, len);
    return e < 0 ? -1 : m->val[e];
}

const char *tok_map_key(const tok_map *m, size_t entry, size_t *len)
{
    if (len) *len = m->len[entry];
    return m->pool + m->off[entry];
}

void tok_map_free(tok_map *m)
{
    free(m->slots);
    free(m->hash);
    free(m->off);
    free(m->len);
    free(m->val);
    free(m->pool);
    memset(m, 0, sizeof *m);
}
