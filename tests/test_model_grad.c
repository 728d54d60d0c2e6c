/* Finite-difference checks of whole tiny models (2 layers, width 8, 2
 * heads): BERT, RoBERTa, GPT-2, Llama and GPT-NeoX with each PE family. loss = sum(last
 * hidden state * R); every parameter is perturbed. R is zero on padded
 * positions: HF gives the padding row of the word embeddings no gradient
 * (padding_idx), which is right only because a padded token's output is not
 * part of the loss and its key is masked.
 *
 * Tolerance as in test_pe_grad.c: float32 forward, loss summed in double,
 * central differences with h = 5e-3 (frequencies: h / max_position), so
 * |fd - analytic| <= 3e-3 + 1e-2 |analytic|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/nn.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "core/rng_internal.h"

enum { B = 2, T = 5, V = 11, D = 8, MAXPOS = 10 };

typedef struct harness {
    posemb_model *m;
    int32_t ids[B * T], types[B * T];
    float mask[B * T], R[B * T * D];
} harness;

static double loss(harness *hs)
{
    posemb_batch b = {.B = B, .T = T, .ids = hs->ids, .types = hs->types, .mask = hs->mask};
    posemb_error err;
    if (posemb_model_forward(hs->m, &b, &err)) fail_msg("forward: %s", err.msg);
    const float *h = posemb_model_last_hidden(hs->m);
    double l = 0;
    for (int i = 0; i < B * T * D; i++) l += (double)h[i] * hs->R[i];
    return l;
}

static int llama_head_dim; /* 0: hidden / heads */
static int llama_biases;   /* 1: HF Llama's attention_bias and mlp_bias */
static int llama_qk_norm;  /* 1: Qwen3's q_norm and k_norm */
static int llama_window;   /* > 0: layer 1 attends through a sliding window of this many tokens */
static int llama_gemma;    /* 1: Gemma 3's block (1 + w norms, post-norms, scaled embeddings, GeGLU, q/k norms) */
static int llama_llama4;   /* 1: Llama 4: layer 0 rotates, q/k normalised without weight, in chunks of 2 */
static int neox_serial;    /* 1: GPT-NeoX with use_parallel_residual false */
static int neox_no_bias;   /* 1: GPT-NeoX with attention_bias false */
static int enc_pre_ln;     /* 1: BERT or RoBERTa with pre-LN layers and a final LayerNorm */

