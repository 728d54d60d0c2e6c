/* The synthetic tasks' private pieces: one example being generated, and the
 * length-generalisation tasks of synthetic_seq.c. */
#ifndef POSEMB_SYNTHETIC_IMPL_H
#define POSEMB_SYNTHETIC_IMPL_H

#include <stdint.h>

#include "posemb/rng.h"
#include "study/synthetic.h"

typedef struct example {
    int32_t *ids;
    int T, n_train;
    int32_t label, start, end;
} example;

/* Decoder tasks on instances of varying size n, laid out as
 * [CLS] input [SEP] output [PAD]...: trained on sizes 1 .. nmax(n_train),
 * evaluated at a longer T on the sizes training never saw, nmax(n_train) + 1
 * .. nmax(T) (Kazemnejad et al. 2023; Ruoss et al. 2023's protocol). */
void gen_seq_copy(example *e, posemb_rng *r);      /* x [SEP] x */
void gen_seq_reverse(example *e, posemb_rng *r);   /* x [SEP] x reversed */
void gen_seq_copy_bits(example *e, posemb_rng *r); /* seq_copy over bits */
void gen_seq_copy_a4(example *e, posemb_rng *r);   /* seq_copy over 4 symbols (8, 16 alike) */
void gen_seq_copy_a8(example *e, posemb_rng *r);
void gen_seq_copy_a16(example *e, posemb_rng *r);
void gen_seq_reverse_a4(example *e, posemb_rng *r); /* seq_reverse over 4 symbols (8, 16 alike) */
void gen_seq_reverse_a8(example *e, posemb_rng *r);
void gen_seq_reverse_a16(example *e, posemb_rng *r);
void gen_seq_reverse_bits(example *e, posemb_rng *r);   /* seq_reverse over bits */
void gen_seq_sort(example *e, posemb_rng *r);           /* x [SEP] x sorted (16 symbols) */
void gen_seq_add(example *e, posemb_rng *r);            /* a [A] b [SEP] a + b, digits least significant first */
void gen_seq_add_hints(example *e, posemb_rng *r);      /* seq_add, each digit after a hint naming its place */
void gen_seq_parity(example *e, posemb_rng *r);         /* bits [SEP] their parity */
void gen_seq_parity_running(example *e, posemb_rng *r); /* bits [SEP] the parity of each prefix */
void gen_seq_lookup(example *e, posemb_rng *r);    /* k v .. [SEP] q a ..: the value of each query's last binding */
void gen_seq_lookup_a2(example *e, posemb_rng *r); /* seq_lookup with keys over 2 symbols (4, 8, 16 alike) */
void gen_seq_lookup_a4(example *e, posemb_rng *r);
void gen_seq_lookup_a8(example *e, posemb_rng *r);
void gen_seq_lookup_a16(example *e, posemb_rng *r);
/* task_impl's shape of a task whose errors have classes: copy and reverse of the input, key lookup. */
enum { SEQ_COPY = 1, SEQ_REVERSE = -1, SEQ_LOOKUP = 2 };
/* seq_lookup's queries per example (fewer when fewer distinct keys). */
enum { SEQ_LOOKUP_QUERIES = 4 };
/* seq_add_hints' hint tokens: the first SEQ_HINTS content tokens, so at most SEQ_HINTS - 1 digits. */
enum { SEQ_HINTS = 48 };
/* Whether a token after [SEP] is scored, for a task whose output holds more than its answer. */
int seq_scores_digits(int32_t token);
/* seq_error_class: posemb_syn_error_class for the input x [n] of a copy (dir 1) or reverse (dir -1). */
int seq_error_class(const int32_t *x, int n, int k, int dir, int alphabet, int32_t pred, double chance[3]);
/* seq_lookup_error_class: posemb_syn_error_class for answer k of a seq_lookup row [T]. */
int seq_lookup_error_class(const int32_t *row, int T, int k, int32_t pred, double chance[3]);
/* The chance token accuracy of a seq_ task (a uniform guess among its output symbols); 0 for others. */
double seq_chance(const char *name);

#endif
