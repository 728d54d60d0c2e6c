/* GPT-2's byte-level BPE as HF's slow GPT2Tokenizer computes it
 * (transformers 4.26.1, tokenization_gpt2.py): the pre-tokenizer regex
 * (PCRE2), every byte of a pre-token mapped to one printable character
 * (bytes_to_unicode), then the merges applied lowest rank first.
 *
 * Symbols are interned strings: the 256 byte characters are symbols 0..255
 * and each merge result is one more, so a merge is a lookup of the pair
 * (left symbol, right symbol) in a hash table giving its rank and result.
 * Comparing symbols by string, as HF does, is comparing them by number. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

/* GPT-2's pattern, with \s written out as the Python `regex` module defines
 * it (the Unicode White_Space property: \t-\r, U+0085 and category Z), since
 * PCRE2's \s leaves out U+0085:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#define WS "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}"
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

struct tok_bpe {
    tok_map syms;    /* symbol string -> symbol number (its entry index) */
    int32_t *sym_id; /* symbol -> token id, or the unknown id, or -1 */
    tok_merges merges;
    uint32_t byte_cp[256]; /* byte -> character of the printable alphabet */
    int16_t cp_byte[324];  /* and back; -1 for other characters */
    pcre2_code *re;
    int add_prefix_space;
};

void tok_bpe_free(tok_bpe *b)
{
    if (!b) return;
    tok_map_free(&b->syms);
    free(b->sym_id);
    tok_merges_free(&b->merges);
    pcre2_code_free(b->re);
    free(b);
}

static long intern(tok_bpe *b, const char *s, size_t len)
{
    size_t e;
    int r = tok_map_put(&b->syms, s, len, (int32_t)b->syms.n, &e);
    return r < 0 ? -1 : (long)e;
}

posemb_status tok_bpe_new(posemb_tokenizer *t, posemb_error *err)
{
    tok_bpe *b = calloc(1, sizeof *b);
    if (!b) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    t->bpe = b;
    tok_byte_alphabet(b->byte_cp, b->cp_byte);
    for (int c = 0; c < 256; c++) { /* symbols 0..255 are the bytes */
        char u[4];
        if (intern(b, u, (size_t)tok_utf8_put((int32_t)b->byte_cp[c], u)) != c)
            return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    int code;
    PCRE2_SIZE at;
    b->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!b->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return posemb_fail(err, POSEMB_EFORMAT, "internal: GPT-2 pattern: %s at %zu", (const char *)msg, (size_t)at);
    }
    pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE); /* optional: without JIT the interpreter runs */
    return POSEMB_OK;
}

/* ------------------------------------------------------------ merge table */

/* The rank of the pair (x, y) and its result symbol, or -1. */
static inline int32_t merge_rank(const tok_bpe *b, int32_t x, int32_t y, int32_t *res)
{
    return (int32_t)tok_merges_get(&b->merges, x, y, res);
}

int tok_bpe_add_merge(posemb_tokenizer *t, const char *a, size_t alen, const char *b_, size_t blen, int *prev)
{
    tok_bpe *b = t->bpe;
    if (b->merges.n >= (size_t)TOK_MAX_ID) return -1;
    char small[256];
    char *cat = alen + blen <= sizeof small ? small : malloc(alen + blen);
    if (!cat) return -1;
    memcpy(cat, a, alen);
    memcpy(cat + alen, b_, blen);
    long x = intern(b, a, alen), y = intern(b, b_, blen), r = intern(b, cat, alen + blen);
    if (cat != small) free(cat);
    if (x < 0 || y < 0 || r < 0) return -1;
    uint32_t was;
    int got = tok_merges_put(&b->merges, (int32_t)x, (int32_t)y, (int32_t)r, (uint32_t)b->merges.n, 1, &was);
    if (got == 1) *prev = (int)was;
    return got;
}

/* ----------------------------------------------------------- vocab.bpe */

/* Python's str.split() on s[a..b): up to 3 fields (3 means "too many"). */
static int split_fields(const char *s, size_t a, size_t b, size_t fa[3], size_t fb[3])
{
    int n = 0;
    size_t i = a;
    while (i < b && n < 3) {
        size_t j = i;
        int32_t cp = tok_utf8_next((const uint8_t *)s, b, &j);
        if (tok_py_isspace(cp)) {
            i = j;
            continue;
        }
        fa[n] = i;
        while (i < b) {
            j = i;
            cp = tok_utf8_next((const uint8_t *)s, b, &j);
            if (tok_py_isspace(cp)) break;
            i = j;
        }
        fb[n++] = i;
    }
    return n;
}

