/* The attention analyses against hand-computed cases. With q and k weights
 * at zero every logit is the PE's alone: without a PE attention is uniform
 * over the keys a query may see, with ALiBi it is softmax(-m_h |i - j|).
 *   encoder, uniform: mean_dist = (T^2 - 1) / (3T), sink = 1/T,
 *                     hist[k] = #{(i, j): |i-j| in bin k} / T^2;
 *   decoder, uniform: mean_dist = (T - 1) / 4, sink = H_T / T (harmonic number);
 *   a padded key gets nothing and a padded query row is not counted;
 *   JS(model, itself) = 0, and JS(uniform, ALiBi) is computed here from the
 *   two closed forms;
 *   with q = b_q and k = b_k (biases only) every token's rotation pair has
 *   the norm of the biases' pair, whatever RoPE rotates it by. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "posemb/model.h"
#include "posemb/pe.h"
#include "testutil.h"
#include "pe/pe_internal.h"

enum { T = 12, B = 2, H = 4, D = 16 };

/* A 2-layer model whose q and k projections (weights and biases) are zero. */
static int with_bias; /* Llama: q, k, v biases (attention_bias) */

static posemb_model *flat_model(posemb_arch arch, const char *pe)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = 40;
    c.hidden = D;
    c.heads = H;
    c.layers = 2;
    c.intermediate = 32;
    c.max_position = 64;
    c.hidden_dropout = c.attn_dropout = 0;
    if (arch == POSEMB_BERT) c.type_vocab = 2;
    if (arch == POSEMB_LLAMA) c.kv_heads = 2;
    c.attn_bias = c.attn_out_bias = with_bias;
    snprintf(c.pe, sizeof c.pe, "%s", pe);
    posemb_model *m;
    posemb_error err;
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s", err.msg);
    posemb_model_init(m, 3);
    const char *names[2][4] = {
        {"encoder.layer.%d.attention.self.query.weight", "encoder.layer.%d.attention.self.query.bias",
         "encoder.layer.%d.attention.self.key.weight", "encoder.layer.%d.attention.self.key.bias"},
        {"layers.%d.self_attn.q_proj.weight", "layers.%d.self_attn.k_proj.weight", NULL, NULL}};
    int k = arch == POSEMB_LLAMA;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 4 && names[k][i]; i++) {
            char n[128];
            snprintf(n, sizeof n, names[k][i], l);
            const posemb_param *p = posemb_model_find(m, n);
            if (!p) fail_msg("no %s", n);
            memset(posemb_model_weights(m) + p->offset, 0, p->numel * sizeof(float));
        }
    return m;
}

static void run(posemb_model *m, posemb_batch *b, int32_t *ids)
{
    for (int i = 0; i < B * T; i++) ids[i] = 5 + (i * 7) % 30;
    b->B = B;
    b->T = T;
    b->ids = ids;
    posemb_error err;
    if (posemb_model_forward(m, b, &err)) fail_msg("%s", err.msg);
}

static void test_uniform_encoder(void **state)
{
    (void)state;
    posemb_model *m = flat_model(POSEMB_BERT, "none");
    int32_t ids[B * T];
    posemb_batch b = {0};
    run(m, &b, ids);
    posemb_attn_profile pr;
    posemb_error err;
    assert_int_equal(posemb_attn_profile_of(m, &b, 3, &pr, &err), POSEMB_OK);
    assert_int_equal(pr.bin_width, 4);
    double want_hist[3] = {0};
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) want_hist[abs(i - j) / 4] += 1.0 / (T * T);
    for (int k = 0; k < 2 * H; k++) {
        TU_CLOSE(pr.mean_dist[k], (T * T - 1.0) / (3.0 * T), 1e-5, 0, "mean distance", k);
        TU_CLOSE(pr.sink[k], 1.0 / T, 1e-6, 0, "sink", k);
        for (int q = 0; q < 3; q++) TU_CLOSE(pr.hist[k * 3 + q], want_hist[q], 1e-6, 0, "histogram", k * 3 + q);
    }
    posemb_attn_profile_free(&pr);
    /* the last 4 tokens of each sequence padded: keys get nothing, their rows are not counted */
    float mask[B * T];
    for (int i = 0; i < B * T; i++) mask[i] = i % T < T - 4;
    b.mask = mask;
    if (posemb_model_forward(m, &b, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_attn_profile_of(m, &b, 3, &pr, &err), POSEMB_OK);
    int n = T - 4;
    for (int k = 0; k < 2 * H; k++) {
        TU_CLOSE(pr.mean_dist[k], (n * n - 1.0) / (3.0 * n), 1e-5, 0, "mean distance, padded", k);
        TU_CLOSE(pr.sink[k], 1.0 / n, 1e-6, 0, "sink, padded", k);
    }
    posemb_attn_profile_free(&pr);
    posemb_model_free(m);
}

static void test_uniform_decoder(void **state)
{
    (void)state;
    posemb_model *m = flat_model(POSEMB_LLAMA, "none");
    int32_t ids[B * T];
    posemb_batch b = {0};
    run(m, &b, ids);
    posemb_attn_profile pr;
    posemb_error err;
    assert_int_equal(posemb_attn_profile_of(m, &b, 1, &pr, &err), POSEMB_OK);
    double harmonic = 0;
    for (int i = 1; i <= T; i++) harmonic += 1.0 / i;
    for (int k = 0; k < 2 * H; k++) {
        TU_CLOSE(pr.mean_dist[k], (T - 1) / 4.0, 1e-5, 0, "mean distance", k);
        TU_CLOSE(pr.sink[k], harmonic / T, 1e-6, 0, "sink", k);
        TU_CLOSE(pr.hist[k], 1.0, 1e-6, 0, "one bin holds everything", k);
    }
    posemb_attn_profile_free(&pr);
    posemb_model_free(m);
}

