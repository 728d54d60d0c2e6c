/* GLUE and SQuAD readers: the real files of ../shared/data (counts from
 * ../shared/data/SOURCES.md), malformed files written here, the SQuAD split,
 * the official SQuAD evaluation and the char-span to token-span mapping. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/datasets.h"
#include "eval/squad_eval.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof(a)[0]))

static const char *GLUE_DIR = POSEMB_SHARED "/data/glue";
static const char *SQUAD_DEV = POSEMB_SHARED "/data/squad/dev-v1.1.json";

/* ------------------------------------------------------------ helpers */

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Writes text to dir/name; returns the path (malloc'ed). */
static char *write_text(const char *dir, const char *name, const char *text)
{
    char *p = path_in(dir, name);
    assert_int_equal(tu_write_file(p, text, strlen(text)), 0);
    return p;
}

/* The call failed with code, and its message is one line naming path and
 * saying what (needle). */
static void expect_error(posemb_status st, const posemb_error *err, posemb_status code, const char *path,
                         const char *needle)
{
    if (st != code || !strstr(err->msg, path) || !strstr(err->msg, needle) || strchr(err->msg, '\n'))
        print_error("status %d (want %d), message \"%s\" (want \"%s\" and \"%s\")\n", (int)st, (int)code, err->msg,
                    path, needle);
    assert_int_equal(st, code);
    assert_non_null(strstr(err->msg, path));
    assert_non_null(strstr(err->msg, needle));
    assert_null(strchr(err->msg, '\n'));
}

static int setup_tmp(void **state)
{
    *state = tu_tmpdir();
    return 0;
}

static int teardown_tmp(void **state)
{
    tu_rmtree(*state);
    free(*state);
    return 0;
}

/* ================================================================ GLUE */

typedef struct glue_count {
    posemb_glue_task task;
    const char *split;
    int n;
    int n0, n1; /* label 0 / label 1 counts (entailment is 0 for RTE and QNLI); -1: none */
} glue_count;

/* ../shared/data/SOURCES.md, section 2. */
static const glue_count GLUE_COUNTS[] = {
    {POSEMB_GLUE_COLA, "train", 8551, 2528, 6023}, {POSEMB_GLUE_COLA, "dev", 1043, 322, 721},
    {POSEMB_GLUE_COLA, "test", 1063, -1, -1},      {POSEMB_GLUE_SST2, "train", 67349, 29780, 37569},
    {POSEMB_GLUE_SST2, "dev", 872, 428, 444},      {POSEMB_GLUE_SST2, "test", 1821, -1, -1},
    {POSEMB_GLUE_MRPC, "train", 3668, 1194, 2474}, {POSEMB_GLUE_MRPC, "dev", 408, 129, 279},
    {POSEMB_GLUE_MRPC, "test", 1725, -1, -1},      {POSEMB_GLUE_STSB, "train", 5749, -1, -1},
    {POSEMB_GLUE_STSB, "dev", 1500, -1, -1},       {POSEMB_GLUE_STSB, "test", 1379, -1, -1},
    {POSEMB_GLUE_RTE, "train", 2490, 1249, 1241},  {POSEMB_GLUE_RTE, "dev", 277, 146, 131},
    {POSEMB_GLUE_RTE, "test", 3000, -1, -1},       {POSEMB_GLUE_QNLI, "dev", 5463, 2702, 2761},
    {POSEMB_GLUE_WNLI, "train", 635, 323, 312},    {POSEMB_GLUE_WNLI, "dev", 71, 40, 31},
    {POSEMB_GLUE_WNLI, "test", 146, -1, -1},
};

static void check_glue_file(const glue_count *c)
{
    posemb_glue_data d;
    posemb_error err;
    posemb_status st = posemb_glue_load(GLUE_DIR, c->task, c->split, &d, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, POSEMB_OK);
    const posemb_glue_info *info = posemb_glue_task_info(c->task);
    if (d.n != c->n) print_error("%s/%s: %d examples, expected %d\n", info->name, c->split, d.n, c->n);
    assert_int_equal(d.n, c->n);
    assert_int_equal(d.labeled, strcmp(c->split, "test") != 0);
    assert_int_equal(d.text_b != NULL, info->pair);
    int count[2] = {0, 0};
    for (int i = 0; i < d.n; i++) {
        assert_non_null(d.text_a[i]);
        if (d.label) count[d.label[i]]++;
        if (d.score) assert_true(d.score[i] >= 0 && d.score[i] <= 5);
    }
    if (c->n0 >= 0) {
        assert_non_null(d.label);
        assert_int_equal(count[0], c->n0);
        assert_int_equal(count[1], c->n1);
    }
    if (c->task == POSEMB_GLUE_STSB) assert_int_equal(d.score != NULL, d.labeled);
    posemb_glue_free(&d);
}

static void test_glue_counts(void **state)
{
    (void)state;
    if (!tu_have_shared("GLUE counts")) return;
    for (int i = 0; i < N_OF(GLUE_COUNTS); i++) check_glue_file(&GLUE_COUNTS[i]);
}

static void test_glue_contents(void **state)
{
    (void)state;
    if (!tu_have_shared("GLUE contents")) return;
    posemb_glue_data d;
    posemb_error err;
    /* CoLA dev: no header, and no final newline (its last line still counts) */
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_COLA, "dev", &d, &err), POSEMB_OK);
    assert_string_equal(d.text_a[0], "The sailors rode the breeze clear of the rocks.");
    assert_int_equal(d.label[0], 1);
    assert_string_equal(d.text_a[d.n - 1], "John talked to Bill about himself.");
    assert_int_equal(d.n_metrics, 1);
    assert_int_equal(d.metrics[0], POSEMB_METRIC_MCC);
    posemb_glue_free(&d);
    /* MRPC dev: the header's BOM is dropped; quotes are text */
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_MRPC, "dev", &d, &err), POSEMB_OK);
    assert_int_equal(d.label[0], 1);
    assert_true(strncmp(d.text_a[0], "He said the foodservice pie business doesn 't fit", 49) == 0);
    assert_true(strncmp(d.text_b[0], "\" The foodservice pie business does not fit", 43) == 0);
    assert_int_equal(d.n_metrics, 2);
    assert_int_equal(d.metrics[0], POSEMB_METRIC_F1);
    assert_int_equal(d.metrics[1], POSEMB_METRIC_ACCURACY);
    posemb_glue_free(&d);
    /* SST-2 dev: the sentence keeps its trailing space */
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_SST2, "dev", &d, &err), POSEMB_OK);
    assert_string_equal(d.text_a[0], "it 's a charming and often affecting journey . ");
    assert_null(d.text_b);
    posemb_glue_free(&d);
    /* STS-B dev: the score column */
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_STSB, "dev", &d, &err), POSEMB_OK);
    assert_string_equal(d.text_a[0], "A man with a hard hat is dancing.");
    assert_string_equal(d.text_b[0], "A man wearing a hard hat is dancing.");
    assert_true(d.score[0] == 5.0f);
    assert_null(d.label);
    assert_int_equal(d.n_classes, 0);
    posemb_glue_free(&d);
    /* RTE dev: label names */
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_RTE, "dev", &d, &err), POSEMB_OK);
    assert_int_equal(d.label[0], 1); /* not_entailment */
    assert_string_equal(d.text_b[0], "Christopher Reeve had an accident.");
    posemb_glue_free(&d);
}

