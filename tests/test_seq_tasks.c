/* The length-generalisation tasks (seq_copy, seq_reverse, seq_sort, seq_add,
 * seq_add_hints, seq_parity, seq_parity_running): every example checked against its
 * definition, worked out here another way (addition by subtraction with
 * borrows, sorting by comparison, parity by counting, of every prefix for the
 * running parity); the sizes at the trained length are 1 .. nmax and
 * all occur, the sizes at a longer one are exactly the unseen ones; the LM
 * targets are the output tokens and nothing else (seq_add_hints: the sum's
 * digits, not its hints). */
#include <stdlib.h>
#include <string.h>

#include "study/synthetic.h"
#include "testutil.h"

enum { B = 2000, N_TRAIN = 42 };

/* The instance of a row: input [1, sep), output [sep + 1, end). */
typedef struct layout {
    int sep, end, n_in, n_out;
} layout;

static layout layout_of(const int32_t *row, int T)
{
    layout l = {-1, T, 0, 0};
    assert_int_equal(row[0], SYN_CLS);
    for (int t = 1; t < T; t++)
        if (row[t] == SYN_SEP) {
            assert_int_equal(l.sep, -1); /* one [SEP] */
            l.sep = t;
        }
    assert_true(l.sep > 1);
    while (l.end > l.sep + 1 && row[l.end - 1] == SYN_PAD) l.end--;
    for (int t = l.sep + 1; t < l.end; t++) assert_int_not_equal(row[t], SYN_PAD); /* padding only at the end */
    l.n_in = l.sep - 1;
    l.n_out = l.end - l.sep - 1;
    return l;
}

/* c - a - b = 0 for digits a[i * stride], b[.], c[.] (n, n, n + 1 of them), digit by digit with borrows. */
static void check_sum(const int32_t *a, const int32_t *b, const int32_t *c, int n, int stride)
{
    int borrow = 0;
    for (int i = 0; i <= n; i++) {
        int x = i < n ? a[i * stride] - SYN_DIGIT : 0, y = i < n ? b[i * stride] - SYN_DIGIT : 0;
        int z = c[i * stride] - SYN_DIGIT;
        assert_true(x >= 0 && x <= 9 && y >= 0 && y <= 9 && z >= 0 && z <= 9);
        int d = z - x - y - borrow;
        borrow = 0;
        while (d < 0) d += 10, borrow++;
        assert_int_equal(d, 0);
    }
    assert_int_equal(borrow, 0);
}

enum { HINTS = 48 }; /* seq_add_hints' hint tokens: the first 48 content tokens */

/* The first hints of seq_add_hints rows seen so far, by token: the start must be drawn over all of its range. */
static int hint_start_seen[HINTS];

/* seq_add_hints: [CLS] h a .. [A] h b .. [SEP] h c ..; the three runs of hints are the same
 * consecutive content tokens (one more for the sum); returns n. */
static int check_add_hints(const int32_t *in, const int32_t *out, layout l)
{
    int n = (l.n_in - 1) / 4;
    assert_int_equal(l.n_in, 4 * n + 1);
    assert_int_equal(in[2 * n], SYN_A);
    assert_int_equal(l.n_out, 2 * n + 2);
    const int32_t *b = in + 2 * n + 1;
    for (int i = 0; i <= n; i++) {
        assert_int_equal(out[2 * i], out[0] + i);
        if (i < n) assert_int_equal(in[2 * i], out[2 * i]);
        if (i < n) assert_int_equal(b[2 * i], out[2 * i]);
    }
    assert_true(out[0] >= SYN_CONTENT && out[2 * n] < SYN_CONTENT + HINTS);
    hint_start_seen[out[0] - SYN_CONTENT] = 1;
    check_sum(in + 1, b + 1, out + 1, n, 2);
    return n;
}

/* The symbols the _aK tasks drew (reset per task): all K must show up. */
static int symbols_seen[64];

static int cmp_i32(const void *a, const void *b) { return *(const int32_t *)a - *(const int32_t *)b; }

/* seq_lookup: k v .. [SEP] q a ..; solved here by scanning the pairs backwards from the end for
 * each query's key (the generator keeps a table of last values going forwards); the queries are
 * distinct keys of the input, as many as there are distinct keys up to 4. Returns n, the pairs. */
