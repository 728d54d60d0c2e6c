/* The vectorisable elementwise kernels against double-precision references:
 * exp within 3 ulp, erf within 5e-7, GELU (erf form) and its derivative
 * within a few float roundings, and the softmax of masked logits exactly 0;
 * the fused LayerNorm kernels and GELU's written backward bit for bit
 * against the calls they replace. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/vmath.h"
#include "posemb/nn.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "core/rng_internal.h"

static void test_expf(void **state)
{
    double worst = 0;
    for (double x = -87.0; x <= 88.0; x += 0.0013) {
        float f = (float)x;
        double ref = exp((double)f), rel = fabs(vm_expf(f) - ref) / ref;
        worst = fmax(worst, rel);
    }
    printf("vm_expf: worst relative error %.3g (float ulp 1.19e-7)\n", worst);
    assert_true(worst < 3 * FLT_EPSILON);
    assert_true(vm_expf(0.0f) == 1.0f);
    assert_true(vm_expf(-FLT_MAX) == 0.0f); /* a masked logit */
    assert_true(vm_expf(-1e30f) == 0.0f);
    assert_true(vm_expf(-100.0f) == 0.0f);
    assert_true(isfinite(vm_expf(1e30f)) && vm_expf(1e30f) > 1e38f);
    assert_true(isnan(vm_expf(NAN)) && isnan(vm_erf(NAN)) && isnan(vm_tanhf(NAN)));
}

/* log1p on its domain [0, 1], sampled: floats of [2^-126, 1] about 2^-10
 * apart (relative), so every binade; and 0, 1 and NaN. A sweep of every
 * float of [2^-30, 1] found 1.748e-7 at most (vmath.h). */
static void test_log1pf(void **state)
{
    double worst = 0;
    for (float u = FLT_MIN; u <= 1.0f; u = nextafterf(u * 1.0009765625f, 2.0f)) {
        double ref = log1p((double)u), rel = fabs(vm_log1pf(u) - ref) / ref;
        worst = fmax(worst, rel);
    }
    printf("vm_log1pf: worst relative error %.3g on [2^-126, 1]\n", worst);
    assert_true(worst < 1.75e-7);
    assert_true(vm_log1pf(0.0f) == 0.0f);
    assert_true(fabs(vm_log1pf(1.0f) - log(2.0)) < 1e-7);
    assert_true(vm_log1pf(1e-30f) == 1e-30f);
    assert_true(isnan(vm_log1pf(NAN)));
}

static void test_erf(void **state)
{
    double worst = 0;
    for (double z = -9.0; z <= 9.0; z += 0.0007) worst = fmax(worst, fabs(vm_erf((float)z) - erf((double)(float)z)));
    printf("vm_erf: worst absolute error %.3g\n", worst);
    assert_true(worst <
                5e-7); /* A&S 7.1.26 bounds 1.5e-7; float rounding of its alternating polynomial adds the rest */
    assert_true(vm_erf(0.0f) < 1e-7f && vm_erf(0.0f) > -1e-7f);
    assert_true(vm_erf(-20.0f) == -1.0f && vm_erf(20.0f) == 1.0f);
}