/* Metrics through posemb_glue_evaluate: perfect predictions, then constant ones. */
static void test_glue_evaluate(void **state)
{
    (void)state;
    if (!tu_have_shared("GLUE evaluation")) return;
    posemb_glue_data d;
    posemb_error err;
    double v[2];
    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_MRPC, "dev", &d, &err), POSEMB_OK);
    assert_int_equal(posemb_glue_evaluate(&d, d.label, NULL, v, &err), POSEMB_OK);
    assert_true(v[0] == 1.0 && v[1] == 1.0);
    int32_t *ones = malloc((size_t)d.n * sizeof *ones);
    assert_non_null(ones);
    for (int i = 0; i < d.n; i++) ones[i] = 1;
    assert_int_equal(posemb_glue_evaluate(&d, ones, NULL, v, &err), POSEMB_OK);
    /* all "paraphrase": P = 279/408, R = 1, F1 = 2 * 279 / (2 * 279 + 129); accuracy 279/408 */
    TU_CLOSE(v[0], 558.0 / 687.0, 1e-15, 0, "MRPC F1 constant", 0);
    TU_CLOSE(v[1], 279.0 / 408.0, 1e-15, 0, "MRPC accuracy constant", 0);
    assert_int_equal(posemb_glue_evaluate(&d, NULL, NULL, v, &err), POSEMB_EINVAL);
    posemb_glue_free(&d);

    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_COLA, "dev", &d, &err), POSEMB_OK);
    assert_int_equal(posemb_glue_evaluate(&d, d.label, NULL, v, &err), POSEMB_OK);
    assert_true(v[0] == 1.0);
    posemb_glue_free(&d);

    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_STSB, "dev", &d, &err), POSEMB_OK);
    assert_int_equal(posemb_glue_evaluate(&d, NULL, d.score, v, &err), POSEMB_OK);
    TU_CLOSE(v[0], 1.0, 1e-12, 0, "STS-B pearson", 0);
    TU_CLOSE(v[1], 1.0, 1e-12, 0, "STS-B spearman", 0);
    posemb_glue_free(&d);

    assert_int_equal(posemb_glue_load(GLUE_DIR, POSEMB_GLUE_RTE, "test", &d, &err), POSEMB_OK);
    assert_int_equal(posemb_glue_evaluate(&d, ones, NULL, v, &err), POSEMB_EINVAL); /* unlabeled */
    posemb_glue_free(&d);
    free(ones);
}

