/* WordPiece as HF's slow BertTokenizer computes it (transformers 4.26.1,
 * tokenization_bert.py): BasicTokenizer (clean, CJK spacing, whitespace
 * split, lower-case, accent stripping, punctuation split) then
 * WordpieceTokenizer (greedy longest-match-first with "##"). The character
 * classes are HF's _is_whitespace, _is_control, _is_punctuation and
 * _is_chinese_char, with the Unicode data from utf8proc. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_impl.h"

/* ================================================================ vocab.txt */

/* HF's load_vocab: reader.readlines() in text mode (universal newlines, so
 * \n, \r\n and \r end a line), each line stripped of its newline is one
 * token, id = line index. Empty lines are tokens too. */
posemb_status tok_wp_load_vocab_txt(posemb_tokenizer *t, const char *path, posemb_error *err)
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
        i = tok_line_next(buf, len, b);
        line++;
        if (!tok_utf8_valid(buf + a, b - a)) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: not valid UTF-8", path, line);
        } else if (line > TOK_MAX_ID) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: more than %d lines", path, TOK_MAX_ID);
        } else {
            size_t e;
            int r = tok_map_put(&t->vocab, buf + a, b - a, (int32_t)(line - 1), &e);
            if (r < 0) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
            if (r == 1)
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: duplicate token '%s' (also on line %ld)", path,
                                 line, tok_quote(buf + a, b - a, q, sizeof q), (long)t->vocab.val[e] + 1);
        }
    }
    free(buf);
    return st;
}

/* Substrings longer than every vocabulary token need no lookup. */
void tok_wp_limits(posemb_tokenizer *t)
{
    tok_wordpiece *wp = &t->wp;
    wp->max_bytes = wp->max_cont_bytes = 0;
    for (size_t e = 0; e < t->vocab.n; e++) {
        size_t len;
        const char *k = tok_map_key(&t->vocab, e, &len);
        if (len > wp->max_bytes) wp->max_bytes = len;
        int cont = len >= wp->prefix_len && !memcmp(k, wp->prefix, wp->prefix_len);
        if (cont && len - wp->prefix_len > wp->max_cont_bytes) wp->max_cont_bytes = len - wp->prefix_len;
    }
}

/* =================================================== character classes */

/* _is_control: category C* (Cc, Cf, Cs, Co, Cn), but \t \n \r are whitespace. */
static int is_control(int32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r') return 0;
    if (cp < 0x80) return cp < 0x20 || cp == 0x7f;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CS ||
           c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_CN;
}

