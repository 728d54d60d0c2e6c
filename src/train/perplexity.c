/* Held-out causal-LM loss at a chosen context length: the measurement of
 * "train short, test long" (ALiBi's, xPos's and YaRN's perplexity against
 * length). Windows of T tokens at positions 0..T-1; with a stride below T
 * each window scores only its last stride tokens (Hugging Face's
 * sliding-window perplexity), so every token is scored once. */
#include <stdlib.h>
#include <string.h>

#include "posemb/trainer.h"
#include "model/model_internal.h"
#include "train/trainer_internal.h"

/* Window w's ids and targets: the tokens from w * stride, -100 on the
 * overlap with the previous window (already scored there). */
static void window(const int32_t *tokens, long w, int T, int stride, int32_t *ids, int32_t *targets)
{
    long s = w * (long)stride;
    int keep = w ? T - stride : 0;
    memcpy(ids, tokens + s, (size_t)T * sizeof *ids);
    for (int t = 0; t < T; t++) targets[t] = t < keep ? -100 : ids[t];
}

posemb_status posemb_lm_nll(posemb_model *m, const int32_t *tokens, long n, int T, int stride, int B, double *nll,
                            long *count, posemb_error *err)
{
    *nll = 0;
    *count = 0;
    if (T < 2 || stride < 1 || stride > T || B < 1)
        return posemb_fail(err, POSEMB_EINVAL,
                           "perplexity: window %d, stride %d, batch %d (need 2 <= window, "
                           "1 <= stride <= window, batch >= 1)",
                           T, stride, B);
    if (n < T) return posemb_fail(err, POSEMB_ERANGE, "perplexity: %ld tokens, fewer than one window of %d", n, T);
    long windows = (n - T) / stride + 1;
    int32_t *ids = malloc((size_t)B * T * sizeof *ids), *tg = malloc((size_t)B * T * sizeof *tg);
    posemb_status st = ids && tg ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "perplexity: out of memory");
    posemb_model_set_train(m, 0, 0, 0);
    posemb_model_set_inference(m, 1);
    for (long w0 = 0; !st && w0 < windows; w0 += B) {
        int nb = windows - w0 < B ? (int)(windows - w0) : B;
        for (int b = 0; b < nb; b++) window(tokens, w0 + b, T, stride, ids + (size_t)b * T, tg + (size_t)b * T);
        posemb_batch batch = {.B = nb, .T = T, .ids = ids};
        posemb_targets targets = {.tokens = tg};
        posemb_loss l;
        st = posemb_model_forward(m, &batch, err);
        if (!st) st = posemb_model_loss(m, &targets, 0.0f, &l, err);
        if (!st) {
            *nll += l.loss * (double)l.count;
            *count += l.count;
        }
    }
    posemb_model_set_inference(m, 0);
    free(ids);
    free(tg);
    return st;
}

/* Windows per pass: about 16384 tokens, for the products' sake, but at most
 * 64 MiB of attention probabilities (heads x T x T floats a window), which
 * long windows would otherwise fill: at 2048 tokens 8 windows of a 4-head
 * model wrote 512 MiB, and first touches and zeroing of those pages took a
 * third of the pass (bench/README, "Causal attention by blocks of rows"). */
static int default_batch(int heads, int T)
{
    long by_tokens = 16384 / T, by_probs = (1L << 24) / ((long)heads * T * T);
    long b = by_tokens < by_probs ? by_tokens : by_probs;
    return b > 1 ? (int)b : 1;
}

posemb_status posemb_lm_eval_length(const char *dir, const posemb_config *cfg, const int32_t *tokens, long n, int L,
                                    int B, posemb_lm_length *out, posemb_error *err)
{
    posemb_model *m = NULL;
    int context;
    *out = (posemb_lm_length){.length = L, .context = L, .stride = L};
    posemb_status st = posemb_lm_load_at(dir, cfg, L, &m, &context, err);
    if (!st && context < L) { /* slide windows of the longest it takes, each scoring its second half */
        out->context = context;
        out->stride = context / 2 > 0 ? context / 2 : 1;
    }
    if (B < 1 && !st) B = default_batch(posemb_model_config(m)->heads, out->context);
    if (!st) st = posemb_lm_nll(m, tokens, n, out->context, out->stride, B, &out->nll, &out->count, err);
    posemb_model_free(m);
    return st;
}
