/* Closed-form properties of the PE library: formulas, invariances and the
 * reference values of ALiBi and T5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "pe/pe_internal.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"

static posemb_pe *make(const char *spec, int D, int H, int layers, int max_len, int causal)
{
    return tu_pe(spec, D, H, layers, max_len, causal);
}

static const posemb_pe_named_matrix *export_item(posemb_pe *p, int n, posemb_arena *a, posemb_pe_export *ex,
                                                 const char *name)
{
    posemb_error err;
    if (posemb_pe_export_matrices(p, n, a, ex, &err)) fail_msg("export: %s", err.msg);
    for (int i = 0; i < ex->n; i++)
        if (!strcmp(ex->items[i].name, name)) return &ex->items[i];
    fail_msg("no exported matrix '%s'", name);
    return NULL;
}

/* sin rows equal sin(w_k x), cos(w_k x) with w_k = 10000^(-2k/D), both layouts. */
static void test_sin_formula(void **state)
{
    const int D = 16, n = 300;
    const char *specs[] = {"sin", "sin:layout=halves", "lsin", "sin:scale=0.125"};
    for (int s = 0; s < 4; s++) {
        posemb_pe *p = make(specs[s], D, 2, 1, 100, 0); /* n > max_len: rows past the cache too */
        posemb_arena a;
        posemb_arena_init(&a, 0);
        posemb_pe_export ex;
        const posemb_pe_named_matrix *m = export_item(p, n, &a, &ex, "ape");
        int halves = s == 1;
        for (int x = 0; x < n; x++)
            for (int k = 0; k < D / 2; k++) {
                double w = pow(10000.0, -2.0 * k / D);
                int cs = halves ? k : 2 * k, cc = halves ? D / 2 + k : 2 * k + 1;
                TU_CLOSE(m->data[x * D + cs], sin(w * x), 1e-6, 0, specs[s], x * D + cs);
                TU_CLOSE(m->data[x * D + cc], cos(w * x), 1e-6, 0, specs[s], x * D + cc);
            }
        /* The input hook adds exactly these rows, times scale (the export is the unscaled sinusoid). */
        float scale = s == 3 ? 0.125f : 1.0f;
        int32_t pos[3] = {0, 57, 250};
        float x0[3 * 16] = {0}, y[3 * 16], scratch[3 * 16 * 3];
        posemb_error err;
        assert_int_equal(posemb_pe_input_forward(p, pos, 3, x0, y, scratch, &err), POSEMB_OK);
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < D; c++)
                TU_CLOSE(y[t * D + c], scale * m->data[pos[t] * D + c], 1e-7, 0, "hook row", t * D + c);
        posemb_arena_free(&a);
        posemb_pe_free(p);
    }
}

/* Attention probabilities and outputs for positions 0..T-1 and shift..shift+T-1. */
static void attend(posemb_pe *p, int causal, const float *qkv_in, int shift, float *probs, float *out)
{
    enum { T = 9, D = 8, H = 2 };
    posemb_nn_attn_shape sh = {.B = 1, .T = T, .D = D, .H = H, .causal = causal};
    float qkv[T * 3 * D];
    int32_t pos[T];
    for (int t = 0; t < T; t++) pos[t] = shift + t;
    memcpy(qkv, qkv_in, sizeof qkv);
    posemb_nn_attention_forward(&sh, p, 0, qkv, pos, NULL, probs, out, NULL);
}

/* Relative PEs and biases: logits depend on j - i only, so shifting every
 * position changes nothing (in both the bidirectional and causal modes). */
static void test_shift_invariance(void **state)
{
    enum { T = 9, D = 8, H = 2 };
    const char *specs[] = {"rpe:k=3",
                           "rpe:k=16",
                           "srpe:k=4",
                           "lsrpe:k=4",
                           "relative_key",
                           "relative_key_query",
                           "rope",
                           "rope:pairing=interleaved,frac=0.5",
                           "alibi",
                           "alibi:sides=mirror",
                           "alibi:right=0.5",
                           "t5:buckets=8,max_distance=16",
                           "rope:scaling=yarn,factor=4,original=16",
                           "rope:scaling=llama3,factor=4,original=16",
                           "rope:p=0.5",
                           "kerple",
                           "kerple:kind=power",
                           "sandwich",
                           "fire"}; /* positions below its threshold (512) */
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 5);
    float qkv[T * 3 * D];
    posemb_rng_fill_normal(&rng, qkv, T * 3 * D, 1.0f);
    for (int causal = 0; causal < 2; causal++)
        for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
            posemb_pe *p = make(specs[s], D, H, 1, 40, causal);
            float p0[H * T * T], p1[H * T * T], o0[T * D], o1[T * D];
            attend(p, causal, qkv, 0, p0, o0);
            attend(p, causal, qkv, 23, p1, o1);
            for (int i = 0; i < H * T * T; i++) TU_CLOSE(p1[i], p0[i], 2e-6, 1e-5, specs[s], i);
            for (int i = 0; i < T * D; i++) TU_CLOSE(o1[i], o0[i], 2e-6, 1e-5, specs[s], i);
            posemb_pe_free(p);
        }
}

/* layers=LIST: in a layer not listed the PE does nothing (the output is
 * none's); in a listed one it is the plain PE's. */
