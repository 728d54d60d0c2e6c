/* Scratch: SQuAD F1 of a fine-tuned model on train-split and eval-split questions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "posemb/posemb.h"
#include "posemb/datasets.h"
#include "posemb/features.h"
#include "posemb/model.h"
#include "posemb/tokenizer.h"
#include "posemb/squad_eval.h"

static void run(posemb_model *m, posemb_tokenizer *tok, posemb_squad *sq, int *idx, int n, int T, const char *name,
                const char *dump)
{
    posemb_error err = {0};
    posemb_features f;
    if (posemb_squad_features(tok, sq, idx, n, T, 32 * T / 128, 32, &f, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    float *logits = malloc((size_t)f.n * T * 2 * sizeof(float));
    int B = 32;
    for (int i0 = 0; i0 < f.n; i0 += B) {
        int nb = f.n - i0 < B ? f.n - i0 : B;
        posemb_batch b = {.B = nb,
                          .T = T,
                          .ids = f.ids + (size_t)i0 * T,
                          .types = f.types + (size_t)i0 * T,
                          .mask = f.mask + (size_t)i0 * T};
        if (posemb_model_forward(m, &b, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        const float *z = posemb_model_head_logits(m, &err);
        memcpy(logits + (size_t)i0 * T * 2, z, (size_t)nb * T * 2 * sizeof(float));
    }
    /* window-level: argmax start/end vs label */
    long hs = 0, he = 0, cls = 0, lab_cls = 0;
    for (int r = 0; r < f.n; r++) {
        const float *z = logits + (size_t)r * T * 2;
        int bs = 0, be = 0;
        for (int t = 1; t < T; t++) {
            if (z[2 * t] > z[2 * bs]) bs = t;
            if (z[2 * t + 1] > z[2 * be + 1]) be = t;
        }
        hs += bs == f.starts[r];
        he += be == f.ends[r];
        cls += bs == 0;
        lab_cls += f.starts[r] == 0;
    }
    char **ans = NULL;
    double em, f1;
    if (posemb_squad_decode(sq, idx, n, &f, logits, 30, &ans, &err) ||
        posemb_squad_evaluate(sq, idx, n, (const char *const *)ans, &em, &f1, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double len = 0;
    for (int k = 0; k < n; k++) {
        int w = 0;
        for (const char *p = ans[k]; *p; p++) w += *p == ' ';
        len += w + 1;
    }
    printf("%s T=%d: %d questions, %d windows: F1 %.2f EM %.2f | window start acc %.3f end acc %.3f, argmax start=CLS "
           "%.3f (labels CLS %.3f) | mean answer words %.2f\n",
           name, T, n, f.n, f1, em, (double)hs / f.n, (double)he / f.n, (double)cls / f.n, (double)lab_cls / f.n,
           len / n);
    if (dump) {
        FILE *o = fopen(dump, "w");
        for (int k = 0; k < n; k++)
            fprintf(o, "%s\t%s\t%s\n", sq->ex[idx[k]].question, ans[k], sq->ex[idx[k]].answers[0].text);
        fclose(o);
    }
    posemb_squad_answers_free(ans, n);
    free(logits);
    posemb_features_free(&f);
}

int main(int argc, char **argv)
{
    posemb_error err = {0};
    posemb_model *m;
    posemb_tokenizer *tok;
    posemb_squad sq;
    if (posemb_model_load(&m, argv[1], &err) ||
        posemb_tokenizer_load_wordpiece("/work/shared/data/bert-base-uncased/vocab.txt", 1, &tok, &err) ||
        posemb_squad_load("/work/shared/data/squad/dev-v1.1.json", &sq, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    posemb_model_set_inference(m, 1);
    int *tr = malloc(sq.n * sizeof *tr), *ev = malloc(sq.n * sizeof *ev);
    int ntr = posemb_squad_split(&sq, POSEMB_SQUAD_TRAIN, tr), nev = posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, ev);
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    printf("train %d eval %d\n", ntr, nev);
    run(m, tok, &sq, tr, n < ntr ? n : ntr, 128, "train", argc > 3 ? argv[3] : NULL);
    run(m, tok, &sq, ev, nev, 128, "eval", argc > 4 ? argv[4] : NULL);
    return 0;
}
