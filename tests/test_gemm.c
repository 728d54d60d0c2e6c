/* posemb_nn_gemm, the dense layers' product, in both precisions: fp32 against a
 * double-precision reference for every transpose, alpha, beta and padded
 * leading dimensions; bf16 (where this machine runs it) against the same
 * product of the bf16-rounded inputs, and within bf16's rounding of the
 * exact one; its conversion reuse and stash; the linear layer's bias and
 * written gradient against the paths they replaced; GELU writing the next
 * product's bf16 copy; and the clean fallback to fp32 where bf16 cannot
 * run. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/gemm_impl.h"
#include "posemb/nn.h"
#include "posemb/precision.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "nn/nn_internal.h"
#include "core/rng_internal.h"
#include "nn/precision_internal.h"

/* Rounds x to bfloat16 (nearest even), as a float. */
static float bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

typedef struct problem {
    int ta, tb, M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C0; /* C0: C before the product */
} problem;

static void fill(float *x, long n, posemb_rng *r)
{
    for (long i = 0; i < n; i++) x[i] = (float)(2.0 * posemb_rng_uniform(r) - 1.0);
}

/* Stored A is [M, K] (or [K, M] transposed) with its leading dimension padded by 3. */
static problem make(int ta, int tb, int M, int N, int K, float alpha, float beta, uint64_t seed)
{
    problem p = {ta, tb, M, N, K, (ta ? M : K) + 3, (tb ? K : N) + 3, N + 5, alpha, beta, NULL, NULL, NULL};
    posemb_rng r;
    posemb_rng_seed(&r, seed, 7);
    long na = (long)(ta ? K : M) * p.lda, nb = (long)(tb ? N : K) * p.ldb, nc = (long)M * p.ldc;
    p.A = malloc((size_t)na * sizeof *p.A);
    p.B = malloc((size_t)nb * sizeof *p.B);
    p.C0 = malloc((size_t)nc * sizeof *p.C0);
    fill(p.A, na, &r);
    fill(p.B, nb, &r);
    fill(p.C0, nc, &r);
    return p;
}

static float at_a(const problem *p, int i, int k)
{
    return p->ta ? p->A[(long)k * p->lda + i] : p->A[(long)i * p->lda + k];
}
static float at_b(const problem *p, int k, int j)
{
    return p->tb ? p->B[(long)j * p->ldb + k] : p->B[(long)k * p->ldb + j];
}

/* |C - ref| <= tol * (sum_k |a_ik b_kj| + |beta c|) for every element, with
 * ref from the inputs (rounded to bf16 first when round is set); the padding
 * of C untouched. */
static double check(const problem *p, const float *C, int round, double tol)
{
    double worst = 0;
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->ldc; j++) {
            long at = (long)i * p->ldc + j;
            if (j >= p->N) {
                assert_true(C[at] == p->C0[at]);
                continue;
            }
            double ref = 0, mag = 0;
            for (int k = 0; k < p->K; k++) {
                double a = at_a(p, i, k), b = at_b(p, k, j);
                if (round) {
                    a = bf16_round((float)a);
                    b = bf16_round((float)b);
                }
                ref += a * b;
                mag += fabs(a * b);
            }
            ref = p->alpha * ref + p->beta * p->C0[at];
            mag = fabs(p->alpha) * mag + fabs(p->beta * p->C0[at]);
            double err = fabs(C[at] - ref) / mag;
            if (err > tol)
                fail_msg("C[%d,%d] = %.9g, reference %.9g (relative to the terms %.3g)", i, j, C[at], ref, err);
            worst = fmax(worst, err);
        }
    return worst;
}

static double run(posemb_matmul *mm, const problem *p, int round, double tol)
{
    float *C = malloc((size_t)p->M * p->ldc * sizeof *C);
    memcpy(C, p->C0, (size_t)p->M * p->ldc * sizeof *C);
    posemb_nn_gemm(mm, p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta, C, p->ldc);
    double worst = check(p, C, round, tol);
    free(C);
    return worst;
}

static void release(problem *p)
{
    free(p->A);
    free(p->B);
    free(p->C0);
}

/* Runs first, before this process touches oneDNN: a child limited to AVX2
 * (oneDNN's DNNL_MAX_CPU_ISA) must be refused bf16 with a reason and keep fp32. */