static void test_layers(void **state)
{
    enum { T = 9, D = 8, H = 2 };
    const char *pairs[][2] = {
        {"alibi", "alibi:layers=1"}, {"rope", "rope:layers=1|3"}, {"rpe:k=3", "rpe:k=3,layers=1-2"}};
    posemb_rng rng;
    posemb_rng_seed(&rng, 8, 8);
    float qkv_in[T * 3 * D];
    posemb_rng_fill_normal(&rng, qkv_in, T * 3 * D, 1.0f);
    posemb_nn_attn_shape sh = {.B = 1, .T = T, .D = D, .H = H, .causal = 1};
    posemb_pe *none = tu_pe("none", D, H, 4, 16, 1);
    for (size_t c = 0; c < sizeof pairs / sizeof *pairs; c++) {
        posemb_pe *full = tu_pe(pairs[c][0], D, H, 4, 16, 1), *some = tu_pe(pairs[c][1], D, H, 4, 16, 1);
        /* layers= changes no parameter: tu_pe's fixed seed gives both the same tables */
        for (int layer = 0; layer < 4; layer++) {
            int on = strstr(pairs[c][1], "1|3")   ? layer == 1 || layer == 3
                     : strstr(pairs[c][1], "1-2") ? layer == 1 || layer == 2
                                                  : layer == 1;
            float qa[T * 3 * D], qb[T * 3 * D], pa[H * T * T], pb[H * T * T], oa[T * D], ob[T * D];
            memcpy(qa, qkv_in, sizeof qa);
            memcpy(qb, qkv_in, sizeof qb);
            posemb_nn_attention_forward(&sh, on ? full : none, layer, qa, NULL, NULL, pa, oa, NULL);
            posemb_nn_attention_forward(&sh, some, layer, qb, NULL, NULL, pb, ob, NULL);
            for (int i = 0; i < T * D; i++) TU_CLOSE(ob[i], oa[i], 0, 0, pairs[c][1], layer * 1000 + i);
        }
        posemb_pe_free(full);
        posemb_pe_free(some);
    }
    posemb_pe_free(none);
}

/* Without a PE, permuting the tokens permutes the outputs (bag of words). */
static void test_none_permutation_equivariant(void **state)
{
    enum { T = 7, D = 8, H = 2 };
    const int perm[T] = {3, 0, 6, 1, 5, 2, 4};
    posemb_rng rng;
    posemb_rng_seed(&rng, 11, 2);
    float qkv[T * 3 * D], qkvp[T * 3 * D], pr[H * T * T], out[T * D], outp[T * D];
    posemb_rng_fill_normal(&rng, qkv, T * 3 * D, 1.0f);
    for (int t = 0; t < T; t++) memcpy(qkvp + t * 3 * D, qkv + perm[t] * 3 * D, 3 * D * sizeof(float));
    posemb_nn_attn_shape sh = {.B = 1, .T = T, .D = D, .H = H};
    posemb_pe *p = make("none", D, H, 1, 16, 0);
    posemb_nn_attention_forward(&sh, p, 0, qkv, NULL, NULL, pr, out, NULL);
    posemb_nn_attention_forward(&sh, p, 0, qkvp, NULL, NULL, pr, outp, NULL);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++) TU_CLOSE(outp[t * D + c], out[perm[t] * D + c], 1e-6, 1e-5, "none", t * D + c);
    posemb_pe_free(p);
    /* Control: a relative PE breaks the symmetry. */
    p = make("alibi", D, H, 1, 16, 0);
    memcpy(qkvp, qkv, sizeof qkv);
    for (int t = 0; t < T; t++) memcpy(qkvp + t * 3 * D, qkv + perm[t] * 3 * D, 3 * D * sizeof(float));
    float qkv2[T * 3 * D];
    posemb_rng_seed(&rng, 11, 2);
    posemb_rng_fill_normal(&rng, qkv2, T * 3 * D, 1.0f);
    posemb_nn_attention_forward(&sh, p, 0, qkv2, NULL, NULL, pr, out, NULL);
    posemb_nn_attention_forward(&sh, p, 0, qkvp, NULL, NULL, pr, outp, NULL);
    double diff = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++) diff += fabs(outp[t * D + c] - out[perm[t] * D + c]);
    assert_true(diff > 1e-2);
    posemb_pe_free(p);
}

static void test_alibi_slopes(void **state)
{
    float s[12];
    posemb_pe_alibi_slopes(8, s);
    for (int h = 0; h < 8; h++) TU_CLOSE(s[h], pow(2.0, -(h + 1)), 0, 1e-6, "H=8", h);
    /* BLOOM rule for 12 heads: the 8 slopes of H=8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5. */
    posemb_pe_alibi_slopes(12, s);
    const double want12[12] = {0.5,
                               0.25,
                               0.125,
                               0.0625,
                               0.03125,
                               0.015625,
                               0.0078125,
                               0.00390625,
                               0.7071067811865476,
                               0.35355339059327373,
                               0.17677669529663687,
                               0.08838834764831843};
    for (int h = 0; h < 12; h++) TU_CLOSE(s[h], want12[h], 0, 1e-6, "H=12", h);
    /* H=6: 2^-2, 2^-4, 2^-6, 2^-8 then 2^-1, 2^-3. */
    posemb_pe_alibi_slopes(6, s);
    const double want6[6] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    for (int h = 0; h < 6; h++) TU_CLOSE(s[h], want6[h], 0, 1e-6, "H=6", h);
    /* The hook adds -m_h |i - j|. */
    posemb_pe *p = make("alibi", 16, 8, 1, 32, 0);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    const posemb_pe_named_matrix *b = export_item(p, 10, &a, &ex, "bias.head2");
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 10; j++) TU_CLOSE(b->data[i * 10 + j], -0.125 * abs(i - j), 0, 1e-6, "bias", i * 10 + j);
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* Keys left of the query keep head h's slope 2^-(h+1) (H = 8); keys right
 * take head H+1-h's, 2^-(8-h), under sides=mirror, and R 2^-(h+1) under
 * right=R; scale=S multiplies both. Without scale a decoder, which sees no
 * key on the right, attends exactly as with plain alibi. */