/* How many windows an attention analysis runs (maps under 256 MB), and the windows of a text. */
static void test_windows(void **state)
{
    (void)state;
    assert_int_equal(posemb_attn_windows(4, 4, 128), 8);
    assert_int_equal(posemb_attn_windows(4, 4, 512), 8);    /* 16 MB a window */
    assert_int_equal(posemb_attn_windows(4, 4, 1024), 4);   /* 64 MB */
    assert_int_equal(posemb_attn_windows(4, 4, 2048), 1);   /* 256 MB */
    assert_int_equal(posemb_attn_windows(12, 12, 4096), 1); /* over the budget alone: still one */
    int32_t text[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ids[10];
    posemb_error err;
    assert_int_equal(posemb_text_windows(text, 10, 2, 4, 11, ids, &err), POSEMB_OK);
    for (int i = 0; i < 8; i++) assert_int_equal(ids[i], text[i]);
    assert_int_equal(posemb_text_windows(text, 10, 3, 4, 11, ids, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "10 tokens, less than 3 windows of 4"));
    assert_int_equal(posemb_text_windows(text, 10, 2, 4, 6, ids, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "token 5 of the text is id 6, outside the vocabulary of 6"));
}

/* JS between a flat decoder and a flat ALiBi decoder, row by row from the closed forms. */
static void test_js(void **state)
{
    (void)state;
    posemb_model *u = flat_model(POSEMB_LLAMA, "none"), *a = flat_model(POSEMB_LLAMA, "alibi");
    int32_t ids[B * T];
    posemb_batch b = {0};
    run(u, &b, ids);
    run(a, &b, ids);
    float js[2 * H], self[2 * H];
    posemb_error err;
    assert_int_equal(posemb_attn_js(u, a, &b, js, &err), POSEMB_OK);
    assert_int_equal(posemb_attn_js(a, a, &b, self, &err), POSEMB_OK);
    float slopes[H];
    posemb_pe_alibi_slopes(H, slopes);
    for (int h = 0; h < H; h++) {
        double sum = 0;
        for (int i = 0; i < T; i++) {
            double z = 0, row = 0;
            for (int j = 0; j <= i; j++) z += exp(-slopes[h] * (i - j));
            for (int j = 0; j <= i; j++) {
                double p = 1.0 / (i + 1), q = exp(-slopes[h] * (i - j)) / z, mid = 0.5 * (p + q);
                row += 0.5 * p * log(p / mid) + 0.5 * q * log(q / mid);
            }
            sum += row;
        }
        for (int l = 0; l < 2; l++) {
            TU_CLOSE(js[l * H + h], sum / T, 2e-5, 1e-4, "JS(uniform, alibi)", l * H + h);
            TU_CLOSE(self[l * H + h], 0.0, 1e-7, 0, "JS(alibi, alibi)", l * H + h);
        }
    }
    posemb_model *bert = flat_model(POSEMB_BERT, "none");
    assert_int_equal(posemb_attn_js(u, bert, &b, js, &err), POSEMB_EINVAL); /* bert has run no batch */
    assert_non_null(strstr(err.msg, "no attention maps"));
    posemb_model_free(bert);
    posemb_model_free(u);
    posemb_model_free(a);
}

static void check_rotary(const char *spec, int halves)
{
    with_bias = 1;
    posemb_model *m = flat_model(POSEMB_LLAMA, spec);
    with_bias = 0;
    const int d = D / H, KV = 2, half = d / 2;
    float *w = posemb_model_weights(m);
    for (int l = 0; l < 2; l++) { /* biases 1 + (index / 7): each pair's norm its own */
        char n[2][64];
        snprintf(n[0], 64, "layers.%d.self_attn.q_proj.bias", l);
        snprintf(n[1], 64, "layers.%d.self_attn.k_proj.bias", l);
        for (int k = 0; k < 2; k++) {
            const posemb_param *p = posemb_model_find(m, n[k]);
            for (size_t i = 0; i < p->numel; i++) w[p->offset + i] = 1.0f + (float)(i + 13 * l + 5 * k) / 7.0f;
        }
    }
    int32_t ids[B * T];
    posemb_batch b = {0};
    run(m, &b, ids);
    float qn[2 * H * half], kn[2 * KV * half];
    posemb_error err;
    assert_int_equal(posemb_rotary_usage(m, &b, halves, qn, kn, &err), POSEMB_OK);
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 2; k++) {
            int heads = k ? KV : H;
            for (int h = 0; h < heads; h++)
                for (int p = 0; p < half; p++) {
                    int i0 = h * d + (halves ? p : 2 * p), i1 = h * d + (halves ? p + half : 2 * p + 1);
                    double u = 1.0 + (i0 + 13 * l + 5 * k) / 7.0, v = 1.0 + (i1 + 13 * l + 5 * k) / 7.0;
                    float got = (k ? kn : qn)[((size_t)l * heads + h) * half + p];
                    TU_CLOSE(got, sqrt(u * u + v * v), 1e-5, 0, spec, (l * heads + h) * half + p);
                }
        }
    posemb_model_free(m);
}

static void test_rotary_usage(void **state)
{
    (void)state;
    check_rotary("rope", 1);
    check_rotary("rope:pairing=interleaved", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_encoder), cmocka_unit_test(test_uniform_decoder), cmocka_unit_test(test_js),
        cmocka_unit_test(test_rotary_usage),    cmocka_unit_test(test_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
