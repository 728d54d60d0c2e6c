/* Finite-difference checks of every PE's backward pass, through the real
 * attention kernel: embeddings E -> input hook -> X -> (layer-input hook) and
 * qkv = X W -> attention
 * (q/k, logits, values hooks; padding mask; optional causal mask) -> loss =
 * sum(out * R). Every PE parameter, every element of E and every element of
 * qkv is perturbed.
 *
 * Tolerance: the forward runs in float32 (as in training) and the loss is
 * summed in double. A central difference with step h has rounding noise of
 * about 1e-7 * |out| * sqrt(#out) / h ~ 2e-4 at h = 5e-3 and truncation
 * error h^2 f'''/6 ~ 1e-5 for these O(1) activations, so we require
 * |fd - analytic| <= 3e-3 + 1e-2 |analytic|. Frequencies enter as w * pos,
 * so their step is divided by the largest position (or clip distance) to
 * keep the same truncation error. A wrong factor, a missing term or a
 * wrong index shows as errors of 1e-1 or more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "pe/pe_internal.h"
#include "core/rng_internal.h"

enum { B = 2, T = 6, D = 8, H = 2, LAYERS = 2, MAXLEN = 12, LAYER = 1 };
#define NTOK (B * T)

typedef struct harness {
    posemb_pe *p;
    int causal;
    float dropout; /* on the attention probabilities, with a fixed key */
    float E[NTOK * D], W[D * 3 * D], R[NTOK * D];
    int32_t pos[NTOK];
    int32_t axes[POSEMB_PE_AXES * NTOK]; /* for a PE that reads several axes (M-RoPE) */
    int use_axes;
    float mask[NTOK];
    /* activations and scratch */
    float X[NTOK * D], qkv[NTOK * 3 * D], probs[B * H * T * T], out[NTOK * D];
    float dX[NTOK * D], dqkv[NTOK * 3 * D], dE[NTOK * D];
    float *scratch, *in_scratch, *layer_scratch;
} harness;

static void fill(posemb_rng *r, float *x, int n, float std) { posemb_rng_fill_normal(r, x, n, std); }

static posemb_nn_attn_shape shape_of(const harness *hs)
{
    return (posemb_nn_attn_shape){.B = B,
                                  .T = T,
                                  .D = D,
                                  .H = H,
                                  .causal = hs->causal,
                                  .dropout = hs->dropout,
                                  .key = 12345,
                                  .axes = hs->use_axes ? hs->axes : NULL};
}

static double loss_from_qkv(harness *hs, const float *qkv_in)
{
    posemb_nn_attn_shape sh = shape_of(hs);
    memcpy(hs->qkv, qkv_in, sizeof hs->qkv);
    posemb_nn_attention_forward(&sh, hs->p, LAYER, hs->qkv, hs->pos, hs->mask, hs->probs, hs->out, hs->scratch);
    double loss = 0.0;
    for (int i = 0; i < NTOK * D; i++) loss += (double)hs->out[i] * hs->R[i];
    return loss;
}

/* qkv from E (not rotated yet) into buf. */
static void project(harness *hs, float *buf)
{
    posemb_error err;
    assert_int_equal(posemb_pe_input_forward(hs->p, hs->pos, NTOK, hs->E, hs->X, hs->in_scratch, &err), POSEMB_OK);
    posemb_pe_layer_input_forward(hs->p, LAYER, hs->X, B, T, hs->layer_scratch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, NTOK, 3 * D, D, 1.0f, hs->X, D, hs->W, 3 * D, 0.0f, buf,
                3 * D);
}

static double loss_full(harness *hs)
{
    float qkv0[NTOK * 3 * D];
    posemb_pe_prepare(hs->p);
    project(hs, qkv0);
    return loss_from_qkv(hs, qkv0);
}

