/* Multi-head scaled dot-product attention with a PE's attention hooks.
 *
 * Layout as in llm.c: qkv [B, T, 3D] holds each token's query, key and value
 * (heads contiguous, d = D/H each); out [B, T, D]. With grouped-query
 * attention (KV < H key/value heads) a token's row is [q: D | k: KV d | v: KV d]
 * and query head h reads kv head h / (H / KV). Per (sequence, head):
 *     s = q k^T / sqrt(d)  (+ the PE's logits hook)  (+ masks)
 *     p = softmax(s)       z = p v  (+ the PE's values hook)
 * RoPE-like q/k hooks rotate qkv in place in the forward pass; the backward
 * pass reads the rotated q, k from the same buffer.
 * A PE with a layer-input hook (FoX) reads state that
 * posemb_pe_layer_input_forward computed from the layer's input, so the
 * caller runs that first (and posemb_pe_layer_input_backward after the
 * backward pass), as the models do.
 * Masks follow Hugging Face: a padded key gets -FLT_MAX added (probability
 * exactly 0); in causal mode keys j > i are set to -FLT_MAX first, and with
 * a sliding window W keys j <= i - W too (query i sees its W latest tokens,
 * itself included: transformers' masking_utils.py, kv_idx > q_idx - W).
 * A query left with no key to see (a left-padded position in causal mode)
 * gets probabilities 0 and output 0, where Hugging Face's are
 * implementation-specific. */
#ifndef POSEMB_ATTENTION_H
#define POSEMB_ATTENTION_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/pe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_nn_attn_shape {
    int B, T, H;
    int D;  /* attention width H d: the model width, but for a Llama whose head_dim is not D / H */
    int KV; /* key/value heads, dividing H (grouped-query attention); 0: H, one per query head */
    int causal;
    int window;          /* causal only: a query sees its window latest tokens (0: all) */
    int chunk;           /* causal only: query i sees the keys j <= i of its own chunk, j / chunk == i / chunk
                      (Llama 4's chunked attention, chunks from index 0; 0: none) */
    float scale;         /* on q.k: 0 for 1/sqrt(head width) (Gemma 3: query_pre_attn_scalar^-1/2) */
    float dropout;       /* on the attention probabilities, training only (0: none) */
    uint64_t key;        /* dropout key (posemb_nn_dropout_key) */
    const int32_t *axes; /* [POSEMB_PE_AXES, B, T] multi-axis positions for a PE that reads them (M-RoPE); NULL:
                            each axis is pos */
} posemb_nn_attn_shape;

/* Floats of scratch the forward and backward passes need (two T x T
 * matrices per thread of the PE). The shape must match the PE (width, heads, layer
 * < n_layers, T <= max_len); a mismatch is a programming error and aborts.
 * The kernel runs on the PE's max_threads threads. */
POSEMB_API size_t posemb_nn_attention_scratch_floats(const posemb_nn_attn_shape *s, const posemb_pe *p);

/* qkv [B, T, 3D], or [B, T, D + 2 KV d] (q and k rotated in place by a q/k hook); pos [B, T]
 * positions for the PE (NULL: 0..T-1); keymask [B, T] 1 keep, 0 padding
 * (NULL: none); probs [B, H, T, T] the softmax, saved for backward (before
 * dropout), or NULL to keep none (inference: the backward then aborts);
 * out [B, T, D]; scratch as posemb_nn_attention_scratch_floats. */
POSEMB_API void posemb_nn_attention_forward(const posemb_nn_attn_shape *s, posemb_pe *p, int layer, float *qkv,
                                            const int32_t *pos, const float *keymask, float *probs, float *out,
                                            float *scratch);

/* dout [B, T, D] -> dqkv [B, T, 3D] (overwritten) and the PE's parameter
 * gradients (folded with posemb_pe_layer_backward_end before returning). */
POSEMB_API void posemb_nn_attention_backward(const posemb_nn_attn_shape *s, posemb_pe *p, int layer, const float *qkv,
                                             const int32_t *pos, const float *probs, const float *dout, float *dqkv,
                                             float *scratch);

#ifdef __cplusplus
}
#endif
#endif