/* _is_whitespace: space, \t, \n, \r or category Zs. */
static int is_bert_space(int32_t cp)
{
    if (cp < 0x80) return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r';
    return utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

/* _is_punctuation: every ASCII non-letter/number symbol, or category P*. */
static int is_punct(int32_t cp)
{
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
    utf8proc_category_t c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

/* _is_chinese_char: the CJK Unified Ideographs blocks HF lists (not
 * Japanese kana or Hangul, which are written with spaces). */
static int is_cjk(int32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* ====================================================== lower-casing pass */

static const tok_special *special_at(const posemb_tokenizer *t, const char *s, size_t n, size_t i)
{
    uint8_t c = (uint8_t)s[i];
    if (!(t->special_first[c >> 3] & (1u << (c & 7)))) return NULL;
    for (int k = 0; k < t->n_specials; k++) { /* first in sorted order, as the regex alternation */
        const tok_special *sp = &t->specials[k];
        if (sp->len <= n - i && !memcmp(s + i, sp->str, sp->len)) return sp;
    }
    return NULL;
}

/* PreTrainedTokenizer.tokenize lower-cases with
 *   re.sub("(special|...)|(.+?)", lambda m: m[1] or m[2].lower(), text)
 * i.e. one character at a time (so Final_Sigma never applies: Σ -> σ),
 * special tokens left alone. Python's str.lower is the full mapping: U+0130
 * becomes "i" + U+0307, every other character its simple lower case. */
posemb_status tok_wp_prepare(const posemb_tokenizer *t, const char *s, size_t n, char **out, size_t *out_len,
                             posemb_error *err)
{
    *out = NULL;
    *out_len = n;
    if (!t->wp.lowercase && tok_utf8_valid(s, n)) return POSEMB_OK;
    if (n > (SIZE_MAX - 8) / 3) return posemb_fail(err, POSEMB_ERANGE, "text too long");
    char *o = malloc(3 * n + 8); /* an invalid byte becomes 3 (U+FFFD); a case change at most 1.5x */
    if (!o) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, w = 0;
    while (i < n) {
        const tok_special *sp = t->wp.lowercase ? special_at(t, s, n, i) : NULL;
        if (sp) {
            memcpy(o + w, sp->str, sp->len);
            w += sp->len;
            i += sp->len;
            continue;
        }
        if (u[i] < 0x80) {
            uint8_t c = u[i++];
            o[w++] = (char)(t->wp.lowercase && c >= 'A' && c <= 'Z' ? c + 32 : c);
            continue;
        }
        int32_t cp = tok_utf8_next(u, n, &i);
        if (cp < 0) cp = 0xFFFD;
        if (t->wp.lowercase && cp == 0x130) {
            o[w++] = 'i';
            cp = 0x307;
        } else if (t->wp.lowercase) {
            cp = utf8proc_tolower(cp);
        }
        w += (size_t)tok_utf8_put(cp, o + w);
    }
    o[w] = '\0';
    *out = o;
    *out_len = w;
    return POSEMB_OK;
}

/* ============================================================ encoding */

typedef struct wp_scratch {
    int32_t *word; /* the current whitespace-delimited word */
    size_t wn, wcap;
    int32_t *norm; /* its NFD */
    size_t ncap;
    char *u8; /* a piece in UTF-8 */
    size_t u8cap;
    char *cand; /* prefix + a candidate substring */
    size_t cand_cap;
    size_t *bnd; /* byte offset of each character of the piece */
    size_t bcap;
    int32_t *sub; /* the sub-token ids of the piece */
    size_t subcap;
} wp_scratch;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static void scratch_free(wp_scratch *w)
{
    free(w->word);
    free(w->norm);
    free(w->u8);
    free(w->cand);
    free(w->bnd);
    free(w->sub);
}

static posemb_status oom(tok_out *o) { return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory"); }

static posemb_status push_unk(const posemb_tokenizer *t, tok_out *o)
{
    int32_t unk = t->special_ids[POSEMB_SPECIAL_UNK];
    return tok_out_push(o, unk, t->id_str[unk], t->id_len[unk]);
}

/* WordpieceTokenizer.tokenize on one piece: the longest vocabulary prefix,
 * then the longest "##" continuation, and so on; the whole piece is [UNK]
 * when it is over max_chars characters or some position has no match. */
static posemb_status wordpiece(const posemb_tokenizer *t, const int32_t *p, size_t k, wp_scratch *w, tok_out *o)
{
    const tok_wordpiece *wp = &t->wp;
    if (k > (size_t)wp->max_chars) return push_unk(t, o);
    if (grow((void **)&w->u8, &w->u8cap, 4 * k + 1, 1) || grow((void **)&w->bnd, &w->bcap, k + 1, sizeof(size_t)) ||
        grow((void **)&w->sub, &w->subcap, k, sizeof(int32_t)) ||
        grow((void **)&w->cand, &w->cand_cap, wp->prefix_len + 4 * k + 1, 1))
        return oom(o);
    size_t nb = 0;
    for (size_t i = 0; i < k; i++) {
        w->bnd[i] = nb;
        nb += (size_t)tok_utf8_put(p[i], w->u8 + nb);
    }
    w->bnd[k] = nb;
    memcpy(w->cand, wp->prefix, wp->prefix_len);
    size_t start = 0, ns = 0;
    while (start < k) {
        size_t lim = start ? wp->max_cont_bytes : wp->max_bytes, end = k;
        while (end > start && w->bnd[end] - w->bnd[start] > lim) end--;
        int32_t id = -1;
        const char *key = w->u8 + w->bnd[start];
        size_t extra = 0;
        if (start) { /* look up prefix + substring */
            memcpy(w->cand + wp->prefix_len, key, w->bnd[end] - w->bnd[start]);
            key = w->cand;
            extra = wp->prefix_len;
        }
        for (; end > start; end--)
            if ((id = tok_map_get(&t->vocab, key, extra + w->bnd[end] - w->bnd[start])) >= 0) break;
        if (id < 0) return push_unk(t, o);
        w->sub[ns++] = id;
        start = end;
    }
    for (size_t i = 0; i < ns; i++) {
        posemb_status st = tok_out_push(o, w->sub[i], t->id_str[w->sub[i]], t->id_len[w->sub[i]]);
        if (st) return st;
    }
    return POSEMB_OK;
}

/* _run_strip_accents: NFD (utf8proc, with canonical reordering), then every
 * Mn character dropped. Returns the new length in w->norm. */
static long strip_accents(const int32_t *v, size_t n, wp_scratch *w)
{
    if (grow((void **)&w->u8, &w->u8cap, 4 * n + 1, 1)) return -1;
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) nb += (size_t)tok_utf8_put(v[i], w->u8 + nb);
    utf8proc_ssize_t got;
    for (;;) {
        got = utf8proc_decompose((const utf8proc_uint8_t *)w->u8, (utf8proc_ssize_t)nb, w->norm,
                                 (utf8proc_ssize_t)w->ncap, UTF8PROC_DECOMPOSE);
        if (got < 0) return -1;
        if ((size_t)got <= w->ncap) break;
        if (grow((void **)&w->norm, &w->ncap, (size_t)got, sizeof(int32_t))) return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < (size_t)got; i++)
        if (utf8proc_category(w->norm[i]) != UTF8PROC_CATEGORY_MN) w->norm[m++] = w->norm[i];
    return (long)m;
}

/* A piece as it is, for posemb_tokenizer_words (o->word). */
static posemb_status piece_word(const int32_t *p, size_t k, wp_scratch *w, tok_out *o)
{
    if (grow((void **)&w->u8, &w->u8cap, 4 * k + 1, 1)) return oom(o);
    size_t nb = 0;
    for (size_t i = 0; i < k; i++) nb += (size_t)tok_utf8_put(p[i], w->u8 + nb);
    return tok_out_push(o, -1, w->u8, nb);
}

static posemb_status piece(const posemb_tokenizer *t, const int32_t *p, size_t k, wp_scratch *w, tok_out *o)
{
    return o->word ? piece_word(p, k, w, o) : wordpiece(t, p, k, w, o);
}

/* One word of BasicTokenizer: accents, then _run_split_on_punc (each
 * punctuation character alone), then WordPiece on every piece. */
static posemb_status flush_word(const posemb_tokenizer *t, wp_scratch *w, tok_out *o)
{
    if (!w->wn) return POSEMB_OK;
    const int32_t *v = w->word;
    size_t n = w->wn;
    w->wn = 0;
    if (t->wp.strip_accents) {
        int ascii = 1;
        for (size_t i = 0; i < n && ascii; i++) ascii = v[i] < 0x80;
        if (!ascii) {
            long m = strip_accents(v, n, w);
            if (m < 0) return oom(o);
            v = w->norm;
            n = (size_t)m;
        }
    }
    size_t a = 0;
    for (size_t i = 0; i <= n; i++) {
        int end = i == n, punct = !end && is_punct(v[i]), space = !end && !punct && tok_py_isspace(v[i]);
        if (!end && !punct && !space) continue;
        posemb_status st = i > a ? piece(t, v + a, i - a, w, o) : POSEMB_OK;
        if (!st && punct) st = piece(t, v + i, 1, w, o);
        if (st) return st;
        a = i + 1;
    }
    return POSEMB_OK;
}

static posemb_status add_char(wp_scratch *w, int32_t cp, tok_out *o)
{
    if (grow((void **)&w->word, &w->wcap, w->wn + 1, sizeof(int32_t))) return oom(o);
    w->word[w->wn++] = cp;
    return POSEMB_OK;
}

/* BasicTokenizer.tokenize streamed a character at a time: _clean_text
 * (delete NUL, U+FFFD and controls; whitespace -> space),
 * _tokenize_chinese_chars (an ideograph is a word of its own), then
 * whitespace_tokenize (Python's str.split, so U+2028 splits too). The
 * per-character lower-casing already happened in tok_wp_prepare. */
posemb_status tok_wp_encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o)
{
    wp_scratch w = {0};
    const uint8_t *u = (const uint8_t *)s;
    posemb_status st = POSEMB_OK;
    size_t i = 0;
    while (i < n && !st) {
        int32_t cp = u[i] < 0x80 ? u[i++] : tok_utf8_next(u, n, &i);
        if (cp < 0) cp = 0xFFFD;
        if (t->wp.clean_text) {
            if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
            if (is_bert_space(cp)) cp = ' ';
        }
        if (t->wp.chinese && cp >= 0x3400 && is_cjk(cp)) {
            st = flush_word(t, &w, o);
            if (!st) st = add_char(&w, cp, o);
            if (!st) st = flush_word(t, &w, o);
        } else if (tok_py_isspace(cp)) {
            st = flush_word(t, &w, o);
        } else {
            st = add_char(&w, cp, o);
        }
    }
    if (!st) st = flush_word(t, &w, o);
    scratch_free(&w);
    return st;
}
