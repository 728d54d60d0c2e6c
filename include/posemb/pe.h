/* Position embeddings: one interface for every PE of the catalogue
 * (docs/pe.md, shared spec POSITION-EMBEDDINGS.md).
 *
 * A PE is built from a spec string: components joined by '+', each a family
 * name with options, e.g. "ape", "lsin+lsrpe", "rpe:k=64,values=off",
 * "rope:base=500000,pairing=interleaved", "sin:layout=halves",
 * "ape:integration=concat". At most one absolute component (input hook)
 * and one attention component (q/k, logits or values hooks) may be combined.
 *
 * A PE acts at up to four points of a Transformer; each hook has a forward
 * and a backward:
 *   1. input:  y = x + P[pos]   (or y = W [x; P[pos]] + b with integration=concat)
 *   2. q/k:    q_i <- R(pos_i) q_i, k_j <- R(pos_j) k_j            (RoPE)
 *   3. logits: s_ij += term(i, j, q_i, k_j)  on the *scaled* logits s = q.k/sqrt(d)
 *   4. values: z_i += sum_j p_ij aV[r(i, j)]                       (Shaw RPE)
 * Attention hooks work on one (sequence, head) at a time: matrices of rows
 * with a leading dimension, so the engine may pass views into a fused qkv
 * buffer. Gradients of PE parameters accumulate into per-thread slots (no
 * locks, no allocation in the hot loop) and are folded into the parameter
 * gradients by pe_layer_backward_end().
 *
 * Parameter tensors are declared by the PE and bound to memory the caller
 * owns (pe_bind) or that the PE allocates itself (pe_alloc). */
#ifndef POSEMB_PE_H
#define POSEMB_PE_H

#include <stddef.h>
#include <stdint.h>

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pe pe;

/* The model a PE is built for. */
typedef struct pe_dims {
    int dim;         /* model width D */
    int n_heads;     /* H; head width d = D / H */
    int n_layers;    /* layers that get their own per-layer PE parameters */
    int max_len;     /* positions are in [0, max_len); APE tables and HF relative tables have this many rows */
    int causal;      /* 1 for decoders: T5 uses unidirectional buckets */
    int max_threads; /* gradient/scratch slots; <= 0 means posemb_threads_max() */
} pe_dims;

typedef enum pe_scope {
    PE_SCOPE_MODEL = 0, /* one tensor for the model (APE table, T5 bias) */
    PE_SCOPE_LAYER = 1, /* one tensor per layer (RPE tables, HF distance_embedding) */
} pe_scope;

typedef struct pe_param {
    char name[64]; /* local checkpoint name, e.g. "position_embeddings.weight"; the model adds its prefix */
    pe_scope scope;
    int layer; /* for PE_SCOPE_LAYER */
    int ndim;
    int64_t shape[2];
    size_t numel;
    size_t offset; /* in floats, within the PE's parameter block */
    int decay;      /* 1: weight decay applies (tables); 0: frequencies, biases */
    float init_std; /* N(0, init_std) at init; < 0: the family initialises it */
    int input;      /* 1: belongs to the input (absolute) component; 0: to the attention component */
    float *data, *grad;
} pe_param;

/* One (sequence, head) of attention, as the attention hooks see it. */
typedef struct pe_head {
    int layer, head;
    int nq, nk; /* query rows and key rows */
    int d;      /* head width */
    float scale; /* the engine's logit scale, 1/sqrt(d) */
    const int32_t *qpos, *kpos; /* positions of the queries [nq] and keys [nk] */
    int slot;                   /* thread slot in [0, max_threads), usually the OpenMP thread id */
} pe_head;

/* Parses spec and builds the PE for dims. Errors name the spec and the
 * problem, e.g. "spec 'rpe:k=0': rpe option k must be >= 1". */
posemb_status pe_create(pe **out, const char *spec, const pe_dims *dims, posemb_error *err);
void pe_free(pe *p);

/* The canonical spec: every option spelled out ("rpe:k=64,values=on"). */
const char *pe_spec(const pe *p);
/* The short spec as given, without options ("lsin+lsrpe"). */
const char *pe_name(const pe *p);
const pe_dims *pe_get_dims(const pe *p);

/* Which hooks the PE uses, so that the engine can skip the others. */
int pe_has_input(const pe *p);
int pe_has_qk(const pe *p);
int pe_has_logits(const pe *p);
int pe_has_values(const pe *p);

/* Parameters. */
int pe_n_params(const pe *p);
const pe_param *pe_get_param(const pe *p, int i);
const pe_param *pe_find_param(const pe *p, const char *name, int layer);
size_t pe_n_floats(const pe *p);
/* Binds params and grads, each pe_n_floats() floats owned by the caller. */
void pe_bind(pe *p, float *params, float *grads);
/* 1 when parameter memory (and, with with_grads, gradient memory) is bound;
 * forward passes need the first, backward passes both. */
