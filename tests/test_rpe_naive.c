/* The efficient relative-position evaluation (gathers and scatters over an
 * n x (2k+1) matrix, BLAS products) against a naive O(n^2 d) reference
 * written here, in double, that materialises every relative vector:
 *     e_ij = (q_i.k_j + q_i.aK[row] [+ k_j.aK[row]]) / sqrt(d)
 *     z_i  = sum_j p_ij (v_j [+ aV[row]])
 * for Shaw's form (row = clip(j - i) + k, keys and values) and HF's
 * relative_key / relative_key_query (row = i - j + L - 1). Forward outputs
 * and every gradient (q, k, v, tables) are compared. The four table
 * operations of pe/reltable.h are also checked one by one against sums over
 * rel_row() for shapes the PEs do not reach (either sign with clamping,
 * queries and keys of different counts and offsets, a single key). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe/reltable.h"
#include "posemb/attention.h"
#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"

enum { N = 20, H = 2, d = 4, D = H * d, L = 48 };

typedef struct form {
    const char *spec;
    int clip, hf, key_query, values;
    int gaps; /* positions 2t + 1 (the per-pair path) instead of consecutive ones (the runs path) */
} form;

static int row_of(const form *f, int qp, int kp)
{
    int r = kp - qp;
    if (f->hf) return qp - kp + L - 1;
    if (r < -f->clip) r = -f->clip;
    if (r > f->clip) r = f->clip;
    return r + f->clip;
}

/* One head, naive, in double. tk, tv: tables [rows, d]. Outputs z and the gradients of loss = sum(z * R). */
static void naive_head(const form *f, const int32_t *pos, const double *q, const double *k, const double *v,
                       const double *tk, const double *tv, const double *R, double *z, double *dq, double *dk,
                       double *dv, double *dtk, double *dtv)
{
    double scale = 1.0 / sqrt((double)d), p[N][N], dp[N][N];
    for (int i = 0; i < N; i++) {
        double mx = -1e300, sum = 0;
        for (int j = 0; j < N; j++) {
            const double *a = tk + row_of(f, pos[i], pos[j]) * d;
            double e = 0;
            for (int c = 0; c < d; c++)
                e += q[i * d + c] * (k[j * d + c] + a[c]) + (f->key_query ? k[j * d + c] * a[c] : 0);
            p[i][j] = e * scale;
            mx = fmax(mx, p[i][j]);
        }
        for (int j = 0; j < N; j++) sum += (p[i][j] = exp(p[i][j] - mx));
        for (int j = 0; j < N; j++) p[i][j] /= sum;
        for (int c = 0; c < d; c++) {
            double acc = 0;
            for (int j = 0; j < N; j++)
                acc += p[i][j] * (v[j * d + c] + (f->values ? tv[row_of(f, pos[i], pos[j]) * d + c] : 0));
            z[i * d + c] = acc;
        }
    }
    for (int i = 0; i < N; i++) {
        double dot = 0;
        for (int j = 0; j < N; j++) {
            const double *av = tv + row_of(f, pos[i], pos[j]) * d;
            dp[i][j] = 0;
            for (int c = 0; c < d; c++) {
                dp[i][j] += R[i * d + c] * (v[j * d + c] + (f->values ? av[c] : 0));
                dv[j * d + c] += p[i][j] * R[i * d + c];
                if (f->values) dtv[row_of(f, pos[i], pos[j]) * d + c] += p[i][j] * R[i * d + c];
            }
            dot += p[i][j] * dp[i][j];
        }
        for (int j = 0; j < N; j++) {
            double de = p[i][j] * (dp[i][j] - dot) * scale;
            int r = row_of(f, pos[i], pos[j]);
            for (int c = 0; c < d; c++) {
                double a = tk[r * d + c];
                dq[i * d + c] += de * (k[j * d + c] + a);
                dk[j * d + c] += de * (q[i * d + c] + (f->key_query ? a : 0));
                dtk[r * d + c] += de * (q[i * d + c] + (f->key_query ? k[j * d + c] : 0));
            }
        }
    }
}