static void test_fallback_without_bf16(void **state)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
        posemb_matmul *mm = (posemb_matmul *)&fd; /* must come back NULL */
        posemb_error err;
        posemb_status st = posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err);
        ssize_t n = write(fd[1], err.msg, strlen(err.msg));
        _exit(n >= 0 && st == POSEMB_ERANGE && !mm && err.msg[0] ? 0 : 1);
    }
    close(fd[1]);
    char why[256] = {0};
    ssize_t n = read(fd[0], why, sizeof why - 1);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    printf("bf16 refused without AVX512_BF16: %s\n", n > 0 ? why : "(no reason)");
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* fp32: no context (NULL) and an fp32 context are the same OpenBLAS product. */
static void test_fp32(void **state)
{
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_FP32, &err), POSEMB_OK);
    assert_int_equal(posemb_matmul_precision(mm), POSEMB_PRECISION_FP32);
    assert_int_equal(posemb_matmul_precision(NULL), POSEMB_PRECISION_FP32);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            problem p = make(ta, tb, 37, 53, 129, 0.5f, ta ? 1.0f : 0.0f, (uint64_t)(1 + 2 * ta + tb));
            double worst = fmax(run(NULL, &p, 0, 1e-6), run(mm, &p, 0, 1e-6));
            printf("fp32 ta=%d tb=%d: worst %.3g\n", ta, tb, worst);
            release(&p);
        }
    posemb_matmul_free(mm);
}

static int bf16_here(void) { return tu_bf16_here("bf16 products"); }

/* A bf16 context's products; the same problems without it stay exact (the
 * precision is the context's, not the process's). */
static void test_bf16(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    assert_int_equal(posemb_matmul_precision(mm), POSEMB_PRECISION_BF16);
    float betas[] = {0.0f, 1.0f, -0.5f};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int ib = 0; ib < 3; ib++) {
                problem p =
                    make(ta, tb, 65, 47, 300, ib == 2 ? 2.0f : 1.0f, betas[ib], (uint64_t)(10 + 6 * ta + 3 * tb + ib));
                /* the same product of the rounded inputs, to float32 accumulation; and the exact one
                 * within two bf16 roundings (2^-8 each) of every term */
                double rounded = run(mm, &p, 1, 1e-5), exact = run(mm, &p, 0, 2.0 / 256);
                printf("bf16 ta=%d tb=%d beta=%g: vs rounded inputs %.3g, vs exact %.3g\n", ta, tb, betas[ib], rounded,
                       exact);
                assert_true(exact > 1e-5); /* bf16 did run: fp32 would be exact to 1e-6 */
                run(NULL, &p, 0, 1e-6);
                release(&p);
            }
    posemb_matmul_free(mm);
}

/* A matrix named by matmul_reuse is converted once for the products that
 * read it, in either orientation (other dimensions: anew); after the promise
 * ends a changed matrix is read anew. */
static void test_bf16_reuse(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    problem p = make(0, 0, 40, 24, 56, 1.0f, 0.0f, 99), q = make(1, 0, 56, 24, 40, 1.0f, 0.0f, 98);
    free(q.A);
    q.A = p.A;
    q.lda = p.lda; /* q reads p's A transposed: [40, 56] stored as [K, M] */
    matmul_reuse(mm, p.A);
    run(mm, &p, 1, 1e-5);
    /* breaking the promise shows the copy was reused: q sees A as it was */
    for (long i = 0; i < 40L * p.lda; i++) p.A[i] = -p.A[i];
    float *C = malloc((size_t)q.M * q.ldc * sizeof *C);
    memcpy(C, q.C0, (size_t)q.M * q.ldc * sizeof *C);
    posemb_nn_gemm(mm, q.ta, q.tb, q.M, q.N, q.K, q.alpha, q.A, q.lda, q.B, q.ldb, q.beta, C, q.ldc);
    for (long i = 0; i < 40L * p.lda; i++) p.A[i] = -p.A[i];
    check(&q, C, 1, 1e-5);
    free(C);
    problem r = make(0, 0, 20, 24, 56, 1.0f, 0.0f, 97); /* p.A's first 20 rows: other dims, converted anew */
    memcpy(r.A, p.A, (size_t)20 * p.lda * sizeof *r.A);
    free(r.A);
    r.A = p.A;
    r.lda = p.lda;
    run(mm, &r, 1, 1e-5);
    matmul_reuse(mm, NULL);
    for (long i = 0; i < 40L * p.lda; i++) p.A[i] = -p.A[i];
    run(mm, &p, 1, 1e-5);
    q.A = NULL;
    r.A = NULL;
    release(&p);
    release(&q);
    release(&r);
    posemb_matmul_free(mm);
}

