/* What an absolute PE's positions past the pretraining length do to a
 * fine-tuned SQuAD-locate model read in longer windows (slice 13 of
 * results/study-data/README.md).
 *
 * The model's position vectors s P[p] (sin, lsin or ape: whatever its PE adds
 * to the input) are copied into an `ape` table, so they can be edited; the
 * copy must score what the model scores. Then rows p >= 128, which neither
 * pretraining nor fine-tuning saw, are replaced and the model is read again in
 * windows of 512 tokens:
 *   zero   no position signal past 127;
 *   clamp  every row past 127 is row 127;
 *   wrap   row p is row p mod 128: values all seen in training, positions aliased;
 *   noise  N(0, sigma) rows, sigma chosen so their mean squared norm is rows 0-127's.
 * It also splits the model's own F1 at 128 and 512 between the questions
 * that have one window of 128 tokens (whose 512-token window holds the same
 * tokens at the same positions, and padding) and those that have more.
 *
 *   gcc -O2 -std=c11 -Iinclude -Ibuild/include results/study-data/squad/past_training.c -Lbuild -lposemb -lm \
 *       -o build/past_training
 *   OPENBLAS_CORETYPE=Cooperlake LD_LIBRARY_PATH=build build/past_training MODEL_DIR DATA
 *
 * MODEL_DIR: a SQuAD-locate run's kept model (models/PE/SQuAD-locate-sN of a
 * real-data study); DATA: ../shared/data. The windows, stride, query cut and
 * scoring are the study's (squad_stride 32, squad_max_query 32, max_answer 30,
 * every held-out question, or the first QUESTIONS). Prints one line per reading: arm, window, F1, EM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/datasets.h"
#include "posemb/features.h"
#include "posemb/model.h"
#include "posemb/pe.h"
#include "posemb/posemb.h"
#include "posemb/rng.h"
#include "posemb/tokenizer.h"

#define TRAIN_LEN 128
#define LONG_LEN 512

static void die(const char *what, const posemb_error *err)
{
    fprintf(stderr, "past_training: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

/* F1 and EM (percent) of m on the held-out questions in windows of T tokens, as the study scores them. */
static void score(posemb_model *m, const posemb_tokenizer *tok, const posemb_squad *sq, const int *idx, int n, int T,
                  double *f1, double *em, double *q_f1, int *q_windows)
{
    posemb_error err = {0};
    posemb_features f;
    if (posemb_squad_features(tok, sq, idx, n, T, 32 * T / TRAIN_LEN, 32, &f, &err)) die("features", &err);
    float *logits = malloc((size_t)f.n * T * 2 * sizeof *logits);
    if (!logits) die("out of memory", NULL);
    for (int i0 = 0; i0 < f.n; i0 += 32) {
        int nb = f.n - i0 < 32 ? f.n - i0 : 32;
        size_t at = (size_t)i0 * T;
        posemb_batch b = {.B = nb, .T = T, .ids = f.ids + at, .types = f.types + at, .mask = f.mask + at};
        if (posemb_model_forward(m, &b, &err)) die("forward", &err);
        const float *z = posemb_model_head_logits(m, &err);
        if (!z) die("logits", &err);
        memcpy(logits + at * 2, z, (size_t)nb * T * 2 * sizeof *z);
    }
    char **ans = NULL;
    if (posemb_squad_decode(sq, idx, n, &f, logits, 30, &ans, &err) ||
        posemb_squad_evaluate(sq, idx, n, (const char *const *)ans, em, f1, &err))
        die("scoring", &err);
    for (int k = 0; q_f1 && k < n; k++) { /* per question: its F1 (0-1) and its number of windows */
        const posemb_squad_example *e = &sq->ex[idx[k]];
        const char *golds[64];
        int ng = e->n_answers < 64 ? e->n_answers : 64;
        for (int g = 0; g < ng; g++) golds[g] = e->answers[g].text;
        q_f1[k] = posemb_squad_f1(ans[k], golds, ng);
        q_windows[k] = 0;
    }
    for (int r = 0; q_windows && r < f.n; r++) q_windows[f.example[r]]++;
    posemb_squad_answers_free(ans, n);
    free(logits);
    posemb_features_free(&f);
}

/* Mean F1 at TRAIN_LEN and LONG_LEN of the questions with one window of TRAIN_LEN tokens (the same tokens at the
 * same positions in both: only padding differs) and of those with more. */
