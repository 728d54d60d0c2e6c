/* The heads: finite-difference checks of each head's loss with respect to
 * every parameter (the head's and the model's), in training mode so that
 * the classifier's dropout is covered; and closed-form checks of the losses.
 * The losses are means of O(1) terms, so the rounding noise of a central
 * difference with h = 5e-3 is ~2e-5: |fd - analytic| <= 2e-4 + 1e-2 |analytic|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"

enum { B = 3, T = 5, V = 13, D = 8 };

typedef struct harness {
    posemb_model *m;
    int32_t ids[B * T], tokens[B * T], labels[B], starts[B], ends[B];
    float values[B];
    posemb_targets t;
} harness;

static double loss_of(harness *hs, float gs)
{
    posemb_batch b = {.B = B, .T = T, .ids = hs->ids};
    posemb_error err;
    posemb_loss l;
    if (posemb_model_forward(hs->m, &b, &err)) fail_msg("forward: %s", err.msg);
    if (posemb_model_loss(hs->m, &hs->t, gs, &l, &err)) fail_msg("loss: %s", err.msg);
    return l.loss;
}

static int untied; /* 1: GPT-2 with its own lm_head (tie_word_embeddings false) */
static int pre_ln; /* 1: BERT, RoBERTa with pre-LN layers: the heads read the final LayerNorm's output */

static void make(harness *hs, posemb_arch arch, posemb_head head, int labels)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = V;
    c.hidden = D;
    c.layers = 1;
    c.heads = 2;
    c.intermediate = 12;
    c.max_position = 10;
    c.ln_eps = 1e-5f;
    c.hidden_dropout = c.attn_dropout = 0.1f;
    if (arch != POSEMB_GPT2) c.type_vocab = 1;
    if (untied) c.tie_embeddings = 0;
    c.pre_ln = pre_ln;
    posemb_error err;
    if (posemb_config_set_head(&c, head, labels, &err) || posemb_model_create(&hs->m, &c, &err))
        fail_msg("%s", err.msg);
    posemb_model_init(hs->m, 3);
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 5);
    for (int i = 0; i < posemb_model_n_params(hs->m); i++) {
        const posemb_param *p = posemb_model_param(hs->m, i);
        posemb_rng_fill_normal(&rng, posemb_model_weights(hs->m) + p->offset, (long)p->numel, 0.5f);
    }
    posemb_model_set_train(hs->m, 1, 11, 2);
    for (int i = 0; i < B * T; i++) {
        hs->ids[i] = 2 + (int)posemb_rng_below(&rng, V - 2);
        hs->tokens[i] = head == POSEMB_HEAD_CLM ? (i % 4 == 3 ? -100 : hs->ids[i]) : (i % 3 == 1 ? hs->ids[i] : -100);
    }
    for (int b = 0; b < B; b++) {
        hs->labels[b] = b % (labels > 1 ? labels : 2);
        hs->values[b] = 0.5f * b - 0.3f;
        hs->starts[b] = b == 2 ? T : b + 1; /* T: ignored, as HF clamps out-of-range positions */
        hs->ends[b] = b + 2;
    }
    hs->t = (posemb_targets){
        .tokens = hs->tokens, .labels = hs->labels, .values = hs->values, .starts = hs->starts, .ends = hs->ends};
}

static void check_head(posemb_arch arch, posemb_head head, int labels, const char *what)
{
    harness hs;
    make(&hs, arch, head, labels);
    posemb_model_zero_grad(hs.m);
    loss_of(&hs, 1.0f);
    size_t n = posemb_model_n_floats(hs.m);
    float *an = malloc(n * sizeof *an), *w = posemb_model_weights(hs.m);
    memcpy(an, posemb_model_grads(hs.m), n * sizeof *an);
    int bad = 0;
    double worst = 0;
    for (size_t k = 0; k < n; k++) {
        float keep = w[k], h = 5e-3f;
        w[k] = keep + h;
        double up = loss_of(&hs, 0.0f);
        w[k] = keep - h;
        double down = loss_of(&hs, 0.0f);
        w[k] = keep;
        double fd = (up - down) / ((double)(keep + h) - (double)(keep - h)), e = fabs(fd - an[k]);
        double tol = 2e-4 + 1e-2 * fabs(an[k]);
        worst = fmax(worst, e / tol);
        if (e > tol && bad++ < 5)
            printf("  %s: parameter float %zu: finite difference %.6g, analytic %.6g\n", what, k, fd, an[k]);
    }
    printf("%-34s %5zu parameters, worst error/tolerance %.3f\n", what, n, worst);
    free(an);
    posemb_model_free(hs.m);
    if (bad) fail_msg("%s: %d gradient mismatches", what, bad);
}

