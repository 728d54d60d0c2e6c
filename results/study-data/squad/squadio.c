/* Scratch: dump SQuAD features (train split, eval split; T=128, stride 32, max_query 32) and score logits. */
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
static void dump(const posemb_features *f, const char *pre)
{
    char p[512];
    size_t n = (size_t)f->n * f->T;
    snprintf(p, sizeof p, "%s.bin", pre);
    FILE *o = fopen(p, "wb");
    int32_t hdr[2] = {f->n, f->T};
    fwrite(hdr, 4, 2, o);
    fwrite(f->ids, 4, n, o);
    fwrite(f->types, 4, n, o);
    fwrite(f->mask, 4, n, o);
    fwrite(f->starts, 4, f->n, o);
    fwrite(f->ends, 4, f->n, o);
    fclose(o);
}
int main(int argc, char **argv)
{
    posemb_error err = {0};
    posemb_tokenizer *tok;
    posemb_squad sq;
    if (posemb_tokenizer_load_wordpiece("/work/shared/data/bert-base-uncased/vocab.txt", 1, &tok, &err) ||
        posemb_squad_load("/work/shared/data/squad/dev-v1.1.json", &sq, &err))
        DIE(err);
    int *tr = malloc(sq.n * sizeof *tr), *ev = malloc(sq.n * sizeof *ev);
    int ntr = posemb_squad_split(&sq, POSEMB_SQUAD_TRAIN, tr), nev = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, ev);
    posemb_features ft, fe;
    if (posemb_squad_features(tok, &sq, ev, nev, 128, 32, 32, &fe, &err)) DIE(err);
    if (!strcmp(argv[1], "dump")) {
        if (posemb_squad_features(tok, &sq, tr, ntr, 128, 32, 32, &ft, &err)) DIE(err);
        dump(&ft, "train");
        dump(&fe, "eval");
        printf("train %d windows, eval %d windows\n", ft.n, fe.n);
        return 0;
    }
    /* score LOGITS: float32 [fe.n, T, 2] */
    float *lg = malloc((size_t)fe.n * 128 * 2 * 4);
    FILE *in = fopen(argv[2], "rb");
    if (fread(lg, 4, (size_t)fe.n * 256, in) != (size_t)fe.n * 256) {
        fprintf(stderr, "short logits\n");
        return 1;
    }
    char **ans;
    double em, f1;
    if (posemb_squad_decode(&sq, ev, nev, &fe, lg, 30, &ans, &err) ||
        posemb_squad_evaluate(&sq, ev, nev, (const char *const *)ans, &em, &f1, &err))
        DIE(err);
    printf("F1 %.2f EM %.2f\n", f1, em);
    return 0;
}