static int check_lookup(const char *name, const int32_t *in, const int32_t *out, layout l)
{
    const char *a = strstr(name, "_a");
    int alphabet = a ? atoi(a + 2) : POSEMB_SYN_VOCAB - SYN_CONTENT, n = l.n_in / 2, distinct = 0;
    int present[64] = {0};
    assert_int_equal(l.n_in, 2 * n);
    for (int i = 0; i < n; i++) {
        assert_true(in[2 * i] >= SYN_CONTENT && in[2 * i] < SYN_CONTENT + alphabet);
        assert_true(in[2 * i + 1] >= SYN_DIGIT && in[2 * i + 1] < SYN_DIGIT + 10);
        distinct += !present[in[2 * i] - SYN_CONTENT];
        present[in[2 * i] - SYN_CONTENT] = 1;
        symbols_seen[in[2 * i] - SYN_CONTENT] = 1;
    }
    int m = l.n_out / 2, asked[64] = {0};
    assert_int_equal(l.n_out, 2 * m);
    assert_int_equal(m, distinct < 4 ? distinct : 4);
    for (int j = 0; j < m; j++) {
        int32_t q = out[2 * j];
        assert_true(q >= SYN_CONTENT && q < SYN_CONTENT + 64 && present[q - SYN_CONTENT]);
        assert_false(asked[q - SYN_CONTENT]);
        asked[q - SYN_CONTENT] = 1;
        int i = n - 1;
        while (in[2 * i] != q) i--;
        assert_int_equal(out[2 * j + 1], in[2 * i + 1]);
    }
    return n;
}

/* Checks one row of task name; returns its size n. */
static int check_row(const char *name, const int32_t *row, int T)
{
    layout l = layout_of(row, T);
    const int32_t *in = row + 1, *out = row + l.sep + 1;
    if (!strncmp(name, "seq_lookup", 10)) return check_lookup(name, in, out, l);
    if (!strncmp(name, "seq_copy", 8) || !strncmp(name, "seq_reverse", 11)) {
        int rev = !strncmp(name, "seq_reverse", 11), bits = strstr(name, "_bits") != NULL;
        const char *a = strstr(name, "_a");
        int alphabet = a ? atoi(a + 2) : POSEMB_SYN_VOCAB - SYN_CONTENT; /* seq_copy_a4: the first 4 symbols */
        assert_int_equal(l.n_out, l.n_in);
        for (int i = 0; i < l.n_in; i++) {
            assert_int_equal(out[i], in[rev ? l.n_in - 1 - i : i]);
            if (bits) assert_true(in[i] == SYN_DIGIT || in[i] == SYN_DIGIT + 1);
            else assert_true(in[i] >= SYN_CONTENT && in[i] < SYN_CONTENT + alphabet);
            if (!bits && a) symbols_seen[in[i] - SYN_CONTENT] = 1;
        }
        return l.n_in;
    }
    if (!strcmp(name, "seq_sort")) {
        int32_t sorted[512];
        assert_int_equal(l.n_out, l.n_in);
        memcpy(sorted, in, (size_t)l.n_in * sizeof *in);
        qsort(sorted, (size_t)l.n_in, sizeof *sorted, cmp_i32);
        assert_memory_equal(out, sorted, (size_t)l.n_in * sizeof *in);
        for (int i = 0; i < l.n_in; i++) assert_true(in[i] >= SYN_CONTENT && in[i] < SYN_CONTENT + 16);
        return l.n_in;
    }
    if (!strcmp(name, "seq_add")) {
        int n = (l.n_in - 1) / 2;
        assert_int_equal(in[n], SYN_A);
        assert_int_equal(l.n_out, n + 1);
        check_sum(in, in + n + 1, out, n, 1);
        return n;
    }
    if (!strcmp(name, "seq_add_hints")) return check_add_hints(in, out, l);
    if (!strcmp(name, "seq_parity_running")) { /* output i: the count of ones in bits 0..i, mod 2 */
        assert_int_equal(l.n_out, l.n_in);
        for (int i = 0; i < l.n_in; i++) {
            int ones = 0;
            for (int j = 0; j <= i; j++) ones += in[j] == SYN_DIGIT + 1;
            assert_true(in[i] == SYN_DIGIT || in[i] == SYN_DIGIT + 1);
            assert_int_equal(out[i], SYN_DIGIT + ones % 2);
        }
        return l.n_in;
    }
    int ones = 0; /* seq_parity */
    for (int i = 0; i < l.n_in; i++) ones += in[i] == SYN_DIGIT + 1;
    assert_int_equal(l.n_out, 1);
    assert_int_equal(out[0], SYN_DIGIT + ones % 2);
    return l.n_in;
}