static void check_form(const form *f)
{
    posemb_pe_dims dims = {.dim = D, .n_heads = H, .n_layers = 1, .max_len = L};
    posemb_error err;
    posemb_pe *p;
    if (posemb_pe_create(&p, f->spec, &dims, &err)) fail_msg("%s: %s", f->spec, err.msg);
    assert_int_equal(posemb_pe_alloc(p, &err), POSEMB_OK);
    posemb_rng rng;
    posemb_rng_seed(&rng, 2024, 3);
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        posemb_rng_fill_normal(&rng, t->data, (long)t->numel, 0.7f);
    }
    const posemb_pe_param *tk = posemb_pe_get_param(p, 0), *tv = f->values ? posemb_pe_get_param(p, 1) : tk;
    int rows = (int)tk->shape[0];
    float qkv[N * 3 * D], R[N * D], probs[H * N * N], out[N * D], dqkv[N * 3 * D];
    int32_t pos[N];
    posemb_rng_fill_normal(&rng, qkv, N * 3 * D, 1.0f);
    posemb_rng_fill_normal(&rng, R, N * D, 1.0f);
    for (int t = 0; t < N; t++) pos[t] = f->gaps ? 2 * t + 1 : t + 3; /* gaps: rows are not plain j - i */
    float qkv0[N * 3 * D];
    memcpy(qkv0, qkv, sizeof qkv);

    posemb_nn_attn_shape sh = {.B = 1, .T = N, .D = D, .H = H};
    float *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    posemb_nn_attention_forward(&sh, p, 0, qkv, pos, NULL, probs, out, NULL);
    posemb_pe_zero_grad(p);
    posemb_nn_attention_backward(&sh, p, 0, qkv, pos, probs, R, dqkv, scratch);

    double *dtk = calloc((size_t)rows * d, sizeof(double)), *dtv = calloc((size_t)rows * d, sizeof(double));
    double *tkd = malloc((size_t)rows * d * sizeof(double)), *tvd = malloc((size_t)rows * d * sizeof(double));
    for (int i = 0; i < rows * d; i++) {
        tkd[i] = tk->data[i];
        tvd[i] = tv->data[i];
    }
    for (int h = 0; h < H; h++) {
        double q[N * d], k[N * d], v[N * d], Rh[N * d], z[N * d], dq[N * d] = {0}, dk[N * d] = {0}, dv[N * d] = {0};
        for (int t = 0; t < N; t++)
            for (int c = 0; c < d; c++) {
                q[t * d + c] = qkv0[t * 3 * D + h * d + c];
                k[t * d + c] = qkv0[t * 3 * D + D + h * d + c];
                v[t * d + c] = qkv0[t * 3 * D + 2 * D + h * d + c];
                Rh[t * d + c] = R[t * D + h * d + c];
            }
        naive_head(f, pos, q, k, v, tkd, tvd, Rh, z, dq, dk, dv, dtk, dtv);
        for (int t = 0; t < N; t++)
            for (int c = 0; c < d; c++) {
                TU_CLOSE(out[t * D + h * d + c], z[t * d + c], 1e-5, 1e-5, "z", t * d + c);
                TU_CLOSE(dqkv[t * 3 * D + h * d + c], dq[t * d + c], 1e-5, 1e-4, "dq", t * d + c);
                TU_CLOSE(dqkv[t * 3 * D + D + h * d + c], dk[t * d + c], 1e-5, 1e-4, "dk", t * d + c);
                TU_CLOSE(dqkv[t * 3 * D + 2 * D + h * d + c], dv[t * d + c], 1e-5, 1e-4, "dv", t * d + c);
            }
    }
    for (int i = 0; i < rows * d; i++) {
        /* keys-only forms share one table, and dtv stays zero for them */
        TU_CLOSE(tk->grad[i], dtk[i] + (tv == tk ? dtv[i] : 0), 1e-5, 1e-4, "d table (keys)", i);
        if (tv != tk) TU_CLOSE(tv->grad[i], dtv[i], 1e-5, 1e-4, "d table (values)", i);
    }
    printf("%-22s %s positions: efficient == naive over %d rows (forward, dq, dk, dv, tables)\n", f->spec,
           f->gaps ? "gapped" : "consecutive", rows);
    free(dtk);
    free(dtv);
    free(tkd);
    free(tvd);
    free(scratch);
    posemb_pe_free(p);
}