/* HF's *ForMaskedLM has no pooler: pooled output is NULL there, not a crash. */
static void test_pooler_presence(void **state)
{
    harness hs;
    make(&hs, POSEMB_BERT, POSEMB_HEAD_MLM, 0);
    loss_of(&hs, 0.0f);
    assert_null(posemb_model_pooled(hs.m));
    posemb_model_free(hs.m);
    make(&hs, POSEMB_BERT, POSEMB_HEAD_CLASSIFY, 2);
    loss_of(&hs, 0.0f);
    assert_non_null(posemb_model_pooled(hs.m));
    posemb_model_free(hs.m);
}

static void test_gradients(void **state)
{
    check_head(POSEMB_BERT, POSEMB_HEAD_MLM, 0, "BERT masked LM");
    check_head(POSEMB_ROBERTA, POSEMB_HEAD_MLM, 0, "RoBERTa masked LM");
    check_head(POSEMB_GPT2, POSEMB_HEAD_CLM, 0, "GPT-2 causal LM");
    untied = 1;
    check_head(POSEMB_GPT2, POSEMB_HEAD_CLM, 0, "GPT-2 causal LM, untied lm_head");
    untied = 0;
    check_head(POSEMB_BERT, POSEMB_HEAD_CLASSIFY, 3, "BERT classification (3 labels)");
    check_head(POSEMB_ROBERTA, POSEMB_HEAD_CLASSIFY, 2, "RoBERTa classification");
    check_head(POSEMB_BERT, POSEMB_HEAD_REGRESS, 1, "BERT regression");
    check_head(POSEMB_BERT, POSEMB_HEAD_SPAN, 0, "BERT span");
    check_head(POSEMB_ROBERTA, POSEMB_HEAD_SPAN, 0, "RoBERTa span");
    pre_ln = 1;
    check_head(POSEMB_BERT, POSEMB_HEAD_MLM, 0, "pre-LN BERT masked LM");
    check_head(POSEMB_BERT, POSEMB_HEAD_CLASSIFY, 3, "pre-LN BERT classification (pooler)");
    check_head(POSEMB_ROBERTA, POSEMB_HEAD_CLASSIFY, 2, "pre-LN RoBERTa classification");
    check_head(POSEMB_ROBERTA, POSEMB_HEAD_SPAN, 0, "pre-LN RoBERTa span");
    pre_ln = 0;
}

/* With every weight zero, logits are uniform: the LM loss is log V and the
 * classification loss log C, whatever the targets. */
static void test_uniform_losses(void **state)
{
    struct {
        posemb_arch arch;
        posemb_head head;
        int labels;
        double want;
    } cases[] = {
        {POSEMB_BERT, POSEMB_HEAD_MLM, 0, log(V)},
        {POSEMB_GPT2, POSEMB_HEAD_CLM, 0, log(V)},
        {POSEMB_BERT, POSEMB_HEAD_CLASSIFY, 4, log(4)},
        {POSEMB_BERT, POSEMB_HEAD_SPAN, 0, log(T)},
    };
    for (int i = 0; i < 4; i++) {
        harness hs;
        make(&hs, cases[i].arch, cases[i].head, cases[i].labels);
        memset(posemb_model_weights(hs.m), 0, posemb_model_n_floats(hs.m) * sizeof(float));
        posemb_model_set_train(hs.m, 0, 0, 0);
        TU_CLOSE(loss_of(&hs, 0.0f), cases[i].want, 1e-6, 1e-6, "uniform loss", i);
        posemb_model_free(hs.m);
    }
}

