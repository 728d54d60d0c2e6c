/* The distance biases of 2022-2023 against their formulas: Sandwich
 * (Chi et al. 2023, as NeMo computes it) and KERPLE's log and power kernels
 * (Chi et al. 2022): the exported bias.headH matrices, the logits hook past
 * the tables (positions beyond max-len), KERPLE's projection of r1, r2 and
 * its initialisation; FIRE's MLP bias with its threshold. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "pe/pe_internal.h"
#include "pe/path_blocks.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"

static posemb_pe *make(const char *spec, int D, int H, int max_len) { return tu_pe(spec, D, H, 1, max_len, 0); }

static const posemb_pe_named_matrix *item(const posemb_pe_export *ex, const char *name)
{
    for (int i = 0; i < ex->n; i++)
        if (!strcmp(ex->items[i].name, name)) return &ex->items[i];
    fail_msg("no exported matrix '%s'", name);
    return NULL;
}

/* Sandwich: (sum_{k=1..d'/2} cos(r 10000^(-2k/d')) - d'/2) / (8 h / H). */
static double sandwich_ref(int r, int width, int h, int H)
{
    double acc = 0;
    for (int k = 1; k <= width / 2; k++) acc += cos(r * pow(10000.0, -2.0 * k / width));
    return (acc - width / 2) / (8.0 * (h + 1) / H);
}

/* The bias added by the logits hook for one query at qpos and keys at kpos. */
static void hook_bias(posemb_pe *p, int head, int32_t qpos, const int32_t *kpos, int nk, float *out)
{
    int32_t qp[1] = {qpos};
    posemb_pe_head h = {.head = head, .nq = 1, .nk = nk, .d = 16, .scale = 0.25f, .qpos = qp, .kpos = kpos};
    float q[16] = {0}, k[16 * 8] = {0};
    for (int j = 0; j < nk; j++) out[j] = 0.0f;
    posemb_pe_logits_forward(p, &h, q, 16, k, 16, out, nk);
}

static void test_sandwich(void **state)
{
    enum { D = 64, H = 4, n = 24 };
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_error err;
    for (int width = 16; width <= 32; width += 16) { /* the head width (default), then dim=32 */
        char spec[32];
        snprintf(spec, sizeof spec, width == 16 ? "sandwich" : "sandwich:dim=%d", width);
        posemb_pe *p = make(spec, D, H, 16);
        assert_int_equal(posemb_pe_export_matrices(p, n, &a, &ex, &err), POSEMB_OK);
        for (int h = 0; h < H; h++) {
            char name[32];
            snprintf(name, sizeof name, "bias.head%d", h);
            const posemb_pe_named_matrix *b = item(&ex, name);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double want = sandwich_ref(j - i, width, h, H);
                    TU_CLOSE(b->data[i * n + j], want, 1e-6, 1e-6, spec, i * n + j);
                    assert_true(b->data[i * n + j] <= 1e-6f); /* p_i . p_j <= p_i . p_i */
                }
        }
        /* past the 16-row table: positions 40 and 3..10 */
        int32_t kp[8];
        float got[8];
        for (int j = 0; j < 8; j++) kp[j] = 3 + j;
        hook_bias(p, 2, 40, kp, 8, got);
        for (int j = 0; j < 8; j++) TU_CLOSE(got[j], sandwich_ref(kp[j] - 40, width, 2, H), 1e-5, 1e-6, "hook", j);
        posemb_pe_free(p);
    }
    posemb_arena_free(&a);
}

static double kerple_ref(int power, double r1, double r2, double d)
{
    return power ? -r1 * pow(d, r2) : -r1 * log(1 + r2 * d);
}

