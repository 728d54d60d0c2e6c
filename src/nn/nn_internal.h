/* Layer kernels as forward/backward pairs (llm.c style): what the model
 * layer, the benchmarks and the tests call; not part of the public API, not
 * installed. Shapes in the comments; N is the number of rows (tokens).
 * Backward passes accumulate (+=) into every gradient they are given, so
 * residual branches simply add; callers zero gradients once per step. A
 * NULL gradient is skipped. */
#ifndef POSEMB_NN_NN_INTERNAL_H
#define POSEMB_NN_NN_INTERNAL_H

#include <stdint.h>

#include "posemb/attention.h"
#include "posemb/nn.h"

/* C [M, N] = alpha op(A) op(B) + beta C, row-major, cblas_sgemm's arguments
 * (trans_*: 1 for the transpose). The dense layers' product: in mm's
 * precision (posemb/precision.h; NULL: fp32); from inside a parallel region
 * always fp32. */
void posemb_nn_gemm(posemb_matmul *mm, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* Which library computes the fp32 products of small widths that
 * posemb_nn_gemm gives it: "libxsmm" and its version at build time
 * ("libxsmm 1.17.0"), or "OpenBLAS" in a build without libxsmm (OpenBLAS
 * then computes every fp32 product). Like OpenBLAS's kernels
 * (posemb_blas_core), it decides the rounding: study lines record both. */
const char *posemb_small_products(void);
/* Starts a pass of products on mm (the model's forward): bf16 copies kept by
 * an earlier pass are no longer read; keep 0 (inference: no backward
 * follows) keeps none (gemm_impl.h, the stash). No-op in fp32. */
void matmul_new_pass(posemb_matmul *mm, int keep);
/* A forward pass's bf16 copy of src [rows, cols] for src's producer to fill
 * (bf16_round_row's rounding; gemm_impl.h, gemm_bf16_claim): the next
 * product reading src takes it instead of converting src. NULL in fp32, in
 * an inference pass or a parallel region: nothing to fill. */
uint16_t *matmul_stash_claim(posemb_matmul *mm, const float *src, int rows, int cols);
/* y [N, out] = x [N, in] W + b; b [out] may be NULL; products in mm's precision. */
void posemb_nn_linear_forward(posemb_matmul *mm, float *y, const float *x, const float *w, const float *b, int N,
                              int in, int out, posemb_nn_wlayout layout);
/* dx [N, in] += dy W^T-ish; dw += x^T dy (in the weight's layout); db [out] += sum dy. */
void posemb_nn_linear_backward(posemb_matmul *mm, float *dx, float *dw, float *db, const float *dy, const float *x,
                               const float *w, int N, int in, int out, posemb_nn_wlayout layout);
/* The same with dx [N, in] written, not added to (no memset first): the
 * bits of zeroing dx and calling posemb_nn_linear_backward. */
void posemb_nn_linear_backward_set(posemb_matmul *mm, float *dx, float *dw, float *db, const float *dy, const float *x,
                                   const float *w, int N, int in, int out, posemb_nn_wlayout layout);
/* y [N, C] = (x - mean) / sqrt(var + eps) * w + b (biased variance); saves mean, rstd [N]. */
void posemb_nn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *w, const float *b,
                                 int N, int C, float eps);
void posemb_nn_layernorm_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                                  const float *mean, const float *rstd, int N, int C);
/* A residual branch's LayerNorm in one pass: r [N, C] += x, then y = LN(r)
 * as posemb_nn_layernorm_forward (the same bits as the two calls); when y16
 * is not NULL (matmul_stash_claim's copy of y), y rounded to bf16 into it a
 * row at a time, as posemb_nn_gelu_forward_rows does. */
void posemb_nn_add_layernorm_forward(float *y, uint16_t *y16, float *mean, float *rstd, float *r, const float *x,
                                     const float *w, const float *b, int N, int C, float eps);