static void test_glue_task_names(void **state)
{
    (void)state;
    assert_int_equal(posemb_glue_task_from_name("cola"), POSEMB_GLUE_COLA);
    assert_int_equal(posemb_glue_task_from_name("SST-2"), POSEMB_GLUE_SST2);
    assert_int_equal(posemb_glue_task_from_name("sst2"), POSEMB_GLUE_SST2);
    assert_int_equal(posemb_glue_task_from_name("STS-B"), POSEMB_GLUE_STSB);
    assert_int_equal(posemb_glue_task_from_name("stsb"), POSEMB_GLUE_STSB);
    assert_int_equal(posemb_glue_task_from_name("Mrpc"), POSEMB_GLUE_MRPC);
    assert_int_equal(posemb_glue_task_from_name("wnli"), POSEMB_GLUE_WNLI);
    assert_int_equal(posemb_glue_task_from_name("mnli"), -1);
    assert_int_equal(posemb_glue_task_from_name(""), -1);
    assert_null(posemb_glue_task_info(POSEMB_GLUE_TASK_COUNT));
    assert_string_equal(posemb_glue_task_info(POSEMB_GLUE_QNLI)->label_names[0], "entailment");
    assert_int_equal(posemb_glue_task_info(POSEMB_GLUE_STSB)->n_classes, 0);
}

/* Well-formed small files: CRLF ends, no final newline, quotes as text, a
 * BOM, an unlabeled test file, empty text fields. */
static void test_glue_small_files(void **state)
{
    const char *dir = *state;
    posemb_glue_data d;
    posemb_error err;
    char *p = write_text(dir, "crlf.tsv", "sentence\tlabel\r\nhello\t1\r\n\"a \"\" b\t0");
    assert_int_equal(posemb_glue_read(POSEMB_GLUE_SST2, p, 1, &d, &err), POSEMB_OK);
    assert_int_equal(d.n, 2);
    assert_string_equal(d.text_a[0], "hello");
    assert_string_equal(d.text_a[1], "\"a \"\" b");
    assert_int_equal(d.label[0], 1);
    assert_int_equal(d.label[1], 0);
    posemb_glue_free(&d);
    free(p);

    p = write_text(dir, "bom.tsv", "\xef\xbb\xbfindex\tsentence1\tsentence2\tlabel\n0\t\tb\tentailment\n");
    assert_int_equal(posemb_glue_read(POSEMB_GLUE_QNLI, p, 1, &d, &err), POSEMB_EFORMAT); /* QNLI: question/sentence */
    assert_int_equal(posemb_glue_read(POSEMB_GLUE_RTE, p, 1, &d, &err), POSEMB_OK);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.text_a[0], "");
    assert_string_equal(d.text_b[0], "b");
    assert_int_equal(d.label[0], 0);
    posemb_glue_free(&d);
    free(p);

    p = write_text(dir, "cola_test.tsv", "index\tsentence\n0\tBill whistled past the house.\n1\tx\n");
    assert_int_equal(posemb_glue_read(POSEMB_GLUE_COLA, p, 0, &d, &err), POSEMB_OK);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.labeled, 0);
    assert_null(d.label);
    assert_string_equal(d.text_a[0], "Bill whistled past the house.");
    posemb_glue_free(&d);
    free(p);

    p = write_text(dir, "stsb.tsv", "sentence1\tsentence2\tscore\na\tb\t0\nc\td\t3.25\ne\tf\t5.000\ng\th\t4e-1\n");
    assert_int_equal(posemb_glue_read(POSEMB_GLUE_STSB, p, 1, &d, &err), POSEMB_OK);
    assert_int_equal(d.n, 4);
    assert_true(d.score[0] == 0.0f && d.score[1] == 3.25f && d.score[2] == 5.0f && d.score[3] == 0.4f);
    posemb_glue_free(&d);
    free(p);
}

typedef struct bad_tsv {
    posemb_glue_task task;
    int labeled;
    const char *text;
    const char *needle; /* what the message must say, after the file name */
} bad_tsv;