/* Analytic gradients of everything: PE params (into the PE), dqkv0, dE. */
static void backward_full(harness *hs, float *dqkv0)
{
    posemb_nn_attn_shape sh = shape_of(hs);
    posemb_pe_zero_grad(hs->p);
    loss_full(hs);
    posemb_nn_attention_backward(&sh, hs->p, LAYER, hs->qkv, hs->pos, hs->probs, hs->R, hs->dqkv, hs->scratch);
    memcpy(dqkv0, hs->dqkv, sizeof hs->dqkv);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, NTOK, D, 3 * D, 1.0f, hs->dqkv, 3 * D, hs->W, 3 * D, 0.0f,
                hs->dX, D);
    posemb_pe_layer_input_backward(hs->p, LAYER, hs->X, B, T, hs->dX, hs->layer_scratch);
    posemb_pe_input_backward(hs->p, hs->pos, NTOK, hs->E, hs->dX, hs->dE, hs->in_scratch);
}

static int check(const char *spec, const char *what, long i, double fd, double an, double *worst)
{
    double e = fabs(fd - an), tol = 3e-3 + 1e-2 * fabs(an);
    if (e / tol > *worst) *worst = e / tol;
    if (e / tol > 0.5 && getenv("GRAD_VERBOSE")) printf("  near: %s[%ld] fd %.6g an %.6g\n", what, i, fd, an);
    if (e <= tol) return 0;
    printf("  %s: %s[%ld] finite difference %.6g, analytic %.6g\n", spec, what, i, fd, an);
    return 1;
}

/* Central difference of loss_full w.r.t. x[i], step h. */
static double central(harness *hs, float *x, long i, float h)
{
    float keep = x[i];
    x[i] = keep + h;
    double up = loss_full(hs);
    x[i] = keep - h;
    double down = loss_full(hs);
    x[i] = keep;
    return (up - down) / ((double)(keep + h) - (double)(keep - h));
}

/* Parameters that multiply a position (frequencies; FIRE's threshold scale,
 * times L0) take a step divided by the largest position. */
static int frequency_param(const char *name)
{
    return strstr(name, "frequencies") != NULL || strstr(name, "threshold_scale") != NULL;
}

