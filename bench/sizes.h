/* The benchmarks' sizes by name (bench/README.md), shared by the benches
 * and by products.c, which times the products of the same sizes. */
#ifndef POSEMB_BENCH_SIZES_H
#define POSEMB_BENCH_SIZES_H

#include <stddef.h>
#include <string.h>

#include "posemb/model.h"

/* A training step: BERT with an MLM or a classification head. */
typedef struct bench_train_size {
    const char *name;
    int layers, hidden, heads, inter, vocab, type_vocab, max_position, batch, len;
    posemb_head head; /* MLM: loss on a fixed 15% of positions; CLASSIFY: 2 labels; CLM: every next token */
    float lr;
    long warmup, total; /* the learning-rate schedule (posemb_lr_at) */
    posemb_arch arch;   /* BERT unless said */
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
        {"train-mini", 4, 256, 4, 1024, 30522, 2, 128, 32, 128, POSEMB_HEAD_MLM, 1e-4f, 0, 1000000, POSEMB_BERT},
        {"train-tiny", 2, 64, 4, 256, 1000, 2, 64, 16, 64, POSEMB_HEAD_MLM, 1e-4f, 0, 1000000, POSEMB_BERT},
        /* posemb_study_default(): tables sized for the longest evaluation (8 x 32), 250 steps, warm-up 25 */
        {"train-small", 2, 64, 4, 128, 64, 1, 256, 32, 32, POSEMB_HEAD_CLASSIFY, 3e-3f, 25, 250, POSEMB_BERT},
        /* train-mini's sizes as a GPT-2 decoder (causal LM): for the decoder-only PEs (xpos) against rope */
        {"train-mini-clm", 4, 256, 4, 1024, 30522, 0, 128, 32, 128, POSEMB_HEAD_CLM, 1e-4f, 0, 1000000, POSEMB_GPT2},
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
