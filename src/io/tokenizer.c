/* The tokenizer itself, for both models: special tokens, templates, the
 * encode driver, accessors and decoding. The model-specific halves are
 * wordpiece.c and bpe.c; loading is tok_files.c and tokenizer_json.c; the
 * string map tok_map.c, text helpers tok_text.c. See posemb/tokenizer.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"
#include "tokenizer_impl.h"

posemb_tokenizer *tok_new(posemb_tok_model model)
{
    posemb_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->model = model;
    for (int i = 0; i < POSEMB_SPECIAL_COUNT; i++) t->special_ids[i] = -1;
    return t;
}

void posemb_tokenizer_free(posemb_tokenizer *t)
{
    if (!t) return;
    tok_map_free(&t->vocab);
    free(t->id_str);
    free(t->id_len);
    for (int i = 0; i < t->n_specials; i++) free(t->specials[i].str);
    free(t->specials);
    free(t->single.items);
    free(t->pair.items);
    tok_bpe_free(t->bpe);
    tok_hf_free(t->hf);
    free(t);
}

static int special_cmp(const void *a, const void *b)
{
    const tok_special *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->str, y->str, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

posemb_status tok_add_special(posemb_tokenizer *t, const char *str, size_t len, int32_t id, int lstrip, int rstrip,
                              posemb_error *err)
{
    if (!len) return POSEMB_OK; /* an empty token can never be matched */
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].len == len && !memcmp(t->specials[i].str, str, len)) return POSEMB_OK;
    tok_special *sp = realloc(t->specials, (size_t)(t->n_specials + 1) * sizeof *sp);
    if (!sp) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    t->specials = sp;
    char *copy = malloc(len + 1);
    if (!copy) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    memcpy(copy, str, len);
    copy[len] = '\0';
    sp[t->n_specials++] = (tok_special){copy, len, id, lstrip, rstrip};
    /* HF lower-cases with the regex "(tok1|tok2|...)|(.+?)" over the sorted
     * token list, so the first listed token that matches wins there. */
    qsort(t->specials, (size_t)t->n_specials, sizeof *sp, special_cmp);
    uint8_t c = (uint8_t)str[0];
    t->special_first[c >> 3] |= (uint8_t)(1u << (c & 7));
    return POSEMB_OK;
}

posemb_status tok_finish(posemb_tokenizer *t, posemb_error *err)
{
    int32_t max_id = -1;
    for (size_t e = 0; e < t->vocab.n; e++)
        if (t->vocab.val[e] > max_id) max_id = t->vocab.val[e];
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].id > max_id) max_id = t->specials[i].id;
    t->n_ids = max_id + 1;
    t->id_str = calloc((size_t)t->n_ids + 1, sizeof *t->id_str);
    t->id_len = calloc((size_t)t->n_ids + 1, sizeof *t->id_len);
    if (!t->id_str || !t->id_len) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (size_t e = 0; e < t->vocab.n; e++) {
        size_t len;
        t->id_str[t->vocab.val[e]] = tok_map_key(&t->vocab, e, &len);
        t->id_len[t->vocab.val[e]] = (uint32_t)len;
    }
    /* Added tokens that are not in the vocabulary (HF's added_tokens_encoder). */
    for (int i = 0; i < t->n_specials; i++) {
        tok_special *sp = &t->specials[i];
        if (!t->id_str[sp->id]) {
            t->id_str[sp->id] = sp->str;
            t->id_len[sp->id] = (uint32_t)sp->len;
        }
    }
    return POSEMB_OK;
}

posemb_status tok_set_template(tok_template *tp, const tok_item *items, int n, posemb_error *err)
{
    free(tp->items);
    tp->items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!tp->items) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    memcpy(tp->items, items, (size_t)n * sizeof *items);
    tp->n = n;
    return POSEMB_OK;
}