static void test_alibi_sided(void **state)
{
    enum { T = 9, D = 8, H = 2 };
    const char *specs[] = {"alibi:sides=mirror", "alibi:right=0.5", "alibi:sides=mirror,right=4", "alibi:scale=2",
                           "alibi:scale=2,right=0.5"};
    const double factor[] = {1, 0.5, 4, 1, 0.5}, scale[] = {1, 1, 1, 2, 2};
    const int mirror[] = {1, 0, 1, 0, 0};
    for (int v = 0; v < 5; v++) {
        posemb_pe *p = make(specs[v], 16, 8, 1, 32, 0);
        posemb_arena a;
        posemb_arena_init(&a, 0);
        posemb_pe_export ex;
        const posemb_pe_named_matrix *r =
            factor[v] != 1 || mirror[v] ? export_item(p, 10, &a, &ex, "slopes_right") : NULL;
        for (int h = 0; h < 8; h++) {
            double left = scale[v] * pow(2.0, -(h + 1)),
                   right = factor[v] * scale[v] * pow(2.0, mirror[v] ? -(8 - h) : -(h + 1));
            if (r) TU_CLOSE(r->data[h], right, 0, 1e-7, specs[v], h);
            char name[32];
            snprintf(name, sizeof name, "bias.head%d", h);
            const posemb_pe_named_matrix *b = export_item(p, 10, &a, &ex, name);
            for (int i = 0; i < 10; i++)
                for (int j = 0; j < 10; j++) {
                    double want = j > i ? -right * (j - i) : -left * (i - j);
                    TU_CLOSE(b->data[i * 10 + j], want, 0, 1e-6, specs[v], i * 10 + j);
                }
        }
        posemb_arena_free(&a);
        posemb_pe_free(p);

        posemb_rng rng;
        posemb_rng_seed(&rng, 7, 7);
        float qkv[T * 3 * D], pm[H * T * T], pa[H * T * T], om[T * D], oa[T * D];
        posemb_rng_fill_normal(&rng, qkv, T * 3 * D, 1.0f);
        for (int causal = 0; causal < 2; causal++) {
            posemb_pe *m = make(specs[v], D, H, 1, 40, causal), *plain = make("alibi", D, H, 1, 40, causal);
            attend(m, causal, qkv, 0, pm, om);
            attend(plain, causal, qkv, 0, pa, oa);
            int differ = 0;
            for (int i = 0; i < H * T * T; i++) differ += pm[i] != pa[i];
            if (causal && scale[v] == 1) assert_int_equal(differ, 0); /* bit for bit */
            else assert_true(differ > 0);
            posemb_pe_free(m);
            posemb_pe_free(plain);
        }
    }
}

/* Buckets of r = j - i for r in -300..300 (32 buckets, max distance 128), as
 * HF transformers' T5Attention._relative_position_bucket computes them in
 * torch 1.13 float32: runs of (first r, bucket). */
static const int T5_BI[][2] = {{-300, 15}, {-90, 14}, {-63, 13}, {-45, 12}, {-31, 11}, {-22, 10}, {-15, 9}, {-11, 8},
                               {-7, 7},    {-6, 6},   {-5, 5},   {-4, 4},   {-3, 3},   {-2, 2},   {-1, 1},  {0, 0},
                               {1, 17},    {2, 18},   {3, 19},   {4, 20},   {5, 21},   {6, 22},   {7, 23},  {8, 24},
                               {12, 25},   {16, 26},  {23, 27},  {32, 28},  {46, 29},  {64, 30},  {91, 31}};
static const int T5_UNI[][2] = {{-300, 31}, {-112, 30}, {-98, 29}, {-86, 28}, {-76, 27}, {-66, 26}, {-58, 25},
                                {-51, 24},  {-45, 23},  {-39, 22}, {-34, 21}, {-30, 20}, {-26, 19}, {-23, 18},
                                {-20, 17},  {-18, 16},  {-15, 15}, {-14, 14}, {-13, 13}, {-12, 12}, {-11, 11},
                                {-10, 10},  {-9, 9},    {-8, 8},   {-7, 7},   {-6, 6},   {-5, 5},   {-4, 4},
                                {-3, 3},    {-2, 2},    {-1, 1},   {0, 0}};

static int expected_bucket(const int (*runs)[2], int nruns, int r)
{
    int b = runs[0][1];
    for (int i = 0; i < nruns && runs[i][0] <= r; i++) b = runs[i][1];
    return b;
}