static void setup_model(harness *hs, posemb_arch arch, const char *spec, int train)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = V;
    c.hidden = D;
    c.layers = 2;
    c.heads = 2;
    c.intermediate = 12;
    c.max_position = MAXPOS;
    c.ln_eps = 1e-5f;
    c.hidden_dropout = c.attn_dropout = 0.2f;
    if (arch == POSEMB_BERT || arch == POSEMB_ROBERTA) c.type_vocab = arch == POSEMB_BERT ? 2 : 1;
    if (arch == POSEMB_BERT || arch == POSEMB_ROBERTA) c.pre_ln = enc_pre_ln;
    if (arch == POSEMB_LLAMA) c.kv_heads = 1; /* grouped-query: both heads read one key/value head */
    if (arch == POSEMB_LLAMA) c.head_dim = llama_head_dim;
    if (arch == POSEMB_LLAMA) c.attn_bias = c.attn_out_bias = c.mlp_bias = llama_biases;
    if (arch == POSEMB_LLAMA) c.qk_norm = llama_qk_norm;
    if (arch == POSEMB_LLAMA && llama_gemma) {
        c.gemma = c.qk_norm = 1;
        c.query_pre_attn_scalar = 3.0f;
    }
    if (arch == POSEMB_LLAMA && llama_window) {
        c.sliding_window = llama_window;
        c.sliding_layers[0] = 1u << 1;
    }
    if (arch == POSEMB_LLAMA && llama_llama4) {
        c.llama4 = c.qk_unit_norm = 1;
        c.rope_layers[0] = c.chunked_layers[0] = 1u << 0;
        c.attention_chunk = 2;
    }
    if (arch == POSEMB_NEOX) c.parallel_residual = !neox_serial;
    if (arch == POSEMB_NEOX) c.attn_bias = c.attn_out_bias = !neox_no_bias;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    if (posemb_model_create(&hs->m, &c, &err)) fail_msg("%s: %s", spec, err.msg);
    posemb_model_init(hs->m, 42);
    posemb_rng rng;
    posemb_rng_seed(&rng, 7, 7);
    /* O(1) weights everywhere (LayerNorm too) so every path carries gradient. */
    float *w = posemb_model_weights(hs->m);
    for (int i = 0; i < posemb_model_n_params(hs->m); i++) {
        const posemb_param *p = posemb_model_param(hs->m, i);
        if (strstr(p->name, "frequencies")) continue;
        posemb_rng_fill_normal(&rng, w + p->offset, (long)p->numel, 0.5f);
        /* KERPLE's r1, r2 are projected onto [0.01, 2]: start them inside */
        for (size_t k = 0; strstr(p->name, "kerple") && k < p->numel; k++)
            w[p->offset + k] = fminf(0.2f + fabsf(w[p->offset + k]), 1.9f);
        for (size_t k = 0; strstr(p->name, "ssmax") && k < p->numel; k++) /* kept >= 0.01: start inside */
            w[p->offset + k] = 0.4f + 0.2f * fabsf(w[p->offset + k]);     /* and moderate: s ln n sharpens softmax */
    }
    posemb_pe_prepare(posemb_model_pe(hs->m));
    posemb_model_set_train(hs->m, train, 99, 3); /* fixed dropout decisions: a deterministic function */
    int pad = c.pad_token_id;
    for (int t = 0; t < B * T; t++) {
        int padded = t == B * T - 1; /* the last token of the second sequence */
        hs->ids[t] = padded && pad >= 0 ? pad : 2 + (int)posemb_rng_below(&rng, V - 2);
        hs->types[t] = arch == POSEMB_BERT && t % T >= 2 ? 1 : 0;
        hs->mask[t] = padded ? 0.0f : 1.0f;
        for (int k = 0; k < D; k++) hs->R[t * D + k] = padded ? 0.0f : (float)posemb_rng_normal(&rng);
    }
}

static void check_model_mode(posemb_arch arch, const char *spec, int train)
{
    harness hs;
    setup_model(&hs, arch, spec, train);
    posemb_model_zero_grad(hs.m);
    loss(&hs);
    posemb_model_backward(hs.m, hs.R);
    size_t n = posemb_model_n_floats(hs.m);
    float *analytic = malloc(n * sizeof *analytic), *w = posemb_model_weights(hs.m);
    memcpy(analytic, posemb_model_grads(hs.m), n * sizeof *analytic);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < posemb_model_n_params(hs.m); i++) {
        const posemb_param *p = posemb_model_param(hs.m, i);
        float h = strstr(p->name, "frequencies") ? 5e-3f / MAXPOS : 5e-3f;
        /* Gemma's embeddings enter times sqrt(D): the same step in what the layers see */
        if (llama_gemma && strstr(p->name, "embed_tokens")) h /= sqrtf((float)D);
        /* Llama 4 here: layer 0's weightless q/k norm and the scaled logits of layer 1 curve the loss in the
         * embeddings; at 5e-3 the truncation error h^2 f'''/6 of one embedding (token 2, feature 7) passes
         * the tolerance, at 2e-3 it agrees (a grid of steps 5e-4 around it gave the analytic slope) */
        if (llama_llama4 && strstr(p->name, "embed_tokens")) h = 2e-3f;
        for (size_t k = 0; k < p->numel; k++) {
            float *x = w + p->offset + k, keep = *x;
            *x = keep + h;
            posemb_pe_prepare(posemb_model_pe(hs.m));
            double up = loss(&hs);
            *x = keep - h;
            posemb_pe_prepare(posemb_model_pe(hs.m));
            double down = loss(&hs);
            *x = keep;
            double fd = (up - down) / ((double)(keep + h) - (double)(keep - h)), an = analytic[p->offset + k];
            double e = fabs(fd - an), tol = 3e-3 + 1e-2 * fabs(an);
            worst = fmax(worst, e / tol);
            if (e > tol && bad++ < 5) printf("  %s[%zu]: finite difference %.6g, analytic %.6g\n", p->name, k, fd, an);
        }
    }
    posemb_pe_prepare(posemb_model_pe(hs.m));
    const char *names[] = {"BERT", "RoBERTa", "GPT-2", "Llama", "GPT-NeoX"};
    printf("%-8s %-32s %s %5zu parameters, worst error/tolerance %.3f\n", names[arch], spec,
           enc_pre_ln ? (train ? "pre-LN train" : "pre-LN eval ")
           : train    ? "train"
                      : "eval ",
           n, worst);
    free(analytic);
    posemb_model_free(hs.m);
    if (bad) fail_msg("%s %s: %d gradient mismatches", names[arch], spec, bad);
}