/* GPT-2's: nothing added; a pair is A then B with types 0 and 1. */
posemb_status tok_plain_templates(posemb_tokenizer *t, posemb_error *err)
{
    tok_item a = {0, -1, 0}, b = {1, -1, 1};
    tok_item pair[2] = {a, b};
    posemb_status st = tok_set_template(&t->single, &a, 1, err);
    return st ? st : tok_set_template(&t->pair, pair, 2, err);
}

posemb_status tok_bert_templates(posemb_tokenizer *t, posemb_error *err)
{
    int32_t cls = t->special_ids[POSEMB_SPECIAL_CLS], sep = t->special_ids[POSEMB_SPECIAL_SEP];
    if (cls < 0 || sep < 0) return tok_plain_templates(t, err);
    tok_item single[3] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}};
    tok_item pair[5] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}, {1, -1, 1}, {-1, sep, 1}};
    posemb_status st = tok_set_template(&t->single, single, 3, err);
    return st ? st : tok_set_template(&t->pair, pair, 5, err);
}

/* The id of a special token, looked up among the added tokens, then the vocab. */
int32_t tok_id_of(const posemb_tokenizer *t, const char *s)
{
    size_t len = strlen(s);
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].len == len && !memcmp(t->specials[i].str, s, len)) return t->specials[i].id;
    return tok_map_get(&t->vocab, s, len);
}

/* ========================================================== accessors */

posemb_tok_model posemb_tokenizer_model(const posemb_tokenizer *t) { return t->model; }

int posemb_tokenizer_vocab_size(const posemb_tokenizer *t) { return t->n_ids; }

int32_t posemb_tokenizer_token_id(const posemb_tokenizer *t, const char *token) { return tok_id_of(t, token); }

const char *posemb_tokenizer_id_token(const posemb_tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_ids ? t->id_str[id] : NULL;
}

int32_t posemb_tokenizer_special_id(const posemb_tokenizer *t, posemb_special which)
{
    return (int)which >= 0 && which < POSEMB_SPECIAL_COUNT ? t->special_ids[which] : -1;
}

/* =========================================================== encoding */

void posemb_encoding_init(posemb_encoding *enc) { memset(enc, 0, sizeof *enc); }

void posemb_encoding_free(posemb_encoding *enc)
{
    free(enc->ids);
    free(enc->type_ids);
    free(enc->tokens);
    memset(enc, 0, sizeof *enc);
}

static posemb_status enc_grow(tok_out *o)
{
    posemb_encoding *e = o->enc;
    if (e->cap >= INT_MAX / 2) return posemb_fail(o->err, POSEMB_ERANGE, "more than %d tokens", INT_MAX / 2);
    int cap = e->cap ? e->cap * 2 : 256;
    int32_t *ids = realloc(e->ids, (size_t)cap * sizeof *ids);
    if (ids) e->ids = ids;
    int32_t *types = realloc(e->type_ids, (size_t)cap * sizeof *types);
    if (types) e->type_ids = types;
    if (!ids || !types) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    if (e->tokens || o->want_tokens) {
        const char **toks = realloc(e->tokens, (size_t)cap * sizeof *toks);
        if (!toks) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        e->tokens = toks;
    }
    e->cap = cap;
    return POSEMB_OK;
}

posemb_status tok_out_push(tok_out *o, int32_t id, const char *str, size_t len)
{
    posemb_encoding *e = o->enc;
    (void)len;
    if (e->n == e->cap || (o->want_tokens && !e->tokens)) {
        posemb_status st = enc_grow(o);
        if (st) return st;
    }
    e->ids[e->n] = id;
    e->type_ids[e->n] = o->type_id;
    if (e->tokens) e->tokens[e->n] = str;
    e->n++;
    return POSEMB_OK;
}

/* The leftmost special token in s[from..n), the longest one there (what
 * HF's Trie.split finds); NULL if none. */