static void test_t5_buckets(void **state)
{
    for (int r = -300; r <= 300; r++) {
        assert_int_equal(posemb_pe_t5_bucket(r, 32, 128, 1), expected_bucket(T5_BI, 31, r));
        assert_int_equal(posemb_pe_t5_bucket(r, 32, 128, 0), expected_bucket(T5_UNI, 32, r));
    }
    /* The hook reads bias[bucket(j - i)][head], also beyond max_distance. */
    posemb_pe *p = make("t5", 8, 2, 1, 400, 0);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    const posemb_pe_named_matrix *bk = export_item(p, 301, &a, &ex, "buckets");
    for (int i = 0; i < 301; i += 7)
        for (int j = 0; j < 301; j++) assert_int_equal((int)bk->data[i * 301 + j], expected_bucket(T5_BI, 31, j - i));
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* Closed-form RoPE: q.k after rotation is sum over pairs of the rotated
 * 2-D dot products, which for unit pairs is cos(theta_m (j - i)). */
static void test_rope_kernel(void **state)
{
    enum { d = 8 };
    posemb_pe *p = make("rope:base=100", d, 1, 1, 64, 0);
    float q[d], k[d];
    int32_t qp[1] = {5}, kp[1] = {12};
    for (int c = 0; c < d; c++) q[c] = k[c] = 0;
    for (int m = 0; m < d / 2; m++) q[m] = k[m] = 1.0f; /* halves pairing: (m, m + d/2) = (1, 0) */
    posemb_pe_head h = {.nq = 1, .nk = 1, .d = d, .scale = 1.0f, .qpos = qp, .kpos = kp};
    posemb_pe_qk_forward(p, &h, q, d, k, d);
    double dot = 0, want = 0;
    for (int c = 0; c < d; c++) dot += q[c] * k[c];
    for (int m = 0; m < d / 2; m++) want += cos(pow(100.0, -2.0 * m / d) * (12 - 5));
    TU_CLOSE(dot, want, 1e-6, 1e-6, "rope q.k", 0);
    posemb_pe_free(p);
}

/* At BERT-base size (512 positions, width 768) the fixed sinusoids are the
 * closed form to float rounding: |error| <= 2^-24 of a value in [-1, 1]
 * (6e-8), bound 1e-7. With float frequencies the angle at x = 511 was off by
 * up to 511 * 2^-24 rad and the tables by 1.5e-5. */
#define ROUNDING 1e-7
static void test_fixed_sinusoids_exact(void **state)
{
    enum { D = 768, N = 512 };
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_pe *p = make("sin", D, 12, 1, N, 0);
    const posemb_pe_named_matrix *m = export_item(p, N, &a, &ex, "ape");
    for (int x = 0; x < N; x++)
        for (int k = 0; k < D / 2; k++) {
            double w = pow(10000.0, -2.0 * k / D);
            TU_CLOSE(m->data[x * D + 2 * k], sin(w * x), ROUNDING, 0, "sin", x * D + 2 * k);
            TU_CLOSE(m->data[x * D + 2 * k + 1], cos(w * x), ROUNDING, 0, "cos", x * D + 2 * k + 1);
        }
    posemb_pe_free(p);
    /* srpe over distances -511..511 with one head of width 768. */
    p = make("srpe:k=511", D, 1, 1, N, 0);
    m = export_item(p, N, &a, &ex, "rel");
    for (int r = -511; r <= 511; r++)
        for (int k = 0; k < D / 2; k++) {
            double w = pow(10000.0, -2.0 * k / D);
            long i = (long)(r + 511) * D + 2 * k;
            TU_CLOSE(m->data[i], sin(w * r), ROUNDING, 0, "srpe sin", i);
            TU_CLOSE(m->data[i + 1], cos(w * r), ROUNDING, 0, "srpe cos", i + 1);
        }
    posemb_pe_free(p);
    /* rope: the rotation of a unit pair at position 511 is (cos, sin) of the angle. */
    p = make("rope", D, 1, 1, N, 0);
    static float q[D], k[D];
    int32_t qp[1] = {511}, kp[1] = {0};
    for (int c = 0; c < D / 2; c++) q[c] = k[c] = 1.0f;
    posemb_pe_head h = {.nq = 1, .nk = 1, .d = D, .scale = 1.0f, .qpos = qp, .kpos = kp};
    posemb_pe_qk_forward(p, &h, q, D, k, D);
    for (int c = 0; c < D / 2; c++) {
        double angle = pow(10000.0, -2.0 * c / D) * 511;
        TU_CLOSE(q[c], cos(angle), ROUNDING, 0, "rope cos", c);
        TU_CLOSE(q[c + D / 2], sin(angle), ROUNDING, 0, "rope sin", c);
    }
    posemb_pe_free(p);
    posemb_arena_free(&a);
}

/* TUPE's term from its tensors, in double: e_x = LN(p_x) (eps 1e-5),
 * v = (e_x U^Q_h).(e_y U^K_h) / sqrt(2d), U [H d, D] split by rows as W^Q. */
static double tupe_term(posemb_pe *p, int layer, int h, int x, int y)
{
    enum { D = 8, d = 4 };
    const posemb_pe_param *t = posemb_pe_find_param(p, "tupe.pos.weight", 0),
                          *g = posemb_pe_find_param(p, "tupe.pos_ln.weight", 0),
                          *b = posemb_pe_find_param(p, "tupe.pos_ln.bias", 0),
                          *uq = posemb_pe_find_param(p, "tupe.pos_q.weight", layer),
                          *uk = posemb_pe_find_param(p, "tupe.pos_k.weight", layer);
    double e[2][D], v = 0;
    for (int r = 0; r < 2; r++) {
        const float *row = t->data + (r ? y : x) * D;
        double mean = 0, var = 0;
        for (int c = 0; c < D; c++) mean += row[c] / D;
        for (int c = 0; c < D; c++) var += (row[c] - mean) * (row[c] - mean) / D;
        for (int c = 0; c < D; c++) e[r][c] = (row[c] - mean) / sqrt(var + 1e-5) * g->data[c] + b->data[c];
    }
    for (int k = 0; k < d; k++) {
        double a = 0, bk = 0;
        for (int c = 0; c < D; c++) {
            a += e[0][c] * uq->data[(h * d + k) * D + c];
            bk += e[1][c] * uk->data[(h * d + k) * D + c];
        }
        v += a * bk;
    }
    return v / sqrt(2.0 * d);
}

/* A TUPE PE with every tensor O(1), so that each term counts. */
static posemb_pe *tupe_pe(const char *spec, int layers)
{
    posemb_pe *p = make(spec, 8, 2, layers, 16, 0);
    posemb_rng rng;
    posemb_rng_seed(&rng, 21, 4);
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        posemb_rng_fill_normal(&rng, t->data, (long)t->numel, 0.7f);
    }
    posemb_pe_prepare(p);
    return p;
}

