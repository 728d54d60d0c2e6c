/* The products alone (bench/README.md, "What the products allow"): times
 * every matrix product that one step of a bench size issues, in the shapes
 * the engine issues them (nn_linear: forward x W^T; backward dy W and
 * dy^T x, accumulated; attention: two products per head forward and four
 * backward, fp32, the heads spread over the threads), each on warm caches,
 * and adds them up: the time a step would take if nothing but its products
 * took time, hence the most tokens/s these products allow on this machine.
 * The relative PEs' extra products are not included (the bound is ape's).
 * Prints one JSON line per product, then the total.
 * usage: bench_products [SIZE] [THREADS] [fp32|bf16]
 *        SIZE: train-mini, train-tiny, train-small, train-mini-clm, train-llama,
 *              train-llama-tiny (a training step) or forward-base, forward-tiny
 *              (a forward pass) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "sizes.h"
#include "nn/nn_internal.h"
#include "core/threads_internal.h"

/* One dense product as posemb_nn_gemm takes it, and how often a step issues it. */
typedef struct product {
    const char *name;
    int ta, tb, M, N, K;
    float beta;
    int per_step;
} product;

/* A step's shapes, whatever the bench: tokens, widths, the head's rows and width. */
typedef struct shapes {
    int layers, D, H, F, B, T, train;
    int head_rows, head_mid, head_out; /* head: [rows, D] -> [rows, mid] -> [rows, out]; no head when rows = 0,
                                          no transform when mid = 0 (a CLM head: [rows, D] -> [rows, out]) */
    int KV, glu; /* key/value heads (H but for a Llama's GQA); 2 for SwiGLU's fused gate and up, else 1 */
} shapes;

static double seconds_per_call(void (*call)(void *), void *arg)
{
    double t[5];
    call(arg); /* warm: caches, oneDNN's primitive */
    for (int r = 0; r < 5; r++) {
        int reps = 0;
        double t0 = bench_now(), el;
        do {
            call(arg);
            reps++;
        } while ((el = bench_now() - t0) < 0.03);
        t[r] = el / reps;
    }
    return bench_median(t, 5);
}

typedef struct dense_arg {
    const product *p;
    float *a, *b, *c;
    posemb_matmul *mm;
} dense_arg;

static void dense_call(void *v)
{
    const dense_arg *d = v;
    const product *p = d->p;
    posemb_nn_gemm(d->mm, p->ta, p->tb, p->M, p->N, p->K, 1.0f, d->a, p->ta ? p->M : p->K, d->b, p->tb ? p->K : p->N,
                   p->beta, d->c, p->N);
}

static float *filled(long n)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (long i = 0; x && i < n; i++) x[i] = 1e-2f * (float)((i * 7919) % 201 - 100);
    return x;
}

/* Seconds per call of p, or -1 when out of memory. */
static double time_dense(const product *p, posemb_matmul *mm)
{
    dense_arg d = {.p = p,
                   .a = filled((long)p->M * p->K),
                   .b = filled((long)p->K * p->N),
                   .c = filled((long)p->M * p->N),
                   .mm = mm};
    double s = d.a && d.b && d.c ? seconds_per_call(dense_call, &d) : -1.0;
    free(d.a);
    free(d.b);
    free(d.c);
    return s;
}

typedef struct attn_arg {
    const shapes *s;
    float *qkv, *dqkv, *probs, *out, *scratch;
    int backward;
} attn_arg;

/* One layer's per-head products, as src/nn/attention.c issues them: the
 * rows hold q (H heads), then k and v (KV heads each); query head h reads
 * key/value head h / (H/KV). The backward runs a key/value head's group of
 * query heads in one task, accumulating into its dk and dv, as the GQA
 * kernel does (with KV = H each group is one head). */
