/* bf16 products through oneDNN's matmul (bf16 x bf16 -> f32): the inputs are
 * rounded to bfloat16 into buffers the engine keeps, the product accumulates
 * and lands in float32. Primitives are created once per shape and cached in
 * the engine, which its owner (a posemb_matmul) creates and frees. */
#include "gemm_impl.h"

#include <stdio.h>

#ifndef POSEMB_HAVE_DNNL

int gemm_bf16_available(char *why, size_t cap)
{
    if (why && cap) snprintf(why, cap, "this posemb was built without oneDNN (Debian: libdnnl-dev)");
    return 0;
}

bf16_engine *bf16_engine_new(char *why, size_t cap)
{
    gemm_bf16_available(why, cap);
    return NULL;
}

void bf16_engine_free(bf16_engine *e) {}

int gemm_bf16(bf16_engine *e, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    return 0;
}

void gemm_bf16_reuse(bf16_engine *e, const float *p) {}

uint16_t *gemm_bf16_claim(bf16_engine *e, const float *src, int rows, int cols) { return NULL; }

void bf16_round_row(uint16_t *d, const float *s, int n) {}

void gemm_bf16_new_pass(bf16_engine *e, int keep) {}

void gemm_bf16_stash(bf16_engine *e, gemm_stash_mode mode) {}

#else

#include <dnnl.h>
#include <omp.h>
#include <stdint.h>
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SIZE 64

typedef struct gemm_key {
    int M, N, K, ta, tb, ldc, bias; /* bias: a [N] row added to every row of the product */
    float alpha, beta;
} gemm_key;

typedef struct gemm_entry {
    gemm_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, bias, scratch; /* bound to this shape; data handles set per call */
    size_t scratch_bytes;
} gemm_entry;

/* gemm_bf16_reuse's matrix: its bf16 copy, made by the first product that
 * reads it, serves the next ones. Promises nest KEPT_DEPTH deep (the LM
 * head's weight, around each chunk's linear backward, which promises its
 * dy); a deeper one is counted, so that its end ends it, but not kept. */
enum { KEPT_DEPTH = 2 };
typedef struct kept_copy {
    const float *src;
    int rows, cols, ld, made;
    void *buf;
    size_t cap;
} kept_copy;

/* A bf16 copy kept for a pass (gemm_bf16_stash): a forward product's input
 * that the backward's products read again. */
enum { STASH_SIZE = 256 };
typedef struct stash_entry {
    const float *src;
    int rows, cols, ld;
    unsigned pass; /* the pass it was made in; 0: empty */
    int claimed;   /* written by src's producer (gemm_bf16_claim), not read by a product yet */
    void *buf;
    size_t cap;
} stash_entry;

struct bf16_engine {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    gemm_entry cache[CACHE_SIZE];
    int used, next;
    /* The bf16 copies of A and B and oneDNN's scratchpad (in user mode: the
     * library's own is allocated and freed, page faults included, per call). */
    void *buf_a, *buf_b, *scratch;
    size_t cap_a, cap_b, cap_scratch;
    kept_copy kept[KEPT_DEPTH];
    int promises; /* open gemm_bf16_reuse promises; the first KEPT_DEPTH are kept[] */
    stash_entry stash[STASH_SIZE];
    int stash_next;       /* the ring's next slot when no entry has the key */
    unsigned pass;        /* gemm_bf16_new_pass's count */
    int keep;             /* this pass keeps copies (training) */
    int claims;           /* claims made since the last STASH_OFF (gemm_bf16_claim) */
    gemm_stash_mode mode; /* what the next products do with the stash */
};

int gemm_bf16_available(char *why, size_t cap)
{
    const dnnl_cpu_isa_t need = dnnl_cpu_isa_avx512_core_bf16;
    if ((dnnl_get_effective_cpu_isa() & need) == need) return 1;
    if (why && cap) snprintf(why, cap, "this CPU has no bf16 instructions (AVX512_BF16 or AMX) for oneDNN");
    return 0;
}