/* GPT2Tokenizer reads merges as read().split("\n")[1:-1] in text mode: the
 * first line (the "#version" header) is skipped, and so is whatever follows
 * the last newline, i.e. a last line without a newline is not a merge. Each
 * line is str.split() into LEFT RIGHT; rank = order. We also insist on the
 * header, on exactly two fields and on no repeated pair. */
posemb_status tok_bpe_load_merges(posemb_tokenizer *t, const char *path, posemb_error *err)
{
    char *buf;
    size_t len;
    posemb_status st = tok_read_file(path, &buf, &len, err);
    if (st) return st;
    char q[96];
    long line = 0;
    size_t i = 0;
    while (i < len && !st) {
        size_t a = i, b = tok_line_end(buf, len, i);
        if (b == len && line > 0) break; /* no newline after it: HF drops it */
        i = tok_line_next(buf, len, b);
        line++;
        size_t fa[3], fb[3];
        int nf;
        if (!tok_utf8_valid(buf + a, b - a)) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: not valid UTF-8", path, line);
        } else if (line == 1) {
            if (b - a < 8 || memcmp(buf + a, "#version", 8))
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: line 1: expected a '#version' header, got '%s'", path,
                                 tok_quote(buf + a, b - a, q, sizeof q));
        } else if ((nf = split_fields(buf, a, b, fa, fb)) != 2) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: expected 'LEFT RIGHT', got '%s'", path, line,
                             tok_quote(buf + a, b - a, q, sizeof q));
        } else {
            int prev;
            int r = tok_bpe_add_merge(t, buf + fa[0], fb[0] - fa[0], buf + fa[1], fb[1] - fa[1], &prev);
            if (r < 0) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory or too many merges", path);
            if (r == 1)
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: duplicate merge '%s' (also on line %d)", path,
                                 line, tok_quote(buf + a, b - a, q, sizeof q), prev + 2);
        }
    }
    if (!st && line == 0) st = posemb_fail(err, POSEMB_EFORMAT, "%s: empty (expected a '#version' header line)", path);
    free(buf);
    return st;
}

posemb_status tok_bpe_finish(posemb_tokenizer *t, int32_t unk_id, int add_prefix_space, posemb_error *err)
{
    tok_bpe *b = t->bpe;
    b->add_prefix_space = add_prefix_space;
    b->sym_id = malloc((b->syms.n ? b->syms.n : 1) * sizeof *b->sym_id);
    if (!b->sym_id) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (size_t s = 0; s < b->syms.n; s++) { /* HF: encoder.get(token, encoder.get(unk_token)) */
        size_t len;
        const char *k = tok_map_key(&b->syms, s, &len);
        int32_t id = tok_map_get(&t->vocab, k, len);
        b->sym_id[s] = id >= 0 ? id : unk_id;
    }
    return POSEMB_OK;
}

int tok_bpe_add_prefix_space(const posemb_tokenizer *t) { return t->bpe->add_prefix_space; }

/* ------------------------------------------------------------ encoding */

typedef struct bpe_scratch {
    int32_t *sym, *prev, *next;
    size_t cap;
    tok_heap heap; /* rank << 32 | position */
    size_t *round;
    size_t rcap;
    pcre2_match_data *md;
    /* Pre-tokens repeat (a corpus has far fewer distinct words than words),
     * so each call remembers the merged symbols of the short ones it has
     * seen: cache maps the bytes to an offset in memo, where the symbol
     * count is followed by the symbols. Per call, so that encoding stays
     * free of shared state. */
    tok_map cache;
    int32_t *memo;
    size_t memo_len, memo_cap;
} bpe_scratch;

/* Pre-tokens up to this many bytes are remembered, up to this many of them. */
#define CACHE_MAX_BYTES 48
#define CACHE_MAX_ENTRIES (1u << 18)

