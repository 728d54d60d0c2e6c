/* Model inputs from GLUE and SQuAD, as Hugging Face's fine-tuning scripts
 * build them with a slow BertTokenizer (see posemb/features.h). */
#include "data/features.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void posemb_features_free(posemb_features *f)
{
    if (!f) return;
    free(f->ids);
    free(f->types);
    free(f->mask);
    free(f->label);
    free(f->score);
    free(f->starts);
    free(f->ends);
    free(f->example);
    free(f->tok_start);
    free(f->tok_end);
    memset(f, 0, sizeof *f);
}

/* Resizes *p to count elements of size bytes; 0, or -1 (and *p kept) when
 * out of memory or when the size overflows. */
static int grow(void **p, size_t count, size_t size)
{
    if (count == 0) count = 1; /* realloc(p, 0) may free p */
    if (count > SIZE_MAX / size) return -1;
    void *q = realloc(*p, count * size);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* The [CLS], [SEP] and [PAD] ids; EINVAL when the tokenizer lacks one (GPT-2). */
static posemb_status bert_specials(const posemb_tokenizer *tok, int32_t *cls, int32_t *sep, int32_t *pad,
                                   posemb_error *err)
{
    *cls = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_CLS);
    *sep = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_SEP);
    *pad = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_PAD);
    if (*cls < 0 || *sep < 0 || *pad < 0)
        return posemb_fail(err, POSEMB_EINVAL, "features: the tokenizer has no [CLS], [SEP] or [PAD] token (BERT's)");
    return POSEMB_OK;
}

/* Appends n ids of one type (mask 1) at position *t of a row. */
static void put(int32_t *ids, int32_t *types, float *mask, int *t, const int32_t *src, int n, int32_t type)
{
    for (int i = 0; i < n; i++, (*t)++) {
        ids[*t] = src[i];
        types[*t] = type;
        mask[*t] = 1.0f;
    }
}

/* Fills the rest of a row, from position t, with [PAD] (type 0, mask 0),
 * as HF pads (pad_token_type_id = 0). */
static void pad_row(int32_t *ids, int32_t *types, float *mask, int t, int T, int32_t pad)
{
    for (; t < T; t++) {
        ids[t] = pad;
        types[t] = 0;
        mask[t] = 0.0f;
    }
}

/* ================================================================ GLUE */

/* HF's truncate_sequences with "longest_first" (slow tokenizers): one token
 * at a time off the end of the longer text; on a tie the second text loses
 * it (`if len(ids) > len(pair_ids): ids = ids[:-1] else: pair_ids = ...`). */
static void truncate_longest_first(int *na, int *nb, int room)
{
    while (*na + *nb > room) {
        if (*na > *nb) (*na)--;
        else (*nb)--;
    }
}

static posemb_status glue_alloc(posemb_features *f, const posemb_glue_data *d, int T, posemb_error *err)
{
    size_t cells = (size_t)d->n * (size_t)T;
    int bad = grow((void **)&f->ids, cells, sizeof *f->ids) || grow((void **)&f->types, cells, sizeof *f->types) ||
              grow((void **)&f->mask, cells, sizeof *f->mask);
    if (!bad && d->label) bad = grow((void **)&f->label, (size_t)d->n, sizeof *f->label);
    if (!bad && d->score) bad = grow((void **)&f->score, (size_t)d->n, sizeof *f->score);
    if (bad) return posemb_fail(err, POSEMB_ENOMEM, "GLUE features: out of memory for %d rows of %d tokens", d->n, T);
    if (d->label) memcpy(f->label, d->label, (size_t)d->n * sizeof *f->label);
    if (d->score) memcpy(f->score, d->score, (size_t)d->n * sizeof *f->score);
    return POSEMB_OK;
}

/* One example: encode both texts without special tokens, truncate, then
 * [CLS] a [SEP] (b [SEP]) with types 0 then 1, padded to T. */
