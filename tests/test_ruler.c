/* The RULER-style tasks (src/study/study_ruler.c) on byte tokens: every
 * prompt of every task at 128 to 2048 tokens has exactly L tokens, ends with
 * its question and answer, and its answer equals the one this file derives
 * again from the prompt's text alone (a second reading: the keys' values,
 * the names bound to a value through the chains, the words' counts); the
 * gold needle moves from the start to the end of the haystack with the
 * depth; draws are repeatable; the training mix turns the share of
 * sequences it is given into prompts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_internal.h"
#include "posemb/tokenizer.h"
#include "study/study_ruler.h"
#include "testutil.h"

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir();
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static posemb_tokenizer *bytes_tokenizer(void) { return tu_bytes_tokenizer(dir); }

enum { LMAX = 2048 };

/* A prompt as text (byte ids), split at its last '?' into haystack and
 * question; the answer is the text the targets mark. */
typedef struct prompt {
    char text[LMAX + 1], hay[8 * LMAX], question[64], answer[64]; /* hay: decoded BPE too, several bytes a token */
    int L;
} prompt;

static void make(const posemb_tokenizer *tok, int t, uint64_t draw, int L, double depth, prompt *p)
{
    int32_t ids[LMAX], targets[LMAX];
    int fits = 0;
    posemb_error err;
    if (study_ruler_prompt(tok, t, draw, L, depth, ids, targets, &fits, &err)) fail_msg("%s", err.msg);
    if (!fits) fail_msg("%s: draw %llu does not fit in %d", study_ruler_task_name(t), (unsigned long long)draw, L);
    int first = -1;
    for (int i = 0; i < L; i++) {
        assert_true(ids[i] >= 0 && ids[i] < 256);
        p->text[i] = (char)ids[i];
        if (targets[i] != -100) {
            assert_int_equal(targets[i], ids[i]);
            if (first < 0) first = i;
        } else {
            assert_true(first < 0); /* the answer closes the prompt */
        }
    }
    p->text[L] = 0;
    p->L = L;
    assert_true(first > 0);
    snprintf(p->answer, sizeof p->answer, "%s", p->text + first);
    char *q = strrchr(p->text, '?');
    assert_non_null(q);
    memcpy(p->hay, p->text, (size_t)(q - p->text));
    p->hay[q - p->text] = 0;
    snprintf(p->question, sizeof p->question, "%.*s", (int)(p->text + first - q), q);
}

/* The values of key k in the haystack, in order, space-separated; how many. */
static int values_of(const char *hay, unsigned k, char *out, size_t cap)
{
    int n = 0;
    out[0] = 0;
    for (const char *s = strstr(hay, "key "); s; s = strstr(s + 1, "key ")) {
        unsigned key, value;
        if (sscanf(s, "key %u = %u. ", &key, &value) == 2 && key == k) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%u", n++ ? " " : "", value);
        }
    }
    return n;
}

static void check_niah(const prompt *p, int t)
{
    char want[64], second[32];
    unsigned k1, k2;
    if (t == RULER_NIAH_MULTIQUERY) {
        assert_int_equal(sscanf(p->question, "? key %u %u = ", &k1, &k2), 2);
        assert_int_equal(values_of(p->hay, k1, want, sizeof want), 1);
        assert_int_equal(values_of(p->hay, k2, second, sizeof second), 1);
        strcat(want, " ");
        strcat(want, second);
    } else {
        assert_int_equal(sscanf(p->question, "? key %u = ", &k1), 1);
        int n = values_of(p->hay, k1, want, sizeof want);
        assert_int_equal(n, t == RULER_NIAH_MULTIVALUE ? 4 : 1);
    }
    assert_string_equal(p->answer, want);
    int needles = 0;
    for (const char *s = strstr(p->hay, "key "); s; s = strstr(s + 1, "key ")) needles++;
    int expect = t == RULER_NIAH_SINGLE ? 1 : 4;
    if (t != RULER_KV) assert_int_equal(needles, expect);
    else assert_true(needles >= 2); /* the gold pair among distractors and nothing else */
}

/* vt: the names bound to the asked value, directly or through a chain, in
 * the order their assignments appear. */