static void test_kerple(void **state)
{
    enum { H = 4, n = 20 };
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_error err;
    for (int power = 0; power < 2; power++) {
        posemb_pe *p = make(power ? "kerple:kind=power" : "kerple", 64, H, 12);
        assert_int_equal(posemb_pe_export_matrices(p, n, &a, &ex, &err), POSEMB_OK);
        const posemb_pe_named_matrix *r1 = item(&ex, "r1"), *r2 = item(&ex, "r2");
        for (int h = 0; h < H; h++) {
            /* the (h + 1/2)/H quantiles of KERPLE's uniform ranges, r2 reversed */
            double u = (h + 0.5) / H;
            TU_CLOSE(r1->data[h], (power ? 1.0 : 2.0) * u, 1e-7, 0, "r1 init", h);
            TU_CLOSE(r2->data[h], (power ? 2.0 : 1.0) * (1 - u), 1e-7, 0, "r2 init", h);
            char name[32];
            snprintf(name, sizeof name, "bias.head%d", h);
            const posemb_pe_named_matrix *b = item(&ex, name);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    TU_CLOSE(b->data[i * n + j], kerple_ref(power, r1->data[h], r2->data[h], abs(i - j)), 1e-6, 1e-6,
                             "kerple bias", i * n + j);
            int32_t kp[8];
            float got[8];
            for (int j = 0; j < 8; j++) kp[j] = 7 * j; /* distances up to 49, past the 12-row table */
            hook_bias(p, h, 0, kp, 8, got);
            for (int j = 0; j < 8; j++)
                TU_CLOSE(got[j], kerple_ref(power, r1->data[h], r2->data[h], kp[j]), 1e-5, 1e-6, "kerple hook", j);
        }
        /* the projection: r1 >= 0.01, r2 >= 0.01 and, for power, r2 <= 2 */
        const posemb_pe_param *t1 = posemb_pe_get_param(p, 0), *t2 = posemb_pe_get_param(p, 1);
        assert_string_equal(t1->name, "kerple.r1");
        assert_string_equal(t2->name, "kerple.r2");
        t1->data[0] = -3.0f;
        t2->data[0] = 7.0f;
        t2->data[1] = -1.0f;
        posemb_pe_prepare(p);
        TU_CLOSE(t1->data[0], 0.01, 1e-7, 0, "r1 projected", 0);
        TU_CLOSE(t2->data[0], power ? 2.0 : 7.0, 1e-7, 0, "r2 projected (above)", 0);
        TU_CLOSE(t2->data[1], 0.01, 1e-7, 0, "r2 projected (below)", 1);
        posemb_pe_free(p);
    }
    posemb_arena_free(&a);
}

/* FIRE: b2_h + sum_k w2_hk relu(w1_k x + b1_k), x = ln(1 + c|i-j|) /
 * (ln(1 + c max(i, Lt)) + 1e-6), from the parameters in double; without
 * interpolation every row takes ln(1 + c Lt). */
static int fire_interpolates = 1;
static double fire_ref(posemb_pe *p, int h, long i, long j)
{
    const posemb_pe_param *w1 = posemb_pe_find_param(p, "fire.w1", 0), *b1 = posemb_pe_find_param(p, "fire.b1", 0),
                          *w2 = posemb_pe_find_param(p, "fire.w2", 0), *b2 = posemb_pe_find_param(p, "fire.b2", 0),
                          *c = posemb_pe_find_param(p, "fire.c", 0),
                          *s = posemb_pe_find_param(p, "fire.threshold_scale", 0);
    double Lt = fabs(s->data[0] * 8.0), N = fire_interpolates && i > Lt ? i : Lt, cc = fabs(c->data[0]);
    double x = log(1 + cc * labs(i - j)) / (log(1 + cc * N) + 1e-6), acc = b2->data[h];
    int W = (int)w1->numel;
    for (int k = 0; k < W; k++) acc += w2->data[h * W + k] * fmax(0.0, w1->data[k] * x + b1->data[k]);
    return acc;
}

static void check_fire(const char *spec, const char *canon)
{
    enum { H = 4, n = 20 };
    posemb_pe *p = make(spec, 64, H, 12);
    assert_string_equal(posemb_pe_spec(p), canon);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_error err;
    assert_int_equal(posemb_pe_export_matrices(p, n, &a, &ex, &err), POSEMB_OK);
    const posemb_pe_named_matrix *psi = item(&ex, "fire_psi");
    TU_CLOSE(psi->data[0], 0.3, 1e-7, 0, "c init", 0);
    TU_CLOSE(psi->data[1], 8.0, 1e-7, 0, "threshold init", 1);
    for (int h = 0; h < H; h++) {
        char name[32];
        snprintf(name, sizeof name, "bias.head%d", h);
        const posemb_pe_named_matrix *b = item(&ex, name);
        /* rows 0..8 share the threshold's normaliser, rows 9..19 their own */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) TU_CLOSE(b->data[i * n + j], fire_ref(p, h, i, j), 1e-5, 1e-6, "fire bias", i);
        int32_t kp[8];
        float got[8];
        for (int j = 0; j < 8; j++) kp[j] = 5 * j; /* distances up to 35, past the 12-row table */
        for (int qp = 3; qp <= 40; qp += 37) {
            hook_bias(p, h, qp, kp, 8, got);
            for (int j = 0; j < 8; j++)
                TU_CLOSE(got[j], fire_ref(p, h, qp, kp[j]), 1e-5, 1e-6, "fire hook", qp * 8 + j);
        }
        /* a row beyond the threshold runs the MLP over the row at once: the
         * export's per-pair value to the bit */
        for (int j = 0; j < 8; j++) kp[j] = 2 * j;
        hook_bias(p, h, 15, kp, 8, got);
        for (int j = 0; j < 8; j++) assert_memory_equal(&got[j], &b->data[15 * n + kp[j]], sizeof(float));
    }
    posemb_pe_free(p);
    posemb_arena_free(&a);
}

