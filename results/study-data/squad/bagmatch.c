/* Scratch: SQuAD-locate scored by a position-free matcher: start and end logits 1 on every context
 * token that occurs among the question's tokens (the answer's), 0 elsewhere; the decoder's order
 * constraint (start <= end < start + 30) and tie-breaking (first best) do the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "posemb/posemb.h"
#include "posemb/datasets.h"
#include "posemb/features.h"
#include "posemb/tokenizer.h"
#include "posemb/squad_eval.h"
#define DIE(e)                                                                                                         \
    do {                                                                                                               \
        fprintf(stderr, "%s\n", (e).msg);                                                                              \
        exit(1);                                                                                                       \
    } while (0)
int main(int argc, char **argv)
{
    posemb_error err = {0};
    posemb_tokenizer *tok;
    posemb_squad sq;
    if (posemb_tokenizer_load_wordpiece("/work/shared/data/bert-base-uncased/vocab.txt", 1, &tok, &err) ||
        posemb_squad_load("/work/shared/data/squad/dev-v1.1.json", &sq, &err))
        DIE(err);
    posemb_squad_ask_answers(&sq);
    int T = argc > 1 ? atoi(argv[1]) : 128;
    int *ev = malloc(sq.n * sizeof *ev), nev = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, ev);
    posemb_features f;
    if (posemb_squad_features(tok, &sq, ev, nev, T, 32 * T / 128, 32, &f, &err)) DIE(err);
    float *lg = calloc((size_t)f.n * T * 2, 4);
    for (int r = 0; r < f.n; r++) {
        const int32_t *ids = f.ids + (size_t)r * T, *ts = f.tok_start + (size_t)r * T;
        int q1 = 1;
        while (q1 < T && ids[q1] != 102) q1++;
        for (int t = 0; t < T; t++) {
            if (ts[t] < 0) continue;
            for (int k = 1; k < q1; k++)
                if (ids[t] == ids[k] && f.types[(size_t)r * T + k] == 0) {
                    lg[((size_t)r * T + t) * 2] = lg[((size_t)r * T + t) * 2 + 1] = 1;
                    break;
                }
        }
    }
    char **ans;
    double em, f1;
    if (posemb_squad_decode(&sq, ev, nev, &f, lg, 30, &ans, &err) ||
        posemb_squad_evaluate(&sq, ev, nev, (const char *const *)ans, &em, &f1, &err))
        DIE(err);
    printf("T=%d bag matcher: F1 %.2f EM %.2f\n", T, f1, em);
    return 0;
}
