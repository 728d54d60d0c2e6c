/* Training end to end on a tiny fixed batch: a 2-layer model with each PE
 * family (BERT with MLM, GPT-2 with CLM) must drive its loss down by at
 * least 90% with AdamW, which it can only do if every gradient flows. Each
 * MLM sequence has one masked token: with several, a model without
 * positions could not tell them apart (it is permutation-equivariant), so
 * `none` could not fit them, by design. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"

enum { B = 8, T = 12, V = 40, STEPS = 300 };

static double overfit(posemb_arch arch, const char *spec, double *first)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = V;
    c.hidden = 32;
    c.layers = 2;
    c.heads = 4;
    c.intermediate = 64;
    c.max_position = 16;
    c.hidden_dropout = c.attn_dropout = 0.0f;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, arch == POSEMB_GPT2 ? POSEMB_HEAD_CLM : POSEMB_HEAD_MLM, 0, &err) ||
        posemb_model_create(&m, &c, &err))
        fail_msg("%s: %s", spec, err.msg);
    posemb_model_init(m, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 2, 2);
    int32_t ids[B * T], tokens[B * T];
    for (int i = 0; i < B * T; i++) {
        int32_t id = 3 + (int32_t)posemb_rng_below(&rng, V - 3);
        int masked = arch != POSEMB_GPT2 && i % T == 1 + (i / T) % (T - 1); /* one per sequence (id 2 is [MASK]) */
        ids[i] = masked ? 2 : id;
        tokens[i] = arch == POSEMB_GPT2 ? id : masked ? id : -100;
    }
    posemb_batch b = {.B = B, .T = T, .ids = ids};
    posemb_targets t = {.tokens = tokens};
    posemb_adamw o;
    posemb_adamw_config ac = posemb_adamw_defaults(3e-3f, 10, STEPS);
    assert_int_equal(posemb_adamw_init(&o, m, &err), POSEMB_OK);
    posemb_loss l;
    for (int s = 0; s < STEPS; s++) {
        posemb_model_zero_grad(m);
        if (posemb_model_forward(m, &b, &err) || posemb_model_loss(m, &t, 1.0f, &l, &err)) fail_msg("%s", err.msg);
        if (s == 0) *first = l.loss;
        posemb_adamw_step(&o, m, &ac);
    }
    if (posemb_model_forward(m, &b, &err) || posemb_model_loss(m, &t, 0.0f, &l, &err)) fail_msg("%s", err.msg);
    posemb_adamw_free(&o);
    posemb_model_free(m);
    return l.loss;
}

static void check(posemb_arch arch, const char *const *specs, int n)
{
    for (int i = 0; i < n; i++) {
        double first, last = overfit(arch, specs[i], &first);
        printf("%-6s %-30s loss %.6f -> %.6f (%.1f%% lower)\n", arch == POSEMB_GPT2 ? "GPT-2" : "BERT", specs[i], first,
               last, 100 * (1 - last / first));
        if (!(last <= 0.1 * first)) fail_msg("%s did not overfit: %.4f -> %.4f", specs[i], first, last);
    }
}

static void test_bert_mlm(void **state)
{
    const char *specs[] = {"none",        "ape",           "sin",
                           "lsin",        "rpe:k=8",       "srpe:k=8",
                           "lsrpe:k=8",   "relative_key",  "relative_key_query",
                           "rope",        "alibi",         "t5",
                           "ape+rpe:k=8", "lsin+lsrpe:k=8"};
    check(POSEMB_BERT, specs, (int)(sizeof specs / sizeof *specs));
    const char *untied[] = {"tupe", "tupe:cls=on"}; /* TUPE-A without and with its untied [CLS] */
    check(POSEMB_BERT, untied, 2);
}

static void test_gpt2_clm(void **state)
{
    const char *specs[] = {"none", "ape", "sin", "rpe:k=8", "rope", "alibi", "t5", "tupe"};
    check(POSEMB_GPT2, specs, (int)(sizeof specs / sizeof *specs));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bert_mlm), cmocka_unit_test(test_gpt2_clm)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