static posemb_status glue_row(const posemb_tokenizer *tok, const posemb_glue_data *d, int i, int T, const int32_t sp[3],
                              posemb_encoding *ea, posemb_encoding *eb, posemb_features *f, posemb_error *err)
{
    const char *a = d->text_a[i], *b = d->text_b ? d->text_b[i] : NULL;
    posemb_status st = posemb_tokenizer_encode(tok, a, strlen(a), 0, ea, err);
    if (!st && b) st = posemb_tokenizer_encode(tok, b, strlen(b), 0, eb, err);
    if (st) return st;
    int na = ea->n, nb = b ? eb->n : 0;
    if (b) truncate_longest_first(&na, &nb, T - 3);
    else if (na > T - 2) na = T - 2;
    size_t off = (size_t)i * (size_t)T;
    int32_t *ids = f->ids + off, *types = f->types + off;
    float *mask = f->mask + off;
    int t = 0;
    put(ids, types, mask, &t, &sp[0], 1, 0);
    put(ids, types, mask, &t, ea->ids, na, 0);
    put(ids, types, mask, &t, &sp[1], 1, 0);
    if (b) {
        put(ids, types, mask, &t, eb->ids, nb, 1);
        put(ids, types, mask, &t, &sp[1], 1, 1);
    }
    pad_row(ids, types, mask, t, T, sp[2]);
    return POSEMB_OK;
}

posemb_status posemb_glue_features(const posemb_tokenizer *tok, const posemb_glue_data *d, int T, posemb_features *f,
                                   posemb_error *err)
{
    memset(f, 0, sizeof *f);
    if (d->n < 1) return posemb_fail(err, POSEMB_EINVAL, "GLUE features: no examples");
    if (T < 4) return posemb_fail(err, POSEMB_EINVAL, "GLUE features: T = %d, must be >= 4", T);
    int32_t sp[3];
    posemb_status st = bert_specials(tok, &sp[0], &sp[1], &sp[2], err);
    if (st) return st;
    f->n = d->n;
    f->T = T;
    st = glue_alloc(f, d, T, err);
    posemb_encoding ea, eb;
    posemb_encoding_init(&ea);
    posemb_encoding_init(&eb);
    for (int i = 0; !st && i < d->n; i++) st = glue_row(tok, d, i, T, sp, &ea, &eb, f, err);
    posemb_encoding_free(&ea);
    posemb_encoding_free(&eb);
    if (st) posemb_features_free(f);
    return st;
}

/* =============================================================== SQuAD */

/* A context as tokens: the ids, and for each the byte span [ws, we) of the
 * whitespace-delimited word it comes from. Kept across questions, since the
 * questions of one paragraph share their context. */
typedef struct ctx_tokens {
    const char *context; /* the context these tokens are of; NULL: none yet */
    int n, cap;
    int32_t *ids, *ws, *we;
} ctx_tokens;

static void ctx_free(ctx_tokens *c)
{
    free(c->ids);
    free(c->ws);
    free(c->we);
    memset(c, 0, sizeof *c);
}

/* Whitespace as HF's SQuAD processor splits a context into words
 * (squad.py's _is_whitespace: " ", "\t", "\r", "\n" and U+202F); the
 * tokenizer then splits each word further (on other Unicode spaces, such as
 * U+00A0, and punctuation). Returns the whitespace's length in bytes at s,
 * 0 when s does not start with whitespace. */
static int space_len(const char *s, const char *end)
{
    if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') return 1;
    if (end - s >= 3 && (unsigned char)s[0] == 0xe2 && (unsigned char)s[1] == 0x80 && (unsigned char)s[2] == 0xaf)
        return 3;
    return 0;
}

static posemb_status ctx_append(ctx_tokens *c, const posemb_encoding *e, int32_t ws, int32_t we, posemb_error *err)
{
    if (c->n + e->n > c->cap) {
        if (c->n > INT32_MAX / 2 - e->n) return posemb_fail(err, POSEMB_ERANGE, "SQuAD features: context too long");
        int cap = c->cap ? c->cap : 256;
        while (cap < c->n + e->n) cap *= 2;
        if (grow((void **)&c->ids, (size_t)cap, sizeof *c->ids) || grow((void **)&c->ws, (size_t)cap, sizeof *c->ws) ||
            grow((void **)&c->we, (size_t)cap, sizeof *c->we))
            return posemb_fail(err, POSEMB_ENOMEM, "SQuAD features: out of memory for a context's tokens");
        c->cap = cap;
    }
    for (int i = 0; i < e->n; i++) {
        c->ids[c->n + i] = e->ids[i];
        c->ws[c->n + i] = ws;
        c->we[c->n + i] = we;
    }
    c->n += e->n;
    return POSEMB_OK;
}

