/* The length-generalisation tasks (synthetic_impl.h): decoder tasks whose
 * instances vary in size, trained on small ones and evaluated on larger
 * ones only, as Kazemnejad et al. 2023 (copy, reverse, sort, addition,
 * parity) and Ruoss et al. 2023 (train sizes 1-40, score on 41 and up) do.
 * Each is scored on its output tokens (teacher forced, after [SEP]). */
#include <stdlib.h>
#include <string.h>

#include "synthetic_impl.h"
#include "core/rng_internal.h"

enum { SORT_SYMBOLS = 16 };

/* The largest size n whose layout (per tokens per unit of n, plus extra) fits T. */
static int nmax(int T, int per, int extra) { return (T - extra) / per; }

static int imin(int a, int b) { return a < b ? a : b; }

/* The instance size: 1 .. nmax(n_train) at the trained length; past it,
 * the sizes training never saw that fit T; never more than cap. */
static int size_of(const example *e, posemb_rng *r, int per, int extra, int cap)
{
    int lo = 1, hi = imin(nmax(e->n_train, per, extra), cap), top = imin(nmax(e->T, per, extra), cap);
    if (e->T > e->n_train && top > hi) {
        lo = hi + 1;
        hi = top;
    }
    if (hi < lo) hi = lo;
    return lo + (int)posemb_rng_below(r, (uint32_t)(hi - lo + 1));
}

/* [CLS] first, [PAD] everywhere after the instance. */
static void clear(example *e)
{
    e->ids[0] = SYN_CLS;
    for (int t = 1; t < e->T; t++) e->ids[t] = SYN_PAD;
}

static int32_t symbol(posemb_rng *r, int n) { return SYN_CONTENT + (int32_t)posemb_rng_below(r, (uint32_t)n); }

static int draw_bits(example *e, posemb_rng *r, int n);

/* x [SEP] then the output of copy (dir 1) or reverse (dir -1); x drawn
 * from the first alphabet content tokens, or bits (alphabet 0). */
static void copy_or_reverse(example *e, posemb_rng *r, int dir, int alphabet)
{
    clear(e);
    int n = size_of(e, r, 2, 2, e->T);
    if (!alphabet) draw_bits(e, r, n);
    for (int i = 0; alphabet && i < n; i++) e->ids[1 + i] = symbol(r, alphabet);
    e->ids[n + 1] = SYN_SEP;
    for (int i = 0; i < n; i++) e->ids[n + 2 + i] = e->ids[dir > 0 ? 1 + i : n - i];
}

void gen_seq_copy(example *e, posemb_rng *r) { copy_or_reverse(e, r, 1, POSEMB_SYN_VOCAB - SYN_CONTENT); }
void gen_seq_reverse(example *e, posemb_rng *r) { copy_or_reverse(e, r, -1, POSEMB_SYN_VOCAB - SYN_CONTENT); }

/* The symbol-repetition dial (issue 56, 5.): the same tasks over 4, 8 and 16
 * symbols, between bits (2) and the 48 content tokens. */
void gen_seq_copy_a4(example *e, posemb_rng *r) { copy_or_reverse(e, r, 1, 4); }
void gen_seq_copy_a8(example *e, posemb_rng *r) { copy_or_reverse(e, r, 1, 8); }
void gen_seq_copy_a16(example *e, posemb_rng *r) { copy_or_reverse(e, r, 1, 16); }
void gen_seq_reverse_a4(example *e, posemb_rng *r) { copy_or_reverse(e, r, -1, 4); }
void gen_seq_reverse_a8(example *e, posemb_rng *r) { copy_or_reverse(e, r, -1, 8); }
void gen_seq_reverse_a16(example *e, posemb_rng *r) { copy_or_reverse(e, r, -1, 16); }

/* Over bits, as Ruoss et al.'s string tasks are (reverse_string is this
 * reverse; their duplicate_string writes the string twice): every symbol
 * repeats, so a model cannot copy by looking up the token next to the one
 * it just wrote (which a 48-symbol alphabet mostly allows) and must find
 * its place by position. */
void gen_seq_copy_bits(example *e, posemb_rng *r) { copy_or_reverse(e, r, 1, 0); }
void gen_seq_reverse_bits(example *e, posemb_rng *r) { copy_or_reverse(e, r, -1, 0); }