static void split_by_windows(const double *f1_short, const double *f1_long, const int *windows, int n)
{
    double sum[2][2] = {{0, 0}, {0, 0}};
    int cnt[2] = {0, 0};
    for (int k = 0; k < n; k++) {
        int many = windows[k] > 1;
        sum[many][0] += f1_short[k];
        sum[many][1] += f1_long[k];
        cnt[many]++;
    }
    for (int g = 0; g < 2; g++)
        printf("model  questions with %s window of %d: %d, F1 %.4f at %d, %.4f at %d\n", g ? "more than one" : "one",
               TRAIN_LEN, cnt[g], cnt[g] ? sum[g][0] / cnt[g] : NAN, TRAIN_LEN, cnt[g] ? sum[g][1] / cnt[g] : NAN,
               LONG_LEN);
}

/* The largest |logit| difference between m and a on the first 32 windows of LONG_LEN tokens. */
static double max_logit_diff(posemb_model *m, posemb_model *a, const posemb_tokenizer *tok, const posemb_squad *sq,
                             const int *idx, int n)
{
    posemb_error err = {0};
    posemb_features f;
    if (posemb_squad_features(tok, sq, idx, n, LONG_LEN, 32 * LONG_LEN / TRAIN_LEN, 32, &f, &err))
        die("features", &err);
    int nb = f.n < 32 ? f.n : 32;
    size_t cnt = (size_t)nb * LONG_LEN * 2;
    float *z0 = malloc(cnt * sizeof *z0);
    if (!z0) die("out of memory", NULL);
    posemb_batch b = {.B = nb, .T = LONG_LEN, .ids = f.ids, .types = f.types, .mask = f.mask};
    const float *z = posemb_model_forward(m, &b, &err) ? NULL : posemb_model_head_logits(m, &err);
    if (!z) die("forward", &err);
    memcpy(z0, z, cnt * sizeof *z);
    z = posemb_model_forward(a, &b, &err) ? NULL : posemb_model_head_logits(a, &err);
    if (!z) die("forward", &err);
    double d = 0;
    for (size_t i = 0; i < cnt; i++) d = fmax(d, fabs((double)z[i] - z0[i]));
    free(z0);
    posemb_features_free(&f);
    return d;
}

/* rows [LONG_LEN, D]: the position vectors m adds to its input at positions 0..LONG_LEN-1. */
static void position_rows(posemb_model *m, int D, float *rows)
{
    posemb_error err = {0};
    posemb_pe *pe = posemb_model_pe(m);
    if (!posemb_pe_has_input(pe) || posemb_pe_has_qk(pe) || posemb_pe_has_logits(pe) || posemb_pe_has_values(pe))
        die("the model's PE is not an input-only absolute PE", NULL);
    int32_t pos[LONG_LEN];
    for (int p = 0; p < LONG_LEN; p++) pos[p] = p;
    float *zero = calloc((size_t)LONG_LEN * D, sizeof *zero);
    float *scratch = calloc(posemb_pe_input_scratch_floats(pe, LONG_LEN) + 1, sizeof *scratch);
    if (!zero || !scratch) die("out of memory", NULL);
    posemb_pe_prepare(pe);
    if (posemb_pe_input_forward(pe, pos, LONG_LEN, zero, rows, scratch, &err)) die("position rows", &err);
    free(zero);
    free(scratch);
}

/* An `ape` model with m's weights and the table `rows`; *table: that table in the new model. */
static posemb_model *ape_copy(posemb_model *m, const float *rows, float **table)
{
    posemb_error err = {0};
    posemb_config cfg = *posemb_model_config(m);
    snprintf(cfg.pe, sizeof cfg.pe, "ape");
    if (cfg.max_position < LONG_LEN) cfg.max_position = LONG_LEN;
    posemb_model *a;
    if (posemb_model_create(&a, &cfg, &err)) die("ape model", &err);
    *table = NULL;
    for (int i = 0; i < posemb_model_n_params(a); i++) {
        const posemb_param *pa = posemb_model_param(a, i), *pm = posemb_model_find(m, pa->name);
        float *dst = posemb_model_weights(a) + pa->offset;
        if (pm && pm->numel == pa->numel) memcpy(dst, posemb_model_weights(m) + pm->offset, pa->numel * sizeof *dst);
        else if (strstr(pa->name, "position_embeddings.weight") && pa->shape[0] >= LONG_LEN) *table = dst;
        else die(pa->name, NULL);
    }
    if (!*table) die("no position table in the ape copy", NULL);
    memcpy(*table, rows, (size_t)LONG_LEN * cfg.hidden * sizeof **table);
    posemb_model_set_inference(a, 1);
    return a;
}

