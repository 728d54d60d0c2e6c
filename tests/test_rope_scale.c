/* RoPE's scaling types against Hugging Face's formulas
 * (modeling_rope_utils.py): the effective frequencies and attention factor
 * that rope exports, against values computed independently (numpy, from
 * HF's code) and, where ../shared is present, against the inv_freq and
 * attention_scaling HF used in golden_llama's llama_yarn and llama_linear;
 * and the rotation a call applies past the original length (dynamic,
 * longrope), p-RoPE and the two partial rotations (neox, proportional),
 * and the option errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/pe.h"
#include "posemb/safetensors.h"
#include "testutil.h"
#include "pe/pe_internal.h"
#include "formats/safetensors_internal.h"
#include "core/arena_internal.h"

static posemb_pe *make(const char *spec, int D, int H, int max_len) { return tu_pe(spec, D, H, 1, max_len, 0); }

/* The exported frequencies (and attention factor) of spec at length n. */
static void freqs_of(const char *spec, int D, int max_len, int n, float *w, int nw, float *attn)
{
    posemb_pe *p = make(spec, D, 1, max_len);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_export ex;
    posemb_error err;
    if (posemb_pe_export_matrices(p, n, &a, &ex, &err)) fail_msg("export: %s", err.msg);
    int found = 0;
    for (int i = 0; i < ex.n; i++) {
        if (!strcmp(ex.items[i].name, "rope_frequencies")) {
            assert_int_equal(ex.items[i].rows, nw);
            memcpy(w, ex.items[i].data, (size_t)nw * sizeof *w);
            found |= 1;
        }
        if (!strcmp(ex.items[i].name, "attention_factor")) {
            *attn = ex.items[i].data[0];
            found |= 2;
        }
    }
    assert_int_equal(found, 3);
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

static void check_freqs(const char *what, const float *got, const double *want, int n)
{
    for (int m = 0; m < n; m++) TU_CLOSE(got[m], want[m], 0, 1e-6, what, m);
}

/* YaRN, head width 16, factor 4, L0 32 (llama_yarn's configuration). */
static void test_yarn(void **state)
{
    static const double want[8] = {1.0,    0.19764235376052372,  0.025,   0.007905694150420948,
                                   0.0025, 0.000790569415042095, 0.00025, 7.905694150420948e-05};
    float w[8], attn = 0;
    freqs_of("rope:scaling=yarn,factor=4,original=32", 16, 128, 48, w, 8, &attn);
    check_freqs("yarn w", w, want, 8);
    TU_CLOSE(attn, 0.1 * log(4.0) + 1.0, 1e-7, 0, "yarn attention factor", 0);
    /* truncate=off keeps the correction range unrounded: [0, 1.414] */
    static const double loose[8] = {1.0,    0.14849024701094485,  0.025,   0.007905694150420948,
                                    0.0025, 0.000790569415042095, 0.00025, 7.905694150420948e-05};
    freqs_of("rope:scaling=yarn,factor=4,original=32,truncate=off", 16, 128, 48, w, 8, &attn);
    check_freqs("yarn w, truncate=off", w, loose, 8);
    /* DeepSeek's mscale rule: get_mscale(s, 0.707) / get_mscale(s, 1) */
    freqs_of("rope:scaling=yarn,factor=4,original=32,mscale=0.707,mscale_all_dim=1", 16, 128, 48, w, 8, &attn);
    TU_CLOSE(attn, 0.964326914892074, 1e-7, 0, "yarn mscale attention factor", 0);
    freqs_of("rope:scaling=yarn,factor=4,original=32,attention_factor=1.5", 16, 128, 48, w, 8, &attn);
    TU_CLOSE(attn, 1.5, 0, 0, "yarn given attention factor", 0);
}

/* Llama 3.1's configuration (head width 128, base 5e5, factor 8, 1 / 4,
 * L0 8192): kept, blended and divided frequencies. */
static void test_llama3(void **state)
{
    static const struct {
        int m;
        double w;
    } want[] = {{0, 1.0},
                {20, 0.016560440080994443},
                {29, 0.002166570763503359},
                {31, 0.0008567514129196321},
                {34, 0.0001785078127679964},
                {40, 3.428102195952591e-05},
                {63, 3.068925988914511e-07}};
    float w[64], attn = 0;
    freqs_of("rope:base=500000,scaling=llama3,factor=8,original=8192,low_freq_factor=1,high_freq_factor=4", 128, 16, 16,
             w, 64, &attn);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) TU_CLOSE(w[want[i].m], want[i].w, 0, 1e-6, "llama3 w", i);
    TU_CLOSE(attn, 1.0, 0, 0, "llama3 attention factor", 0);
}