/* Queues the pair that starts at node i, if it is a merge. */
static int queue_pair(const tok_bpe *b, bpe_scratch *s, int32_t i)
{
    if (i < 0 || s->next[i] < 0) return 0;
    int32_t j = s->next[i], res;
    int32_t r = merge_rank(b, s->sym[i], s->sym[j], &res);
    return r < 0 ? 0 : tok_heap_push(&s->heap, (uint64_t)r << 32 | (uint32_t)i);
}

static posemb_status emit(const posemb_tokenizer *t, int32_t sym, tok_out *o)
{
    const tok_bpe *b = t->bpe;
    size_t len;
    const char *str = tok_map_key(&b->syms, (size_t)sym, &len);
    if (b->sym_id[sym] < 0) {
        char q[96];
        return posemb_fail(o->err, POSEMB_EFORMAT,
                           "token '%s' is not in the vocabulary and the tokenizer has no unknown token",
                           tok_quote(str, len, q, sizeof q));
    }
    return tok_out_push(o, b->sym_id[sym], str, len);
}

/* Stores the symbols now in the list under the pre-token w; silently
 * skipped when full or out of memory (the cache only saves time). */
static void remember(bpe_scratch *s, const uint8_t *w, size_t n)
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
    if (tok_map_put(&s->cache, (const char *)w, n, (int32_t)s->memo_len, NULL) != 0) return;
    s->memo[s->memo_len++] = (int32_t)k;
    for (int32_t i = 0; i >= 0; i = s->next[i]) s->memo[s->memo_len++] = s->sym[i];
}

/* GPT2Tokenizer.bpe on one pre-token. HF repeatedly takes the lowest-rank
 * pair present and merges all its occurrences left to right; here each
 * round pops every queued entry of that rank (in position order) and
 * merges those still valid, so a pair created in the round waits for the
 * next one, as in HF. Entries made stale by a neighbour's merge are
 * recognised because the pair now at that position has another rank.
 * O(n log n) for a pre-token of n bytes, where HF's loop is O(n^2). */