void gen_seq_sort(example *e, posemb_rng *r)
{
    clear(e);
    int n = size_of(e, r, 2, 2, e->T), count[SORT_SYMBOLS] = {0};
    for (int i = 0; i < n; i++) {
        e->ids[1 + i] = symbol(r, SORT_SYMBOLS);
        count[e->ids[1 + i] - SYN_CONTENT]++;
    }
    e->ids[n + 1] = SYN_SEP;
    for (int s = 0, at = n + 2; s < SORT_SYMBOLS; s++) /* counting sort */
        for (int k = 0; k < count[s]; k++) e->ids[at++] = SYN_CONTENT + s;
}

/* [CLS] a_0..a_{n-1} [A] b_0..b_{n-1} [SEP] c_0..c_n: n-digit numbers, least significant digit first. */
void gen_seq_add(example *e, posemb_rng *r)
{
    clear(e);
    int n = size_of(e, r, 3, 4, e->T), carry = 0;
    int32_t *a = e->ids + 1, *b = e->ids + n + 2, *c = e->ids + 2 * n + 3;
    for (int i = 0; i < n; i++) {
        a[i] = SYN_DIGIT + (int32_t)posemb_rng_below(r, 10);
        b[i] = SYN_DIGIT + (int32_t)posemb_rng_below(r, 10);
    }
    e->ids[n + 1] = SYN_A;
    e->ids[2 * n + 2] = SYN_SEP;
    for (int i = 0; i < n; i++) {
        int s = (a[i] - SYN_DIGIT) + (b[i] - SYN_DIGIT) + carry;
        c[i] = SYN_DIGIT + s % 10;
        carry = s / 10;
    }
    c[n] = SYN_DIGIT + carry;
}

/* [CLS] h a_0 h a_1 .. [A] h b_0 h b_1 .. [SEP] h c_0 .. h c_n: seq_add with
 * index hints (Zhou et al. 2023): each digit follows a hint token naming its
 * place, so a_i, b_i and c_i are found by matching the hint before them, not
 * by counting positions. The hints are a run of n + 1 consecutive content
 * tokens starting at a random one, so that training sees every hint token, in
 * several places; only the sum's digits are scored (seq_scores_digits). */
void gen_seq_add_hints(example *e, posemb_rng *r)
{
    clear(e);
    int n = size_of(e, r, 6, 5, SEQ_HINTS - 1), carry = 0;
    int32_t h0 = SYN_CONTENT + (int32_t)posemb_rng_below(r, (uint32_t)(SEQ_HINTS - n));
    int32_t *a = e->ids + 1, *b = e->ids + 2 * n + 2, *c = e->ids + 4 * n + 3;
    for (int i = 0; i < n; i++) {
        a[2 * i] = b[2 * i] = h0 + i;
        a[2 * i + 1] = SYN_DIGIT + (int32_t)posemb_rng_below(r, 10);
        b[2 * i + 1] = SYN_DIGIT + (int32_t)posemb_rng_below(r, 10);
    }
    e->ids[2 * n + 1] = SYN_A;
    e->ids[4 * n + 2] = SYN_SEP;
    for (int i = 0; i <= n; i++) {
        int s = i < n ? (a[2 * i + 1] - SYN_DIGIT) + (b[2 * i + 1] - SYN_DIGIT) + carry : carry;
        c[2 * i] = h0 + i;
        c[2 * i + 1] = SYN_DIGIT + s % 10;
        carry = s / 10;
    }
}

int seq_scores_digits(int32_t token) { return token >= SYN_DIGIT && token < SYN_DIGIT + 10; }

/* [CLS] k_1 v_1 .. k_n v_n [SEP] q_1 a_1 .. q_m a_m: multi-key retrieval
 * with overwrites (issue 56, 5.). Keys are drawn from the first alphabet
 * content symbols, so they repeat as the alphabet shrinks; values are
 * digits. The queries are m = min(distinct keys, SEQ_LOOKUP_QUERIES) of
 * the keys present, each once, in random order (a key asked twice could be
 * answered by copying the first answer); the answer to a query is the value
 * of its key's last binding, as variable tracking overwrites. Only the
 * answers (digits) are scored. The size n is the number of pairs, fitted
 * to the longest output, so the context grows with T and the output does
 * not. */
