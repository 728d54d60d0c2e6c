/* The bf16 product backend (gemm_bf16.c): oneDNN's matmul when the build has
 * it, otherwise functions that say so. */
#ifndef POSEMB_GEMM_IMPL_H
#define POSEMB_GEMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "posemb/precision.h"
#include "nn/nn_internal.h"

/* oneDNN's engine and stream, the primitives cached per shape and the bf16
 * conversion buffers: a posemb_matmul holds one for its dense layers and
 * one per attention thread. */
typedef struct bf16_engine bf16_engine;

/* 1 when bf16 products run on this CPU with this build; else 0 and why. */
int gemm_bf16_available(char *why, size_t cap);

/* A new engine, or NULL with the reason in why (bf16 unavailable, oneDNN or
 * memory refused). */
bf16_engine *bf16_engine_new(char *why, size_t cap);
void bf16_engine_free(bf16_engine *e);

/* posemb_nn_gemm's contract with bf16 inputs, plus bias [N] (NULL: none)
 * in float32: C = alpha (op(A) op(B) + bias on every row) + beta C (oneDNN
 * adds the bias before it scales). Returns 0 when oneDNN refused (C
 * untouched: the caller then computes the product in fp32); a refused shape
 * is remembered, not built again; e NULL: returns 0. Not reentrant: one
 * thread per engine. */
int gemm_bf16(bf16_engine *e, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, const float *bias, float beta, float *C, int ldc);

/* The fp32 product on libxsmm's kernels (gemm_xsmm.c): posemb_nn_gemm's
 * contract, taken only where libxsmm runs it at least as fast as OpenBLAS
 * (bench/README.md, "libxsmm in the engine"): alpha 1, beta 0 or 1, not
 * both operands transposed, the two sides that are not the tokens (N and K
 * without trans_a; M and N with it) either both at most GEMM_XSMM_SIDE, and
 * with trans_b at most 128 x 128 together, or one at most 128 and the other
 * in (GEMM_XSMM_SIDE, 1024]; at least 2^18 multiply-adds, serial callers.
 * Returns 1 when computed; 0 when declined (C untouched: the caller then
 * calls OpenBLAS), always 0 in a build without libxsmm. */
#define GEMM_XSMM_SIDE 256
/* 1 in a build with libxsmm, else 0 (gemm_xsmm then declines everything). */
int gemm_xsmm_built(void);
int gemm_xsmm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

/* C [M, N] = A [M, K] op(B) + bias [N] on every row, in one bf16 product
 * (no fill of C before it, no read of C in it); 1 when mm's bf16 engine
 * computed it, 0 when the caller must (fp32, in a parallel region, or
 * oneDNN refused: C untouched). */
int matmul_bf16_bias(posemb_matmul *mm, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                     int ldb, const float *bias, float *C, int ldc);

/* The attention's bf16 products run inside its parallel region, so each
 * thread slot has an engine of its own: matmul_attn_prepare (serial callers;
 * no-op in fp32 or in a parallel region) makes those of slots [0, n) that do
 * not exist yet, matmul_attn_engine returns slot's, or NULL (fp32, or a slot
 * never prepared: the caller's products then stay fp32). The engines live
 * as long as mm. */
void matmul_attn_prepare(posemb_matmul *mm, int n);
bf16_engine *matmul_attn_engine(const posemb_matmul *mm, int slot);

/* Promises that p does not change until the matching gemm_bf16_reuse(e,
 * NULL), so that the products reading it in between convert it once.
 * Promises nest (NULL ends the innermost); two are kept at a time. */
void gemm_bf16_reuse(bf16_engine *e, const float *p);

/* gemm_bf16_reuse on mm's engine, if it has one (no-op in a parallel region). */
void matmul_reuse(posemb_matmul *mm, const float *p);

/* The stash: a training step's forward converts each dense layer's input and
 * weight to bf16 once, and its backward reads those copies instead of
 * converting again (as autocast keeps its casts for the backward). A pass
 * (gemm_bf16_new_pass; matmul_new_pass, nn_internal.h: the model's forward) starts with nothing usable; keep
 * 0 (inference) keeps nothing, so no memory is held for a backward that will
 * not come. STASH_KEEP: the next products keep their inputs' copies under the
 * inputs' addresses; STASH_USE: the next products read a copy of this pass
 * where one has the input's address and shape. The caller promises that a
 * kept input does not change between its STASH_KEEP product and the
 * STASH_USE ones (the fp32 backward relies on the same). At most 256 copies a
 * pass; past that the oldest is dropped, and its reader converts again. */
typedef enum { STASH_OFF, STASH_KEEP, STASH_USE } gemm_stash_mode;

/* The stash entry of this pass for src [rows, cols] (packed, leading
 * dimension cols), for src's producer to fill with src rounded to bf16
 * (bf16_round_row) before a product reads src: the next forward product of
 * src (STASH_KEEP) takes it once instead of converting src, the conversion
 * fused into the op that writes src, and the backward's (STASH_USE) read it
 * as any kept copy. A claim not taken by the end of the next layer's
 * products (gemm_bf16_stash STASH_OFF) ends there. NULL where nothing is
 * kept (fp32, an inference pass, a parallel region, memory refused): the
 * products convert as before. The caller promises to fill all of it, with
 * the values src holds when the product reads it. */
uint16_t *gemm_bf16_claim(bf16_engine *e, const float *src, int rows, int cols);
/* d [n] <- s [n] rounded to bf16 as the products' conversion rounds (the
 * same bits); only where bf16 products run (a claim returned a buffer). */
void bf16_round_row(uint16_t *d, const float *s, int n);
void gemm_bf16_new_pass(bf16_engine *e, int keep);
void gemm_bf16_stash(bf16_engine *e, gemm_stash_mode mode);
void matmul_stash(posemb_matmul *mm, gemm_stash_mode mode);

#endif
