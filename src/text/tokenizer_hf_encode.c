/* Encoding one text with the tokenizer.json pipeline, as the library's
 * AddedVocabulary::extract_and_normalize and Tokenizer::encode do: the
 * added tokens with normalized = false are cut out of the raw text first;
 * each remaining piece is normalized, then the normalized added tokens are
 * cut out of it; what is left is pre-tokenized and given to the model. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_hf.h"

int hf_utf8_lossy(const char *s, size_t n, tok_str *out)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, a = 0;
    while (i < n) {
        uint8_t c = u[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        /* the valid second-byte ranges of each lead byte (Unicode table 3-7) */
        size_t need = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
        uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        size_t j = i + 1, got = 0;
        while (got < need && j < n && u[j] >= (got ? 0x80 : lo) && u[j] <= (got ? 0xBF : hi)) {
            j++;
            got++;
        }
        if (need && got == need) {
            i = j;
            continue;
        }
        /* a maximal invalid subpart: one U+FFFD */
        if (tok_str_add(out, s + a, i - a) || tok_str_add(out, "\xef\xbf\xbd", 3)) return -1;
        i = j;
        a = i;
    }
    return tok_str_add(out, s + a, n - a);
}

/* \w of Rust's regex: alphabetic, marks, decimal digits, connector punctuation. */
static int is_word(int32_t cp)
{
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    utf8proc_category_t g = utf8proc_category(cp);
    return (g >= UTF8PROC_CATEGORY_LU && g <= UTF8PROC_CATEGORY_ME) || g == UTF8PROC_CATEGORY_ND ||
           g == UTF8PROC_CATEGORY_NL || g == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D;
}

/* The code point that ends s[0..i), or -1. */
static int32_t cp_before(const char *s, size_t i)
{
    if (!i) return -1;
    size_t a = i - 1;
    while (a > 0 && ((uint8_t)s[a] & 0xC0) == 0x80 && i - a < 4) a--;
    size_t j = a;
    int32_t cp = tok_utf8_next((const uint8_t *)s, i, &j);
    return j == i ? cp : -1;
}

/* The next added token of trie in s[from..n) after the single_word,
 * lstrip and rstrip rules (added_vocabulary.rs find_matches); its span
 * with the stripped spaces is [*a, *b). 0 when there is none. */
static int next_added(const tok_hf *h, const hf_trie *tr, const char *s, size_t n, size_t from, size_t start_off,
                      size_t *a, size_t *b, const hf_added **found)
{
    if (!tr->n) return 0;
    for (size_t i = from; i < n; i++) {
        if (tr->only >= 0) { /* Llama 3's 256 all begin with '<' */
            const char *p = memchr(s + i, tr->only, n - i);
            if (!p) return 0;
            i = (size_t)(p - s);
        }
        uint8_t c = (uint8_t)s[i];
        int lo = tr->start[c], hi = tr->start[c + 1];
        if (lo == hi) continue;
        /* no token starts with these two bytes, and none is this byte alone */
        unsigned key = (unsigned)c << 8 | (i + 1 < n ? (uint8_t)s[i + 1] : 0);
        if (!(tr->single[c >> 3] & (1u << (c & 7))) && (i + 1 >= n || !(tr->pair[key >> 3] & (1u << (key & 7)))))
            continue;
        const hf_added *best = NULL;
        for (int k = lo; k < hi; k++) { /* leftmost, then longest */
            const hf_added *ad = &h->added[tr->idx[k]];
            /* many share a prefix ("<|" in Llama 3's 256): the second byte first */
            if (ad->len <= n - i && (!best || ad->len > best->len) && (ad->len < 2 || ad->str[1] == s[i + 1]) &&
                !memcmp(s + i, ad->str, ad->len))
                best = ad;
        }
        if (!best) continue;
        size_t start = i, stop = i + best->len;
        if (best->single_word) {
            size_t j = stop;
            int32_t before = cp_before(s, start), after = stop < n ? tok_utf8_next((const uint8_t *)s, n, &j) : -1;
            if ((before >= 0 && is_word(before)) || (after >= 0 && is_word(after))) {
                i = stop - 1; /* the search goes on after the match */
                continue;
            }
        }
        if (best->lstrip) {
            size_t x = start;
            int32_t cp;
            while (x > start_off && (cp = cp_before(s, x)) >= 0 && hf_is_ws(cp)) {
                char u[4];
                x -= (size_t)tok_utf8_put(cp, u);
            }
            start = x;
        }
        if (best->rstrip) {
            while (stop < n) {
                size_t j = stop;
                if (!hf_is_ws(tok_utf8_next((const uint8_t *)s, n, &j))) break;
                stop = j;
            }
        }
        *a = start;
        *b = stop;
        *found = best;
        return 1;
    }
    return 0;
}

typedef struct ectx {
    const posemb_tokenizer *t;
    hf_bpe_scratch *bs;
    tok_out *o;
    tok_str norm;
} ectx;

/* Its token string is the text it matched, as the library's: the
 * normalized form for a normalized one (the stripped spaces of lstrip and
 * rstrip, which the library keeps in it too, are left out here). */
static posemb_status push_added(const hf_added *ad, tok_out *o) { return tok_out_push(o, ad->id, ad->str, ad->len); }

/* A piece of normalized text: the normalized added tokens out, the rest
 * pre-tokenized. */
static posemb_status normalized_piece(ectx *c, const char *s, size_t n, int at_start)
{
    const tok_hf *h = c->t->hf;
    size_t pos = 0, a, b;
    const hf_added *ad;
    posemb_status st = POSEMB_OK;
    while (!st && next_added(h, &h->normed, s, n, pos, pos, &a, &b, &ad)) {
        if (a > pos) st = hf_pretokenize(c->t, s + pos, a - pos, at_start && pos == 0, c->bs, c->o);
        if (!st) st = push_added(ad, c->o);
        pos = b;
    }
    if (!st && pos < n) st = hf_pretokenize(c->t, s + pos, n - pos, at_start && pos == 0, c->bs, c->o);
    return st;
}

static posemb_status raw_piece(ectx *c, const char *s, size_t n, int at_start)
{
    const tok_hf *h = c->t->hf;
    if (!n) return POSEMB_OK;
    if (!h->n_norms) return normalized_piece(c, s, n, at_start);
    if (hf_normalize(h->norms, h->n_norms, s, n, &c->norm))
        return posemb_fail(c->o->err, POSEMB_ENOMEM, "out of memory (normalizing)");
    /* the next stages do not normalize again, so c->norm is free once they return */
    return normalized_piece(c, c->norm.p, c->norm.n, at_start);
}

posemb_status tok_hf_encode_text(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o)
{
    const tok_hf *h = t->hf;
    tok_str valid = {0};
    if (!tok_utf8_valid(s, n)) { /* the library holds Rust strings: invalid bytes become U+FFFD */
        if (hf_utf8_lossy(s, n, &valid)) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        s = valid.p;
        n = valid.n;
    }
    ectx c = {t, hf_bpe_scratch_new(), o, {0}};
    posemb_status st = c.bs ? POSEMB_OK : posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    size_t pos = 0, a, b;
    const hf_added *ad;
    while (!st && next_added(h, &h->raw, s, n, pos, pos, &a, &b, &ad)) {
        st = raw_piece(&c, s + pos, a - pos, pos == 0);
        if (!st) st = push_added(ad, o);
        pos = b;
    }
    if (!st) st = raw_piece(&c, s + pos, n - pos, pos == 0);
    hf_bpe_scratch_free(c.bs);
    tok_str_free(&c.norm);
    tok_str_free(&valid);
    return st;
}
