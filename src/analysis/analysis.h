/* Analysis of built-in position embeddings. */
#ifndef POSEMB_ANALYSIS_H
#define POSEMB_ANALYSIS_H

#include "posemb/api.h"

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/model.h"
#include "posemb/pe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_pe_matrix {
    int size;       /* the matrix is size x size */
    float *data;    /* from the arena */
    char what[128]; /* e.g. "dot similarity of the APE rows" */
} posemb_pe_matrix;

/* The matrix whose properties describe a PE over n positions (its first
 * component when combined): an APE's dot similarity P P^T; a relative
 * table's similarity over its vectors (one row per distance); RoPE's kernel
 * sum_m cos(theta_m (j - i)); a bias's head average; CoPE's similarity
 * over its vectors by count. ERANGE for 'none', which has no positional
 * term, for a matrix of zeros (CoPE's table as initialised), or n past an
 * APE table; EINVAL for n < 1, ENOMEM. out->data comes from a, valid until it is freed. */
posemb_status posemb_pe_matrix_of(posemb_pe *p, int n, posemb_arena *a, posemb_pe_matrix *out, posemb_error *err);

/* Where a model's heads attend on the batch of its last posemb_model_forward
 * (not in inference mode, which keeps one layer's maps). For layer l and head
 * h, averaged over the query rows i of unpadded tokens (all rows without a
 * mask): mean_dist = sum_j p_ij |i - j|; sink = p_i0, the mass on the first
 * token (attention sinks); hist[k] = the mass at distances in
 * [k w, (k + 1) w), w = bin_width = ceil(T / bins), the last bin also taking
 * what lies beyond. Arrays are [layers x heads] (hist: x bins), malloc'd;
 * free with posemb_attn_profile_free. EINVAL without maps or for bins < 1. */
typedef struct posemb_attn_profile {
    int layers, heads, bins, bin_width;
    float *mean_dist, *sink, *hist;
} posemb_attn_profile;
posemb_status posemb_attn_profile_of(const posemb_model *m, const posemb_batch *b, int bins, posemb_attn_profile *out,
                                     posemb_error *err);
void posemb_attn_profile_free(posemb_attn_profile *p);

/* How many sequences of n tokens an attention analysis runs at once: 8, or
 * fewer where the maps a forward pass keeps (sequences x layers x heads x
 * n^2 floats) would pass 256 MB, at least 1 (the study's 4 x 4 decoder: 8
 * up to 512 tokens, 4 at 1024, 1 at 2048). */
int posemb_attn_windows(int layers, int heads, int n);

/* The band 1 <= |i - j| <= K the indicators read over n positions: K, at most n - 1. */
int posemb_indicators_band(int K, int n);

/* ids [B, n]: the first B consecutive windows of n tokens of text [text_n].
 * EINVAL when the text has fewer than B n tokens; ERANGE naming the token
 * when an id is outside [0, vocab) (a text of another tokenizer). */
posemb_status posemb_text_windows(const int32_t *text, long text_n, int B, int n, int vocab, int32_t *ids,
                                  posemb_error *err);

/* How much each rotation pair of a rotary PE carries (Barbero et al. 2024,
 * "Round and Round We Go!"): on the batch of the last forward pass, for layer
 * l, query head h and pair m (halves: dims m and m + d/2; else 2m, 2m + 1),
 * q_norm[(l H + h) d/2 + m] = mean over unpadded tokens of the pair's norm
 * in q, and k_norm the same over the key heads (kv_heads for a Llama).
 * Rotation keeps these norms: they are the projections' own. Caller-sized
 * arrays [layers x H x d/2] and [layers x KV x d/2]. EINVAL without maps. */
posemb_status posemb_rotary_usage(const posemb_model *m, const posemb_batch *b, int halves, float *q_norm,
                                  float *k_norm, posemb_error *err);

/* Jensen-Shannon divergence (nats, in [0, ln 2]) between the attention maps
 * of two models of the same shape, both run on batch: per layer and head
 * out [layers x heads], the mean over the query rows of JS(p_i, q_i). */
posemb_status posemb_attn_js(const posemb_model *a, const posemb_model *b, const posemb_batch *batch, float *out,
                             posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