bf16_engine *bf16_engine_new(char *why, size_t cap)
{
    if (!gemm_bf16_available(why, cap)) return NULL;
    bf16_engine *e = calloc(1, sizeof *e);
    if (e && dnnl_engine_create(&e->engine, dnnl_cpu, 0) == dnnl_success &&
        dnnl_stream_create(&e->stream, e->engine, dnnl_stream_default_flags) == dnnl_success)
        return e;
    if (why && cap) snprintf(why, cap, e ? "oneDNN could not create a CPU engine" : "out of memory");
    bf16_engine_free(e);
    return NULL;
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* d [n] <- s [n] rounded by the AVX512_BF16 instruction (the same rounding;
 * it flushes float32 denormals, below 1.2e-38, to zero). Compiled for that
 * instruction set whatever the build's: this engine only runs where oneDNN
 * found avx512_core_bf16 (gemm_bf16_available), and a build without
 * -march=native had left the loop scalar (9.6% of a bf16 training step). */
__attribute__((target("avx512f,avx512bf16"))) void bf16_round_row(uint16_t *d, const float *s, int n)
{
    int c = 0;
    for (; c + 32 <= n; c += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + c + 16), _mm512_loadu_ps(s + c));
        _mm512_storeu_si512((void *)(d + c), (__m512i)v);
    }
    for (; c < n; c++) d[c] = to_bf16(s[c]);
}

/* dst [rows, cols] packed <- src [rows, cols] with leading dimension ld.
 * Small or nested conversions stay out of OpenMP: even a region whose if()
 * is false enters libgomp, and one nested in the attention's threads made
 * system calls (a third of the bf16 attention's time at 128 x 128). */
static void convert(uint16_t *dst, const float *src, int rows, int cols, int ld)
{
    if ((long)rows * cols <= 32768 || omp_in_parallel()) {
        for (int r = 0; r < rows; r++) bf16_round_row(dst + (size_t)r * cols, src + (size_t)r * ld, cols);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) bf16_round_row(dst + (size_t)r * cols, src + (size_t)r * ld, cols);
}

/* A buffer of at least n bytes, 64-byte aligned, kept between calls. */
static void *grow(void **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        size_t size = (n + 63) / 64 * 64;
        void *p = aligned_alloc(64, size);
        if (!p) return NULL;
        free(*buf);
        *buf = p;
        *cap = size;
    }
    return *buf;
}

void gemm_bf16_new_pass(bf16_engine *e, int keep)
{
    if (!e) return;
    e->pass = e->pass + 1 ? e->pass + 1 : 1; /* 0 marks an empty entry */
    e->keep = keep != 0;
}

/* STASH_OFF (the end of a layer's products) also ends every claim not taken
 * by then (a refused shape skips the copy): a later product of the same
 * source converts it again instead of reading a copy src may have outgrown. */
void gemm_bf16_stash(bf16_engine *e, gemm_stash_mode mode)
{
    if (!e || omp_in_parallel()) return;
    e->mode = mode;
    if (mode == STASH_OFF && e->claims) {
        for (int i = 0; i < STASH_SIZE; i++) e->stash[i].claimed = 0;
        e->claims = 0;
    }
}

/* 1 when entry s holds (or held) src's copy with this shape. */
static int stash_is(const stash_entry *s, const float *src, int rows, int cols, int ld)
{
    return s->pass && s->src == src && s->rows == rows && s->cols == cols && s->ld == ld;
}

/* The entry of this pass holding src's copy with this shape, or NULL. */
static stash_entry *stash_find(bf16_engine *g, const float *src, int rows, int cols, int ld)
{
    for (int i = 0; i < STASH_SIZE; i++)
        if (g->stash[i].pass == g->pass && stash_is(&g->stash[i], src, rows, cols, ld)) return &g->stash[i];
    return NULL;
}

/* The entry to keep src's copy in: the one that held this key (its buffer
 * fits), else the ring's next, evicted. */
static stash_entry *stash_slot(bf16_engine *g, const float *src, int rows, int cols, int ld)
{
    for (int i = 0; i < STASH_SIZE; i++)
        if (stash_is(&g->stash[i], src, rows, cols, ld)) return &g->stash[i];
    stash_entry *s = &g->stash[g->stash_next];
    g->stash_next = (g->stash_next + 1) % STASH_SIZE;
    return s;
}

void gemm_bf16_reuse(bf16_engine *e, const float *p)
{
    if (!e) return;
    if (!p) {
        e->promises -= e->promises > 0;
        return;
    }
    if (e->promises < KEPT_DEPTH) {
        e->kept[e->promises].src = p;
        e->kept[e->promises].made = 0;
    }
    e->promises++;
}

/* The innermost kept promise of src, or NULL. */
static kept_copy *kept_of(bf16_engine *g, const float *src)
{
    for (int i = (g->promises < KEPT_DEPTH ? g->promises : KEPT_DEPTH) - 1; i >= 0; i--)
        if (g->kept[i].src == src) return &g->kept[i];
    return NULL;
}