static void check_spec_dropout(const char *spec, int causal, float dropout)
{
    harness *hs = calloc(1, sizeof *hs);
    assert_non_null(hs);
    posemb_pe_dims dims = {.dim = D, .n_heads = H, .n_layers = LAYERS, .max_len = MAXLEN, .causal = causal};
    posemb_error err;
    if (posemb_pe_create(&hs->p, spec, &dims, &err)) fail_msg("posemb_pe_create(%s): %s", spec, err.msg);
    assert_int_equal(posemb_pe_alloc(hs->p, &err), POSEMB_OK);
    posemb_rng rng;
    posemb_rng_seed(&rng, 1234, 7);
    posemb_pe_init_params(hs->p, &rng);
    /* Learned tables start near zero; make them O(1) so their terms matter. */
    for (int i = 0; i < posemb_pe_n_params(hs->p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(hs->p, i);
        if (!frequency_param(t->name)) fill(&rng, t->data, (int)t->numel, 0.5f);
        /* SSMax's s is kept >= 0.01 (prepare): start it well inside. */
        for (size_t k = 0; strstr(t->name, "ssmax") && k < t->numel; k++) t->data[k] = 0.3f + fabsf(t->data[k]);
        /* KERPLE's r1, r2 are projected onto [0.01, 2] (prepare): start them
         * inside, so that the differences do not cross the boundary. */
        /* PoPE's delta is clamped to [-2 pi, 0] where it is used: start it inside, away from the edges. */
        for (size_t k = 0; strstr(t->name, "pope.delta") && k < t->numel; k++)
            t->data[k] = -0.2f - fminf(fabsf(t->data[k]), 5.5f);
        for (size_t k = 0; strstr(t->name, "kerple") && k < t->numel; k++)
            t->data[k] = fminf(0.2f + fabsf(t->data[k]), 1.9f);
        /* FIRE's hidden units see x in [0, 1.4] here (an encoder's keys beyond
         * the threshold go past 1): |b1| > 1.5 |w1| + 0.2 keeps each unit on
         * one side of the ReLU's kink for every x and every step. */
        if (!strcmp(t->name, "fire.b1"))
            for (size_t k = 0; k < t->numel; k++) {
                float w1 = posemb_pe_get_param(hs->p, i - 1)->data[k];
                t->data[k] = copysignf(1.5f * fabsf(w1) + 0.2f + fabsf(t->data[k]), t->data[k]);
            }
    }
    hs->causal = causal;
    hs->dropout = dropout;
    fill(&rng, hs->E, NTOK * D, 1.0f);
    fill(&rng, hs->W, D * 3 * D, 0.5f);
    fill(&rng, hs->R, NTOK * D, 1.0f);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            hs->pos[b * T + t] = b * 3 + t; /* the second sequence starts at position 3 */
            hs->mask[b * T + t] = (b == 1 && t == T - 1) ? 0.0f : 1.0f;
            /* M-RoPE: a frame of 2 x 3 patches at time b (height t / 3, width t % 3), shifted per axis */
            hs->axes[b * T + t] = b;
            hs->axes[NTOK + b * T + t] = 1 + t / 3;
            hs->axes[2 * NTOK + b * T + t] = 4 + t % 3;
        }
    hs->use_axes = posemb_pe_n_axes(hs->p) == POSEMB_PE_AXES;
    posemb_nn_attn_shape sh = {.B = B, .T = T, .D = D, .H = H, .causal = causal};
    hs->scratch = calloc(posemb_nn_attention_scratch_floats(&sh, hs->p), sizeof(float));
    hs->in_scratch = calloc(posemb_pe_input_scratch_floats(hs->p, NTOK) + 1, sizeof(float));
    hs->layer_scratch = calloc(posemb_pe_layer_scratch_floats(hs->p, NTOK) + 1, sizeof(float));
    assert_true(hs->scratch && hs->in_scratch && hs->layer_scratch);

    float dqkv0[NTOK * 3 * D];
    backward_full(hs, dqkv0);
    float *grads = calloc(posemb_pe_n_floats(hs->p) + 1, sizeof(float));
    float dE[NTOK * D];
    memcpy(dE, hs->dE, sizeof dE);
    for (int i = 0; i < posemb_pe_n_params(hs->p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(hs->p, i);
        memcpy(grads + t->offset, t->grad, t->numel * sizeof(float));
    }

    int bad = 0, checked = 0;
    double worst = 0.0;
    for (int i = 0; i < posemb_pe_n_params(hs->p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(hs->p, i);
        float h = frequency_param(t->name) ? 5e-3f / MAXLEN : 5e-3f;
        for (size_t k = 0; k < t->numel; k++, checked++)
            bad += check(spec, t->name, (long)k, central(hs, t->data, (long)k, h), grads[t->offset + k], &worst);
    }
    for (int k = 0; k < NTOK * D; k++, checked++)
        bad += check(spec, "E", k, central(hs, hs->E, k, 5e-3f), dE[k], &worst);
    /* q, k, v directly: loss as a function of the projected (unrotated) qkv. */
    float qkv0[NTOK * 3 * D];
    posemb_pe_prepare(hs->p);
    project(hs, qkv0);
    for (int k = 0; k < NTOK * 3 * D; k++, checked++) {
        float keep = qkv0[k];
        qkv0[k] = keep + 5e-3f;
        double up = loss_from_qkv(hs, qkv0);
        qkv0[k] = keep - 5e-3f;
        double down = loss_from_qkv(hs, qkv0);
        qkv0[k] = keep;
        bad += check(spec, "qkv", k, (up - down) / ((double)(keep + 5e-3f) - (double)(keep - 5e-3f)), dqkv0[k], &worst);
    }
    printf("%-44s %s%s %5d values checked, worst error/tolerance %.3f\n", spec, causal ? "causal " : "bidirec",
           dropout > 0 ? " dropout" : "", checked, worst);
    free(grads);
    free(hs->scratch);
    free(hs->in_scratch);
    free(hs->layer_scratch);
    posemb_pe_free(hs->p);
    free(hs);
    if (bad) fail_msg("%s: %d gradient mismatches", spec, bad);
}

static void check_spec(const char *spec, int causal) { check_spec_dropout(spec, causal, 0.0f); }

#define GRAD_TEST(fn, spec, causal)                                                                                    \
    static void fn(void **state)                                                                                       \
    {                                                                                                                  \
        (void)state;                                                                                                   \
        check_spec(spec, causal);                                                                                      \
    }

/* Dropout on the attention probabilities: the values hook and dv see the
 * dropped probabilities, the softmax backward the undropped ones. */
static void t_dropout_rpe(void **state) { check_spec_dropout("rpe:k=3", 0, 0.3f); }
static void t_dropout_alibi_causal(void **state) { check_spec_dropout("ape+alibi", 1, 0.3f); }

GRAD_TEST(t_none, "none", 0)
GRAD_TEST(t_ape, "ape", 0)
GRAD_TEST(t_ape_concat, "ape:integration=concat,width=6", 0)
GRAD_TEST(t_sin, "sin", 0)
GRAD_TEST(t_sin_halves, "sin:layout=halves", 0)
GRAD_TEST(t_lsin, "lsin", 0)
GRAD_TEST(t_lsin_halves_concat, "lsin:layout=halves,integration=concat", 0)
GRAD_TEST(t_lsin_scaled, "lsin:scale=0.125", 0)
GRAD_TEST(t_ape_scaled, "ape:scale=3", 0)
GRAD_TEST(t_ape_rms, "ape:rms=0.05", 0)
GRAD_TEST(t_ape_rms_learned_scale, "ape:rms=0.3,scale=0.5,learned_scale=on", 1)
GRAD_TEST(t_sin_learned_scale, "sin:scale=0.5,learned_scale=on", 0)
GRAD_TEST(t_lsin_learned_scale, "lsin:scale=0.5,learned_scale=on+rpe:k=3", 0)
GRAD_TEST(t_rpe, "rpe:k=3", 0)
GRAD_TEST(t_rpe_novalues, "rpe:k=3,values=off", 0)
GRAD_TEST(t_rpe_wide, "rpe:k=64", 0)
GRAD_TEST(t_srpe, "srpe:k=3", 0)
GRAD_TEST(t_lsrpe, "lsrpe:k=3", 0)
GRAD_TEST(t_lsrpe_novalues, "lsrpe:k=4,values=off", 0)
GRAD_TEST(t_relative_key, "relative_key", 0)
GRAD_TEST(t_relative_key_query, "relative_key_query", 0)
GRAD_TEST(t_rope, "rope", 0)
GRAD_TEST(t_rope_interleaved, "rope:pairing=interleaved,base=500", 0)
GRAD_TEST(t_rope_partial_ntk, "rope:frac=0.5,scaling=linear,factor=2", 0)
/* T = 6 positions past original=4: the per-call frequencies of dynamic and longrope's long factors */
GRAD_TEST(t_rope_yarn, "rope:scaling=yarn,factor=4,original=4", 0)
GRAD_TEST(t_rope_dynamic, "rope:scaling=dynamic,factor=2,original=4", 1)
GRAD_TEST(t_rope_llama3, "rope:scaling=llama3,factor=8,original=4,high_freq_factor=2", 0)
GRAD_TEST(t_rope_longrope, "rope:scaling=longrope,factor=4,original=4,factors=" POSEMB_TESTDATA "/longrope_hd4.json", 1)
GRAD_TEST(t_rope_p, "rope:p=0.5,pairing=interleaved", 0)
GRAD_TEST(t_xpos, "xpos:scale_base=8", 1)
/* layers=: acting in the harness's layer 1, or not (t5's table then gets no gradient) */
GRAD_TEST(t_rpe_layer1, "rpe:k=3,layers=1", 0)
GRAD_TEST(t_t5_layer0, "t5:buckets=8,max_distance=16,layers=0", 1)
GRAD_TEST(t_xpos_yarn_interleaved, "xpos:pairing=interleaved,scale_base=4,scaling=yarn,factor=2,original=4", 1)
GRAD_TEST(t_alibi, "alibi", 0)
GRAD_TEST(t_alibi_causal, "alibi", 1)
GRAD_TEST(t_alibi_mirror, "alibi:sides=mirror", 0)
GRAD_TEST(t_alibi_right, "alibi:right=0.5,scale=2", 0)
GRAD_TEST(t_t5, "t5:buckets=8,max_distance=16", 0)
GRAD_TEST(t_t5_causal, "t5:buckets=8,max_distance=16", 1)
GRAD_TEST(t_kerple_log, "kerple", 0)
GRAD_TEST(t_kerple_log_causal, "kerple:kind=log", 1)
GRAD_TEST(t_kerple_power, "kerple:kind=power", 0)
GRAD_TEST(t_kerple_power_causal, "kerple:kind=power", 1)
GRAD_TEST(t_sandwich, "sandwich", 0)
GRAD_TEST(t_sandwich_causal, "ape+sandwich:dim=6", 1)
/* threshold 4.5: queries at positions 0..4 share the threshold's normaliser, 5..8 their own */
GRAD_TEST(t_fire, "fire:width=8,threshold=4.5,c=0.7", 0)
GRAD_TEST(t_fire_causal, "fire:width=6,threshold=4.5", 1)
GRAD_TEST(t_fire_default, "ape+fire", 1)
GRAD_TEST(t_fire_no_interpolation, "fire:width=6,threshold=4.5,interpolate=off", 1)
/* npos=3: counts of up to 6 gates reach the clamp */
GRAD_TEST(t_cope, "cope:npos=3", 1)
GRAD_TEST(t_cope_wide, "ape+cope:npos=12", 1)
GRAD_TEST(t_fox, "fox", 1)
GRAD_TEST(t_fox_ape, "ape+fox:bias=2", 1)
/* TUPE: the table through its LayerNorm and projections; cls=on resets the
 * first key's column and its query's row (the second sequence's [CLS] sits
 * at position 3); f = 1 has no q/k hook; layers=0 leaves layer 1 to none */
GRAD_TEST(t_tupe, "tupe", 0)
GRAD_TEST(t_tupe_cls_causal, "tupe:cls=on", 1)
GRAD_TEST(t_tupe_cls_per_layer, "tupe:cls=on,share=off", 0)
GRAD_TEST(t_tupe_plain, "tupe:ln=off,scale_factor=1", 0)
GRAD_TEST(t_tupe_layer0, "tupe:share=off,cls=on,layers=0", 1)
GRAD_TEST(t_ape_tupe, "ape+tupe:scale_factor=3,cls=on", 1)
/* learned frequencies: their gradient reads the rotated rows the engine kept */
GRAD_TEST(t_lrope, "lrope", 0)
GRAD_TEST(t_lrope_per_head_causal, "lrope:per_head=on,pairing=interleaved,base=100", 1)
/* scales of q: ssmax's s through ln n (position + 1 in a decoder, the length in an encoder), chained after a
 * rotation (the rotation's backward gets q divided back by the factor); temperature's fixed factor in layer 1 */
GRAD_TEST(t_ssmax, "ssmax", 1)
GRAD_TEST(t_ssmax_encoder, "ssmax:s=0.6", 0)
GRAD_TEST(t_rope_ssmax, "rope+ssmax", 1)
GRAD_TEST(t_lrope_ssmax, "lrope:per_head=on+ssmax", 1)
GRAD_TEST(t_ape_ssmax, "ape+ssmax", 1)
GRAD_TEST(t_lrope_temperature, "lrope+temperature:attn_scale=0.5,floor_scale=2", 1)
GRAD_TEST(t_irope_nope_layer, "rope:layers=0+temperature:attn_scale=0.5,floor_scale=2,layers=1", 1)
/* 2D RoPE over a grid 3 patches wide: axial (fixed), and mixed with its learned frequencies after a class token */
GRAD_TEST(t_rope2d, "rope2d:grid=3", 0)
GRAD_TEST(t_rope2d_mixed, "rope2d:grid=3,mixed=on,cls=on", 1)
/* DroPE's temperature: beta = 1 + 0.5 ln(6 / 2) on every logit of the 6-token sequences */
/* M-RoPE with 3D positions: pair 0 on the height axis, pair 1 on the width axis; interleaved (pair 0 temporal,
 * pair 1 height) with YaRN's attention factor */
GRAD_TEST(t_mrope, "rope:mrope=0|1|1", 1)
GRAD_TEST(t_mrope_interleaved_yarn, "rope:mrope=1|1|0,mrope_interleaved=on,scaling=yarn,factor=2,original=4", 0)
/* DeepSeek's decoupled RoPE: the rotary sub-head's projections from the layer input (its weights, E) and the
 * positions (the second sequence from 3); R = 4 of the head's 4, adjacent pairs, and halves at base 100 in an
 * encoder */
GRAD_TEST(t_decoupled, "decoupled:dim=4", 1)
GRAD_TEST(t_decoupled_encoder, "decoupled:dim=4,base=100,pairing=halves", 0)
GRAD_TEST(t_drope, "drope:c=0.5,original=2", 1)
/* stick-breaking weights in place of the softmax: beta recovered from the weights in the backward; the
 * padded key of the second sequence is masked; layers=1 leaves layer 0 to the softmax */
GRAD_TEST(t_stickbreaking, "stickbreaking", 1)
GRAD_TEST(t_stickbreaking_current, "stickbreaking:current=on", 1)
GRAD_TEST(t_ape_stickbreaking_layer1, "ape+stickbreaking:layers=1", 1)
GRAD_TEST(t_stickbreaking_ssmax, "stickbreaking+ssmax", 1)
static void t_dropout_stickbreaking(void **state) { check_spec_dropout("stickbreaking:current=on", 1, 0.3f); }
/* PoPE: the logits in place of q.k, through softplus, the phases and the phase bias delta */
GRAD_TEST(t_pope, "pope", 0)
GRAD_TEST(t_pope_causal, "pope:base=100", 1)
GRAD_TEST(t_ape_pope_layer1, "ape+pope:layers=1", 1)
/* PaTH: the Householder products between key and query, w and beta from the layer input (the harness's E) */
GRAD_TEST(t_path, "path:rank=3", 1)
/* the blocked form across blocks: 3 blocks of 2 tokens; blocks of 4 and 2 */
GRAD_TEST(t_path_blocks2, "path:rank=3,block=2", 1)
GRAD_TEST(t_path_blocks4, "path:rank=3,block=4", 1)
GRAD_TEST(t_ape_path_layer1, "ape+path:layers=1", 1)
/* STRING: distances from 3 on read as d - 3 + 1 (the second sequence's reach 5) */
GRAD_TEST(t_rope_string, "rope:string=3,string_window=1", 1)
GRAD_TEST(t_rope_string_encoder, "rope:string=2,string_window=0,string_factor=1.3", 0)
GRAD_TEST(t_ape_rpe, "ape+rpe:k=3", 0)
GRAD_TEST(t_lsin_lsrpe, "lsin+lsrpe:k=3", 0)
GRAD_TEST(t_ape_srpe, "ape+srpe:k=2", 0)
GRAD_TEST(t_ape_alibi, "ape+alibi", 1)
GRAD_TEST(t_sin_rope, "sin+rope", 1)
GRAD_TEST(t_lsin_concat_t5, "lsin:integration=concat,width=4+t5:buckets=8,max_distance=16", 0)
GRAD_TEST(t_ape_relative_key_query, "ape+relative_key_query", 0)

int main(void)
{
    /* causal rows in blocks of 4 (T = 6): the blocked products, uneven blocks included */
    posemb_nn_attention_set_block_rows(4);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_none),
        cmocka_unit_test(t_ape),
        cmocka_unit_test(t_ape_concat),
        cmocka_unit_test(t_sin),
        cmocka_unit_test(t_sin_halves),
        cmocka_unit_test(t_lsin),
        cmocka_unit_test(t_lsin_halves_concat),
        cmocka_unit_test(t_lsin_scaled),
        cmocka_unit_test(t_ape_scaled),
        cmocka_unit_test(t_ape_rms),
        cmocka_unit_test(t_ape_rms_learned_scale),
        cmocka_unit_test(t_sin_learned_scale),
        cmocka_unit_test(t_lsin_learned_scale),
        cmocka_unit_test(t_rpe),
        cmocka_unit_test(t_rpe_novalues),
        cmocka_unit_test(t_rpe_wide),
        cmocka_unit_test(t_srpe),
        cmocka_unit_test(t_lsrpe),
        cmocka_unit_test(t_lsrpe_novalues),
        cmocka_unit_test(t_relative_key),
        cmocka_unit_test(t_relative_key_query),
        cmocka_unit_test(t_rope),
        cmocka_unit_test(t_rope_interleaved),
        cmocka_unit_test(t_rope_partial_ntk),
        cmocka_unit_test(t_rope_yarn),
        cmocka_unit_test(t_rope_dynamic),
        cmocka_unit_test(t_rope_llama3),
        cmocka_unit_test(t_rope_longrope),
        cmocka_unit_test(t_rope_p),
        cmocka_unit_test(t_xpos),
        cmocka_unit_test(t_rpe_layer1),
        cmocka_unit_test(t_t5_layer0),
        cmocka_unit_test(t_xpos_yarn_interleaved),
        cmocka_unit_test(t_alibi),
        cmocka_unit_test(t_alibi_causal),
        cmocka_unit_test(t_alibi_mirror),
        cmocka_unit_test(t_alibi_right),
        cmocka_unit_test(t_t5),
        cmocka_unit_test(t_t5_causal),
        cmocka_unit_test(t_kerple_log),
        cmocka_unit_test(t_kerple_log_causal),
        cmocka_unit_test(t_kerple_power),
        cmocka_unit_test(t_kerple_power_causal),
        cmocka_unit_test(t_sandwich),
        cmocka_unit_test(t_sandwich_causal),
        cmocka_unit_test(t_fire),
        cmocka_unit_test(t_fire_causal),
        cmocka_unit_test(t_fire_default),
        cmocka_unit_test(t_fire_no_interpolation),
        cmocka_unit_test(t_cope),
        cmocka_unit_test(t_cope_wide),
        cmocka_unit_test(t_fox),
        cmocka_unit_test(t_fox_ape),
        cmocka_unit_test(t_tupe),
        cmocka_unit_test(t_tupe_cls_causal),
        cmocka_unit_test(t_tupe_cls_per_layer),
        cmocka_unit_test(t_tupe_plain),
        cmocka_unit_test(t_tupe_layer0),
        cmocka_unit_test(t_ape_tupe),
        cmocka_unit_test(t_lrope),
        cmocka_unit_test(t_lrope_per_head_causal),
        cmocka_unit_test(t_ssmax),
        cmocka_unit_test(t_stickbreaking),
        cmocka_unit_test(t_pope),
        cmocka_unit_test(t_path),
        cmocka_unit_test(t_path_blocks2),
        cmocka_unit_test(t_path_blocks4),
        cmocka_unit_test(t_rope_string),
        cmocka_unit_test(t_rope_string_encoder),
        cmocka_unit_test(t_ape_path_layer1),
        cmocka_unit_test(t_pope_causal),
        cmocka_unit_test(t_ape_pope_layer1),
        cmocka_unit_test(t_stickbreaking_current),
        cmocka_unit_test(t_ape_stickbreaking_layer1),
        cmocka_unit_test(t_stickbreaking_ssmax),
        cmocka_unit_test(t_dropout_stickbreaking),
        cmocka_unit_test(t_ssmax_encoder),
        cmocka_unit_test(t_rope_ssmax),
        cmocka_unit_test(t_lrope_ssmax),
        cmocka_unit_test(t_ape_ssmax),
        cmocka_unit_test(t_lrope_temperature),
        cmocka_unit_test(t_drope),
        cmocka_unit_test(t_rope2d),
        cmocka_unit_test(t_rope2d_mixed),
        cmocka_unit_test(t_mrope),
        cmocka_unit_test(t_decoupled),
        cmocka_unit_test(t_decoupled_encoder),
        cmocka_unit_test(t_mrope_interleaved_yarn),
        cmocka_unit_test(t_irope_nope_layer),
        cmocka_unit_test(t_ape_rpe),
        cmocka_unit_test(t_lsin_lsrpe),
        cmocka_unit_test(t_ape_srpe),
        cmocka_unit_test(t_ape_alibi),
        cmocka_unit_test(t_sin_rope),
        cmocka_unit_test(t_lsin_concat_t5),
        cmocka_unit_test(t_ape_relative_key_query),
        cmocka_unit_test(t_dropout_rpe),
        cmocka_unit_test(t_dropout_alibi_causal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