static void lookup(example *e, posemb_rng *r, int alphabet)
{
    clear(e);
    int n = size_of(e, r, 2, 2 + 2 * SEQ_LOOKUP_QUERIES, e->T), distinct = 0;
    /* distinct keys by first occurrence; a key's last value (0: not bound yet, as no digit is) */
    int32_t keys[POSEMB_SYN_VOCAB], last[POSEMB_SYN_VOCAB] = {0};
    for (int i = 0; i < n; i++) {
        int32_t k = symbol(r, alphabet), v = SYN_DIGIT + (int32_t)posemb_rng_below(r, 10);
        if (!last[k]) keys[distinct++] = k;
        last[k] = v;
        e->ids[1 + 2 * i] = k;
        e->ids[2 + 2 * i] = v;
    }
    int m = imin(distinct, SEQ_LOOKUP_QUERIES), at = 2 * n + 1;
    e->ids[at++] = SYN_SEP;
    for (int j = 0; j < m; j++) { /* the first m of a Fisher-Yates shuffle of the distinct keys */
        int pick = j + (int)posemb_rng_below(r, (uint32_t)(distinct - j));
        int32_t k = keys[pick];
        keys[pick] = keys[j];
        keys[j] = k;
        e->ids[at++] = k;
        e->ids[at++] = last[k];
    }
}

void gen_seq_lookup(example *e, posemb_rng *r) { lookup(e, r, POSEMB_SYN_VOCAB - SYN_CONTENT); }
void gen_seq_lookup_a2(example *e, posemb_rng *r) { lookup(e, r, 2); }
void gen_seq_lookup_a4(example *e, posemb_rng *r) { lookup(e, r, 4); }
void gen_seq_lookup_a8(example *e, posemb_rng *r) { lookup(e, r, 8); }
void gen_seq_lookup_a16(example *e, posemb_rng *r) { lookup(e, r, 16); }

/* n random bits into ids[1..n]; returns their parity. */
static int draw_bits(example *e, posemb_rng *r, int n)
{
    int parity = 0;
    for (int i = 0; i < n; i++) {
        int bit = (int)posemb_rng_below(r, 2);
        e->ids[1 + i] = SYN_DIGIT + bit;
        parity ^= bit;
    }
    return parity;
}

void gen_seq_parity(example *e, posemb_rng *r)
{
    clear(e);
    int n = size_of(e, r, 1, 3, e->T), parity = draw_bits(e, r, n);
    e->ids[n + 1] = SYN_SEP;
    e->ids[n + 2] = SYN_DIGIT + parity;
}

/* [CLS] b_0..b_{n-1} [SEP] p_0..p_{n-1}, p_i the parity of b_0..b_i: the
 * scratchpad form of parity (Anil et al. 2022; Kazemnejad et al. 2023), each
 * output one step from the last (p_i = p_{i-1} xor b_i), the last the answer. */
void gen_seq_parity_running(example *e, posemb_rng *r)
{
    clear(e);
    int n = size_of(e, r, 2, 2, e->T), parity = 0;
    draw_bits(e, r, n);
    e->ids[n + 1] = SYN_SEP;
    for (int i = 0; i < n; i++) {
        parity ^= e->ids[1 + i] - SYN_DIGIT;
        e->ids[n + 2 + i] = SYN_DIGIT + parity;
    }
}

double seq_chance(const char *name)
{
    if (!strncmp(name, "seq_add", 7) || !strncmp(name, "seq_lookup", 10)) return 0.1;
    if (!strncmp(name, "seq_parity", 10) || !strcmp(name, "seq_copy_bits") || !strcmp(name, "seq_reverse_bits"))
        return 0.5;
    if (!strcmp(name, "seq_sort")) return 1.0 / SORT_SYMBOLS;
    const char *a = strstr(name, "_a");
    if (!strncmp(name, "seq_copy_a", 10) || !strncmp(name, "seq_reverse_a", 13)) return 1.0 / atoi(a + 2);
    if (!strncmp(name, "seq_", 4)) return 1.0 / (POSEMB_SYN_VOCAB - SYN_CONTENT);
    return 0;
}

/* A wrong answer's class from the position and content sets over nsym
 * symbols (p: the answer's index among them; -1 when the answer is right
 * or no symbol), with in chance[3] the share of the other wrong symbols
 * in each set and in the content set alone. */
static int error_sets(const unsigned char *inpos, const unsigned char *incont, int nsym, int others, int p,
                      double chance[3])
{
    int np = 0, nc = 0, only = 0;
    for (int v = 0; v < nsym; v++) {
        np += inpos[v];
        nc += incont[v];
        only += incont[v] && !inpos[v];
    }
    chance[0] = (double)np / others;
    chance[1] = (double)nc / others;
    chance[2] = (double)only / others;
    return p < 0 ? 0 : (inpos[p] ? SEQ_ERR_POSITION : 0) | (incont[p] ? SEQ_ERR_CONTENT : 0);
}