static void test_shaw_clipped(void **s) { check_form(&(form){"rpe:k=3", 3, 0, 0, 1, 1}); }
static void test_shaw_clipped_consecutive(void **s) { check_form(&(form){"rpe:k=3", 3, 0, 0, 1, 0}); }
static void test_shaw_wide(void **s) { check_form(&(form){"rpe:k=60", 60, 0, 0, 1, 1}); }
static void test_shaw_wide_consecutive(void **s) { check_form(&(form){"rpe:k=60", 60, 0, 0, 1, 0}); }
static void test_shaw_keys_only(void **s) { check_form(&(form){"rpe:k=5,values=off", 5, 0, 0, 0, 1}); }
static void test_shaw_keys_only_consecutive(void **s) { check_form(&(form){"rpe:k=5,values=off", 5, 0, 0, 0, 0}); }
static void test_hf_relative_key(void **s) { check_form(&(form){"relative_key", 0, 1, 0, 0, 0}); }
static void test_hf_relative_key_gaps(void **s) { check_form(&(form){"relative_key", 0, 1, 0, 0, 1}); }
static void test_hf_relative_key_query(void **s) { check_form(&(form){"relative_key_query", 0, 1, 1, 0, 0}); }
static void test_hf_relative_key_query_gaps(void **s) { check_form(&(form){"relative_key_query", 0, 1, 1, 0, 1}); }

/* The table operations one by one against sums over rel_row(), in double. */
enum { RQ = 7, RK = 11, RD = 3 };

