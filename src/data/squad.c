/* SQuAD v1.1 reader, its fixed split, the official evaluation, and the
 * character-span to token-span mapping (see posemb/datasets.h). */
#include "data/datasets.h"
#include "core/fileio.h"
#include "eval/squad_eval.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* dev-v1.1.json is 4.9 MB and train-v1.1.json 30 MB. */
#define SQUAD_MAX_BYTES ((size_t)1 << 30)

static const cJSON *get(const cJSON *obj, const char *key) { return cJSON_GetObjectItemCaseSensitive(obj, key); }

/* A string shown in an error message: at most 40 bytes, control bytes escaped. */

/* ============================================================== UTF-8 */

/* The number of code points of s[0..len), or -1 when it is not valid UTF-8
 * (overlongs and surrogates are invalid, as utf8proc checks). */
static long count_code_points(const char *s, size_t len)
{
    long n = 0;
    for (size_t i = 0; i < len; n++) {
        utf8proc_int32_t c;
        utf8proc_ssize_t used = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &c);
        if (used <= 0) return -1;
        i += (size_t)used;
    }
    return n;
}

/* The byte offset of code point `cp` in valid UTF-8 s (cp <= its count). */
static size_t byte_of_code_point(const char *s, long cp)
{
    size_t i = 0;
    for (long k = 0; k < cp; k++) {
        i++;
        while (((unsigned char)s[i] & 0xc0) == 0x80) i++; /* continuation bytes */
    }
    return i;
}

/* ======================================================== shape (pass 1) */

typedef struct counts {
    int articles, paragraphs, questions, answers;
} counts;

static posemb_status check_answer(const cJSON *ans, const char *path, const char *qid, int k, posemb_error *err)
{
    const cJSON *text = get(ans, "text"), *start = get(ans, "answer_start");
    if (!cJSON_IsObject(ans) || !cJSON_IsString(text))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s: answer %d has no string \"text\"", path, qid, k);
    if (!text->valuestring[0])
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s: answer %d is empty", path, qid, k);
    double v = cJSON_IsNumber(start) ? start->valuedouble : -1;
    if (!(v >= 0 && v <= INT32_MAX && v == floor(v)))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s: answer %d: \"answer_start\" must be an integer >= 0",
                           path, qid, k);
    return POSEMB_OK;
}

static posemb_status check_question(const cJSON *qa, const char *path, int a, int p, int q, counts *c,
                                    posemb_error *err)
{
    const cJSON *id = get(qa, "id");
    if (!cJSON_IsObject(qa) || !cJSON_IsString(id))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: article %d paragraph %d question %d has no string \"id\"", path, a,
                           p, q);
    const char *qid = id->valuestring;
    if (!cJSON_IsString(get(qa, "question")))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s has no string \"question\"", path, qid);
    const cJSON *answers = get(qa, "answers");
    if (!cJSON_IsArray(answers) || cJSON_GetArraySize(answers) == 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s has no answers (\"answers\" must be a non-empty list)",
                           path, qid);
    int k = 0;
    for (const cJSON *ans = answers->child; ans; ans = ans->next, k++) {
        posemb_status st = check_answer(ans, path, qid, k, err);
        if (st) return st;
    }
    c->answers += k;
    c->questions++;
    return POSEMB_OK;
}

static posemb_status check_paragraph(const cJSON *par, const char *path, int a, int p, counts *c, posemb_error *err)
{
    const cJSON *qas = get(par, "qas");
    if (!cJSON_IsObject(par) || !cJSON_IsString(get(par, "context")) || !cJSON_IsArray(qas))
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: article %d paragraph %d needs a string \"context\" and a list \"qas\"", path, a, p);
    int q = 0;
    for (const cJSON *qa = qas->child; qa; qa = qa->next, q++) {
        posemb_status st = check_question(qa, path, a, p, q, c, err);
        if (st) return st;
    }
    c->paragraphs++;
    return POSEMB_OK;
}