/* The logits hook adds tupe_term at the call's positions (with gaps; the
 * first key, at 4, is [CLS]: its row is theta_1, the other rows' column 0
 * theta_2), per layer with share=off; the export shows the same for 0..n-1. */
static void test_tupe_term(void **state)
{
    enum { n = 5, d = 4 };
    posemb_pe *p = tupe_pe("tupe:cls=on,share=off", 2);
    const posemb_pe_param *t1 = posemb_pe_find_param(p, "tupe.cls_to_others", 0),
                          *t2 = posemb_pe_find_param(p, "tupe.others_to_cls", 0);
    int32_t pos[n] = {4, 5, 7, 10, 15};
    float q[n * d] = {0}, s[n * n];
    for (int layer = 0; layer < 2; layer++)
        for (int h = 0; h < 2; h++) {
            memset(s, 0, sizeof s);
            posemb_pe_head hd = {
                .layer = layer, .head = h, .nq = n, .nk = n, .d = d, .scale = 0.5f, .qpos = pos, .kpos = pos};
            posemb_pe_logits_forward(p, &hd, q, d, q, d, s, n);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double want = i == 0 ? t1->data[h] : j == 0 ? t2->data[h] : tupe_term(p, layer, h, pos[i], pos[j]);
                    TU_CLOSE(s[i * n + j], want, 1e-6, 1e-5, "tupe logits", (layer * 2 + h) * 100 + i * n + j);
                }
        }
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    const posemb_pe_named_matrix *b = export_item(p, 7, &a, &ex, "bias.head1");
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) {
            double want = i == 0 ? t1->data[1] : j == 0 ? t2->data[1] : tupe_term(p, 0, 1, i, j);
            TU_CLOSE(b->data[i * 7 + j], want, 1e-6, 1e-5, "tupe export", i * 7 + j);
        }
    export_item(p, 7, &a, &ex, "tupe_bias.layer1"); /* share=off: each layer's head mean */
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* Through the attention kernel: softmax(q.k/sqrt(2d) + v), the token term
 * over sqrt(2d) by the q/k hook, at given positions with a gap. */
static void test_tupe_attention(void **state)
{
    enum { T = 5, D = 8, H = 2, d = 4 };
    posemb_pe *p = tupe_pe("tupe", 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 9, 9);
    float qkv0[T * 3 * D], qkv[T * 3 * D], probs[H * T * T], out[T * D];
    posemb_rng_fill_normal(&rng, qkv0, T * 3 * D, 1.0f);
    memcpy(qkv, qkv0, sizeof qkv);
    int32_t pos[T] = {0, 1, 2, 6, 7};
    posemb_nn_attn_shape sh = {.B = 1, .T = T, .D = D, .H = H};
    posemb_nn_attention_forward(&sh, p, 0, qkv, pos, NULL, probs, out, NULL);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            double logit[T], mx = -1e30, z = 0;
            for (int j = 0; j < T; j++) {
                double dot = 0;
                for (int k = 0; k < d; k++)
                    dot += (double)qkv0[i * 3 * D + h * d + k] * qkv0[j * 3 * D + D + h * d + k];
                logit[j] = dot / sqrt(2.0 * d) + tupe_term(p, 0, h, pos[i], pos[j]);
                mx = fmax(mx, logit[j]);
            }
            for (int j = 0; j < T; j++) z += exp(logit[j] - mx);
            for (int j = 0; j < T; j++)
                TU_CLOSE(probs[(h * T + i) * T + j], exp(logit[j] - mx) / z, 1e-6, 1e-5, "tupe probs",
                         (h * T + i) * T + j);
        }
    posemb_pe_free(p);
}

/* lrope at its initialisation rotates as rope does; ssmax multiplies a
 * query by s ln(n), n = its index + 1 in a decoder; temperature by HF
 * Llama 4's 1 + a ln(floor((x + 1)/f) + 1) at index x, on top of the
 * rotation (which reads the position ids). */