static void check_model(posemb_arch arch, const char *spec) { check_model_mode(arch, spec, 0); }

/* Training mode: dropout 0.2 after the embeddings, on the attention
 * probabilities and on both residual branches of every layer. */
static void test_dropout(void **state)
{
    check_model_mode(POSEMB_BERT, "rpe:k=2", 1);
    check_model_mode(POSEMB_ROBERTA, "ape", 1);
    check_model_mode(POSEMB_GPT2, "ape+alibi", 1);
}

/* The hash-based dropout drops a fraction p, scales the rest by 1/(1-p),
 * differs between keys, and really acts in training mode only. */
static void test_dropout_statistics(void **state)
{
    enum { n = 200000 };
    static float x[n], y[n], z[n];
    for (int i = 0; i < n; i++) x[i] = 1.0f;
    posemb_nn_dropout_forward(y, x, n, 0.2f, posemb_nn_dropout_key(1, 2, 3));
    posemb_nn_dropout_forward(z, x, n, 0.2f, posemb_nn_dropout_key(1, 3, 3));
    int zeros = 0, same = 0;
    for (int i = 0; i < n; i++) {
        zeros += y[i] == 0.0f;
        same += y[i] == z[i];
        assert_true(y[i] == 0.0f || fabsf(y[i] - 1.25f) < 1e-6f);
    }
    assert_true(fabs(zeros / (double)n - 0.2) < 0.005); /* ~10 standard errors */
    assert_true(same < n * 0.72);                       /* independent keys agree on 0.8^2 + 0.2^2 = 68% */
    harness hs;
    setup_model(&hs, POSEMB_BERT, "ape", 0);
    double eval = loss(&hs);
    posemb_model_set_train(hs.m, 1, 99, 3);
    double train = loss(&hs);
    posemb_model_set_train(hs.m, 0, 0, 0);
    assert_true(loss(&hs) == eval);
    assert_true(fabs(train - eval) > 1e-3);
    posemb_model_free(hs.m);
}

/* The tensor loops decide in integers (bits < ceil(p 2^53)) what
 * posemb_nn_dropout_scale decides in double (bits 2^-53 < p): the same
 * decisions element for element, at ordinary rates, tiny and extreme ones. */
static void test_dropout_same_decisions(void **state)
{
    enum { n = 100003 };
    static float x[n], y[n], dx[n];
    const float ps[] = {0.1f, 0.2f, 0.5f, 1.0f / 3.0f, 1e-9f, 1e-30f, 0.999999f, 1.0f, 0.0f};
    for (int i = 0; i < n; i++) x[i] = 1.0f + (float)(i % 7);
    for (int k = 0; k < (int)(sizeof ps / sizeof *ps); k++) {
        uint64_t key = posemb_nn_dropout_key(7, (uint64_t)k, 11);
        posemb_nn_dropout_forward(y, x, n, ps[k], key);
        memset(dx, 0, sizeof dx);
        posemb_nn_dropout_backward(dx, x, n, ps[k], key);
        long dropped = 0;
        for (int i = 0; i < n; i++) {
            float want = x[i] * posemb_nn_dropout_scale(key, (uint64_t)i, ps[k]);
            if (ps[k] <= 0.0f) want = x[i]; /* p = 0: the identity */
            assert_true(y[i] == want);
            assert_true(dx[i] == want);
            dropped += y[i] == 0.0f;
        }
        printf("p = %g: %ld of %d dropped\n", (double)ps[k], dropped, n);
    }
}