static void test_fire(void **state)
{
    fire_interpolates = 1;
    check_fire("fire:threshold=8,c=0.3", "fire:width=32,c=0.3,threshold=8");
    /* rows 9..19 keep the threshold's normaliser: the bias depends on |i - j| only */
    fire_interpolates = 0;
    check_fire("fire:threshold=8,c=0.3,interpolate=off", "fire:width=32,c=0.3,threshold=8,interpolate=off");
    fire_interpolates = 1;
}

/* CoPE's term against the paper's definition, in double: gates on the
 * content logits, counts from the key to the query clamped at npos - 1, the
 * interpolated q.e; a count past the clamp and the encoder refused. */
static void test_cope(void **state)
{
    enum { n = 7, d = 4, P = 4 };
    posemb_pe *p = tu_pe("cope:npos=4", 8, 2, 2, 16, 1);
    const posemb_pe_param *e = posemb_pe_find_param(p, "cope.pos_emb", 1);
    assert_non_null(e);
    assert_int_equal((int)e->numel, P * d);
    posemb_rng rng;
    posemb_rng_seed(&rng, 3, 3);
    posemb_rng_fill_normal(&rng, e->data, P * d, 1.0f);
    float q[n * d], k[n * d], s[n * n];
    posemb_rng_fill_normal(&rng, q, n * d, 1.0f);
    posemb_rng_fill_normal(&rng, k, n * d, 1.0f);
    int32_t pos[n] = {0, 1, 2, 3, 4, 5, 6};
    float scale = 0.5f;
    posemb_pe_head h = {.layer = 1, .head = 1, .nq = n, .nk = n, .d = d, .scale = scale, .qpos = pos, .kpos = pos};
    double s0[n][n];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double dot = 0;
            for (int x = 0; x < d; x++) dot += (double)q[i * d + x] * k[j * d + x];
            s0[i][j] = scale * dot;
            s[i * n + j] = (float)s0[i][j];
        }
    posemb_pe_logits_forward(p, &h, q, d, k, d, s, n);
    int clamped = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double count = 0;
            for (int t = j; t <= i; t++) count += 1.0 / (1.0 + exp(-s0[i][t]));
            clamped += count > P - 1;
            double pc = fmin(count, P - 1), lo = floor(pc), hi = ceil(pc), qlo = 0, qhi = 0;
            for (int x = 0; x < d; x++) {
                qlo += (double)q[i * d + x] * e->data[(int)lo * d + x];
                qhi += (double)q[i * d + x] * e->data[(int)hi * d + x];
            }
            double want = s0[i][j] + qlo + (pc - lo) * (qhi - qlo);
            TU_CLOSE(s[i * n + j], want, 1e-5, 1e-5, "cope logit", i * n + j);
        }
    assert_true(clamped > 0);
    posemb_pe_free(p);
    posemb_pe_dims dims = {.dim = 8, .n_heads = 2, .n_layers = 1, .max_len = 8};
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, "cope", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "cope is defined for decoders"));
}

/* FoX: logit (i, j <= i) + sum_{t=j+1..i} ln sigmoid(w_h . x_t + b_h), in
 * double; with w = 0 it is ALiBi's linear decay with slope ln(1 + e^-b). */