/* The largest size of each task at length T, from its layout. */
static int size_max(const char *name, int T)
{
    if (!strcmp(name, "seq_add")) return (T - 4) / 3;
    if (!strcmp(name, "seq_add_hints")) return (T - 5) / 6 < HINTS - 1 ? (T - 5) / 6 : HINTS - 1;
    if (!strcmp(name, "seq_parity")) return T - 3;
    if (!strncmp(name, "seq_lookup", 10)) return (T - 10) / 2; /* 4 queries and their answers at most */
    return (T - 2) / 2;
}

static void test_seq_tasks(void **state)
{
    static const char *const names[] = {"seq_copy",       "seq_reverse",     "seq_copy_bits",      "seq_reverse_bits",
                                        "seq_copy_a4",    "seq_copy_a8",     "seq_copy_a16",       "seq_reverse_a4",
                                        "seq_reverse_a8", "seq_reverse_a16", "seq_sort",           "seq_add",
                                        "seq_add_hints",  "seq_parity",      "seq_parity_running", "seq_lookup",
                                        "seq_lookup_a2",  "seq_lookup_a4",   "seq_lookup_a8",      "seq_lookup_a16"};
    static int32_t ids[B * 8 * N_TRAIN], tg[B * 8 * N_TRAIN];
    for (int k = 0; k < (int)(sizeof names / sizeof *names); k++) {
        const posemb_syn_task *t = posemb_syn_find(names[k]);
        assert_non_null(t);
        memset(symbols_seen, 0, sizeof symbols_seen);
        assert_int_equal(t->kind, POSEMB_SYN_LM);
        for (int mult = 1; mult <= 8; mult *= mult == 1 ? 4 : 2) {
            int T = N_TRAIN * mult, lo = mult == 1 ? 1 : size_max(names[k], N_TRAIN) + 1, hi = size_max(names[k], T);
            int seen_lo = 0, seen_hi = 0;
            posemb_syn_batch(t, 11, 0, B, T, N_TRAIN, ids, NULL, NULL, NULL);
            posemb_syn_lm_targets(t, ids, B, T, tg);
            for (int b = 0; b < B; b++) {
                const int32_t *row = ids + (size_t)b * T, *g = tg + (size_t)b * T;
                int n = check_row(names[k], row, T);
                assert_true(n >= lo && n <= hi);
                seen_lo |= n == lo;
                seen_hi |= n == hi;
                layout l = layout_of(row, T);
                int digits_only = !strcmp(names[k], "seq_add_hints") || !strncmp(names[k], "seq_lookup", 10);
                for (int i = 0; i < T; i++) {
                    int out = i > l.sep && i < l.end && (!digits_only || (row[i] >= SYN_DIGIT && row[i] < SYN_CONTENT));
                    assert_int_equal(g[i], out ? row[i] : -100);
                }
            }
            if (!seen_lo || !seen_hi) fail_msg("%s at %d: sizes %d and %d not both drawn", names[k], T, lo, hi);
        }
        const char *a = strstr(names[k], "_a");
        for (int s = 0; a && s < atoi(a + 2); s++)
            if (!symbols_seen[s]) fail_msg("%s: symbol %d never drawn", names[k], s);
    }
    for (int h = 0; h < HINTS - 1; h++) /* 1-digit sums start anywhere but at the last hint */
        if (!hint_start_seen[h]) fail_msg("seq_add_hints: no run of hints starts at hint %d", h);
    assert_false(hint_start_seen[HINTS - 1]);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_add"), N_TRAIN, N_TRAIN) == 0.1);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_add_hints"), N_TRAIN, N_TRAIN) == 0.1);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_parity"), N_TRAIN, N_TRAIN) == 0.5);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_parity_running"), N_TRAIN, N_TRAIN) == 0.5);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_sort"), N_TRAIN, N_TRAIN) == 1.0 / 16);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_copy_bits"), N_TRAIN, N_TRAIN) == 0.5);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_reverse_bits"), N_TRAIN, N_TRAIN) == 0.5);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_copy"), N_TRAIN, N_TRAIN) ==
                1.0 / (POSEMB_SYN_VOCAB - SYN_CONTENT));
    assert_true(posemb_syn_chance(posemb_syn_find("seq_reverse_a8"), N_TRAIN, N_TRAIN) == 1.0 / 8);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_lookup"), N_TRAIN, N_TRAIN) == 0.1);
    assert_true(posemb_syn_chance(posemb_syn_find("seq_lookup_a2"), N_TRAIN, N_TRAIN) == 0.1);
}