static void test_bert(void **state)
{
    const char *specs[] = {"none",
                           "decoupled:dim=4,layers=1",
                           "ape",
                           "sin",
                           "lsin",
                           "rpe:k=2",
                           "srpe:k=2",
                           "lsrpe:k=2",
                           "relative_key",
                           "relative_key_query",
                           "rope",
                           "alibi",
                           "t5:buckets=8,max_distance=16",
                           "kerple",
                           "sandwich",
                           "fire:threshold=4",
                           "rope:scaling=yarn,factor=4,original=4",
                           "ape+rpe:k=2",
                           "lsin:integration=concat,width=4+lsrpe:k=3",
                           "tupe",
                           "tupe:cls=on,share=off"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_BERT, specs[i]);
}

static void test_roberta(void **state)
{
    const char *specs[] = {"ape", "rpe:k=2", "alibi"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_ROBERTA, specs[i]);
}

/* Pre-LN encoders (HF's roberta-prelayernorm; BERT's posemb's own): the
 * PEs of each kind of hook (input, attention logits, q/k, the layer input
 * tupe and decoupled read), the final LayerNorm, and dropout on every site. */
static void test_pre_ln(void **state)
{
    const char *specs[] = {"ape", "sin", "rpe:k=2", "rope", "alibi", "tupe", "decoupled:dim=4,layers=1", "none"};
    enc_pre_ln = 1;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_BERT, specs[i]);
    check_model(POSEMB_ROBERTA, "ape");
    check_model_mode(POSEMB_BERT, "rpe:k=2", 1);
    check_model_mode(POSEMB_ROBERTA, "ape", 1);
    enc_pre_ln = 0;
}

static void test_gpt2(void **state)
{
    const char *specs[] = {"ape",
                           "none",
                           "rpe:k=2",
                           "rope:pairing=interleaved",
                           "alibi",
                           "t5:buckets=8,max_distance=16",
                           "lsin+lsrpe:k=2",
                           "relative_key",
                           "kerple:kind=power",
                           "rope:scaling=dynamic,factor=2,original=4",
                           "xpos:scale_base=16",
                           "ape+fire",
                           "cope:npos=4",
                           "fox:bias=1",
                           "ape+fox:layers=1",
                           "stickbreaking",
                           "pope",
                           "path:rank=4",
                           "rope:layers=0",
                           "tupe:scale_factor=1,ln=off",
                           "decoupled:dim=4"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_GPT2, specs[i]);
}

/* Llama: RMSNorm, SwiGLU, grouped-query attention (2 heads, 1 kv head),
 * untied lm_head; RoPE as configured and any other PE of the catalogue. */
static void test_llama(void **state)
{
    const char *specs[] = {"rope",
                           "rope:scaling=yarn,factor=4,original=4",
                           "none",
                           "alibi",
                           "ape",
                           "fox",
                           "stickbreaking:current=on",
                           "pope:base=100",
                           "path",
                           "decoupled",
                           "cope:npos=4",
                           "rope:layers=1",
                           "rope:scaling=linear,factor=2,local_base=50,local_layers=1"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_LLAMA, specs[i]);
    check_model_mode(POSEMB_LLAMA, "rope", 1);
    llama_window = 2; /* Mistral's sliding window on layer 1: each query sees itself and one token before */
    check_model(POSEMB_LLAMA, "rope");
    check_model_mode(POSEMB_LLAMA, "alibi", 1);
    llama_window = 0;
}

/* A head_dim that is not hidden / heads (as Mistral-Nemo's): attention is
 * heads x head_dim wide, o_proj maps it back to the hidden width. */
