/* tokenizer.json's pre-tokenizers (the pre_tokenizers folder): ByteLevel, Split,
 * Metaspace, Digits, WhitespaceSplit, run as a chain. Each stage cuts its
 * piece and hands every non-empty sub-piece to the next stage at once, the
 * last stage to the BPE model, so a long text is never held as a list of
 * pieces (only Split's merging behaviours collect one piece's segments). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_hf.h"

#define MAX_STAGES HF_MAX_STAGES

typedef struct seg {
    size_t a, b;
    int m; /* a match of the pattern (after invert) */
} seg;

typedef struct pctx {
    const posemb_tokenizer *t;
    hf_bpe_scratch *bs;
    tok_out *o;
    tok_str buf[MAX_STAGES][2];
    pcre2_match_data *md[MAX_STAGES];
    seg *segs[MAX_STAGES];
    size_t nseg[MAX_STAGES], segcap[MAX_STAGES];
} pctx;

static posemb_status stage(pctx *c, int k, const char *s, size_t n, int at_start);

static posemb_status oom(pctx *c) { return posemb_fail(c->o->err, POSEMB_ENOMEM, "out of memory"); }

/* ByteLevel's byte -> character mapping of s into out. */
static int map_bytes(const tok_hf *h, const char *s, size_t n, tok_str *out)
{
    out->n = 0;
    if (tok_str_reserve(out, 2 * n)) return -1;
    char *p = out->p;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = h->byte_cp[(uint8_t)s[i]];
        if (cp < 0x80) {
            *p++ = (char)cp;
        } else {
            *p++ = (char)(0xC0 | (cp >> 6));
            *p++ = (char)(0x80 | (cp & 0x3F));
        }
    }
    out->n = (size_t)(p - out->p);
    out->p[out->n] = '\0';
    return 0;
}

static posemb_status byte_level(pctx *c, int k, const hf_pre *pre, const char *s, size_t n, int at_start)
{
    const tok_hf *h = c->t->hf;
    tok_str *pre_buf = &c->buf[k][0], *map = &c->buf[k][1];
    if (pre->add_prefix_space && s[0] != ' ') {
        pre_buf->n = 0;
        if (tok_str_add(pre_buf, " ", 1) || tok_str_add(pre_buf, s, n)) return oom(c);
        s = pre_buf->p;
        n = pre_buf->n;
    }
    if (!pre->use_regex) {
        if (map_bytes(h, s, n, map)) return oom(c);
        return stage(c, k + 1, map->p, map->n, at_start);
    }
    size_t pos = 0, a, b;
    int r = 0;
    posemb_status st = POSEMB_OK;
    while (!st && pos < n && (r = hf_pattern_next(&pre->pat, s, n, pos, &a, &b, c->md[k])) > 0) {
        if (a > pos) { /* a gap is a piece too (Isolated) */
            if (map_bytes(h, s + pos, a - pos, map)) return oom(c);
            st = stage(c, k + 1, map->p, map->n, at_start && pos == 0);
            if (st) return st;
        }
        if (b == a) { /* empty match: step one character */
            if (a >= n) break;
            tok_utf8_next((const uint8_t *)s, n, &b);
            if (map_bytes(h, s + a, b - a, map)) return oom(c);
        } else if (map_bytes(h, s + a, b - a, map)) {
            return oom(c);
        }
        st = stage(c, k + 1, map->p, map->n, at_start && a == 0);
        pos = b;
    }
    if (!st && r < 0) return posemb_fail(c->o->err, POSEMB_ERANGE, "the ByteLevel regex failed to match (PCRE2 limit)");
    if (!st && pos < n) {
        if (map_bytes(h, s + pos, n - pos, map)) return oom(c);
        st = stage(c, k + 1, map->p, map->n, at_start && pos == 0);
    }
    return st;
}

static int seg_push(pctx *c, int k, size_t a, size_t b, int m)
{
    if (c->nseg[k] == c->segcap[k]) {
        size_t cap = c->segcap[k] ? c->segcap[k] * 2 : 64;
        seg *p = realloc(c->segs[k], cap * sizeof *p);
        if (!p) return -1;
        c->segs[k] = p;
        c->segcap[k] = cap;
    }
    c->segs[k][c->nseg[k]++] = (seg){a, b, m};
    return 0;
}

/* Split: the segments of the pattern (matches and the gaps between them),
 * combined as the behaviour says (NormalizedString::split). */