static const bad_tsv BAD_TSV[] = {
    {POSEMB_GLUE_RTE, 1, "index\tsentence1\tsentence2\tlabel\n0\ta\tb\n",
     ":2: expected 4 tab-separated columns, found 3"},
    {POSEMB_GLUE_RTE, 1, "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\tmaybe\n",
     ":3: label \"maybe\" is not one of \"entailment\", \"not_entailment\""},
    {POSEMB_GLUE_SST2, 1, "sentence\tlabel\ngood\t1\nbad\t2\n", ":3: label \"2\" is not one of \"0\", \"1\""},
    {POSEMB_GLUE_COLA, 1, "gj04\t1\t\tok.\ngj04\t1\tmissing a column\n",
     ":2: expected 4 tab-separated columns, found 3"},
    {POSEMB_GLUE_COLA, 1, "gj04\tyes\t\tok.\n", ":1: label \"yes\" is not one of \"0\", \"1\""},
    {POSEMB_GLUE_WNLI, 1, "index\tsentence1\tsentence2\tlabel\n0\ta\tb\t1\textra\n",
     ":2: expected 4 tab-separated columns, found 5"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\tabc\n", ":2: score \"abc\" is not a number"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\t5.5\n", ":2: score 5.5 is outside [0, 5]"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\t-0.1\n", ":2: score -0.1 is outside [0, 5]"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\tnan\n", ":2: score \"nan\" is not a number"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\t\n", ":2: score \"\" is not a number"},
    {POSEMB_GLUE_STSB, 1, "sentence1\tsentence2\tscore\na\tb\t 3\n", ":2: score \" 3\" is not a number"},
    {POSEMB_GLUE_SST2, 1, "", ": empty file"},
    {POSEMB_GLUE_SST2, 1, "\xef\xbb\xbf", ": empty file"},
    {POSEMB_GLUE_SST2, 1, "sentence\tlabel\n", ": a header but no examples"},
    {POSEMB_GLUE_SST2, 1, "text\tlabel\nx\t1\n", ":1: header has no column \"sentence\""},
    {POSEMB_GLUE_SST2, 1, "index\tsentence\n0\tx\n",
     ":1: header has no column \"label\""}, /* a test file read labeled */
    {POSEMB_GLUE_MRPC, 1, "Quality\t#1 ID\t#2 ID\t#1 String\n1\t2\t3\tx\n", ":1: header has no column \"#2 String\""},
    {POSEMB_GLUE_SST2, 1, "sentence\tlabel\nx\t1\n\ny\t0\n", ":3: expected 2 tab-separated columns, found 1"},
    {POSEMB_GLUE_SST2, 1, "sentence\tlabel\nx\t1\ny\x01\t\x02\n", ":3: label \"\\x02\" is not one of"},
};

static void test_glue_malformed(void **state)
{
    const char *dir = *state;
    for (int i = 0; i < N_OF(BAD_TSV); i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%d.tsv", i);
        char *p = write_text(dir, name, BAD_TSV[i].text);
        char want[256];
        snprintf(want, sizeof want, "%s%s", name, BAD_TSV[i].needle);
        posemb_glue_data d;
        posemb_error err;
        posemb_status st = posemb_glue_read(BAD_TSV[i].task, p, BAD_TSV[i].labeled, &d, &err);
        expect_error(st, &err, POSEMB_EFORMAT, p, want);
        assert_null(d.text_a); /* nothing left allocated */
        free(p);
    }
    /* a NUL byte: the file is not text */
    char *p = path_in(dir, "nul.tsv");
    assert_int_equal(tu_write_file(p, "sentence\tlabel\nx\0y\t1\n", 21), 0);
    posemb_glue_data d;
    posemb_error err;
    expect_error(posemb_glue_read(POSEMB_GLUE_SST2, p, 1, &d, &err), &err, POSEMB_EFORMAT, p, ":2: a NUL byte");
    free(p);
    /* missing files and folders: EIO */
    p = path_in(dir, "absent.tsv");
    expect_error(posemb_glue_read(POSEMB_GLUE_SST2, p, 1, &d, &err), &err, POSEMB_EIO, p, "cannot open");
    free(p);
    expect_error(posemb_glue_load(dir, POSEMB_GLUE_COLA, "dev", &d, &err), &err, POSEMB_EIO, "/CoLA/dev.tsv",
                 "cannot open");
    expect_error(posemb_glue_load(dir, POSEMB_GLUE_COLA, "valid", &d, &err), &err, POSEMB_EINVAL, "valid",
                 "expected train, dev or test");
}

/* =============================================================== SQuAD */