/* An inference pass gives the hidden states and losses of an ordinary one,
 * bit for bit, with three layers run in one layer's buffers; attention
 * probabilities and gradients are refused until an ordinary pass. */
static void check_inference(posemb_arch arch, posemb_head head)
{
    harness hs;
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = V;
    c.hidden = D;
    c.layers = 3;
    c.heads = 2;
    c.intermediate = 12;
    c.max_position = 10;
    if (arch != POSEMB_GPT2) c.type_vocab = 1;
    posemb_error err;
    if (posemb_config_set_head(&c, head, 0, &err) || posemb_model_create(&hs.m, &c, &err)) fail_msg("%s", err.msg);
    posemb_model_init(hs.m, 4);
    for (int i = 0; i < B * T; i++) {
        hs.ids[i] = 2 + (i * 7) % (V - 2);
        hs.tokens[i] = i % 2 ? hs.ids[i] : -100;
    }
    hs.t = (posemb_targets){.tokens = hs.tokens};
    double loss = loss_of(&hs, 0.0f);
    float keep[4][B * T * D];
    for (int l = 0; l <= 3; l++) memcpy(keep[l], posemb_model_hidden(hs.m, l), sizeof keep[l]);
    assert_non_null(posemb_model_attention(hs.m, 2));
    posemb_model_set_inference(hs.m, 1);
    assert_true(loss_of(&hs, 0.0f) == loss);
    for (int l = 0; l <= 3; l++) assert_memory_equal(keep[l], posemb_model_hidden(hs.m, l), sizeof keep[l]);
    assert_null(posemb_model_attention(hs.m, 1));
    posemb_loss out;
    assert_int_not_equal(posemb_model_loss(hs.m, &hs.t, 1.0f, &out, &err), POSEMB_OK);
    assert_non_null(strstr(err.msg, "inference pass"));
    posemb_model_set_inference(hs.m, 0);
    assert_true(loss_of(&hs, 1.0f) == loss);
    assert_non_null(posemb_model_attention(hs.m, 1));
    posemb_model_free(hs.m);
}

static void test_inference(void **state)
{
    check_inference(POSEMB_BERT, POSEMB_HEAD_MLM);
    check_inference(POSEMB_GPT2, POSEMB_HEAD_CLM);
}

/* Before a forward pass, and after one that failed, the model has no last
 * batch: the accessors answer NULL and the head refuses, instead of reading
 * freed or stale buffers. Index arguments are range-checked. */
static void test_no_batch(void **state)
{
    harness hs;
    make(&hs, POSEMB_BERT, POSEMB_HEAD_CLASSIFY, 3);
    posemb_error err;
    posemb_loss l;
    assert_null(posemb_model_hidden(hs.m, 0));
    assert_null(posemb_model_attention(hs.m, 0));
    assert_null(posemb_model_param(hs.m, -1));
    assert_null(posemb_model_param(hs.m, posemb_model_n_params(hs.m)));
    assert_int_equal(posemb_model_loss(hs.m, &hs.t, 1.0f, &l, &err), POSEMB_EINVAL);
    loss_of(&hs, 0.0f); /* a good batch */
    assert_non_null(posemb_model_hidden(hs.m, 1));
    assert_null(posemb_model_hidden(hs.m, 2));
    hs.ids[4] = V; /* outside the vocabulary */
    posemb_batch b = {.B = B, .T = T, .ids = hs.ids};
    assert_int_equal(posemb_model_forward(hs.m, &b, &err), POSEMB_ERANGE);
    assert_null(posemb_model_hidden(hs.m, 0));
    assert_null(posemb_model_head_logits(hs.m, &err));
    assert_int_equal(posemb_model_loss(hs.m, &hs.t, 1.0f, &l, &err), POSEMB_EINVAL);
    posemb_model_free(hs.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients), cmocka_unit_test(test_pooler_presence), cmocka_unit_test(test_uniform_losses),
        cmocka_unit_test(test_inference), cmocka_unit_test(test_no_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
