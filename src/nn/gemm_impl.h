/* The bf16 product backend (gemm_bf16.c): oneDNN's matmul when the build has
 * it, otherwise functions that say so. */
#ifndef POSEMB_GEMM_IMPL_H
#define POSEMB_GEMM_IMPL_H

#include <stddef.h>

#include "posemb/precision.h"
#include "nn/nn_internal.h"

/* oneDNN's engine and stream, the primitives cached per shape and the bf16
 * conversion buffers: one posemb_matmul's state. */
typedef struct bf16_engine bf16_engine;

/* 1 when bf16 products run on this CPU with this build; else 0 and why. */
int gemm_bf16_available(char *why, size_t cap);

/* A new engine, or NULL with the reason in why (bf16 unavailable, oneDNN or
 * memory refused). */
bf16_engine *bf16_engine_new(char *why, size_t cap);
void bf16_engine_free(bf16_engine *e);

/* posemb_nn_gemm's contract with bf16 inputs; returns 0 when oneDNN refused (the
 * caller then computes the product in fp32). Not reentrant: one thread per engine. */
int gemm_bf16(bf16_engine *e, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* Promises that p does not change until the next call, so that the products
 * reading it in between convert it once (NULL ends the promise). */
void gemm_bf16_reuse(bf16_engine *e, const float *p);

/* gemm_bf16_reuse on mm's engine, if it has one. */
void matmul_reuse(posemb_matmul *mm, const float *p);

#endif