/* Dynamic NTK: the plain frequencies up to L0, base (s L / L0 - (s - 1))^(d/(d-2)) past it. */
static void test_dynamic(void **state)
{
    static const double at64[8] = {1.0,
                                   0.2702961256924036,
                                   0.07305999556432365,
                                   0.019747833744140873,
                                   0.00533776295185899,
                                   0.001442776645751933,
                                   0.000389976937586229,
                                   0.00010540925533894598};
    double plain[8];
    for (int m = 0; m < 8; m++) plain[m] = pow(10000.0, -2.0 * m / 16);
    float w[8], attn = 0;
    freqs_of("rope:scaling=dynamic,factor=2,original=32", 16, 128, 32, w, 8, &attn);
    check_freqs("dynamic w at L0", w, plain, 8);
    freqs_of("rope:scaling=dynamic,factor=2,original=32", 16, 128, 64, w, 8, &attn);
    check_freqs("dynamic w at 2 L0", w, at64, 8);
}

/* A call whose largest position is 63 rotates with the frequencies of
 * length 64: a unit pair at position 63 becomes (cos, sin) of 63 w'_m,
 * times the attention factor. */
static void rotation_at(const char *spec, const double *w, double attn)
{
    enum { d = 16 };
    posemb_pe *p = make(spec, d, 1, 128);
    float q[d], k[d];
    int32_t qp[1] = {63}, kp[1] = {0};
    for (int c = 0; c < d; c++) q[c] = k[c] = c < d / 2 ? 1.0f : 0.0f;
    posemb_pe_head h = {.nq = 1, .nk = 1, .d = d, .scale = 1.0f, .qpos = qp, .kpos = kp};
    posemb_pe_qk_forward(p, &h, q, d, k, d);
    for (int m = 0; m < d / 2; m++) {
        TU_CLOSE(q[m], attn * cos(63 * w[m]), 1e-6, 0, spec, m);
        TU_CLOSE(q[m + d / 2], attn * sin(63 * w[m]), 1e-6, 0, spec, m);
        TU_CLOSE(k[m], attn, 1e-6, 0, spec, m); /* position 0: no rotation, only the factor */
    }
    /* the backward rotation is the transpose: back to the scaled unit pairs */
    float qt[d], kt[d]; /* the rotated rows, as attention keeps them */
    memcpy(qt, q, sizeof qt);
    memcpy(kt, k, sizeof kt);
    posemb_pe_qk_backward(p, &h, qt, d, kt, d, q, d, k, d);
    for (int m = 0; m < d / 2; m++) TU_CLOSE(q[m], attn * attn, 1e-6, 1e-6, spec, m);
    posemb_pe_free(p);
}

static void test_dynamic_rotation(void **state)
{
    double w[8];
    for (int m = 0; m < 8; m++) w[m] = pow(10000.0 * pow(2.0 * 64 / 32 - 1, 16.0 / 14), -2.0 * m / 16);
    rotation_at("rope:scaling=dynamic,factor=2,original=32", w, 1.0);
}

/* LongRoPE: w_m / short_factor_m up to L0, / long_factor_m past it; cos
 * and sin times sqrt(1 + ln s / ln L0). */
