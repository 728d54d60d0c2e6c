/* The benchmarks' sizes by name (bench/README.md), shared by the benches
 * and by products.c, which times the products of the same sizes. */
#ifndef POSEMB_BENCH_SIZES_H
#define POSEMB_BENCH_SIZES_H

#include <stddef.h>
#include <string.h>

#include "posemb/model.h"

/* A training step: BERT with an MLM or a classification head, or a decoder
 * (GPT-2, Llama) with a causal-LM head. */
typedef struct bench_train_size {
    const char *name;
    int layers, hidden, heads, inter, vocab, type_vocab, max_position, batch, len;
    posemb_head head; /* MLM: loss on a fixed 15% of positions; CLASSIFY: 2 labels; CLM: every next token */
    float lr;
    long warmup, total; /* the learning-rate schedule (posemb_lr_at) */
    posemb_arch arch;   /* BERT unless said */
    int kv_heads;       /* Llama: key/value heads (grouped-query attention); 0 elsewhere */
    float dropout;      /* hidden and attention dropout in training mode; 0 (no dropout) unless said */
} bench_train_size;

/* A forward pass of a BERT encoder, no head. */
typedef struct bench_forward_size {
    const char *name;
    int layers, hidden, heads, inter, vocab, batch, len;
} bench_forward_size;

/* NULL for an unknown name. */
static inline const bench_train_size *bench_train_size_named(const char *name)
{
    static const bench_train_size sizes[] = {
        {"train-mini", 4, 256, 4, 1024, 30522, 2, 128, 32, 128, POSEMB_HEAD_MLM, 1e-4f, 0, 1000000, POSEMB_BERT, 0,
         0.0f},
        {"train-tiny", 2, 64, 4, 256, 1000, 2, 64, 16, 64, POSEMB_HEAD_MLM, 1e-4f, 0, 1000000, POSEMB_BERT, 0, 0.0f},
        /* posemb_study_default(): tables sized for the longest evaluation (8 x 32), 250 steps, warm-up 25 */
        {"train-small", 2, 64, 4, 128, 64, 1, 256, 32, 32, POSEMB_HEAD_CLASSIFY, 3e-3f, 25, 250, POSEMB_BERT, 0, 0.0f},
        /* the real-data study's pretraining step (posemb_study_data_default, study_data.c): BERT 4 x 128,
         * FFN 512, BERT's vocabulary, APE rows for 4 x 128, 32 x 128 tokens, masked LM at lr 1e-3 (warm-up
         * 300 of 3000), dropout 0.1 after the embeddings, on the attention probabilities and on both
         * residual branches: where the study's hours go (bench/profile; no peer row) */
        {"train-data", 4, 128, 4, 512, 30522, 2, 512, 32, 128, POSEMB_HEAD_MLM, 1e-3f, 300, 3000, POSEMB_BERT, 0, 0.1f},
        /* train-mini's sizes as a GPT-2 decoder (causal LM): for the decoder-only PEs (xpos) against rope */
        {"train-mini-clm", 4, 256, 4, 1024, 30522, 0, 128, 32, 128, POSEMB_HEAD_CLM, 1e-4f, 0, 1000000, POSEMB_GPT2, 0,
         0.0f},
        /* A small Llama 2: RMSNorm, SwiGLU, RoPE by default, an untied lm_head; grouped-query attention
         * with 4 query heads per key/value head; Llama's 32000-token vocabulary. Intermediate 688: 8/3 x 256
         * rounded up to a multiple of 16, so that SwiGLU's three matrices cost what a 4 x 256 FFN's two do.
         * 16 x 128 tokens: 137 GFLOP a step (train_mini.c), about a second on 2 threads. */
        {"train-llama", 4, 256, 8, 688, 32000, 0, 128, 16, 128, POSEMB_HEAD_CLM, 1e-4f, 0, 1000000, POSEMB_LLAMA, 2,
         0.0f},
        /* the same at a smoke-test size (bench/run --quick) */
        {"train-llama-tiny", 2, 64, 4, 172, 1000, 0, 64, 16, 64, POSEMB_HEAD_CLM, 1e-4f, 0, 1000000, POSEMB_LLAMA, 2,
         0.0f},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!strcmp(sizes[i].name, name)) return &sizes[i];
    return NULL;
}

static inline const bench_forward_size *bench_forward_size_named(const char *name)
{
    static const bench_forward_size sizes[] = {
        {"forward-base", 12, 768, 12, 3072, 30522, 8, 128},
        {"forward-tiny", 2, 256, 4, 1024, 30522, 4, 128},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!strcmp(sizes[i].name, name)) return &sizes[i];
    return NULL;
}

#endif
