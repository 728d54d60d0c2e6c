/* Analysis: probes against closed forms and independent computations, the
 * first-layer matrices against a hand computation, sources and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/analyze.h"
#include "posemb/probes.h"
#include "posemb/rng.h"
#include "posemb/safetensors.h"
#include "testutil.h"
#include "core/rng_internal.h"

/* A table linear in position is read back exactly, by both protocols. */
static void test_regress_linear_table(void **state)
{
    enum { n = 300, dim = 6 };
    static float P[n * dim];
    for (int x = 0; x < n; x++)
        for (int d = 0; d < dim; d++)
            P[x * dim + d] = d == 0 ? 0.01f * x + 0.3f : d == 1 ? 2.0f - 0.02f * x : sinf((float)d);
    posemb_regress r;
    posemb_error err;
    assert_int_equal(posemb_regress_seed(P, n, dim, 0.0, &r, &err), POSEMB_OK);
    for (int x = 0; x < n; x++) TU_CLOSE(r.pred[x], x, 1e-3, 0, "prediction", x);
    assert_true(r.mae_all < 1e-3);
    assert_int_equal(r.n_ranges, 3);
    assert_int_equal(r.ranges[2][0], 256);
    assert_int_equal(r.ranges[2][1], 299);
    free(r.pred);
    double mae;
    assert_int_equal(posemb_regress_cv(P, n, dim, 5, 1, 0.0, &mae, &err), POSEMB_OK);
    assert_true(mae == 0.0);
}

/* Solves A x = b (k x k, symmetric positive definite) by Gaussian elimination. */
static void solve(double *A, double *b, int k)
{
    for (int c = 0; c < k; c++)
        for (int r = c + 1; r < k; r++) {
            double f = A[r * k + c] / A[c * k + c];
            for (int j = c; j < k; j++) A[r * k + j] -= f * A[c * k + j];
            b[r] -= f * b[c];
        }
    for (int c = k - 1; c >= 0; c--) {
        for (int j = c + 1; j < k; j++) b[c] -= A[c * k + j] * b[j];
        b[c] /= A[c * k + c];
    }
}

/* On random data with more rows than columns, the fit equals the normal
 * equations' solution [X 1]^T [X 1] w = [X 1]^T y, solved here independently. */
static void test_regress_normal_equations(void **state)
{
    enum { n = 200, dim = 8, k = dim + 1 };
    static float P[n * dim];
    posemb_rng r;
    posemb_rng_seed(&r, 4, 4);
    posemb_rng_fill_normal(&r, P, n * dim, 1.0f);
    double A[k * k] = {0}, b[k] = {0};
    for (int x = 0; x < n; x += 2) /* the seed protocol fits on even positions */
        for (int i = 0; i < k; i++) {
            double xi = i < dim ? P[x * dim + i] : 1.0;
            b[i] += xi * x;
            for (int j = 0; j < k; j++) A[i * k + j] += xi * (j < dim ? P[x * dim + j] : 1.0);
        }
    solve(A, b, k);
    posemb_regress reg;
    posemb_error err;
    assert_int_equal(posemb_regress_seed(P, n, dim, 0.0, &reg, &err), POSEMB_OK);
    for (int x = 0; x < n; x++) {
        double want = b[dim];
        for (int d = 0; d < dim; d++) want += b[d] * P[x * dim + d];
        TU_CLOSE(reg.pred[x], want, 1e-3, 1e-5, "prediction vs normal equations", x);
    }
    free(reg.pred);
}

/* Order of two positions: separable from a table linear in position
 * (error 0), chance from random vectors (about 0.5). */