int pe_is_bound(const pe *p, int with_grads);
/* Allocates (zeroed) params and grads inside the PE. */
posemb_status pe_alloc(pe *p, posemb_error *err);
/* Initialises every parameter (tables N(0, 0.02) unless the family says
 * otherwise, frequencies to their sinusoidal values). */
void pe_init_params(pe *p, posemb_rng *rng);
void pe_zero_grad(pe *p);
/* Recomputes tables derived from parameters (learned frequencies); call
 * after every parameter change, before the next forward. */
void pe_prepare(pe *p);

/* Largest position the PE accepts + 1 (INT32_MAX when unbounded). */
int32_t pe_position_limit(const pe *p);
/* Checks that every position in pos[0..n) is in [0, pe_position_limit). */
posemb_status pe_check_positions(const pe *p, const int32_t *pos, long n, posemb_error *err);

/* 1. Input hook. x, y: [ntok, D]; y may equal x when integration is add.
 * scratch: pe_input_scratch_floats(ntok) floats. */
size_t pe_input_scratch_floats(const pe *p, long ntok);
posemb_status pe_input_forward(pe *p, const int32_t *pos, long ntok, const float *x, float *y, float *scratch,
                               posemb_error *err);
/* dy: [ntok, D] -> dx: [ntok, D] (dx may equal dy for add); accumulates
 * parameter gradients. x is the forward input (read only for concat). */
void pe_input_backward(pe *p, const int32_t *pos, long ntok, const float *x, const float *dy, float *dx,
                       float *scratch);

/* 2. q/k hook: q [nq, d] (row stride ldq) and k [nk, d] transformed in place. */
void pe_qk_forward(pe *p, const pe_head *h, float *q, int ldq, float *k, int ldk);
/* dq, dk: gradients w.r.t. the transformed q, k, turned in place into
 * gradients w.r.t. the untransformed ones. */
void pe_qk_backward(pe *p, const pe_head *h, float *dq, int ldq, float *dk, int ldk);

/* 3. Logits hook: s [nq, nk] += positional term. q, k are the (transformed) rows. */
void pe_logits_forward(pe *p, const pe_head *h, const float *q, int ldq, const float *k, int ldk, float *s, int lds);
/* ds: d loss / d s. Accumulates dq [nq, d] and dk [nk, d] (may be NULL
 * when the PE's term does not depend on them) and parameter gradients. */
void pe_logits_backward(pe *p, const pe_head *h, const float *q, int ldq, const float *k, int ldk, const float *ds,
                        int ldds, float *dq, int lddq, float *dk, int lddk);

/* 4. Values hook: z [nq, d] += sum_j prob[i][j] aV[r(i, j)]. */
void pe_values_forward(pe *p, const pe_head *h, const float *prob, int ldp, float *z, int ldz);
/* dz: d loss / d z. Accumulates dprob [nq, nk] and parameter gradients. */
void pe_values_backward(pe *p, const pe_head *h, const float *prob, int ldp, const float *dz, int lddz, float *dprob,
                        int lddp);

/* Folds the per-thread gradient slots of layer's attention hooks into the
 * parameter gradients. Call once per layer after all its heads' backward. */
void pe_layer_backward_end(pe *p, int layer);

/* What the PE is, as numbers: named matrices for n positions (the APE
 * table, relative tables, frequencies, per-head bias matrices, ...). The
 * first item is the primary one. Memory comes from a. */
typedef struct pe_matrix {
    char name[64];
    char desc[96]; /* what the rows and columns are */
    int rows, cols;
    float *data;
} pe_matrix;

typedef struct pe_export {
    int n, cap;
    pe_matrix *items; /* from the arena given to pe_export_matrices; names are unique */
} pe_export;

posemb_status pe_export_matrices(pe *p, int n, posemb_arena *a, pe_export *out, posemb_error *err);

/* Closed forms, exposed for tests and analysis. */
/* HF T5's bucket of distance r = j - i (computed in float32 as HF does). */
int pe_t5_bucket(int r, int buckets, int max_distance, int bidirectional);
/* ALiBi's slopes for H heads (BLOOM's rule when H is not a power of two). */
void pe_alibi_slopes(int H, float *out);

/* One-line description of each family, for --help and `posemb pe --list`. */
typedef struct pe_family_doc {
    const char *name, *summary, *options;
} pe_family_doc;
int pe_family_count(void);
pe_family_doc pe_family_doc_at(int i);

#ifdef __cplusplus
}
#endif
#endif