/* x [N, in], w [out, in], dy [N, out]: linear_backward's dw and dx on mm. */
static void linear_grads(posemb_matmul *mm, const float *x, const float *w, const float *dy, int N, int in, int out,
                         float *dx, float *dw)
{
    memset(dx, 0, (size_t)N * in * sizeof *dx);
    memset(dw, 0, (size_t)out * in * sizeof *dw);
    posemb_nn_linear_backward(mm, dx, dw, NULL, dy, x, w, N, in, out, POSEMB_NN_W_OUT_IN);
}

/* The stash: a linear layer's backward reads the bf16 copies of x and w its
 * forward made in this pass (shown by changing x after the forward: the
 * gradients are those of the old x), bit for bit what converting them again
 * gives; a new pass, or a pass that keeps nothing (inference), reads anew. */
static void test_bf16_stash(void **state)
{
    if (!bf16_here()) skip();
    enum { N = 48, IN = 40, OUT = 24 };
    posemb_matmul *mm, *fresh;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    assert_int_equal(posemb_matmul_new(&fresh, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    posemb_rng r;
    posemb_rng_seed(&r, 5, 1);
    static float x[N * IN], w[OUT * IN], dy[N * OUT], y[N * OUT], dx[2][N * IN], dw[2][OUT * IN];
    fill(x, N * IN, &r);
    fill(w, OUT * IN, &r);
    fill(dy, N * OUT, &r);
    linear_grads(fresh, x, w, dy, N, IN, OUT, dx[0], dw[0]); /* x and w converted for the backward */
    for (int keep = 1; keep >= 0; keep--) {
        matmul_new_pass(mm, keep);
        posemb_nn_linear_forward(mm, y, x, w, NULL, N, IN, OUT, POSEMB_NN_W_OUT_IN);
        for (int i = 0; i < N * IN; i++) x[i] = -x[i]; /* the promise broken: only the stash remembers x */
        linear_grads(mm, x, w, dy, N, IN, OUT, dx[1], dw[1]);
        int same = !memcmp(dw[0], dw[1], sizeof dw[0]);
        assert_int_equal(same, keep);                    /* kept: the old x, exactly; not kept: the new x */
        assert_memory_equal(dx[0], dx[1], sizeof dx[0]); /* dx reads w, unchanged */
        matmul_new_pass(mm, 1);                          /* a new pass: the old copy is not read */
        linear_grads(mm, x, w, dy, N, IN, OUT, dx[1], dw[1]);
        for (int i = 0; i < OUT * IN; i++) assert_true(dw[1][i] == -dw[0][i]);
        for (int i = 0; i < N * IN; i++) x[i] = -x[i];
    }
    posemb_matmul_free(mm);
    posemb_matmul_free(fresh);
}

/* check_on(NULL) (fp32), then check_on a bf16 context where bf16 runs here. */
static void each_precision(void (*check_on)(posemb_matmul *mm))
{
    check_on(NULL);
    if (!bf16_here()) return;
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    check_on(mm);
    posemb_matmul_free(mm);
}

static void linear_bias_on(posemb_matmul *mm)
{
    enum { N = 37, IN = 72, OUT = 29 };
    static float x[N * IN], w[OUT * IN], b[OUT], y[N * OUT], ref[N * OUT];
    posemb_rng r;
    posemb_rng_seed(&r, 8, 2);
    fill(x, N * IN, &r);
    fill(w, OUT * IN, &r);
    fill(b, OUT, &r);
    for (int oi = 0; oi < 2; oi++) {
        for (int t = 0; t < N; t++) memcpy(ref + t * OUT, b, sizeof b);
        posemb_nn_gemm(mm, 0, oi, N, OUT, IN, 1.0f, x, IN, w, oi ? IN : OUT, 1.0f, ref, OUT);
        for (int i = 0; i < N * OUT; i++) y[i] = NAN; /* not read */
        posemb_nn_linear_forward(mm, y, x, w, b, N, IN, OUT, oi ? POSEMB_NN_W_OUT_IN : POSEMB_NN_W_IN_OUT);
        assert_memory_equal(y, ref, sizeof y);
        for (int i = 0; i < N * OUT; i++) y[i] = NAN; /* the epilogue itself ran (no fallback) in bf16 */
        assert_int_equal(matmul_bf16_bias(mm, oi, N, OUT, IN, x, IN, w, oi ? IN : OUT, b, y, OUT), mm != NULL);
        if (mm) assert_memory_equal(y, ref, sizeof y);
    }
}

/* linear_forward's bias: in fp32 written into y before OpenBLAS adds the
 * product, in bf16 added by oneDNN's epilogue (y neither filled nor read).
 * Either way the bits of filling y with the bias and adding the product
 * (beta 1), the path both took before; both weight layouts. */
static void test_linear_bias(void **state) { each_precision(linear_bias_on); }

static void linear_backward_set_on(posemb_matmul *mm)
{
    enum { N = 41, IN = 56, OUT = 33 };
    static float x[N * IN], w[OUT * IN], dy[N * OUT], dx[2][N * IN], dw[2][OUT * IN], db[2][OUT];
    posemb_rng r;
    posemb_rng_seed(&r, 9, 3);
    fill(x, N * IN, &r);
    fill(w, OUT * IN, &r);
    fill(dy, N * OUT, &r);
    for (int oi = 0; oi < 2; oi++) {
        posemb_nn_wlayout lay = oi ? POSEMB_NN_W_OUT_IN : POSEMB_NN_W_IN_OUT;
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < OUT * IN; i++) dw[k][i] = 0.25f;
            for (int i = 0; i < OUT; i++) db[k][i] = -0.5f;
        }
        memset(dx[0], 0, sizeof dx[0]);
        posemb_nn_linear_backward(mm, dx[0], dw[0], db[0], dy, x, w, N, IN, OUT, lay);
        for (int i = 0; i < N * IN; i++) dx[1][i] = NAN; /* not read */
        posemb_nn_linear_backward_set(mm, dx[1], dw[1], db[1], dy, x, w, N, IN, OUT, lay);
        assert_memory_equal(dx[0], dx[1], sizeof dx[0]);
        assert_memory_equal(dw[0], dw[1], sizeof dw[0]);
        assert_memory_equal(db[0], db[1], sizeof db[0]);
    }
}

