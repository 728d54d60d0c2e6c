/* Model inputs (posemb/features.h): GLUE pairs encoded, truncated
 * longest-first and padded; SQuAD questions cut into strided windows with
 * their answers labelled, and spans decoded back to text; the oracle EM/F1
 * on the study's eval split of dev-v1.1.json. Needs BERT's vocab.txt from
 * ../shared (skips without it). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/datasets.h"
#include "data/features.h"
#include "posemb/tokenizer.h"

static const char *VOCAB = POSEMB_SHARED "/data/bert-base-uncased/vocab.txt";
static const char *SQUAD_DEV = POSEMB_SHARED "/data/squad/dev-v1.1.json";
static const char *GPT2_ENCODER = POSEMB_SHARED "/data/gpt2/encoder.json";
static const char *GPT2_MERGES = POSEMB_SHARED "/data/gpt2/vocab.bpe";

/* ------------------------------------------------------------ helpers */

static posemb_tokenizer *bert(void)
{
    posemb_tokenizer *tok = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_wordpiece(VOCAB, 1, &tok, &err)) fail_msg("load %s: %s", VOCAB, err.msg);
    return tok;
}

/* The ids of text without special tokens, into enc; returns their count. */
static int encode(const posemb_tokenizer *tok, const char *text, posemb_encoding *enc)
{
    posemb_error err;
    if (posemb_tokenizer_encode(tok, text, strlen(text), 0, enc, &err)) fail_msg("encode: %s", err.msg);
    return enc->n;
}

static int32_t special(const posemb_tokenizer *tok, posemb_special s)
{
    int32_t id = posemb_tokenizer_special_id(tok, s);
    assert_true(id >= 0);
    return id;
}

/* Row r of a GLUE pair is [CLS] a [SEP] b [SEP] [PAD]...: checks the types,
 * the mask and the padding, and returns the lengths of a and b. */
static void split_pair_row(const posemb_tokenizer *tok, const posemb_features *f, int r, int *na, int *nb)
{
    const int32_t *ids = f->ids + (size_t)r * f->T, *types = f->types + (size_t)r * f->T;
    const float *mask = f->mask + (size_t)r * f->T;
    int32_t cls = special(tok, POSEMB_SPECIAL_CLS), sep = special(tok, POSEMB_SPECIAL_SEP);
    int32_t pad = special(tok, POSEMB_SPECIAL_PAD);
    assert_int_equal(ids[0], cls);
    int s1 = 1;
    while (s1 < f->T && ids[s1] != sep) s1++;
    int s2 = s1 + 1;
    while (s2 < f->T && ids[s2] != sep) s2++;
    assert_true(s2 < f->T);
    for (int t = 0; t < f->T; t++) {
        assert_int_equal(types[t], t <= s1 ? 0 : t <= s2 ? 1 : 0);
        assert_true(mask[t] == (t <= s2 ? 1.0f : 0.0f));
        if (t > s2) assert_int_equal(ids[t], pad);
    }
    *na = s1 - 1;
    *nb = s2 - s1 - 1;
}

/* ================================================================ GLUE */