static void test_longrope(void **state)
{
    char *dir = tu_tmpdir(), path[512], spec[640];
    snprintf(path, sizeof path, "%s/f.json", dir);
    const char *json = "{\"rope_scaling\": {\"short_factor\": [1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5], "
                       "\"long_factor\": [1, 2, 4, 8, 16, 32, 64, 128]}}";
    assert_int_equal(tu_write_file(path, json, strlen(json)), 0);
    snprintf(spec, sizeof spec, "rope:scaling=longrope,factor=4,original=32,factors=%s", path);
    double s_want[8], l_want[8], attn = sqrt(1 + log(4.0) / log(32.0));
    for (int m = 0; m < 8; m++) {
        s_want[m] = pow(10000.0, -2.0 * m / 16) / (1 + 0.5 * m);
        l_want[m] = pow(10000.0, -2.0 * m / 16) / pow(2.0, m);
    }
    float w[8], a = 0;
    freqs_of(spec, 16, 128, 32, w, 8, &a);
    check_freqs("longrope short", w, s_want, 8);
    TU_CLOSE(a, attn, 1e-7, 0, "longrope attention factor", 0);
    freqs_of(spec, 16, 128, 64, w, 8, &a);
    check_freqs("longrope long", w, l_want, 8);
    rotation_at(spec, l_want, attn);
    /* a list of the wrong length is refused with the file's name */
    const char *bad = "{\"short_factor\": [1, 2], \"long_factor\": [1, 2]}";
    assert_int_equal(tu_write_file(path, bad, strlen(bad)), 0);
    posemb_pe_dims dims = {.dim = 16, .n_heads = 1, .n_layers = 1, .max_len = 64};
    posemb_pe *p;
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, spec, &dims, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "f.json: short_factor must be a list of 8 numbers"));
    tu_rmtree(dir);
    free(dir);
}

/* p-RoPE: the fraction p of highest frequencies rotates, the rest are 0. */
static void test_p_rope(void **state)
{
    float w[8], attn = 0;
    freqs_of("rope:p=0.5", 16, 32, 16, w, 8, &attn);
    for (int m = 0; m < 8; m++) TU_CLOSE(w[m], m < 4 ? pow(10000.0, -2.0 * m / 16) : 0.0, 0, 1e-6, "p-rope w", m);
    freqs_of("rope:p=0", 16, 32, 16, w, 8, &attn);
    for (int m = 0; m < 8; m++) TU_CLOSE(w[m], 0.0, 0, 0, "p=0 w", m);
}

/* q <- the query head 1 + c/8 (c = 0..15) at position x rotated by spec. */
static void rotate_ones(const char *spec, int x, float *q)
{
    enum { d = 16 };
    posemb_pe *p = make(spec, d, 1, 64);
    float k[d];
    int32_t qp[1] = {x}, kp[1] = {0};
    for (int c = 0; c < d; c++) q[c] = k[c] = 1.0f + 0.125f * c;
    posemb_pe_head h = {.nq = 1, .nk = 1, .d = d, .scale = 1.0f, .qpos = qp, .kpos = kp};
    posemb_pe_qk_forward(p, &h, q, d, k, d);
    posemb_pe_free(p);
}

/* Pair (a, b) of a row of ones + 0.125 c rotated by angle t. */
static void check_pair(const char *what, const float *q, int a, int b, double t)
{
    double xa = 1.0 + 0.125 * a, xb = 1.0 + 0.125 * b;
    TU_CLOSE(q[a], xa * cos(t) - xb * sin(t), 1e-6, 1e-6, what, a);
    TU_CLOSE(q[b], xa * sin(t) + xb * cos(t), 1e-6, 1e-6, what, b);
}

/* The three ways to rotate part of a head of d = 16, in closed form at
 * position 7. neox, frac=0.5 (GPT-NeoX's rotary_pct): dims 0..7 rotate,
 * pairs (m, m + 4), w_m = base^(-2m/8); dims 8..15 stay. proportional,
 * frac=0.25 (HF's _compute_proportional_rope_parameters): pairs (m, m + 8)
 * over the whole head, w_m = base^(-2m/16) for m < int(0.25 * 16 // 2) = 2,
 * 0 after. p-RoPE p=0.45 (Barbero et al.'s apply_p_rope): int(0.45 * 16 //
 * 2) = 3 pairs keep base^(-2m/16), so it is proportional with frac=0.45, and
 * it floors (3.6 -> 3) as int() does. */
