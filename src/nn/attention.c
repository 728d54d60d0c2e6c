#include "posemb/attention.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/nn.h"
#include "dropout_impl.h"
#include "gemm_impl.h"
#include "nn_internal.h"
#include "core/vmath.h"
#include "posemb/threads.h"
#include "core/simd.h"
#include "core/threads_internal.h"
#include "pe/pe_internal.h"

/* The PE's gradient slots are per thread, so the kernel runs on exactly the
 * threads the PE was built for. */
static int n_threads(const posemb_pe *p) { return posemb_pe_get_dims(p)->max_threads; }

size_t posemb_nn_attention_scratch_floats(const posemb_nn_attn_shape *s, const posemb_pe *p)
{
    return (size_t)n_threads(p) * 2 * s->T * s->T;
}

/* The shape must be the one the PE was built for: its tables are per layer
 * and per head, and sized for max_len tokens. */
static void check_shape(const posemb_nn_attn_shape *s, const posemb_pe *p, int layer)
{
    const posemb_pe_dims *d = posemb_pe_get_dims(p);
    POSEMB_REQUIRE(s->D == d->n_heads * d->head_dim && s->H == d->n_heads,
                   "attention width and heads differ from the PE's");
    POSEMB_REQUIRE(layer >= 0 && layer < d->n_layers, "attention layer outside the PE's layers");
    POSEMB_REQUIRE(s->T >= 1 && s->T <= d->max_len, "sequence longer than the PE's max_len");
    POSEMB_REQUIRE(s->KV >= 0 && s->KV <= s->H && (!s->KV || s->H % s->KV == 0),
                   "key/value heads must divide the query heads");
    POSEMB_REQUIRE(posemb_pe_is_bound(p, 0), "attention with a PE whose parameters are not bound");
    POSEMB_REQUIRE(s->causal || (!s->window && !s->chunk), "a window or chunk without the causal mask");
    POSEMB_REQUIRE(!s->KV || s->KV == s->H || !posemb_pe_qk_per_head(p),
                   "a per-head q/k transform with grouped-query attention");
    POSEMB_REQUIRE(!s->axes || posemb_pe_n_axes(p) == POSEMB_PE_AXES, "multi-axis positions for a one-axis PE");
}

/* Positions of sequence b, or 0..T-1 (in arange, filled once) when none are given. */
static const int32_t *positions(const int32_t *pos, int b, int T, const int32_t *arange)
{
    return pos ? pos + (size_t)b * T : arange;
}

/* HF's additive masks on one head's scaled logits s [T, T]; window > 0 (causal): keys j <= i - window too;
 * chunk > 0 (causal): keys before the query's chunk, j < chunk floor(i / chunk), too. */
static void apply_masks(float *s, int T, int causal, int window, int chunk, const float *keymask)
{
    for (int i = 0; i < T; i++) {
        float *si = s + (size_t)i * T;
        if (causal)
            for (int j = i + 1; j < T; j++) si[j] = -FLT_MAX;
        if (causal && window > 0)
            for (int j = 0; j <= i - window; j++) si[j] = -FLT_MAX;
        if (causal && chunk > 0)
            for (int j = 0; j < i / chunk * chunk; j++) si[j] = -FLT_MAX;
        if (keymask)
            for (int j = 0; j < T; j++) si[j] += (1.0f - keymask[j]) * -FLT_MAX;
    }
}

/* Query rows per block of causal attention's products (posemb_nn_attention_set_block_rows). */
static int block_rows = 32;

void posemb_nn_attention_set_block_rows(int rows) { block_rows = rows > 0 ? rows : 0; }

/* Causal attention multiplies each block of query rows only with the keys up
 * to its last row (the others are masked): about half the products' work at
 * long T. Stick-breaking's weights replace the softmax with a function of the
 * whole masked row, so a PE with them takes all T rows at once. */
static int rows_per_block(const posemb_nn_attn_shape *s, const posemb_pe *p)
{
    return s->causal && block_rows > 0 && block_rows < s->T && !posemb_pe_has_weights(p) ? block_rows : s->T;
}

/* The three products below run in bf16 (fp32 accumulation), whole T x T,
 * when the head has an engine e (head_engine); where oneDNN refuses, and
 * with e NULL, in fp32 (by causal blocks). */