static void test_fox(void **state)
{
    enum { B = 2, T = 6, D = 8, H = 2 };
    posemb_pe *p = tu_pe("fox", D, H, 2, 16, 1);
    const posemb_pe_param *w = posemb_pe_find_param(p, "fox.forget.weight", 1),
                          *b = posemb_pe_find_param(p, "fox.forget.bias", 1);
    assert_true(w && b && b->data[0] == 4.0f && b->data[1] == 4.0f); /* the spec's "near 1": sigmoid(4) */
    posemb_rng rng;
    posemb_rng_seed(&rng, 4, 4);
    float x[B * T * D], *scratch = calloc(posemb_pe_layer_scratch_floats(p, B * T), sizeof(float));
    posemb_rng_fill_normal(&rng, x, B * T * D, 1.0f);
    int32_t pos[T] = {0, 1, 2, 3, 4, 5};
    for (int zero_w = 0; zero_w < 2; zero_w++) {
        posemb_rng_fill_normal(&rng, w->data, H * D, zero_w ? 0.0f : 0.5f);
        if (zero_w) memset(w->data, 0, H * D * sizeof(float));
        b->data[0] = 0.5f;
        b->data[1] = 3.0f;
        posemb_pe_layer_input_forward(p, 1, x, B, T, scratch);
        for (int seq = 0; seq < B; seq++)
            for (int h = 0; h < H; h++) {
                float s[T * T] = {0};
                posemb_pe_head hd = {
                    .layer = 1, .head = h, .nq = T, .nk = T, .d = 4, .qpos = pos, .kpos = pos, .seq = seq};
                posemb_pe_logits_forward(p, &hd, NULL, 4, NULL, 4, s, T);
                for (int i = 0; i < T; i++)
                    for (int j = 0; j <= i; j++) {
                        double want = 0;
                        for (int t = j + 1; t <= i; t++) {
                            double z = b->data[h];
                            for (int k = 0; k < D; k++) z += (double)w->data[h * D + k] * x[(seq * T + t) * D + k];
                            want += -log1p(exp(-z));
                        }
                        if (zero_w) TU_CLOSE(want, -(i - j) * log1p(exp(-b->data[h])), 1e-12, 1e-12, "alibi form", i);
                        TU_CLOSE(s[i * T + j], want, 1e-5, 1e-5, "fox bias", (seq * H + h) * 100 + i * T + j);
                    }
            }
    }
    free(scratch);
    posemb_pe_free(p);
    p = tu_pe("fox:bias=0", D, H, 2, 16, 1); /* the authors' code's start, f = 1/2 */
    b = posemb_pe_find_param(p, "fox.forget.bias", 0);
    assert_true(b && b->data[0] == 0.0f && b->data[1] == 0.0f);
    posemb_pe_free(p);
    posemb_pe_dims dims = {.dim = 8, .n_heads = 2, .n_layers = 1, .max_len = 8};
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, "fox", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "fox is defined for decoders"));
}

/* Stick-breaking weights against the product formula in double (Tan et al.
 * 2025; fla's naive_stickbreaking_attn): A_ij = sigmoid(z_ij) prod over the
 * keys k between j and the query (the query's own with current=on) of
 * 1 - sigmoid(z_ik); a masked key takes nothing and passes the stick on.
 * Equal logits z give the geometric form sigmoid(z) (1 - sigmoid(z))^m. */
static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void check_stickbreaking(const char *spec, int current)
{
    enum { T = 7 };
    posemb_pe *p = tu_pe(spec, 8, 2, 1, 16, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 9, 9);
    float z[T * T], s[T * T];
    posemb_rng_fill_normal(&rng, z, T * T, 3.0f);
    z[5 * T + 2] = -FLT_MAX; /* a masked key inside row 5 */
    memcpy(s, z, sizeof s);
    posemb_pe_head hd = {.layer = 0, .head = 0, .nq = T, .nk = T, .d = 4};
    assert_int_equal(posemb_pe_weights_forward(p, &hd, s, T), 1);
    for (int i = 0; i < T; i++) {
        int last = current ? i : i - 1;
        double sum = 0;
        for (int j = 0; j < T; j++) {
            double want = 0;
            if (j <= last && z[i * T + j] > -FLT_MAX) {
                want = sigmoid(z[i * T + j]);
                for (int k = j + 1; k <= last; k++)
                    if (z[i * T + k] > -FLT_MAX) want *= 1.0 - sigmoid(z[i * T + k]);
            }
            TU_CLOSE(s[i * T + j], want, 1e-6, 1e-6, "stick-breaking weight", i * T + j);
            sum += s[i * T + j];
        }
        assert_true(sum <= 1.0 + 1e-6);
    }
    for (int k = 0; k < T * T; k++) s[k] = 0.7f;
    posemb_pe_weights_forward(p, &hd, s, T);
    for (int j = 0; j < T - 1; j++) {
        int m = (current ? T - 1 : T - 2) - j;
        TU_CLOSE(s[(T - 1) * T + j], sigmoid(0.7) * pow(1 - sigmoid(0.7), m), 1e-6, 1e-6, "geometric", j);
    }
    posemb_pe_free(p);
}

/* Long rows, as the engine's row blocks pass them: 3 queries, the last of
 * 700 keys (so nq < nk, aligned at the end), each row crossing the
 * forward's chunks of 256 keys, with masked keys (-FLT_MAX, -inf) in
 * several chunks; against the product formula in double. The largest
 * error is printed; the weights are float (vmath.h's log1p and exp). */