static void test_partial_conventions(void **state)
{
    enum { d = 16, x = 7 };
    float q[d], r[d];
    rotate_ones("rope:frac=0.5", x, q);
    for (int m = 0; m < 4; m++) check_pair("neox", q, m, m + 4, x * pow(10000.0, -2.0 * m / 8));
    for (int c = 8; c < d; c++) TU_CLOSE(q[c], 1.0 + 0.125 * c, 0, 0, "neox pass", c);
    rotate_ones("rope:frac=0.25,partial=proportional", x, q);
    for (int m = 0; m < 8; m++) check_pair("proportional", q, m, m + 8, m < 2 ? x * pow(10000.0, -2.0 * m / 16) : 0.0);
    rotate_ones("rope:p=0.45", x, q);
    for (int m = 0; m < 8; m++) check_pair("p-rope", q, m, m + 8, m < 3 ? x * pow(10000.0, -2.0 * m / 16) : 0.0);
    rotate_ones("rope:frac=0.45,partial=proportional", x, r);
    for (int c = 0; c < d; c++) TU_CLOSE(r[c], q[c], 0, 0, "p=P is proportional frac=P", c);
    /* interleaved pairs (GPT-J's rotary_dim) take the same block: (2m, 2m+1) of the first 8 */
    rotate_ones("rope:frac=0.5,pairing=interleaved", x, q);
    for (int m = 0; m < 4; m++) check_pair("interleaved", q, 2 * m, 2 * m + 1, x * pow(10000.0, -2.0 * m / 8));
    for (int c = 8; c < d; c++) TU_CLOSE(q[c], 1.0 + 0.125 * c, 0, 0, "interleaved pass", c);
}

/* Against what Hugging Face used (../shared/golden_llama): inv_freq and attention_scaling. */
static void golden_case(const char *name, const char *spec)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/golden_llama/%s/expected.safetensors", POSEMB_SHARED, name);
    posemb_st_file f;
    posemb_error err;
    if (posemb_st_open(&f, path, &err)) fail_msg("%s", err.msg);
    float w[8], attn = 0, want[8], want_attn = 0;
    freqs_of(spec, 16, 128, 48, w, 8, &attn);
    int64_t n8[1] = {8};
    const posemb_st_entry *e = posemb_st_find(&f, "rope.attention_scaling");
    assert_int_equal(posemb_st_load_f32(&f, "rope.inv_freq", 1, n8, want, &err), POSEMB_OK);
    assert_non_null(e);
    assert_int_equal(posemb_st_read_f32(&f, e, &want_attn, &err), POSEMB_OK);
    for (int m = 0; m < 8; m++) TU_CLOSE(w[m], want[m], 0, 1e-6, name, m);
    TU_CLOSE(attn, want_attn, 0, 1e-6, name, 0);
    printf("%s: 8 frequencies within 1e-6 of HF's inv_freq, attention factor %.7f (HF %.7f)\n", name, attn, want_attn);
    posemb_st_close(&f);
}

static void test_golden_llama(void **state)
{
    if (!tu_have_shared("golden_llama")) skip();
    golden_case("llama_yarn", "rope:scaling=yarn,factor=4,original=32");
    golden_case("llama_linear", "rope:scaling=linear,factor=4");
}

/* xPos: after the rotation, q.k of unit pairs at positions i (query) and j
 * (key) is sum_m zeta_m^((i - j)/gamma) cos(w_m (i - j)), zeta_m =
 * (2m + 0.4 d)/(1.4 d), whatever the call's centre; an encoder is refused. */