static void test_glue_pair(void **state)
{
    (void)state;
    if (!tu_have_shared("GLUE features")) return;
    posemb_tokenizer *tok = bert();
    posemb_error err;
    posemb_encoding e;
    posemb_encoding_init(&e);

    /* Example 0 fits; 1 is 10 + 6 tokens; 2 is 6 + 6 (the tie). */
    const char *a[] = {"The cat sat.", "one two three four five six seven eight nine ten",
                       "one two three four five six"};
    const char *b[] = {"A dog ran!", "red green blue black white brown", "red green blue black white brown"};
    int32_t label[] = {1, 0, 1};
    posemb_glue_data d = {0};
    d.task = POSEMB_GLUE_MRPC;
    d.n = 3;
    d.text_a = a;
    d.text_b = b;
    d.label = label;
    d.labeled = 1;
    d.n_classes = 2;
    assert_int_equal(encode(tok, a[1], &e), 10);
    assert_int_equal(encode(tok, b[1], &e), 6);
    assert_int_equal(encode(tok, a[2], &e), 6);

    posemb_features f;
    const int T = 12;
    assert_int_equal(posemb_glue_features(tok, &d, T, &f, &err), POSEMB_OK);
    assert_int_equal(f.n, 3);
    assert_int_equal(f.T, T);
    assert_non_null(f.label);
    assert_null(f.score);
    assert_null(f.starts);
    assert_null(f.tok_start);
    for (int i = 0; i < 3; i++) assert_int_equal(f.label[i], label[i]);

    /* Untruncated: exactly the tokenizer's own [CLS] a [SEP] b [SEP]. */
    assert_int_equal(
        posemb_tokenizer_encode_pair(tok, a[0], strlen(a[0]), b[0], strlen(b[0]), POSEMB_ENC_SPECIAL, &e, &err),
        POSEMB_OK);
    assert_true(e.n <= T);
    for (int t = 0; t < e.n; t++) {
        assert_int_equal(f.ids[t], e.ids[t]);
        assert_int_equal(f.types[t], e.type_ids[t]);
    }
    int na, nb;
    split_pair_row(tok, &f, 0, &na, &nb);
    assert_int_equal(na + nb + 3, e.n);

    /* 10 + 6 into 9: the longer loses first, then they alternate, b first on
     * a tie: (9,6) (8,6) (7,6) (6,6) (6,5) (5,5) (5,4). */
    split_pair_row(tok, &f, 1, &na, &nb);
    assert_int_equal(na, 5);
    assert_int_equal(nb, 4);
    /* The kept tokens are the texts' first ones. */
    encode(tok, a[1], &e);
    for (int t = 0; t < na; t++) assert_int_equal(f.ids[T + 1 + t], e.ids[t]);
    encode(tok, b[1], &e);
    for (int t = 0; t < nb; t++) assert_int_equal(f.ids[T + 2 + na + t], e.ids[t]);
    /* 6 + 6 into 9: (6,5) (5,5) (5,4), not (5,6) (5,5) (4,5). */
    split_pair_row(tok, &f, 2, &na, &nb);
    assert_int_equal(na, 5);
    assert_int_equal(nb, 4);
    posemb_features_free(&f);
    posemb_features_free(&f); /* freeing twice is harmless */

    /* STS-B: a score, no label. */
    float score[] = {0.5f, 4.0f, 5.0f};
    d.task = POSEMB_GLUE_STSB;
    d.label = NULL;
    d.score = score;
    d.n_classes = 0;
    assert_int_equal(posemb_glue_features(tok, &d, 64, &f, &err), POSEMB_OK);
    assert_null(f.label);
    assert_non_null(f.score);
    for (int i = 0; i < 3; i++) assert_true(f.score[i] == score[i]);
    split_pair_row(tok, &f, 1, &na, &nb);
    assert_int_equal(na, 10);
    assert_int_equal(nb, 6);
    posemb_features_free(&f);

    /* T too small. */
    assert_int_equal(posemb_glue_features(tok, &d, 3, &f, &err), POSEMB_EINVAL);
    assert_null(f.ids);
    posemb_encoding_free(&e);
    posemb_tokenizer_free(tok);
}