static void attn_call(void *v)
{
    const attn_arg *a = v;
    int B = a->s->B, T = a->s->T, D = a->s->D, H = a->s->H, KV = a->s->KV, d = D / H, grp = H / KV, ld = D + 2 * KV * d;
    float scale = 1.0f / sqrtf((float)d);
    if (!a->backward) {
#pragma omp parallel for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const float *q = a->qkv + (size_t)b * T * ld + (size_t)h * d,
                            *k = a->qkv + (size_t)b * T * ld + D + (size_t)(h / grp) * d, *vv = k + (size_t)KV * d;
                float *pr = a->probs + ((size_t)b * H + h) * T * T, *z = a->out + (size_t)b * T * D + (size_t)h * d;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, scale, q, ld, k, ld, 0.0f, pr, T);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, d, T, 1.0f, pr, T, vv, ld, 0.0f, z, D);
            }
        return;
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < KV; g++) {
            const float *k = a->qkv + (size_t)b * T * ld + D + (size_t)g * d, *vv = k + (size_t)KV * d;
            float *dk = a->dqkv + (size_t)b * T * ld + D + (size_t)g * d, *dv = dk + (size_t)KV * d;
            float *dp = a->scratch + (size_t)posemb_thread_id() * T * T;
            for (int i = 0; i < grp; i++) {
                int h = g * grp + i;
                float beta = i ? 1.0f : 0.0f;
                const float *q = a->qkv + (size_t)b * T * ld + (size_t)h * d;
                float *pr = a->probs + ((size_t)b * H + h) * T * T, *z = a->out + (size_t)b * T * D + (size_t)h * d;
                float *dq = a->dqkv + (size_t)b * T * ld + (size_t)h * d;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, 1.0f, z, D, vv, ld, 0.0f, dp, T);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, d, T, 1.0f, pr, T, z, D, beta, dv, ld);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, d, T, scale, dp, T, k, ld, 0.0f, dq, ld);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, d, T, scale, dp, T, q, ld, beta, dk, ld);
            }
        }
}

static double time_attention(const shapes *s, int backward)
{
    long N = (long)s->B * s->T, W = s->D + 2L * s->KV * (s->D / s->H);
    attn_arg a = {s,
                  filled(N * W),
                  filled(N * W),
                  filled((long)s->B * s->H * s->T * s->T),
                  filled(N * s->D),
                  filled((long)posemb_threads_max() * s->T * s->T),
                  backward};
    double t = a.qkv && a.dqkv && a.probs && a.out && a.scratch ? seconds_per_call(attn_call, &a) : -1.0;
    free(a.qkv);
    free(a.dqkv);
    free(a.probs);
    free(a.out);
    free(a.scratch);
    return t;
}

/* The dense products of a step: each linear (in -> out) on n rows, `times`
 * per step, forward and, when training, its two backward products. */
static int linear_products(product *p, const char *name, int n, int in, int out, int times, int train)
{
    p[0] = (product){name, 0, 1, n, out, in, 0.0f, times};
    if (!train) return 1;
    p[1] = (product){name, 0, 0, n, in, out, 1.0f, times}; /* dx += dy W */
    p[2] = (product){name, 1, 0, out, in, n, 1.0f, times}; /* dW += dy^T x */
    return 3;
}

static const char *op_name(const product *p, int train)
{
    static const char *names[] = {"forward", "backward dx", "backward dW"};
    return names[!train ? 0 : p->ta ? 2 : !p->tb ? 1 : 0];
}