static void test_relative_order(void **state)
{
    enum { n = 128, dim = 16 };
    static float lin[n * dim], rnd[n * dim];
    posemb_rng r;
    posemb_rng_seed(&r, 6, 6);
    posemb_rng_fill_normal(&r, rnd, n * dim, 1.0f);
    for (int x = 0; x < n; x++)
        for (int d = 0; d < dim; d++) lin[x * dim + d] = d == 0 ? (float)x / n : rnd[x * dim + d] * 0.01f;
    double e_lin, e_rnd;
    posemb_error err;
    assert_int_equal(posemb_relative_order(lin, n, dim, 512, 5, 1, 1e-3, &e_lin, &err), POSEMB_OK);
    assert_int_equal(posemb_relative_order(rnd, n, dim, 512, 5, 1, 1.0, &e_rnd, &err), POSEMB_OK);
    printf("relative order error: %.3f on a linear table, %.3f on random vectors\n", e_lin, e_rnd);
    assert_true(e_lin < 0.02);
    assert_true(e_rnd > 0.35 && e_rnd < 0.65);
    /* wider than the sample count: the Woodbury path */
    static float wide[n * 600];
    for (int x = 0; x < n; x++)
        for (int d = 0; d < 600; d++)
            wide[x * 600 + d] = d == 0 ? (float)x / n : 0.001f * (float)((x * 31 + d * 17) % 13);
    assert_int_equal(posemb_relative_order(wide, n, 600, 300, 5, 2, 1e-3, &e_lin, &err), POSEMB_OK);
    assert_true(e_lin < 0.05);
}

/* The sinusoid at width 768: 339 dimensions move by more than half the
 * widest range over 128 positions, and psi falls up to m = 43 (both
 * computed in double from the formula when this test was written). */
static void test_dims_and_psi(void **state)
{
    posemb_source s;
    posemb_source_opts o = {.len = 128, .dim = 768, .heads = 12};
    posemb_error err;
    assert_int_equal(posemb_source_open(&s, "sin", &o, &err), POSEMB_OK);
    float range[768], psi[128];
    int moving, until;
    posemb_dim_ranges(s.ape, 128, 768, 0.5, range, &moving);
    assert_int_equal(moving, 339);
    assert_int_equal(s.n_freqs, 384);
    posemb_psi(s.freqs, s.n_freqs, 128, psi, &until);
    assert_int_equal(until, 43);
    TU_CLOSE(psi[0], 384, 1e-4, 0, "psi(0)", 0);
    posemb_source_close(&s);
}

/* A library caller that passes no error (NULL, as posemb/error.h allows) gets
 * the analysis of a PE with no fixed matrix, its reason in indicators.json. */
static void test_analyze_nothing_fixed_without_err(void **state)
{
    posemb_source s;
    posemb_source_opts o = {.len = 16, .dim = 32, .heads = 2, .causal = 1};
    assert_int_equal(posemb_source_open(&s, "stickbreaking", &o, NULL), POSEMB_OK);
    posemb_analyze_opts ao = posemb_analyze_defaults();
    ao.figures = ao.report = 0;
    ao.quiet = 1;
    char *dir = tu_tmpdir();
    posemb_analysis r;
    assert_int_equal(posemb_analyze(&s, &ao, dir, &r, NULL), POSEMB_OK);
    assert_false(r.has_bias);
    char path[1200];
    snprintf(path, sizeof path, "%s/indicators.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "\"nothing_fixed\""));
    assert_non_null(strstr(text, "data-dependent"));
    posemb_analysis_free(&r);
    posemb_source_close(&s);
    tu_rmtree(dir);
    free(dir);
}

static posemb_model *tiny(const char *spec, int layers)
{
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_BERT);
    c.vocab_size = 2;
    c.hidden = 4;
    c.heads = 2;
    c.layers = layers;
    c.intermediate = 8;
    c.max_position = 8;
    c.ln_eps = 1e-5f;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_model *m;
    posemb_error err;
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s", err.msg);
    posemb_model_init(m, 3);
    posemb_rng r;
    posemb_rng_seed(&r, 8, 8);
    posemb_rng_fill_normal(&r, posemb_model_weights(m), (long)posemb_model_n_floats(m), 0.7f);
    posemb_pe_prepare(posemb_model_pe(m));
    return m;
}

