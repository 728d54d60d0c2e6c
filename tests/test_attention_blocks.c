/* Causal attention by blocks of query rows (attention.c: each block's
 * products stop at the keys its last row sees) against the full T x T
 * products (block rows 0): the same probabilities, outputs, dqkv and PE
 * gradients up to rounding, for every kind of PE hook (q/k, logits, values,
 * scores; weights, which turn the blocks off), with a sliding window, chunks,
 * left padding, dropout and grouped-query attention, at a T that no block
 * size divides. Also the rule for a query with no key to see: probabilities 0
 * and output 0. And, bit for bit, the fused masks and softmax against the
 * two passes they replaced (HF's additive masks, then a softmax over all T
 * keys), and an inference call (probs NULL) against one that keeps them:
 * the row pass (a decoder's PE with no hook past q and k but a logits hook
 * by positions: alibi, kerple, t5, sandwich, fire) in blocks of 7,
 * 16 and 32 rows, windows, chunks, padding and grouped-query attention,
 * and encoders, which keep their one T x T product. test_pe_grad checks the blocked path against finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"
#include "nn/nn_internal.h"
#include "core/vmath.h"
#include <cblas.h>
#include <float.h>

enum { B = 2, T = 45, H = 4, d = 8, D = H * d, LD = 3 * D, PAD = 3 };

typedef struct setting {
    const char *spec;
    int window, chunk, kv;
    float dropout;
} setting;

typedef struct run {
    float probs[B * H * T * T], out[B * T * D], dqkv[B * T * LD];
    float *pe_grads;
    size_t n_pe;
} run;

/* Sequence 1 is left-padded: its first PAD positions are padding. */
static void attend(const setting *c, int block_rows, const float *qkv_in, const float *dout, run *r)
{
    posemb_pe *p = tu_pe(c->spec, D, H, 2, 64, 1);
    tu_pe_scramble(p);
    int kv = c->kv ? c->kv : H, ld = D + 2 * kv * d;
    posemb_nn_attn_shape sh = {.B = B,
                               .T = T,
                               .D = D,
                               .H = H,
                               .KV = c->kv,
                               .causal = 1,
                               .window = c->window,
                               .chunk = c->chunk,
                               .dropout = c->dropout,
                               .key = 99};
    float *qkv = malloc(sizeof(float) * B * T * LD), mask[B * T];
    memcpy(qkv, qkv_in, sizeof(float) * B * T * ld);
    for (int i = 0; i < B * T; i++) mask[i] = i / T == 1 && i % T < PAD ? 0.0f : 1.0f;
    float *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    posemb_pe_zero_grad(p);
    posemb_nn_attention_set_block_rows(block_rows);
    posemb_nn_attention_forward(&sh, p, 1, qkv, NULL, mask, r->probs, r->out, scratch);
    posemb_nn_attention_backward(&sh, p, 1, qkv, NULL, r->probs, dout, r->dqkv, scratch);
    posemb_nn_attention_set_block_rows(32);
    r->n_pe = posemb_pe_n_floats(p);
    r->pe_grads = calloc(r->n_pe + 1, sizeof(float));
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        memcpy(r->pe_grads + t->offset, t->grad, t->numel * sizeof(float));
    }
    free(scratch);
    free(qkv);
    posemb_pe_free(p);
}

/* Blocks change the products' shapes, and OpenBLAS's kernels then add in
 * another order: rounding, not bits. Returns max |a - b| over max |b|. */
static double differ(const float *a, const float *b, size_t n)
{
    double worst = 0, top = 1e-30;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]));
        top = fmax(top, fabs(b[i]));
    }
    return worst / top;
}

/* The padded queries of sequence 1 see no key: every probability and output 0. */
static void check_padded_rows(const run *r)
{
    for (int h = 0; h < H; h++)
        for (int i = 0; i < PAD; i++)
            for (int j = 0; j < T; j++) assert_true(r->probs[(((size_t)1 * H + h) * T + i) * T + j] == 0.0f);
    for (int i = 0; i < PAD; i++)
        for (int x = 0; x < D; x++) assert_true(r->out[((size_t)T + i) * D + x] == 0.0f);
}

static void check(const setting *c)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, 21, 4);
    float *qkv = malloc(sizeof(float) * B * T * LD), *dout = malloc(sizeof(float) * B * T * D);
    posemb_rng_fill_normal(&rng, qkv, B * T * LD, 1.0f);
    posemb_rng_fill_normal(&rng, dout, B * T * D, 1.0f);
    run *full = calloc(1, sizeof *full);
    attend(c, 0, qkv, dout, full);
    check_padded_rows(full);
    int sizes[] = {16, 7, 32};
    for (int s = 0; s < 3; s++) {
        run *blk = calloc(1, sizeof *blk);
        attend(c, sizes[s], qkv, dout, blk);
        double worst = fmax(fmax(differ(blk->probs, full->probs, sizeof full->probs / sizeof(float)),
                                 differ(blk->out, full->out, sizeof full->out / sizeof(float))),
                            fmax(differ(blk->dqkv, full->dqkv, sizeof full->dqkv / sizeof(float)),
                                 differ(blk->pe_grads, full->pe_grads, full->n_pe)));
        printf("%-30.30s window %2d chunk %2d kv %d dropout %.1f, blocks of %2d rows: worst relative difference %.1e\n",
               c->spec, c->window, c->chunk, c->kv ? c->kv : H, c->dropout, sizes[s], worst);
        assert_true(worst < 1e-5);
        free(blk->pe_grads);
        free(blk);
    }
    free(full->pe_grads);
    free(full);
    free(qkv);
    free(dout);
}

