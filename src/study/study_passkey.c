/* Passkey retrieval (Mohtashami and Jaggi 2023, the test of the
 * long-context papers): a five-digit key hidden at a chosen depth in
 * filler text and asked for at the end,
 *
 *   filler ... The pass key is 48213. Remember it. 48213 is the pass key.
 *   filler ... What is the pass key? The pass key is 48213
 *
 * (passkey_needle "once": "The pass key is 48213. Remember it." alone). A
 * prompt counts as retrieved when the model's argmax predicts every token
 * of the final "48213" (teacher forced, which is what greedy decoding of the
 * key gives); the fraction of its tokens predicted is the graded measure
 * (a model that does not copy gets about 1/10 per digit). A model whose PE's
 * table ends before L reads the prompt's last tokens, as a sliding window
 * would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/rng.h"
#include "study_length_impl.h"
#include "study_ruler.h"
#include "model/model_internal.h"
#include "core/rng_internal.h"

static const char FILLER[] =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";

typedef struct prompt_parts {
    posemb_encoding filler, needle, question, answer;
} prompt_parts;

static posemb_status encode(const posemb_tokenizer *tok, const char *text, posemb_encoding *enc, posemb_error *err)
{
    return posemb_tokenizer_encode(tok, text, strlen(text), 0, enc, err);
}

/* The parts of the prompt with key: its needle and answer hold the key;
 * once, the needle says it once ("The pass key is 48213. Remember it. "). */
static posemb_status parts_for(const posemb_tokenizer *tok, const char *key, int once, prompt_parts *pp,
                               posemb_error *err)
{
    char needle[96], answer[16];
    if (once) snprintf(needle, sizeof needle, "The pass key is %s. Remember it. ", key);
    else snprintf(needle, sizeof needle, "The pass key is %s. Remember it. %s is the pass key. ", key, key);
    snprintf(answer, sizeof answer, "%s", key);
    posemb_status st = encode(tok, FILLER, &pp->filler, err);
    if (!st) st = encode(tok, needle, &pp->needle, err);
    if (!st) st = encode(tok, "What is the pass key? The pass key is ", &pp->question, err);
    if (!st) st = encode(tok, answer, &pp->answer, err);
    return st;
}

/* ids [L]: filler with the needle at depth (0..1) of it, then the question
 * and the answer; targets [L]: the answer's tokens, -100 elsewhere. Returns
 * 0, or -1 when L cannot hold the needle, question and answer. */
static int build(const prompt_parts *pp, int L, double depth, int32_t *ids, int32_t *targets)
{
    int n_fill = L - pp->needle.n - pp->question.n - pp->answer.n, at = 0;
    if (n_fill < 0 || pp->filler.n < 1) return -1;
    int before = (int)lround(depth * n_fill);
    for (int i = 0; i < before; i++) ids[at++] = pp->filler.ids[i % pp->filler.n];
    for (int i = 0; i < pp->needle.n; i++) ids[at++] = pp->needle.ids[i];
    for (int i = before; i < n_fill; i++) ids[at++] = pp->filler.ids[i % pp->filler.n];
    for (int i = 0; i < pp->question.n; i++) ids[at++] = pp->question.ids[i];
    for (int i = 0; i < L; i++) targets[i] = -100;
    for (int i = 0; i < pp->answer.n; i++, at++) targets[at] = ids[at] = pp->answer.ids[i];
    return 0;
}

static void parts_init(prompt_parts *pp)
{
    posemb_encoding_init(&pp->filler);
    posemb_encoding_init(&pp->needle);
    posemb_encoding_init(&pp->question);
    posemb_encoding_init(&pp->answer);
}

static void parts_free(prompt_parts *pp)
{
    posemb_encoding_free(&pp->filler);
    posemb_encoding_free(&pp->needle);
    posemb_encoding_free(&pp->question);
    posemb_encoding_free(&pp->answer);
}

posemb_status study_passkey_prompt(const posemb_tokenizer *tok, const char *key, int once, int L, double depth,
                                   int32_t *ids, int32_t *targets, int *fits, posemb_error *err)
{
    prompt_parts pp;
    parts_init(&pp);
    posemb_status st = parts_for(tok, key, once, &pp, err);
    *fits = !st && build(&pp, L, depth, ids, targets) == 0;
    parts_free(&pp);
    return st;
}

