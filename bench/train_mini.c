/* Benchmark: training steps (bench/README.md), the size given by name (sizes.h):
 *   train-mini        BERT masked LM, 4 layers, width 256, vocabulary 30522, 32 x 128 tokens
 *   train-tiny        the same at a smoke-test size (bench/run --quick)
 *   train-small       the embedded-default study's model and step (src/train/study.c):
 *                     2 layers, width 64, vocabulary 64, one token type, 32 x 32 tokens,
 *                     2-label classification, AdamW lr 3e-3 with the study's schedule
 *   train-mini-clm    train-mini's sizes as a GPT-2 causal LM
 *   train-llama       a Llama causal LM: 4 layers, width 256, 8 heads, 2 key/value heads,
 *                     SwiGLU 688, vocabulary 32000, untied lm_head, 16 x 128 tokens
 *   train-llama-tiny  the same at a smoke-test size
 *   train-data        the real-data study's pretraining step: BERT masked LM, 4 layers,
 *                     width 128, vocabulary 30522, 32 x 128 tokens, dropout 0.1 (training
 *                     mode, keyed by the step as the study's trainer keys it)
 * Prints one JSON line: tokens/s (median over the timed steps), model
 * GFLOP/s, MFU against an sgemm peak measured here, peak memory, the loss
 * of the first and of the last step (bench/torch_train_mini.py prints the
 * same), and the parameter count.
 * PRECISION bf16 runs the dense products in bf16 (posemb/precision.h); the
 * program fails if this machine cannot, rather than time fp32 under its name.
 * usage: bench_train_mini [PE] [SIZE] [THREADS] [STEPS] [fp32|bf16] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "sizes.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/rng.h"
#include "posemb/threads.h"
#include "core/rng_internal.h"

/* FLOPs of one training step (forward + backward = 3x forward): the layers
 * (bench_encoder_flops, or bench_llama_flops for a Llama's GQA and SwiGLU)
 * and the head on the rows it reads (MLM: the masked tokens; CLM: every
 * token but the last of each sequence, which predicts nothing; classification:
 * the first token of each sequence). A CLM head is one D x V product whether
 * tied (GPT-2) or not (Llama): untying adds parameters, not products.
 * train-llama: layers 2 x 2048 x 4 x (2 x 256^2 + 2 x 256 x 64 + 3 x 256 x 688)
 * = 11.34 GFLOP, attention 4 x 16 x 128^2 x 256 x 4 = 1.07, lm_head
 * 2 x 2032 x 256 x 32000 = 33.29 (73% of the step); x3: 137.1 GFLOP. */