/* linear_backward_set writes dx without reading it: the bits of zeroing dx
 * and adding (linear_backward), dw and db added to alike; fp32 and bf16. */
static void test_linear_backward_set(void **state) { each_precision(linear_backward_set_on); }

/* GELU writing the next product's bf16 copy (matmul_stash_claim): the
 * fp32 output has posemb_nn_gelu_forward's bits (both forms, rows of 83
 * for the loops' tails); the product takes the producer's copy (y poisoned
 * after GELU, the product and the backward's dW are still the unfused
 * path's bits), reads it once (a second product of y in the pass converts
 * y again); a claim not taken ends with the next layer's products; nothing
 * is claimed in an inference pass or in fp32. */
static void gelu_fused_on(posemb_matmul *mm, posemb_nn_gelu_kind kind)
{
    enum { N = 24, C = 83, OUT = 40 };
    static float x[N * C], y[N * C], yf[N * C], w[OUT * C], dy[N * OUT], ref[N * OUT], out[N * OUT], dw[2][OUT * C];
    posemb_rng r;
    posemb_rng_seed(&r, 12, 4);
    fill(x, N * C, &r);
    for (int i = 0; i < N * C; i++) x[i] *= 5.0f; /* GELU's tails too */
    fill(w, OUT * C, &r);
    fill(dy, N * OUT, &r);
    posemb_nn_gelu_forward(y, x, N * C, kind);
    matmul_new_pass(mm, 1);
    posemb_nn_linear_forward(mm, ref, y, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    memset(dw[0], 0, sizeof dw[0]);
    posemb_nn_linear_backward(mm, NULL, dw[0], NULL, dy, y, w, N, C, OUT, POSEMB_NN_W_OUT_IN);
    matmul_new_pass(mm, 1);
    uint16_t *copy = matmul_stash_claim(mm, yf, N, C);
    assert_non_null(copy);
    posemb_nn_gelu_forward_rows(yf, copy, x, N, C, kind);
    assert_memory_equal(yf, y, sizeof y);
    for (int i = 0; i < N * C; i++) yf[i] = NAN; /* read by neither the product nor the backward */
    posemb_nn_linear_forward(mm, out, yf, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    assert_memory_equal(out, ref, sizeof ref);
    memset(dw[1], 0, sizeof dw[1]);
    posemb_nn_linear_backward(mm, NULL, dw[1], NULL, dy, yf, w, N, C, OUT, POSEMB_NN_W_OUT_IN);
    assert_memory_equal(dw[1], dw[0], sizeof dw[0]);
    for (int i = 0; i < N * C; i++) yf[i] = -y[i]; /* read once: the next product converts y again */
    posemb_nn_linear_forward(mm, out, yf, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    for (int i = 0; i < N * OUT; i++) assert_true(out[i] == -ref[i]);
    assert_non_null(matmul_stash_claim(mm, yf, N, C)); /* claimed, never filled nor taken ... */
    posemb_nn_linear_forward(mm, out, x, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN); /* ... past a layer's products */
    posemb_nn_linear_forward(mm, out, yf, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    for (int i = 0; i < N * OUT; i++) assert_true(out[i] == -ref[i]); /* so yf is converted, not the claim read */
    matmul_new_pass(mm, 0);
    assert_null(matmul_stash_claim(mm, yf, N, C));
}

static void test_gelu_fused_copy(void **state)
{
    enum { N = 24, C = 83 };
    static float x[N * C], y[N * C], yf[N * C];
    posemb_rng r;
    posemb_rng_seed(&r, 13, 4);
    fill(x, N * C, &r);
    for (int k = 0; k < 2; k++) {
        posemb_nn_gelu_kind kind = k ? POSEMB_NN_GELU_TANH : POSEMB_NN_GELU_ERF;
        for (int i = 0; i < N * C; i++) x[i] *= 3.0f;
        posemb_nn_gelu_forward(y, x, N * C, kind);
        posemb_nn_gelu_forward_rows(yf, NULL, x, N, C, kind);
        assert_memory_equal(yf, y, sizeof y);
    }
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_FP32, &err), POSEMB_OK);
    matmul_new_pass(mm, 1);
    assert_null(matmul_stash_claim(mm, yf, N, C));
    assert_null(matmul_stash_claim(NULL, yf, N, C));
    posemb_matmul_free(mm);
    if (!bf16_here()) return;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    gelu_fused_on(mm, POSEMB_NN_GELU_ERF);
    gelu_fused_on(mm, POSEMB_NN_GELU_TANH);
    posemb_matmul_free(mm);
}

/* The LM head in bf16 (posemb_nn_xent_tied over 3 chunks, one shorter):
 * the tied weight converted once for every chunk (a promise around the
 * chunks' own) and the gradient's copy written with it give the bits of the
 * chunks run one by one, each converting its own inputs; the loss up to the
 * order its rows are added in. */
static void test_xent_tied_bf16(void **state)
{
    if (!bf16_here()) skip();
    enum { M = 40, D = 24, V = 70, CHUNK = 16 };
    static float x[M * D], W[V * D], b[V], z[CHUNK * V], dx[M * D], dW[V * D], db[V], rdx[M * D], rdW[V * D], rdb[V];
    int32_t tg[M];
    posemb_rng r;
    posemb_rng_seed(&r, 21, 4);
    fill(x, M * D, &r);
    fill(W, V * D, &r);
    fill(b, V, &r);
    for (int i = 0; i < M; i++) tg[i] = i % 7 == 3 ? -100 : (int32_t)posemb_rng_below(&r, V);
    posemb_matmul *mm, *ref;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    assert_int_equal(posemb_matmul_new(&ref, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    matmul_new_pass(mm, 1);
    long hits = 0, rhits = 0;
    double loss = posemb_nn_xent_tied(mm, x, M, D, W, b, V, tg, 0.25f, dx, dW, db, z, CHUNK, &hits), rloss = 0;
    matmul_new_pass(ref, 1);
    for (int r0 = 0; r0 < M; r0 += CHUNK) {
        int n = M - r0 < CHUNK ? M - r0 : CHUNK;
        posemb_nn_linear_forward(ref, z, x + r0 * D, W, b, n, D, V, POSEMB_NN_W_OUT_IN);
        rloss += posemb_nn_xent(z, n, V, tg + r0, 0.25f, &rhits);
        posemb_nn_linear_backward(ref, rdx + r0 * D, rdW, rdb, z, x + r0 * D, W, n, D, V, POSEMB_NN_W_OUT_IN);
    }
    assert_memory_equal(dx, rdx, sizeof dx);
    assert_memory_equal(dW, rdW, sizeof dW);
    assert_memory_equal(db, rdb, sizeof db);
    assert_int_equal(hits, rhits);
    TU_CLOSE(loss, rloss, 1e-12, 1e-12, "xent_tied loss", 0);
    posemb_matmul_free(mm);
    posemb_matmul_free(ref);
}

/* The residual add and LayerNorm write the next product's bf16 copy as GELU
 * does (the encoder's and GPT-2's h1): y unchanged, and the product, which
 * takes the copy (y poisoned after), gives the bits of the path that
 * converts y itself. */
static void test_layernorm_fused_copy(void **state)
{
    if (!bf16_here()) skip();
    enum { N = 24, C = 83, OUT = 40 };
    static float r0[N * C], x[N * C], r[N * C], y[N * C], yf[N * C], w[OUT * C], lw[C], lb[C], ref[N * OUT],
        out[N * OUT], mean[N], rstd[N];
    posemb_rng g;
    posemb_rng_seed(&g, 14, 4);
    fill(r0, N * C, &g);
    fill(x, N * C, &g);
    fill(w, OUT * C, &g);
    fill(lw, C, &g);
    fill(lb, C, &g);
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    memcpy(r, r0, sizeof r);
    posemb_nn_add_layernorm_forward(y, NULL, mean, rstd, r, x, lw, lb, N, C, 1e-5f);
    matmul_new_pass(mm, 1);
    posemb_nn_linear_forward(mm, ref, y, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    matmul_new_pass(mm, 1);
    memcpy(r, r0, sizeof r);
    uint16_t *copy = matmul_stash_claim(mm, yf, N, C);
    assert_non_null(copy);
    posemb_nn_add_layernorm_forward(yf, copy, mean, rstd, r, x, lw, lb, N, C, 1e-5f);
    assert_memory_equal(yf, y, sizeof y);
    for (int i = 0; i < N * C; i++) yf[i] = NAN; /* not read by the product */
    posemb_nn_linear_forward(mm, out, yf, w, NULL, N, C, OUT, POSEMB_NN_W_OUT_IN);
    assert_memory_equal(out, ref, sizeof ref);
    posemb_matmul_free(mm);
}

/* RMSNorm and SwiGLU write the next product's bf16 copy as LayerNorm does
 * (Llama's two norms' outputs and its MLP's gated activation): y unchanged,
 * and the product, which takes the copy (y poisoned after), gives the bits
 * of the path that converts y itself. */
enum { FN = 24, FC = 83, FOUT = 40 };

static void product_takes_copy(posemb_matmul *mm, float *y, const float *ref, const float *w)
{
    static float out[FN * FOUT];
    for (int i = 0; i < FN * FC; i++) y[i] = NAN; /* not read by the product */
    posemb_nn_linear_forward(mm, out, y, w, NULL, FN, FC, FOUT, POSEMB_NN_W_OUT_IN);
    assert_memory_equal(out, ref, sizeof out);
}

static void test_rmsnorm_fused_copy(void **state)
{
    if (!bf16_here()) skip();
    static float x[FN * FC], y[FN * FC], yf[FN * FC], w[FOUT * FC], nw[FC], ref[FN * FOUT], rstd[FN];
    posemb_rng g;
    posemb_rng_seed(&g, 15, 4);
    fill(x, FN * FC, &g);
    fill(w, FOUT * FC, &g);
    fill(nw, FC, &g);
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    posemb_nn_rmsnorm_forward(y, NULL, rstd, x, nw, FN, FC, 1e-6f);
    matmul_new_pass(mm, 1);
    posemb_nn_linear_forward(mm, ref, y, w, NULL, FN, FC, FOUT, POSEMB_NN_W_OUT_IN);
    matmul_new_pass(mm, 1);
    uint16_t *copy = matmul_stash_claim(mm, yf, FN, FC);
    assert_non_null(copy);
    posemb_nn_rmsnorm_forward(yf, copy, rstd, x, nw, FN, FC, 1e-6f);
    assert_memory_equal(yf, y, sizeof y);
    product_takes_copy(mm, yf, ref, w);
    posemb_matmul_free(mm);
}

static void test_swiglu_fused_copy(void **state)
{
    if (!bf16_here()) skip();
    static float gu[FN * 2 * FC], y[FN * FC], yf[FN * FC], w[FOUT * FC], ref[FN * FOUT];
    posemb_rng g;
    posemb_rng_seed(&g, 16, 4);
    fill(gu, FN * 2 * FC, &g);
    fill(w, FOUT * FC, &g);
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    posemb_nn_swiglu_forward(y, NULL, gu, FN, FC);
    matmul_new_pass(mm, 1);
    posemb_nn_linear_forward(mm, ref, y, w, NULL, FN, FC, FOUT, POSEMB_NN_W_OUT_IN);
    matmul_new_pass(mm, 1);
    uint16_t *copy = matmul_stash_claim(mm, yf, FN, FC);
    assert_non_null(copy);
    posemb_nn_swiglu_forward(yf, copy, gu, FN, FC);
    assert_memory_equal(yf, y, sizeof y);
    product_takes_copy(mm, yf, ref, w);
    posemb_matmul_free(mm);
}

/* In a parallel region posemb_nn_gemm stays fp32 (its bf16 buffers are shared). */
static void test_bf16_in_parallel_is_fp32(void **state)
{
    if (!bf16_here()) skip();
    posemb_matmul *mm;
    posemb_error err;
    assert_int_equal(posemb_matmul_new(&mm, POSEMB_PRECISION_BF16, &err), POSEMB_OK);
    problem p = make(0, 1, 16, 16, 64, 1.0f, 0.0f, 5);
    int bad = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad)
    {
        float C[16 * 21];
        memcpy(C, p.C0, sizeof C);
        posemb_nn_gemm(mm, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A, p.lda, p.B, p.ldb, p.beta, C, p.ldc);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                double ref = 0;
                for (int k = 0; k < 64; k++) ref += (double)at_a(&p, i, k) * at_b(&p, k, j);
                bad += fabs(C[i * 21 + j] - ref) > 1e-5;
            }
    }
    assert_int_equal(bad, 0);
    release(&p);
    posemb_matmul_free(mm);
}

/* C from gemm_xsmm (1 when it took the product) on a copy of p's C0, with n threads. */
static int xsmm_on(const problem *p, float *C, int n)
{
    memcpy(C, p->C0, (size_t)p->M * p->ldc * sizeof *C);
    omp_set_num_threads(n);
    return gemm_xsmm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta, C, p->ldc);
}

/* OpenBLAS's cblas_sgemm on p against C: the largest gap relative to the
 * product's terms, as check() measures it (each is within 1e-6 of the
 * exact product, so within 2e-6 of each other). */
static double gap_to_openblas(const problem *p, const float *C)
{
    size_t n = (size_t)p->M * p->ldc;
    float *blas = malloc(n * sizeof *blas);
    memcpy(blas, p->C0, n * sizeof *blas);
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, p->M, p->N, p->K,
                p->alpha, p->A, p->lda, p->B, p->ldb, p->beta, blas, p->ldc);
    double worst = 0;
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            double mag = fabs(p->beta * p->C0[(size_t)i * p->ldc + j]);
            for (int k = 0; k < p->K; k++) mag += fabs(p->alpha * (double)at_a(p, i, k) * at_b(p, k, j));
            size_t at = (size_t)i * p->ldc + j;
            worst = fmax(worst, fabs((double)C[at] - blas[at]) / mag);
        }
    free(blas);
    return worst;
}