static void test_glue_single(void **state)
{
    (void)state;
    if (!tu_have_shared("GLUE single-text features")) return;
    posemb_tokenizer *tok = bert();
    posemb_error err;
    posemb_encoding e;
    posemb_encoding_init(&e);
    const char *a[] = {"one two three four five six seven eight nine ten", "Hi!"};
    int32_t label[] = {0, 1};
    posemb_glue_data d = {0};
    d.task = POSEMB_GLUE_SST2;
    d.n = 2;
    d.text_a = a;
    d.label = label;
    d.labeled = 1;
    d.n_classes = 2;
    posemb_features f;
    const int T = 6;
    assert_int_equal(posemb_glue_features(tok, &d, T, &f, &err), POSEMB_OK);
    int32_t cls = special(tok, POSEMB_SPECIAL_CLS), sep = special(tok, POSEMB_SPECIAL_SEP);
    int32_t pad = special(tok, POSEMB_SPECIAL_PAD);
    /* Cut to T - 2 = 4 tokens: [CLS] one two three four [SEP]. */
    encode(tok, a[0], &e);
    assert_int_equal(f.ids[0], cls);
    for (int t = 0; t < 4; t++) assert_int_equal(f.ids[1 + t], e.ids[t]);
    assert_int_equal(f.ids[5], sep);
    /* "Hi!" is 2 tokens: [CLS] hi ! [SEP] [PAD] [PAD], all type 0. */
    assert_int_equal(encode(tok, a[1], &e), 2);
    const int32_t want[] = {cls, e.ids[0], e.ids[1], sep, pad, pad};
    const float want_mask[] = {1, 1, 1, 1, 0, 0};
    for (int t = 0; t < T; t++) {
        assert_int_equal(f.ids[T + t], want[t]);
        assert_int_equal(f.types[T + t], 0);
        assert_true(f.mask[T + t] == want_mask[t]);
    }
    posemb_features_free(&f);
    posemb_encoding_free(&e);
    posemb_tokenizer_free(tok);
}

/* =============================================================== SQuAD */

/* Contexts are ASCII, so code points and bytes agree. The first question's
 * answer is near the end of a long context, the second's near its start,
 * the third's in a short context of its own. */
static const char *CTX0 =
    "Marlow was a small market town on the river Wend, and for three hundred years its people lived by the mill, "
    "the ferry and the weekly fair. The old bridge was built of grey stone in the year of the great flood, and the "
    "merchants who crossed it paid a toll of one penny to the keeper of the gate. In the summer the children swam "
    "below the weir, and in the winter the meadows froze into a single sheet of ice. Sailors who came up the river "
    "told of strange lands beyond the deep blue sea far to the west.";
static const char *CTX1 = "Zebras have black and white stripes that confuse biting flies.";

/* decoded: the answer as whole words of the context ("flies." keeps its
 * full stop, which the SQuAD metrics drop). */
typedef struct qa {
    const char *question, *answer, *decoded;
} qa;

static const qa QAS[] = {
    {"What lies beyond the lands?", "deep blue sea", "deep blue sea"},
    {"What was the name of the town?", "Marlow", "Marlow"},
    {"What do stripes confuse?", "biting flies", "biting flies."},
};

/* Writes a SQuAD file of two articles (QAS[0..1] on CTX0, QAS[2] on CTX1). */
static char *write_squad(const char *dir)
{
    const char *ctx[] = {CTX0, CTX0, CTX1};
    char *json = malloc(8192), *path = malloc(strlen(dir) + 16);
    assert_non_null(json);
    assert_non_null(path);
    int start[3];
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(ctx[i], QAS[i].answer);
        assert_non_null(at);
        start[i] = (int)(at - ctx[i]);
    }
    int w = snprintf(json, 8192,
                     "{\"version\": \"1.1\", \"data\": ["
                     "{\"title\": \"Town\", \"paragraphs\": [{\"context\": \"%s\", \"qas\": ["
                     "{\"id\": \"q0\", \"question\": \"%s\", \"answers\": [{\"text\": \"%s\", \"answer_start\": %d}]},"
                     "{\"id\": \"q1\", \"question\": \"%s\", \"answers\": [{\"text\": \"%s\", \"answer_start\": %d}]}"
                     "]}]},"
                     "{\"title\": \"Zebra\", \"paragraphs\": [{\"context\": \"%s\", \"qas\": ["
                     "{\"id\": \"q2\", \"question\": \"%s\", \"answers\": [{\"text\": \"%s\", \"answer_start\": %d}]}"
                     "]}]}]}",
                     CTX0, QAS[0].question, QAS[0].answer, start[0], QAS[1].question, QAS[1].answer, start[1], CTX1,
                     QAS[2].question, QAS[2].answer, start[2]);
    assert_true(w > 0 && w < 8192);
    sprintf(path, "%s/squad.json", dir);
    assert_int_equal(tu_write_file(path, json, (size_t)w), 0);
    free(json);
    return path;
}