/* Identical-word logits equal the first layer computed by hand: h0 =
 * LN(WE[w] + TT[0] + P[x]), q = h0 Wq^T + bq, k likewise, A = q.k/sqrt(d)
 * averaged over heads; and the correlation P Wq_h Wk_h^T P^T. */
static void test_identical_words_by_hand(void **state)
{
    enum { n = 5, D = 4, H = 2, d = 2 };
    posemb_model *m = tiny("ape", 1);
    const float *w = posemb_model_weights(m);
    const float *we =
        w + posemb_model_find(m, "embeddings.word_embeddings.weight")->offset + D; /* word 1: the only non-pad */
    const float *tt = w + posemb_model_find(m, "embeddings.token_type_embeddings.weight")->offset;
    const float *P = w + posemb_model_find(m, "embeddings.position_embeddings.weight")->offset;
    const float *g = w + posemb_model_find(m, "embeddings.LayerNorm.weight")->offset,
                *be = w + posemb_model_find(m, "embeddings.LayerNorm.bias")->offset;
    const float *Wq = w + posemb_model_find(m, "encoder.layer.0.attention.self.query.weight")->offset;
    const float *bq = w + posemb_model_find(m, "encoder.layer.0.attention.self.query.bias")->offset;
    const float *Wk = w + posemb_model_find(m, "encoder.layer.0.attention.self.key.weight")->offset;
    const float *bk = w + posemb_model_find(m, "encoder.layer.0.attention.self.key.bias")->offset;
    double h0[n][D], q[n][D], k[n][D];
    for (int x = 0; x < n; x++) {
        double v[D], mu = 0, var = 0;
        for (int c = 0; c < D; c++) mu += (v[c] = we[c] + tt[c] + P[x * D + c]) / D;
        for (int c = 0; c < D; c++) var += (v[c] - mu) * (v[c] - mu) / D;
        for (int c = 0; c < D; c++) h0[x][c] = (v[c] - mu) / sqrt(var + 1e-5) * g[c] + be[c];
        for (int o = 0; o < D; o++) {
            q[x][o] = bq[o];
            k[x][o] = bk[o];
            for (int c = 0; c < D; c++) {
                q[x][o] += Wq[o * D + c] * h0[x][c];
                k[x][o] += Wk[o * D + c] * h0[x][c];
            }
        }
    }
    float mean[n * n], spread[n * n], soft[n * n], corr[n * n];
    posemb_error err;
    assert_int_equal(posemb_identical_words(m, n, 3, 1, mean, spread, soft, &err), POSEMB_OK);
    assert_int_equal(posemb_correlation(m, P, n, NULL, corr, &err), POSEMB_OK);
    for (int i = 0; i < n; i++) {
        double rowsum = 0;
        for (int j = 0; j < n; j++) {
            double a = 0, cr = 0;
            for (int h = 0; h < H; h++) {
                double s = 0, pq[d] = {0}, pk[d] = {0};
                for (int c = 0; c < d; c++) s += q[i][h * d + c] * k[j][h * d + c];
                a += s / sqrt((double)d) / H;
                for (int c = 0; c < d; c++)
                    for (int e = 0; e < D; e++) {
                        pq[c] += Wq[(h * d + c) * D + e] * P[i * D + e];
                        pk[c] += Wk[(h * d + c) * D + e] * P[j * D + e];
                    }
                for (int c = 0; c < d; c++) cr += pq[c] * pk[c] / H;
            }
            TU_CLOSE(mean[i * n + j], a, 1e-5, 1e-5, "identical-word logit", i * n + j);
            TU_CLOSE(spread[i * n + j], 0, 1e-4, 0, "spread (one word only)", i * n + j);
            TU_CLOSE(corr[i * n + j], cr, 1e-5, 1e-5, "correlation", i * n + j);
            rowsum += soft[i * n + j];
        }
        TU_CLOSE(rowsum, 1.0, 1e-5, 0, "softmax row sum", i);
    }
    posemb_model_free(m);
}

