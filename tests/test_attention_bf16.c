/* The attention's products in bf16 (attention.c, bf16_wins): where a bf16
 * model's attention takes them (no causal mask, head width >= 32, T >= 64,
 * T x width >= 4096), the forward's output, probabilities, the backward's dqkv and the
 * PE's gradients are within bf16's rounding of the fp32 kernel's and not
 * its bits (the bf16 products ran); elsewhere (causal, short, narrow) they
 * are the fp32 kernel's bits. PEs with a q/k hook (rope), a logits hook
 * (alibi, t5), a scores-and-values hook (rpe) and grouped-query attention,
 * with a padded sequence and with dropout on the probabilities. Skipped where bf16 products do not run here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/precision.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"
#include "nn/nn_internal.h"

enum { B = 2, H = 2, PAD = 5 };

typedef struct setting {
    const char *spec;
    int T, d, kv, causal;
    float dropout;
} setting;

typedef struct result {
    float *probs, *out, *dqkv, *pe_grads;
    size_t n_probs, n_out, n_qkv, n_pe;
} result;

/* One forward and backward of layer 1 in mm's precision (NULL: fp32) on
 * the same inputs: qkv and dout uniform in [-2, 2) from seed 11. */
static result attend(posemb_matmul *mm, const setting *c)
{
    int D = H * c->d, kv = c->kv ? c->kv : H, ld = D + 2 * kv * c->d, T = c->T;
    posemb_pe *p = tu_pe(c->spec, D, H, 2, T, c->causal);
    tu_pe_scramble(p);
    posemb_nn_attn_shape sh = {
        .B = B, .T = T, .D = D, .H = H, .KV = c->kv, .causal = c->causal, .dropout = c->dropout, .key = 77};
    result r = {.n_probs = (size_t)B * H * T * T, .n_out = (size_t)B * T * D, .n_qkv = (size_t)B * T * ld};
    float *qkv = malloc(r.n_qkv * sizeof *qkv), *dout = malloc(r.n_out * sizeof *dout), mask[B * 512];
    posemb_rng rng;
    posemb_rng_seed(&rng, 11, 1);
    for (size_t i = 0; i < r.n_qkv; i++) qkv[i] = (float)(4.0 * posemb_rng_uniform(&rng) - 2.0);
    for (size_t i = 0; i < r.n_out; i++) dout[i] = (float)(4.0 * posemb_rng_uniform(&rng) - 2.0);
    for (int i = 0; i < B * T; i++) mask[i] = i / T == 1 && i % T < PAD ? 0.0f : 1.0f;
    r.probs = malloc(r.n_probs * sizeof *r.probs);
    r.out = malloc(r.n_out * sizeof *r.out);
    r.dqkv = malloc(r.n_qkv * sizeof *r.dqkv);
    float *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    posemb_pe_zero_grad(p);
    posemb_nn_attention_forward_in(mm, &sh, p, 1, qkv, NULL, mask, r.probs, r.out, scratch);
    posemb_nn_attention_backward_in(mm, &sh, p, 1, qkv, NULL, r.probs, dout, r.dqkv, scratch);
    r.n_pe = posemb_pe_n_floats(p);
    r.pe_grads = calloc(r.n_pe + 1, sizeof(float));
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        memcpy(r.pe_grads + t->offset, t->grad, t->numel * sizeof(float));
    }
    free(scratch);
    free(qkv);
    free(dout);
    posemb_pe_free(p);
    return r;
}

static void release(result *r)
{
    free(r->probs);
    free(r->out);
    free(r->dqkv);
    free(r->pe_grads);
}

/* max |a - b| / max |b| over n, or 0 when b is all zeros. */
static double rel_err(const float *a, const float *b, size_t n)
{
    double diff = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        top = fmax(top, fabs((double)b[i]));
    }
    return top > 0 ? diff / top : diff;
}

static int bf16_here(void) { return tu_bf16_here("the attention's bf16 products"); }

/* bf16 within tol of fp32, relative to each tensor's largest value, and
 * different from it (the bf16 products ran). */
