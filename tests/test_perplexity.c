/* Perplexity at a context length (posemb_lm_nll, posemb perplexity).
 * With the word embeddings at zero a tied GPT-2 head gives zero logits:
 * every prediction costs ln V exactly, whatever the windows, so the loss
 * pins the plumbing and the counts pin the windows: n tokens in windows of
 * T non-overlapping score (n / T)(T - 1); moved by a stride s they score
 * T - 1 + (w - 1) s = n - 1 when the windows reach the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/trainer.h"
#include "testutil.h"

enum { V = 50, N = 100 };

/* A small GPT-2 with a causal-LM head, seeded. */
static posemb_model *gpt2(const char *pe, int layers, uint64_t seed)
{
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_GPT2);
    c.vocab_size = V;
    c.hidden = 16;
    c.heads = 2;
    c.layers = layers;
    c.intermediate = 32;
    c.max_position = 64;
    snprintf(c.pe, sizeof c.pe, "%s", pe);
    posemb_model *m;
    posemb_error err;
    if (posemb_config_set_head(&c, POSEMB_HEAD_CLM, 0, &err) || posemb_model_create(&m, &c, &err))
        fail_msg("%s", err.msg);
    posemb_model_init(m, seed);
    return m;
}

/* ... whose word embeddings, hence its tied logits, are zero. */
static posemb_model *flat_gpt2(const char *pe)
{
    posemb_model *m = gpt2(pe, 2, 1);
    const posemb_param *wte = posemb_model_find(m, "wte.weight");
    assert_non_null(wte);
    memset(posemb_model_weights(m) + wte->offset, 0, wte->numel * sizeof(float));
    return m;
}

static void test_uniform(void **state)
{
    (void)state;
    int32_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = (i * 7 + 3) % V;
    const char *pes[] = {"ape", "rope", "alibi"};
    for (int k = 0; k < 3; k++) {
        posemb_model *m = flat_gpt2(pes[k]);
        double nll;
        long count;
        posemb_error err;
        assert_int_equal(posemb_lm_nll(m, tokens, N, 10, 10, 4, &nll, &count, &err), POSEMB_OK);
        assert_int_equal(count, 10 * 9);
        TU_CLOSE(nll / count, log((double)V), 1e-6, 0, pes[k], 0);
        assert_int_equal(posemb_lm_nll(m, tokens, N, 10, 5, 3, &nll, &count, &err), POSEMB_OK);
        assert_int_equal(count, N - 1);
        TU_CLOSE(nll / count, log((double)V), 1e-6, 0, pes[k], 1);
        assert_int_equal(posemb_lm_nll(m, tokens, N, 64, 64, 1, &nll, &count, &err), POSEMB_OK);
        assert_int_equal(count, 63); /* one window; the 36 tokens after it are not scored */
        /* past max_position: refused by the APE's table, run by the PEs without one, as HF runs them */
        posemb_status past = posemb_lm_nll(m, tokens, N, 65, 65, 1, &nll, &count, &err);
        assert_int_equal(past, k ? POSEMB_OK : POSEMB_ERANGE);
        if (k) TU_CLOSE(nll / count, log((double)V), 1e-6, 0, pes[k], 2);
        else assert_non_null(strstr(err.msg, "past ape's table of 64 positions"));
        assert_int_equal(posemb_lm_nll(m, tokens, N, 10, 11, 1, &nll, &count, &err), POSEMB_EINVAL);
        assert_int_equal(posemb_lm_nll(m, tokens, 5, 10, 10, 1, &nll, &count, &err), POSEMB_ERANGE);
        posemb_model_free(m);
    }
}

/* Windows of one batch or of many give the same sum. */
static void test_batches_agree(void **state)
{
    (void)state;
    int32_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = (i * 13 + 1) % V;
    posemb_model *m = gpt2("rope", 1, 5);
    posemb_error err;
    double a, b;
    long ca, cb;
    assert_int_equal(posemb_lm_nll(m, tokens, N, 12, 4, 1, &a, &ca, &err), POSEMB_OK);
    assert_int_equal(posemb_lm_nll(m, tokens, N, 12, 4, 7, &b, &cb, &err), POSEMB_OK);
    assert_int_equal(ca, cb);
    TU_CLOSE(a, b, 1e-9, 1e-5, "one window per batch against seven", 0);
    assert_true(fabs(a / ca - log((double)V)) > 1e-3); /* a real model, not the uniform one */
    posemb_model_free(m);
}

/* The command: a rope model at 2x its training length in full windows, an
 * ape model there in sliding windows of its table's length. */
static void test_cli(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), cmd[4096], out[8192];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\na\\nb\\nc\\nd\\n' > v.txt && "
             "for i in $(seq 300); do printf 'a b c d b a c '; done > c.txt && for pe in rope ape; do '%s' train "
             "--model gpt2 --pe $pe --data c.txt --vocab v.txt --out $pe --layers 1 --hidden 16 --heads 2 "
             "--seq-len 16 --batch-size 8 --steps 30 --lr 3e-3 --threads 1 > /dev/null || exit 1; done && "
             "'%s' perplexity rope --data c.txt --lengths 16,32 --json --threads 1 && "
             "'%s' perplexity ape --data c.txt --lengths 32 --json --threads 1",
             dir, POSEMB_BIN, POSEMB_BIN, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "{\"length\": 16, \"context\": 16, \"stride\": 16, \"windowed\": false"));
    assert_non_null(strstr(out, "{\"length\": 32, \"context\": 32, \"stride\": 32, \"windowed\": false"));
    assert_non_null(strstr(out, "{\"length\": 32, \"context\": 16, \"stride\": 8, \"windowed\": true"));
    double ppl = atof(strstr(strstr(out, "\"length\": 16"), "\"perplexity\": ") + 14);
    assert_true(ppl > 1.0 && ppl < 7.0); /* 30 steps on a 7-token cycle: below the uniform 9 */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' perplexity rope --data c.txt --pe fox", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "the checkpoint has no tensors for"));
    assert_null(strstr(out, "perplexity   ")); /* no table header before the error */
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_batches_agree),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