static void test_stickbreaking_long(void **state)
{
    (void)state;
    enum { NQ = 3, NK = 700 };
    posemb_pe *p = tu_pe("stickbreaking", 8, 2, 1, NK, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 4, 4);
    static float z[NQ * NK], s[NQ * NK];
    posemb_rng_fill_normal(&rng, z, NQ * NK, 1.0f);
    for (int k = 0; k < NQ * NK; k++) z[k] -= 5.0f; /* betas near 0.007: the stick lasts the whole row */
    z[0 * NK + 100] = z[1 * NK + 300] = z[2 * NK + 650] = -FLT_MAX;
    z[2 * NK + 255] = -INFINITY;
    memcpy(s, z, sizeof s);
    posemb_pe_head hd = {.layer = 0, .head = 0, .nq = NQ, .nk = NK, .d = 4};
    assert_int_equal(posemb_pe_weights_forward(p, &hd, s, NK), 1);
    double worst = 0;
    for (int i = 0; i < NQ; i++) {
        int last = NK - NQ + i - 1; /* current=off: the key before the query's own */
        double stick = 1.0;         /* prod over the nearer keys of 1 - beta */
        for (int j = NK - 1; j >= 0; j--) {
            double zz = z[i * NK + j], want = 0;
            if (j <= last && zz > -FLT_MAX) {
                want = sigmoid(zz) * stick;
                stick *= 1.0 - sigmoid(zz);
            }
            TU_CLOSE(s[i * NK + j], want, 1e-12, 2e-6, "long stick-breaking row", i * NK + j);
            if (want > 1e-4) worst = fmax(worst, fabs(s[i * NK + j] - want) / want);
        }
    }
    printf("stick-breaking over %d keys: worst relative error %.3g (weights above 1e-4)\n", NK, worst);
    posemb_pe_free(p);
}

static void test_stickbreaking(void **state)
{
    (void)state;
    check_stickbreaking("stickbreaking", 0);
    check_stickbreaking("stickbreaking:current=on", 1);
    posemb_pe *p;
    posemb_pe_dims dims = {.dim = 8, .n_heads = 2, .n_layers = 1, .max_len = 8};
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, "stickbreaking", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "stickbreaking is defined for decoders"));
    dims.causal = 1;
    assert_int_equal(posemb_pe_create(&p, "rope+stickbreaking", &dims, &err), POSEMB_EINVAL);
    posemb_pe_free(NULL);
}

/* PoPE's logits against the paper's sum, in double: scale sum_c softplus(q_c)
 * softplus(k_c) cos((x_i - x_j) theta_c - delta_c), theta_c = base^(-c/d),
 * delta clamped to [-2 pi, 0]; positions past the PE's table too. */
static void test_pope(void **state)
{
    (void)state;
    enum { T = 5, d = 8 };
    posemb_pe *p = tu_pe("pope:base=50", 16, 2, 1, 8, 0);
    const posemb_pe_param *delta = posemb_pe_find_param(p, "pope.delta", 0);
    assert_true(delta && delta->numel == 2 * d && delta->data[d + 3] == 0.0f); /* starts at 0 */
    posemb_rng rng;
    posemb_rng_seed(&rng, 3, 3);
    posemb_rng_fill_normal(&rng, delta->data, 2 * d, 3.0f); /* some outside [-2 pi, 0]: clamped */
    float q[T * d], k[T * d], sc[T * T];
    posemb_rng_fill_normal(&rng, q, T * d, 1.0f);
    posemb_rng_fill_normal(&rng, k, T * d, 1.0f);
    int32_t qpos[T] = {0, 3, 7, 9, 20}, kpos[T] = {1, 2, 8, 11, 4}; /* 9, 11, 20 past the table's 8 rows */
    posemb_pe_head hd = {.layer = 0, .head = 1, .nq = T, .nk = T, .d = d, .scale = 0.3f, .qpos = qpos, .kpos = kpos};
    assert_int_equal(posemb_pe_scores_forward(p, &hd, q, d, k, d, sc, T), 1);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            double want = 0;
            for (int c = 0; c < d; c++) {
                double dl = fmin(0.0, fmax(-6.283185307179586, delta->data[d + c])), th = pow(50.0, -(double)c / d);
                want += log1p(exp(q[i * d + c])) * log1p(exp(k[j * d + c])) * cos((qpos[i] - kpos[j]) * th - dl);
            }
            TU_CLOSE(sc[i * T + j], 0.3 * want, 1e-5, 1e-5, "pope logit", i * T + j);
        }
    /* the exported kernel: layer 0, head 0, equal magnitudes */
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_error err;
    assert_int_equal(posemb_pe_export_matrices(p, 6, &a, &ex, &err), POSEMB_OK);
    const posemb_pe_named_matrix *kern = item(&ex, "kernel");
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double want = 0;
            for (int c = 0; c < d; c++)
                want += cos((i - j) * pow(50.0, -(double)c / d) - fmin(0.0, fmax(-6.283185307179586, delta->data[c])));
            TU_CLOSE(kern->data[i * 6 + j], want, 1e-5, 1e-5, "pope kernel", i * 6 + j);
        }
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