static posemb_status check_shape(const cJSON *root, const char *path, counts *c, posemb_error *err)
{
    memset(c, 0, sizeof *c);
    const cJSON *data = get(root, "data");
    if (!cJSON_IsObject(root) || !cJSON_IsArray(data) || cJSON_GetArraySize(data) == 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: expected an object whose \"data\" is a non-empty list of articles",
                           path);
    for (const cJSON *art = data->child; art; art = art->next, c->articles++) {
        const cJSON *pars = get(art, "paragraphs");
        if (!cJSON_IsObject(art) || !cJSON_IsString(get(art, "title")) || !cJSON_IsArray(pars))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: article %d needs a string \"title\" and a list \"paragraphs\"",
                               path, c->articles);
        int p = 0;
        for (const cJSON *par = pars->child; par; par = par->next, p++) {
            posemb_status st = check_paragraph(par, path, c->articles, p, c, err);
            if (st) return st;
        }
    }
    if (c->questions == 0) return posemb_fail(err, POSEMB_EFORMAT, "%s: no questions", path);
    return POSEMB_OK;
}

/* ============================================ alignment and fill (pass 2) */

/* Places one answer in its context: code points to bytes, and the check
 * context[answer_start : answer_start + len(text)] == text. */
static posemb_status align_answer(const cJSON *ans, const posemb_squad_example *e, int k, const char *path,
                                  posemb_squad_answer *out, posemb_error *err)
{
    const char *text = get(ans, "text")->valuestring;
    long cp_start = (long)get(ans, "answer_start")->valuedouble;
    size_t text_len = strlen(text);
    long text_cps = count_code_points(text, text_len);
    if (text_cps < 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: question %s: answer %d is not valid UTF-8", path, e->id, k);
    if (cp_start + text_cps > e->context_cps)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: question %s: answer %d (characters %ld..%ld) lies outside the context (%d characters)",
                           path, e->id, k, cp_start, cp_start + text_cps, (int)e->context_cps);
    size_t start = byte_of_code_point(e->context, cp_start);
    size_t end = start + byte_of_code_point(e->context + start, text_cps);
    if (end - start != text_len || memcmp(e->context + start, text, text_len) != 0) {
        char want[128], got[128];
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: question %s: answer %d \"%s\" does not match the context at character %ld (\"%s\")",
                           path, e->id, k, posemb_snippet(text, text_len, want, sizeof want), cp_start,
                           posemb_snippet(e->context + start, end - start, got, sizeof got));
    }
    *out = (posemb_squad_answer){.text = text,
                                 .start = (int32_t)start,
                                 .end = (int32_t)end,
                                 .cp_start = (int32_t)cp_start,
                                 .cp_end = (int32_t)(cp_start + text_cps)};
    return POSEMB_OK;
}

/* Fill state: where the next example and answer go. */
typedef struct filler {
    posemb_squad *sq;
    int article, paragraph;
    const char *title;
    int next_answer;
} filler;

static posemb_status fill_question(filler *f, const cJSON *qa, const char *context, long context_cps, const char *path,
                                   posemb_error *err)
{
    posemb_squad *sq = f->sq;
    posemb_squad_example *e = &sq->ex[sq->n];
    *e = (posemb_squad_example){.id = get(qa, "id")->valuestring,
                                .question = get(qa, "question")->valuestring,
                                .context = context,
                                .title = f->title,
                                .article = f->article,
                                .paragraph = f->paragraph,
                                .context_len = (int32_t)strlen(context),
                                .context_cps = (int32_t)context_cps,
                                .answers = sq->answers_ + f->next_answer};
    int k = 0;
    for (const cJSON *ans = get(qa, "answers")->child; ans; ans = ans->next, k++) {
        posemb_status st = align_answer(ans, e, k, path, &sq->answers_[f->next_answer + k], err);
        if (st) return st;
    }
    e->n_answers = k;
    f->next_answer += k;
    sq->n++;
    return POSEMB_OK;
}