/* s [T, T] = alpha a b^T, a and b [T, d]: rows [r0, r1) of a block against the
 * rows [0, r1) of b. The rest of the block's rows keeps what it held: no
 * query there sees those keys, hooks only add to them, and the masked
 * softmax (or its backward) writes them. */
static void product_abt(bf16_engine *e, int T, int step, int d, float alpha, const float *a, int lda, const float *b,
                        int ldb, float *s)
{
    if (e && gemm_bf16(e, 0, 1, T, T, d, alpha, a, lda, b, ldb, NULL, 0.0f, s, T)) return;
    for (int r0 = 0; r0 < T; r0 += step) {
        int r1 = r0 + step < T ? r0 + step : T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, d, alpha, a + (size_t)r0 * lda, lda, b, ldb,
                    0.0f, s + (size_t)r0 * T, T);
    }
}

/* z [T, d] = alpha w x, w [T, T] zero right of its blocks: rows [r0, r1) of z
 * from the columns [0, r1) of w. */
static void product_wx(bf16_engine *e, int T, int step, int d, float alpha, const float *w, const float *x, int ldx,
                       float *z, int ldz)
{
    if (e && gemm_bf16(e, 0, 0, T, d, T, alpha, w, T, x, ldx, NULL, 0.0f, z, ldz)) return;
    for (int r0 = 0; r0 < T; r0 += step) {
        int r1 = r0 + step < T ? r0 + step : T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, d, r1, alpha, w + (size_t)r0 * T, T, x, ldx,
                    0.0f, z + (size_t)r0 * ldz, ldz);
    }
}

/* z [T, d] = alpha w^T x + beta z for the same w: rows [c0, c1) of z from the
 * rows [c0, T) of w and x (the rows above hold zeros in those columns). */
static void product_wtx(bf16_engine *e, int T, int step, int d, float alpha, const float *w, const float *x, int ldx,
                        float beta, float *z, int ldz)
{
    if (e && gemm_bf16(e, 1, 0, T, d, T, alpha, w, T, x, ldx, NULL, beta, z, ldz)) return;
    for (int c0 = 0; c0 < T; c0 += step) {
        int c1 = c0 + step < T ? c0 + step : T;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c1 - c0, d, T - c0, alpha, w + (size_t)c0 * T + c0, T,
                    x + (size_t)c0 * ldx, ldx, beta, z + (size_t)c0 * ldz, ldz);
    }
}

/* Where a bf16 model's heads take bf16 products (bench/README, "The
 * attention's products in bf16", measured on the attention alone, forward
 * and backward): without a causal mask, width d >= 32, T >= 64 and T d >=
 * 4096 (1.08-1.38x faster there on one thread; at T 64 and d 32 0.88x, at
 * d 16 0.41-0.85x: the conversions and oneDNN's calls cost more than bf16
 * saves). A causal head's whole bf16 products only about match fp32's
 * blocks of half the work (1.02-1.06x at T 128-256), so it stays fp32, bit
 * for bit.
 * posemb_nn_attention_set_bf16_everywhere lifts the rule, for the benchmark
 * that measures it. */
static int bf16_everywhere;

void posemb_nn_attention_set_bf16_everywhere(int on) { bf16_everywhere = on != 0; }

static int bf16_wins(const posemb_nn_attn_shape *s, int d)
{
    return bf16_everywhere || (!s->causal && d >= 32 && s->T >= 64 && (long)s->T * d >= 4096);
}

/* The context the heads' products use: mm with its threads' engines made
 * where bf16 wins, NULL (fp32) inside a caller's parallel region (the
 * engines are the top-level threads'). */
static posemb_matmul *attention_context(posemb_matmul *mm, const posemb_nn_attn_shape *s, const posemb_pe *p, int d)
{
    if (omp_in_parallel()) return NULL;
    if (bf16_wins(s, d)) matmul_attn_prepare(mm, n_threads(p));
    return mm;
}

static bf16_engine *head_engine(const posemb_matmul *mm, const posemb_nn_attn_shape *s, int d, int slot)
{
    return bf16_wins(s, d) ? matmul_attn_engine(mm, slot) : NULL;
}