/* FNV-1a 64 over bytes, as the Python reference below computes it. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv_normalized(uint64_t h, const char *text)
{
    char *norm = posemb_squad_normalize(text);
    assert_non_null(norm);
    h = fnv1a(h, norm, strlen(norm));
    free(norm);
    return fnv1a(h, "\n", 1);
}

static long utf8_code_points(const char *s, size_t n)
{
    long k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

static void test_squad_dev(void **state)
{
    (void)state;
    if (!tu_have_shared("SQuAD dev")) return;
    posemb_squad sq;
    posemb_error err;
    posemb_status st = posemb_squad_load(SQUAD_DEV, &sq, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, POSEMB_OK);
    assert_int_equal(sq.n_articles, 48);
    assert_int_equal(sq.n_paragraphs, 2067);
    assert_int_equal(sq.n, 10570);
    assert_string_equal(sq.titles[0], "Super_Bowl_50");
    assert_string_equal(sq.ex[0].id, "56be4db0acb8001400a502ec");
    assert_string_equal(sq.ex[0].title, "Super_Bowl_50");
    assert_string_equal(sq.ex[0].answers[0].text, "Denver Broncos");
    assert_int_equal(sq.ex[0].answers[0].cp_start, 177);
    assert_int_equal(sq.ex[0].answers[0].start, 177);
    /* the context has an en dash before it: character 403 is byte 405 */
    assert_string_equal(sq.ex[2].id, "56be4db0acb8001400a502ee");
    assert_string_equal(sq.ex[2].answers[0].text, "Santa Clara, California");
    assert_int_equal(sq.ex[2].answers[0].cp_start, 403);
    assert_int_equal(sq.ex[2].answers[0].start, 405);
    /* every answer, checked again here, independently of the reader */
    long answers = 0;
    for (int i = 0; i < sq.n; i++) {
        const posemb_squad_example *e = &sq.ex[i];
        assert_true(e->n_answers >= 1);
        assert_int_equal(e->context_len, (int32_t)strlen(e->context));
        assert_int_equal(e->context_cps, utf8_code_points(e->context, (size_t)e->context_len));
        assert_true(e->article >= 0 && e->article < sq.n_articles);
        assert_ptr_equal(e->title, sq.titles[e->article]);
        for (int k = 0; k < e->n_answers; k++) {
            const posemb_squad_answer *a = &e->answers[k];
            assert_true(0 <= a->start && a->start < a->end && a->end <= e->context_len);
            assert_int_equal((size_t)(a->end - a->start), strlen(a->text));
            assert_memory_equal(e->context + a->start, a->text, (size_t)(a->end - a->start));
            assert_int_equal(a->cp_start, utf8_code_points(e->context, (size_t)a->start));
            assert_int_equal(a->cp_end - a->cp_start, utf8_code_points(a->text, strlen(a->text)));
            answers++;
        }
    }
    assert_int_equal(answers, 34726);
    posemb_squad_free(&sq);
}

static void test_squad_split(void **state)
{
    (void)state;
    if (!tu_have_shared("SQuAD split")) return;
    posemb_squad sq;
    posemb_error err;
    assert_int_equal(posemb_squad_load(SQUAD_DEV, &sq, &err), POSEMB_OK);
    int *train = malloc((size_t)sq.n * sizeof *train), *eval = malloc((size_t)sq.n * sizeof *eval);
    char *seen = calloc((size_t)sq.n, 1);
    int *article_part = malloc((size_t)sq.n_articles * sizeof *article_part);
    assert_true(train && eval && seen && article_part);
    int n_train = posemb_squad_split(&sq, POSEMB_SQUAD_TRAIN, train);
    int n_eval = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, eval);
    assert_int_equal(n_train, 8595);
    assert_int_equal(n_eval, 1975);
    /* every question exactly once; no article on both sides */
    for (int a = 0; a < sq.n_articles; a++) article_part[a] = -1;
    for (int pass = 0; pass < 2; pass++) {
        const int *idx = pass ? eval : train;
        int n = pass ? n_eval : n_train;
        for (int k = 0; k < n; k++) {
            assert_int_equal(seen[idx[k]], 0);
            seen[idx[k]] = 1;
            int a = sq.ex[idx[k]].article;
            assert_true(article_part[a] == -1 || article_part[a] == pass);
            article_part[a] = pass;
            if (k) assert_true(idx[k] > idx[k - 1]);
        }
    }
    for (int i = 0; i < sq.n; i++) assert_int_equal(seen[i], 1);
    int eval_articles = 0;
    for (int a = 0; a < sq.n_articles; a++) eval_articles += article_part[a] == 1;
    assert_int_equal(eval_articles, 9);
    assert_string_equal(sq.titles[4], "Computational_complexity_theory");
    assert_int_equal(posemb_squad_article_part(4), POSEMB_SQUAD_EVAL);
    assert_int_equal(posemb_squad_article_part(44), POSEMB_SQUAD_EVAL);
    assert_int_equal(posemb_squad_article_part(0), POSEMB_SQUAD_TRAIN);
    assert_int_equal(posemb_squad_article_part(47), POSEMB_SQUAD_TRAIN);
    free(train);
    free(eval);
    free(seen);
    free(article_part);
    posemb_squad_free(&sq);
}

/* The reference numbers come from the official evaluate-v1.1.py functions
 * (normalize_answer, f1_score, exact_match_score, evaluate) run with
 * Python 3.11 on dev-v1.1.json, with predictions built the same way:
 *     t = qa["answers"][0]["text"]; i = t.rfind(" ")
 *     pred = t[:i] if i > 0 else qa["question"]
 * and, for the normalisation, FNV-1a 64 (offset 0xcbf29ce484222325, prime
 * 0x100000001b3) over normalize_answer(x).encode() + b"\n" for x in file
 * order: each paragraph's context, then each question, then its answers. */
