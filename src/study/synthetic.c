/* The synthetic tasks. Each generator fills one example from its own PCG
 * stream (seed, index), so that any example can be regenerated alone. */
#include <string.h>

#include "synthetic_impl.h"
#include "core/rng_internal.h"

/* Content tokens everywhere but [CLS]. */
static void fill_content(example *e, posemb_rng *r)
{
    e->ids[0] = SYN_CLS;
    for (int t = 1; t < e->T; t++)
        e->ids[t] = SYN_CONTENT + (int32_t)posemb_rng_below(r, POSEMB_SYN_VOCAB - SYN_CONTENT);
}

/* Two distinct positions in [1, T). */
static void two_positions(posemb_rng *r, int T, int *a, int *b)
{
    *a = 1 + (int)posemb_rng_below(r, (uint32_t)(T - 1));
    do *b = 1 + (int)posemb_rng_below(r, (uint32_t)(T - 1));
    while (*b == *a);
}

/* absolute: is marker A in the first half of the trained length? */
static void gen_absolute(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int p = 1 + (int)posemb_rng_below(r, (uint32_t)(e->T - 1));
    e->ids[p] = SYN_A;
    e->label = p < e->n_train / 2;
}

/* order: does marker A come before marker B? */
static void gen_order(example *e, posemb_rng *r)
{
    int a, b;
    fill_content(e, r);
    two_positions(r, e->T, &a, &b);
    e->ids[a] = SYN_A;
    e->ids[b] = SYN_B;
    e->label = a < b;
}

/* distance: the digit after [CLS] says d; is |pos(A) - pos(B)| = d? (half yes) */
static void gen_distance(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int d = 1 + (int)posemb_rng_below(r, 8), yes = (int)posemb_rng_below(r, 2), a, b;
    e->ids[1] = SYN_DIGIT + d;
    do {
        a = 2 + (int)posemb_rng_below(r, (uint32_t)(e->T - 2));
        b = yes ? a + d : 2 + (int)posemb_rng_below(r, (uint32_t)(e->T - 2));
    } while (b >= e->T || b == a || (!yes && (b - a == d || a - b == d)));
    e->ids[a] = SYN_A;
    e->ids[b] = SYN_B;
    e->label = yes;
}

/* near: is B within NEAR tokens of A, on either side? Half the examples
 * are near (distance 1..NEAR, uniform), half far (uniform over the pairs
 * further apart), at any position: relative distance, wherever it is. */
enum { NEAR = 4 };

static void gen_near(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int yes = (int)posemb_rng_below(r, 2), a, b;
    do {
        a = 1 + (int)posemb_rng_below(r, (uint32_t)(e->T - 1));
        int d = yes ? 1 + (int)posemb_rng_below(r, NEAR) : NEAR + 1 + (int)posemb_rng_below(r, (uint32_t)(e->T - 2));
        b = posemb_rng_below(r, 2) ? a + d : a - d;
    } while (b < 1 || b >= e->T);
    e->ids[a] = SYN_A;
    e->ids[b] = SYN_B;
    e->label = yes;
}

/* offset: the digit after [CLS] says d in 1..8; the answer is the single
 * token d positions after the cue A: a distance given in the input. */
static void gen_offset(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int d = 1 + (int)posemb_rng_below(r, 8);
    e->ids[1] = SYN_DIGIT + d;
    int p = 2 + (int)posemb_rng_below(r, (uint32_t)(e->T - 2 - d));
    e->ids[p] = SYN_A;
    e->start = e->end = p + d;
}

/* retrieve: the 3 tokens right after the cue A. */
static void gen_retrieve(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int p = 1 + (int)posemb_rng_below(r, (uint32_t)(e->T - 4));
    e->ids[p] = SYN_A;
    e->start = p + 1;
    e->end = p + 3;
}

/* between: the tokens strictly between A and B (1 to 6 of them). */
static void gen_between(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int len = 1 + (int)posemb_rng_below(r, 6), a = 1 + (int)posemb_rng_below(r, (uint32_t)(e->T - len - 2));
    e->ids[a] = SYN_A;
    e->ids[a + len + 1] = SYN_B;
    e->start = a + 1;
    e->end = a + len;
}

/* copy: after marker B at position 1 comes a query token q; q occurs once
 * more later; the answer is that occurrence and the token after it. */
static void gen_copy(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int32_t q = e->ids[2];
    for (int t = 3; t < e->T; t++)
        while (e->ids[t] == q) e->ids[t] = SYN_CONTENT + (int32_t)posemb_rng_below(r, POSEMB_SYN_VOCAB - SYN_CONTENT);
    e->ids[1] = SYN_B;
    int p = 3 + (int)posemb_rng_below(r, (uint32_t)(e->T - 4));
    e->ids[p] = q;
    e->start = p;
    e->end = p + 1;
}

/* reverse (causal LM): [CLS] x1..xk [SEP] xk..x1, k = (T - 2) / 2, scored on the
 * tokens after [SEP]; a leftover last token is [PAD]. The first answer token
 * needs the last input token, the j-th the one 2j positions further back. */