static posemb_status split(pctx *c, int k, const hf_pre *pre, const char *s, size_t n, int at_start)
{
    int stream = pre->behavior == HF_ISOLATED || pre->behavior == HF_REMOVED;
    size_t pos = 0, a, b;
    int r = 0;
    posemb_status st = POSEMB_OK;
    c->nseg[k] = 0;
    /* Removed drops the matches (after invert); Isolated keeps all. */
#define EMIT(A, B, M)                                                                                                  \
    do {                                                                                                               \
        if (stream) {                                                                                                  \
            if (pre->behavior == HF_ISOLATED || !(M)) st = stage(c, k + 1, s + (A), (B) - (A), at_start && (A) == 0);  \
        } else if (seg_push(c, k, A, B, M)) {                                                                          \
            return oom(c);                                                                                             \
        }                                                                                                              \
    } while (0)
    while (!st && pos <= n && (r = hf_pattern_next(&pre->pat, s, n, pos, &a, &b, c->md[k])) > 0) {
        if (a > pos) EMIT(pos, a, pre->invert);
        if (st) return st;
        EMIT(a, b, !pre->invert);
        if (st) return st;
        pos = b;
        if (b == a) { /* an empty match: search again one character on */
            if (a >= n) break;
            size_t i = a;
            tok_utf8_next((const uint8_t *)s, n, &i);
            EMIT(a, i, pre->invert);
            pos = i;
        }
    }
    if (r < 0) return posemb_fail(c->o->err, POSEMB_ERANGE, "the Split regex failed to match (PCRE2 limit)");
    if (!st && pos < n) EMIT(pos, n, pre->invert);
#undef EMIT
    if (st || stream) return st;
    /* combine into c->segs[k] in place, then run the next stage on each */
    seg *g = c->segs[k];
    size_t ng = c->nseg[k], w = 0;
    int prev = 0;
    if (pre->behavior == HF_MERGED_NEXT) {
        for (size_t i = ng; i-- > 0;) {
            seg x = g[i];
            if (x.m && !prev && w) g[ng - w].a = x.a; /* the last pushed, counting from the end */
            else g[ng - ++w] = (seg){x.a, x.b, 0};
            prev = x.m;
        }
        memmove(g, g + ng - w, w * sizeof *g);
    } else {
        for (size_t i = 0; i < ng; i++) {
            seg x = g[i];
            int join = pre->behavior == HF_CONTIGUOUS ? x.m == prev : x.m && !prev;
            if (join && w) g[w - 1].b = x.b;
            else g[w++] = (seg){x.a, x.b, 0};
            prev = x.m;
        }
    }
    for (size_t i = 0; i < w && !st; i++) {
        seg x = c->segs[k][i]; /* the next stages may not touch stage k's list */
        if (x.b > x.a) st = stage(c, k + 1, s + x.a, x.b - x.a, at_start && x.a == 0);
    }
    return st;
}

static posemb_status metaspace(pctx *c, int k, const hf_pre *pre, const char *s, size_t n, int at_start)
{
    tok_str *m = &c->buf[k][0];
    m->n = 0;
    /* the check runs after the spaces are replaced: a leading space counts */
    int starts = s[0] == ' ' || (n >= pre->repl_len && !memcmp(s, pre->repl, pre->repl_len));
    if (!starts && (pre->prepend == 1 || (pre->prepend == 2 && at_start)) && tok_str_add(m, pre->repl, pre->repl_len))
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        const char *p = memchr(s + i, ' ', n - i);
        size_t e = p ? (size_t)(p - s) : n;
        if (tok_str_add(m, s + i, e - i) || (p && tok_str_add(m, pre->repl, pre->repl_len))) return oom(c);
        i = e;
    }
    if (!pre->split) return stage(c, k + 1, m->p, m->n, at_start);
    /* MergedWithNext on the replacement: a piece starts at each one */
    size_t a = 0;
    posemb_status st = POSEMB_OK;
    for (size_t i = 1; !st && i + pre->repl_len <= m->n; i++) {
        if (memcmp(m->p + i, pre->repl, pre->repl_len)) continue;
        st = stage(c, k + 1, m->p + a, i - a, at_start && a == 0);
        a = i;
        i += pre->repl_len - 1;
    }
    return st ? st : stage(c, k + 1, m->p + a, m->n - a, at_start && a == 0);
}

static int is_numeric(int32_t cp)
{
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    utf8proc_category_t g = utf8proc_category(cp);
    return g == UTF8PROC_CATEGORY_ND || g == UTF8PROC_CATEGORY_NL || g == UTF8PROC_CATEGORY_NO;
}