/* The keys query i sees under the causal, window and chunk masks: [*lo, *hi). */
static void live_keys(const posemb_nn_attn_shape *s, int i, int *lo, int *hi)
{
    *lo = 0;
    *hi = s->T;
    if (!s->causal) return;
    *hi = i + 1;
    if (s->window > 0 && i - s->window + 1 > *lo) *lo = i - s->window + 1;
    if (s->chunk > 0 && i / s->chunk * s->chunk > *lo) *lo = i / s->chunk * s->chunk;
}

/* x [T] = 0 outside [lo, hi); no call for an empty side (at the default
 * study's 32 tokens two calls a row cost train-small 6-12%). */
static inline void zero_outside(float *x, int T, int lo, int hi)
{
    if (lo > 0) memset(x, 0, (size_t)lo * sizeof *x);
    if (hi < T) memset(x + hi, 0, (size_t)(T - hi) * sizeof *x);
}

/* apply_masks and the softmax in one pass over each row's live keys: the
 * other probabilities are exactly 0, so they are written, not computed. The
 * pass starts at the live keys' first index rounded down to a lane of
 * vm_exp_shift_sum, so that every lane adds the same terms in the same order
 * as over the whole row (the bits of the masks and a softmax over all T keys;
 * the lanes' sums need -ffp-contract=off, CMakeLists.txt). A row with no key
 * to see (left padding) gets probabilities 0. With keymask NULL the row may
 * hold masks already (apply_masks). One row si of the keys [0, width) (width
 * past the row's live keys). */
POSEMB_KERNEL static void masked_softmax_row(const posemb_nn_attn_shape *s, int i, float *si, int width,
                                             const float *keymask)
{
    float mx = -INFINITY;
    int lo, hi;
    live_keys(s, i, &lo, &hi);
    int lo0 = lo - lo % VM_LANES;
    for (int j = lo0; j < lo; j++) si[j] = -FLT_MAX;
    if (keymask)
        for (int j = lo0; j < hi; j++) si[j] += (1.0f - keymask[j]) * -FLT_MAX;
#pragma omp simd reduction(max : mx)
    for (int j = lo0; j < hi; j++) mx = si[j] > mx ? si[j] : mx;
    if (mx == -FLT_MAX) { /* every live key padded; NaN logits leave -INFINITY and stay NaN */
        lo0 = hi = width;
    } else {
        float inv = (float)(1.0 / vm_exp_shift_sum(si + lo0, hi - lo0, mx));
        for (int j = lo0; j < hi; j++) si[j] *= inv;
    }
    zero_outside(si, width, lo0, hi);
}

static void masked_softmax_rows(const posemb_nn_attn_shape *s, float *sc, const float *keymask)
{
    for (int i = 0; i < s->T; i++) masked_softmax_row(s, i, sc + (size_t)i * s->T, s->T, keymask);
}

/* The softmax's backward, dS = P * (dP - rowsum(P * dP)) in place over dP,
 * over each row's live keys as masked_softmax_rows: dS is 0 wherever P is. */
POSEMB_KERNEL static void masked_softmax_backward_rows(const posemb_nn_attn_shape *s, const float *pr, float *dp)
{
    int T = s->T;
    for (int i = 0; i < T; i++) {
        const float *pi = pr + (size_t)i * T;
        float *di = dp + (size_t)i * T;
        int lo, hi;
        live_keys(s, i, &lo, &hi);
        int lo0 = lo - lo % VM_LANES;
        float dot = (float)vm_dot(pi + lo0, di + lo0, hi - lo0);
        for (int j = lo0; j < hi; j++) di[j] = pi[j] * (di[j] - dot);
        zero_outside(di, T, lo0, hi);
    }
}

/* The probabilities the values see: P itself, or P with dropout applied
 * (into buf), the decisions indexed by the element's place in [B, H, T, T]. */
static const float *dropped(const posemb_nn_attn_shape *s, int b, int h, const float *pr, float *buf)
{
    if (s->dropout <= 0.0f) return pr;
    size_t n = (size_t)s->T * s->T, base = ((size_t)b * s->H + h) * n;
    dropout_rule r = dropout_rule_of(s->key, s->dropout);
    dropout_span(r, base, pr, buf, n);
    return buf;
}

