/* What attention does with a PE, read off a model's attention maps: how far
 * each head looks (the attention-weighted distance |i - j| and its
 * histogram), how much it puts on the first token (attention sinks), and
 * how far two models' maps are apart (Jensen-Shannon divergence). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "model/model_internal.h"

/* Query rows that count: unpadded tokens (all when the batch has no mask). */
static int row_counts(const posemb_batch *b, int bi, int i) { return !b->mask || b->mask[(size_t)bi * b->T + i] > 0; }

static posemb_status check_maps(const posemb_model *m, const posemb_batch *b, const char *what, posemb_error *err)
{
    for (int l = 0; l < posemb_model_config(m)->layers; l++)
        if (!posemb_model_attention(m, l))
            return posemb_fail(err, POSEMB_EINVAL,
                               "%s: no attention maps (run posemb_model_forward on the batch, "
                               "not in inference mode)",
                               what);
    if (b->B < 1 || b->T < 1) return posemb_fail(err, POSEMB_EINVAL, "%s: empty batch", what);
    return POSEMB_OK;
}

/* Adds row p [T] (query i) of one head into its sums. */
static void profile_row(const float *p, int T, int i, int bin_width, int bins, double *dist, double *sink, double *hist)
{
    double d = 0;
    for (int j = 0; j < T; j++) {
        int r = abs(i - j), k = r / bin_width;
        d += (double)p[j] * r;
        hist[k < bins ? k : bins - 1] += p[j];
    }
    *dist += d;
    *sink += p[0];
}

posemb_status posemb_attn_profile_of(const posemb_model *m, const posemb_batch *b, int bins, posemb_attn_profile *out,
                                     posemb_error *err)
{
    memset(out, 0, sizeof *out);
    posemb_status st = check_maps(m, b, "attention profile", err);
    if (st) return st;
    if (bins < 1) return posemb_fail(err, POSEMB_EINVAL, "attention profile: %d bins (need >= 1)", bins);
    int L = posemb_model_config(m)->layers, H = posemb_model_config(m)->heads, T = b->T;
    out->layers = L;
    out->heads = H;
    out->bins = bins;
    out->bin_width = (T + bins - 1) / bins;
    out->mean_dist = calloc((size_t)L * H, sizeof(float));
    out->sink = calloc((size_t)L * H, sizeof(float));
    out->hist = calloc((size_t)L * H * bins, sizeof(float));
    double *acc = calloc((size_t)2 + bins, sizeof(double));
    if (!out->mean_dist || !out->sink || !out->hist || !acc) {
        free(acc);
        posemb_attn_profile_free(out);
        return posemb_fail(err, POSEMB_ENOMEM, "attention profile: out of memory");
    }
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            const float *probs = posemb_model_attention(m, l); /* [B, H, T, T] */
            long rows = 0;
            memset(acc, 0, ((size_t)2 + bins) * sizeof *acc);
            for (int bi = 0; bi < b->B; bi++)
                for (int i = 0; i < T; i++)
                    if (row_counts(b, bi, i)) {
                        const float *p = probs + (((size_t)bi * H + h) * T + i) * T;
                        profile_row(p, T, i, out->bin_width, bins, &acc[0], &acc[1], acc + 2);
                        rows++;
                    }
            size_t k = (size_t)l * H + h;
            out->mean_dist[k] = rows ? (float)(acc[0] / rows) : NAN;
            out->sink[k] = rows ? (float)(acc[1] / rows) : NAN;
            for (int q = 0; q < bins; q++) out->hist[k * bins + q] = rows ? (float)(acc[2 + q] / rows) : NAN;
        }
    free(acc);
    return POSEMB_OK;
}

int posemb_attn_windows(int layers, int heads, int n)
{
    double per = 4.0 * layers * heads * (double)n * n, fit = floor(256.0 * (1 << 20) / per);
    return fit >= 8 ? 8 : fit < 1 ? 1 : (int)fit;
}

posemb_status posemb_text_windows(const int32_t *text, long text_n, int B, int n, int vocab, int32_t *ids,
                                  posemb_error *err)
{
    if ((long)B * n > text_n)
        return posemb_fail(err, POSEMB_EINVAL, "the text has %ld tokens, less than %d window%s of %d", text_n, B,
                           B == 1 ? "" : "s", n);
    for (long i = 0; i < (long)B * n; i++)
        if ((ids[i] = text[i]) < 0 || ids[i] >= vocab)
            return posemb_fail(err, POSEMB_ERANGE,
                               "token %ld of the text is id %d, outside the vocabulary of %d (another tokenizer?)", i,
                               (int)ids[i], vocab);
    return POSEMB_OK;
}

