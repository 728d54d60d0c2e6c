/* The encoding a tokenizer fills: ids, their strings and offsets, grown as
 * tokens come (tokenizer_impl.h: tok_out_push, which every model's encoder
 * calls). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"
#include "tokenizer_impl.h"

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
    if (o->word)
        return o->word(o->word_ctx, str, len) ? posemb_fail(o->err, POSEMB_EIO, "the word callback stopped")
                                              : POSEMB_OK;
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