static const tok_special *find_special(const posemb_tokenizer *t, const char *s, size_t n, size_t from, size_t *at)
{
    for (size_t i = from; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (!(t->special_first[c >> 3] & (1u << (c & 7)))) continue;
        const tok_special *best = NULL;
        for (int k = 0; k < t->n_specials; k++) {
            const tok_special *sp = &t->specials[k];
            if (sp->len <= n - i && (!best || sp->len > best->len) && !memcmp(s + i, sp->str, sp->len)) best = sp;
        }
        if (best) {
            *at = i;
            return best;
        }
    }
    return NULL;
}

/* Python's str.lstrip / rstrip on s[a..b): the new bounds. */
static size_t skip_space_left(const char *s, size_t a, size_t b)
{
    while (a < b) {
        size_t i = a;
        int32_t cp = tok_utf8_next((const uint8_t *)s, b, &i);
        if (cp < 0 || !tok_py_isspace(cp)) break;
        a = i;
    }
    return a;
}

static size_t skip_space_right(const char *s, size_t a, size_t b)
{
    size_t end = a, i = a;
    while (i < b) {
        int32_t cp = tok_utf8_next((const uint8_t *)s, b, &i);
        if (cp < 0 || !tok_py_isspace(cp)) end = i;
    }
    return end;
}

static posemb_status encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o)
{
    return t->model == POSEMB_TOK_BPE ? tok_bpe_encode_chunk(t, s, n, o) : tok_wp_encode_chunk(t, s, n, o);
}

/* One text: special tokens split out (with the whitespace stripping each
 * asks for), the rest encoded by the model, as HF's tokenize. */
static posemb_status encode_text(const posemb_tokenizer *t, const char *text, size_t len, tok_out *o)
{
    char *own = NULL;
    const char *s = text ? text : "";
    size_t n = text ? len : 0;
    posemb_status st = POSEMB_OK;
    if (t->hf) return tok_hf_encode_text(t, s, n, o);
    if (t->model == POSEMB_TOK_WORDPIECE) {
        st = tok_wp_prepare(t, s, n, &own, &n, o->err);
        if (st) return st;
        if (own) s = own;
    } else if (tok_bpe_add_prefix_space(t)) { /* GPT2Tokenizer.prepare_for_tokenization */
        own = malloc(n + 1);
        if (!own) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        own[0] = ' ';
        if (n) memcpy(own + 1, s, n);
        s = own;
        n++;
    }
    size_t pos = 0;
    int prev_rstrip = 0;
    while (!st) {
        size_t at = n;
        const tok_special *sp = t->n_specials ? find_special(t, s, n, pos, &at) : NULL;
        size_t a = pos, b = sp ? at : n;
        if (prev_rstrip) a = skip_space_left(s, a, b);
        if (sp && sp->lstrip) b = skip_space_right(s, a, b);
        if (b > a) st = encode_chunk(t, s + a, b - a, o);
        if (!sp || st) break;
        st = tok_out_push(o, sp->id, t->id_str[sp->id], t->id_len[sp->id]);
        pos = at + sp->len;
        prev_rstrip = sp->rstrip;
    }
    free(own);
    return st;
}

static posemb_status encode_any(const posemb_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                                int is_pair, unsigned flags, posemb_encoding *enc, posemb_error *err)
{
    tok_out o = {enc, !!(flags & POSEMB_ENC_TOKENS), 0, err};
    enc->n = 0;
    if (!(flags & POSEMB_ENC_SPECIAL)) { /* HF: ids + pair_ids, all type 0 */
        posemb_status st = encode_text(t, a, alen, &o);
        return st || !is_pair ? st : encode_text(t, b, blen, &o);
    }
    const tok_template *tp = is_pair ? &t->pair : &t->single;
    for (int i = 0; i < tp->n; i++) {
        const tok_item *it = &tp->items[i];
        o.type_id = it->type_id;
        posemb_status st = it->seq < 0    ? tok_out_push(&o, it->id, t->id_str[it->id], t->id_len[it->id])
                           : it->seq == 0 ? encode_text(t, a, alen, &o)
                                          : encode_text(t, b, blen, &o);
        if (st) return st;
    }
    return POSEMB_OK;
}