/* Rows p >= TRAIN_LEN of table for one arm, from the model's own rows. */
static void edit(const char *arm, const float *rows, float *table, int D)
{
    double norm = 0;
    for (int p = 0; p < TRAIN_LEN; p++)
        for (int j = 0; j < D; j++) norm += (double)rows[p * D + j] * rows[p * D + j];
    double sigma = sqrt(norm / TRAIN_LEN / D);
    posemb_rng rng; /* fixed seed: the noise arm reads the same rows every run */
    posemb_rng_seed(&rng, 1, 0);
    for (int p = TRAIN_LEN; p < LONG_LEN; p++) {
        float *x = &table[(size_t)p * D];
        if (!strcmp(arm, "zero")) memset(x, 0, (size_t)D * sizeof *x);
        else if (!strcmp(arm, "clamp")) memcpy(x, &rows[(TRAIN_LEN - 1) * D], (size_t)D * sizeof *x);
        else if (!strcmp(arm, "wrap")) memcpy(x, &rows[(p % TRAIN_LEN) * D], (size_t)D * sizeof *x);
        else posemb_rng_fill_normal(&rng, x, D, (float)sigma);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: past_training MODEL_DIR DATA [QUESTIONS]\n");
        return 2;
    }
    posemb_error err = {0};
    posemb_model *m;
    posemb_tokenizer *tok;
    posemb_squad sq;
    char path[4096];
    if (posemb_model_load(&m, argv[1], &err)) die(argv[1], &err);
    snprintf(path, sizeof path, "%s/bert-base-uncased/vocab.txt", argv[2]);
    if (posemb_tokenizer_load_wordpiece(path, 1, &tok, &err)) die(path, &err);
    snprintf(path, sizeof path, "%s/squad/dev-v1.1.json", argv[2]);
    if (posemb_squad_load(path, &sq, &err)) die(path, &err);
    posemb_squad_ask_answers(&sq);
    posemb_model_set_inference(m, 1);
    int *idx = malloc((size_t)sq.n * sizeof *idx), n = idx ? posemb_squad_split(&sq, POSEMB_SQUAD_EVAL, idx) : 0;
    if (argc == 4 && atoi(argv[3]) > 0 && atoi(argv[3]) < n) n = atoi(argv[3]); /* the first ones, for a quick check */
    int D = posemb_model_config(m)->hidden;
    float *rows = malloc((size_t)LONG_LEN * D * sizeof *rows), *table;
    if (!idx || !rows) die("out of memory", NULL);
    position_rows(m, D, rows);
    double norm[2] = {0, 0};
    for (int p = 0; p < LONG_LEN; p++)
        for (int j = 0; j < D; j++) norm[p >= TRAIN_LEN] += (double)rows[p * D + j] * rows[p * D + j];
    printf("%s: %s, %d held-out questions; mean |s P[p]| %.4f over p < %d, %.4f over p >= %d\n", argv[1],
           posemb_model_config(m)->pe, n, sqrt(norm[0] / TRAIN_LEN), TRAIN_LEN, sqrt(norm[1] / (LONG_LEN - TRAIN_LEN)),
           TRAIN_LEN);
    double f1, em, *q_f1[2] = {malloc((size_t)n * sizeof(double)), malloc((size_t)n * sizeof(double))};
    int *windows[2] = {malloc((size_t)n * sizeof(int)), malloc((size_t)n * sizeof(int))};
    if (!q_f1[0] || !q_f1[1] || !windows[0] || !windows[1]) die("out of memory", NULL);
    for (int T = TRAIN_LEN, i = 0; T <= LONG_LEN; T *= 4, i++) {
        score(m, tok, &sq, idx, n, T, &f1, &em, q_f1[i], windows[i]);
        printf("model  T=%d F1 %.4f EM %.4f\n", T, f1 / 100, em / 100);
    }
    split_by_windows(q_f1[0], q_f1[1], windows[0], n);
    posemb_model *a = ape_copy(m, rows, &table);
    printf("copy: largest |logit - model's| on 32 windows of %d: %.3g\n", LONG_LEN,
           max_logit_diff(m, a, tok, &sq, idx, n));
    static const char *const arms[] = {"copy", "zero", "clamp", "wrap", "noise"};
    for (int k = 0; k < 5; k++) {
        if (k) edit(arms[k], rows, table, D);
        for (int T = k ? LONG_LEN : TRAIN_LEN; T <= LONG_LEN; T *= 4) {
            score(a, tok, &sq, idx, n, T, &f1, &em, NULL, NULL);
            printf("%-6s T=%d F1 %.4f EM %.4f\n", arms[k], T, f1 / 100, em / 100);
        }
        fflush(stdout);
    }
    posemb_model_free(a);
    posemb_model_free(m);
    posemb_tokenizer_free(tok);
    posemb_squad_free(&sq);
    free(idx);
    free(rows);
    for (int i = 0; i < 2; i++) {
        free(q_f1[i]);
        free(windows[i]);
    }
    return 0;
}