static void gen_reverse(example *e, posemb_rng *r)
{
    fill_content(e, r);
    int k = (e->T - 2) / 2;
    e->ids[k + 1] = SYN_SEP;
    for (int j = 0; j < k; j++) e->ids[k + 2 + j] = e->ids[k - j];
    for (int t = 2 * k + 2; t < e->T; t++) e->ids[t] = SYN_PAD;
}

typedef struct task_impl {
    posemb_syn_task t;
    void (*gen)(example *e, posemb_rng *r);
    int (*scored)(int32_t token); /* a causal-LM task's scored output tokens; NULL: all of them */
    int dir, alphabet; /* SEQ_COPY, SEQ_REVERSE or SEQ_LOOKUP over alphabet symbols (errors with classes); 0: none */
} task_impl;

#define ALL (POSEMB_SYN_VOCAB - SYN_CONTENT)

static const task_impl TASKS[] = {
    {{"absolute", POSEMB_SYN_CLASSIFY, "is marker A in the first half of the trained length?"},
     gen_absolute,
     NULL,
     0,
     0},
    {{"order", POSEMB_SYN_CLASSIFY, "does marker A come before marker B?"}, gen_order, NULL, 0, 0},
    {{"near", POSEMB_SYN_CLASSIFY, "is marker B within 4 tokens of marker A?"}, gen_near, NULL, 0, 0},
    {{"distance", POSEMB_SYN_CLASSIFY, "is the distance between A and B the digit given in the input?"},
     gen_distance,
     NULL,
     0,
     0},
    {{"offset", POSEMB_SYN_SPAN, "the token d positions after the cue A, d the digit given after [CLS]"},
     gen_offset,
     NULL,
     0,
     0},
    {{"retrieve", POSEMB_SYN_SPAN, "the span of 3 tokens after the cue A"}, gen_retrieve, NULL, 0, 0},
    {{"between", POSEMB_SYN_SPAN, "the span strictly between markers A and B"}, gen_between, NULL, 0, 0},
    {{"copy", POSEMB_SYN_SPAN, "the pair that follows the earlier occurrence of a query token"}, gen_copy, NULL, 0, 0},
    {{"reverse", POSEMB_SYN_LM, "a causal LM writes the tokens before [SEP] in reverse order"},
     gen_reverse,
     NULL,
     SEQ_REVERSE,
     ALL},
    {{"seq_copy", POSEMB_SYN_LM, "copy a sequence of 1 .. nmax tokens; tested on longer ones"},
     gen_seq_copy,
     NULL,
     SEQ_COPY,
     ALL},
    {{"seq_reverse", POSEMB_SYN_LM, "reverse a sequence of 1 .. nmax tokens; tested on longer ones"},
     gen_seq_reverse,
     NULL,
     SEQ_REVERSE,
     ALL},
    {{"seq_copy_bits", POSEMB_SYN_LM, "seq_copy over bits (every symbol repeats)"},
     gen_seq_copy_bits,
     NULL,
     SEQ_COPY,
     2},
    {{"seq_reverse_bits", POSEMB_SYN_LM, "seq_reverse over bits (Ruoss et al.'s reverse_string)"},
     gen_seq_reverse_bits,
     NULL,
     SEQ_REVERSE,
     2},
    {{"seq_copy_a4", POSEMB_SYN_LM, "seq_copy over 4 symbols"}, gen_seq_copy_a4, NULL, SEQ_COPY, 4},
    {{"seq_copy_a8", POSEMB_SYN_LM, "seq_copy over 8 symbols"}, gen_seq_copy_a8, NULL, SEQ_COPY, 8},
    {{"seq_copy_a16", POSEMB_SYN_LM, "seq_copy over 16 symbols"}, gen_seq_copy_a16, NULL, SEQ_COPY, 16},
    {{"seq_reverse_a4", POSEMB_SYN_LM, "seq_reverse over 4 symbols"}, gen_seq_reverse_a4, NULL, SEQ_REVERSE, 4},
    {{"seq_reverse_a8", POSEMB_SYN_LM, "seq_reverse over 8 symbols"}, gen_seq_reverse_a8, NULL, SEQ_REVERSE, 8},
    {{"seq_reverse_a16", POSEMB_SYN_LM, "seq_reverse over 16 symbols"}, gen_seq_reverse_a16, NULL, SEQ_REVERSE, 16},
    {{"seq_lookup", POSEMB_SYN_LM, "the value of each query's last binding among 1 .. nmax key-value pairs"},
     gen_seq_lookup,
     seq_scores_digits,
     SEQ_LOOKUP,
     ALL},
    {{"seq_lookup_a2", POSEMB_SYN_LM, "seq_lookup with keys over 2 symbols"},
     gen_seq_lookup_a2,
     seq_scores_digits,
     SEQ_LOOKUP,
     2},
    {{"seq_lookup_a4", POSEMB_SYN_LM, "seq_lookup with keys over 4 symbols"},
     gen_seq_lookup_a4,
     seq_scores_digits,
     SEQ_LOOKUP,
     4},
    {{"seq_lookup_a8", POSEMB_SYN_LM, "seq_lookup with keys over 8 symbols"},
     gen_seq_lookup_a8,
     seq_scores_digits,
     SEQ_LOOKUP,
     8},
    {{"seq_lookup_a16", POSEMB_SYN_LM, "seq_lookup with keys over 16 symbols"},
     gen_seq_lookup_a16,
     seq_scores_digits,
     SEQ_LOOKUP,
     16},
    {{"seq_sort", POSEMB_SYN_LM, "sort a sequence of 16 symbols; tested on longer ones"}, gen_seq_sort, NULL, 0, 0},
    {{"seq_add", POSEMB_SYN_LM, "add two n-digit numbers, least significant digit first; tested on more digits"},
     gen_seq_add,
     NULL,
     0,
     0},
    {{"seq_add_hints", POSEMB_SYN_LM,
      "seq_add with index hints: each digit follows a token naming its place; tested on more digits"},
     gen_seq_add_hints,
     seq_scores_digits,
     0,
     0},
    {{"seq_parity", POSEMB_SYN_LM, "the parity of a bit string; tested on longer strings"}, gen_seq_parity, NULL, 0, 0},
    {{"seq_parity_running", POSEMB_SYN_LM,
      "the parity of each prefix of a bit string (a scratchpad: the last is the parity); tested on longer strings"},
     gen_seq_parity_running,
     NULL,
     0,
     0},
};
#define N_TASKS (int)(sizeof TASKS / sizeof TASKS[0])