static void test_squad_official_evaluation(void **state)
{
    (void)state;
    if (!tu_have_shared("SQuAD evaluation")) return;
    posemb_squad sq;
    posemb_error err;
    assert_int_equal(posemb_squad_load(SQUAD_DEV, &sq, &err), POSEMB_OK);
    const char **pred = malloc((size_t)sq.n * sizeof *pred);
    char **owned = calloc((size_t)sq.n, sizeof *owned);
    assert_true(pred && owned);
    double em, f1;
    for (int i = 0; i < sq.n; i++) pred[i] = sq.ex[i].answers[0].text;
    assert_int_equal(posemb_squad_evaluate(&sq, NULL, sq.n, pred, &em, &f1, &err), POSEMB_OK);
    assert_true(em == 100.0 && f1 == 100.0);

    for (int i = 0; i < sq.n; i++) {
        const char *t = sq.ex[i].answers[0].text;
        const char *space = strrchr(t, ' ');
        if (space && space > t) {
            owned[i] = strndup(t, (size_t)(space - t));
            assert_non_null(owned[i]);
            pred[i] = owned[i];
        } else {
            pred[i] = sq.ex[i].question;
        }
    }
    assert_int_equal(posemb_squad_evaluate(&sq, NULL, sq.n, pred, &em, &f1, &err), POSEMB_OK);
    TU_CLOSE(em, 4.40870387890255, 0, 1e-12, "EM", 0);
    TU_CLOSE(f1, 53.1077189628401, 0, 1e-12, "F1", 0);

    int *eval = malloc((size_t)sq.n * sizeof *eval);
    const char **eval_pred = malloc((size_t)sq.n * sizeof *eval_pred);
    assert_true(eval && eval_pred);
    int n_eval = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, eval);
    for (int k = 0; k < n_eval; k++) eval_pred[k] = pred[eval[k]];
    assert_int_equal(posemb_squad_evaluate(&sq, eval, n_eval, eval_pred, &em, &f1, &err), POSEMB_OK);
    TU_CLOSE(em, 6.07594936708861, 0, 1e-12, "EM eval part", 0);
    TU_CLOSE(f1, 56.8980981269191, 0, 1e-12, "F1 eval part", 0);
    /* unanswered questions score 0 */
    eval_pred[0] = NULL;
    assert_int_equal(posemb_squad_evaluate(&sq, eval, n_eval, eval_pred, &em, &f1, &err), POSEMB_OK);
    assert_true(f1 < 56.8980981269191);
    eval[0] = sq.n;
    assert_int_equal(posemb_squad_evaluate(&sq, eval, n_eval, eval_pred, &em, &f1, &err), POSEMB_EINVAL);

    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < sq.n; i++) {
        const posemb_squad_example *e = &sq.ex[i];
        if (i == 0 || e->paragraph != sq.ex[i - 1].paragraph) h = fnv_normalized(h, e->context);
        h = fnv_normalized(h, e->question);
        for (int k = 0; k < e->n_answers; k++) h = fnv_normalized(h, e->answers[k].text);
    }
    if (h != 0x4e50cac5c2710814ULL) print_error("normalisation hash %#llx\n", (unsigned long long)h);
    assert_true(h == 0x4e50cac5c2710814ULL);

    for (int i = 0; i < sq.n; i++) free(owned[i]);
    free(owned);
    free(pred);
    free(eval);
    free(eval_pred);
    posemb_squad_free(&sq);
}

/* A JSON file of one article, one paragraph (context), one question with
 * the given answers (a JSON list). */
static char *write_squad(const char *dir, const char *name, const char *context, const char *answers)
{
    char text[2048];
    int w = snprintf(text, sizeof text,
                     "{\"version\": \"1.1\", \"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"%s\", "
                     "\"qas\": [{\"id\": \"q1\", \"question\": \"Why?\", \"answers\": %s}]}]}]}",
                     context, answers);
    assert_true(w > 0 && (size_t)w < sizeof text);
    return write_text(dir, name, text);
}