/* Tokenizes a context word by word, as HF's SquadExample and
 * squad_convert_example_to_features do (doc_tokens, then tokenize per word):
 * every piece of a word carries the word's byte span. */
static posemb_status ctx_tokenize(const posemb_tokenizer *tok, const char *context, int32_t len, ctx_tokens *c,
                                  posemb_encoding *enc, posemb_error *err)
{
    c->context = NULL;
    c->n = 0;
    const char *end = context + len;
    for (const char *s = context; s < end;) {
        int sl = space_len(s, end);
        if (sl) {
            s += sl;
            continue;
        }
        const char *w = s;
        while (s < end && !space_len(s, end)) s++;
        posemb_status st = posemb_tokenizer_encode(tok, w, (size_t)(s - w), 0, enc, err);
        if (!st) st = ctx_append(c, enc, (int32_t)(w - context), (int32_t)(s - context), err);
        if (st) return st;
    }
    c->context = context;
    return POSEMB_OK;
}

/* The context tokens [*s, *e] of the question's first answer, or -1, -1 when
 * no token covers it. Then, as HF's _improve_answer_span, the first run of
 * tokens inside that range equal to the answer's own tokens, if any: the
 * answer "1990" inside the word "1990s" labels the token "1990", not "##s"
 * too. (Decoding gives whole words either way.) */
static posemb_status answer_tokens(const posemb_tokenizer *tok, const posemb_squad_example *ex, const ctx_tokens *c,
                                   posemb_encoding *enc, int *s, int *e, posemb_error *err)
{
    const posemb_squad_answer *a = &ex->answers[0];
    *s = *e = -1;
    if (posemb_char_span_to_tokens(c->ws, c->we, c->n, a->start, a->end, s, e) != 0) return POSEMB_OK;
    posemb_status st = posemb_tokenizer_encode(tok, a->text, (size_t)(a->end - a->start), 0, enc, err);
    if (st) return st;
    int m = enc->n;
    for (int i = *s; m > 0 && i + m - 1 <= *e; i++) {
        if (memcmp(c->ids + i, enc->ids, (size_t)m * sizeof *enc->ids) == 0) {
            *s = i;
            *e = i + m - 1;
            break;
        }
    }
    return POSEMB_OK;
}

/* The number of windows of L tokens, each starting L - stride after the
 * previous one, that it takes to reach the end of n_ctx tokens (at least 1). */
static int n_windows(int n_ctx, int L, int stride)
{
    if (n_ctx <= L) return 1;
    int step = L - stride;
    return 1 + (n_ctx - L + step - 1) / step;
}

/* Room for rows more rows in f (the SQuAD arrays grow as windows come). */
static posemb_status squad_reserve(posemb_features *f, int *cap, int rows, posemb_error *err)
{
    if (rows <= *cap) return POSEMB_OK;
    if (rows > INT32_MAX / 2)
        return posemb_fail(err, POSEMB_ERANGE, "SQuAD features: more than %d rows", INT32_MAX / 2);
    int c = *cap ? *cap : 1024;
    while (c < rows) c *= 2;
    size_t cells = (size_t)c * (size_t)f->T;
    if (grow((void **)&f->ids, cells, sizeof *f->ids) || grow((void **)&f->types, cells, sizeof *f->types) ||
        grow((void **)&f->mask, cells, sizeof *f->mask) || grow((void **)&f->tok_start, cells, sizeof *f->tok_start) ||
        grow((void **)&f->tok_end, cells, sizeof *f->tok_end) ||
        grow((void **)&f->starts, (size_t)c, sizeof *f->starts) ||
        grow((void **)&f->ends, (size_t)c, sizeof *f->ends) ||
        grow((void **)&f->example, (size_t)c, sizeof *f->example))
        return posemb_fail(err, POSEMB_ENOMEM, "SQuAD features: out of memory for %d rows of %d tokens", c, f->T);
    *cap = c;
    return POSEMB_OK;
}