static void test_lrope_ssmax_temperature(void **state)
{
    enum { D = 16, H = 2, d = 8, N = 5 };
    const char *specs[] = {
        "rope", "lrope", "lrope:per_head=on", "rope+ssmax", "rope+temperature:floor_scale=4", "rope+temperature"};
    int32_t pos[N] = {0, 1, 7, 40, 99};
    float q0[N * d], k0[N * d], ref_q[N * d], ref_k[N * d];
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 1);
    posemb_rng_fill_normal(&rng, q0, N * d, 1.0f);
    posemb_rng_fill_normal(&rng, k0, N * d, 1.0f);
    for (int s = 0; s < 6; s++) {
        posemb_pe *p = make(specs[s], D, H, 2, 128, 1);
        float q[N * d], k[N * d];
        memcpy(q, q0, sizeof q);
        memcpy(k, k0, sizeof k);
        posemb_pe_head h = {.layer = 1, .head = 1, .nq = N, .nk = N, .d = d, .qpos = pos, .kpos = pos};
        posemb_pe_qk_forward(p, &h, q, d, k, d);
        if (s == 0) {
            memcpy(ref_q, q, sizeof q);
            memcpy(ref_k, k, sizeof k);
        }
        for (int i = 0; i < N; i++) {
            double f = 1.0;
            /* the scales read the row's index (HF's cache_position), not the position ids 0, 1, 7, 40, 99 */
            if (s == 3) f = 0.43 * log(i + 1.0);
            if (s == 4) f = 1.0 + 0.1 * log(floor((i + 1.0) / 4.0) + 1.0);
            for (int t = 0; t < d; t++) {
                TU_CLOSE(q[i * d + t], f * ref_q[i * d + t], 2e-6, 2e-6, specs[s], i * d + t);
                TU_CLOSE(k[i * d + t], ref_k[i * d + t], 2e-6, 2e-6, specs[s], i * d + t); /* keys unscaled */
            }
        }
        posemb_pe_free(p);
    }
    /* temperature's factor at floor_scale's steps (8191 + 1 = 8192: the first step up), from HF's formula */
    posemb_pe *p = make("temperature", D, H, 1, 16, 1);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    const posemb_pe_named_matrix *m = export_item(p, 20000, &a, &ex, "logit_factor");
    int xs[] = {0, 8190, 8191, 16382, 16383, 19999};
    for (int i = 0; i < 6; i++)
        TU_CLOSE(m->data[xs[i]], 1.0 + 0.1 * log(floor((xs[i] + 1.0) / 8192.0) + 1.0), 1e-7, 1e-7, "temperature",
                 xs[i]);
    assert_true(m->data[8190] == 1.0f && m->data[8191] > 1.0f);
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* DroPE: every query of a sequence of n > original tokens times 1 + c ln(n / original), keys unscaled; none
 * up to original; the export's row n - 1 is that factor. */
