/* Helpers shared by the benchmarks (bench/README.md): a monotonic clock, the
 * median of the timed steps, the sgemm peak that MFU refers to, peak memory.
 * A header, not a .c file: CMake builds one executable from each .c file
 * of bench/, and this one has no main. */
#ifndef POSEMB_BENCH_COMMON_H
#define POSEMB_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "posemb/blas.h"
#include "posemb/model.h"
#include "posemb/nn.h"
#include "posemb/precision.h"
#include "posemb/threads.h"
#include "nn/nn_internal.h"

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of x [n] (sorts x). */
static inline double bench_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* The arguments every bench takes: [PE] [SIZE] [THREADS] [STEPS] [fp32|bf16]. */
typedef struct bench_args {
    const char *pe, *size, *precision;
    int threads, steps;
    posemb_matmul *mm; /* the precision's product context (the bench frees it) */
} bench_args;

/* Parses them, sets the threads and makes the matmul context: 0, 2 on bad
 * arguments (the caller prints its usage), 1 with a message when this
 * machine cannot run the precision (a bf16 row must not time fp32). */
static inline int bench_parse(int argc, char **argv, const char *default_size, bench_args *a)
{
    a->pe = argc > 1 ? argv[1] : "ape";
    a->size = argc > 2 ? argv[2] : default_size;
    a->threads = argc > 3 ? atoi(argv[3]) : 0;
    a->steps = argc > 4 ? atoi(argv[4]) : 10;
    a->precision = argc > 5 ? argv[5] : "fp32";
    posemb_precision p;
    if (a->steps < 1 || !posemb_precision_parse(a->precision, &p)) return 2;
    posemb_error err;
    if (posemb_matmul_new(&a->mm, p, &err)) {
        fprintf(stderr, "bench: %s products unavailable: %s\n", a->precision, err.msg);
        return 1;
    }
    a->threads = posemb_threads_set(a->threads);
    return 0;
}

/* The best product rate on large square products (1536^3), GFLOP/s, on the
 * threads in force, in mm's precision (bf16: the conversions included):
 * the peak MFU refers to. The PyTorch peer measures its own the same way
 * (torch.mm). */
static inline double bench_sgemm_peak(posemb_matmul *mm)
{
    const int n = 1536;
    float *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b),
          *c = malloc((size_t)n * n * sizeof *c);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return 0.0;
    }
    for (long i = 0; i < (long)n * n; i++) a[i] = b[i] = 1e-3f * (float)(i % 1000);
    double best = 0;
    for (int r = 0; r < 6; r++) {
        double t = bench_now();
        posemb_nn_gemm(mm, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double gf = 2.0 * n * n * n / (bench_now() - t) / 1e9;
        if (gf > best) best = gf;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* Peak resident memory of this process, KiB (Linux's ru_maxrss). */
static inline long bench_max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* FLOPs of one forward pass of the encoder layers: the dense products
 * (q, k, v, output projection, FFN) and the two attention products; the
 * PE's own work (relative tables, rotations, biases) is not counted, so
 * every PE is measured against the same model FLOPs. */
static inline double bench_encoder_flops(int layers, int D, int F, int B, int T)
{
    double tokens = (double)B * T;
    double dense = 2.0 * tokens * layers * (4.0 * D * D + 2.0 * D * F);
    double attn = 4.0 * B * (double)T * T * D * layers;
    return dense + attn;
}

/* The same for a Llama's layers, whose products differ from BERT's in two
 * places. Per token and layer: q and the output projection, D x D each; k
 * and v, D x KV d each (grouped-query attention: KV heads of width d = D/H,
 * not H); SwiGLU's gate, up and down, D x F each (three matrices, not two).
 * The attention products are BERT's: every query head reads T keys, the
 * causal mask's T x T counted whole, as PaLM's MFU counts it and as both
 * engines compute it (the full product, then the mask). */
static inline double bench_llama_flops(int layers, int D, int H, int KV, int F, int B, int T)
{
    double tokens = (double)B * T, kvd = (double)KV * (D / H);
    double dense = 2.0 * tokens * layers * (2.0 * D * D + 2.0 * D * kvd + 3.0 * (double)D * F);
    double attn = 4.0 * B * (double)T * T * D * layers;
    return dense + attn;
}

/* With POSEMB_BENCH_DUMP=DIR in the environment, a bench writes its
 * initial model (DIR/config.json, DIR/model.safetensors: posemb_model_save)
 * and its batch (DIR/batch.bin: the int32 arrays one after the other) before
 * it times anything; the PyTorch peer, started with the same variable, reads
 * them, so that both engines start from the same weights and data and their
 * losses agree to float rounding (bench/run --same-init). Returns 0 when not
 * asked or done, 1 on a failure (said on stderr). */
static inline int bench_dump(posemb_model *m, const int32_t *const *arrays, const long *lens, int n)
{
    const char *dir = getenv("POSEMB_BENCH_DUMP");
    if (!dir || !*dir) return 0;
    posemb_error err;
    if (posemb_model_save(m, dir, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/batch.bin", dir);
    FILE *f = fopen(path, "wb");
    int bad = !f;
    for (int i = 0; f && i < n; i++) bad |= fwrite(arrays[i], sizeof(int32_t), (size_t)lens[i], f) != (size_t)lens[i];
    if (f) bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "bench: cannot write %s\n", path);
    return bad;
}

#endif