static void test_blocks_equal_full(void **state)
{
    (void)state;
    const setting cases[] = {
        {"none", 0, 0, 0, 0.0f},
        {"rope", 0, 0, 0, 0.0f},
        {"rope", 0, 0, 2, 0.0f},
        {"rope", 6, 0, 0, 0.0f},
        {"rope", 0, 8, 0, 0.0f},
        {"rope", 20, 16, 1, 0.0f},
        {"alibi", 0, 0, 0, 0.2f},
        {"t5:buckets=8,max_distance=16", 0, 0, 0, 0.0f},
        {"rpe:k=3", 0, 0, 0, 0.2f},
        {"ape+cope:npos=12", 0, 0, 0, 0.0f},
        {"kerple:kind=log", 0, 0, 0, 0.0f},
        {"fire:width=6,threshold=4.5", 0, 0, 0, 0.0f},
        {"pope:base=100", 0, 0, 0, 0.0f},
        {"rope:string=2,string_window=0,string_factor=1.3", 0, 0, 0, 0.0f},
        {"rope+ssmax", 0, 0, 0, 0.0f},
        {"stickbreaking", 0, 0, 0, 0.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

/* The masks and softmax as they ran before the fused pass (HF's additive
 * masks over the whole row, then a softmax over all T keys) on one head's
 * scores s [T, T]. */
static void reference_softmax(float *s, int causal, int window, int chunk, const float *keymask)
{
    for (int i = 0; i < T; i++) {
        float *si = s + (size_t)i * T, mx = -INFINITY;
        for (int j = 0; j < T; j++) {
            if (causal && (j > i || (window > 0 && j <= i - window) || (chunk > 0 && j < i / chunk * chunk)))
                si[j] = -FLT_MAX;
            if (keymask) si[j] += (1.0f - keymask[j]) * -FLT_MAX;
            mx = si[j] > mx ? si[j] : mx;
        }
        float inv = (float)(1.0 / vm_exp_shift_sum(si, T, mx));
        for (int j = 0; j < T; j++) si[j] *= inv;
    }
}

/* Probabilities of "none" attention (q.k alone) against reference_softmax
 * on the same scores: the same bits in every row with a key to see, zeros in
 * the rest (the left padding of sequence 1 in causal mode). */
static void check_fused_softmax(int causal, int window, int chunk)
{
    posemb_pe *p = tu_pe("none", D, H, 2, 64, causal);
    posemb_nn_attn_shape sh = {.B = B, .T = T, .D = D, .H = H, .causal = causal, .window = window, .chunk = chunk};
    posemb_rng rng;
    posemb_rng_seed(&rng, 8, 1);
    float *qkv = malloc(sizeof(float) * B * T * LD), *probs = malloc(sizeof(float) * B * H * T * T),
          *out = malloc(sizeof(float) * B * T * D), *ref = malloc(sizeof(float) * T * T), mask[B * T];
    posemb_rng_fill_normal(&rng, qkv, B * T * LD, 2.0f);
    for (int i = 0; i < B * T; i++) mask[i] = (i / T == 1 && i % T < PAD) || i % T == T - 2 ? 0.0f : 1.0f;
    float *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    posemb_nn_attention_set_block_rows(0);
    posemb_nn_attention_forward(&sh, p, 1, qkv, NULL, mask, probs, out, scratch);
    posemb_nn_attention_set_block_rows(32);
    /* an inference pass keeps no probabilities (NULL): the same output, bit for bit */
    float *out_kept = malloc(sizeof(float) * B * T * D);
    memcpy(out_kept, out, sizeof(float) * B * T * D);
    posemb_nn_attention_set_block_rows(0);
    posemb_nn_attention_forward(&sh, p, 1, qkv, NULL, mask, NULL, out, scratch);
    posemb_nn_attention_set_block_rows(32);
    assert_memory_equal(out, out_kept, sizeof(float) * B * T * D);
    free(out_kept);
    long same = 0, zero = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * LD + h * d;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, 1.0f / sqrtf((float)d), q, LD, q + D, LD,
                        0.0f, ref, T);
            reference_softmax(ref, causal, window, chunk, mask + b * T);
            const float *got = probs + ((size_t)b * H + h) * T * T;
            for (int i = 0; i < T; i++) {
                int padded_row = causal && b == 1 && i < PAD;
                for (int j = 0; j < T; j++) {
                    float want = padded_row ? 0.0f : ref[(size_t)i * T + j];
                    assert_memory_equal(&got[(size_t)i * T + j], &want, sizeof want);
                }
                same += !padded_row;
                zero += padded_row;
            }
        }
    printf("fused masks and softmax, %s window %2d chunk %2d: %ld rows the same bits as the two passes, %ld "
           "padded rows 0\n",
           causal ? "causal" : "bidirectional", window, chunk, same, zero);
    free(scratch);
    free(qkv);
    free(probs);
    free(out);
    free(ref);
    posemb_pe_free(p);
}

static void test_fused_softmax_bits(void **state)
{
    (void)state;
    check_fused_softmax(0, 0, 0);
    check_fused_softmax(1, 0, 0);
    check_fused_softmax(1, 20, 0);
    check_fused_softmax(1, 0, 16);
    check_fused_softmax(1, 7, 8);
}

/* One forward of spec with block_rows, keeping probabilities (probs) or not (NULL), into out. */
static void forward_once(const setting *c, int causal, int block_rows, const float *qkv_in, const float *mask,
                         float *probs, float *out)
{
    posemb_pe *p = tu_pe(c->spec, D, H, 2, 64, causal);
    tu_pe_scramble(p);
    posemb_nn_attn_shape sh = {
        .B = B, .T = T, .D = D, .H = H, .KV = c->kv, .causal = causal, .window = c->window, .chunk = c->chunk};
    float *qkv = malloc(sizeof(float) * B * T * LD), *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), 4);
    memcpy(qkv, qkv_in, sizeof(float) * B * T * LD);
    posemb_nn_attention_set_block_rows(block_rows);
    posemb_nn_attention_forward(&sh, p, 1, qkv, NULL, mask, probs, out, scratch);
    posemb_nn_attention_set_block_rows(32);
    free(scratch);
    free(qkv);
    posemb_pe_free(p);
}

