/* The Precompiled normalizer of tokenizer.json: SentencePiece's own
 * normalization (nmt_nfkc and friends) carried as precompiled_charsmap, a
 * base64 blob of [u32 trie size][the trie: u32 units of a Darts double
 * array][replacements, each ended by NUL]. As the library (spm_precompiled
 * and normalizers/precompiled.rs) applies it: per extended grapheme cluster
 * of fewer than 6 bytes, the replacement of its shortest prefix that has
 * one replaces the whole cluster; otherwise each character is replaced by
 * its own, or kept. Every index into the blob is bounds-checked: a hostile
 * charsmap gives no replacement, never a read outside it. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_hf.h"

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 with padding into a malloc'ed buffer; -1 when malformed. */
static int b64_decode(const char *s, uint8_t **out, size_t *len)
{
    size_t n = strlen(s), pad = 0;
    if (n % 4) return -1;
    while (pad < 2 && n > pad && s[n - 1 - pad] == '=') pad++;
    uint8_t *p = malloc(n / 4 * 3 + 1);
    if (!p) return -2;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        for (int j = 0; j < 4; j++) {
            int d = i + (size_t)j >= n - pad ? 0 : b64_value((unsigned char)s[i + (size_t)j]);
            if (d < 0) {
                free(p);
                return -1;
            }
            v = v << 6 | (uint32_t)d;
        }
        p[k++] = (uint8_t)(v >> 16);
        p[k++] = (uint8_t)(v >> 8);
        p[k++] = (uint8_t)v;
    }
    *out = p;
    *len = k - pad;
    return 0;
}

static int transform(const hf_norm *nm, const char *key, size_t n, const char **rep, size_t *rep_len);

posemb_status hf_precompiled_load(hf_norm *nm, const char *b64, const char *path, const char *what, posemb_error *err)
{
    uint8_t *raw = NULL;
    size_t n = 0;
    int r = b64_decode(b64, &raw, &n);
    if (r == -2) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (r) return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.precompiled_charsmap is not base64", path, what);
    uint32_t trie_bytes =
        n >= 4 ? (uint32_t)raw[0] | (uint32_t)raw[1] << 8 | (uint32_t)raw[2] << 16 | (uint32_t)raw[3] << 24 : 0;
    size_t units = trie_bytes / 4;
    if (n < 4 || !units || units > (n - 4) / 4) {
        free(raw);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.precompiled_charsmap: its trie size does not fit the blob",
                           path, what);
    }
    size_t blob_at = 4 + units * 4; /* a size not a multiple of 4 leaves its tail to the strings, as the library */
    nm->da = malloc(units * sizeof *nm->da);
    nm->blob = malloc(n - blob_at + 1);
    if (!nm->da || !nm->blob) {
        free(raw);
        return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < units; i++) {
        const uint8_t *u = raw + 4 + i * 4;
        nm->da[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    nm->da_n = units;
    nm->blob_n = n - blob_at;
    memcpy(nm->blob, raw + blob_at, nm->blob_n);
    nm->blob[nm->blob_n] = '\0';
    free(raw);
    if (!tok_utf8_valid(nm->blob, nm->blob_n))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.precompiled_charsmap: its strings are not valid UTF-8", path,
                           what);
    for (int c = 0; c < 128; c++) { /* most text is ASCII: its replacements looked up once */
        char key = (char)c;
        const char *rep;
        size_t len;
        nm->ascii_at[c] = transform(nm, &key, 1, &rep, &len) ? (int32_t)(rep - nm->blob) : -1;
    }
    return POSEMB_OK;
}

/* A Darts unit's fields (SentencePiece's darts.h). */
static int has_leaf(uint64_t u) { return (u >> 8) & 1; }
static uint64_t label(uint64_t u) { return u & ((1u << 31) | 0xFF); }
static uint64_t offset(uint64_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

/* The replacement of the shortest prefix of key[0..n) that has one (the
 * first of the common-prefix search): *rep, *rep_len; 0 when none. */
static int transform(const hf_norm *nm, const char *key, size_t n, const char **rep, size_t *rep_len)
{
    const uint32_t *da = nm->da;
    uint64_t pos = offset(da[0]);
    for (size_t i = 0; i < n && key[i]; i++) {
        uint64_t c = (uint8_t)key[i];
        pos ^= c;
        if (pos >= nm->da_n || label(da[pos]) != c) return 0;
        int leaf = has_leaf(da[pos]);
        pos ^= offset(da[pos]);
        if (!leaf) continue;
        if (pos >= nm->da_n) return 0;
        size_t at = da[pos] & 0x7FFFFFFFu;
        if (at > nm->blob_n) return 0;
        size_t len = strlen(nm->blob + at); /* the blob ends with NUL */
        if (!tok_utf8_valid(nm->blob + at, len)) return 0;
        *rep = nm->blob + at;
        *rep_len = len;
        return 1;
    }
    return 0;
}

/* One grapheme s[a..b): replaced whole, or character by character. */
static int grapheme(const hf_norm *nm, const char *s, size_t a, size_t b, tok_str *out)
{
    const char *rep;
    size_t len;
    if (b - a < 6 && transform(nm, s + a, b - a, &rep, &len)) return tok_str_add(out, rep, len);
    for (size_t i = a; i < b;) {
        size_t c = i;
        tok_utf8_next((const uint8_t *)s, b, &i);
        int r = transform(nm, s + c, i - c, &rep, &len) ? tok_str_add(out, rep, len) : tok_str_add(out, s + c, i - c);
        if (r) return r;
    }
    return 0;
}

/* s[i] is an ASCII character followed by another or by the end: a grapheme
 * of its own (UAX #29 breaks between two ASCII characters but in CR LF). */
static int ascii_alone(const char *s, size_t n, size_t i)
{
    uint8_t c = (uint8_t)s[i];
    return c < 0x80 && c != '\r' && (i + 1 == n || (uint8_t)s[i + 1] < 0x80);
}

static int ascii_one(const hf_norm *nm, uint8_t c, tok_str *out)
{
    int32_t at = nm->ascii_at[c];
    return at >= 0 ? tok_str_add(out, nm->blob + at, strlen(nm->blob + at)) : tok_str_add(out, (const char *)&c, 1);
}

int hf_precompiled_apply(const hf_norm *nm, const char *s, size_t n, tok_str *out)
{
    size_t start = 0, i = 0; /* the current grapheme is s[start..i) */
    int32_t prev = -1, state = 0;
    if (tok_str_add(out, "", 0)) return -1; /* terminated even when empty */
    while (i < n) {
        size_t at = i;
        if (at == start && ascii_alone(s, n, at)) {
            if (ascii_one(nm, (uint8_t)s[at], out)) return -1;
            prev = (uint8_t)s[at];
            start = ++i;
            continue;
        }
        int32_t cp = tok_utf8_next((const uint8_t *)s, n, &i);
        if (at > start && prev >= 0 && cp >= 0 && utf8proc_grapheme_break_stateful(prev, cp, &state)) {
            if (grapheme(nm, s, start, at, out)) return -1;
            start = at;
            state = 0;
            if (ascii_alone(s, n, at)) { /* back to the fast path */
                if (ascii_one(nm, (uint8_t)s[at], out)) return -1;
                start = i;
            }
        }
        prev = cp;
    }
    return start < n && grapheme(nm, s, start, n, out) ? -1 : 0;
}