static void check_vt(const prompt *p)
{
    unsigned v;
    assert_int_equal(sscanf(p->question, "? = %u: ", &v), 1);
    char bound[8][3], want[64] = "";
    int n = 0, assignments = 0;
    for (const char *s = p->hay; *s; s++) {
        char name[3], rhs[8];
        if (s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' || (s > p->hay && s[-1] != ' ')) continue;
        if (sscanf(s, "%2[A-Z] = %7[A-Z0-9]. ", name, rhs) != 2) continue;
        assignments++;
        int yes = (unsigned)atol(rhs) == v && rhs[0] >= '0' && rhs[0] <= '9';
        for (int i = 0; i < n; i++) yes |= !strcmp(rhs, bound[i]);
        if (yes) snprintf(bound[n++], 3, "%s", name);
    }
    assert_int_equal(assignments, 6);
    assert_int_equal(n, 3);
    snprintf(want, sizeof want, "%s %s %s", bound[0], bound[1], bound[2]);
    assert_string_equal(p->answer, want);
}

/* cwe, fwe: the words' counts in the haystack; cwe's answer is the three
 * most frequent in the order they first appear, fwe's most frequent first,
 * each set clear of the fourth. */
static void check_words(const prompt *p, int t)
{
    char words[LMAX][4];
    int count[LMAX] = {0}, n = 0;
    for (const char *s = p->hay; *s;) {
        while (*s == ' ') s++;
        if (!*s) break;
        assert_true(s[0] >= 'a' && s[0] <= 'z' && s[3] == ' ');
        int i = 0;
        while (i < n && memcmp(words[i], s, 3)) i++;
        if (i == n) {
            memcpy(words[n], s, 3);
            words[n++][3] = 0;
        }
        count[i]++;
        s += 4;
    }
    int top[4] = {-1, -1, -1, -1};
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < j; q++) taken |= top[q] == i;
            if (!taken && (top[j] < 0 || count[i] > count[top[j]])) top[j] = i;
        }
    assert_true(count[top[2]] > count[top[3]]);
    if (t == RULER_FWE) assert_true(count[top[0]] > count[top[1]] && count[top[1]] > count[top[2]]);
    if (t == RULER_CWE) /* first appearance is index order */
        for (int a = 0; a < 3; a++)
            for (int b = a + 1; b < 3; b++)
                if (top[a] > top[b]) {
                    int x = top[a];
                    top[a] = top[b];
                    top[b] = x;
                }
    char want[64];
    snprintf(want, sizeof want, "%s %s %s", words[top[0]], words[top[1]], words[top[2]]);
    assert_string_equal(p->answer, want);
    assert_string_equal(p->question, t == RULER_CWE ? "? common: " : "? frequent: ");
}

static void test_answers(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt p;
    int lengths[] = {128, 256, 1024, 2048};
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        int checked = 0;
        for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
            for (uint64_t draw = 0; draw < 40; draw += 2, checked++) {
                make(tok, t, draw, lengths[l], (double)(draw % 5) / 4, &p);
                assert_int_equal((int)strlen(p.text), lengths[l]);
                if (t == RULER_VT) check_vt(&p);
                else if (t == RULER_CWE || t == RULER_FWE) check_words(&p, t);
                else check_niah(&p, t);
            }
        printf("%-16s %d prompts (128-2048 tokens): the answer read again from the text agrees\n",
               study_ruler_task_name(t), checked);
    }
    posemb_tokenizer_free(tok);
}

/* Where the gold needle starts, as a fraction of the haystack. */
static double gold_at(const prompt *p)
{
    unsigned k;
    assert_int_equal(sscanf(p->question, "? key %u", &k), 1);
    char pat[24];
    snprintf(pat, sizeof pat, "key %u = ", k);
    const char *s = strstr(p->hay, pat);
    assert_non_null(s);
    return (double)(s - p->hay) / (double)strlen(p->hay);
}

static void test_depth(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt p;
    int tasks[] = {RULER_NIAH_SINGLE, RULER_KV};
    for (int i = 0; i < 2; i++)
        for (uint64_t draw = 0; draw < 10; draw += 2) {
            double at[5];
            for (int d = 0; d < 5; d++) {
                make(tok, tasks[i], draw, 1024, d / 4.0, &p);
                at[d] = gold_at(&p);
            }
            printf("%-12s draw %llu: gold needle at %.3f %.3f %.3f %.3f %.3f of the haystack\n",
                   study_ruler_task_name(tasks[i]), (unsigned long long)draw, at[0], at[1], at[2], at[3], at[4]);
            assert_true(at[0] == 0.0);
            for (int d = 1; d < 5; d++) {
                assert_true(at[d] > at[d - 1]);
                assert_true(fabs(at[d] - d / 4.0) < 0.1); /* the pads and the needle's own length */
            }
        }
    posemb_tokenizer_free(tok);
}

