/* The matrices of a model's first layer that the indicators read:
 * identical-word attention logits and the position-wise correlation. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/probes.h"
#include "posemb/rng.h"
#include "nn/nn_internal.h"
#include "model/model_internal.h"
#include "core/rng_internal.h"

/* Adds the head average of one sequence's logits [H, n, n] to the
 * accumulators of the mean, of squares (for the spread) and of the softmax. */
static void accumulate(const float *logits, int H, int n, double *sum, double *sq, double *soft)
{
    size_t nn = (size_t)n * n;
    for (size_t k = 0; k < nn; k++) {
        double avg = 0;
        for (int h = 0; h < H; h++) avg += logits[(size_t)h * nn + k];
        avg /= H;
        sum[k] += avg;
        sq[k] += avg * avg;
    }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++) {
            const float *row = logits + (size_t)h * nn + (size_t)i * n;
            double mx = row[0], z = 0;
            for (int j = 1; j < n; j++) mx = fmax(mx, row[j]);
            for (int j = 0; j < n; j++) z += exp(row[j] - mx);
            for (int j = 0; j < n; j++) soft[(size_t)i * n + j] += exp(row[j] - mx) / z / H;
        }
}

posemb_status posemb_identical_words(posemb_model *m, int n, int n_words, uint64_t seed, float *mean, float *spread,
                                     float *softmax, posemb_error *err)
{
    const posemb_config *c = posemb_model_config(m);
    if (n_words < 1) return posemb_fail(err, POSEMB_EINVAL, "identical-word probing: %d words (need >= 1)", n_words);
    if (n < 2) return posemb_fail(err, POSEMB_EINVAL, "identical-word probing: %d positions (need >= 2)", n);
    size_t nn = (size_t)n * n;
    int chunk = (int)fmax(1, fmin(n_words, (32L << 20) / ((double)c->heads * nn))); /* bounded memory */
    float *logits = malloc((size_t)chunk * c->heads * nn * sizeof *logits);
    int32_t *ids = malloc((size_t)chunk * n * sizeof *ids);
    double *sum = calloc(nn, sizeof *sum), *sq = calloc(nn, sizeof *sq), *soft = calloc(nn, sizeof *soft);
    posemb_status st = logits && ids && sum && sq && soft
                           ? POSEMB_OK
                           : posemb_fail(err, POSEMB_ENOMEM, "identical-word probing: out of memory");
    posemb_rng r;
    posemb_rng_seed(&r, seed, 9);
    for (int done = 0; !st && done < n_words; done += chunk) {
        int B = n_words - done < chunk ? n_words - done : chunk;
        for (int b = 0; b < B; b++) {
            int32_t w;
            do w = (int32_t)posemb_rng_below(&r, (uint32_t)c->vocab_size);
            while (w == c->pad_token_id && c->vocab_size > 1);
            for (int t = 0; t < n; t++) ids[(size_t)b * n + t] = w;
        }
        posemb_batch batch = {.B = B, .T = n, .ids = ids};
        st = posemb_model_layer0_logits(m, &batch, logits, err);
        for (int b = 0; !st && b < B; b++) accumulate(logits + (size_t)b * c->heads * nn, c->heads, n, sum, sq, soft);
    }
    for (size_t k = 0; !st && k < nn; k++) {
        double mu = sum[k] / n_words;
        mean[k] = (float)mu;
        if (spread) spread[k] = (float)sqrt(fmax(0.0, sq[k] / n_words - mu * mu));
        if (softmax) softmax[k] = (float)(soft[k] / n_words);
    }
    free(logits);
    free(ids);
    free(sum);
    free(sq);
    free(soft);
    return st;
}

/* GPT-NeoX's fused product is per head [q_h, k_h, v_h]: rows of x [n, 3 H d]
 * reordered in place to [q | k | v], through tmp (at least 3 H d floats). */
static void neox_rows_to_qkv(float *x, float *tmp, int n, int H, int d)
{
    size_t W = (size_t)3 * H * d;
    for (int i = 0; i < n; i++) {
        float *row = x + i * W;
        for (int h = 0; h < H; h++)
            for (int j = 0; j < 3; j++)
                memcpy(tmp + (size_t)j * H * d + (size_t)h * d, row + ((size_t)h * 3 + j) * d, d * sizeof(float));
        memcpy(row, tmp, W * sizeof(float));
    }
}

posemb_status posemb_correlation(posemb_model *m, const float *P, int n, float *per_head, float *mean,
                                 posemb_error *err)
{
    const posemb_config *c = posemb_model_config(m);
    int D = c->hidden, H = c->heads, d = posemb_config_head_dim(c), A = H * d;
    int KV = c->arch == POSEMB_LLAMA ? c->kv_heads : H, grp = H / KV, ld = A + 2 * KV * d; /* q | k | v widths */
    posemb_nn_wlayout layout;
    const posemb_layer_params *L = posemb_model_layer(m, 0, &layout);
    size_t n_one = (size_t)n * n > (size_t)ld ? (size_t)n * n : (size_t)ld; /* also neox_rows_to_qkv's row */
    float *qk = malloc((size_t)n * ld * sizeof *qk), *one = malloc(n_one * sizeof *one);
    if (!qk || !one) {
        free(qk);
        free(one);
        return posemb_fail(err, POSEMB_ENOMEM, "correlation: out of memory");
    }
    posemb_nn_linear_forward(NULL, qk, P, L->qkv_w, NULL, n, D, ld, layout); /* P Wq | P Wk | P Wv, no bias */
    if (c->arch == POSEMB_NEOX) neox_rows_to_qkv(qk, one, n, H, d);
    memset(mean, 0, (size_t)n * n * sizeof *mean);
    for (int h = 0; h < H; h++) {
        float *ch = per_head ? per_head + (size_t)h * n * n : one;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0f, qk + (size_t)h * d, ld,
                    qk + A + (size_t)(h / grp) * d, ld, 0.0f, ch, n);
        for (size_t k = 0; k < (size_t)n * n; k++) mean[k] += ch[k] / H;
    }
    free(qk);
    free(one);
    return POSEMB_OK;
}