/* Gives back the rows reserved but not used; a failed shrink keeps the
 * larger block, which is just as good. */
static void squad_fit(posemb_features *f)
{
    size_t cells = (size_t)f->n * (size_t)f->T;
    (void)(grow((void **)&f->ids, cells, sizeof *f->ids) | grow((void **)&f->types, cells, sizeof *f->types) |
           grow((void **)&f->mask, cells, sizeof *f->mask) | grow((void **)&f->tok_start, cells, sizeof *f->tok_start) |
           grow((void **)&f->tok_end, cells, sizeof *f->tok_end) |
           grow((void **)&f->starts, (size_t)f->n, sizeof *f->starts) |
           grow((void **)&f->ends, (size_t)f->n, sizeof *f->ends) |
           grow((void **)&f->example, (size_t)f->n, sizeof *f->example));
}

/* One window row: [CLS] q [SEP] context[w0, w0 + len) [SEP], padded; the
 * answer tokens [as, ae] of the whole context label it when inside. */
static void squad_row(posemb_features *f, int row, int k, const int32_t *q, int nq, const ctx_tokens *c, int w0,
                      int len, int as, int ae, const int32_t sp[3])
{
    size_t off = (size_t)row * (size_t)f->T;
    int32_t *ids = f->ids + off, *types = f->types + off, *ts = f->tok_start + off, *te = f->tok_end + off;
    float *mask = f->mask + off;
    int t = 0;
    put(ids, types, mask, &t, &sp[0], 1, 0);
    put(ids, types, mask, &t, q, nq, 0);
    put(ids, types, mask, &t, &sp[1], 1, 0);
    int first = t; /* the row position of the window's first token */
    put(ids, types, mask, &t, c->ids + w0, len, 1);
    put(ids, types, mask, &t, &sp[1], 1, 1);
    pad_row(ids, types, mask, t, f->T, sp[2]);
    for (int i = 0; i < f->T; i++) ts[i] = te[i] = -1;
    for (int i = 0; i < len; i++) {
        ts[first + i] = c->ws[w0 + i];
        te[first + i] = c->we[w0 + i];
    }
    int inside = as >= 0 && as >= w0 && ae < w0 + len;
    f->starts[row] = inside ? first + as - w0 : 0;
    f->ends[row] = inside ? first + ae - w0 : 0;
    f->example[row] = k;
}

static posemb_status squad_check(const posemb_squad *sq, const int *idx, int n, int T, int stride, int max_query,
                                 posemb_error *err)
{
    if (n < 1) return posemb_fail(err, POSEMB_EINVAL, "SQuAD features: n = %d questions, must be >= 1", n);
    if (max_query < 1)
        return posemb_fail(err, POSEMB_EINVAL, "SQuAD features: max_query = %d, must be >= 1", max_query);
    if (T < 4 || T - 4 < max_query)
        return posemb_fail(err, POSEMB_EINVAL,
                           "SQuAD features: T = %d leaves no room for context after a question of up to %d tokens "
                           "and 3 special tokens (T must be >= max_query + 4)",
                           T, max_query);
    int L = T - 3 - max_query; /* the shortest window a question may leave */
    if (stride < 0 || stride >= L)
        return posemb_fail(err, POSEMB_EINVAL,
                           "SQuAD features: stride = %d must be >= 0 and less than the window, T - 3 - max_query = %d",
                           stride, L);
    for (int k = 0; k < n; k++)
        if (idx[k] < 0 || idx[k] >= sq->n)
            return posemb_fail(err, POSEMB_EINVAL, "SQuAD features: idx[%d] = %d is not a question (0..%d)", k, idx[k],
                               sq->n - 1);
    return POSEMB_OK;
}

/* Working buffers of posemb_squad_features. */
typedef struct squad_work {
    posemb_encoding q, tmp;
    ctx_tokens ctx;
    int cap; /* rows f has room for */
} squad_work;