/* The inference pass (probs NULL) against the pass that keeps the
 * probabilities, at the same block size, bit for bit: a decoder's row pass
 * runs the same products row for row; an encoder takes no row pass (its
 * logits are one T x T product, which blocks of rows would round apart). */
static void check_row_pass(const setting *c, int causal)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 9);
    float *qkv = malloc(sizeof(float) * B * T * LD), *probs = malloc(sizeof(float) * B * H * T * T),
          *kept = malloc(sizeof(float) * B * T * D), *rows = malloc(sizeof(float) * B * T * D), mask[B * T];
    posemb_rng_fill_normal(&rng, qkv, B * T * LD, 1.5f);
    for (int i = 0; i < B * T; i++) /* decoders: left padding; encoders: right padding */
        mask[i] = i / T == 1 && (causal ? i % T < PAD : i % T >= T - PAD) ? 0.0f : 1.0f;
    int sizes[] = {7, 16, 32};
    for (int z = 0; z < 3; z++) {
        forward_once(c, causal, sizes[z], qkv, mask, probs, kept);
        forward_once(c, causal, sizes[z], qkv, mask, NULL, rows);
        printf("inference pass %-12s %s window %2d chunk %2d kv %d, blocks of %2d: %s\n", c->spec,
               causal ? "causal " : "encoder", c->window, c->chunk, c->kv ? c->kv : H, sizes[z],
               memcmp(rows, kept, sizeof(float) * B * T * D) ? "differs" : "same bits");
        assert_memory_equal(rows, kept, sizeof(float) * B * T * D);
    }
    free(qkv);
    free(probs);
    free(kept);
    free(rows);
}

static void test_row_pass(void **state)
{
    (void)state;
    const setting cases[] = {
        {"none", 0, 0, 0, 0.0f},
        {"rope", 0, 0, 0, 0.0f},
        {"rope", 6, 0, 0, 0.0f},
        {"rope", 0, 8, 0, 0.0f},
        {"rope", 20, 16, 2, 0.0f},
        {"rope+ssmax", 0, 0, 0, 0.0f},
        {"ape", 0, 0, 0, 0.0f},
        {"rope:p=0.5", 0, 0, 1, 0.0f},
        {"alibi", 0, 0, 0, 0.0f},
        {"alibi", 9, 0, 2, 0.0f},
        {"kerple", 0, 0, 0, 0.0f},
        {"kerple:kind=power", 0, 8, 0, 0.0f},
        {"t5:buckets=8,max_distance=16", 0, 0, 0, 0.0f},
        {"sandwich", 0, 0, 0, 0.0f},
        {"fire:width=6,threshold=4.5", 0, 0, 0, 0.0f},
        {"fire", 0, 0, 0, 0.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_row_pass(&cases[i], 1);
        if (!cases[i].window && !cases[i].chunk) check_row_pass(&cases[i], 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_blocks_equal_full),
                                       cmocka_unit_test(test_fused_softmax_bits), cmocka_unit_test(test_row_pass)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