/* PaTH's logits against the maps applied one by one in double, with w and
 * beta recomputed from the layer input by their definitions (fla's layer):
 * w_t = l2norm(silu(conv3(W_up W_down x_t))), beta_t = 2 sigmoid(W_b x_t + b),
 * s_ij = q_i^T H_i ... H_(j+1) k_j scale, H_t = I - beta_t w_t w_t^T; the
 * blocked form in one block, in blocks of 1 (every map its own block), 2 and
 * 3 (a short last block), and with the right of the diagonal zero. */
static void check_path(const char *spec)
{
    enum { T = 7, D = 8, H = 2, d = 4, R = 3 };
    posemb_pe *p = tu_pe(spec, D, H, 1, 8, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 5);
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        posemb_rng_fill_normal(&rng, t->data, (int)t->numel, 0.7f);
    }
    const float *wd = posemb_pe_find_param(p, "path.w_down.weight", 0)->data,
                *wu = posemb_pe_find_param(p, "path.w_up.weight", 0)->data,
                *cw = posemb_pe_find_param(p, "path.w_conv.weight", 0)->data,
                *bw = posemb_pe_find_param(p, "path.beta.weight", 0)->data,
                *bb = posemb_pe_find_param(p, "path.beta.bias", 0)->data;
    float x[T * D], q[T * d], k[T * d], sc[T * T],
        *scratch = calloc(posemb_pe_layer_scratch_floats(p, T), sizeof(float));
    posemb_rng_fill_normal(&rng, x, T * D, 1.0f);
    posemb_rng_fill_normal(&rng, q, T * d, 1.0f);
    posemb_rng_fill_normal(&rng, k, T * d, 1.0f);
    posemb_pe_layer_input_forward(p, 0, x, 1, T, scratch);
    int32_t pos[T] = {0, 1, 2, 3, 4, 5, 6};
    int h = 1;
    posemb_pe_head hd = {.layer = 0, .head = h, .nq = T, .nk = T, .d = d, .scale = 0.5f, .qpos = pos, .kpos = pos};
    assert_int_equal(posemb_pe_scores_forward(p, &hd, q, d, k, d, sc, T), 1);
    double v[T][H * d], w[T][d], beta[T];
    for (int t = 0; t < T; t++)
        for (int e = 0; e < H * d; e++) {
            v[t][e] = 0;
            for (int r = 0; r < R; r++) {
                double a = 0;
                for (int m = 0; m < D; m++) a += (double)wd[r * D + m] * x[t * D + m];
                v[t][e] += wu[e * R + r] * a;
            }
        }
    for (int t = 0; t < T; t++) {
        double ss = 0, z = bb[h];
        for (int e = 0; e < d; e++) {
            int ch = h * d + e;
            double g = 0;
            for (int tap = 0; tap < 3; tap++)
                if (t - 2 + tap >= 0) g += cw[ch * 3 + tap] * v[t - 2 + tap][ch];
            w[t][e] = g / (1 + exp(-g));
            ss += w[t][e] * w[t][e];
        }
        for (int e = 0; e < d; e++) w[t][e] /= sqrt(ss + 1e-6);
        for (int m = 0; m < D; m++) z += (double)bw[h * D + m] * x[t * D + m];
        beta[t] = 2 / (1 + exp(-z));
    }
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double kk[d]; /* H_i ... H_(j+1) k_j, the first applied first, as fla's decoding updates its keys */
            for (int e = 0; e < d; e++) kk[e] = k[j * d + e];
            for (int t = j + 1; t <= i; t++) {
                double dot = 0;
                for (int e = 0; e < d; e++) dot += w[t][e] * kk[e];
                for (int e = 0; e < d; e++) kk[e] -= beta[t] * dot * w[t][e];
            }
            double want = 0;
            for (int e = 0; e < d; e++) want += q[i * d + e] * kk[e];
            TU_CLOSE(sc[i * T + j], 0.5 * want, 1e-5, 1e-5, "path logit", i * T + j);
        }
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++) assert_true(sc[i * T + j] == 0.0f);
    free(scratch);
    posemb_pe_free(p);
}