static posemb_status fill_paragraph(filler *f, const cJSON *par, const char *path, posemb_error *err)
{
    const char *context = get(par, "context")->valuestring;
    size_t len = strlen(context);
    long cps = count_code_points(context, len);
    if (cps < 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: article %d (\"%s\"): context of paragraph %d is not valid UTF-8",
                           path, f->article, f->title, f->paragraph);
    if (len > INT32_MAX / 2)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: paragraph %d: context longer than 1 GiB", path, f->paragraph);
    for (const cJSON *qa = get(par, "qas")->child; qa; qa = qa->next) {
        posemb_status st = fill_question(f, qa, context, cps, path, err);
        if (st) return st;
    }
    return POSEMB_OK;
}

static posemb_status fill(posemb_squad *sq, const cJSON *root, const char *path, posemb_error *err)
{
    filler f = {sq, 0, 0, NULL, 0};
    for (const cJSON *art = get(root, "data")->child; art; art = art->next, f.article++) {
        f.title = get(art, "title")->valuestring;
        sq->titles[f.article] = f.title;
        for (const cJSON *par = get(art, "paragraphs")->child; par; par = par->next, f.paragraph++) {
            posemb_status st = fill_paragraph(&f, par, path, err);
            if (st) return st;
        }
    }
    return POSEMB_OK;
}

static int cmp_id(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The official script keys predictions by id: two questions may not share one. */
static posemb_status check_unique_ids(const posemb_squad *sq, const char *path, posemb_error *err)
{
    const char **ids = malloc((size_t)sq->n * sizeof *ids);
    if (!ids) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < sq->n; i++) ids[i] = sq->ex[i].id;
    qsort(ids, (size_t)sq->n, sizeof *ids, cmp_id);
    posemb_status st = POSEMB_OK;
    for (int i = 1; i < sq->n && !st; i++)
        if (strcmp(ids[i - 1], ids[i]) == 0)
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: question id %s appears twice", path, ids[i]);
    free(ids);
    return st;
}

/* Parses the text; on a syntax error names the line and byte where cJSON stopped. */
static posemb_status parse_json(const char *text, size_t len, const char *path, cJSON **root, posemb_error *err)
{
    if (len == 0) return posemb_fail(err, POSEMB_EFORMAT, "%s: empty file", path);
    const char *stop = NULL;
    *root = cJSON_ParseWithLengthOpts(text, len, &stop, 0);
    if (*root) return POSEMB_OK;
    size_t at = (stop && stop >= text && stop <= text + len) ? (size_t)(stop - text) : 0;
    long line = 1;
    for (size_t i = 0; i < at; i++) line += text[i] == '\n';
    return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: not valid JSON (parsing stopped at byte %zu)", path, line, at);
}

posemb_status posemb_squad_load(const char *path, posemb_squad *out, posemb_error *err)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    posemb_status st = posemb_read_data_file(path, SQUAD_MAX_BYTES, &text, &len, err);
    if (st) return st;
    cJSON *root = NULL;
    st = parse_json(text, len, path, &root, err);
    free(text);
    if (st) return st;
    out->json_ = root;
    counts c;
    st = check_shape(root, path, &c, err);
    if (!st) {
        out->ex = malloc((size_t)c.questions * sizeof *out->ex);
        out->answers_ = malloc((size_t)c.answers * sizeof *out->answers_);
        out->titles = malloc((size_t)c.articles * sizeof *out->titles);
        if (!out->ex || !out->answers_ || !out->titles) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    }
    if (!st) {
        out->n_articles = c.articles;
        out->n_paragraphs = c.paragraphs;
        st = fill(out, root, path, err);
    }
    if (!st) st = check_unique_ids(out, path, err);
    if (st) posemb_squad_free(out);
    return st;
}