/* The stash entry s, made this pass's holder of src [rows, cols] (leading
 * dimension ld), with room for its copy: the buffer, or NULL (memory). */
static uint16_t *stash_take(bf16_engine *g, stash_entry *s, const float *src, int rows, int cols, int ld, int claimed)
{
    uint16_t *dst = grow(&s->buf, &s->cap, (size_t)rows * cols * 2);
    if (!dst) return NULL;
    *s = (stash_entry){.src = src,
                       .rows = rows,
                       .cols = cols,
                       .ld = ld,
                       .pass = g->pass,
                       .claimed = claimed,
                       .buf = s->buf,
                       .cap = s->cap};
    return dst;
}

uint16_t *gemm_bf16_claim(bf16_engine *g, const float *src, int rows, int cols)
{
    if (!g || !g->keep || omp_in_parallel()) return NULL;
    uint16_t *dst = stash_take(g, stash_slot(g, src, rows, cols, cols), src, rows, cols, cols, 1);
    g->claims += dst != NULL;
    return dst;
}

/* src [rows, cols] (leading dimension ld) converted into the stash entry s. */
static const uint16_t *stash_make(bf16_engine *g, stash_entry *s, const float *src, int rows, int cols, int ld)
{
    uint16_t *dst = stash_take(g, s, src, rows, cols, ld, 0);
    if (dst) convert(dst, src, rows, cols, ld);
    return dst;
}

/* The bf16 copy of src [rows, cols] (leading dimension ld): the stash's of
 * this pass (STASH_USE; under STASH_KEEP only a claimed one, once), the kept
 * copy k when src is a matrix gemm_bf16_reuse named (before the stash's own:
 * a promised matrix is converted once, whichever products read it), a new
 * one kept in the stash (STASH_KEEP in a keeping pass), or buf. */
static const uint16_t *bf16_copy(bf16_engine *g, const float *src, int rows, int cols, int ld, void **buf, size_t *cap)
{
    stash_entry *s = g->mode != STASH_OFF ? stash_find(g, src, rows, cols, ld) : NULL;
    /* under STASH_KEEP an unclaimed copy of this pass is older than src's last write: converted again */
    if (s && (g->mode == STASH_USE || s->claimed)) {
        s->claimed = 0; /* its producer's copy, read once as such */
        return s->buf;
    }
    kept_copy *k = kept_of(g, src);
    if (k && k->made && k->rows == rows && k->cols == cols && k->ld == ld) return k->buf;
    if (!k && g->mode == STASH_KEEP && g->keep)
        return stash_make(g, stash_slot(g, src, rows, cols, ld), src, rows, cols, ld);
    uint16_t *dst = k ? grow(&k->buf, &k->cap, (size_t)rows * cols * 2) : grow(buf, cap, (size_t)rows * cols * 2);
    if (!dst) return NULL;
    convert(dst, src, rows, cols, ld);
    if (k) *k = (kept_copy){.src = src, .rows = rows, .cols = cols, .ld = ld, .made = 1, .buf = k->buf, .cap = k->cap};
    return dst;
}

static void entry_free(gemm_entry *e)
{
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->a) dnnl_memory_destroy(e->a);
    if (e->b) dnnl_memory_destroy(e->b);
    if (e->c) dnnl_memory_destroy(e->c);
    if (e->bias) dnnl_memory_destroy(e->bias);
    if (e->scratch) dnnl_memory_destroy(e->scratch);
    memset(e, 0, sizeof *e);
}

void bf16_engine_free(bf16_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->used; i++) entry_free(&e->cache[i]);
    if (e->stream) dnnl_stream_destroy(e->stream);
    if (e->engine) dnnl_engine_destroy(e->engine);
    free(e->buf_a);
    free(e->buf_b);
    free(e->scratch);
    for (int i = 0; i < KEPT_DEPTH; i++) free(e->kept[i].buf);
    for (int i = 0; i < STASH_SIZE; i++) free(e->stash[i].buf);
    free(e);
}

/* The packed bf16 copies keep A's and B's orientation, so a transpose is a
 * stride, not a copy: A is [M, K] or, transposed, stored [K, M]. */
