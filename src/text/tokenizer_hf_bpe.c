/* The BPE model of tokenizer.json as the Rust `tokenizers` library runs it
 * (models/bpe/model.rs, word.rs): a pre-token is split into characters,
 * each looked up in the vocabulary (with continuing_subword_prefix and
 * end_of_word_suffix), unknown ones become <0xNN> byte tokens
 * (byte_fallback) or the unknown token (fused when fuse_unk); then merges
 * are applied from a priority queue, lowest rank first and leftmost among
 * equal ranks, each merge pushing the pairs it forms with its neighbours:
 * O(n log n) in the pre-token's length. With ignore_merges a pre-token that
 * is itself in the vocabulary is that one token. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"

/* ------------------------------------------------------------ merge table */

static inline int64_t merge_get(const tok_hf *h, int32_t a, int32_t b, int32_t *res)
{
    return tok_merges_get(&h->merges, a, b, res);
}

/* A repeated pair takes the later rank, as the library's map collects them. */
int hf_merge_add(tok_hf *h, int32_t a, int32_t b, int32_t res, uint32_t rank)
{
    return tok_merges_put(&h->merges, a, b, res, rank, 0, NULL);
}

/* ------------------------------------------------------------ encoding */

struct hf_bpe_scratch {
    int32_t *sym, *prev, *next;
    size_t cap;
    tok_heap heap; /* rank << 32 | position */
    tok_str key;   /* a character with prefix / suffix */
    /* Pre-tokens repeat, so the symbols of the short ones seen are kept:
     * cache maps the bytes to an offset in memo (count, then the ids). */
    tok_map cache;
    int32_t *memo;
    size_t memo_len, memo_cap;
    tok_map cache2; /* the pre-tokenizer's memo, the same way */
    int32_t *memo2;
    size_t memo2_len, memo2_cap;
    hf_lattice lat; /* the Unigram model's */
};

#define CACHE_MAX_BYTES 64
#define CACHE_MAX_ENTRIES (1u << 18)

hf_bpe_scratch *hf_bpe_scratch_new(void) { return calloc(1, sizeof(hf_bpe_scratch)); }

void hf_bpe_scratch_free(hf_bpe_scratch *s)
{
    if (!s) return;
    free(s->sym);
    free(s->prev);
    free(s->next);
    tok_heap_free(&s->heap);
    tok_str_free(&s->key);
    tok_map_free(&s->cache);
    free(s->memo);
    tok_map_free(&s->cache2);
    free(s->memo2);
    free(s->lat.score);
    free(s->lat.from);
    free(s->lat.id);
    free(s->lat.cut);
    free(s);
}

hf_lattice *hf_scratch_lattice(hf_bpe_scratch *s, size_t n)
{
    hf_lattice *l = &s->lat;
    if (n <= l->cap) return l;
    size_t cap = l->cap ? l->cap : 256;
    while (cap < n) cap *= 2;
    double *score = realloc(l->score, cap * sizeof *score);
    if (score) l->score = score;
    int64_t *from = realloc(l->from, cap * sizeof *from);
    if (from) l->from = from;
    int32_t *id = realloc(l->id, cap * sizeof *id);
    if (id) l->id = id;
    size_t *cut = realloc(l->cut, cap * sizeof *cut);
    if (cut) l->cut = cut;
    if (!score || !from || !id || !cut) return NULL;
    l->cap = cap;
    return l;
}

static int queue_pair(const tok_hf *h, hf_bpe_scratch *s, int32_t i)
{
    if (i < 0 || s->next[i] < 0) return 0;
    int32_t res;
    int64_t r = merge_get(h, s->sym[i], s->sym[s->next[i]], &res);
    return r < 0 ? 0 : tok_heap_push(&s->heap, (uint64_t)r << 32 | (uint32_t)i);
}

static int add_sym(hf_bpe_scratch *s, size_t *k, int32_t id)
{
    if (*k == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int32_t *sym = realloc(s->sym, cap * sizeof *sym);
        if (sym) s->sym = sym;
        int32_t *prev = realloc(s->prev, cap * sizeof *prev);
        if (prev) s->prev = prev;
        int32_t *next = realloc(s->next, cap * sizeof *next);
        if (next) s->next = next;
        if (!sym || !prev || !next) return -1;
        s->cap = cap;
    }
    s->sym[(*k)++] = id;
    return 0;
}

/* The symbols of merge_word before merging; *k of them. */
static int split_chars(const posemb_tokenizer *t, const char *w, size_t n, hf_bpe_scratch *s, size_t *k)
{
    const tok_hf *h = t->hf;
    int32_t unk = -1; /* a pending unknown token */
    size_t i = 0;
    *k = 0;
    while (i < n) {
        size_t a = i;
        tok_utf8_next((const uint8_t *)w, n, &i);
        const char *key = w + a;
        size_t klen = i - a;
        if ((a > 0 && h->prefix) || (i == n && h->suffix)) {
            s->key.n = 0;
            if ((a > 0 && h->prefix && tok_str_add(&s->key, h->prefix, h->prefix_len)) ||
                tok_str_add(&s->key, w + a, i - a) ||
                (i == n && h->suffix && tok_str_add(&s->key, h->suffix, h->suffix_len)))
                return -1;
            key = s->key.p;
            klen = s->key.n;
        }
        int32_t id = tok_map_get(&t->vocab, key, klen);
        if (id >= 0) {
            if (unk >= 0 && add_sym(s, k, unk)) return -1;
            unk = -1;
            if (add_sym(s, k, id)) return -1;
            continue;
        }
        if (h->byte_fallback) { /* every byte must have its <0xNN> token, or none is used */
            size_t b = 0;
            while (b < klen && h->byte_id[(uint8_t)key[b]] >= 0) b++;
            if (b == klen) {
                for (b = 0; b < klen; b++)
                    if (add_sym(s, k, h->byte_id[(uint8_t)key[b]])) return -1;
                continue; /* as the library: a pending unknown waits */
            }
        }
        if (h->unk_id >= 0) {
            if (unk >= 0 && !h->fuse_unk && add_sym(s, k, unk)) return -1;
            unk = h->unk_id;
        }
    }
    if (unk >= 0 && add_sym(s, k, unk)) return -1;
    return 0;
}

