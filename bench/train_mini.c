/* Benchmark: BERT masked-LM training steps (bench/README.md). Prints one JSON
 * line: tokens/s (median over the timed steps), model GFLOP/s, MFU against
 * an sgemm peak measured here, and peak memory. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/rng.h"
#include "posemb/threads.h"

typedef struct bench_size {
    const char *name;
    int layers, hidden, heads, inter, vocab, batch, len;
} bench_size;

static const bench_size SIZES[] = {
    {"train-mini", 4, 256, 4, 1024, 30522, 32, 128},
    {"train-tiny", 2, 64, 4, 256, 1000, 16, 64},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The best sgemm rate on large square products, GFLOP/s: the peak MFU refers to. */
static double sgemm_peak(void)
{
    const int n = 1536;
    float *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b), *c = malloc((size_t)n * n * sizeof *c);
    for (long i = 0; i < (long)n * n; i++) a[i] = b[i] = 1e-3f * (float)(i % 1000);
    double best = 0;
    for (int r = 0; r < 6; r++) {
        double t = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double gf = 2.0 * n * n * n / (now() - t) / 1e9;
        if (gf > best) best = gf;
    }
    free(a), free(b), free(c);
    return best;
}

/* FLOPs of one training step (forward + backward = 3x forward) of the dense
 * products, the attention products, and the MLM head on the masked tokens. */
static double step_flops(const bench_size *s, long masked)
{
    double tokens = (double)s->batch * s->len, D = s->hidden, F = s->inter; /* F: <complex.h> owns I */
    double dense = 2.0 * tokens * s->layers * (4 * D * D + 2 * D * F);
    double attn = 4.0 * s->batch * (double)s->len * s->len * D * s->layers;
    double head = 2.0 * masked * (D * D + D * s->vocab);
    return 3.0 * (dense + attn + head);
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "ape", *size = argc > 2 ? argv[2] : "train-mini";
    int threads = argc > 3 ? atoi(argv[3]) : 0, steps = argc > 4 ? atoi(argv[4]) : 10;
    const bench_size *s = NULL;
    for (size_t i = 0; i < sizeof SIZES / sizeof *SIZES; i++)
        if (!strcmp(SIZES[i].name, size)) s = &SIZES[i];
    if (!s || steps < 1) {
        fprintf(stderr, "usage: train_mini [PE] [train-mini|train-tiny] [THREADS] [STEPS]\n");
        return 2;
    }
    threads = posemb_threads_set(threads);
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_BERT);
    c.layers = s->layers, c.hidden = s->hidden, c.heads = s->heads, c.intermediate = s->inter;
    c.vocab_size = s->vocab, c.max_position = s->len, c.hidden_dropout = c.attn_dropout = 0.0f;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, POSEMB_HEAD_MLM, 0, &err) || posemb_model_create(&m, &c, &err)) {
        fprintf(stderr, "train_mini: %s\n", err.msg);
        return 1;
    }
    posemb_model_init(m, 0);
    int N = s->batch * s->len;
    int32_t *ids = malloc((size_t)N * sizeof *ids), *targets = malloc((size_t)N * sizeof *targets);
    posemb_rng r;
    posemb_rng_seed(&r, 1, 1);
    long masked = 0;
    for (int i = 0; i < N; i++) { /* a fixed 15% of positions */
        ids[i] = s->vocab / 4 + (int32_t)posemb_rng_below(&r, (uint32_t)(s->vocab - s->vocab / 4));
        targets[i] = posemb_rng_uniform(&r) < 0.15 ? ids[i] : -100;
        masked += targets[i] >= 0;
    }
    posemb_batch b = {s->batch, s->len, ids, NULL, NULL};
    posemb_targets t = {targets, NULL, NULL, NULL, NULL};
    posemb_adamw o;
    posemb_adamw_config oc = posemb_adamw_defaults(1e-4f, 0, 1000000);
    posemb_adamw_init(&o, m, &err);
    double *ms = malloc((size_t)steps * sizeof *ms), loss = 0;
    for (int i = -2; i < steps; i++) { /* two warm-up steps */
        double t0 = now();
        posemb_loss l;
        posemb_model_zero_grad(m);
        if (posemb_model_forward(m, &b, &err) || posemb_model_loss(m, &t, 1.0f, &l, &err)) {
            fprintf(stderr, "train_mini: %s\n", err.msg);
            return 1;
        }
        posemb_adamw_step(&o, m, &oc);
        if (i >= 0) ms[i] = 1e3 * (now() - t0);
        loss = l.loss;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
    double med = ms[steps / 2], tok_s = N / (med / 1e3), gflops = step_flops(s, masked) / (med / 1e3) / 1e9;
    double peak = sgemm_peak();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"engine\": \"posemb\", \"bench\": \"%s\", \"pe\": \"%s\", \"threads\": %d, \"tokens_per_s\": %.1f, "
           "\"ms_per_step\": %.2f, \"gflops\": %.2f, \"sgemm_peak_gflops\": %.2f, \"mfu\": %.3f, \"max_rss_kb\": %ld, "
           "\"loss\": %.4f}\n",
           s->name, spec, threads, tok_s, med, gflops, peak, gflops / peak, ru.ru_maxrss, loss);
    posemb_adamw_free(&o);
    posemb_model_free(m);
    free(ids), free(targets), free(ms);
    return 0;
}