/* Digits (each digit alone, or runs of digits) and WhitespaceSplit (runs
 * of non-space): cuts between characters of different classes. */
static posemb_status by_class(pctx *c, int k, const hf_pre *pre, const char *s, size_t n, int at_start)
{
    size_t a = 0, i = 0;
    int cls = -1;
    posemb_status st = POSEMB_OK;
    while (!st && i < n) {
        size_t j = i;
        int32_t cp = tok_utf8_next((const uint8_t *)s, n, &j);
        int x = pre->kind == HF_PRE_DIGITS ? is_numeric(cp) : !hf_is_ws(cp);
        int cut = i > a && (x != cls || (pre->kind == HF_PRE_DIGITS && pre->individual && x));
        if (cut) {
            if (pre->kind == HF_PRE_DIGITS || cls) st = stage(c, k + 1, s + a, i - a, at_start && a == 0);
            a = i;
        }
        cls = x;
        i = j;
    }
    if (!st && i > a && (pre->kind == HF_PRE_DIGITS || cls)) st = stage(c, k + 1, s + a, i - a, at_start && a == 0);
    return st;
}

static posemb_status run_stage(pctx *c, int k, const char *s, size_t n, int at_start);

/* The stages after the first are a function of the piece alone (and of
 * at_start when a Metaspace "first" follows), and pieces repeat: the ids of
 * short ones are remembered at stage 1, which saves the ByteLevel mapping
 * and the model's lookups of Llama 3 and Qwen3. */
static posemb_status stage(pctx *c, int k, const char *s, size_t n, int at_start)
{
    if (!n) return POSEMB_OK; /* the library drops empty pieces */
    const tok_hf *h = c->t->hf;
    if (k != 1 || k >= h->n_pres || n > HF_MEMO_BYTES || (at_start && h->first_sensitive))
        return run_stage(c, k, s, n, at_start);
    const int32_t *ids;
    int32_t cnt;
    if (hf_memo_find(c->bs, s, n, &ids, &cnt)) {
        for (int32_t i = 0; i < cnt; i++) {
            posemb_status st = tok_out_push(c->o, ids[i], c->t->id_str[ids[i]], c->t->id_len[ids[i]]);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    int before = c->o->enc->n;
    posemb_status st = run_stage(c, k, s, n, at_start);
    const posemb_encoding *e = c->o->enc;
    if (!st) hf_memo_store(c->bs, s, n, e->n > before ? e->ids + before : NULL, e->n - before);
    return st;
}

static posemb_status run_stage(pctx *c, int k, const char *s, size_t n, int at_start)
{
    const tok_hf *h = c->t->hf;
    if (k == h->n_pres)
        return c->t->model == POSEMB_TOK_UNIGRAM ? hf_unigram_word(c->t, s, n, c->bs, c->o)
                                                 : hf_bpe_word(c->t, s, n, c->bs, c->o);
    const hf_pre *pre = &h->pres[k];
    switch (pre->kind) {
    case HF_PRE_BYTELEVEL:
        return byte_level(c, k, pre, s, n, at_start);
    case HF_PRE_SPLIT:
        return split(c, k, pre, s, n, at_start);
    case HF_PRE_METASPACE:
        return metaspace(c, k, pre, s, n, at_start);
    case HF_PRE_DIGITS:
    case HF_PRE_WHITESPACE_SPLIT:
        return by_class(c, k, pre, s, n, at_start);
    }
    return posemb_fail(c->o->err, POSEMB_EFORMAT, "internal: pre-tokenizer kind %d", (int)pre->kind);
}

posemb_status hf_pretokenize(const posemb_tokenizer *t, const char *s, size_t n, int at_start, hf_bpe_scratch *bs,
                             tok_out *o)
{
    const tok_hf *h = t->hf;
    pctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.bs = bs;
    c.o = o;
    posemb_status st = POSEMB_OK;
    for (int k = 0; k < h->n_pres && !st; k++) {
        if (!h->pres[k].pat.re) continue;
        c.md[k] = pcre2_match_data_create_from_pattern(h->pres[k].pat.re, NULL);
        if (!c.md[k]) st = oom(&c);
    }
    if (!st) st = stage(&c, 0, s, n, at_start);
    for (int k = 0; k < MAX_STAGES; k++) {
        tok_str_free(&c.buf[k][0]);
        tok_str_free(&c.buf[k][1]);
        pcre2_match_data_free(c.md[k]);
        free(c.segs[k]);
    }
    return st;
}