/* GELU(x) = x Phi(x) and its derivative Phi(x) + x phi(x), against double. */
static void test_gelu(void **state)
{
    enum { N = 40001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dx = calloc(N, sizeof *dx),
          *dy = malloc(N * sizeof *dy);
    for (int i = 0; i < N; i++) {
        x[i] = -12.0f + 24.0f * i / (N - 1);
        dy[i] = 1.0f;
    }
    posemb_nn_gelu_forward(y, x, N, POSEMB_NN_GELU_ERF);
    posemb_nn_gelu_backward(dx, dy, x, N, POSEMB_NN_GELU_ERF);
    double wy = 0, wd = 0;
    for (int i = 0; i < N; i++) {
        double v = x[i], cdf = 0.5 * (1 + erf(v / sqrt(2))), pdf = exp(-0.5 * v * v) / sqrt(2 * 3.14159265358979323846);
        wy = fmax(wy, fabs(y[i] - v * cdf) / fmax(1.0, fabs(v)));
        wd = fmax(wd, fabs(dx[i] - (cdf + v * pdf)));
    }
    printf("GELU: worst error %.3g (relative to max(1, |x|)), derivative %.3g\n", wy, wd);
    assert_true(wy < 3e-7);
    assert_true(wd < 5e-7);
    free(x);
    free(y);
    free(dx);
    free(dy);
}

/* tanh, and GPT-2's GELU 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with its derivative. */
static void test_tanh_gelu(void **state)
{
    double worst = 0;
    for (double u = -12.0; u <= 12.0; u += 0.0007)
        worst = fmax(worst, fabs(vm_tanhf((float)u) - tanh((double)(float)u)));
    printf("vm_tanhf: worst absolute error %.3g\n", worst);
    assert_true(worst < 2.5e-7);
    assert_true(vm_tanhf(100.0f) == 1.0f && vm_tanhf(-100.0f) == -1.0f);
    enum { N = 40001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dx = calloc(N, sizeof *dx),
          *dy = malloc(N * sizeof *dy);
    for (int i = 0; i < N; i++) {
        x[i] = -12.0f + 24.0f * i / (N - 1);
        dy[i] = 1.0f;
    }
    posemb_nn_gelu_forward(y, x, N, POSEMB_NN_GELU_TANH);
    posemb_nn_gelu_backward(dx, dy, x, N, POSEMB_NN_GELU_TANH);
    double wy = 0, wd = 0, c = sqrt(2 / 3.14159265358979323846);
    for (int i = 0; i < N; i++) {
        double v = x[i], u = c * (v + 0.044715 * v * v * v), th = tanh(u);
        double d = 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * c * (1 + 3 * 0.044715 * v * v);
        wy = fmax(wy, fabs(y[i] - 0.5 * v * (1 + th)) / fmax(1.0, fabs(v)));
        wd = fmax(wd, fabs(dx[i] - d) / fmax(1.0, fabs(v)));
    }
    printf("tanh GELU: worst error %.3g, derivative %.3g (relative to max(1, |x|))\n", wy, wd);
    assert_true(wy < 3e-7);
    assert_true(wd < 1e-6);
    free(x);
    free(y);
    free(dx);
    free(dy);
}

/* Cross-entropy of one row: the loss and gradient against double. */
static void test_xent(void **state)
{
    enum { V = 1000 };
    float z[V];
    double mx = -1e300, sum = 0;
    for (int v = 0; v < V; v++) {
        z[v] = (float)(8 * sin(0.37 * v) + 0.01 * v);
        mx = fmax(mx, z[v]);
    }
    for (int v = 0; v < V; v++) sum += exp(z[v] - mx);
    double ref = mx + log(sum) - z[17];
    float g[V];
    for (int v = 0; v < V; v++) g[v] = z[v];
    int32_t target = 17;
    double loss = posemb_nn_xent(g, 1, V, &target, 1.0f, NULL);
    TU_CLOSE(loss, ref, 1e-6, 1e-6, "loss", 0);
    for (int v = 0; v < V; v++) TU_CLOSE(g[v], exp(z[v] - mx) / sum - (v == 17), 1e-7, 1e-5, "gradient", v);
}

/* RMSNorm against its formula in double, and both passes of RMSNorm and
 * SwiGLU against central differences of loss = sum(y * r), in double. */
enum { RN = 3, RC = 24 };

static double rms_loss(const float *x, const float *w, const float *r, float *y)
{
    float rstd[RN];
    posemb_nn_rmsnorm_forward(y, NULL, rstd, x, w, RN, RC, 1e-6f);
    double l = 0;
    for (int i = 0; i < RN * RC; i++) l += (double)y[i] * r[i];
    return l;
}

static double swiglu_loss(const float *gu, const float *r, float *y)
{
    posemb_nn_swiglu_forward(y, NULL, gu, RN, RC);
    double l = 0;
    for (int i = 0; i < RN * RC; i++) l += (double)y[i] * r[i];
    return l;
}

static double central(float *v, int i, double (*f)(void *), void *ctx)
{
    float keep = v[i], h = 1e-2f;
    v[i] = keep + h;
    double up = f(ctx);
    v[i] = keep - h;
    double down = f(ctx);
    v[i] = keep;
    return (up - down) / ((double)(keep + h) - (double)(keep - h));
}

typedef struct fd_ctx {
    float x[RN * 2 * RC], w[RC], r[RN * RC], y[RN * RC];
} fd_ctx;

static double rms_of(void *c)
{
    fd_ctx *k = c;
    return rms_loss(k->x, k->w, k->r, k->y);
}

static double swiglu_of(void *c)
{
    fd_ctx *k = c;
    return swiglu_loss(k->x, k->r, k->y);
}

static void test_rmsnorm_swiglu(void **state)
{
    fd_ctx k;
    posemb_rng rng;
    posemb_rng_seed(&rng, 8, 1);
    posemb_rng_fill_normal(&rng, k.x, RN * 2 * RC, 1.0f);
    posemb_rng_fill_normal(&rng, k.w, RC, 1.0f);
    posemb_rng_fill_normal(&rng, k.r, RN * RC, 1.0f);
    float rstd[RN], dx[RN * 2 * RC] = {0}, dw[RC] = {0};
    posemb_nn_rmsnorm_forward(k.y, NULL, rstd, k.x, k.w, RN, RC, 1e-6f);
    for (int t = 0; t < RN; t++) {
        double ms = 0;
        for (int i = 0; i < RC; i++) ms += (double)k.x[t * RC + i] * k.x[t * RC + i];
        double s = 1 / sqrt(ms / RC + 1e-6);
        for (int i = 0; i < RC; i++) TU_CLOSE(k.y[t * RC + i], k.w[i] * k.x[t * RC + i] * s, 1e-6, 1e-6, "rmsnorm", i);
    }
    posemb_nn_rmsnorm_backward(dx, dw, k.r, k.x, k.w, rstd, RN, RC);
    for (int i = 0; i < RN * RC; i++) TU_CLOSE(dx[i], central(k.x, i, rms_of, &k), 2e-3, 1e-2, "rmsnorm dx", i);
    for (int i = 0; i < RC; i++) TU_CLOSE(dw[i], central(k.w, i, rms_of, &k), 2e-3, 1e-2, "rmsnorm dw", i);
    float dgu[RN * 2 * RC];
    swiglu_loss(k.x, k.r, k.y);
    for (int t = 0; t < RN; t++)
        for (int i = 0; i < RC; i++) {
            double g = k.x[t * 2 * RC + i], u = k.x[t * 2 * RC + RC + i];
            TU_CLOSE(k.y[t * RC + i], g / (1 + exp(-g)) * u, 1e-6, 1e-6, "swiglu", i);
        }
    posemb_nn_swiglu_backward(dgu, k.r, k.x, RN, RC);
    for (int i = 0; i < RN * 2 * RC; i++) TU_CLOSE(dgu[i], central(k.x, i, swiglu_of, &k), 2e-3, 1e-2, "swiglu d", i);
}

/* The fused LayerNorm kernels give the bits of the calls they replace: the
 * residual add then posemb_nn_layernorm_forward; zeroing, the accumulating
 * backward, and a copy for the residual's other branch. */
static void test_fused_layernorm(void **state)
{
    enum { N = 9, C = 37 };
    static float r[2][N * C], x[N * C], w[C], b[C], y[2][N * C], mean[2][N], rstd[2][N], dy[N * C];
    static float dx[2][N * C], dx2[N * C], dw[2][C], db[2][C];
    posemb_rng g;
    posemb_rng_seed(&g, 3, 3);
    posemb_rng_fill_normal(&g, r[0], N * C, 1.0f);
    posemb_rng_fill_normal(&g, x, N * C, 1.0f);
    posemb_rng_fill_normal(&g, w, C, 0.2f);
    posemb_rng_fill_normal(&g, b, C, 0.2f);
    posemb_rng_fill_normal(&g, dy, N * C, 1.0f);
    for (int i = 0; i < C; i++) w[i] += 1.0f;
    memcpy(r[1], r[0], sizeof r[0]);
    posemb_nn_add(r[0], r[0], x, N * C);
    posemb_nn_layernorm_forward(y[0], mean[0], rstd[0], r[0], w, b, N, C, 1e-12f);
    posemb_nn_add_layernorm_forward(y[1], NULL, mean[1], rstd[1], r[1], x, w, b, N, C, 1e-12f);
    assert_memory_equal(r[0], r[1], sizeof r[0]);
    assert_memory_equal(y[0], y[1], sizeof y[0]);
    assert_memory_equal(mean[0], mean[1], sizeof mean[0]);
    assert_memory_equal(rstd[0], rstd[1], sizeof rstd[0]);
    memset(dx, 0, sizeof dx);
    memset(dw, 0, sizeof dw);
    memset(db, 0, sizeof db);
    posemb_nn_layernorm_backward(dx[0], dw[0], db[0], dy, r[0], w, mean[0], rstd[0], N, C);
    for (int i = 0; i < N * C; i++) dx[1][i] = dx2[i] = NAN; /* written, not added to */
    posemb_nn_layernorm_backward_set(dx[1], dx2, dw[1], db[1], dy, r[0], w, mean[0], rstd[0], N, C);
    assert_memory_equal(dx[0], dx[1], sizeof dx[0]);
    assert_memory_equal(dx[0], dx2, sizeof dx2);
    assert_memory_equal(dw[0], dw[1], sizeof dw[0]);
    assert_memory_equal(db[0], db[1], sizeof db[0]);
    double worst = 0; /* and it is the gradient: sum_i dy_i d y_i / d r_0 by central differences in double */
    for (int t = 0; t < N; t++) {
        double h = 1e-3, fd = 0;
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            double v[C], m = 0, var = 0, rr = r[0][t * C] + sgn * h;
            for (int i = 0; i < C; i++) m += (v[i] = i ? r[0][t * C + i] : rr) / C;
            for (int i = 0; i < C; i++) var += (v[i] - m) * (v[i] - m) / C;
            for (int i = 0; i < C; i++) fd += sgn * dy[t * C + i] * ((v[i] - m) / sqrt(var + 1e-12) * w[i]) / (2 * h);
        }
        worst = fmax(worst, fabs(fd - dx[1][t * C]));
    }
    printf("fused LayerNorm: the same bits as unfused; dx against central differences within %.2g\n", worst);
    assert_true(worst < 1e-3);
}

/* GELU's written backward, in place too, gives the bits of zeroing and the accumulating one (both forms). */
static void test_gelu_backward_set(void **state)
{
    enum { N = 1001 };
    static float x[N], dy[N], acc[N], set[N];
    posemb_rng g;
    posemb_rng_seed(&g, 4, 4);
    posemb_rng_fill_normal(&g, x, N, 3.0f);
    posemb_rng_fill_normal(&g, dy, N, 1.0f);
    for (int kind = 0; kind < 2; kind++) {
        memset(acc, 0, sizeof acc);
        posemb_nn_gelu_backward(acc, dy, x, N, (posemb_nn_gelu_kind)kind);
        posemb_nn_gelu_backward_set(set, dy, x, N, (posemb_nn_gelu_kind)kind);
        assert_memory_equal(acc, set, sizeof acc);
        memcpy(set, dy, sizeof set);
        posemb_nn_gelu_backward_set(set, set, x, N, (posemb_nn_gelu_kind)kind);
        assert_memory_equal(acc, set, sizeof acc);
    }
}

/* SwiGLU far out: silu(g) -> 0 below -88 (vm_expf stops at exp(88), which
 * gave -2 at -FLT_MAX), its gradients too; NaN stays NaN. */
static void test_swiglu_extremes(void **state)
{
    (void)state;
    enum { I = 6 };
    float gu[2 * I] = {-FLT_MAX, -1e30f, -200.0f, -88.5f, 80.0f, NAN, 1, 1, 1, 1, 1, 1}, y[I], dgu[2 * I];
    float dy[I] = {1, 1, 1, 1, 1, 1};
    posemb_nn_swiglu_forward(y, NULL, gu, 1, I);
    posemb_nn_swiglu_backward(dgu, dy, gu, 1, I);
    for (int i = 0; i < 4; i++) {
        assert_true(y[i] == 0.0f);
        assert_true(dgu[i] == 0.0f && dgu[I + i] == 0.0f);
    }
    assert_float_equal(y[4], 80.0f, 1e-5);
    assert_true(isnan(y[5]) && isnan(dgu[5]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expf),
        cmocka_unit_test(test_log1pf),
        cmocka_unit_test(test_erf),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_tanh_gelu),
        cmocka_unit_test(test_xent),
        cmocka_unit_test(test_rmsnorm_swiglu),
        cmocka_unit_test(test_swiglu_extremes),
        cmocka_unit_test(test_fused_layernorm),
        cmocka_unit_test(test_gelu_backward_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