static void check_close(const setting *c, posemb_matmul *mm, double tol)
{
    result f = attend(NULL, c), g = attend(mm, c);
    double e[4] = {rel_err(g.probs, f.probs, f.n_probs), rel_err(g.out, f.out, f.n_out),
                   rel_err(g.dqkv, f.dqkv, f.n_qkv), rel_err(g.pe_grads, f.pe_grads, f.n_pe)};
    printf("%-6s T %d d %d kv %d dropout %.2f: bf16 against fp32: probs %.2e, out %.2e, dqkv %.2e, PE grads %.2e\n",
           c->spec, c->T, c->d, c->kv, c->dropout, e[0], e[1], e[2], e[3]);
    for (int i = 0; i < 4; i++)
        if (e[i] > tol) fail_msg("%s: tensor %d differs from fp32 by %.3g of its largest value", c->spec, i, e[i]);
    assert_true(memcmp(g.out, f.out, f.n_out * sizeof *f.out) != 0);
    assert_true(memcmp(g.dqkv, f.dqkv, f.n_qkv * sizeof *f.dqkv) != 0);
    release(&f);
    release(&g);
}

static void check_same(const setting *c, posemb_matmul *mm)
{
    result f = attend(NULL, c), g = attend(mm, c);
    assert_memory_equal(g.probs, f.probs, f.n_probs * sizeof *f.probs);
    assert_memory_equal(g.out, f.out, f.n_out * sizeof *f.out);
    assert_memory_equal(g.dqkv, f.dqkv, f.n_qkv * sizeof *f.dqkv);
    assert_memory_equal(g.pe_grads, f.pe_grads, (f.n_pe + 1) * sizeof *f.pe_grads);
    release(&f);
    release(&g);
}

static posemb_matmul *bf16_context(void)
{
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    return mm;
}

/* An encoder's heads at T 64-128, widths 32 and 64: bf16 products,
 * within 2e-2 of the largest value (bf16 keeps 8 bits of mantissa: 4e-3 a
 * rounding, and the logits' products add 32-96 of them). */
static void test_bf16_where_it_wins(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm = bf16_context();
    static const setting cases[] = {
        {"none", 64, 64, 0, 0, 0.0f},   {"rope", 96, 64, 0, 0, 0.0f}, {"alibi", 128, 32, 0, 0, 0.0f},
        {"t5", 64, 64, 0, 0, 0.0f},     {"rpe", 64, 64, 0, 0, 0.0f},  {"none", 64, 64, 1, 0, 0.0f},
        {"alibi", 64, 64, 0, 0, 0.25f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_close(&cases[i], mm, 2e-2);
    posemb_matmul_free(mm);
}

/* Causal heads (fp32 blocks of half the work are about as fast), T < 64,
 * T d < 4096 and d < 32 (the conversions cost more than bf16 saves): the
 * fp32 kernel's bits. */
static void test_fp32_elsewhere(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm = bf16_context();
    static const setting cases[] = {{"none", 64, 64, 0, 1, 0.0f},
                                    {"rope", 96, 64, 1, 1, 0.0f},
                                    {"none", 32, 64, 0, 0, 0.0f},
                                    {"alibi", 64, 32, 0, 0, 0.0f},
                                    {"none", 128, 16, 0, 0, 0.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_same(&cases[i], mm);
    posemb_matmul_free(mm);
}

/* With the rule lifted (bench_attention's EVERY, which measured it), a
 * causal head's whole bf16 products, masked by the softmax, and a short
 * narrow head's are within bf16's rounding of the fp32 blocks too. */
static void test_bf16_everywhere(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm = bf16_context();
    static const setting cases[] = {
        {"rope", 96, 32, 1, 1, 0.0f}, {"alibi", 64, 16, 0, 1, 0.0f}, {"none", 32, 16, 0, 0, 0.0f}};
    posemb_nn_attention_set_bf16_everywhere(1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_close(&cases[i], mm, 2e-2);
    posemb_nn_attention_set_bf16_everywhere(0);
    posemb_matmul_free(mm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_where_it_wins),
        cmocka_unit_test(test_bf16_everywhere),
        cmocka_unit_test(test_fp32_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
