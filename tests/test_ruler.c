/* The RULER-style tasks (src/study/study_ruler.c) on byte tokens: every
 * prompt of every task at 128 to 2048 tokens has exactly L tokens, ends with
 * its question and answer, and its answer equals the one this file derives
 * again from the prompt's text alone (a second reading: the keys' values,
 * the names bound to a value through the chains, the words' counts); the
 * gold needle moves from the start to the end of the haystack with the
 * depth; draws are repeatable; the training mix turns the share of
  * sequences it is given into prompts; RULER's prompts are the ones the
 * committed results were made with, byte for byte. The same with the keys
 * and names drawn otherwise (from a fixed set, as words), where every
 * prompt's keys are of the form and among the set asked for, and a task
 * refuses a set smaller than it needs; with the niah tasks' values said
 * twice, each needle's second saying agrees with its first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_internal.h"
#include "posemb/tokenizer.h"
#include "study/study_ruler.h"
#include "testutil.h"

static char *dir;
static const study_ruler_keys RULER = {0, 0, 0};

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

static void make(const posemb_tokenizer *tok, int t, study_ruler_keys keys, uint64_t draw, int L, double depth,
                 prompt *p)
{
    int32_t ids[LMAX], targets[LMAX];
    int fits = 0;
    posemb_error err;
    if (study_ruler_prompt(tok, t, keys, draw, L, depth, ids, targets, &fits, &err)) fail_msg("%s", err.msg);
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

/* Keys and names seen over a test's prompts (digits or fixed words). */
typedef struct seen_keys {
    char name[8192][8]; /* three-digit keys: 900; two-letter names: 676; kv's drawn words: thousands */
    int n;
} seen_keys;

static void saw(seen_keys *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->name[i], name)) return;
    assert_true(k->n < 8192);
    snprintf(k->name[k->n++], sizeof k->name[0], "%s", name);
}

/* The values of key k in the haystack, in order, space-separated; how many;
 * every key of the haystack into seen. */
static int values_of(const char *hay, const char *k, char *out, size_t cap, seen_keys *seen)
{
    int n = 0;
    out[0] = 0;
    for (const char *s = strstr(hay, "key "); s; s = strstr(s + 1, "key ")) {
        char key[8];
        unsigned value;
        if (sscanf(s, "key %7[a-z0-9] = %u. ", key, &value) != 2) continue;
        saw(seen, key);
        if (!strcmp(key, k)) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%u", n++ ? " " : "", value);
        }
    }
    return n;
}

