/* Decoding with tokenizer.json's decoders (the decoders folder): the ids become
 * their token strings, each decoder maps that list to a new one, and the
 * result is joined (with spaces when there is no decoder at all, as
 * Tokenizer::decode). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"

/* A list of strings in one buffer. */
typedef struct tlist {
    tok_str buf;
    size_t *off, *len;
    size_t n, cap;
} tlist;

static int tl_add(tlist *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *off = realloc(l->off, cap * sizeof *off);
        if (off) l->off = off;
        size_t *len = realloc(l->len, cap * sizeof *len);
        if (len) l->len = len;
        if (!off || !len) return -1;
        l->cap = cap;
    }
    l->off[l->n] = l->buf.n;
    l->len[l->n] = n;
    if (tok_str_add(&l->buf, s, n)) return -1;
    l->n++;
    return 0;
}

/* Extends the last string by s[0..n). */
static int tl_extend(tlist *l, const char *s, size_t n)
{
    if (tok_str_add(&l->buf, s, n)) return -1;
    l->len[l->n - 1] += n;
    return 0;
}

static void tl_free(tlist *l)
{
    tok_str_free(&l->buf);
    free(l->off);
    free(l->len);
    memset(l, 0, sizeof *l);
}

#define TOK(l, i) ((l)->buf.p + (l)->off[i])

/* s with every from replaced by to, appended to the last string of out. */
static int replace_lit(const char *s, size_t n, const char *from, size_t fl, const char *to, size_t tl, tlist *out)
{
    size_t a = 0;
    for (size_t i = 0; fl && i + fl <= n;) {
        if (!memcmp(s + i, from, fl)) {
            if (tl_extend(out, s + a, i - a) || tl_extend(out, to, tl)) return -1;
            i += fl;
            a = i;
        } else {
            i++;
        }
    }
    return tl_extend(out, s + a, n - a);
}

static int byte_level(const tok_hf *h, const tlist *in, tlist *out)
{
    tok_str raw = {0};
    int bad = 0;
    for (size_t k = 0; k < in->n && !bad; k++) {
        const char *s = TOK(in, k);
        size_t n = in->len[k], i = 0, start = raw.n;
        int all = 1;
        while (i < n && !bad) {
            int32_t cp = tok_utf8_next((const uint8_t *)s, n, &i);
            if (cp < 0 || cp >= 324 || h->cp_byte[cp] < 0) {
                all = 0;
                break;
            }
            char b = (char)h->cp_byte[cp];
            bad = tok_str_add(&raw, &b, 1);
        }
        if (!all) { /* a character outside the alphabet: the token as is */
            raw.n = start;
            bad = bad || tok_str_add(&raw, s, n);
        }
    }
    tok_str valid = {0};
    bad = bad || tok_str_add(&raw, "", 0) || hf_utf8_lossy(raw.p, raw.n, &valid) || tok_str_add(&valid, "", 0) ||
          tl_add(out, valid.p, valid.n);
    tok_str_free(&raw);
    tok_str_free(&valid);
    return bad ? -1 : 0;
}

