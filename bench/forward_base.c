/* Benchmark: the forward pass of a BERT encoder, no head, eval mode
 * (bench/README.md), the size given by name:
 *   forward-base  BERT-base: 12 layers, width 768, 12 heads, FFN 3072,
 *                 vocabulary 30522, 8 x 128 tokens
 *   forward-tiny  2 layers, width 256, 4 heads, 4 x 128 tokens (bench/run --quick)
 * Prints one JSON line: ms per batch (median over the timed passes),
 * tokens/s, the forward's model GFLOP/s, MFU against an sgemm peak measured
 * here, peak memory, two probes of the output (its mean |x| and the mean of
 * channel 0) and the parameter count (bench/torch_forward_base.py prints
 * the same).
 * PRECISION bf16 runs the dense products in bf16 (posemb/precision.h).
 * usage: bench_forward_base [PE] [SIZE] [THREADS] [STEPS] [fp32|bf16] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "sizes.h"
#include "posemb/model.h"
#include "posemb/rng.h"
#include "posemb/threads.h"
#include "core/rng_internal.h"

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    bench_args ba;
    int rc = bench_parse(argc, argv, "forward-base", &ba);
    const bench_forward_size *s = bench_forward_size_named(ba.size);
    if (rc == 2 || (!rc && !s)) {
        fprintf(stderr, "usage: bench_forward_base [PE] [forward-base|forward-tiny] [THREADS] [STEPS] [fp32|bf16]\n");
        return 2;
    }
    if (rc) return rc;
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_BERT); /* BERT-base's: 512 positions, 2 token types */
    c.layers = s->layers;
    c.hidden = s->hidden;
    c.heads = s->heads;
    c.intermediate = s->inter;
    c.vocab_size = s->vocab;
    c.hidden_dropout = c.attn_dropout = 0.0f;
    snprintf(c.pe, sizeof c.pe, "%s", ba.pe);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, POSEMB_HEAD_NONE, 0, &err) || posemb_model_create(&m, &c, &err)) {
        fprintf(stderr, "forward_base: %s\n", err.msg);
        return 1;
    }
    posemb_model_init(m, 0);
    posemb_model_set_matmul(m, ba.mm);
    posemb_model_set_train(m, 0, 0, 0); /* eval mode (the default; said for the reader) */
    posemb_model_set_inference(m, 1);   /* as PyTorch's inference_mode: one layer's activations */
    int N = s->batch * s->len;
    int32_t *ids = malloc((size_t)N * sizeof *ids);
    posemb_rng r;
    posemb_rng_seed(&r, 1, 1);
    for (int i = 0; i < N; i++)
        ids[i] = s->vocab / 4 + (int32_t)posemb_rng_below(&r, (uint32_t)(s->vocab - s->vocab / 4));
    posemb_batch b = {.B = s->batch, .T = s->len, .ids = ids};
    const int32_t *dumped[] = {ids};
    const long dumped_len[] = {N};
    if (bench_dump(m, dumped, dumped_len, 1)) return 1;
    double *ms = malloc((size_t)ba.steps * sizeof *ms);
    /* The peak moves with the host's load: taken before and after the timed
     * steps, MFU against the higher. */
    double peak_before = bench_sgemm_peak(ba.mm);
    for (int i = -2; i < ba.steps; i++) { /* two warm-up passes */
        double t0 = bench_now();
        if (posemb_model_forward(m, &b, &err)) {
            fprintf(stderr, "forward_base: %s\n", err.msg);
            return 1;
        }
        if (i >= 0) ms[i] = 1e3 * (bench_now() - t0);
    }
    /* Probes of the output: from the same weights (bench/run --same-init) both engines agree on them. */
    const float *h = posemb_model_last_hidden(m);
    double mean_abs = 0, mean_c0 = 0;
    for (long i = 0; i < (long)N * s->hidden; i++) mean_abs += h[i] < 0 ? -h[i] : h[i];
    for (long i = 0; i < N; i++) mean_c0 += h[i * s->hidden];
    mean_abs /= (double)N * s->hidden;
    mean_c0 /= N;
    double med = bench_median(ms, ba.steps);
    double gflops = bench_encoder_flops(s->layers, s->hidden, s->inter, s->batch, s->len) / (med / 1e3) / 1e9;
    double peak_after = bench_sgemm_peak(ba.mm), peak = peak_after > peak_before ? peak_after : peak_before;
    printf("{\"engine\": \"posemb\", \"bench\": \"%s\", \"pe\": \"%s\", \"threads\": %d, \"precision\": \"%s\", "
           "\"ms_per_batch\": %.3f, "
           "\"tokens_per_s\": %.1f, \"gflops\": %.3f, \"sgemm_peak_gflops\": %.2f, \"sgemm_peak_before\": %.2f, "
           "\"sgemm_peak_after\": %.2f, \"mfu\": %.4f, \"max_rss_kb\": %ld, \"blas_core\": \"%s\", "
           "\"out_mean_abs\": %.6f, \"out_mean_c0\": %.6f, \"steps\": %d, \"params\": %zu}\n",
           s->name, ba.pe, ba.threads, ba.precision, med, N / (med / 1e3), gflops, peak, peak_before, peak_after,
           gflops / peak, bench_max_rss_kb(), posemb_blas_core(), mean_abs, mean_c0, ba.steps,
           posemb_model_n_floats(m));
    posemb_model_free(m);
    posemb_matmul_free(ba.mm);
    free(ids);
    free(ms);
    return 0;
}