static void test_xpos(void **state)
{
    enum { d = 16 };
    posemb_pe *p = tu_pe("xpos:scale_base=32", d, 1, 1, 64, 1);
    const int cases[][3] = {{9, 2, 10}, {40, 31, 41}, {5, 5, 6}, {63, 0, 64}}; /* i, j, call length */
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int i = cases[c][0], j = cases[c][1], L = cases[c][2];
        int32_t qp[2] = {i, L - 1}, kp[2] = {j, 0}; /* a second row fixes the call's length */
        float q[2 * d] = {0}, k[2 * d] = {0};
        for (int m = 0; m < d / 2; m++) q[m] = k[m] = 1.0f;
        posemb_pe_head h = {.nq = 2, .nk = 2, .d = d, .scale = 1.0f, .qpos = qp, .kpos = kp};
        posemb_pe_qk_forward(p, &h, q, d, k, d);
        double dot = 0, want = 0;
        for (int e = 0; e < d; e++) dot += q[e] * k[e];
        for (int m = 0; m < d / 2; m++)
            want += pow((2.0 * m + 0.4 * d) / (1.4 * d), (i - j) / 32.0) * cos(pow(10000.0, -2.0 * m / d) * (i - j));
        TU_CLOSE(dot, want, 1e-5, 1e-5, "xpos q.k", (long)c);
    }
    posemb_pe_free(p);
    posemb_pe_dims dims = {.dim = 16, .n_heads = 1, .n_layers = 1, .max_len = 32};
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, "xpos", &dims, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "xpos is defined for decoders"));
}

static void bad(const char *spec, const char *expect)
{
    posemb_pe_dims dims = {.dim = 16, .n_heads = 1, .n_layers = 1, .max_len = 32};
    posemb_pe *p;
    posemb_error err;
    assert_int_equal(posemb_pe_create(&p, spec, &dims, &err), POSEMB_EINVAL);
    if (!strstr(err.msg, expect)) fail_msg("%s: '%s' does not say '%s'", spec, err.msg, expect);
}

static void test_errors(void **state)
{
    bad("rope:scaling=linear,beta_fast=8", "beta_fast needs scaling=yarn");
    bad("rope:scaling=yarn,factor=4,low_freq_factor=2", "low_freq_factor needs scaling=llama3");
    bad("rope:scaling=ntk,factor=2,original=16", "original needs scaling=dynamic");
    bad("rope:attention_factor=2", "attention_factor needs scaling=yarn or longrope");
    bad("rope:scaling=longrope,factor=4", "needs factors=FILE.json");
    bad("rope:scaling=yarn,factor=4,beta_fast=1,beta_slow=2", "beta_fast=1 must be >= beta_slow=2");
    bad("rope:scaling=llama3,factor=8,low_freq_factor=4,high_freq_factor=1", "must exceed low_freq_factor");
    bad("rope:p=1.5", "outside");
    bad("rope:scaling=dynamic,factor=2,frac=0.2", "need >= 4");
    bad("rope:partial=proportional,frac=0.5,p=0.5", "p= and partial=proportional both pick");
    bad("rope:partial=block", "partial");
}

/* The canonical spec keeps what was given, and reads back to itself. */
static void test_canonical(void **state)
{
    const char *cases[][2] = {
        {"rope:scaling=yarn,factor=4,original=32",
         "rope:base=10000,pairing=halves,frac=1,scaling=yarn,factor=4,original=32"},
        {"rope:scaling=llama3,factor=8,original=64,high_freq_factor=2",
         "rope:base=10000,pairing=halves,frac=1,scaling=llama3,factor=8,original=64,high_freq_factor=2"},
        {"rope:p=0.25", "rope:base=10000,pairing=halves,frac=1,scaling=none,p=0.25"},
        {"rope:partial=proportional,frac=0.25",
         "rope:base=10000,pairing=halves,frac=0.25,partial=proportional,scaling=none"},
        {"rope:partial=neox,frac=0.5", "rope:base=10000,pairing=halves,frac=0.5,scaling=none"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        posemb_pe *p = make(cases[i][0], 16, 1, 32);
        assert_string_equal(posemb_pe_spec(p), cases[i][1]);
        posemb_pe *q = make(posemb_pe_spec(p), 16, 1, 32);
        assert_string_equal(posemb_pe_spec(q), cases[i][1]);
        posemb_pe_free(q);
        posemb_pe_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yarn),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_dynamic),
        cmocka_unit_test(test_dynamic_rotation),
        cmocka_unit_test(test_longrope),
        cmocka_unit_test(test_p_rope),
        cmocka_unit_test(test_golden_llama),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_xpos),
        cmocka_unit_test(test_partial_conventions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
