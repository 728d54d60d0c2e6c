/* Randomized positions (random:max=N, Ruoss et al. 2023): the draw is T
 * sorted distinct positions, uniform over the T-subsets of [0, N); the spec
 * is checked; and a model feeds the drawn positions to its PE, a new draw
 * every training step and one fixed draw in evaluation, recovered here from
 * the embedding output of a GPT-2 with a learned APE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/nn.h"
#include "posemb/pe.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "pe/pe_internal.h"

/* Every 4-subset of [0, 9) equally likely: 126 subsets, 50400 draws. */
static void test_draw_uniform(void **state)
{
    enum { N = 9, T = 4, DRAWS = 50400, SUBSETS = 126 };
    posemb_pe *p = tu_pe("ape+random:max=9", 8, 2, 1, 9, 0);
    int counts[1 << N] = {0}, per_pos[N] = {0};
    for (uint64_t key = 0; key < DRAWS; key++) {
        int32_t pos[T];
        posemb_error err;
        assert_int_equal(posemb_pe_draw_positions(p, key, T, pos, &err), POSEMB_OK);
        int mask = 0;
        for (int t = 0; t < T; t++) {
            assert_true(pos[t] >= 0 && pos[t] < N);
            if (t) assert_true(pos[t] > pos[t - 1]); /* sorted and distinct */
            mask |= 1 << pos[t];
            per_pos[pos[t]]++;
        }
        counts[mask]++;
    }
    /* chi-square over the 126 subsets: 125 degrees of freedom, mean 125, sd 15.8 */
    double chi2 = 0, expect = (double)DRAWS / SUBSETS;
    int seen = 0;
    for (int m = 0; m < (1 << N); m++)
        if (counts[m]) {
            seen++;
            chi2 += (counts[m] - expect) * (counts[m] - expect) / expect;
        }
    assert_int_equal(seen, SUBSETS);
    printf("random draws: chi2 %.1f over %d subsets (125 +- 16 expected)\n", chi2, SUBSETS);
    assert_true(chi2 < 125 + 5 * 15.8);
    for (int i = 0; i < N; i++) TU_CLOSE(per_pos[i], (double)DRAWS * T / N, 0, 0.03, "inclusion frequency", i);
    /* a function of the key alone */
    int32_t a[T], b[T];
    posemb_pe_draw_positions(p, 77, T, a, NULL);
    posemb_pe_draw_positions(p, 77, T, b, NULL);
    assert_memory_equal(a, b, sizeof a);
    posemb_pe_free(p);
}

static void test_spec_errors(void **state)
{
    posemb_pe_dims dims = {.dim = 8, .n_heads = 2, .n_layers = 1, .max_len = 16, .causal = 1};
    posemb_pe *p;
    posemb_error err;
    struct {
        const char *spec, *msg;
    } bad[] = {
        {"random:max=64", "combine it with one that reads positions"},
        {"fox+random:max=64", "combine it with one that reads positions"},
        {"ape+random:max=64", "ape takes positions below 16"},
        {"relative_key+random:max=17", "relative_key takes positions below 16"},
        {"rope+random", "random needs max=N"},
        {"rope+random:max=0", "max"},
        {"alibi+random:max=8+random:max=9", "both random and random"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(posemb_pe_create(&p, bad[i].spec, &dims, &err), POSEMB_EINVAL);
        if (!strstr(err.msg, bad[i].msg)) fail_msg("%s: %s", bad[i].spec, err.msg);
    }
    assert_int_equal(posemb_pe_create(&p, "random:max=16+rope", &dims, &err), POSEMB_OK);
    assert_string_equal(posemb_pe_spec(p), "rope:base=10000,pairing=halves,frac=1,scaling=none+random:max=16");
    assert_int_equal(posemb_pe_random_max(p), 16);
    int32_t pos[17];
    assert_int_equal(posemb_pe_draw_positions(p, 1, 17, pos, &err), POSEMB_ERANGE);
    posemb_pe_free(p);
    assert_int_equal(posemb_pe_create(&p, "rope", &dims, &err), POSEMB_OK);
    assert_int_equal(posemb_pe_random_max(p), 0);
    assert_int_equal(posemb_pe_draw_positions(p, 1, 4, pos, &err), POSEMB_EINVAL);
    posemb_pe_free(p);
}

/* The positions a forward pass used, read back from h0 = wte[id] + wpe[pos]. */
static void positions_used(posemb_model *m, int T, int32_t *pos)
{
    const posemb_param *wte = posemb_model_find(m, "wte.weight"), *wpe = posemb_model_find(m, "wpe.weight");
    assert_true(wte && wpe);
    const float *w = posemb_model_weights(m), *e = w + wte->offset, *P = w + wpe->offset;
    int D = posemb_model_config(m)->hidden, rows = (int)(wpe->numel / D);
    const float *h0 = posemb_model_hidden(m, 0);
    for (int t = 0; t < T; t++) {
        pos[t] = -1;
        for (int r = 0; r < rows && pos[t] < 0; r++) {
            int same = 1;
            for (int k = 0; k < D && same; k++) same = fabsf(h0[t * D + k] - (e[3 * D + k] + P[r * D + k])) < 1e-6f;
            if (same) pos[t] = r;
        }
        assert_true(pos[t] >= 0);
    }
}

static void test_model_draws(void **state)
{
    enum { T = 12, MAX = 48 };
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_GPT2);
    c.vocab_size = 50;
    c.hidden = 16;
    c.layers = 1;
    c.heads = 2;
    c.intermediate = 32;
    c.max_position = MAX;
    c.hidden_dropout = c.attn_dropout = 0.0f;
    snprintf(c.pe, sizeof c.pe, "ape+random:max=%d", MAX);
    posemb_model *m;
    posemb_error err;
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s", err.msg);
    posemb_model_init(m, 3);
    int32_t ids[2 * T];
    for (int i = 0; i < 2 * T; i++) ids[i] = 3;
    posemb_batch b = {.B = 2, .T = T, .ids = ids};
    int32_t got[T], want[T], first[T];
    for (uint64_t step = 5; step < 8; step++) {
        posemb_model_set_train(m, 1, 11, step);
        assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
        positions_used(m, T, got);
        posemb_pe_draw_positions(posemb_model_pe(m), posemb_nn_dropout_key(11, step, UINT64_MAX), T, want, NULL);
        assert_memory_equal(got, want, sizeof got);
        if (step == 5) memcpy(first, got, sizeof got);
        else assert_memory_not_equal(got, first, sizeof got); /* a new draw each step */
    }
    /* evaluation: one draw, whatever the step */
    posemb_model_set_train(m, 0, 11, 5);
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
    positions_used(m, T, first);
    posemb_model_set_train(m, 0, 11, 900);
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
    positions_used(m, T, got);
    assert_memory_equal(got, first, sizeof got);
    /* more tokens than distinct positions */
    int32_t many[MAX + 1] = {0};
    posemb_batch big = {.B = 1, .T = MAX + 1, .ids = many};
    assert_int_equal(posemb_model_forward(m, &big, &err), POSEMB_ERANGE);
    posemb_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draw_uniform),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_model_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