/* The context's tokens as the features should have them: each
 * space-delimited word tokenized alone. Fills ids and the byte span of each
 * token's word; returns the count. */
static int context_tokens(const posemb_tokenizer *tok, const char *ctx, int32_t *ids, int32_t *ws, int32_t *we, int cap)
{
    posemb_encoding e;
    posemb_encoding_init(&e);
    int n = 0;
    char word[256];
    for (const char *s = ctx; *s;) {
        if (*s == ' ') {
            s++;
            continue;
        }
        const char *w = s;
        while (*s && *s != ' ') s++;
        assert_true(s - w < (long)sizeof word);
        memcpy(word, w, (size_t)(s - w));
        word[s - w] = '\0';
        encode(tok, word, &e);
        for (int i = 0; i < e.n; i++, n++) {
            assert_true(n < cap);
            ids[n] = e.ids[i];
            ws[n] = (int32_t)(w - ctx);
            we[n] = (int32_t)(s - ctx);
        }
    }
    posemb_encoding_free(&e);
    return n;
}

typedef struct squad_fixture {
    char *dir, *path;
    posemb_squad sq;
    posemb_tokenizer *tok;
} squad_fixture;

static int setup_squad(void **state)
{
    squad_fixture *fx = calloc(1, sizeof *fx);
    *state = fx;
    if (!tu_have_shared("SQuAD features")) return 0;
    fx->dir = tu_tmpdir();
    fx->path = write_squad(fx->dir);
    posemb_error err;
    if (posemb_squad_load(fx->path, &fx->sq, &err)) fail_msg("%s", err.msg);
    fx->tok = bert();
    return 0;
}