static void check_reltable(rel_map m, int nq, int nk, int key_gap)
{
    int32_t qpos[RQ], kpos[RK];
    for (int i = 0; i < nq; i++) qpos[i] = 5 + i;
    for (int j = 0; j < nk; j++) kpos[j] = 2 + j + (key_gap && j > nk / 2); /* a gap: the per-pair path */
    int rows = 2 * m.clip + 1, nx = nq > nk ? nq : nk;
    float table[(2 * 40 + 1) * RD], x[RK * RD], s[RQ * RK], s0[RQ * RK], ds[RQ * RK],
        dx[RK * RD] = {0}, dtable[(2 * 40 + 1) * RD] = {0}, z[RQ * RD] = {0}, dz[RQ * RD], dprob[RQ * RK] = {0};
    float *scratch = malloc(rel_scratch_floats(m, nx) * sizeof(float));
    posemb_rng rng;
    posemb_rng_seed(&rng, 7, (uint64_t)(m.clip * 4 + (m.sign > 0) * 2 + key_gap));
    posemb_rng_fill_normal(&rng, table, rows * RD, 1.0f);
    posemb_rng_fill_normal(&rng, x, RK * RD, 1.0f);
    posemb_rng_fill_normal(&rng, s, RQ * RK, 1.0f);
    posemb_rng_fill_normal(&rng, ds, RQ * RK, 1.0f);
    posemb_rng_fill_normal(&rng, dz, RQ * RD, 1.0f);
    memcpy(s0, s, sizeof s);
    for (int key_side = 0; key_side <= 1; key_side++) {
        posemb_pe_head h = {.nq = nq, .nk = nk, .d = RD, .scale = 0.5f, .qpos = qpos, .kpos = kpos};
        memcpy(s, s0, sizeof s);
        memset(dx, 0, sizeof dx);
        memset(dtable, 0, sizeof dtable);
        rel_logits_forward(m, &h, key_side, x, RD, table, s, RK, scratch);
        rel_logits_backward(m, &h, key_side, x, RD, table, ds, RK, dx, RD, dtable, scratch);
        double rdx[RK * RD] = {0}, rdt[(2 * 40 + 1) * RD] = {0};
        for (int i = 0; i < nq; i++)
            for (int j = 0; j < nk; j++) {
                int r = rel_row(m, qpos[i], kpos[j]), t = key_side ? j : i;
                double e = 0;
                for (int c = 0; c < RD; c++) {
                    e += 0.5 * x[t * RD + c] * table[r * RD + c];
                    rdx[t * RD + c] += 0.5 * ds[i * RK + j] * table[r * RD + c];
                    rdt[r * RD + c] += 0.5 * ds[i * RK + j] * x[t * RD + c];
                }
                TU_CLOSE(s[i * RK + j] - s0[i * RK + j], e, 1e-5, 1e-5, "logits", i * RK + j);
            }
        for (int i = 0; i < nx * RD; i++) TU_CLOSE(dx[i], rdx[i], 1e-5, 1e-5, "logits dx", i);
        for (int i = 0; i < rows * RD; i++) TU_CLOSE(dtable[i], rdt[i], 1e-5, 1e-5, "logits dtable", i);
    }
    posemb_pe_head h = {.nq = nq, .nk = nk, .d = RD, .scale = 0.5f, .qpos = qpos, .kpos = kpos};
    const float *prob = ds; /* any weights will do */
    memset(dtable, 0, sizeof dtable);
    rel_values_forward(m, &h, table, prob, RK, z, RD, scratch);
    rel_values_backward(m, &h, table, prob, RK, dz, RD, dprob, RK, dtable, scratch);
    double rdt[(2 * 40 + 1) * RD] = {0};
    for (int i = 0; i < nq; i++) {
        double rz[RD] = {0};
        for (int j = 0; j < nk; j++) {
            int r = rel_row(m, qpos[i], kpos[j]);
            double g = 0;
            for (int c = 0; c < RD; c++) {
                rz[c] += prob[i * RK + j] * table[r * RD + c];
                g += dz[i * RD + c] * table[r * RD + c];
                rdt[r * RD + c] += prob[i * RK + j] * dz[i * RD + c];
            }
            TU_CLOSE(dprob[i * RK + j], g, 1e-5, 1e-5, "values dprob", i * RK + j);
        }
        for (int c = 0; c < RD; c++) TU_CLOSE(z[i * RD + c], rz[c], 1e-5, 1e-5, "values z", i * RD + c);
    }
    for (int i = 0; i < rows * RD; i++) TU_CLOSE(dtable[i], rdt[i], 1e-5, 1e-5, "values dtable", i);
    free(scratch);
}

static void test_reltable_direct(void **st)
{
    const int clips[] = {0, 1, 3, 40};
    for (int c = 0; c < 4; c++)
        for (int sign = -1; sign <= 1; sign += 2)
            for (int gap = 0; gap <= 1; gap++) {
                rel_map m = {clips[c], sign};
                check_reltable(m, RQ, RK, gap);
                check_reltable(m, RQ, 1, 0);
                check_reltable(m, 1, RK, gap);
            }
    printf("reltable operations == sums over rel_row (clip 0, 1, 3, 40; both signs; consecutive and gapped keys)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shaw_clipped),
        cmocka_unit_test(test_shaw_clipped_consecutive),
        cmocka_unit_test(test_shaw_wide),
        cmocka_unit_test(test_shaw_wide_consecutive),
        cmocka_unit_test(test_shaw_keys_only),
        cmocka_unit_test(test_shaw_keys_only_consecutive),
        cmocka_unit_test(test_hf_relative_key),
        cmocka_unit_test(test_hf_relative_key_gaps),
        cmocka_unit_test(test_hf_relative_key_query),
        cmocka_unit_test(test_hf_relative_key_query_gaps),
        cmocka_unit_test(test_reltable_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