static int metaspace(const hf_dec *d, const tlist *in, tlist *out)
{
    for (size_t k = 0; k < in->n; k++) {
        if (tl_add(out, "", 0)) return -1;
        const char *to = k == 0 && d->prepend ? "" : " ";
        if (replace_lit(TOK(in, k), in->len[k], d->repl, d->repl_len, to, strlen(to), out)) return -1;
    }
    return 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* <0xNN> tokens: a run of them is one string when its bytes are valid
 * UTF-8, else one U+FFFD per byte. */
static int byte_fallback(const tlist *in, tlist *out)
{
    tok_str run = {0};
    int bad = 0;
    for (size_t k = 0; k <= in->n && !bad; k++) {
        const char *s = k < in->n ? TOK(in, k) : NULL;
        int byte = -1;
        if (s && in->len[k] == 6 && !memcmp(s, "<0x", 3) && s[5] == '>') {
            /* Rust's u8::from_str_radix(.., 16): two hex digits, or '+' and one */
            int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
            if (lo >= 0 && (hi >= 0 || s[3] == '+')) byte = (hi > 0 ? hi : 0) * 16 + lo;
        }
        if (byte >= 0) {
            char b = (char)byte;
            bad = tok_str_add(&run, &b, 1);
            continue;
        }
        if (run.n) {
            if (tok_utf8_valid(run.p, run.n)) {
                bad = tl_add(out, run.p, run.n);
            } else {
                for (size_t i = 0; i < run.n && !bad; i++) bad = tl_add(out, "\xef\xbf\xbd", 3);
            }
            run.n = 0;
        }
        if (s && !bad) bad = tl_add(out, s, in->len[k]);
    }
    tok_str_free(&run);
    return bad;
}

static int fuse(const tlist *in, tlist *out)
{
    if (tl_add(out, "", 0)) return -1;
    for (size_t k = 0; k < in->n; k++)
        if (tl_extend(out, TOK(in, k), in->len[k])) return -1;
    return 0;
}

static int strip(const hf_dec *d, const tlist *in, tlist *out)
{
    char c[4];
    size_t cl = (size_t)tok_utf8_put(d->content, c);
    for (size_t k = 0; k < in->n; k++) {
        const char *s = TOK(in, k);
        size_t a = 0, b = in->len[k];
        for (size_t i = 0; i < d->start && b - a >= cl && !memcmp(s + a, c, cl); i++) a += cl;
        for (size_t i = 0; i < d->stop && b - a >= cl && !memcmp(s + b - cl, c, cl); i++) b -= cl;
        if (tl_add(out, s + a, b - a)) return -1;
    }
    return 0;
}

static int replace(const hf_dec *d, const tlist *in, tlist *out)
{
    for (size_t k = 0; k < in->n; k++) {
        tok_str r = {0};
        int bad = hf_pattern_replace(&d->pat, TOK(in, k), in->len[k], d->str, d->str_len, &r) || tl_add(out, r.p, r.n);
        tok_str_free(&r);
        if (bad) return -1;
    }
    return 0;
}

/* WordPiece: "##" pieces glued to the previous token, others after a
 * space; with cleanup, the tokenizers library's cleanup of spaces. */
static int wordpiece(const hf_dec *d, const tlist *in, tlist *out)
{
    static const char *const FROM[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " do not", " 's", " 've", " 're"};
    static const char *const TO[] = {".", "?", "!", ",", "'", "n't", "'m", " don't", "'s", "'ve", "'re"};
    for (size_t k = 0; k < in->n; k++) {
        const char *s = TOK(in, k);
        size_t n = in->len[k];
        tok_str cur = {0};
        int bad;
        if (k && n >= d->str_len && !memcmp(s, d->str, d->str_len))
            bad = tok_str_add(&cur, s + d->str_len, n - d->str_len);
        else bad = (k && tok_str_add(&cur, " ", 1)) || tok_str_add(&cur, s, n);
        for (size_t r = 0; d->cleanup && !bad && r < sizeof FROM / sizeof FROM[0]; r++) {
            tlist tmp = {0};
            bad =
                tl_add(&tmp, "", 0) || replace_lit(cur.p, cur.n, FROM[r], strlen(FROM[r]), TO[r], strlen(TO[r]), &tmp);
            cur.n = 0;
            bad = bad || tok_str_add(&cur, tmp.buf.p, tmp.len[0]);
            tl_free(&tmp);
        }
        bad = bad || tl_add(out, cur.p, cur.n);
        tok_str_free(&cur);
        if (bad) return -1;
    }
    return 0;
}

/* BPEDecoder: the suffix becomes a space, except in the last token. */
static int bpe_suffix(const hf_dec *d, const tlist *in, tlist *out)
{
    for (size_t k = 0; k < in->n; k++) {
        const char *to = k + 1 == in->n ? "" : " ";
        if (tl_add(out, "", 0) || replace_lit(TOK(in, k), in->len[k], d->str, d->str_len, to, strlen(to), out))
            return -1;
    }
    return 0;
}

static int apply(const tok_hf *h, const hf_dec *d, const tlist *in, tlist *out)
{
    switch (d->kind) {
    case HF_DEC_BYTELEVEL:
        return byte_level(h, in, out);
    case HF_DEC_METASPACE:
        return metaspace(d, in, out);
    case HF_DEC_BYTEFALLBACK:
        return byte_fallback(in, out);
    case HF_DEC_FUSE:
        return fuse(in, out);
    case HF_DEC_STRIP:
        return strip(d, in, out);
    case HF_DEC_REPLACE:
        return replace(d, in, out);
    case HF_DEC_WORDPIECE:
        return wordpiece(d, in, out);
    case HF_DEC_BPE:
        return bpe_suffix(d, in, out);
    }
    return -1;
}

posemb_status tok_hf_decode(const posemb_tokenizer *t, const int32_t *ids, int n, int skip, char **text, size_t *len,
                            posemb_error *err)
{
    const tok_hf *h = t->hf;
    tlist a = {0}, b = {0};
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_ids || !t->id_str[id]) {
            tl_free(&a);
            return posemb_fail(err, POSEMB_ERANGE, "id %d (position %d) is not in the vocabulary", id, i);
        }
        if (skip && h->is_special[id]) continue;
        if (tl_add(&a, t->id_str[id], t->id_len[id])) goto oom;
    }
    for (int k = 0; k < h->n_decs; k++) {
        b.n = 0;
        b.buf.n = 0;
        if (apply(h, &h->decs[k], &a, &b)) goto oom;
        tlist swap = a;
        a = b;
        b = swap;
    }
    tok_str joined = {0};
    if (tok_str_add(&joined, "", 0)) goto oom;
    for (size_t k = 0; k < a.n; k++)
        if ((!h->n_decs && k && tok_str_add(&joined, " ", 1)) || tok_str_add(&joined, TOK(&a, k), a.len[k])) {
            tok_str_free(&joined);
            goto oom;
        }
    tl_free(&a);
    tl_free(&b);
    *text = joined.p;
    *len = joined.n;
    return POSEMB_OK;
oom:
    tl_free(&a);
    tl_free(&b);
    return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
}