static void check_niah(const prompt *p, int t, seen_keys *seen)
{
    char want[64], second[32], k1[8], k2[8];
    if (t == RULER_NIAH_MULTIQUERY) {
        assert_int_equal(sscanf(p->question, "? key %7[a-z0-9] %7[a-z0-9] = ", k1, k2), 2);
        assert_int_equal(values_of(p->hay, k1, want, sizeof want, seen), 1);
        assert_int_equal(values_of(p->hay, k2, second, sizeof second, seen), 1);
        strcat(want, " ");
        strcat(want, second);
    } else {
        assert_int_equal(sscanf(p->question, "? key %7[a-z0-9] = ", k1), 1);
        int n = values_of(p->hay, k1, want, sizeof want, seen);
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
 * the order their assignments appear (a name: letters at a word's start). */
static void check_vt(const prompt *p, seen_keys *seen)
{
    unsigned v;
    assert_int_equal(sscanf(p->question, "? = %u: ", &v), 1);
    char bound[8][8], want[64] = "";
    int n = 0, assignments = 0;
    for (const char *s = p->hay; *s; s++) {
        char name[8], rhs[8];
        if (s > p->hay && s[-1] != ' ') continue;
        if (sscanf(s, "%7[A-Za-z] = %7[A-Za-z0-9]. ", name, rhs) != 2) continue;
        assignments++;
        saw(seen, name);
        int yes = (unsigned)atol(rhs) == v && rhs[0] >= '0' && rhs[0] <= '9';
        for (int i = 0; i < n; i++) yes |= !strcmp(rhs, bound[i]);
        if (yes) snprintf(bound[n++], sizeof bound[0], "%s", name);
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

/* Task t's prompt checked by the task's solver; its keys into seen. */
static void check(const prompt *p, int t, seen_keys *seen)
{
    if (t == RULER_VT) check_vt(p, seen);
    else if (t == RULER_CWE || t == RULER_FWE) check_words(p, t);
    else check_niah(p, t, seen);
}

/* Whether every key seen has the form asked for: lower-case words, or
 * RULER's three digits (the niah tasks, kv) and two upper-case letters (vt). */
static int of_form(const seen_keys *k, int words)
{
    for (int i = 0; i < k->n; i++) {
        const char *s = k->name[i];
        size_t n = strlen(s), ok = 0;
        for (size_t j = 0; j < n; j++)
            ok += words ? s[j] >= 'a' && s[j] <= 'z' : (s[j] >= '0' && s[j] <= '9') || (s[j] >= 'A' && s[j] <= 'Z');
        if (ok != n || (!words && n != 2 && n != 3)) return 0;
    }
    return 1;
}

/* Every task with keys drawn each way: per prompt, from the fewest fixed
 * ones it takes and from all 32, as RULER writes them and as words. The
 * answers agree; keys have the form asked for and never more distinct than
 * the set; with a few fixed ones (and for kv, whose haystack is keys),
 * every one of them shows up. */
static void test_answers(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt p;
    int lengths[] = {128, 256, 1024, 2048};
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        int sets[3] = {0, study_ruler_keys_needed(t), STUDY_RULER_MAX_KEYS};
        for (int way = 0; way < 6; way++) {
            study_ruler_keys keys = {sets[way / 2], way % 2, 0};
            int checked = 0;
            static seen_keys seen;
            seen.n = 0;
            if (way / 2 == 1 && !keys.set) continue;
            for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
                for (uint64_t draw = 0; draw < 40; draw += 2, checked++) {
                    make(tok, t, keys, draw, lengths[l], (double)(draw % 5) / 4, &p);
                    assert_int_equal((int)strlen(p.text), lengths[l]);
                    check(&p, t, &seen);
                }
            printf("%-16s set %2d, %-5s: %d prompts (128-2048 tokens): the answer read again from the text agrees; "
                   "%d distinct keys\n",
                   study_ruler_task_name(t), keys.set, keys.words ? "words" : "RULER", checked, seen.n);
            assert_true(of_form(&seen, keys.words));
            if (keys.set) assert_true(seen.n <= keys.set);
            if (keys.set && (keys.set <= 8 || t == RULER_KV) && study_ruler_keys_needed(t))
                assert_int_equal(seen.n, keys.set);
            if (!keys.set && study_ruler_keys_needed(t)) assert_true(seen.n >= 16); /* drawn per prompt: 20 draws */
        }
    }
    posemb_tokenizer_free(tok);
}

/* RULER's prompts (keys {0, 0, 0}) as the program that made the committed
 * results drew them: a hash of 1200 prompts (8 tasks, 128-2048 tokens, 30
 * draws each) computed with the study_ruler.c of commit f77d663, before
 * keys could be drawn otherwise. */
static void test_ruler_prompts_unchanged(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static int32_t ids[LMAX], targets[LMAX];
    uint64_t h = 1469598103934665603ull; /* FNV-1a over ids * 7 + targets, and fits */
    for (int t = 0; t < STUDY_RULER_TASKS; t++)
        for (int L = 128; L <= 2048; L *= 2)
            for (uint64_t d = 0; d < 30; d++) {
                int fits = 0;
                posemb_error err;
                if (study_ruler_prompt(tok, t, RULER, d, L, (double)(d % 5) / 4.0, ids, targets, &fits, &err))
                    fail_msg("%s", err.msg);
                for (int i = 0; fits && i < L; i++) {
                    h ^= (uint64_t)(ids[i] * 7 + targets[i]);
                    h *= 1099511628211ull;
                }
                h ^= (uint64_t)fits;
                h *= 1099511628211ull;
            }
    printf("RULER's prompts: hash %016llx\n", (unsigned long long)h);
    assert_true(h == 0xd8490db09414b447ull);
    posemb_tokenizer_free(tok);
}

/* A task refuses fewer fixed keys than one prompt must hold, more than
 * there are, and a form that is neither. */
static void test_keys_refused(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    int32_t ids[256], targets[256];
    int fits = 1;
    posemb_error err;
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        int need = study_ruler_keys_needed(t);
        int bad[3] = {-1, STUDY_RULER_MAX_KEYS + 1, need - 1};
        for (int b = 0; b < 3; b++) {
            if (bad[b] == 0) continue; /* 0 is RULER's keys, always taken */
            study_ruler_keys k = {bad[b], b % 2, 0};
            assert_int_equal(study_ruler_prompt(tok, t, k, 2, 256, 0.5, ids, targets, &fits, &err), POSEMB_EINVAL);
            assert_non_null(strstr(err.msg, "fixed keys"));
        }
        study_ruler_keys words2 = {0, 2, 0};
        assert_int_equal(study_ruler_prompt(tok, t, words2, 2, 256, 0.5, ids, targets, &fits, &err), POSEMB_EINVAL);
        study_ruler_keys fewest = {need ? need : 1, 1, 0};
        assert_int_equal(study_ruler_prompt(tok, t, fewest, 2, 256, 0.5, ids, targets, &fits, &err), POSEMB_OK);
        assert_true(fits);
    }
    assert_int_equal(study_ruler_keys_needed(RULER_VT), 6);
    assert_int_equal(study_ruler_keys_needed(RULER_CWE), 0);
    assert_int_equal(study_ruler_keys_needed(-1), 0);
    posemb_tokenizer_free(tok);
}

/* Each "key K = V. Remember it. W is key K2. " of hay removed after its
 * check that W is V and K2 is K, leaving RULER's needles: the count removed. */
static int unsay_twice(char *hay)
{
    int n = 0;
    for (char *s = strstr(hay, "key "); s; s = strstr(s + 1, "key ")) {
        char k[8], k2[8];
        unsigned v, w;
        int end = 0;
        if (sscanf(s, "key %7[a-z0-9] = %u. Remember it. %u is key %7[a-z0-9].%n", k, &v, &w, k2, &end) != 4 || !end)
            continue;
        end++; /* its closing space (padding spaces may follow) */
        assert_int_equal(w, v);
        assert_string_equal(k2, k);
        char exact[64]; /* byte for byte: sscanf's spaces match any run of them */
        int n_exact = snprintf(exact, sizeof exact, "key %s = %u. Remember it. %u is key %s. ", k, v, v, k);
        assert_int_equal(end, n_exact);
        assert_memory_equal(s, exact, (size_t)n_exact);
        char *second = strstr(s, " Remember it. ") + 1; /* keep "key K = V. " */
        memmove(second, s + end, strlen(s + end) + 1);
        n++;
    }
    return n;
}

/* keys.twice: every needle of niah_single, _multikey and _multiquery says
 * its value twice, the second time as the passkey's does; with the second
 * saying taken out, the prompt is a RULER prompt whose answer agrees. The
 * other tasks refuse it, and so does a value other than 0 and 1. */
static void test_needle_twice(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt p;
    static seen_keys seen;
    int32_t ids[256], targets[256], fits = 0;
    posemb_error err;
    /* RULER's keys, 8 fixed digits, all 32 fixed words (4 letters the longest), random letters */
    static const study_ruler_keys ways[4] = {{0, 0, 1}, {8, 0, 1}, {32, 1, 1}, {0, 1, 1}};
    for (int t = 0; t < STUDY_RULER_TASKS; t++) {
        if (!study_ruler_can_say_twice(t)) {
            assert_int_equal(study_ruler_prompt(tok, t, ways[0], 2, 256, 0.5, ids, targets, &fits, &err),
                             POSEMB_EINVAL);
            assert_non_null(strstr(err.msg, "cannot say its value 2 times"));
            continue;
        }
        int checked = 0;
        for (int L = t == RULER_NIAH_SINGLE ? 128 : 256; L <= 1024; L *= 2) /* four needles of up to 50 bytes */
            for (uint64_t draw = 0; draw < 40; draw++, checked++) {
                study_ruler_keys twice = ways[draw % 4];
                make(tok, t, twice, draw, L, (double)(draw % 5) / 4, &p);
                assert_int_equal((int)strlen(p.text), L);
                assert_int_equal(unsay_twice(p.hay), t == RULER_NIAH_SINGLE ? 1 : 4);
                check(&p, t, &seen);
            }
        printf("%-16s said twice: %d prompts (up to 1024 tokens), every needle's value twice, the answer agrees\n",
               study_ruler_task_name(t), checked);
        study_ruler_keys thrice = {0, 0, 2};
        assert_int_equal(study_ruler_prompt(tok, t, thrice, 2, 256, 0.5, ids, targets, &fits, &err), POSEMB_EINVAL);
    }
    posemb_tokenizer_free(tok);
}

/* Where the gold needle starts, as a fraction of the haystack. */
static double gold_at(const prompt *p)
{
    char k[8];
    assert_int_equal(sscanf(p->question, "? key %7[a-z0-9]", k), 1);
    char pat[24];
    snprintf(pat, sizeof pat, "key %s = ", k);
    const char *s = strstr(p->hay, pat);
    assert_non_null(s);
    return (double)(s - p->hay) / (double)strlen(p->hay);
}

static void test_depth(void **state)
{
    (void)state;
    posemb_tokenizer *tok = bytes_tokenizer();
    static prompt p;
    int tasks[] = {RULER_NIAH_SINGLE, RULER_KV, RULER_NIAH_SINGLE, RULER_KV};
    study_ruler_keys keys[] = {{0, 0, 0}, {0, 1, 0}, {3, 1, 0}, {2, 0, 0}};
    for (int i = 0; i < 4; i++)
        for (uint64_t draw = 0; draw < 10; draw += 2) {
            double at[5];
            for (int d = 0; d < 5; d++) {
                make(tok, tasks[i], keys[i], draw, 1024, d / 4.0, &p);
                at[d] = gold_at(&p);
            }
            printf("%-12s keys {%d, %d} draw %llu: gold needle at %.3f %.3f %.3f %.3f %.3f of the haystack\n",
                   study_ruler_task_name(tasks[i]), keys[i].set, keys[i].words, (unsigned long long)draw, at[0], at[1],
                   at[2], at[3], at[4]);
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
        make(tok, t, RULER, 8, 256, 0.5, &a);
        make(tok, t, RULER, 8, 256, 0.5, &b);
        assert_string_equal(a.text, b.text);
        make(tok, t, RULER, 10, 256, 0.5, &b);
        assert_string_not_equal(a.text, b.text);
        for (int way = 1; way < 4; way++) { /* other keys: another prompt, but cwe's and fwe's, which have none */
            study_ruler_keys k = {way / 2 * 8, way % 2, 0};
            make(tok, t, k, 8, 256, 0.5, &b);
            if (study_ruler_keys_needed(t)) assert_string_not_equal(a.text, b.text);
            else assert_string_equal(a.text, b.text);
        }
        int32_t ids[32], targets[32];
        int fits = 1;
        posemb_error err;
        assert_int_equal(study_ruler_prompt(tok, t, RULER, 8, 32, 0.5, ids, targets, &fits, &err), POSEMB_OK);
        assert_int_equal(fits, 0);
    }
    int32_t ids[8], targets[8];
    int fits;
    posemb_error err;
    assert_int_equal(study_ruler_prompt(tok, STUDY_RULER_TASKS, RULER, 0, 8, 0, ids, targets, &fits, &err),
                     POSEMB_EINVAL);
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
            study_ruler_keys keys = {draw % 4 == 0 ? 0 : 8, draw % 4 == 2, 0}; /* RULER's and fixed words */
            if (study_ruler_prompt(tok, t, keys, draw, L, 1.0, ids, targets, &fits, &err)) fail_msg("%s", err.msg);
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
            static seen_keys seen;
            seen.n = 0;
            check(&p, t, &seen);
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
    m.keys = (study_ruler_keys){6, 1, 0}; /* fixed words: kv's asked key is one */
    int worded = 0;
    for (long g = 0; g < 50; g++) {
        study_ruler_mix(&m, g, T, ids, targets);
        char text[T + 1];
        for (int i = 0; i < T; i++) text[i] = (char)ids[i];
        text[T] = 0;
        const char *q = strstr(text, "? key ");
        if (q) assert_true(q[6] >= 'a' && q[6] <= 'z');
        worded += q != NULL;
    }
    assert_true(worded > 10);
    m.share = 0;
    for (int i = 0; i < T; i++) ids[i] = targets[i] = 'x';
    study_ruler_mix(&m, 7, T, ids, targets);
    for (int i = 0; i < T; i++) assert_int_equal(ids[i], 'x');
    posemb_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers),      cmocka_unit_test(test_ruler_prompts_unchanged),
        cmocka_unit_test(test_keys_refused), cmocka_unit_test(test_needle_twice),
        cmocka_unit_test(test_depth),        cmocka_unit_test(test_repeatable_and_misfit),
        cmocka_unit_test(test_mix),          cmocka_unit_test(test_bpe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