/* seq_lookup's error classes on a hand-made row: pairs (a 1) (b 2) (a 3) (c 4) (a 5) (d 6), so a's last
 * binding is pair 4 (5), its neighbours hold 4 and 6, its earlier bindings 1 and 3. */
static void test_lookup_error_classes(void **state)
{
    (void)state;
    enum { a = SYN_CONTENT, b, c, d };
    const posemb_syn_task *t = posemb_syn_find("seq_lookup_a4");
    enum { D = SYN_DIGIT };
    int32_t row[24] = {SYN_CLS, a, D + 1, b,       D + 2, a,     D + 3, c,     D + 4, a,
                       D + 5,   d, D + 6, SYN_SEP, c,     D + 4, a,     D + 5, b,     D + 2};
    double ch[3];
    /* query 1 (a, want 5): 4 and 6 position, 1 and 3 content, 7 neither; the right answer has no class */
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 4, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 6, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 1, ch), SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 3, ch), SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 7, ch), 0);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 1, D + 5, ch), 0);
    TU_CLOSE(ch[0], 2.0 / 9, 1e-12, 0, "lookup position chance", 0);
    TU_CLOSE(ch[1], 2.0 / 9, 1e-12, 0, "lookup content chance", 0);
    TU_CLOSE(ch[2], 2.0 / 9, 1e-12, 0, "lookup content-alone chance", 0);
    /* query 0 (c, want 4, bound once: no content set; neighbours a 3 and a 5) */
    assert_int_equal(posemb_syn_error_class(t, row, 24, 0, D + 3, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(t, row, 24, 0, D + 1, ch), 0);
    TU_CLOSE(ch[1], 0.0, 1e-12, 0, "lookup k=0 content chance", 0);
    /* query 2 (b, want 2, pair 1; neighbours a 1 and a 3) */
    assert_int_equal(posemb_syn_error_class(t, row, 24, 2, D + 1, ch), SEQ_ERR_POSITION);
    /* an earlier binding next to the last one is both: pairs (a 1) (a 2), a wants 2, 1 is both */
    int32_t r2[24] = {SYN_CLS, a, D + 1, a, D + 2, SYN_SEP, a, D + 2};
    assert_int_equal(posemb_syn_error_class(t, r2, 24, 0, D + 1, ch), SEQ_ERR_POSITION | SEQ_ERR_CONTENT);
    TU_CLOSE(ch[2], 0.0, 1e-12, 0, "lookup both: content-alone chance", 0);
    /* no query 3, and a copy task's row is not read as a lookup */
    assert_int_equal(posemb_syn_error_class(t, row, 24, 3, D + 1, ch), -1);
    int32_t copy_row[24] = {SYN_CLS, a, b, a, c, SYN_SEP, a, b, a, c};
    assert_int_equal(posemb_syn_error_class(t, copy_row, 24, 0, D + 1, ch), -1);
}