static void test_repeatable_and_misfit(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt a, b;
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        make(tok, t, 8, 256, 0.5, &a);
        make(tok, t, 8, 256, 0.5, &b);
        assert_string_equal(a.text, b.text);
        make(tok, t, 10, 256, 0.5, &b);
        assert_string_not_equal(a.text, b.text);
        int32_t ids[32], targets[32];
        int fits = 1;
        posemb_error err;
        assert_int_equal(study_ruler_prompt(tok, t, 8, 32, 0.5, ids, targets, &fits, &err), POSEMB_OK);
        assert_int_equal(fits, 0);
    }
    int32_t ids[8], targets[8];
    int fits;
    posemb_error err;
    assert_int_equal(study_ruler_prompt(tok, STUDY_RULER_TASKS, 0, 8, 0, ids, targets, &fits, &err), POSEMB_EINVAL);
    assert_int_equal(study_ruler_task_of("vt"), RULER_VT);
    assert_int_equal(study_ruler_task_of("niah"), -1);
    posemb_tokenizer_free(tok);
}

/* GPT-2's BPE packs several bytes a token: the haystack is drawn for
 * tokens, not bytes, so the pad after it stays under a few pieces' worth and
 * a gold needle at depth 1 sits at the end of the haystack; the answers
 * read again from the decoded text agree. */
static void test_bpe(void **state)
{
    (void)state;
    if (!tu_have_shared("GPT-2's BPE")) return;
    posemb_tokenizer *tok = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_bpe(POSEMB_SHARED "/data/gpt2/encoder.json", POSEMB_SHARED "/data/gpt2/vocab.bpe", &tok,
                                  &err))
        fail_msg("%s", err.msg);
    static prompt p;
    static int32_t ids[LMAX], targets[LMAX];
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        int worst = 0;
        for (uint64_t draw = 0; draw < 10; draw += 2) {
            int L = 1024, fits = 0;
            if (study_ruler_prompt(tok, t, draw, L, 1.0, ids, targets, &fits, &err)) fail_msg("%s", err.msg);
            assert_true(fits);
            int first = 0;
            while (targets[first] == -100) first++;
            char *text = NULL, *answer = NULL;
            size_t len = 0;
            assert_int_equal(posemb_tokenizer_decode(tok, ids, first, 0, &text, &len, &err), POSEMB_OK);
            assert_int_equal(posemb_tokenizer_decode(tok, ids + first, L - first, 0, &answer, &len, &err), POSEMB_OK);
            char *q = strrchr(text, '?');
            assert_non_null(q);
            snprintf(p.hay, sizeof p.hay, "%.*s", (int)(q - text), text);
            snprintf(p.question, sizeof p.question, "%s", q);
            snprintf(p.answer, sizeof p.answer, "%s", answer);
            int pads = 0; /* the spaces between the haystack and the question: one pad token each */
            for (size_t k = strlen(p.hay); k > 0 && p.hay[k - 1] == ' '; k--) pads++;
            worst = pads > worst ? pads : worst;
            if (t == RULER_VT) check_vt(&p);
            else if (t == RULER_CWE || t == RULER_FWE) check_words(&p, t);
            else check_niah(&p, t);
            if (t == RULER_NIAH_SINGLE || t == RULER_KV) assert_true(gold_at(&p) > 0.9);
            free(text);
            free(answer);
        }
        printf("%-16s GPT-2 BPE, 1024 tokens: at most %d spaces before the question; answers agree\n",
               study_ruler_task_name(t), worst);
        assert_true(worst <= 24);
    }
    posemb_tokenizer_free(tok);
}

/* share 1: every sequence a prompt trained on whole; share 0: text kept. */
static void test_mix(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    enum { T = 128 };
    int32_t ids[T], targets[T];
    int counts[STUDY_RULER_TASKS] = {0};
    study_ruler_train m = {.tok = tok, .seed = 3, .share = 1, .tasks = (1u << RULER_VT) | (1u << RULER_KV)};
    for (long g = 0; g < 200; g++) {
        for (int i = 0; i < T; i++) ids[i] = targets[i] = 'x';
        study_ruler_mix(&m, g, T, ids, targets);
        assert_memory_equal(ids, targets, sizeof ids);
        char text[T + 1];
        for (int i = 0; i < T; i++) text[i] = (char)ids[i];
        text[T] = 0;
        assert_non_null(strchr(text, '?'));
        counts[strstr(text, "? key") ? RULER_KV : RULER_VT]++;
    }
    printf("mix of vt and kv at share 1: %d vt, %d kv of 200\n", counts[RULER_VT], counts[RULER_KV]);
    assert_true(counts[RULER_VT] > 70 && counts[RULER_KV] > 70);
    m.share = 0;
    for (int i = 0; i < T; i++) ids[i] = targets[i] = 'x';
    study_ruler_mix(&m, 7, T, ids, targets);
    for (int i = 0; i < T; i++) assert_int_equal(ids[i], 'x');
    posemb_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers), cmocka_unit_test(test_depth), cmocka_unit_test(test_repeatable_and_misfit),
        cmocka_unit_test(test_mix),     cmocka_unit_test(test_bpe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