static void test_path(void **state)
{
    (void)state;
    const char *specs[] = {"path:rank=3", "path:rank=3,block=1", "path:rank=3,block=2", "path:rank=3,block=3"};
    for (int i = 0; i < 4; i++) check_path(specs[i]);
}

/* L = sum over j <= i of g_ij s_ij for path_blocks' logits s. */
static double path_blocks_loss(const path_blocks *h, const float *q, const float *k, const float *g, float *s,
                               float *work)
{
    path_blocks_forward(h, q, h->d, k, h->d, s, h->n, work);
    double L = 0;
    for (int i = 0; i < h->n; i++)
        for (int j = 0; j <= i; j++) L += (double)g[i * h->n + j] * s[i * h->n + j];
    return L;
}

/* One input x[i] of path_blocks against the central difference of L. */
static void fd_check(const path_blocks *h, float *x, int i, double got, const float *q, const float *k, const float *g,
                     float *s, float *work, const char *what)
{
    float keep = x[i], e = 1e-3f;
    x[i] = keep + e;
    double up = path_blocks_loss(h, q, k, g, s, work);
    x[i] = keep - e;
    double down = path_blocks_loss(h, q, k, g, s, work);
    x[i] = keep;
    TU_CLOSE(got, (up - down) / (2.0 * e), 3e-3, 1e-2, what, i);
}

/* PaTH's blocked backward against finite differences of its forward, for q, k, w and beta, over three or more
 * blocks with a short last one (n tokens in blocks of C): what test_pe_grad's 6 tokens cannot reach. ds right
 * of the diagonal holds garbage the backward must not read. */
static void check_path_blocks_grad(int n, int d, int C)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, (uint64_t)n, (uint64_t)C);
    float *q = malloc(sizeof(float) * n * d), *k = malloc(sizeof(float) * n * d), *w = malloc(sizeof(float) * n * d),
          *beta = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n * n), *s = malloc(sizeof(float) * n * n),
          *dq = malloc(sizeof(float) * n * d), *dk = malloc(sizeof(float) * n * d),
          *dw = calloc((size_t)n * d, sizeof(float)), *dbeta = calloc((size_t)n, sizeof(float)),
          *work = malloc(sizeof(float) * path_blocks_floats(n, d, C));
    posemb_rng_fill_normal(&rng, q, n * d, 1.0f);
    posemb_rng_fill_normal(&rng, k, n * d, 1.0f);
    posemb_rng_fill_normal(&rng, w, n * d, 1.0f);
    posemb_rng_fill_normal(&rng, g, n * n, 1.0f);
    for (int t = 0; t < n; t++) {
        double ss = 0;
        for (int e = 0; e < d; e++) ss += (double)w[t * d + e] * w[t * d + e];
        for (int e = 0; e < d; e++) w[t * d + e] /= (float)sqrt(ss);
        beta[t] = 0.2f + 1.6f * (float)(t % 5) / 4.0f;
        for (int j = t + 1; j < n; j++) g[t * n + j] = NAN;
    }
    path_blocks h = {.n = n, .d = d, .C = C, .w = w, .beta = beta, .scale = 0.7f};
    for (int i = 0; i < n * d; i++) dk[i] = NAN; /* overwritten (accumulate 0) */
    path_blocks_backward(&h, q, d, k, d, g, n, dq, d, dk, d, 0, dw, dbeta, work);
    for (int i = 0; i < n; i++) /* the loss reads j <= i only: zero the garbage for the differences */
        for (int j = i + 1; j < n; j++) g[i * n + j] = 0.0f;
    for (int i = 0; i < n * d; i++) {
        fd_check(&h, q, i, dq[i], q, k, g, s, work, "path blocks dq");
        fd_check(&h, k, i, dk[i], q, k, g, s, work, "path blocks dk");
        fd_check(&h, w, i, dw[i], q, k, g, s, work, "path blocks dw");
    }
    for (int i = 0; i < n; i++) fd_check(&h, beta, i, dbeta[i], q, k, g, s, work, "path blocks dbeta");
    printf("path blocks n %2d d %d C %d: %d gradients against finite differences\n", n, d, C, 3 * n * d + n);
    free(q), free(k), free(w), free(beta), free(g), free(s), free(dq), free(dk), free(dw), free(dbeta), free(work);
}

static void test_path_blocks_grad(void **state)
{
    (void)state;
    check_path_blocks_grad(7, 4, 3);  /* blocks of 3, 3, 1 */
    check_path_blocks_grad(10, 5, 4); /* 4, 4, 2 */
    check_path_blocks_grad(9, 3, 2);  /* 2, 2, 2, 2, 1 */
    check_path_blocks_grad(5, 4, 8);  /* one block larger than the sequence */
}