static void test_squad_small_files(void **state)
{
    const char *dir = *state;
    posemb_squad sq;
    posemb_error err;
    /* "Café au lait": character 5 is byte 6; a non-BMP escape is one character */
    char *p = write_squad(dir, "ok.json", "Caf\\u00e9 au lait \\ud83d\\ude00 x",
                          "[{\"text\": \"au\", \"answer_start\": 5}, {\"text\": \"x\", \"answer_start\": 15}]");
    posemb_status st = posemb_squad_load(p, &sq, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, POSEMB_OK);
    assert_int_equal(sq.n, 1);
    assert_int_equal(sq.ex[0].n_answers, 2);
    assert_int_equal(sq.ex[0].answers[0].start, 6);
    assert_int_equal(sq.ex[0].answers[0].end, 8);
    assert_int_equal(sq.ex[0].answers[1].cp_start, 15);
    assert_int_equal(sq.ex[0].answers[1].start, 19); /* 13 characters + 2 bytes of é + 4 of the emoji - 1 */
    assert_int_equal(sq.ex[0].context_cps, 16);
    assert_string_equal(sq.ex[0].title, "T");
    assert_string_equal(sq.ex[0].question, "Why?");
    posemb_squad_free(&sq);
    free(p);
}

typedef struct bad_squad {
    const char *context, *answers; /* NULL context: `answers` is the whole file */
    const char *needle;
} bad_squad;

static const bad_squad BAD_SQUAD[] = {
    {"short", "[{\"text\": \"short\", \"answer_start\": 100}]",
     "question q1: answer 0 (characters 100..105) lies outside"},
    {"short", "[{\"text\": \"shorter\", \"answer_start\": 0}]", "question q1: answer 0 (characters 0..7) lies outside"},
    {"the cat sat", "[{\"text\": \"cat\", \"answer_start\": 4}, {\"text\": \"dog\", \"answer_start\": 4}]",
     "question q1: answer 1 \"dog\" does not match the context at character 4 (\"cat\")"},
    {"Caf\\u00e9 au lait", "[{\"text\": \"au\", \"answer_start\": 6}]",
     "question q1: answer 0 \"au\" does not match the context at character 6"}, /* a byte offset, not a character */
    {"abc", "[]", "question q1 has no answers"},
    {"abc", "[{\"text\": \"\", \"answer_start\": 0}]", "question q1: answer 0 is empty"},
    {"abc", "[{\"text\": \"a\", \"answer_start\": -1}]", "question q1: answer 0: \"answer_start\" must be an integer"},
    {"abc", "[{\"text\": \"a\", \"answer_start\": 1.5}]", "question q1: answer 0: \"answer_start\" must be an integer"},
    {"abc", "[{\"answer_start\": 0}]", "question q1: answer 0 has no string \"text\""},
    {NULL, "{\"data\": [", ":1: not valid JSON"},
    {NULL, "", ": empty file"},
    {NULL, "[1, 2]", "expected an object whose \"data\" is a non-empty list of articles"},
    {NULL, "{\"data\": []}", "expected an object whose \"data\" is a non-empty list of articles"},
    {NULL, "{\"data\": [{\"title\": \"T\"}]}", "article 0 needs a string \"title\" and a list \"paragraphs\""},
    {NULL, "{\"data\": [{\"title\": \"T\", \"paragraphs\": [{\"qas\": []}]}]}",
     "article 0 paragraph 0 needs a string \"context\" and a list \"qas\""},
    {NULL, "{\"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"c\", \"qas\": [{\"question\": \"q\"}]}]}]}",
     "article 0 paragraph 0 question 0 has no string \"id\""},
    {NULL, "{\"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"c\", \"qas\": []}]}]}", ": no questions"},
    {NULL,
     "{\"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"c\", \"qas\": ["
     "{\"id\": \"dup\", \"question\": \"q\", \"answers\": [{\"text\": \"c\", \"answer_start\": 0}]},"
     "{\"id\": \"dup\", \"question\": \"q\", \"answers\": [{\"text\": \"c\", \"answer_start\": 0}]}]}]}]}",
     "question id dup appears twice"},
    {NULL,
     "{\"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"\xff\", \"qas\": ["
     "{\"id\": \"q\", \"question\": \"q\", \"answers\": [{\"text\": \"c\", \"answer_start\": 0}]}]}]}]}",
     "context of paragraph 0 is not valid UTF-8"},
};

static void test_squad_malformed(void **state)
{
    const char *dir = *state;
    for (int i = 0; i < N_OF(BAD_SQUAD); i++) {
        const bad_squad *b = &BAD_SQUAD[i];
        char name[32];
        snprintf(name, sizeof name, "bad%d.json", i);
        char *p = b->context ? write_squad(dir, name, b->context, b->answers) : write_text(dir, name, b->answers);
        posemb_squad sq;
        posemb_error err;
        expect_error(posemb_squad_load(p, &sq, &err), &err, POSEMB_EFORMAT, p, b->needle);
        assert_null(sq.ex);
        free(p);
    }
    char *p = path_in(dir, "absent.json");
    posemb_squad sq;
    posemb_error err;
    expect_error(posemb_squad_load(p, &sq, &err), &err, POSEMB_EIO, p, "cannot open");
    free(p);
}

/* =============================================================== spans */