/* The error classes on hand-made rows (issue 56, 5.): x = a b a c (symbols 16 17 16 18 of 4). */
static void test_error_classes(void **state)
{
    (void)state;
    enum { a = SYN_CONTENT, b, c, d };
    const posemb_syn_task *copy = posemb_syn_find("seq_copy_a4"), *rev = posemb_syn_find("seq_reverse_a4");
    int32_t row[16] = {SYN_CLS, a, b, a, c, SYN_SEP, a, b, a, c};
    double ch[3];
    /* copy, output 2 (want a, source 2; neighbours b and c; previous output b, which occurs once: no content
     * set): c is a position error, d neither */
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 2, c, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 2, d, ch), 0);
    TU_CLOSE(ch[0], 2.0 / 3, 1e-12, 0, "copy k=2 position chance", 0);
    TU_CLOSE(ch[1], 0.0, 1e-12, 0, "copy k=2 content chance", 0);
    /* copy, output 1 (want b, source 1; neighbours a, a: not wrong symbols other than a; previous output a
     * also at 2, followed by c): c is content, a position */
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 1, c, ch), SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 1, a, ch), SEQ_ERR_POSITION);
    /* copy, output 3 (want c, source 3; neighbour a at 2; previous output a at 2, its other occurrence 0
     * followed by b): a position, b content */
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 3, a, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 3, b, ch), SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(copy, row, 16, 3, c, ch), 0); /* right: no class */
    /* reverse: output 1 (want a, source 2; neighbours b, c; previous output c, once): b, c position */
    int32_t rrow[16] = {SYN_CLS, a, b, a, c, SYN_SEP, c, a, b, a};
    assert_int_equal(posemb_syn_error_class(rev, rrow, 16, 1, b, ch), SEQ_ERR_POSITION);
    /* reverse: output 2 (want b, source 1; neighbours a, a; previous output a at 2, also at 0, before which
     * nothing): d neither; output 3 (want a, source 0; neighbour b; previous b once): b position */
    assert_int_equal(posemb_syn_error_class(rev, rrow, 16, 2, d, ch), 0);
    TU_CLOSE(ch[1], 0.0, 1e-12, 0, "reverse k=2 content chance", 0);
    assert_int_equal(posemb_syn_error_class(rev, rrow, 16, 3, b, ch), SEQ_ERR_POSITION);
    /* x = a b a b, copy output 2 (want a; neighbours b, b; previous b also at 3, followed by nothing; at 1
     * is its own source): b position only */
    int32_t r2[16] = {SYN_CLS, a, b, a, b, SYN_SEP, a, b, a, b};
    assert_int_equal(posemb_syn_error_class(copy, r2, 16, 2, b, ch), SEQ_ERR_POSITION);
    /* x = b a c a d, copy output 2 (want c, source 2; neighbours a, a; previous a at 1, also at 3 followed
     * by d): a position, d content; chance 1/3 each */
    int32_t r3[16] = {SYN_CLS, b, a, c, a, d, SYN_SEP};
    assert_int_equal(posemb_syn_error_class(copy, r3, 16, 2, a, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(copy, r3, 16, 2, d, ch), SEQ_ERR_CONTENT);
    TU_CLOSE(ch[0], 1.0 / 3, 1e-12, 0, "position chance", 0);
    TU_CLOSE(ch[1], 1.0 / 3, 1e-12, 0, "content chance", 0);
    TU_CLOSE(ch[2], 1.0 / 3, 1e-12, 0, "content-alone chance", 0);
    /* reverse with a content set: x = b a c a d, output 2 (want c, source 2; neighbours a, a; previous output a
     * at 3, also at 1, before which b): b content, a position; content alone {b}: 1/3 */
    int32_t r5[16] = {SYN_CLS, b, a, c, a, d, SYN_SEP};
    assert_int_equal(posemb_syn_error_class(rev, r5, 16, 2, b, ch), SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(rev, r5, 16, 2, a, ch), SEQ_ERR_POSITION);
    TU_CLOSE(ch[2], 1.0 / 3, 1e-12, 0, "reverse content-alone chance", 0);
    /* bits: x = 0 1 1 0, copy output 2 (want 1; neighbours 1, 0: position {0}; previous 1 also at 2, followed
     * by 0: content {0}): 0 is both, and every chance is 1 but the content-alone one, 0 */
    int32_t r6[16] = {SYN_CLS, SYN_DIGIT, SYN_DIGIT + 1, SYN_DIGIT + 1, SYN_DIGIT, SYN_SEP};
    assert_int_equal(posemb_syn_error_class(posemb_syn_find("seq_copy_bits"), r6, 16, 2, SYN_DIGIT, ch),
                     SEQ_ERR_POSITION | SEQ_ERR_CONTENT);
    TU_CLOSE(ch[0], 1.0, 1e-12, 0, "bits position chance", 0);
    TU_CLOSE(ch[2], 0.0, 1e-12, 0, "bits content-alone chance", 0);
    /* x = c a b d a d */
    int32_t r4[16] = {SYN_CLS, c, a, b, d, a, d, SYN_SEP};
    /* copy output 3 (want d, source 3; neighbours b, a; previous b at 2 only): a position; output 2 (want b,
     * source 2; neighbours a, d; previous a at 1, also at 4 followed by d): d both, c neither */
    assert_int_equal(posemb_syn_error_class(copy, r4, 16, 3, a, ch), SEQ_ERR_POSITION);
    assert_int_equal(posemb_syn_error_class(copy, r4, 16, 2, d, ch), SEQ_ERR_POSITION | SEQ_ERR_CONTENT);
    assert_int_equal(posemb_syn_error_class(copy, r4, 16, 2, c, ch), 0);
    assert_int_equal(posemb_syn_error_class(posemb_syn_find("seq_sort"), r4, 16, 2, c, ch), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_seq_tasks), cmocka_unit_test(test_error_classes),
                                       cmocka_unit_test(test_lookup_error_classes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
