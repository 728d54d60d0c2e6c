/* The tokenizer itself, for both models: the encode driver, accessors and
 * decoding. Building one (its vocabulary, special tokens, templates) is
 * tok_vocab.c, the encoding it fills tok_out.c; the model-specific halves
 * are wordpiece.c and bpe.c; loading is tok_files.c and tokenizer_json.c;
 * the string map tok_map.c, text helpers tok_text.c. See posemb/tokenizer.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"
#include "tokenizer_impl.h"

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
    tok_out o = {enc, !!(flags & POSEMB_ENC_TOKENS), 0, err, NULL, NULL};
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

posemb_status posemb_tokenizer_words(const posemb_tokenizer *t, const char *text, size_t len, posemb_word_fn fn,
                                     void *ctx, posemb_error *err)
{
    if (t->hf || t->model != POSEMB_TOK_WORDPIECE)
        return posemb_fail(err, POSEMB_EINVAL, "words: a WordPiece tokenizer from vocab.txt only");
    tok_out o = {NULL, 0, 0, err, fn, ctx};
    return encode_text(t, text, len, &o);
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
