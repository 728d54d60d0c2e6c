/* Language-modelling batches that are functions of (seed, batch number):
 * the order of training sequences is a seeded shuffle per epoch, and MLM's
 * masking decisions are hashes of (seed, batch, position). */
#include <stdlib.h>
#include <string.h>

#include "posemb/corpus.h"
#include "posemb/nn.h"
#include "posemb/rng.h"
#include "nn/nn_internal.h"
#include "core/rng_internal.h"

posemb_status posemb_lm_data_init(posemb_lm_data *d, const int32_t *tokens, long n, const posemb_lm_data_opts *o,
                                  posemb_error *err)
{
    int T = o->T, mlm = o->mlm;
    int32_t cls = o->cls, sep = o->sep, mask_id = o->mask_id;
    double valid_frac = o->valid_frac;
    memset(d, 0, sizeof *d);
    if (T < (mlm ? 3 : 2)) return posemb_fail(err, POSEMB_EINVAL, "sequence length %d is too short", T);
    if (!(valid_frac >= 0.0 && valid_frac < 1.0))
        return posemb_fail(err, POSEMB_EINVAL, "held-out fraction %g is not in [0, 1)", valid_frac);
    if (mlm && (cls < 0 || sep < 0 || mask_id < 0))
        return posemb_fail(err, POSEMB_EINVAL, "masked LM needs the tokenizer's [CLS], [SEP] and [MASK] tokens");
    d->tokens = tokens;
    d->n_tokens = n;
    d->T = T;
    d->mlm = mlm;
    d->cls = cls;
    d->sep = sep;
    d->mask_id = mask_id;
    d->vocab = o->vocab;
    d->seed = o->seed;
    d->perm_epoch = -1;
    d->body = mlm ? T - 2 : T;
    long seqs = n / d->body;
    if (seqs < 1)
        return posemb_fail(err, POSEMB_ERANGE, "the corpus has %ld tokens, fewer than one sequence of %d", n, d->body);
    d->n_valid = seqs < 2 ? 0 : (long)(seqs * valid_frac) > 0 ? (long)(seqs * valid_frac) : 1;
    d->n_train = seqs - d->n_valid;
    d->perm = malloc((size_t)d->n_train * sizeof *d->perm);
    if (!d->perm) return posemb_fail(err, POSEMB_ENOMEM, "out of memory for %ld sequences", d->n_train);
    return POSEMB_OK;
}

void posemb_lm_data_free(posemb_lm_data *d)
{
    free(d->perm);
    memset(d, 0, sizeof *d);
}

/* The training order of one epoch: Fisher-Yates from (seed, epoch). */
static void shuffle(posemb_lm_data *d, long epoch)
{
    posemb_rng r;
    posemb_rng_seed(&r, d->seed, 1000 + (uint64_t)epoch);
    for (long i = 0; i < d->n_train; i++) d->perm[i] = i;
    for (long i = d->n_train - 1; i > 0; i--) {
        long j = (long)(posemb_rng_uniform(&r) * (double)(i + 1));
        long t = d->perm[i];
        d->perm[i] = d->perm[j];
        d->perm[j] = t;
    }
    d->perm_epoch = epoch;
}

/* 1 with probability p, from the hash of (key, i): dropout's decision. */
static int coin(uint64_t key, uint64_t i, float p) { return posemb_nn_dropout_scale(key, i, p) == 0.0f; }

/* HF's DataCollatorForLanguageModeling: each body token is chosen with
 * probability 0.15; a chosen one becomes [MASK] 80%, a random token 10%, or
 * stays 10%; its target is the original. */
static void mask_sequence(const posemb_lm_data *d, uint64_t key, int32_t *ids, int32_t *targets)
{
    for (int t = 0; t < d->T; t++) {
        targets[t] = -100;
        if (t == 0 || t == d->T - 1 || !coin(key, 3 * (uint64_t)t, 0.15f)) continue; /* [CLS], [SEP] never */
        targets[t] = ids[t];
        if (coin(key, 3 * (uint64_t)t + 1, 0.8f)) ids[t] = d->mask_id;
        else if (coin(key, 3 * (uint64_t)t + 2, 0.5f))
            ids[t] = (int32_t)(posemb_nn_dropout_key(key, (uint64_t)t, 7) % (uint64_t)d->vocab);
    }
}

/* Sequence s (training or validation index space) into ids/targets, masked with key. */
static void fill_sequence(const posemb_lm_data *d, long s, uint64_t key, int32_t *ids, int32_t *targets)
{
    const int32_t *src = d->tokens + s * d->body;
    if (!d->mlm) {
        memcpy(ids, src, (size_t)d->T * sizeof *ids);
        memcpy(targets, src, (size_t)d->T * sizeof *targets);
        return;
    }
    ids[0] = d->cls;
    memcpy(ids + 1, src, (size_t)d->body * sizeof *ids);
    ids[d->T - 1] = d->sep;
    mask_sequence(d, key, ids, targets);
}

void posemb_lm_train_batch(posemb_lm_data *d, long k, int B, int32_t *ids, int32_t *targets)
{
    for (int b = 0; b < B; b++) {
        long g = k * B + b, epoch = g / d->n_train;
        if (epoch != d->perm_epoch) shuffle(d, epoch);
        long s = d->perm[g % d->n_train];
        uint64_t key = posemb_nn_dropout_key(d->seed, (uint64_t)g, 11);
        fill_sequence(d, s, key, ids + (size_t)b * d->T, targets + (size_t)b * d->T);
        if (d->mix) d->mix(d->mix_ctx, g, d->T, ids + (size_t)b * d->T, targets + (size_t)b * d->T);
    }
}

void posemb_lm_valid_batch(const posemb_lm_data *d, long i, int B, int32_t *ids, int32_t *targets)
{
    long nv = d->n_valid ? d->n_valid : d->n_train; /* no held-out data: evaluate on the training sequences */
    long first = d->n_valid ? d->n_train : 0;
    for (int b = 0; b < B; b++) {
        long s = first + (i * B + b) % nv;
        uint64_t key = posemb_nn_dropout_key(d->seed ^ 0x5a5a5a5aULL, (uint64_t)(i * B + b), 13);
        fill_sequence(d, s, key, ids + (size_t)b * d->T, targets + (size_t)b * d->T);
    }
}