posemb_status posemb_tokenizer_encode(const posemb_tokenizer *t, const char *text, size_t len, unsigned flags,
                                      posemb_encoding *enc, posemb_error *err)
{
    return encode_any(t, text, len, NULL, 0, 0, flags, enc, err);
}

posemb_status posemb_tokenizer_encode_pair(const posemb_tokenizer *t, const char *a, size_t alen, const char *b,
                                           size_t blen, unsigned flags, posemb_encoding *enc, posemb_error *err)
{
    return encode_any(t, a, alen, b, blen, 1, flags, enc, err);
}

/* =========================================================== decoding */

/* Python's s.replace(from, to) for len(to) <= len(from), in place. */
static void replace_all(char *s, size_t *n, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), r = 0, w = 0;
    while (r < *n) {
        if (r + fl <= *n && !memcmp(s + r, from, fl)) {
            memmove(s + w, to, tl);
            w += tl;
            r += fl;
        } else {
            s[w++] = s[r++];
        }
    }
    *n = w;
    s[w] = '\0';
}

/* HF's clean_up_tokenization, in its order, in place. */
static void cleanup(char *text, size_t *len)
{
    static const char *const FROM[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    static const char *const TO[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t k = 0; k < sizeof FROM / sizeof FROM[0]; k++) replace_all(text, len, FROM[k], TO[k]);
}

static int is_special_id(const posemb_tokenizer *t, int32_t id)
{
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].id == id) return 1;
    for (int i = 0; i < POSEMB_SPECIAL_COUNT; i++)
        if (t->special_ids[i] == id) return 1;
    return 0;
}

posemb_status posemb_tokenizer_decode(const posemb_tokenizer *t, const int32_t *ids, int n, unsigned flags, char **text,
                                      size_t *len, posemb_error *err)
{
    *text = NULL;
    *len = 0;
    if (t->hf) {
        posemb_status st = tok_hf_decode(t, ids, n, !!(flags & POSEMB_DEC_SKIP_SPECIAL), text, len, err);
        if (!st && (flags & POSEMB_DEC_CLEANUP)) cleanup(*text, len);
        return st;
    }
    tok_str d = {0};
    if (tok_str_add(&d, "", 0)) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int first = 1;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_ids || !t->id_str[id]) {
            free(d.p);
            return posemb_fail(err, POSEMB_ERANGE, "id %d (position %d) is not in the vocabulary", id, i);
        }
        if ((flags & POSEMB_DEC_SKIP_SPECIAL) && is_special_id(t, id)) continue;
        int bad;
        if (t->model == POSEMB_TOK_BPE) {
            bad = tok_bpe_token_bytes(t, t->id_str[id], t->id_len[id], &d.p, &d.n, &d.cap) != POSEMB_OK;
        } else { /* HF: " ".join(tokens), then " ##" removed */
            bad = (!first && tok_str_add(&d, " ", 1)) || tok_str_add(&d, t->id_str[id], t->id_len[id]);
        }
        first = 0;
        if (bad) {
            free(d.p);
            return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        }
    }
    if (t->model == POSEMB_TOK_WORDPIECE) {
        char from[20] = " ";
        memcpy(from + 1, t->wp.prefix, t->wp.prefix_len + 1);
        if (t->wp.prefix_len) replace_all(d.p, &d.n, from, "");
        size_t a = skip_space_left(d.p, 0, d.n), b = skip_space_right(d.p, a, d.n);
        memmove(d.p, d.p + a, b - a);
        d.n = b - a;
        d.p[d.n] = '\0';
    }
    if (flags & POSEMB_DEC_CLEANUP) cleanup(d.p, &d.n);
    *text = d.p;
    *len = d.n;
    return POSEMB_OK;
}
