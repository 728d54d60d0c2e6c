/* Building a tokenizer, whichever file reads it: a new one of a model, its
 * special tokens (sorted for the encoder's search), its templates, an id by
 * its string (tokenizer_impl.h). */
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