/* libxsmm's path, where the build has it: each form the dense layers issue
 * (x W, x W^T, x^T dy), with blocks of 64 tokens whole and cut, runs of a
 * gradient's rows whole and cut, widths 1 to 256 (among them 129 and 208,
 * whose last columns libxsmm computes by other code for other kernel
 * shapes), the width-128 layers' narrow and wide weights (128 x 384,
 * 688 x 128, up to 1024), beta 0 and 1, padded leading dimensions: within float32's
 * rounding of the exact product, within 2e-6 of OpenBLAS's on the same
 * problem, the same bits on 1, 2, 3 and 4 threads, and what posemb_nn_gemm
 * computes. */
static void test_xsmm(void **state)
{
    if (!gemm_xsmm_built()) {
        printf("no libxsmm in this build: OpenBLAS computes every product\n");
        skip();
    }
    static const int forms[3][2] = {{0, 0}, {0, 1}, {1, 0}};
    static const int sides[][3] = {
        {1024, 64, 128}, {100, 64, 64},   {130, 128, 128}, {1100, 256, 1}, {2000, 33, 129},
        {1000, 72, 208}, {600, 384, 128}, {300, 128, 688}, {130, 1024, 96}}; /* tokens, widths (the last three narrow and wide) */
    const int n_sides = (int)(sizeof sides / sizeof *sides), threads = omp_get_max_threads();
    for (int f = 0; f < 3; f++)
        for (int s = 0; s < n_sides; s++)
            for (int beta = 0; beta < 2; beta++) {
                int ta = forms[f][0], tok = sides[s][0], w1 = sides[s][1], w2 = sides[s][2];
                uint64_t seed = (uint64_t)(100 + 16 * f + 2 * s + beta);
                /* the tokens are M without trans_a, K with it */
                problem p = ta ? make(1, 0, w1, w2, tok, 1.0f, (float)beta, seed)
                               : make(0, forms[f][1], tok, w1, w2, 1.0f, (float)beta, seed);
                size_t n = (size_t)p.M * p.ldc;
                float *one = malloc(n * sizeof *one), *more = malloc(n * sizeof *more);
                assert_true(xsmm_on(&p, one, 1));
                for (int t = 2; t <= 4; t++) {
                    assert_true(xsmm_on(&p, more, t));
                    assert_memory_equal(one, more, n * sizeof *one);
                }
                omp_set_num_threads(threads);
                double worst = check(&p, one, 0, 1e-6), blas = gap_to_openblas(&p, one);
                assert_true(blas <= 2e-6);
                memcpy(more, p.C0, n * sizeof *more);
                posemb_nn_gemm(NULL, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A, p.lda, p.B, p.ldb, p.beta, more, p.ldc);
                assert_memory_equal(one, more, n * sizeof *one);
                if (beta)
                    printf("libxsmm ta=%d tb=%d %dx%dx%d: worst %.3g, from OpenBLAS %.3g\n", p.ta, p.tb, p.M, p.N, p.K,
                           worst, blas);
                free(one);
                free(more);
                release(&p);
            }
}