/* Without a PE the identical-word matrix is constant: the bag-of-words check. */
static void test_none_constant(void **state)
{
    posemb_model *m = tiny("none", 2);
    float mean[36];
    posemb_error err;
    assert_int_equal(posemb_identical_words(m, 6, 4, 2, mean, NULL, NULL, &err), POSEMB_OK);
    for (int k = 0; k < 36; k++) TU_CLOSE(mean[k], mean[0], 1e-5, 1e-5, "none", k);
    posemb_model_free(m);
    m = tiny("alibi", 1); /* control: a bias makes it vary */
    assert_int_equal(posemb_identical_words(m, 6, 4, 2, mean, NULL, NULL, &err), POSEMB_OK);
    assert_true(fabs(mean[1] - mean[5]) > 1e-2);
    posemb_model_free(m);
}

/* Sources: a model folder gives its table (RoBERTa from pad + 1 on); a
 * tensor must exist and be 2-D; bad input is one clear error. */
static void test_sources(void **state)
{
    char *dir = tu_tmpdir(), path[1200];
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_ROBERTA);
    c.vocab_size = 30;
    c.hidden = 8;
    c.heads = 2;
    c.layers = 1;
    c.intermediate = 16;
    c.max_position = 20;
    c.type_vocab = 1;
    posemb_model *m;
    posemb_error err;
    assert_int_equal(posemb_model_create(&m, &c, &err), POSEMB_OK);
    posemb_model_init(m, 5);
    snprintf(path, sizeof path, "%s/rob", dir);
    assert_int_equal(posemb_model_save(m, path, &err), POSEMB_OK);
    posemb_source s;
    assert_int_equal(posemb_source_open(&s, path, NULL, &err), POSEMB_OK);
    assert_int_equal(s.n, 18); /* 20 rows, positions from 2 */
    const float *table =
        posemb_model_weights(m) + posemb_model_find(m, "embeddings.position_embeddings.weight")->offset;
    assert_memory_equal(s.ape, table + 2 * 8, 18 * 8 * sizeof(float));
    assert_non_null(s.model);
    posemb_source_close(&s);
    snprintf(path, sizeof path, "%s/rob/model.safetensors", dir);
    posemb_source_opts o = {.tensor = "embeddings.position_embeddings.weight", .len = 10};
    assert_int_equal(posemb_source_open(&s, path, &o, &err), POSEMB_OK);
    assert_int_equal(s.n, 10);
    assert_int_equal(s.dim, 8);
    posemb_source_close(&s);
    struct {
        const char *tensor, *what, *needle;
    } bad[] = {
        {"embeddings.LayerNorm.bias", path, "with 1 dimensions"},
        {"nope", path, "no tensor 'nope'"},
        {NULL, path, "name the table with --tensor"},
        {NULL, "rpe:k=0", "rpe option k=0"},
    };
    for (int i = 0; i < 4; i++) {
        posemb_source_opts ob = {.tensor = bad[i].tensor};
        assert_int_not_equal(posemb_source_open(&s, bad[i].what, &ob, &err), POSEMB_OK);
        if (!strstr(err.msg, bad[i].needle)) fail_msg("%s: %s", bad[i].needle, err.msg);
    }
    posemb_source_opts one = {.len = 1, .dim = 16, .heads = 2};
    assert_int_equal(posemb_source_open(&s, "sin", &one, &err), POSEMB_EINVAL);
    float x[4];
    assert_int_equal(posemb_identical_words(m, 4, 0, 1, x, NULL, NULL, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "0 words"));
    posemb_model_free(m);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analyze_nothing_fixed_without_err),
        cmocka_unit_test(test_regress_linear_table),
        cmocka_unit_test(test_regress_normal_equations),
        cmocka_unit_test(test_relative_order),
        cmocka_unit_test(test_dims_and_psi),
        cmocka_unit_test(test_identical_words_by_hand),
        cmocka_unit_test(test_none_constant),
        cmocka_unit_test(test_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