static void remember(hf_bpe_scratch *s, const char *w, size_t n)
{
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = s->next[i]) k++;
    if (s->cache.n >= CACHE_MAX_ENTRIES || s->memo_len + k + 1 > (size_t)INT32_MAX) return;
    if (s->memo_len + k + 1 > s->memo_cap) {
        size_t cap = s->memo_cap ? s->memo_cap * 2 : 4096;
        while (cap < s->memo_len + k + 1) cap *= 2;
        int32_t *m = realloc(s->memo, cap * sizeof *m);
        if (!m) return;
        s->memo = m;
        s->memo_cap = cap;
    }
    if (tok_map_put(&s->cache, w, n, (int32_t)s->memo_len, NULL) != 0) return;
    s->memo[s->memo_len++] = (int32_t)k;
    for (int32_t i = 0; i >= 0; i = s->next[i]) s->memo[s->memo_len++] = s->sym[i];
}

int hf_memo_find(const hf_bpe_scratch *s, const char *w, size_t n, const int32_t **ids, int32_t *count)
{
    long hit = tok_map_find(&s->cache2, w, n);
    if (hit < 0) return 0;
    const int32_t *m = s->memo2 + s->cache2.val[hit];
    *count = m[0];
    *ids = m + 1;
    return 1;
}

void hf_memo_store(hf_bpe_scratch *s, const char *w, size_t n, const int32_t *ids, int32_t count)
{
    size_t k = (size_t)count;
    if (s->cache2.n >= CACHE_MAX_ENTRIES || s->memo2_len + k + 1 > (size_t)INT32_MAX) return;
    if (s->memo2_len + k + 1 > s->memo2_cap) {
        size_t cap = s->memo2_cap ? s->memo2_cap * 2 : 4096;
        while (cap < s->memo2_len + k + 1) cap *= 2;
        int32_t *m = realloc(s->memo2, cap * sizeof *m);
        if (!m) return;
        s->memo2 = m;
        s->memo2_cap = cap;
    }
    if (tok_map_put(&s->cache2, w, n, (int32_t)s->memo2_len, NULL) != 0) return;
    s->memo2[s->memo2_len++] = count;
    if (k) memcpy(s->memo2 + s->memo2_len, ids, k * sizeof *ids);
    s->memo2_len += k;
}

static posemb_status push(const posemb_tokenizer *t, int32_t id, tok_out *o)
{
    return tok_out_push(o, id, t->id_str[id], t->id_len[id]);
}

posemb_status hf_bpe_word(const posemb_tokenizer *t, const char *w, size_t n, hf_bpe_scratch *s, tok_out *o)
{
    const tok_hf *h = t->hf;
    if (!n) return POSEMB_OK;
    /* the per-call cache first: it is far smaller than the vocabulary, so
     * its lookups stay in the CPU's caches (same answer either way) */
    long hit = n <= CACHE_MAX_BYTES ? tok_map_find(&s->cache, w, n) : -1;
    if (hit >= 0) {
        const int32_t *m = s->memo + s->cache.val[hit];
        for (int32_t k = 1; k <= m[0]; k++) {
            posemb_status st = push(t, m[k], o);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    if (h->ignore_merges) {
        int32_t id = tok_map_get(&t->vocab, w, n);
        size_t one = 0;
        if (id >= 0 && add_sym(s, &one, id)) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        if (id >= 0) {
            s->next[0] = -1; /* remember() reads the list */
            if (n <= CACHE_MAX_BYTES) remember(s, w, n);
            return push(t, id, o);
        }
    }
    if (n > (size_t)INT32_MAX / 4) return posemb_fail(o->err, POSEMB_ERANGE, "a pre-token longer than 512 MiB");
    size_t k;
    if (split_chars(t, w, n, s, &k)) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    if (!k) return POSEMB_OK; /* every character unknown and no unknown token: nothing, as the library */
    for (size_t i = 0; i < k; i++) {
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < k ? (int32_t)i + 1 : -1;
    }
    s->heap.n = 0;
    for (size_t i = 0; i + 1 < k; i++)
        if (queue_pair(h, s, (int32_t)i)) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    while (s->heap.n) {
        uint64_t top = tok_heap_pop(&s->heap);
        int32_t i = (int32_t)(uint32_t)top, j = s->next[i], res = -1;
        /* absorbed nodes have sym -1; a stale entry's pair now has another rank */
        if (s->sym[i] < 0 || j < 0 || merge_get(h, s->sym[i], s->sym[j], &res) != (int64_t)(top >> 32)) continue;
        s->sym[i] = res;
        s->sym[j] = -1;
        s->next[i] = s->next[j];
        if (s->next[j] >= 0) s->prev[s->next[j]] = i;
        if (queue_pair(h, s, s->prev[i]) || queue_pair(h, s, i))
            return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    }
    if (n <= CACHE_MAX_BYTES) remember(s, w, n);
    for (int32_t i = 0; i >= 0; i = s->next[i]) {
        posemb_status st = push(t, s->sym[i], o);
        if (st) return st;
    }
    return POSEMB_OK;
}
