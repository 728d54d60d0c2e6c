/* The bf16 product backend (gemm_bf16.c): oneDNN's matmul when the build has
 * it, otherwise functions that say so. */
#ifndef POSEMB_GEMM_IMPL_H
#define POSEMB_GEMM_IMPL_H

#include <stddef.h>

/* 1 when bf16 products run on this CPU with this build; else 0 and why. */
int gemm_bf16_available(char *why, size_t cap);

/* posemb_nn_gemm's contract with bf16 inputs; returns 0 when oneDNN refused (the
 * caller then computes the product in fp32). Not reentrant: serial callers only. */
int gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

/* Promises that p does not change until the next call, so that the products
 * reading it in between convert it once (NULL ends the promise). */
void gemm_bf16_reuse(const float *p);

#endif