/* All windows of question k. */
static posemb_status squad_question(const posemb_tokenizer *tok, const posemb_squad *sq, const int *idx, int k,
                                    int stride, int max_query, const int32_t sp[3], squad_work *w, posemb_features *f,
                                    posemb_error *err)
{
    const posemb_squad_example *ex = &sq->ex[idx[k]];
    posemb_status st = posemb_tokenizer_encode(tok, ex->question, strlen(ex->question), 0, &w->q, err);
    if (st) return st;
    int nq = w->q.n < max_query ? w->q.n : max_query;
    if (w->ctx.context != ex->context) {
        st = ctx_tokenize(tok, ex->context, ex->context_len, &w->ctx, &w->tmp, err);
        if (st) return st;
    }
    int as, ae;
    st = answer_tokens(tok, ex, &w->ctx, &w->tmp, &as, &ae, err);
    if (st) return st;
    int L = f->T - 3 - nq, nw = n_windows(w->ctx.n, L, stride);
    st = squad_reserve(f, &w->cap, f->n + nw, err);
    if (st) return st;
    for (int j = 0; j < nw; j++) {
        int w0 = j * (L - stride), len = w->ctx.n - w0 < L ? w->ctx.n - w0 : L;
        squad_row(f, f->n++, k, w->q.ids, nq, &w->ctx, w0, len, as, ae, sp);
    }
    return POSEMB_OK;
}

posemb_status posemb_squad_features(const posemb_tokenizer *tok, const posemb_squad *sq, const int *idx, int n, int T,
                                    int stride, int max_query, posemb_features *f, posemb_error *err)
{
    memset(f, 0, sizeof *f);
    posemb_status st = squad_check(sq, idx, n, T, stride, max_query, err);
    int32_t sp[3];
    if (!st) st = bert_specials(tok, &sp[0], &sp[1], &sp[2], err);
    if (st) return st;
    f->T = T;
    squad_work w;
    memset(&w, 0, sizeof w);
    posemb_encoding_init(&w.q);
    posemb_encoding_init(&w.tmp);
    for (int k = 0; !st && k < n; k++) st = squad_question(tok, sq, idx, k, stride, max_query, sp, &w, f, err);
    posemb_encoding_free(&w.q);
    posemb_encoding_free(&w.tmp);
    ctx_free(&w.ctx);
    if (st) posemb_features_free(f);
    else squad_fit(f);
    return st;
}

/* ============================================================= decoding */

/* The best span of one question found so far. */
typedef struct best_span {
    double score;
    int row, s, e; /* row -1: none yet */
} best_span;

/* Every span of context tokens of one row, at most max_answer long, against
 * the best so far (a later span must be strictly better: ties keep the first). */
static void scan_row(const posemb_features *f, const float *logits, int row, int max_answer, best_span *b)
{
    const int T = f->T;
    const int32_t *ts = f->tok_start + (size_t)row * (size_t)T;
    const float *lg = logits + (size_t)row * (size_t)T * 2;
    for (int s = 0; s < T; s++) {
        if (ts[s] < 0) continue;
        for (int e = s; e < T && e - s < max_answer; e++) {
            if (ts[e] < 0) continue;
            double score = (double)lg[2 * s] + (double)lg[2 * e + 1];
            if (b->row < 0 || score > b->score) *b = (best_span){score, row, s, e};
        }
    }
}

/* The text of a span: the context from its start word's first byte to its
 * end word's last; "" for none. NULL when out of memory. */
static char *span_text(const posemb_features *f, const posemb_squad_example *ex, const best_span *b)
{
    size_t a = 0, z = 0;
    if (b->row >= 0) {
        a = (size_t)f->tok_start[(size_t)b->row * (size_t)f->T + (size_t)b->s];
        z = (size_t)f->tok_end[(size_t)b->row * (size_t)f->T + (size_t)b->e];
    }
    char *t = malloc(z - a + 1);
    if (!t) return NULL;
    memcpy(t, ex->context + a, z - a);
    t[z - a] = '\0';
    return t;
}