static int teardown_squad(void **state)
{
    squad_fixture *fx = *state;
    if (fx->tok) {
        posemb_tokenizer_free(fx->tok);
        posemb_squad_free(&fx->sq);
        tu_rmtree(fx->dir);
    }
    free(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

enum { SQ_T = 32, SQ_STRIDE = 8, SQ_MAXQ = 16, MAX_CTX = 512 };

/* Windows, their tokens, types, spans and labels, question by question. */
static void test_squad_windows(void **state)
{
    squad_fixture *fx = *state;
    if (!fx->tok) return;
    const posemb_tokenizer *tok = fx->tok;
    const int idx[] = {0, 1, 2};
    posemb_features f;
    posemb_error err;
    if (posemb_squad_features(tok, &fx->sq, idx, 3, SQ_T, SQ_STRIDE, SQ_MAXQ, &f, &err)) fail_msg("%s", err.msg);
    assert_int_equal(f.T, SQ_T);
    assert_null(f.label);
    assert_null(f.score);
    int32_t cls = special(tok, POSEMB_SPECIAL_CLS), sep = special(tok, POSEMB_SPECIAL_SEP);
    int32_t pad = special(tok, POSEMB_SPECIAL_PAD);
    posemb_encoding q;
    posemb_encoding_init(&q);
    int32_t cids[MAX_CTX], cws[MAX_CTX], cwe[MAX_CTX];
    int row = 0;
    for (int k = 0; k < 3; k++) {
        const posemb_squad_example *ex = &fx->sq.ex[idx[k]];
        int nq = encode(tok, ex->question, &q);
        assert_true(nq <= SQ_MAXQ);
        int nc = context_tokens(tok, ex->context, cids, cws, cwe, MAX_CTX);
        int L = SQ_T - 3 - nq, step = L - SQ_STRIDE;
        int nw = nc <= L ? 1 : 1 + (nc - L + step - 1) / step;
        if (k == 0) assert_true(nw >= 4); /* the long context takes several windows */
        if (k == 2) assert_int_equal(nw, 1);
        /* The answer's tokens: those of the words it touches, narrowed to
         * the answer's own tokens (HF's _improve_answer_span). */
        const posemb_squad_answer *ans = &ex->answers[0];
        int as = -1, ae = -1;
        for (int i = 0; i < nc; i++) {
            if (cws[i] < ans->end && cwe[i] > ans->start) {
                if (as < 0) as = i;
                ae = i;
            }
        }
        assert_true(as >= 0);
        posemb_encoding at;
        posemb_encoding_init(&at);
        int m = encode(tok, ans->text, &at);
        assert_memory_equal(cids + as, at.ids, (size_t)m * sizeof *at.ids); /* the run starts at the first word */
        posemb_encoding_free(&at);
        if (k == 2) assert_int_equal(ae - as + 1, m + 1); /* "biting flies ." loses its "." */
        ae = as + m - 1;
        size_t dl = strlen(QAS[k].decoded);
        assert_int_equal(cwe[ae] - cws[as], (int)dl);
        assert_memory_equal(ex->context + cws[as], QAS[k].decoded, dl);
        int labelled = 0, missed = 0;
        for (int j = 0; j < nw; j++, row++) {
            assert_true(row < f.n);
            assert_int_equal(f.example[row], k);
            const int32_t *ids = f.ids + (size_t)row * SQ_T, *types = f.types + (size_t)row * SQ_T;
            const int32_t *ts = f.tok_start + (size_t)row * SQ_T, *te = f.tok_end + (size_t)row * SQ_T;
            const float *mask = f.mask + (size_t)row * SQ_T;
            int w0 = j * step, len = nc - w0 < L ? nc - w0 : L;
            assert_true(len > 0);
            if (j + 1 < nw) assert_int_equal(len, L);
            if (j + 1 == nw) assert_int_equal(w0 + len, nc); /* the last window reaches the end */
            int first = nq + 2, last = first + len;          /* last: the final [SEP] */
            assert_int_equal(ids[0], cls);
            for (int t = 0; t < nq; t++) assert_int_equal(ids[1 + t], q.ids[t]);
            assert_int_equal(ids[nq + 1], sep);
            assert_int_equal(ids[last], sep);
            for (int t = 0; t < SQ_T; t++) {
                int ctx = t >= first && t < last;
                if (ctx) {
                    assert_int_equal(ids[t], cids[w0 + t - first]);
                    assert_int_equal(ts[t], cws[w0 + t - first]);
                    assert_int_equal(te[t], cwe[w0 + t - first]);
                } else {
                    assert_int_equal(ts[t], -1);
                    assert_int_equal(te[t], -1);
                }
                if (t > last) assert_int_equal(ids[t], pad);
                assert_int_equal(types[t], t < first ? 0 : t <= last ? 1 : 0);
                assert_true(mask[t] == (t <= last ? 1.0f : 0.0f));
            }
            if (as >= w0 && ae < w0 + len) {
                /* Labelled with the answer's tokens, whose words are the answer. */
                labelled++;
                assert_int_equal(f.starts[row], first + as - w0);
                assert_int_equal(f.ends[row], first + ae - w0);
                assert_int_equal(ts[f.starts[row]], ans->start);
                assert_int_equal(te[f.ends[row]], ans->start + (int)dl);
            } else {
                missed++;
                assert_int_equal(f.starts[row], 0);
                assert_int_equal(f.ends[row], 0);
            }
        }
        assert_true(labelled >= 1);
        if (k == 0) assert_true(missed >= 1); /* the first windows miss an answer at the end */
    }
    assert_int_equal(row, f.n);
    posemb_encoding_free(&q);
    posemb_features_free(&f);
}

/* Logits of one row: start and end at the given positions (others 0). */
static void set_logits(float *lg, int T, int row, int s, float vs, int e, float ve)
{
    lg[((size_t)row * T + s) * 2] = vs;
    lg[((size_t)row * T + e) * 2 + 1] = ve;
}

static void test_squad_decode(void **state)
{
    squad_fixture *fx = *state;
    if (!fx->tok) return;
    const int idx[] = {0, 1, 2};
    posemb_features f;
    posemb_error err;
    if (posemb_squad_features(fx->tok, &fx->sq, idx, 3, SQ_T, SQ_STRIDE, SQ_MAXQ, &f, &err)) fail_msg("%s", err.msg);
    float *lg = calloc((size_t)f.n * SQ_T * 2, sizeof *lg);
    assert_non_null(lg);
    /* Each question: its last labelled window gets start and end at the
     * label; [CLS] and the question's first token get more, and must lose. */
    int lab[3] = {-1, -1, -1};
    for (int r = 0; r < f.n; r++)
        if (f.starts[r] > 0) lab[f.example[r]] = r;
    for (int k = 0; k < 3; k++) {
        int r = lab[k];
        assert_true(r >= 0);
        set_logits(lg, SQ_T, r, f.starts[r], 10.0f, f.ends[r], 10.0f);
        set_logits(lg, SQ_T, r, 0, 100.0f, 0, 100.0f);
        set_logits(lg, SQ_T, r, 1, 100.0f, 1, 100.0f);
    }
    char **ans = NULL;
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 30, &ans, &err), POSEMB_OK);
    for (int k = 0; k < 3; k++) assert_string_equal(ans[k], QAS[k].decoded);
    posemb_squad_answers_free(ans, 3);

    /* "deep blue sea" is 3 tokens: with max_answer = 2 the best spans score
     * 10 (start or end alone), the first of them being the word "deep". */
    int r = lab[0];
    assert_int_equal(f.ends[r] - f.starts[r] + 1, 3);
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 2, &ans, &err), POSEMB_OK);
    assert_string_equal(ans[0], "deep");
    assert_string_equal(ans[1], QAS[1].decoded);
    posemb_squad_answers_free(ans, 3);
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 1, &ans, &err), POSEMB_OK);
    assert_string_equal(ans[0], "deep");
    assert_string_equal(ans[1], QAS[1].decoded); /* one token long */
    posemb_squad_answers_free(ans, 3);

    /* All logits equal: the first context token of each question's first row. */
    memset(lg, 0, (size_t)f.n * SQ_T * 2 * sizeof *lg);
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 30, &ans, &err), POSEMB_OK);
    assert_string_equal(ans[0], "Marlow");
    assert_string_equal(ans[1], "Marlow");
    assert_string_equal(ans[2], "Zebras");
    posemb_squad_answers_free(ans, 3);

    /* Bad arguments: max_answer, and rows of questions not given. */
    ans = (char **)lg; /* anything: a failed call sets it to NULL */
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 0, &ans, &err), POSEMB_EINVAL);
    assert_null(ans);
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 2, &f, lg, 30, &ans, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "question 2"));
    posemb_features glue = {0};
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &glue, lg, 30, &ans, &err), POSEMB_EINVAL);
    free(lg);
    posemb_features_free(&f);
}