posemb_status posemb_passkey_min_length(const posemb_tokenizer *tok, int key_once, int *n, posemb_error *err)
{
    prompt_parts pp;
    parts_init(&pp);
    posemb_status st = parts_for(tok, "00000", key_once, &pp, err);
    *n = st ? 0 : pp.needle.n + pp.question.n + pp.answer.n; /* build's n_fill >= 0 */
    parts_free(&pp);
    return st;
}

int study_passkey_apply(const study_passkey_train *m, long g, int T, int32_t *ids, int32_t *targets)
{
    posemb_rng r; /* sequence g's draw: whether it is a prompt, its key and depth */
    posemb_rng_seed(&r, 0x7a55c0de + m->seed, (uint64_t)g);
    if (posemb_rng_uniform(&r) >= m->share) return 0;
    char key[8];
    snprintf(key, sizeof key, "%05u", 10000 + posemb_rng_below(&r, 90000));
    double depth = posemb_rng_uniform(&r);
    int fits = 0;
    posemb_error err;
    if (study_passkey_prompt(m->tok, key, m->once, T, depth, ids, targets, &fits, &err) || !fits) return 0;
    memcpy(targets, ids, (size_t)T * sizeof *targets); /* language modelling on the whole prompt, as on text */
    return 1;
}

void study_passkey_mix(void *ctx, long g, int T, int32_t *ids, int32_t *targets)
{
    study_passkey_apply(ctx, g, T, ids, targets);
}

/* One depth's prompts through m: acc and digits (NaN when none fits), the
 * prompts built and those that did not fit counted into *built, *misfits. */
static posemb_status one_depth(posemb_model *m, const posemb_tokenizer *tok, int once, int L, int context, int seed,
                               int trials, int d, int32_t *ids, int32_t *targets, double *acc, double *digits,
                               int *built, int *misfits, posemb_error *err)
{
    int hits = 0, n = 0;
    double right = 0;
    posemb_status st = POSEMB_OK;
    for (int k = 0; !st && k < trials; k++) {
        posemb_rng r; /* the key of (seed, length, depth, trial) */
        posemb_rng_seed(&r, 0x9a55e7 + (uint64_t)seed, ((uint64_t)L * PASSKEY_DEPTHS + d) * 1000003u + k);
        char key[8];
        snprintf(key, sizeof key, "%05u", 10000 + posemb_rng_below(&r, 90000));
        int hit = 0, fits = 0;
        double part = 0;
        st = study_passkey_prompt(tok, key, once, L, (double)d / (PASSKEY_DEPTHS - 1), ids, targets, &fits, err);
        if (!st && !fits) ++*misfits;
        if (!st && fits) {
            n++;
            st = study_answered(m, ids, targets, L, context, &hit, &part, err);
        }
        hits += hit;
        right += part;
    }
    *acc = n ? (double)hits / n : NAN;
    *digits = n ? right / n : NAN;
    *built += n;
    return st;
}

posemb_status posemb_passkey(const char *dir, const posemb_config *cfg, const posemb_tokenizer *tok, int key_once,
                             int L, int seed, int trials, double acc[POSEMB_PASSKEY_DEPTHS],
                             double digits[POSEMB_PASSKEY_DEPTHS], int *context, posemb_error *err)
{
    for (int d = 0; d < PASSKEY_DEPTHS; d++) acc[d] = digits[d] = NAN;
    if (L < 1 || trials < 1)
        return posemb_fail(err, POSEMB_EINVAL, "passkey: length %d and trials %d must be >= 1", L, trials);
    posemb_model *m = NULL;
    int32_t *ids = malloc((size_t)L * sizeof *ids), *targets = malloc((size_t)L * sizeof *targets);
    posemb_status st = ids && targets ? posemb_lm_load_at(dir, cfg, L, &m, context, err)
                                      : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) {
        posemb_model_set_train(m, 0, 0, 0);
        posemb_model_set_inference(m, 1);
    }
    int built = 0, misfits = 0;
    for (int d = 0; !st && d < PASSKEY_DEPTHS; d++)
        st = one_depth(m, tok, key_once, L, *context, seed, trials, d, ids, targets, &acc[d], &digits[d], &built,
                       &misfits, err);
    if (!st && built && misfits) /* an average over the keys that happened to fit would read as a result */
        st = posemb_fail(err, POSEMB_EINVAL,
                         "passkey: %d of %d prompts do not fit in %d tokens (the tokenizer gives keys varying numbers "
                         "of tokens): a longer length",
                         misfits, built + misfits, L);
    posemb_model_free(m);
    free(ids);
    free(targets);
    return st;
}