static void test_drope(void **state)
{
    enum { D = 16, H = 2, d = 8, N = 5 };
    int32_t pos[N] = {0, 1, 2, 3, 4};
    float q0[N * d], k0[N * d], q[N * d], k[N * d];
    posemb_rng rng;
    posemb_rng_seed(&rng, 7, 1);
    posemb_rng_fill_normal(&rng, q0, N * d, 1.0f);
    posemb_rng_fill_normal(&rng, k0, N * d, 1.0f);
    posemb_pe *p = make("drope:c=0.412,original=4", D, H, 1, 16, 1);
    for (int n = 4; n <= N; n++) {
        memcpy(q, q0, sizeof q);
        memcpy(k, k0, sizeof k);
        posemb_pe_head h = {.layer = 0, .head = 1, .nq = n, .nk = n, .d = d, .qpos = pos, .kpos = pos};
        posemb_pe_qk_forward(p, &h, q, d, k, d);
        double beta = n > 4 ? 1.0 + 0.412 * log(n / 4.0) : 1.0;
        for (int i = 0; i < n * d; i++) {
            TU_CLOSE(q[i], beta * q0[i], 1e-6, 1e-6, "drope q", i);
            TU_CLOSE(k[i], k0[i], 0, 0, "drope k", i);
        }
    }
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    const posemb_pe_named_matrix *m = export_item(p, 64, &a, &ex, "logit_factor");
    for (int x = 0; x < 64; x++)
        TU_CLOSE(m->data[x], x + 1 > 4 ? 1.0 + 0.412 * log((x + 1) / 4.0) : 1.0, 1e-6, 1e-6, "drope export", x);
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* rope2d: pair m of token p turned by fx_m x + fy_m y at the patch (x, y) = (u mod W, u / W) (u = p, or p - 1
 * after an unrotated class token), axial frequencies theta^(-4k/d) on x for the first d/4 pairs and on y for
 * the next; so the logit of constant rows depends on the offset alone. RoPE-Mixed's initial frequencies have
 * those magnitudes, along a direction and its perpendicular. */
static void test_rope2d(void **state)
{
    enum { D = 32, H = 2, d = 16, N = 12, W = 4 };
    int32_t pos[N];
    float q0[d], q[N * d], k[N * d];
    posemb_rng rng;
    posemb_rng_seed(&rng, 9, 1);
    posemb_rng_fill_normal(&rng, q0, d, 1.0f);
    for (int i = 0; i < N; i++) pos[i] = i;
    const char *specs[] = {"rope2d:grid=4", "rope2d:grid=4,cls=on", "rope2d:grid=4,mixed=on"};
    for (int sp = 0; sp < 3; sp++) {
        posemb_pe *p = make(specs[sp], D, H, 2, 64, 0);
        for (int i = 0; i < N; i++) {
            memcpy(q + i * d, q0, sizeof q0);
            memcpy(k + i * d, q0, sizeof q0);
        }
        posemb_pe_head h = {.layer = 1, .head = 1, .nq = N, .nk = N, .d = d, .qpos = pos, .kpos = pos};
        posemb_pe_qk_forward(p, &h, q, d, k, d);
        for (int i = 0; sp < 2 && i < N; i++) { /* the axial rotation, from the formula */
            int u = sp == 1 ? i - 1 : i;
            double x = u < 0 ? 0 : u % W, y = u < 0 ? 0 : u / W;
            for (int m = 0; m < d / 2; m++) {
                double f = pow(100.0, -4.0 * (m % (d / 4)) / d), a = (m < d / 4 ? x : y) * f;
                double ra = q0[2 * m] * cos(a) - q0[2 * m + 1] * sin(a),
                       rb = q0[2 * m] * sin(a) + q0[2 * m + 1] * cos(a);
                TU_CLOSE(q[i * d + 2 * m], ra, 1e-5, 1e-5, specs[sp], i * d + 2 * m);
                TU_CLOSE(q[i * d + 2 * m + 1], rb, 1e-5, 1e-5, specs[sp], i * d + 2 * m + 1);
            }
        }
        /* tokens (1, 0) and (6, 5) are one patch apart on x, (4, 0) and (9, 5) one row on y (no class token) */
        int pairs[][4] = {{1, 0, 6, 5}, {4, 0, 9, 5}, {5, 0, 10, 5}};
        for (int t = 0; sp != 1 && t < 3; t++) {
            double l1 = 0, l2 = 0;
            for (int c = 0; c < d; c++) {
                l1 += q[pairs[t][0] * d + c] * k[pairs[t][1] * d + c];
                l2 += q[pairs[t][2] * d + c] * k[pairs[t][3] * d + c];
            }
            TU_CLOSE(l1, l2, 1e-4, 1e-5, "a logit depends on the offset alone", t);
        }
        if (sp == 2) { /* RoPE-Mixed's initial frequencies */
            const posemb_pe_param *fr = posemb_pe_find_param(p, "rope2d.frequencies", 1);
            assert_non_null(fr);
            const float *fx = fr->data + 2 * (d / 2), *fy = fx + d / 2; /* head 1 */
            for (int m = 0; m < d / 4; m++) {
                double mag = pow(10.0, -4.0 * m / d);
                TU_CLOSE(hypot(fx[m], fy[m]), mag, 1e-6, 1e-5, "magnitude", m);
                TU_CLOSE(fx[m] * fx[m + d / 4] + fy[m] * fy[m + d / 4], 0, 1e-6, 0, "perpendicular", m);
            }
        }
        posemb_pe_free(p);
    }
}

/* M-RoPE: with 3D positions pair m turns by w_m times its axis's id (sections: axes 0 1 1 2 for 1|2|1;
 * interleaved 2|1|1: 0 1 2 0, HF's apply_interleaved_mrope), so the logit of unit pairs is
 * sum_m cos(w_m (a_m(i) - a_m(j))); without them it is RoPE's. The export's grid and axis map say the same. */
static void test_mrope(void **state)
{
    (void)state;
    enum { D = 16, H = 2, d = 8, nf = 4, N = 6 };
    const char *specs[] = {"rope:mrope=1|2|1", "rope:mrope=2|1|1,mrope_interleaved=on"};
    const int maps[2][nf] = {{0, 1, 1, 2}, {0, 1, 2, 0}};
    int32_t pos[N], axes[3 * N];
    for (int i = 0; i < N; i++) {
        pos[i] = i;
        axes[i] = i / 3, axes[N + i] = 2 + i % 3, axes[2 * N + i] = 7 - 2 * i; /* arbitrary, distinct per axis */
    }
    for (int sp = 0; sp < 2; sp++) {
        posemb_pe *p = make(specs[sp], D, H, 1, 64, 1);
        assert_int_equal(posemb_pe_n_axes(p), POSEMB_PE_AXES);
        for (int with = 0; with < 2; with++) {
            float q[N * d] = {0}, k[N * d] = {0};
            for (int i = 0; i < N; i++)
                for (int m = 0; m < nf; m++) q[i * d + m] = k[i * d + m] = 1.0f; /* halves: (x_m, x_m+nf) = (1, 0) */
            posemb_pe_head h = {.nq = N, .nk = N, .d = d, .qpos = pos, .kpos = pos};
            if (with) h.qaxes = h.kaxes = axes, h.axis_stride = N;
            posemb_pe_qk_forward(p, &h, q, d, k, d);
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double got = 0, want = 0;
                    for (int c = 0; c < d; c++) got += q[i * d + c] * k[j * d + c];
                    for (int m = 0; m < nf; m++) {
                        int a = maps[sp][m];
                        double dp = with ? axes[a * N + i] - axes[a * N + j] : i - j;
                        want += cos(pow(10000.0, -2.0 * m / d) * dp);
                    }
                    TU_CLOSE(got, want, 1e-5, 1e-5, specs[sp], i * N + j);
                }
        }
        posemb_arena a;
        posemb_arena_init(&a, 1 << 16);
        posemb_pe_export ex;
        const posemb_pe_named_matrix *g = export_item(p, 8, &a, &ex, "kernel_grid");
        assert_int_equal(g->rows, 31);
        double want = 0; /* offset dx = 2, dy = -1 */
        for (int m = 0; m < nf; m++) {
            int off = maps[sp][m] == 1 ? -1 : maps[sp][m] == 2 ? 2 : 0;
            want += cos(pow(10000.0, -2.0 * m / d) * off);
        }
        TU_CLOSE(g->data[(15 - 1) * 31 + 15 + 2], want, 1e-5, 1e-5, "kernel_grid", sp);
        const posemb_pe_named_matrix *ax = export_item(p, 8, &a, &ex, "mrope_axis");
        for (int m = 0; m < nf; m++) TU_CLOSE(ax->data[m], maps[sp][m], 0, 0, "mrope_axis", m);
        posemb_arena_free(&a);
        posemb_pe_free(p);
    }
    posemb_pe *plain = make("rope", D, H, 1, 64, 1);
    assert_int_equal(posemb_pe_n_axes(plain), 1);
    posemb_pe_free(plain);
}