const char *posemb_syn_kind_name(posemb_syn_kind k)
{
    return k == POSEMB_SYN_SPAN ? "span" : k == POSEMB_SYN_LM ? "lm" : "classification";
}

const char *posemb_syn_metric_name(posemb_syn_kind k)
{
    return k == POSEMB_SYN_SPAN ? "exact_match" : k == POSEMB_SYN_LM ? "token_accuracy" : "accuracy";
}

int posemb_syn_count(void) { return N_TASKS; }
const posemb_syn_task *posemb_syn_at(int i) { return i >= 0 && i < N_TASKS ? &TASKS[i].t : NULL; }

const posemb_syn_task *posemb_syn_find(const char *name)
{
    for (int i = 0; i < N_TASKS; i++)
        if (!strcmp(TASKS[i].t.name, name)) return &TASKS[i].t;
    return NULL;
}

void posemb_syn_batch(const posemb_syn_task *t, uint64_t seed, long k0, int B, int T, int n_train, int32_t *ids,
                      int32_t *labels, int32_t *starts, int32_t *ends)
{
    const task_impl *impl = (const task_impl *)t; /* t is the first member of its task_impl */
    for (int b = 0; b < B; b++) {
        posemb_rng r;
        posemb_rng_seed(&r, seed, (uint64_t)(k0 + b) * 8 + (uint64_t)T); /* one stream per example and length */
        example e = {ids + (size_t)b * T, T, n_train, 0, 0, 0};
        impl->gen(&e, &r);
        if (labels) labels[b] = e.label;
        if (starts) starts[b] = e.start;
        if (ends) ends[b] = e.end;
    }
}

void posemb_syn_lm_targets(const posemb_syn_task *task, const int32_t *ids, int B, int T, int32_t *targets)
{
    int (*scored)(int32_t) = ((const task_impl *)task)->scored;
    for (int b = 0; b < B; b++) {
        const int32_t *row = ids + (size_t)b * T;
        int32_t *tg = targets + (size_t)b * T;
        int after = 0;
        for (int t = 0; t < T; t++) {
            tg[t] = after && row[t] != SYN_PAD && (!scored || scored(row[t])) ? row[t] : -100;
            after |= row[t] == SYN_SEP;
        }
    }
}

double posemb_syn_chance(const posemb_syn_task *t, int T, int n_train)
{
    if (!strcmp(t->name, "absolute")) { /* P(A in [1, n_train/2)) */
        double p = (double)(n_train / 2 - 1) / (T - 1);
        return p > 0.5 ? p : 1 - p;
    }
    if (t->kind == POSEMB_SYN_CLASSIFY) return 0.5;
    if (seq_chance(t->name) > 0) return seq_chance(t->name);
    if (t->kind == POSEMB_SYN_LM)
        return 1.0 / (POSEMB_SYN_VOCAB - SYN_CONTENT); /* a uniform guess among the content tokens */
    return 1.0 / (T - 2);                              /* guessing a start; the length of the span then follows */
}

int posemb_syn_error_class(const posemb_syn_task *t, const int32_t *row, int T, int k, int32_t pred, double chance[3])
{
    const task_impl *impl = (const task_impl *)t;
    if (impl->dir == SEQ_LOOKUP) return seq_lookup_error_class(row, T, k, pred, chance);
    int n = 0;
    while (n + 1 < T && row[n + 1] != SYN_SEP) n++;
    if (!impl->dir || k < 0 || k >= n) return -1;
    return seq_error_class(row + 1, n, k, impl->dir, impl->alphabet, pred, chance);
}