static void test_squad_bad_args(void **state)
{
    squad_fixture *fx = *state;
    if (!fx->tok) return;
    const posemb_tokenizer *tok = fx->tok;
    const posemb_squad *sq = &fx->sq;
    const int idx[] = {0, 1, 2}, bad[] = {0, 3}, neg[] = {-1};
    posemb_features f;
    posemb_error err;
    /* T = 32, max_query = 16: windows of at least 32 - 3 - 16 = 13 tokens. */
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 32, 13, 16, &f, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "stride"));
    assert_null(f.ids);
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 32, -1, 16, &f, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 19, 0, 16, &f, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "T = 19"));
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 3, 0, 1, &f, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 32, 0, 0, &f, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_squad_features(tok, sq, bad, 2, 32, 8, 16, &f, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "idx[1] = 3"));
    assert_int_equal(posemb_squad_features(tok, sq, neg, 1, 32, 8, 16, &f, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_squad_features(tok, sq, idx, 0, 32, 8, 16, &f, &err), POSEMB_EINVAL);
    assert_null(f.ids);

    /* The tightest legal shape: T = max_query + 4. With no overlap every
     * context token is in exactly one window. */
    assert_int_equal(posemb_squad_features(tok, sq, idx, 3, 20, 0, 16, &f, &err), POSEMB_OK);
    int nc = 0;
    for (int r = 0; r < f.n; r++)
        for (int t = 0; t < f.T; t++) nc += f.tok_start[(size_t)r * f.T + t] >= 0;
    int32_t ids[MAX_CTX], ws[MAX_CTX], we[MAX_CTX];
    int want = 0;
    for (int k = 0; k < 3; k++) want += context_tokens(tok, sq->ex[k].context, ids, ws, we, MAX_CTX);
    assert_int_equal(nc, want);
    posemb_features_free(&f);
    posemb_features_free(&f); /* freeing twice, or a zeroed struct, is harmless */
    posemb_features zero = {0};
    posemb_features_free(&zero);

    /* GPT-2's tokenizer has no [CLS], [SEP] or [PAD]. */
    posemb_tokenizer *gpt2 = NULL;
    if (posemb_tokenizer_load_bpe(GPT2_ENCODER, GPT2_MERGES, &gpt2, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_squad_features(gpt2, sq, idx, 3, 32, 8, 16, &f, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "[CLS]"));
    posemb_tokenizer_free(gpt2);
}

/* The locate task: every question is its first answer's text, so each
 * labelled window's answer span holds the question's own tokens. */
static void test_squad_locate(void **state)
{
    squad_fixture *fx = *state;
    if (!fx->tok) return;
    posemb_squad_ask_answers(&fx->sq);
    const int idx[] = {0, 1, 2};
    for (int k = 0; k < fx->sq.n; k++) assert_string_equal(fx->sq.ex[k].question, fx->sq.ex[k].answers[0].text);
    posemb_features f;
    posemb_error err;
    if (posemb_squad_features(fx->tok, &fx->sq, idx, 3, SQ_T, SQ_STRIDE, SQ_MAXQ, &f, &err)) fail_msg("%s", err.msg);
    posemb_encoding a;
    posemb_encoding_init(&a);
    int labelled = 0;
    for (int r = 0; r < f.n; r++) {
        const int32_t *ids = f.ids + (size_t)r * SQ_T;
        int na = encode(fx->tok, fx->sq.ex[idx[f.example[r]]].answers[0].text, &a);
        assert_true(na >= 1 && na <= SQ_MAXQ);
        assert_memory_equal(ids + 1, a.ids, (size_t)na * sizeof *ids); /* [CLS] answer [SEP] ... */
        if (f.starts[r] == 0) continue;
        labelled++;
        assert_int_equal(f.ends[r] - f.starts[r] + 1, na);
        assert_memory_equal(ids + f.starts[r], a.ids, (size_t)na * sizeof *ids);
    }
    assert_true(labelled >= 3); /* every question's answer is in one of its windows */
    /* The token-match reference: 1 exactly on the context tokens that are
     * among the answer's, so the decoder answers the word of the first of
     * them, found here by a scan of the rows in order. */
    float *lg = malloc((size_t)f.n * SQ_T * 2 * sizeof *lg);
    assert_non_null(lg);
    assert_int_equal(posemb_squad_match_logits(&f, lg, &err), POSEMB_OK);
    int first[3][2] = {{-1, 0}, {-1, 0}, {-1, 0}}; /* row, token */
    for (int r = 0; r < f.n; r++) {
        int k = f.example[r], na = encode(fx->tok, fx->sq.ex[idx[k]].answers[0].text, &a);
        for (int t = 0; t < SQ_T; t++) {
            size_t i = (size_t)r * SQ_T + t;
            int in = 0;
            for (int j = 0; j < na; j++) in |= f.tok_start[i] >= 0 && a.ids[j] == f.ids[i];
            assert_true(lg[i * 2] == (float)in && lg[i * 2 + 1] == (float)in);
            if (in && first[k][0] < 0) {
                first[k][0] = r;
                first[k][1] = t;
            }
        }
    }
    char **ans;
    assert_int_equal(posemb_squad_decode(&fx->sq, idx, 3, &f, lg, 30, &ans, &err), POSEMB_OK);
    for (int k = 0; k < 3; k++) {
        assert_true(first[k][0] >= 0);
        size_t i = (size_t)first[k][0] * SQ_T + first[k][1];
        const char *ctx = fx->sq.ex[idx[k]].context;
        printf("match %d: '%s'\n", k, ans[k]);
        assert_int_equal(strlen(ans[k]), f.tok_end[i] - f.tok_start[i]);
        assert_memory_equal(ans[k], ctx + f.tok_start[i], strlen(ans[k]));
    }
    posemb_squad_answers_free(ans, 3);
    posemb_features glue = {0};
    assert_int_equal(posemb_squad_match_logits(&glue, lg, &err), POSEMB_EINVAL);
    free(lg);
    posemb_encoding_free(&a);
    posemb_features_free(&f);
}

/* ===================================================== the real dev set */

static void test_squad_oracle(void **state)
{
    (void)state;
    if (!tu_have_shared("SQuAD oracle")) return;
    posemb_squad sq;
    posemb_error err;
    if (posemb_squad_load(SQUAD_DEV, &sq, &err)) fail_msg("%s", err.msg);
    int *idx = malloc((size_t)sq.n * sizeof *idx);
    assert_non_null(idx);
    int n = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, idx);
    assert_int_equal(n, 1975);
    posemb_tokenizer *tok = bert();
    posemb_features f;
    if (posemb_squad_features(tok, &sq, idx, n, 128, 32, 32, &f, &err)) fail_msg("%s", err.msg);
    assert_true(f.n >= n);
    /* One-hot logits at the labels of every labelled row. */
    float *lg = calloc((size_t)f.n * 128 * 2, sizeof *lg);
    assert_non_null(lg);
    int labelled = 0;
    for (int r = 0; r < f.n; r++) {
        if (f.starts[r] == 0) continue;
        labelled++;
        set_logits(lg, 128, r, f.starts[r], 1.0f, f.ends[r], 1.0f);
    }
    char **ans = NULL;
    assert_int_equal(posemb_squad_decode(&sq, idx, n, &f, lg, 128, &ans, &err), POSEMB_OK);
    double em, f1;
    assert_int_equal(posemb_squad_evaluate(&sq, idx, n, (const char *const *)ans, &em, &f1, &err), POSEMB_OK);
    printf("SQuAD eval split, T=128 stride 32 max_query 32: %d questions, %d rows (%d labelled); oracle EM %.2f F1 "
           "%.2f\n",
           n, f.n, labelled, em, f1);
    assert_true(em >= 85.0);
    assert_true(f1 >= 95.0);
    posemb_squad_answers_free(ans, n);
    free(lg);
    posemb_features_free(&f);
    posemb_tokenizer_free(tok);
    free(idx);
    posemb_squad_free(&sq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glue_pair),
        cmocka_unit_test(test_glue_single),
        cmocka_unit_test_setup_teardown(test_squad_windows, setup_squad, teardown_squad),
        cmocka_unit_test_setup_teardown(test_squad_decode, setup_squad, teardown_squad),
        cmocka_unit_test_setup_teardown(test_squad_bad_args, setup_squad, teardown_squad),
        cmocka_unit_test_setup_teardown(test_squad_locate, setup_squad, teardown_squad),
        cmocka_unit_test(test_squad_oracle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