/* decoupled: logit (i, j) of head h gains scale RoPE_i(W^QR_h x_i) . RoPE_j(W^KR x_j), pairs (2m, 2m + 1)
 * (DeepSeek's, the default) or (m, m + R/2) at base^(-2m/R), from the layer input alone: the formula in
 * double against the hooks, for both pairings. */
static void check_decoupled(int halves)
{
    enum { D = 8, H = 2, R = 4, B = 2, T = 5 };
    posemb_pe *p =
        make(halves ? "decoupled:dim=4,base=100,pairing=halves" : "decoupled:dim=4,base=100", D, H, 1, 16, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 3, 1);
    float *wq = posemb_pe_find_param(p, "decoupled.q_rope.weight", 0)->data,
          *wk = posemb_pe_find_param(p, "decoupled.k_rope.weight", 0)->data;
    posemb_rng_fill_normal(&rng, wq, H * R * D, 0.5f); /* O(1) logits, so that the tolerance means something */
    posemb_rng_fill_normal(&rng, wk, R * D, 0.5f);
    float x[B * T * D], *scratch = calloc(posemb_pe_layer_scratch_floats(p, B * T), sizeof(float));
    posemb_rng_fill_normal(&rng, x, B * T * D, 1.0f);
    posemb_pe_layer_input_forward(p, 0, x, B, T, scratch);
    int32_t pos[T] = {0, 1, 2, 7, 30}; /* 30: past the tables (max_len 16) */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            float sc[T * T] = {0};
            posemb_pe_head hd = {
                .head = h, .nq = T, .nk = T, .d = 4, .scale = 0.5f, .qpos = pos, .kpos = pos, .seq = b};
            posemb_pe_logits_forward(p, &hd, NULL, 0, NULL, 0, sc, T);
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) {
                    double qv[R], kv[R], want = 0;
                    for (int r = 0; r < R; r++) {
                        qv[r] = kv[r] = 0;
                        for (int e = 0; e < D; e++) {
                            qv[r] += (double)wq[(h * R + r) * D + e] * x[(b * T + i) * D + e];
                            kv[r] += (double)wk[r * D + e] * x[(b * T + j) * D + e];
                        }
                    }
                    for (int m = 0; m < R / 2; m++) {
                        int u = halves ? m : 2 * m, v = halves ? m + R / 2 : 2 * m + 1;
                        double w = pow(100.0, -2.0 * m / R), ai = w * pos[i], aj = w * pos[j];
                        double q0 = qv[u] * cos(ai) - qv[v] * sin(ai), q1 = qv[u] * sin(ai) + qv[v] * cos(ai);
                        double k0 = kv[u] * cos(aj) - kv[v] * sin(aj), k1 = kv[u] * sin(aj) + kv[v] * cos(aj);
                        want += 0.5 * (q0 * k0 + q1 * k1);
                    }
                    TU_CLOSE(sc[i * T + j], want, 1e-5, 1e-4, "decoupled logit", (b * H + h) * T * T + i * T + j);
                }
        }
    free(scratch);
    posemb_pe_free(p);
}

static void test_decoupled(void **state)
{
    (void)state;
    check_decoupled(0);
    check_decoupled(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sin_formula),
        cmocka_unit_test(test_lrope_ssmax_temperature),
        cmocka_unit_test(test_drope),
        cmocka_unit_test(test_rope2d),
        cmocka_unit_test(test_mrope),
        cmocka_unit_test(test_decoupled),
        cmocka_unit_test(test_shift_invariance),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_none_permutation_equivariant),
        cmocka_unit_test(test_alibi_slopes),
        cmocka_unit_test(test_alibi_sided),
        cmocka_unit_test(test_t5_buckets),
        cmocka_unit_test(test_rope_kernel),
        cmocka_unit_test(test_fixed_sinusoids_exact),
        cmocka_unit_test(test_tupe_term),
        cmocka_unit_test(test_tupe_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