static int shapes_named(const char *name, shapes *s)
{
    const bench_train_size *t = bench_train_size_named(name);
    const bench_forward_size *f = bench_forward_size_named(name);
    if (t) {
        int mlm = t->head == POSEMB_HEAD_MLM, clm = t->head == POSEMB_HEAD_CLM, llama = t->arch == POSEMB_LLAMA;
        /* MLM: transform and decoder on the masked rows; CLM: the decoder alone on all but each sequence's last
         * row; classification: pooler and classifier on each sequence's first row */
        *s = (shapes){.layers = t->layers,
                      .D = t->hidden,
                      .H = t->heads,
                      .F = t->inter,
                      .B = t->batch,
                      .T = t->len,
                      .train = 1,
                      .KV = llama ? t->kv_heads : t->heads,
                      .glu = llama ? 2 : 1};
        s->head_rows = mlm ? (int)lround(0.15 * t->batch * t->len) : clm ? t->batch * (t->len - 1) : t->batch;
        s->head_mid = clm ? 0 : t->hidden;
        s->head_out = mlm || clm ? t->vocab : 2;
        return 1;
    }
    if (f)
        *s = (shapes){.layers = f->layers,
                      .D = f->hidden,
                      .H = f->heads,
                      .F = f->inter,
                      .B = f->batch,
                      .T = f->len,
                      .KV = f->heads,
                      .glu = 1};
    return f != NULL;
}

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    const char *size = argc > 1 ? argv[1] : "train-mini", *prec_name = argc > 3 ? argv[3] : "fp32";
    shapes s;
    posemb_precision prec;
    if (argc > 4 || !shapes_named(size, &s) || !posemb_precision_parse(prec_name, &prec)) {
        fprintf(stderr, "usage: bench_products [train-mini|train-tiny|train-small|train-mini-clm|train-llama|"
                        "train-llama-tiny|forward-base|forward-tiny] [THREADS] [fp32|bf16]\n");
        return 2;
    }
    posemb_matmul *mm;
    posemb_error err;
    if (posemb_matmul_new(&mm, prec, &err)) {
        fprintf(stderr, "bench_products: %s products unavailable: %s\n", prec_name, err.msg);
        return 1;
    }
    int threads = posemb_threads_set(argc > 2 ? atoi(argv[2]) : 0), N = s.B * s.T, n = 0;
    product p[24];
    n += linear_products(p + n, "q, k, v", N, s.D, s.D + 2 * s.KV * (s.D / s.H), s.layers, s.train);
    n += linear_products(p + n, "attention output", N, s.D, s.D, s.layers, s.train);
    n += linear_products(p + n, "feed-forward in", N, s.D, s.glu * s.F, s.layers, s.train);
    n += linear_products(p + n, "feed-forward out", N, s.F, s.D, s.layers, s.train);
    if (s.head_rows && s.head_mid) {
        n += linear_products(p + n, "head transform", s.head_rows, s.D, s.head_mid, 1, s.train);
        n += linear_products(p + n, "head output", s.head_rows, s.head_mid, s.head_out, 1, s.train);
    } else if (s.head_rows) {
        n += linear_products(p + n, "head output", s.head_rows, s.D, s.head_out, 1, s.train);
    }
    double dense = 0, attn = 0, flops = 0;
    for (int i = 0; i < n; i++) {
        double t = time_dense(&p[i], mm), f = 2.0 * p[i].M * p[i].N * p[i].K;
        if (t < 0) {
            fprintf(stderr, "bench_products: out of memory\n");
            return 1;
        }
        dense += t * p[i].per_step;
        flops += f * p[i].per_step;
        printf("{\"bench\": \"products\", \"size\": \"%s\", \"product\": \"%s %s\", \"op\": \"%c%c\", \"M\": %d, "
               "\"N\": %d, \"K\": %d, \"per_step\": %d, \"us\": %.2f, \"gflops\": %.1f}\n",
               size, p[i].name, op_name(&p[i], s.train), p[i].ta ? 'T' : 'N', p[i].tb ? 'T' : 'N', p[i].M, p[i].N,
               p[i].K, p[i].per_step, 1e6 * t, f / t / 1e9);
    }
    for (int bw = 0; bw <= s.train; bw++) {
        double t = time_attention(&s, bw), f = (bw ? 8.0 : 4.0) * s.B * (double)s.T * s.T * s.D;
        if (t < 0) {
            fprintf(stderr, "bench_products: out of memory\n");
            return 1;
        }
        attn += t * s.layers;
        flops += f * s.layers;
        printf("{\"bench\": \"products\", \"size\": \"%s\", \"product\": \"attention, all heads, %s\", \"heads\": %d, "
               "\"per_step\": %d, \"us\": %.2f, \"gflops\": %.1f}\n",
               size, bw ? "backward" : "forward", s.B * s.H, s.layers, 1e6 * t, f / t / 1e9);
    }
    double total = dense + attn;
    printf("{\"bench\": \"products\", \"size\": \"%s\", \"threads\": %d, \"precision\": \"%s\", \"products_ms\": %.3f, "
           "\"dense_ms\": %.3f, \"attention_ms\": %.3f, \"gflops\": %.1f, \"tokens_per_s_bound\": %.1f}\n",
           size, threads, prec_name, 1e3 * total, 1e3 * dense, 1e3 * attn, flops / total / 1e9, N / total);
    posemb_matmul_free(mm);
    return 0;
}