static void test_llama_head_dim(void **state)
{
    (void)state;
    llama_head_dim = D / 2 + 2;
    const char *specs[] = {
        "rope",        "ape+alibi", "lsin+lsrpe:k=2", "fox:bias=1", "rope:scaling=yarn,factor=4,original=4",
        "tupe:cls=on", "decoupled"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_LLAMA, specs[i]);
    llama_biases = 1; /* biases on q, k, v, o and the MLP, with a head_dim of its own */
    check_model(POSEMB_LLAMA, "rope");
    llama_head_dim = llama_biases = 0;
}

/* Qwen3: every query and key head RMS-normalised (q_norm, k_norm) before the PE: the norms'
 * weights and the paths through them, with RoPE, a bias PE and a head_dim of its own. */
/* Gemma 3: RMSNorms times 1 + w (the gradient is w's), the norms after attention and after the
 * MLP, embeddings times sqrt(hidden), GeGLU, q/k norms, q.k times 1/sqrt(query_pre_attn_scalar), layer 0
 * sliding at its own RoPE base; in training mode too. */
static void test_gemma3(void **state)
{
    (void)state;
    llama_gemma = 1;
    llama_window = 2;
    llama_head_dim = D / 2 + 2;
    check_model(POSEMB_LLAMA, "rope:base=1000,scaling=linear,factor=2,local_base=50,local_layers=1");
    check_model_mode(POSEMB_LLAMA, "rope", 1);
    check_model(POSEMB_LLAMA, "alibi");
    llama_gemma = llama_window = llama_head_dim = 0;
}

/* Llama 4 (dense): layer 0 rotates in chunks of 2 tokens with its q and k heads normalised without
 * weight, layer 1 is global with the temperature (or SSMax) on its queries; in training mode too. */
static void test_llama4(void **state)
{
    (void)state;
    llama_llama4 = 1;
    check_model(POSEMB_LLAMA, "rope:pairing=interleaved,layers=0+temperature:attn_scale=0.5,floor_scale=2,layers=1");
    check_model_mode(POSEMB_LLAMA, "rope:pairing=interleaved,layers=0+temperature:floor_scale=1,layers=1", 1);
    check_model(POSEMB_LLAMA, "lrope:layers=0+ssmax:layers=1");
    llama_llama4 = 0;
}

static void test_qwen3(void **state)
{
    (void)state;
    llama_qk_norm = 1;
    const char *specs[] = {"rope", "alibi", "fox"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_LLAMA, specs[i]);
    llama_head_dim = D / 2 + 2;
    check_model(POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=4");
    llama_head_dim = llama_qk_norm = 0;
}

/* GPT-NeoX: LayerNorms with biases, GELU, HF's per-head fused query_key_value
 * (reordered for attention, its gradient reordered back), parallel and serial
 * residuals, with and without attention biases; RoPE on part of each head
 * (Pythia's rotary_pct), whole, scaled, and a PE of another family. */
static void test_neox(void **state)
{
    (void)state;
    const char *specs[] = {"rope:frac=0.5", "rope", "rope:scaling=dynamic,factor=2", "alibi", "ape"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_model(POSEMB_NEOX, specs[i]);
    check_model_mode(POSEMB_NEOX, "rope:frac=0.5", 1);
    neox_serial = 1;
    check_model(POSEMB_NEOX, "rope:frac=0.5");
    check_model_mode(POSEMB_NEOX, "rope", 1);
    neox_no_bias = 1;
    check_model(POSEMB_NEOX, "rope:frac=0.5");
    neox_serial = 0;
    check_model(POSEMB_NEOX, "rope:frac=0.5");
    neox_no_bias = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),
        cmocka_unit_test(test_llama_head_dim),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_llama4),
        cmocka_unit_test(test_neox),
        cmocka_unit_test(test_bert),
        cmocka_unit_test(test_roberta),
        cmocka_unit_test(test_pre_ln),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_dropout_statistics),
        cmocka_unit_test(test_dropout_same_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