/* posemb_nn_layernorm_backward with dx [N, C] written, not added to (no
 * memset first), and copied into dx2 [N, C] when not NULL (the residual's
 * other branch): the same bits as zeroing, adding and copying. */
void posemb_nn_layernorm_backward_set(float *dx, float *dx2, float *dw, float *db, const float *dy, const float *x,
                                      const float *w, const float *mean, const float *rstd, int N, int C);
/* y [N, C] = w * x / sqrt(mean(x^2) + eps) (HF's LlamaRMSNorm); saves rstd
 * [N]. When y16 is not NULL (matmul_stash_claim's copy of y), y rounded to
 * bf16 into it a row at a time, as posemb_nn_gelu_forward_rows does. */
void posemb_nn_rmsnorm_forward(float *y, uint16_t *y16, float *rstd, const float *x, const float *w, int N, int C,
                               float eps);
/* dx [N, C] += d loss / d x (NULL: skip); dw [C] += d loss / d w (NULL: skip). */
void posemb_nn_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                                const float *rstd, int N, int C);
/* Qwen3's q and k norms: in qkv [N, (H + 2 KV) d] (per token H query heads,
 * KV key heads, KV value heads), each query head and each key head
 * RMS-normalised over its d features, scaled by wq [d] or wk [d], in place;
 * raw [N, (H + KV) d] keeps the inputs, rstd [N, H + KV] the scales. The
 * backward turns dqkv's query and key parts into their inputs' gradient in
 * place and adds into dwq, dwk (sums in a fixed order). wq, wk NULL: no
 * weights (Llama 4's q/k norm; dwq, dwk NULL then too). */
void posemb_nn_qk_rmsnorm_forward(float *qkv, float *raw, float *rstd, const float *wq, const float *wk, int N, int H,
                                  int KV, int d, float eps);
void posemb_nn_qk_rmsnorm_backward(float *dqkv, float *dwq, float *dwk, const float *raw, const float *rstd,
                                   const float *wq, const float *wk, int N, int H, int KV, int d);
/* SwiGLU: y [N, inner] = silu(gate) * up with gu [N, 2 inner] = [gate | up]
 * per row; y16 as posemb_nn_rmsnorm_forward's (NULL: none). */
void posemb_nn_swiglu_forward(float *y, uint16_t *y16, const float *gu, int N, int inner);
/* dgu [N, 2 inner] (overwritten) from dy [N, inner]. */
void posemb_nn_swiglu_backward(float *dgu, const float *dy, const float *gu, int N, int inner);
/* GeGLU (Gemma): y = gelu_tanh(gate) * up, in the same [N, 2 inner] layout; and its backward. */
void posemb_nn_geglu_forward(float *y, const float *gu, int N, int inner);
void posemb_nn_geglu_backward(float *dgu, const float *dy, const float *gu, int N, int inner);
void posemb_nn_gelu_forward(float *y, const float *x, long n, posemb_nn_gelu_kind kind);
/* y [N, C] = GELU(x), the bits of posemb_nn_gelu_forward, and when y16 is
 * not NULL (matmul_stash_claim's copy of y) y rounded to bf16 into y16 a row
 * at a time while the row is in cache: the next product's conversion fused. */