/* STRING's logits against RoPE itself: a far pair (d >= S) is plain RoPE's
 * with the query moved to x_i - S + W, a near one plain RoPE's, both times
 * f^2 (f = 1 + 0.1 ln 2); and the options' errors. */
static void test_rope_string(void **state)
{
    (void)state;
    enum { T = 6, d = 8 };
    posemb_pe *ps = tu_pe("rope:string=3,string_window=1", 16, 2, 1, 32, 1), *pr = tu_pe("rope", 16, 2, 1, 32, 1);
    posemb_rng rng;
    posemb_rng_seed(&rng, 7, 7);
    float q[T * d], k[T * d], qr[T * d], kr[T * d], sc[T * T];
    posemb_rng_fill_normal(&rng, q, T * d, 1.0f);
    posemb_rng_fill_normal(&rng, k, T * d, 1.0f);
    memcpy(qr, q, sizeof q);
    memcpy(kr, k, sizeof k);
    int32_t pos[T] = {0, 2, 3, 5, 9, 20};
    posemb_pe_head hd = {.layer = 0, .head = 0, .nq = T, .nk = T, .d = d, .scale = 0.25f, .qpos = pos, .kpos = pos};
    posemb_pe_qk_forward(ps, &hd, qr, d, kr, d);
    assert_int_equal(posemb_pe_scores_forward(ps, &hd, qr, d, kr, d, sc, T), 1);
    double f2 = pow(1 + 0.1 * log(2.0), 2);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            int32_t qp = pos[i] - pos[j] >= 3 ? pos[i] - 2 : pos[i];
            float qi[d], kj[d];
            memcpy(qi, q + i * d, sizeof qi);
            memcpy(kj, k + j * d, sizeof kj);
            posemb_pe_head one = {.layer = 0, .head = 0, .nq = 1, .nk = 1, .d = d, .qpos = &qp, .kpos = &pos[j]};
            posemb_pe_qk_forward(pr, &one, qi, d, kj, d);
            double want = 0;
            for (int e = 0; e < d; e++) want += (double)qi[e] * kj[e];
            TU_CLOSE(sc[i * T + j], 0.25 * f2 * want, 1e-5, 1e-5, "string logit", i * T + j);
        }
    posemb_pe_free(ps);
    posemb_pe_free(pr);
    posemb_pe_dims dims = {.dim = 16, .n_heads = 2, .n_layers = 1, .max_len = 32, .causal = 1};
    posemb_error err;
    posemb_pe *p;
    assert_int_equal(posemb_pe_create(&p, "rope:string=42", &dims, &err), POSEMB_EINVAL); /* W = 128 >= S */
    assert_non_null(strstr(err.msg, "string_window (128) must be below string (42)"));
    assert_int_equal(posemb_pe_create(&p, "rope:string_window=4", &dims, &err), POSEMB_EINVAL);
    assert_int_equal(
        posemb_pe_create(&p, "rope:string=8,string_window=2,scaling=yarn,factor=2,original=16", &dims, &err),
        POSEMB_EINVAL);
    assert_int_equal(posemb_pe_create(&p, "rope:string=8,string_window=2+ssmax", &dims, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_pe_create(&p, "rope:string=8,string_window=2", &dims, &err), POSEMB_OK);
    assert_string_equal(
        posemb_pe_spec(p),
        "rope:base=10000,pairing=halves,frac=1,scaling=none,string=8,string_window=2,string_factor=1.0693147180559945");
    posemb_pe_free(p);
}

static void test_errors(void **state)
{
    posemb_pe_dims dims = {.dim = 16, .n_heads = 2, .n_layers = 1, .max_len = 8};
    posemb_pe *p;
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, "sandwich:dim=7", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "sandwich dim=7 must be even"));
    assert_int_equal(posemb_pe_create(&p, "kerple:kind=cubic", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "not one of log|power"));
    assert_int_equal(posemb_pe_create(&p, "alibi+kerple", &dims, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_pe_create(&p, "fire:c=0", &dims, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_pe_create(&p, "fire:width=0", &dims, &err), POSEMB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sandwich),
        cmocka_unit_test(test_kerple),
        cmocka_unit_test(test_fire),
        cmocka_unit_test(test_cope),
        cmocka_unit_test(test_fox),
        cmocka_unit_test(test_stickbreaking),
        cmocka_unit_test(test_stickbreaking_long),
        cmocka_unit_test(test_pope),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_path_blocks_grad),
        cmocka_unit_test(test_rope_string),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