static posemb_status decode_check(const posemb_squad *sq, const int *idx, int n, const posemb_features *f,
                                  int max_answer, posemb_error *err)
{
    if (n < 1) return posemb_fail(err, POSEMB_EINVAL, "SQuAD decode: n = %d questions, must be >= 1", n);
    if (max_answer < 1)
        return posemb_fail(err, POSEMB_EINVAL, "SQuAD decode: max_answer = %d, must be >= 1", max_answer);
    if (!f->example || !f->tok_start || !f->tok_end)
        return posemb_fail(err, POSEMB_EINVAL, "SQuAD decode: the features are not SQuAD features");
    for (int k = 0; k < n; k++)
        if (idx[k] < 0 || idx[k] >= sq->n)
            return posemb_fail(err, POSEMB_EINVAL, "SQuAD decode: idx[%d] = %d is not a question (0..%d)", k, idx[k],
                               sq->n - 1);
    for (int r = 0; r < f->n; r++) {
        int k = f->example[r];
        if (k < 0 || k >= n)
            return posemb_fail(err, POSEMB_EINVAL,
                               "SQuAD decode: row %d belongs to question %d, not one of the %d given", r, k, n);
        /* Features built from other questions could point past this context. */
        int32_t len = sq->ex[idx[k]].context_len;
        for (int t = 0; t < f->T; t++) {
            size_t i = (size_t)r * (size_t)f->T + (size_t)t;
            if (f->tok_start[i] >= 0 && (f->tok_end[i] > len || f->tok_end[i] < f->tok_start[i]))
                return posemb_fail(err, POSEMB_EINVAL,
                                   "SQuAD decode: row %d token %d spans bytes %d..%d, outside question %s's context "
                                   "(%d bytes): the features are of other questions",
                                   r, t, (int)f->tok_start[i], (int)f->tok_end[i], sq->ex[idx[k]].id, (int)len);
        }
    }
    return POSEMB_OK;
}

posemb_status posemb_squad_decode(const posemb_squad *sq, const int *idx, int n, const posemb_features *f,
                                  const float *logits, int max_answer, char ***answers, posemb_error *err)
{
    *answers = NULL;
    posemb_status st = decode_check(sq, idx, n, f, max_answer, err);
    if (st) return st;
    best_span *best = malloc((size_t)n * sizeof *best);
    char **out = calloc((size_t)n, sizeof *out);
    if (!best || !out) {
        free(best);
        free(out);
        return posemb_fail(err, POSEMB_ENOMEM, "SQuAD decode: out of memory for %d answers", n);
    }
    for (int k = 0; k < n; k++) best[k] = (best_span){0.0, -1, 0, 0};
    for (int r = 0; r < f->n; r++) scan_row(f, logits, r, max_answer, &best[f->example[r]]);
    for (int k = 0; k < n; k++) {
        out[k] = span_text(f, &sq->ex[idx[k]], &best[k]);
        if (!out[k]) {
            posemb_squad_answers_free(out, n);
            free(best);
            return posemb_fail(err, POSEMB_ENOMEM, "SQuAD decode: out of memory for answer %d", k);
        }
    }
    free(best);
    *answers = out;
    return POSEMB_OK;
}

void posemb_squad_answers_free(char **answers, int n)
{
    if (!answers) return;
    for (int k = 0; k < n; k++) free(answers[k]);
    free(answers);
}

posemb_status posemb_squad_match_logits(const posemb_features *f, float *logits, posemb_error *err)
{
    if (!f->tok_start || !f->types)
        return posemb_fail(err, POSEMB_EINVAL, "SQuAD match logits: the features are not SQuAD features");
    const size_t T = (size_t)f->T;
    for (size_t r = 0; r < (size_t)f->n; r++) {
        const int32_t *ids = f->ids + r * T, *types = f->types + r * T, *ts = f->tok_start + r * T;
        size_t sep = 1; /* the question is ids[1 .. sep), [SEP] closing it before the first type-1 token */
        while (sep < T && types[sep] == 0) sep++;
        sep--;
        for (size_t t = 0; t < T; t++) {
            float v = 0;
            for (size_t k = 1; ts[t] >= 0 && k < sep && v == 0; k++) v = ids[k] == ids[t] ? 1.0f : 0.0f;
            logits[(r * T + t) * 2] = logits[(r * T + t) * 2 + 1] = v;
        }
    }
    return POSEMB_OK;
}