static int entry_build(gemm_entry *e, const gemm_key *k, dnnl_engine_t engine)
{
    dnnl_memory_desc_t da, db, dc, dbias;
    dnnl_dims_t dims_a = {k->M, k->K}, dims_b = {k->K, k->N}, dims_c = {k->M, k->N}, dims_bias = {1, k->N};
    dnnl_dims_t st_a = {k->ta ? 1 : k->K, k->ta ? k->M : 1}, st_b = {k->tb ? 1 : k->N, k->tb ? k->K : 1};
    dnnl_dims_t st_c = {k->ldc, 1}, st_bias = {k->N, 1};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    int ok = dnnl_memory_desc_init_by_strides(&da, 2, dims_a, dnnl_bf16, st_a) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&db, 2, dims_b, dnnl_bf16, st_b) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&dc, 2, dims_c, dnnl_f32, st_c) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&dbias, 2, dims_bias, dnnl_f32, st_bias) == dnnl_success &&
             dnnl_matmul_desc_init(&md, &da, &db, k->bias ? &dbias : NULL, &dc) == dnnl_success &&
             dnnl_primitive_attr_create(&attr) == dnnl_success;
    if (ok) ok = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && k->alpha != 1.0f) ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha) == dnnl_success;
    if (ok && k->beta != 0.0f)
        ok = dnnl_post_ops_create(&ops) == dnnl_success && dnnl_post_ops_append_sum(ops, k->beta) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
    ok = ok && dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL) == dnnl_success &&
         dnnl_primitive_create(&e->prim, pd) == dnnl_success &&
         dnnl_memory_create(&e->a, &da, engine, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&e->b, &db, engine, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&e->c, &dc, engine, DNNL_MEMORY_NONE) == dnnl_success &&
         (!k->bias || dnnl_memory_create(&e->bias, &dbias, engine, DNNL_MEMORY_NONE) == dnnl_success);
    if (ok) {
        const dnnl_memory_desc_t *ds = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch_bytes = ds ? dnnl_memory_desc_get_size(ds) : 0;
        if (e->scratch_bytes) ok = dnnl_memory_create(&e->scratch, ds, engine, DNNL_MEMORY_NONE) == dnnl_success;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) entry_free(e);
    e->key = *k; /* a refused shape is remembered too (prim NULL), so it is not built again per call */
    return ok;
}

/* The cached primitive of a shape, built on first use (the oldest evicted
 * when the cache is full); NULL for a shape oneDNN refused, then and after. */
static gemm_entry *lookup(bf16_engine *g, const gemm_key *k)
{
    for (int i = 0; i < g->used; i++)
        if (!memcmp(&g->cache[i].key, k, sizeof *k)) return g->cache[i].prim ? &g->cache[i] : NULL;
    gemm_entry *e = &g->cache[g->used < CACHE_SIZE ? g->used++ : g->next];
    if (g->used == CACHE_SIZE) g->next = (g->next + 1) % CACHE_SIZE;
    entry_free(e);
    return entry_build(e, k, g->engine) ? e : NULL;
}

int gemm_bf16(bf16_engine *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    if (!g || M <= 0 || N <= 0 || K <= 0) return 0;
    gemm_key key = {M, N, K, !!trans_a, !!trans_b, ldc, bias != NULL, alpha, beta}; /* no padding: compared bytewise */
    gemm_entry *e = lookup(g, &key);
    void *scratch = e && e->scratch_bytes ? grow(&g->scratch, &g->cap_scratch, e->scratch_bytes) : NULL;
    if (!e || (e->scratch_bytes && !scratch)) return 0;
    const uint16_t *a =
        trans_a ? bf16_copy(g, A, K, M, lda, &g->buf_a, &g->cap_a) : bf16_copy(g, A, M, K, lda, &g->buf_a, &g->cap_a);
    const uint16_t *b =
        trans_b ? bf16_copy(g, B, N, K, ldb, &g->buf_b, &g->cap_b) : bf16_copy(g, B, K, N, ldb, &g->buf_b, &g->cap_b);
    if (!a || !b) return 0;
    /* oneDNN checks its arguments before it writes C, so a refusal leaves C
     * as it was for the fp32 product. */
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
    int n = 3;
    if (bias) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias};
    if (scratch) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch};
    return (!scratch || dnnl_memory_set_data_handle(e->scratch, scratch) == dnnl_success) &&
           (!bias || dnnl_memory_set_data_handle(e->bias, (void *)bias) == dnnl_success) &&
           dnnl_memory_set_data_handle(e->a, (void *)a) == dnnl_success &&
           dnnl_memory_set_data_handle(e->b, (void *)b) == dnnl_success &&
           dnnl_memory_set_data_handle(e->c, C) == dnnl_success &&
           dnnl_primitive_execute(e->prim, g->stream, n, args) == dnnl_success &&
           dnnl_stream_wait(g->stream) == dnnl_success;
}

#endif