/* d loss / d P from d loss / d P' (in place): the same decisions as dropped(). */
static void undrop_grad(const posemb_nn_attn_shape *s, int b, int h, float *dp)
{
    size_t n = (size_t)s->T * s->T, base = ((size_t)b * s->H + h) * n;
    dropout_rule r = dropout_rule_of(s->key, s->dropout);
    dropout_span(r, base, dp, dp, n);
}

/* What every head of a call shares: the logit scale, the batch's largest
 * position + 1 (HF's dynamic RoPE reads torch.max(position_ids) + 1 over the
 * whole batch) and the multi-axis positions [axes, B, T], if any. */
typedef struct head_common {
    float scale;
    int batch_len;
    const int32_t *axes;
    long axis_stride;
} head_common;

static head_common common_of(const posemb_nn_attn_shape *s, int d, const int32_t *pos)
{
    int32_t top = s->T - 1;
    if (pos) {
        top = 0;
        for (long i = 0; i < (long)s->B * s->T; i++) top = pos[i] > top ? pos[i] : top;
    }
    return (head_common){.scale = s->scale > 0.0f ? s->scale : 1.0f / sqrtf((float)d),
                         .batch_len = top + 1,
                         .axes = s->axes,
                         .axis_stride = (long)s->B * s->T};
}

/* Head h of sequence b's self-attention over T positions ps: queries and keys alike. */
static posemb_pe_head self_head(int layer, int b, int h, int T, int d, const head_common *hc, const int32_t *ps,
                                int slot)
{
    return (posemb_pe_head){.layer = layer,
                            .head = h,
                            .nq = T,
                            .nk = T,
                            .d = d,
                            .scale = hc->scale,
                            .qpos = ps,
                            .kpos = ps,
                            .slot = slot,
                            .seq = b,
                            .batch_len = hc->batch_len,
                            .qaxes = hc->axes ? hc->axes + (size_t)b * T : NULL,
                            .kaxes = hc->axes ? hc->axes + (size_t)b * T : NULL,
                            .axis_stride = hc->axis_stride};
}

/* Where head (b, h)'s probabilities go: their place in probs, or, when
 * probs is NULL (an inference pass keeps none), the second T x T of the
 * thread's scratch (the first holds dropout's copy): no B x H x T x T
 * buffer to fault in and stream through (512 MiB for 8 x 4 heads at 2048). */
static float *head_probs(const posemb_nn_attn_shape *s, float *probs, int b, int h, float *scratch, int slot)
{
    size_t TT = (size_t)s->T * s->T;
    return probs ? probs + ((size_t)b * s->H + h) * TT : scratch + (size_t)slot * 2 * TT + TT;
}

/* Number of key/value heads: KV, or one per query head. */
static int kv_heads(const posemb_nn_attn_shape *s) { return s->KV > 0 ? s->KV : s->H; }

/* An inference pass by blocks of query rows, for a PE whose attention hooks
 * are on q and k and on the logits by positions alone: each block's logits, masked softmax and values while
 * the block's probabilities [rows, T] are in cache, where head_forward
 * writes all T x T and reads them twice more. The same products, row for
 * row, as head_forward's causal blocks. A bias hook that builds a distance
 * table per call (kerple, fire) builds it per block: about T / 32 times the
 * evaluations, small beside the products. buf [block_rows, T]. */