void posemb_squad_free(posemb_squad *sq)
{
    free(sq->ex);
    free(sq->answers_);
    free(sq->titles);
    cJSON_Delete(sq->json_);
    memset(sq, 0, sizeof *sq);
}

void posemb_squad_ask_answers(posemb_squad *sq)
{
    for (int k = 0; k < sq->n; k++) sq->ex[k].question = sq->ex[k].answers[0].text;
}

/* =============================================================== split */

posemb_squad_part posemb_squad_article_part(int article)
{
    return article % POSEMB_SQUAD_EVAL_EVERY == POSEMB_SQUAD_EVAL_EVERY - 1 ? POSEMB_SQUAD_EVAL : POSEMB_SQUAD_TRAIN;
}

int posemb_squad_split(const posemb_squad *sq, posemb_squad_part part, int *idx)
{
    int n = 0;
    for (int i = 0; i < sq->n; i++)
        if (posemb_squad_article_part(sq->ex[i].article) == part) idx[n++] = i;
    return n;
}

/* ========================================================== evaluation */

posemb_status posemb_squad_evaluate(const posemb_squad *sq, const int *idx, int n, const char *const *predictions,
                                    double *exact_match, double *f1, posemb_error *err)
{
    *exact_match = *f1 = NAN;
    if (n < 1 || (!idx && n != sq->n))
        return posemb_fail(err, POSEMB_EINVAL, "SQuAD evaluation of %d questions (the set has %d)", n, sq->n);
    int most_answers = 1;
    for (int i = 0; i < sq->n; i++)
        if (sq->ex[i].n_answers > most_answers) most_answers = sq->ex[i].n_answers;
    const char **golds = malloc((size_t)most_answers * sizeof *golds);
    if (!golds) return posemb_fail(err, POSEMB_ENOMEM, "SQuAD evaluation: out of memory");
    double em_sum = 0, f1_sum = 0;
    posemb_status st = POSEMB_OK;
    for (int k = 0; k < n && !st; k++) {
        int i = idx ? idx[k] : k;
        if (i < 0 || i >= sq->n) {
            st = posemb_fail(err, POSEMB_EINVAL, "SQuAD evaluation: question index %d outside [0, %d)", i, sq->n);
            break;
        }
        if (!predictions[k]) continue; /* unanswered: 0, as the official script */
        const posemb_squad_example *e = &sq->ex[i];
        for (int g = 0; g < e->n_answers; g++) golds[g] = e->answers[g].text;
        double em = posemb_squad_exact_match(predictions[k], golds, e->n_answers);
        double f = posemb_squad_f1(predictions[k], golds, e->n_answers);
        if (isnan(em) || isnan(f)) st = posemb_fail(err, POSEMB_ENOMEM, "SQuAD evaluation: out of memory");
        em_sum += em;
        f1_sum += f;
    }
    free(golds);
    if (st) return st;
    *exact_match = 100.0 * em_sum / n;
    *f1 = 100.0 * f1_sum / n;
    return POSEMB_OK;
}

/* =============================================================== spans */

int posemb_char_span_to_tokens(const int32_t *tok_start, const int32_t *tok_end, int n_tok, int char_start,
                               int char_end, int *tok_s, int *tok_e)
{
    if (char_start >= char_end || n_tok <= 0) return -1;
    int first = -1, last = -1;
    int32_t lo = INT32_MAX, hi = INT32_MIN; /* the extent of the real (non-empty) tokens */
    for (int i = 0; i < n_tok; i++) {
        if (tok_end[i] <= tok_start[i]) continue;
        if (tok_start[i] < lo) lo = tok_start[i];
        if (tok_end[i] > hi) hi = tok_end[i];
        if (tok_start[i] < char_end && tok_end[i] > char_start) {
            if (first < 0) first = i;
            last = i;
        }
    }
    if (first < 0 || char_start < lo || char_end > hi) return -1;
    *tok_s = first;
    *tok_e = last;
    return 0;
}