/* Which way a wrong answer token of copy (dir 1) or reverse (dir -1) went
 * (issue 56, 5.; rules fixed before any run, docs/study.md): x [n] the input,
 * k the output index (teacher forced: the outputs before it are right), src
 * = k (copy) or n - 1 - k (reverse) the input position it copies.
 * - position: pred is the symbol at src - 1 or src + 1, a neighbour of the
 *   right position (the address missed by one);
 * - content: k >= 1 and pred is the symbol after (copy; before: reverse) an
 *   occurrence of the previous output symbol other than its own source: the
 *   model found the previous symbol again and read on from there, the route
 *   of an induction head, which repeated symbols mislead.
 * Returns SEQ_ERR_POSITION | SEQ_ERR_CONTENT bits (0: neither), and in
 * chance[0], chance[1], chance[2] the share of the alphabet's other symbols
 * that would fall in the position set, the content set and the content set
 * alone (not the position set), what a uniformly wrong guess gets. The
 * position set always holds the previous output symbol (copy: source - 1 is
 * the previous source; reverse: source + 1), so repeating the token just
 * written counts as position. */
int seq_error_class(const int32_t *x, int n, int k, int dir, int alphabet, int32_t pred, double chance[3])
{
    int src = dir > 0 ? k : n - 1 - k, prev = dir > 0 ? k - 1 : n - k;
    int32_t want = x[src];
    unsigned char inpos[POSEMB_SYN_VOCAB] = {0}, incont[POSEMB_SYN_VOCAB] = {0};
    for (int s = src - 1; s <= src + 1; s += 2)
        if (s >= 0 && s < n && x[s] != want) inpos[x[s]] = 1;
    for (int j = 0; k >= 1 && j < n; j++) {
        int next = j + dir;
        if (j != prev && x[j] == x[prev] && next >= 0 && next < n && x[next] != want) incont[x[next]] = 1;
    }
    int p = pred < 0 || pred >= POSEMB_SYN_VOCAB || pred == want ? -1 : pred;
    return error_sets(inpos, incont, POSEMB_SYN_VOCAB, alphabet - 1, p, chance);
}

/* Which way a wrong answer to query k of seq_lookup went (issue 56, 5.;
 * rules fixed before any run, docs/study.md): the right answer is the
 * value of the queried key's last binding g.
 * - position: pred is the value of pair g - 1 or g + 1, a neighbour of the
 *   right binding (the address missed by one pair);
 * - content: pred is the value of another binding of the queried key (an
 *   earlier one: the key found by content, not the last of its bindings).
 * Returns SEQ_ERR_POSITION | SEQ_ERR_CONTENT bits (0: neither; -1: k is not
 * a query of the row), and in chance[3] the share of the 9 other digits in
 * the position set, the content set and the content set alone. */
int seq_lookup_error_class(const int32_t *row, int T, int k, int32_t pred, double chance[3])
{
    int sep = 1;
    while (sep < T && row[sep] != SYN_SEP) sep++;
    int n = (sep - 1) / 2, q = sep + 1 + 2 * k;
    if (sep >= T || k < 0 || q + 1 >= T || row[q] < SYN_CONTENT) return -1;
    const int32_t *key = row + 1, *val = row + 2; /* pair i: key[2 i], val[2 i] */
    int g = -1;
    for (int i = 0; i < n; i++) {
        if (!seq_scores_digits(val[2 * i])) return -1; /* not a seq_lookup row */
        if (key[2 * i] == row[q]) g = i;
    }
    if (g < 0) return -1;
    int32_t want = val[2 * g];
    unsigned char inpos[10] = {0}, incont[10] = {0};
    for (int i = g - 1; i <= g + 1; i += 2)
        if (i >= 0 && i < n && val[2 * i] != want) inpos[val[2 * i] - SYN_DIGIT] = 1;
    for (int i = 0; i < g; i++)
        if (key[2 * i] == row[q] && val[2 * i] != want) incont[val[2 * i] - SYN_DIGIT] = 1;
    int p = !seq_scores_digits(pred) || pred == want ? -1 : pred - SYN_DIGIT;
    return error_sets(inpos, incont, 10, 9, p, chance);
}