static void test_char_span_to_tokens(void **state)
{
    (void)state;
    /* "[CLS]" (zero width) "Hello" "," "world" "!" over "Hello, world!" */
    const int32_t start[5] = {0, 0, 5, 7, 12}, end[5] = {0, 5, 6, 12, 13};
    int s = -9, e = -9;
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 7, 12, &s, &e), 0);
    assert_true(s == 3 && e == 3);
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 0, 6, &s, &e), 0);
    assert_true(s == 1 && e == 2); /* the zero-width [CLS] never matches */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 3, 9, &s, &e), 0);
    assert_true(s == 1 && e == 3); /* inside tokens: the whole tokens */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 6, 12, &s, &e), 0);
    assert_true(s == 3 && e == 3); /* a leading space belongs to no token */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 0, 13, &s, &e), 0);
    assert_true(s == 1 && e == 4);
    s = e = -9;
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 6, 7, &s, &e), -1);   /* only the space */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 12, 14, &s, &e), -1); /* past the last token */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 5, 5, &s, &e), -1);   /* empty */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 5, 9, 3, &s, &e), -1);   /* inverted */
    assert_int_equal(posemb_char_span_to_tokens(start, end, 0, 0, 3, &s, &e), -1);
    /* a window that starts at "world": an answer reaching back before it is not covered */
    assert_int_equal(posemb_char_span_to_tokens(start + 3, end + 3, 2, 0, 12, &s, &e), -1);
    assert_int_equal(posemb_char_span_to_tokens(start + 3, end + 3, 2, 7, 13, &s, &e), 0);
    assert_true(s == 0 && e == 1);
    assert_int_equal(posemb_char_span_to_tokens(start + 3, end + 3, 2, 7, 13, &s, &e), 0);
}

/* Cuts text[0..len) into tokens at ASCII spaces, tabs and newlines: byte
 * spans [start, end). Returns the count. */
static int whitespace_tokens(const char *text, int len, int32_t *start, int32_t *end)
{
    int n = 0;
    for (int b = 0; b < len;) {
        while (b < len && strchr(" \t\n", text[b])) b++;
        if (b == len) break;
        start[n] = b;
        while (b < len && !strchr(" \t\n", text[b])) b++;
        end[n++] = b;
    }
    return n;
}

/* Every SQuAD answer maps onto whitespace tokens of its context: the first
 * token holds the answer's first byte, the last one its last byte. */
static void test_char_span_on_squad(void **state)
{
    (void)state;
    if (!tu_have_shared("char spans on SQuAD")) return;
    posemb_squad sq;
    posemb_error err;
    assert_int_equal(posemb_squad_load(SQUAD_DEV, &sq, &err), POSEMB_OK);
    int32_t *tok_start = NULL, *tok_end = NULL;
    int n_tok = 0, paragraph = -1;
    long mapped = 0;
    for (int i = 0; i < sq.n; i++) {
        const posemb_squad_example *e = &sq.ex[i];
        if (e->paragraph != paragraph) { /* questions of one paragraph share its tokens */
            paragraph = e->paragraph;
            tok_start = realloc(tok_start, (size_t)(e->context_len + 1) * sizeof *tok_start);
            tok_end = realloc(tok_end, (size_t)(e->context_len + 1) * sizeof *tok_end);
            assert_true(tok_start && tok_end);
            n_tok = whitespace_tokens(e->context, e->context_len, tok_start, tok_end);
        }
        for (int k = 0; k < e->n_answers; k++) {
            const posemb_squad_answer *a = &e->answers[k];
            int s = -1, t = -1;
            assert_int_equal(posemb_char_span_to_tokens(tok_start, tok_end, n_tok, a->start, a->end, &s, &t), 0);
            assert_true(s <= t);
            assert_true(tok_start[s] <= a->start && a->start < tok_end[s]);
            assert_true(tok_start[t] < a->end && a->end <= tok_end[t]);
            mapped++;
        }
    }
    assert_int_equal(mapped, 34726);
    free(tok_start);
    free(tok_end);
    posemb_squad_free(&sq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glue_counts),
        cmocka_unit_test(test_glue_contents),
        cmocka_unit_test(test_glue_evaluate),
        cmocka_unit_test(test_glue_task_names),
        cmocka_unit_test_setup_teardown(test_glue_small_files, setup_tmp, teardown_tmp),
        cmocka_unit_test_setup_teardown(test_glue_malformed, setup_tmp, teardown_tmp),
        cmocka_unit_test(test_squad_dev),
        cmocka_unit_test(test_squad_split),
        cmocka_unit_test(test_squad_official_evaluation),
        cmocka_unit_test_setup_teardown(test_squad_small_files, setup_tmp, teardown_tmp),
        cmocka_unit_test_setup_teardown(test_squad_malformed, setup_tmp, teardown_tmp),
        cmocka_unit_test(test_char_span_to_tokens),
        cmocka_unit_test(test_char_span_on_squad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