void posemb_attn_profile_free(posemb_attn_profile *p)
{
    free(p->mean_dist);
    free(p->sink);
    free(p->hist);
    memset(p, 0, sizeof *p);
}

/* JS(p, q) in nats for one row: the mean of KL(p || m) and KL(q || m), m = (p + q) / 2. */
static double js_row(const float *p, const float *q, int T)
{
    double js = 0;
    for (int j = 0; j < T; j++) {
        double a = p[j], c = q[j], mid = 0.5 * (a + c);
        if (a > 0) js += 0.5 * a * log(a / mid);
        if (c > 0) js += 0.5 * c * log(c / mid);
    }
    return js;
}

posemb_status posemb_attn_js(const posemb_model *a, const posemb_model *b, const posemb_batch *batch, float *out,
                             posemb_error *err)
{
    const posemb_config *ca = posemb_model_config(a), *cb = posemb_model_config(b);
    if (ca->layers != cb->layers || ca->heads != cb->heads)
        return posemb_fail(err, POSEMB_EINVAL, "compare: %d layers x %d heads against %d x %d", ca->layers, ca->heads,
                           cb->layers, cb->heads);
    posemb_status st = check_maps(a, batch, "compare", err);
    if (!st) st = check_maps(b, batch, "compare", err);
    if (st) return st;
    int L = ca->layers, H = ca->heads, T = batch->T;
    for (int l = 0; l < L; l++) {
        const float *pa = posemb_model_attention(a, l), *pb = posemb_model_attention(b, l);
        for (int h = 0; h < H; h++) {
            double sum = 0;
            long rows = 0;
            for (int bi = 0; bi < batch->B; bi++)
                for (int i = 0; i < T; i++)
                    if (row_counts(batch, bi, i)) {
                        size_t off = (((size_t)bi * H + h) * T + i) * T;
                        sum += js_row(pa + off, pb + off, T);
                        rows++;
                    }
            out[(size_t)l * H + h] = rows ? (float)(sum / rows) : NAN;
        }
    }
    return POSEMB_OK;
}

/* Mean norm of each rotation pair over the unpadded tokens, for n heads
 * starting at column col of the qkv rows. */
static void pair_norms(const float *qkv, int ld, const posemb_batch *b, int col, int n, int d, int halves, float *out)
{
    int half = d / 2;
    long rows = 0;
    double *acc = calloc((size_t)n * half, sizeof *acc);
    if (!acc) return;
    for (int bi = 0; bi < b->B; bi++)
        for (int t = 0; t < b->T; t++) {
            if (!row_counts(b, bi, t)) continue;
            const float *x = qkv + ((size_t)bi * b->T + t) * ld + col;
            for (int h = 0; h < n; h++)
                for (int m = 0; m < half; m++) {
                    float u = x[h * d + (halves ? m : 2 * m)], v = x[h * d + (halves ? m + half : 2 * m + 1)];
                    acc[(size_t)h * half + m] += sqrt((double)u * u + (double)v * v);
                }
            rows++;
        }
    for (size_t k = 0; k < (size_t)n * half; k++) out[k] = rows ? (float)(acc[k] / rows) : NAN;
    free(acc);
}

posemb_status posemb_rotary_usage(const posemb_model *m, const posemb_batch *b, int halves, float *q_norm,
                                  float *k_norm, posemb_error *err)
{
    posemb_status st = check_maps(m, b, "rotary usage", err);
    if (st) return st;
    const posemb_config *c = posemb_model_config(m);
    int d = posemb_config_head_dim(c), H = c->heads, KV = c->arch == POSEMB_LLAMA ? c->kv_heads : H, half = d / 2;
    for (int l = 0; l < c->layers; l++) {
        int ld;
        const float *qkv = posemb_model_qkv(m, l, &ld);
        pair_norms(qkv, ld, b, 0, H, d, halves, q_norm + (size_t)l * H * half);
        pair_norms(qkv, ld, b, H * d, KV, d, halves, k_norm + (size_t)l * KV * half);
    }
    return POSEMB_OK;
}