/* What libxsmm's path declines, C untouched: posemb_nn_gemm then calls OpenBLAS. */
static void test_xsmm_declines(void **state)
{
    problem cases[] = {
        make(0, 0, 256, 64, 64, 0.5f, 0.0f, 1),    /* alpha other than 1 */
        make(0, 0, 256, 64, 64, 1.0f, 0.5f, 2),    /* beta other than 0 and 1 */
        make(1, 1, 64, 64, 256, 1.0f, 1.0f, 3),    /* both transposed */
        make(0, 0, 256, 257, 129, 1.0f, 1.0f, 4),  /* a width above 256, the other above 128 */
        make(0, 0, 256, 129, 257, 1.0f, 1.0f, 5),  /* the contraction above 256, the width above 128 */
        make(0, 0, 256, 1025, 64, 1.0f, 1.0f, 12), /* a width above 1024 */
        make(0, 1, 256, 64, 1025, 1.0f, 1.0f, 13), /* a transposed B's contraction above 1024 */
        make(1, 0, 257, 129, 256, 1.0f, 1.0f, 6),  /* a gradient's side above 256, the other above 128 */
        make(1, 0, 129, 257, 256, 1.0f, 1.0f, 11), /* its other side above 256 */
        make(1, 0, 64, 1025, 256, 1.0f, 1.0f, 14), /* a gradient's side above 1024 */
        make(0, 1, 256, 192, 128, 1.0f, 1.0f, 9),  /* a transposed B above 128 x 128 */
        make(0, 0, 32, 64, 64, 1.0f, 1.0f, 10),    /* below 2^18 multiply-adds */
        make(0, 0, 64, 30522, 64, 1.0f, 0.0f, 7),  /* the vocabulary's head */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        problem *p = &cases[c];
        float *C = malloc((size_t)p->M * p->ldc * sizeof *C);
        assert_false(xsmm_on(p, C, omp_get_max_threads()));
        assert_memory_equal(C, p->C0, (size_t)p->M * p->ldc * sizeof *C);
        free(C);
        release(p);
    }
    problem p = make(0, 0, 256, 64, 64, 1.0f, 1.0f, 8);
    int took = 0, moved = 0;
#pragma omp parallel num_threads(2) reduction(+ : took, moved)
    {
        float *C = malloc((size_t)p.M * p.ldc * sizeof *C);
        memcpy(C, p.C0, (size_t)p.M * p.ldc * sizeof *C);
        took += gemm_xsmm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A, p.lda, p.B, p.ldb, p.beta, C, p.ldc);
        moved += memcmp(C, p.C0, (size_t)p.M * p.ldc * sizeof *C) != 0;
        free(C);
    }
    assert_int_equal(took, 0); /* inside a parallel region */
    assert_int_equal(moved, 0);
    release(&p);
}

static void test_names(void **state)
{
    posemb_precision p;
    assert_true(posemb_precision_parse("bf16", &p) && p == POSEMB_PRECISION_BF16);
    assert_true(posemb_precision_parse("fp32", &p) && p == POSEMB_PRECISION_FP32);
    assert_false(posemb_precision_parse("fp16", &p));
    assert_false(posemb_precision_parse(NULL, &p));
    assert_string_equal(posemb_precision_name(POSEMB_PRECISION_BF16), "bf16");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallback_without_bf16),
        cmocka_unit_test(test_fp32),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_bf16_reuse),
        cmocka_unit_test(test_xent_tied_bf16),
        cmocka_unit_test(test_bf16_stash),
        cmocka_unit_test(test_bf16_in_parallel_is_fp32),
        cmocka_unit_test(test_linear_bias),
        cmocka_unit_test(test_linear_backward_set),
        cmocka_unit_test(test_gelu_fused_copy),
        cmocka_unit_test(test_layernorm_fused_copy),
        cmocka_unit_test(test_rmsnorm_fused_copy),
        cmocka_unit_test(test_swiglu_fused_copy),
        cmocka_unit_test(test_xsmm),
        cmocka_unit_test(test_xsmm_declines),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
