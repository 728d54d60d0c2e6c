/* Does a fine-tuned SQuAD-locate model tell an answer's first token from its
 * last? (slice 16 of results/study-data/README.md)
 *
 * In an encoder ALiBi adds -m |i - j|, the same for a key on either side, so
 * only the input's own asymmetries (the question left of the context, padding
 * on the right) can tell a model which end of a matching run of tokens is its
 * start. A model that cannot scores both ends alike as start and as end, and
 * the decoder's best span (start <= end) is then often one end alone. For each
 * held-out window of 128 tokens whose answer lies inside it, this reads the
 * span head's logits at the answer's first token f and last token l:
 *   start order  the share of windows with a multi-token answer where start(f) > start(l)
 *   end order    the share where end(l) > end(f)
 * and decodes the window's best span by the study's rule (start <= end, at most
 * 30 tokens, context tokens only, the first of equal spans) applied to that
 * window alone (the study takes one span per question over all its windows,
 * with or without the answer), sorted into: exact (the answer's tokens); one
 * token at an end of the answer; another part of the answer; anything else
 * (overlapping the answer or elsewhere). Windows whose answer is one token
 * (f = l) need no direction and are reported apart. Every count is of windows:
 * with a stride of 32 one answer can lie in several of a question's windows.
 *
 *   gcc -O2 -std=c11 -Iinclude -Ibuild/include results/study-data/squad/edges.c -Lbuild -lposemb -lm -o build/edges
 *   OPENBLAS_CORETYPE=Cooperlake LD_LIBRARY_PATH=build build/edges DATA MODEL_DIR...
 *
 * DATA: ../shared/data; MODEL_DIR: a SQuAD-locate run's kept model
 * (models/PE/SQuAD-locate-sN of a real-data study). One line per model. */
#include <stdio.h>
#include <stdlib.h>

#include "posemb/datasets.h"
#include "posemb/features.h"
#include "posemb/model.h"
#include "posemb/posemb.h"
#include "posemb/tokenizer.h"

#define LEN 128
#define MAX_ANSWER 30
#define BATCH 32

static void die(const char *what, const posemb_error *err)
{
    fprintf(stderr, "edges: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

/* Window counts: windows and exact per answer kind ([0] one token, [1] more); the rest multi-token only. */
typedef struct tally {
    long windows[2], exact[2];
    long one_end, inside, start_order, end_order;
} tally;

/* The study's best span of one window: start <= end < start + MAX_ANSWER over context tokens. */
static void best_span(const float *z, const int32_t *tok_start, int *s_best, int *e_best)
{
    float best = 0;
    *s_best = *e_best = -1;
    for (int s = 0; s < LEN; s++) {
        if (tok_start[s] < 0) continue;
        for (int e = s; e < LEN && e < s + MAX_ANSWER; e++) {
            if (tok_start[e] < 0) continue;
            float v = z[2 * s] + z[2 * e + 1];
            if (*s_best < 0 || v > best) best = v, *s_best = s, *e_best = e;
        }
    }
}

static void count_window(const float *z, const posemb_features *f, int r, tally *t)
{
    int f0 = f->starts[r], l0 = f->ends[r], multi = l0 > f0, s, e;
    best_span(z, f->tok_start + (size_t)r * LEN, &s, &e);
    int exact = s == f0 && e == l0;
    t->windows[multi]++;
    t->exact[multi] += exact;
    if (!multi) return;
    if (s == e && (s == f0 || s == l0)) t->one_end++; /* never exact: f0 < l0 */
    else if (!exact && s >= f0 && e <= l0) t->inside++;
    t->start_order += z[2 * f0] > z[2 * l0];
    t->end_order += z[2 * l0 + 1] > z[2 * f0 + 1];
}

static void run(const char *dir, const posemb_features *f)
{
    posemb_error err = {0};
    posemb_model *m;
    if (posemb_model_load(&m, dir, &err)) die(dir, &err);
    posemb_model_set_inference(m, 1);
    tally t = {0};
    for (int i0 = 0; i0 < f->n; i0 += BATCH) {
        int nb = f->n - i0 < BATCH ? f->n - i0 : BATCH;
        size_t at = (size_t)i0 * LEN;
        posemb_batch b = {.B = nb, .T = LEN, .ids = f->ids + at, .types = f->types + at, .mask = f->mask + at};
        const float *z = posemb_model_forward(m, &b, &err) ? NULL : posemb_model_head_logits(m, &err);
        if (!z) die(dir, &err);
        for (int r = 0; r < nb; r++)
            if (f->starts[i0 + r] > 0) count_window(z + (size_t)r * LEN * 2, f, i0 + r, &t);
    }
    long n1 = t.windows[0], n2 = t.windows[1];
    printf("%s (%s): single-token answers %ld, exact %.3f | multi-token %ld, exact %.3f, one end %.3f, "
           "inside %.3f, other %.3f; start order %.3f, end order %.3f\n",
           dir, posemb_model_config(m)->pe, n1, (double)t.exact[0] / n1, n2, (double)t.exact[1] / n2,
           (double)t.one_end / n2, (double)t.inside / n2, (double)(n2 - t.exact[1] - t.one_end - t.inside) / n2,
           (double)t.start_order / n2, (double)t.end_order / n2);
    fflush(stdout);
    posemb_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: edges DATA MODEL_DIR...\n");
        return 2;
    }
    posemb_error err = {0};
    posemb_tokenizer *tok;
    posemb_squad sq;
    char path[4096];
    snprintf(path, sizeof path, "%s/bert-base-uncased/vocab.txt", argv[1]);
    if (posemb_tokenizer_load_wordpiece(path, 1, &tok, &err)) die(path, &err);
    snprintf(path, sizeof path, "%s/squad/dev-v1.1.json", argv[1]);
    if (posemb_squad_load(path, &sq, &err)) die(path, &err);
    posemb_squad_ask_answers(&sq);
    int *idx = malloc((size_t)sq.n * sizeof *idx), n = idx ? posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, idx) : 0;
    posemb_features f;
    if (!idx || posemb_squad_features(tok, &sq, idx, n, LEN, 32, 32, &f, &err)) die("features", &err);
    for (int a = 2; a < argc; a++) run(argv[a], &f);
    posemb_features_free(&f);
    posemb_tokenizer_free(tok);
    posemb_squad_free(&sq);
    free(idx);
    return 0;
}