static void head_forward_rows(const posemb_nn_attn_shape *s, posemb_pe *p, const posemb_pe_head *hd, const float *q,
                              const float *k, const float *v, int ld, const float *keymask, float *z, float *buf)
{
    int T = s->T, d = hd->d, step = block_rows;
    for (int r0 = 0; r0 < T; r0 += step) {
        int r1 = r0 + step < T ? r0 + step : T; /* rows [r0, r1) see the keys [0, r1) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, d, hd->scale, q + (size_t)r0 * ld, ld, k, ld,
                    0.0f, buf, T);
        posemb_pe_head rows = *hd;
        rows.nq = r1 - r0;
        rows.nk = r1;
        rows.qpos = hd->qpos + r0;
        rows.qaxes = hd->qaxes ? hd->qaxes + r0 : NULL;
        posemb_pe_logits_forward(p, &rows, q + (size_t)r0 * ld, ld, k, ld, buf, T);
        for (int i = r0; i < r1; i++) masked_softmax_row(s, i, buf + (size_t)(i - r0) * T, r1, keymask);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, d, r1, 1.0f, buf, T, v, ld, 0.0f,
                    z + (size_t)r0 * s->D, s->D);
    }
}

/* The row pass applies: causal attention (whose blocked products it runs row
 * for row, the same bits; an encoder's one T x T product would round
 * otherwise), no probabilities kept, no dropout, no hook past q and k but a
 * logits hook by positions. */
static int by_rows(const posemb_nn_attn_shape *s, const posemb_pe *p, const float *probs)
{
    return s->causal && !probs && s->dropout <= 0.0f && block_rows > 0 && block_rows < s->T &&
           posemb_pe_logits_by_rows(p) && !posemb_pe_has_values(p) && !posemb_pe_has_scores(p) &&
           !posemb_pe_has_weights(p);
}

/* One head after its q/k hook: scores, logits hook, masks, softmax, values.
 * q [T, d], k and v [T, d] (row stride ld); probs [B, H, T, T] or NULL (an
 * inference pass); z [T, d] (stride D). */
static void head_forward(bf16_engine *e, const posemb_nn_attn_shape *s, posemb_pe *p, const posemb_pe_head *hd,
                         const float *q, const float *k, const float *v, int ld, const float *keymask, float *probs,
                         float *z, float *scratch)
{
    int T = s->T, d = hd->d, step = rows_per_block(s, p);
    if (by_rows(s, p, probs)) {
        head_forward_rows(s, p, hd, q, k, v, ld, keymask, z, scratch + (size_t)hd->slot * 2 * T * T);
        return;
    }
    float *pr = head_probs(s, probs, hd->seq, hd->head, scratch, hd->slot);
    if (!posemb_pe_scores_forward(p, hd, q, ld, k, ld, pr, T)) product_abt(e, T, step, d, hd->scale, q, ld, k, ld, pr);
    posemb_pe_logits_forward(p, hd, q, ld, k, ld, pr, T);
    if (posemb_pe_has_weights(p)) {
        apply_masks(pr, T, s->causal, s->window, s->chunk, keymask);
        if (!posemb_pe_weights_forward(p, hd, pr, T)) masked_softmax_rows(s, pr, NULL);
    } else masked_softmax_rows(s, pr, keymask);
    const float *pv =
        s->dropout > 0.0f ? dropped(s, hd->seq, hd->head, pr, scratch + (size_t)hd->slot * 2 * T * T) : pr;
    product_wx(e, T, step, d, 1.0f, pv, v, ld, z, s->D);
    posemb_pe_values_forward(p, hd, pv, T, z, s->D);
}

/* One head's backward up to its q/k hook: dq [T, d] (overwritten), dk and dv
 * (overwritten when beta is 0, accumulated when 1: heads sharing a kv head). */
static void head_backward(bf16_engine *e, const posemb_nn_attn_shape *s, posemb_pe *p, const posemb_pe_head *hd,
                          const float *q, const float *k, const float *v, int ld, const float *pr, const float *dz,
                          float *dq, float *dk, float *dv, float beta, float *scratch)
{
    int T = s->T, d = hd->d, D = s->D, step = rows_per_block(s, p);
    float *dp = scratch + (size_t)hd->slot * 2 * T * T;
    const float *pv = dropped(s, hd->seq, hd->head, pr, dp + (size_t)T * T);
    gemm_bf16_reuse(e, dz); /* read by two products: converted once */
    product_abt(e, T, step, d, 1.0f, dz, D, v, ld, dp);
    posemb_pe_values_backward(p, hd, pv, T, dz, D, dp, T);
    product_wtx(e, T, step, d, 1.0f, pv, dz, D, beta, dv, ld);
    gemm_bf16_reuse(e, NULL);
    if (pv != pr) undrop_grad(s, hd->seq, hd->head, dp); /* dP = dP' * scale */
    if (!posemb_pe_has_weights(p) || !posemb_pe_weights_backward(p, hd, pr, T, dp, T))
        masked_softmax_backward_rows(s, pr, dp);
    if (!posemb_pe_scores_backward(p, hd, q, ld, k, ld, dp, T, dq, ld, dk, ld, beta != 0.0f)) {
        gemm_bf16_reuse(e, dp); /* read by both products, as [T, T] and transposed: converted once */
        product_wx(e, T, step, d, hd->scale, dp, k, ld, dq, ld);
        product_wtx(e, T, step, d, hd->scale, dp, q, ld, beta, dk, ld);
        gemm_bf16_reuse(e, NULL);
    }
    posemb_pe_logits_backward(p, hd, q, ld, k, ld, dp, T, dq, ld, dk, ld);
}

/* Grouped-query attention (KV < H): the query heads of group g = h / (H/KV)
 * share kv head g. The q/k hook runs once per kv head on k (nq = 0) and once
 * per query head on q (nk = 0), so that no key is rotated twice; the rotary
 * PEs see the same positions, hence the same call length, either way. */
static void gqa_forward(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer, float *qkv,
                        const int32_t *pos, const float *keymask, float *probs, float *out, float *scratch,
                        const int32_t *arange)
{
    int B = s->B, T = s->T, D = s->D, H = s->H, KV = kv_heads(s), d = D / H, grp = H / KV, ld = D + 2 * KV * d;
    head_common hc = common_of(s, d, pos);
#pragma omp parallel for collapse(2) schedule(static) num_threads(n_threads(p))
    for (int b = 0; b < B; b++)
        for (int g = 0; g < KV; g++) {
            posemb_pe_head hd =
                self_head(layer, b, g * grp, T, d, &hc, positions(pos, b, T, arange), posemb_thread_id());
            hd.nq = 0;
            posemb_pe_qk_forward(p, &hd, NULL, ld, qkv + (size_t)b * T * ld + D + (size_t)g * d, ld);
        }
#pragma omp parallel for collapse(2) schedule(static) num_threads(n_threads(p))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            posemb_pe_head hd = self_head(layer, b, h, T, d, &hc, positions(pos, b, T, arange), posemb_thread_id());
            float *q = qkv + (size_t)b * T * ld + (size_t)h * d,
                  *k = qkv + (size_t)b * T * ld + D + (size_t)(h / grp) * d;
            hd.nk = 0;
            posemb_pe_qk_forward(p, &hd, q, ld, NULL, ld);
            hd.nk = T;
            head_forward(head_engine(mm, s, d, hd.slot), s, p, &hd, q, k, k + (size_t)KV * d, ld,
                         keymask ? keymask + (size_t)b * T : NULL, probs, out + (size_t)b * T * D + (size_t)h * d,
                         scratch);
        }
}

static void gqa_backward(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer, const float *qkv,
                         const int32_t *pos, const float *probs, const float *dout, float *dqkv, float *scratch,
                         const int32_t *arange)
{
    int B = s->B, T = s->T, D = s->D, H = s->H, KV = kv_heads(s), d = D / H, grp = H / KV, ld = D + 2 * KV * d;
    head_common hc = common_of(s, d, pos);
#pragma omp parallel for collapse(2) schedule(static) num_threads(n_threads(p))
    for (int b = 0; b < B; b++)
        for (int g = 0; g < KV; g++) {
            const int32_t *ps = positions(pos, b, T, arange);
            int slot = posemb_thread_id();
            const float *row = qkv + (size_t)b * T * ld, *k = row + D + (size_t)g * d, *v = k + (size_t)KV * d;
            float *drow = dqkv + (size_t)b * T * ld, *dk = drow + D + (size_t)g * d, *dv = dk + (size_t)KV * d;
            for (int i = 0; i < grp; i++) {
                int h = g * grp + i;
                posemb_pe_head hd = self_head(layer, b, h, T, d, &hc, ps, slot);
                head_backward(head_engine(mm, s, d, slot), s, p, &hd, row + (size_t)h * d, k, v, ld,
                              probs + ((size_t)b * H + h) * T * T, dout + (size_t)b * T * D + (size_t)h * d,
                              drow + (size_t)h * d, dk, dv, i ? 1.0f : 0.0f, scratch);
                hd.nk = 0;
                posemb_pe_qk_backward(p, &hd, row + (size_t)h * d, ld, NULL, ld, drow + (size_t)h * d, ld, NULL, ld);
            }
            posemb_pe_head hk = self_head(layer, b, g * grp, T, d, &hc, ps, slot);
            hk.nq = 0;
            posemb_pe_qk_backward(p, &hk, NULL, ld, k, ld, NULL, ld, dk, ld);
        }
}

void posemb_nn_attention_forward_in(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer,
                                    float *qkv, const int32_t *pos, const float *keymask, float *probs, float *out,
                                    float *scratch)
{
    int B = s->B, T = s->T, D = s->D, H = s->H, d = D / H, ld = 3 * D;
    head_common hc = common_of(s, d, pos);
    check_shape(s, p, layer);
    mm = attention_context(mm, s, p, d);
    int32_t arange[T];
    for (int t = 0; t < T; t++) arange[t] = t;
    if (kv_heads(s) != H) {
        gqa_forward(mm, s, p, layer, qkv, pos, keymask, probs, out, scratch, arange);
        return;
    }
#pragma omp parallel for collapse(2) schedule(static) num_threads(n_threads(p))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            posemb_pe_head hd = self_head(layer, b, h, T, d, &hc, positions(pos, b, T, arange), posemb_thread_id());
            float *q = qkv + (size_t)b * T * ld + (size_t)h * d, *k = q + D, *v = q + 2 * D;
            posemb_pe_qk_forward(p, &hd, q, ld, k, ld);
            head_forward(head_engine(mm, s, d, hd.slot), s, p, &hd, q, k, v, ld,
                         keymask ? keymask + (size_t)b * T : NULL, probs, out + (size_t)b * T * D + (size_t)h * d,
                         scratch);
        }
}