static posemb_status bpe_word(const posemb_tokenizer *t, const uint8_t *w, size_t n, bpe_scratch *s, tok_out *o)
{
    const tok_bpe *b = t->bpe;
    if (n == 1) return emit(t, w[0], o);
    long hit = n <= CACHE_MAX_BYTES ? tok_map_find(&s->cache, (const char *)w, n) : -1;
    if (hit >= 0) {
        const int32_t *m = s->memo + s->cache.val[hit];
        for (int32_t k = 1; k <= m[0]; k++) {
            posemb_status st = emit(t, m[k], o);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    if (n > (size_t)INT32_MAX) return posemb_fail(o->err, POSEMB_ERANGE, "a pre-token longer than 2 GiB");
    if (n > s->cap) {
        size_t cap = n;
        int32_t *sym = realloc(s->sym, cap * sizeof *sym);
        if (sym) s->sym = sym;
        int32_t *prev = realloc(s->prev, cap * sizeof *prev);
        if (prev) s->prev = prev;
        int32_t *next = realloc(s->next, cap * sizeof *next);
        if (next) s->next = next;
        /* a round holds at most every queued entry: n - 1 at first, 2 per merge */
        size_t *round = realloc(s->round, 3 * cap * sizeof *round);
        if (round) s->round = round;
        if (!sym || !prev || !next || !round) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        s->cap = cap;
        s->rcap = 3 * cap;
    }
    for (size_t i = 0; i < n; i++) {
        s->sym[i] = w[i];
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    s->heap.n = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (queue_pair(b, s, (int32_t)i)) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    while (s->heap.n) {
        uint32_t rank = (uint32_t)(s->heap.v[0] >> 32);
        size_t nr = 0;
        while (s->heap.n && (uint32_t)(s->heap.v[0] >> 32) == rank && nr < s->rcap)
            s->round[nr++] = (uint32_t)tok_heap_pop(&s->heap);
        for (size_t k = 0; k < nr; k++) {
            int32_t i = (int32_t)s->round[k], j = s->next[i], res = -1;
            /* dead (absorbed) nodes have sym -1; a changed pair has another rank */
            if (s->sym[i] < 0 || j < 0 || merge_rank(b, s->sym[i], s->sym[j], &res) != (int32_t)rank) continue;
            s->sym[i] = res;
            s->sym[j] = -1;
            s->next[i] = s->next[j];
            if (s->next[j] >= 0) s->prev[s->next[j]] = i;
            if (queue_pair(b, s, s->prev[i]) || queue_pair(b, s, i))
                return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        }
    }
    if (n <= CACHE_MAX_BYTES) remember(s, w, n);
    for (int32_t i = 0; i >= 0; i = s->next[i]) {
        posemb_status st = emit(t, s->sym[i], o);
        if (st) return st;
    }
    return POSEMB_OK;
}

/* re.findall(pat, text) on valid UTF-8, each match a pre-token. Every
 * character matches some alternative, so nothing is skipped; the fallback
 * branches only keep decode(encode(x)) == x should that ever fail. */
static posemb_status pretokenize(const posemb_tokenizer *t, const char *s, size_t n, bpe_scratch *sc, tok_out *o)
{
    const tok_bpe *b = t->bpe;
    size_t off = 0;
    while (off < n) {
        int rc = pcre2_match(b->re, (PCRE2_SPTR)s, n, off, PCRE2_NO_UTF_CHECK, sc->md, NULL);
        if (rc < 0) return bpe_word(t, (const uint8_t *)s + off, n - off, sc, o);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(sc->md);
        size_t a = ov[0], e = ov[1];
        posemb_status st = a > off ? bpe_word(t, (const uint8_t *)s + off, a - off, sc, o) : POSEMB_OK;
        if (st) return st;
        if (e <= a) { /* an empty match cannot happen with this pattern; step one character */
            e = a;
            tok_utf8_next((const uint8_t *)s, n, &e);
        }
        st = bpe_word(t, (const uint8_t *)s + a, e - a, sc, o);
        if (st) return st;
        off = e;
    }
    return POSEMB_OK;
}

/* GPT2Tokenizer._tokenize on a chunk. Valid UTF-8 goes through the regex;
 * each run of invalid bytes (which Python could not even hold in a str) is
 * a pre-token of its own, so that no byte is lost. */
posemb_status tok_bpe_encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o)
{
    bpe_scratch sc = {0};
    sc.md = pcre2_match_data_create_from_pattern(t->bpe->re, NULL);
    if (!sc.md) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    const uint8_t *u = (const uint8_t *)s;
    posemb_status st = POSEMB_OK;
    size_t i = 0;
    while (i < n && !st) {
        size_t j = i, k;
        while (j < n) {
            if (u[j] < 0x80) {
                j++;
                continue;
            }
            k = j;
            if (tok_utf8_next(u, n, &k) < 0) break;
            j = k;
        }
        if (j > i) st = pretokenize(t, s + i, j - i, &sc, o);
        k = j;
        while (k < n && !st) {
            size_t m = k;
            if (tok_utf8_next(u, n, &m) >= 0) break;
            k = m;
        }
        if (k > j && !st) st = bpe_word(t, u + j, k - j, &sc, o);
        i = k;
    }
    pcre2_match_data_free(sc.md);
    free(sc.sym);
    free(sc.prev);
    free(sc.next);
    tok_heap_free(&sc.heap);
    free(sc.round);
    tok_map_free(&sc.cache);
    free(sc.memo);
    return st;
}

/* ------------------------------------------------------------ decoding */

posemb_status tok_bpe_token_bytes(const posemb_tokenizer *t, const char *tok, size_t len, char **buf, size_t *n,
                                  size_t *cap)
{
    const tok_bpe *b = t->bpe;
    if (*n + len + 1 > *cap) { /* a token never decodes to more bytes than it has */
        size_t c = *cap ? *cap : 256;
        while (c < *n + len + 1) c *= 2;
        char *p = realloc(*buf, c);
        if (!p) return POSEMB_ENOMEM;
        *buf = p;
        *cap = c;
    }
    size_t i = 0;
    while (i < len) {
        size_t a = i;
        int32_t cp = tok_utf8_next((const uint8_t *)tok, len, &i);
        if (cp >= 0 && cp < 324 && b->cp_byte[cp] >= 0) {
            (*buf)[(*n)++] = (char)b->cp_byte[cp];
        } else { /* not of the byte alphabet (an added token): its own bytes */
            memcpy(*buf + *n, tok + a, i - a);
            *n += i - a;
        }
    }
    (*buf)[*n] = '\0';
    return POSEMB_OK;
}