static double step_flops(const bench_train_size *s, long head_rows)
{
    double D = s->hidden;
    double layers = s->arch == POSEMB_LLAMA
                        ? bench_llama_flops(s->layers, s->hidden, s->heads, s->kv_heads, s->inter, s->batch, s->len)
                        : bench_encoder_flops(s->layers, s->hidden, s->inter, s->batch, s->len);
    double head = s->head == POSEMB_HEAD_MLM   ? 2.0 * head_rows * (D * D + D * s->vocab)
                  : s->head == POSEMB_HEAD_CLM ? 2.0 * head_rows * D * s->vocab /* no transform */
                                               : 2.0 * head_rows * (D * D + D * 2);
    return 3.0 * (layers + head);
}

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    bench_args ba;
    int rc = bench_parse(argc, argv, "train-mini", &ba);
    const bench_train_size *s = bench_train_size_named(ba.size);
    if (rc == 2 || (!rc && !s)) {
        fprintf(stderr, "usage: bench_train_mini [PE] [train-mini|train-tiny|train-small|train-mini-clm|train-llama|"
                        "train-llama-tiny|train-data] [THREADS] [STEPS] [fp32|bf16]\n");
        return 2;
    }
    if (rc) return rc;
    posemb_config c;
    posemb_config_defaults(&c, s->arch);
    c.layers = s->layers;
    c.hidden = s->hidden;
    c.heads = s->heads;
    c.intermediate = s->inter;
    c.vocab_size = s->vocab;
    c.type_vocab = s->type_vocab;
    c.max_position = s->max_position;
    if (s->arch == POSEMB_LLAMA) c.kv_heads = s->kv_heads; /* tie_embeddings stays 0: Llama 2's own lm_head */
    c.hidden_dropout = c.attn_dropout = s->dropout;
    snprintf(c.pe, sizeof c.pe, "%s", ba.pe);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, s->head, s->head == POSEMB_HEAD_CLASSIFY ? 2 : 0, &err) ||
        posemb_model_create(&m, &c, &err)) {
        fprintf(stderr, "train_mini: %s\n", err.msg);
        return 1;
    }
    posemb_model_init(m, 0);
    posemb_model_set_matmul(m, ba.mm);
    int N = s->batch * s->len;
    int32_t *ids = malloc((size_t)N * sizeof *ids), *targets = malloc((size_t)N * sizeof *targets);
    int32_t *labels = malloc((size_t)s->batch * sizeof *labels);
    posemb_rng r;
    posemb_rng_seed(&r, 1, 1);
    long head_rows = s->head == POSEMB_HEAD_MLM ? 0 : s->head == POSEMB_HEAD_CLM ? N - s->batch : s->batch;
    for (int i = 0; i < N; i++) { /* a fixed batch; MLM: a fixed 15% of positions */
        ids[i] = s->vocab / 4 + (int32_t)posemb_rng_below(&r, (uint32_t)(s->vocab - s->vocab / 4));
        targets[i] = posemb_rng_uniform(&r) < 0.15 ? ids[i] : -100;
        if (s->head == POSEMB_HEAD_MLM) head_rows += targets[i] >= 0;
    }
    for (int i = 0; i < s->batch; i++) labels[i] = (int32_t)posemb_rng_below(&r, 2);
    posemb_batch b = {.B = s->batch, .T = s->len, .ids = ids};
    /* M-RoPE (rope:mrope=) reads 3D ids: each sequence one frame of patches 16 wide, as an image's tokens */
    int32_t *axes = malloc((size_t)POSEMB_PE_AXES * N * sizeof *axes);
    for (int i = 0; i < N; i++) {
        int u = i % s->len;
        axes[i] = 0, axes[N + i] = u / 16, axes[2 * N + i] = u % 16;
    }
    if (strstr(ba.pe, "mrope=")) b.axes = axes;
    posemb_targets t = {};
    if (s->head == POSEMB_HEAD_MLM) t.tokens = targets;
    else if (s->head == POSEMB_HEAD_CLM) t.tokens = ids; /* HF's labels: the ids, shifted inside */
    else t.labels = labels;
    const int32_t *dumped[] = {ids, targets, labels};
    const long dumped_len[] = {N, N, s->batch};
    if (bench_dump(m, dumped, dumped_len, 3)) return 1;
    posemb_adamw o;
    posemb_adamw_config oc = posemb_adamw_defaults(s->lr, s->warmup, s->total);
    if (posemb_adamw_init(&o, m, &err)) {
        fprintf(stderr, "train_mini: %s\n", err.msg);
        return 1;
    }
    double *ms = malloc((size_t)ba.steps * sizeof *ms), loss = 0, loss0 = 0;
    /* The peak moves with the host's load: taken before and after the timed
     * steps, MFU against the higher. */
    double peak_before = bench_sgemm_peak(ba.mm);
    for (int i = -2; i < ba.steps; i++) { /* two warm-up steps */
        double t0 = bench_now();
        posemb_loss l;
        posemb_model_zero_grad(m);
        if (s->dropout > 0.0f) posemb_model_set_train(m, 1, 1, (uint64_t)(i + 2)); /* a new draw each step */
        if (posemb_model_forward(m, &b, &err) || posemb_model_loss(m, &t, 1.0f, &l, &err)) {
            fprintf(stderr, "train_mini: %s\n", err.msg);
            return 1;
        }
        posemb_adamw_step(&o, m, &oc);
        if (i >= 0) ms[i] = 1e3 * (bench_now() - t0);
        if (i == -2) loss0 = l.loss; /* from the initial weights: a check of the forward pass */
        loss = l.loss;
    }
    double med = bench_median(ms, ba.steps), tok_s = N / (med / 1e3),
           gflops = step_flops(s, head_rows) / (med / 1e3) / 1e9;
    double peak_after = bench_sgemm_peak(ba.mm), peak = peak_after > peak_before ? peak_after : peak_before;
    printf("{\"engine\": \"posemb\", \"bench\": \"%s\", \"pe\": \"%s\", \"threads\": %d, \"precision\": \"%s\", "
           "\"tokens_per_s\": %.1f, "
           "\"ms_per_step\": %.3f, \"gflops\": %.3f, \"sgemm_peak_gflops\": %.2f, \"sgemm_peak_before\": %.2f, "
           "\"sgemm_peak_after\": %.2f, \"mfu\": %.4f, \"max_rss_kb\": %ld, \"blas_core\": \"%s\", "
           "\"loss0\": %.6f, \"loss\": %.6f, \"steps\": %d, \"params\": %zu}\n",
           s->name, ba.pe, ba.threads, ba.precision, tok_s, med, gflops, peak, peak_before, peak_after, gflops / peak,
           bench_max_rss_kb(), posemb_blas_core(), loss0, loss, ba.steps, posemb_model_n_floats(m));
    posemb_adamw_free(&o);
    posemb_model_free(m);
    posemb_matmul_free(ba.mm);
    free(ids);
    free(axes);
    free(targets);
    free(labels);
    free(ms);
    return 0;
}