void posemb_nn_attention_forward(const posemb_nn_attn_shape *s, posemb_pe *p, int layer, float *qkv, const int32_t *pos,
                                 const float *keymask, float *probs, float *out, float *scratch)
{
    posemb_nn_attention_forward_in(NULL, s, p, layer, qkv, pos, keymask, probs, out, scratch);
}

void posemb_nn_attention_backward_in(posemb_matmul *mm, const posemb_nn_attn_shape *s, posemb_pe *p, int layer,
                                     const float *qkv, const int32_t *pos, const float *probs, const float *dout,
                                     float *dqkv, float *scratch)
{
    int B = s->B, T = s->T, D = s->D, H = s->H, d = D / H, ld = 3 * D;
    head_common hc = common_of(s, d, pos);
    check_shape(s, p, layer);
    POSEMB_REQUIRE(probs, "attention backward without the forward's probabilities (an inference pass keeps none)");
    mm = attention_context(mm, s, p, d);
    int32_t arange[T];
    for (int t = 0; t < T; t++) arange[t] = t;
    if (kv_heads(s) != H) {
        gqa_backward(mm, s, p, layer, qkv, pos, probs, dout, dqkv, scratch, arange);
        posemb_pe_layer_backward_end(p, layer);
        return;
    }
#pragma omp parallel for collapse(2) schedule(static) num_threads(n_threads(p))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            posemb_pe_head hd = self_head(layer, b, h, T, d, &hc, positions(pos, b, T, arange), posemb_thread_id());
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * d, *k = q + D, *v = q + 2 * D;
            float *dq = dqkv + (size_t)b * T * ld + (size_t)h * d, *dk = dq + D, *dv = dq + 2 * D;
            head_backward(head_engine(mm, s, d, hd.slot), s, p, &hd, q, k, v, ld, probs + ((size_t)b * H + h) * T * T,
                          dout + (size_t)b * T * D + (size_t)h * d, dq, dk, dv, 0.0f, scratch);
            posemb_pe_qk_backward(p, &hd, q, ld, k, ld, dq, ld, dk, ld);
        }
    posemb_pe_layer_backward_end(p, layer);
}

void posemb_nn_attention_backward(const posemb_nn_attn_shape *s, posemb_pe *p, int layer, const float *qkv,
                                  const int32_t *pos, const float *probs, const float *dout, float *dqkv,
                                  float *scratch)
{
    posemb_nn_attention_backward_in(NULL, s, p, layer, qkv, pos, probs, dout, dqkv, scratch);
}