void posemb_nn_gelu_forward_rows(float *y, uint16_t *y16, const float *x, int N, int C, posemb_nn_gelu_kind kind);
void posemb_nn_gelu_backward(float *dx, const float *dy, const float *x, long n, posemb_nn_gelu_kind kind);
/* dx [n] = dy GELU'(x), written (no memset first); dx may be dy (in place). */
void posemb_nn_gelu_backward_set(float *dx, const float *dy, const float *x, long n, posemb_nn_gelu_kind kind);
/* out [N, C] (+)= table [V, C] rows ids [N]; accumulate = 1 adds to out. */
void posemb_nn_embedding_forward(float *out, const float *table, const int32_t *ids, int N, int C, int accumulate);
/* dtable += dout rows at ids, except rows equal to skip_id (HF padding_idx; -1: none). */
void posemb_nn_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int N, int C, int32_t skip_id);
/* y = tanh(x), [n]; backward from y. */
void posemb_nn_tanh_forward(float *y, const float *x, long n);
void posemb_nn_tanh_backward(float *dx, const float *dy, const float *y, long n);
/* y [n] = a + b. */
void posemb_nn_add(float *y, const float *a, const float *b, long n);
/* Softmax cross-entropy of rows x [M, D] whose logits are x W^T + b
 * (W [V, D], b [V] or NULL: a tied output layer), computed chunk rows at a
 * time so that only chunk x V logits ever exist (scratch: chunk * V
 * floats). Targets < 0 are ignored. Returns the summed loss over counted
 * rows; *correct (may be NULL) counts argmax hits. With grad_scale != 0,
 * also accumulates d(grad_scale * loss) into dx [M, D], dW [V, D], db [V]
 * (each may be NULL). Products in mm's precision. */
double posemb_nn_xent_tied(posemb_matmul *mm, const float *x, int M, int D, const float *W, const float *b, int V,
                           const int32_t *targets, float grad_scale, float *dx, float *dW, float *db, float *scratch,
                           int chunk, long *correct);
/* Softmax cross-entropy over logits [M, V] (rows, in place: replaced by
 * d(grad_scale * loss)/d logits when grad_scale != 0). Targets < 0 or >= V
 * are ignored (their gradient is 0). Returns the summed loss. */
double posemb_nn_xent(float *logits, int M, int V, const int32_t *targets, float grad_scale, long *correct);
/* Dropout with rate p. Each element's keep/drop decision is a hash of
 * (key, index): no generator state to save, identical on any number of
 * threads, and recomputed (not stored) by the backward pass. Kept elements
 * are scaled by 1/(1 - p). Derive one key per step and site with
 * posemb_nn_dropout_key. */
uint64_t posemb_nn_dropout_key(uint64_t seed, uint64_t step, uint64_t site);
/* 0 (dropped) or 1/(1 - p) (kept) for element i. */
float posemb_nn_dropout_scale(uint64_t key, uint64_t i, float p);
/* y [n] = x * scale(i); y may equal x. p = 0 copies. */
void posemb_nn_dropout_forward(float *y, const float *x, long n, float p, uint64_t key);
/* dx [n] += dy * scale(i). */
void posemb_nn_dropout_backward(float *dx, const float *dy, long n, float p, uint64_t key);

/* posemb_nn_attention_forward and _backward (posemb/attention.h) with their
 * products in mm's precision (NULL: fp32): in bf16, where it is faster (no
 * causal mask, head width >= 32, T >= 64, T x width >= 4096; attention.c,
 * bf16_wins), q k^T,
 * P v and the four products of their backward run in bf16 with fp32
 * accumulation on engines of the attention threads' own (gemm_impl.h);
 * elsewhere, and for a PE's own score or value products, fp32. Called
 * inside a parallel region, fp32 (the engines belong to the top-level
 * threads). */
void posemb_nn_attention_forward_in(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer,
                                    float *qkv, const int32_t *pos, const float *keymask, float *probs, float *out,
                                    float *scratch);
void posemb_nn_attention_backward_in(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer,
                                     const float *qkv, const int32_t *pos, const float *probs, const float *dout,
                                     float *dqkv, float *scratch);

/* 1: a bf16 model's heads take bf16 products on every shape (causal ones
 * whole), not only where bf16_wins says they are faster; 0 (the default):
 * the rule. For bench_attention, which measures the rule; not thread-safe. */
void posemb_nn_attention_set_bf16_everywhere(int on);

/* Query rows per block of causal attention's products (attention.c; 32 by
 * default): each block is multiplied with the keys up to its last row only.
 * 0: one block of all T rows, the full T x T products. For the tests, which
 * compare the two; not thread-safe (set it before attention runs). */
void posemb_nn_attention_set_block_rows(int rows);

#endif
