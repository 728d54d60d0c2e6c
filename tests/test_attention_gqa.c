/* Grouped-query attention against multi-head attention with the key/value
 * heads copied to every query head of their group (what GQA means): the
 * same probabilities and outputs, and in the backward pass the same dq, the
 * group's sum of dk and dv, and the same PE gradients, for every kind of PE
 * hook (q/k rotations, logits terms, values terms), with padding, causal
 * masks and dropout. The MHA path is checked against finite differences in
 * test_pe_grad.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "core/rng_internal.h"

enum { B = 2, T = 7, H = 4, KV = 2, d = 4, D = H * d, GRP = H / KV, LDG = D + 2 * KV * d, LDM = 3 * D };

/* row of the MHA layout from a GQA row: head h's k and v are kv head h / GRP's */
static void expand(const float *g, float *m)
{
    for (int t = 0; t < B * T; t++) {
        const float *gr = g + (size_t)t * LDG;
        float *mr = m + (size_t)t * LDM;
        memcpy(mr, gr, D * sizeof(float));
        for (int h = 0; h < H; h++) {
            memcpy(mr + D + h * d, gr + D + (h / GRP) * d, d * sizeof(float));
            memcpy(mr + 2 * D + h * d, gr + D + KV * d + (h / GRP) * d, d * sizeof(float));
        }
    }
}

typedef struct run {
    float probs[B * H * T * T], out[B * T * D], dqkv[B * T * LDM];
    float *pe_grads;
} run;

static void attend(const char *spec, int causal, float dropout, int kv, const float *qkv_in, const float *dout, run *r)
{
    posemb_pe *p = tu_pe(spec, D, H, 2, 16, causal);
    tu_pe_scramble(p);
    int ld = kv == H ? LDM : LDG;
    posemb_nn_attn_shape sh = {
        .B = B, .T = T, .D = D, .H = H, .KV = kv, .causal = causal, .dropout = dropout, .key = 99};
    float qkv[B * T * LDM], mask[B * T];
    memcpy(qkv, qkv_in, sizeof(float) * B * T * ld);
    for (int i = 0; i < B * T; i++) mask[i] = i == B * T - 1 ? 0.0f : 1.0f;
    int32_t pos[B * T];
    for (int i = 0; i < B * T; i++) pos[i] = (i / T) * 3 + i % T;
    float *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    posemb_pe_zero_grad(p);
    posemb_nn_attention_forward(&sh, p, 1, qkv, pos, mask, r->probs, r->out, scratch);
    posemb_nn_attention_backward(&sh, p, 1, qkv, pos, r->probs, dout, r->dqkv, scratch);
    r->pe_grads = calloc(posemb_pe_n_floats(p) + 1, sizeof(float));
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        memcpy(r->pe_grads + t->offset, t->grad, t->numel * sizeof(float));
    }
    free(scratch);
    posemb_pe_free(p);
}

static void check(const char *spec, int causal, float dropout)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, 21, 4);
    float g[B * T * LDG], m[B * T * LDM], dout[B * T * D];
    posemb_rng_fill_normal(&rng, g, B * T * LDG, 1.0f);
    posemb_rng_fill_normal(&rng, dout, B * T * D, 1.0f);
    expand(g, m);
    run *rg = calloc(1, sizeof *rg), *rm = calloc(1, sizeof *rm);
    attend(spec, causal, dropout, KV, g, dout, rg);
    attend(spec, causal, dropout, H, m, dout, rm);
    for (int i = 0; i < B * H * T * T; i++) TU_CLOSE(rg->probs[i], rm->probs[i], 1e-6, 1e-5, spec, i);
    for (int i = 0; i < B * T * D; i++) TU_CLOSE(rg->out[i], rm->out[i], 1e-6, 1e-5, spec, i);
    for (int t = 0; t < B * T; t++) {
        const float *dg = rg->dqkv + (size_t)t * LDG, *dm = rm->dqkv + (size_t)t * LDM;
        for (int i = 0; i < D; i++) TU_CLOSE(dg[i], dm[i], 1e-5, 1e-4, "dq", t * D + i);
        for (int kv = 0; kv < 2; kv++) /* dk, then dv: the group's sum */
            for (int gh = 0; gh < KV; gh++)
                for (int x = 0; x < d; x++) {
                    double sum = 0;
                    for (int h = gh * GRP; h < (gh + 1) * GRP; h++) sum += dm[D + kv * D + h * d + x];
                    TU_CLOSE(dg[D + kv * KV * d + gh * d + x], sum, 1e-5, 1e-4, kv ? "dv" : "dk", t * 100 + gh * d + x);
                }
    }
    posemb_pe *p = tu_pe(spec, D, H, 2, 16, causal);
    for (size_t i = 0; i < posemb_pe_n_floats(p); i++)
        TU_CLOSE(rg->pe_grads[i], rm->pe_grads[i], 1e-5, 1e-4, "PE grad", (long)i);
    printf("%-40s %s%s: GQA (%d kv heads) = MHA with copied k, v\n", spec, causal ? "causal" : "bidirectional",
           dropout > 0 ? ", dropout" : "", KV);
    posemb_pe_free(p);
    free(rg->pe_grads);
    free(rm->pe_grads);
    free(rg);
    free(rm);
}

static void test_gqa_equals_mha(void **state)
{
    check("none", 1, 0.0f);
    check("rope", 1, 0.0f);
    check("rope:scaling=dynamic,factor=2,original=4,pairing=interleaved", 1, 0.0f);
    check("xpos:scale_base=8", 1, 0.0f);
    check("alibi", 0, 0.0f);
    check("t5:buckets=8,max_distance=16", 0, 0.2f);
    check("rpe:k=3", 0, 0.0f);
    check("ape+fire:threshold=4", 1, 0.0f);
    check("cope:npos=4", 1, 0.3f);
}

int main(void)
{
    /* causal rows in blocks of 3 (T = 7): the blocked products, uneven blocks included */
    posemb_nn_attention_set_block_rows(3);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gqa_equals_mha)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
