/* Position embeddings: one interface for every PE of the catalogue
 * (docs/pe.md, shared spec POSITION-EMBEDDINGS.md).
 *
 * A PE is built from a spec string: components joined by '+', each a family
 * name with options, e.g. "ape", "lsin+lsrpe", "rpe:k=64,values=off",
 * "rope:base=500000,pairing=interleaved", "sin:layout=halves",
 * "ape:integration=concat". At most one absolute component (input hook),
 * one attention component (q/k, logits or values hooks) and one scale
 * component (a factor on each query row: "rope+ssmax") may be combined.
 *
 * A PE acts at up to five points of a Transformer; each hook has a forward
 * and a backward:
 *   1. input:  y = x + P[pos]   (or y = W [x; P[pos]] + b with integration=concat)
 *   2. q/k:    q_i <- R(pos_i) q_i, k_j <- R(pos_j) k_j            (RoPE)
 *   3. logits: s_ij += term(i, j, q_i, k_j)  on the *scaled* logits s = q.k/sqrt(d)
 *   4. values: z_i += sum_j p_ij aV[r(i, j)]                       (Shaw RPE)
 *   5. layer input: state computed from each attention layer's input x,
 *      read by the hooks above                                     (FoX's gates)
 * (and, for the engine only, 6. the attention weights in place of the
 * softmax, stick-breaking, and 7. the logits in place of q.k, PoPE:
 * src/pe/pe_internal.h)
 * Attention hooks work on one (sequence, head) at a time: matrices of rows
 * with a leading dimension, so the engine may pass views into a fused qkv
 * buffer. Gradients of PE parameters accumulate into per-thread slots (no
 * locks, no allocation in the hot loop) and are folded into the parameter
 * gradients by posemb_pe_layer_backward_end().
 *
 * Parameter tensors are declared by the PE and bound to memory the caller
 * owns (posemb_pe_bind) or that the PE allocates itself (posemb_pe_alloc). */
#ifndef POSEMB_PE_H
#define POSEMB_PE_H

#include "posemb/api.h"

#include <stddef.h>
#include <stdint.h>

#include "posemb/arena.h"
#include "posemb/error.h"
#include "posemb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_pe posemb_pe;

/* The model a PE is built for. */
typedef struct posemb_pe_dims {
    int dim;         /* model width D */
    int n_heads;     /* H */
    int head_dim;    /* head width d; 0: D / H (a Llama's head_dim may differ: attention is then H d wide) */
    int n_layers;    /* layers that get their own per-layer PE parameters */
    int max_len;     /* positions are in [0, max_len); APE tables and HF relative tables have this many rows */
    int causal;      /* 1 for decoders: T5 uses unidirectional buckets */
    int max_threads; /* gradient/scratch slots; <= 0 means posemb_threads_max() */
} posemb_pe_dims;

typedef enum posemb_pe_scope {
    POSEMB_PE_SCOPE_MODEL = 0, /* one tensor for the model (APE table, T5 bias) */
    POSEMB_PE_SCOPE_LAYER = 1, /* one tensor per layer (RPE tables, HF distance_embedding) */
} posemb_pe_scope;

typedef struct posemb_pe_param {
    char name[64]; /* local checkpoint name, e.g. "position_embeddings.weight"; the model adds its prefix */
    posemb_pe_scope scope;
    int layer; /* for POSEMB_PE_SCOPE_LAYER */
    int ndim;
    int64_t shape[2];
    size_t numel;
    size_t offset;  /* in floats, within the PE's parameter block */
    int decay;      /* 1: weight decay applies (tables); 0: frequencies, biases */
    float init_std; /* N(0, init_std) at init; < 0: the family initialises it */
    int input;      /* 1: belongs to the input (absolute) component; 0: to the attention component */
    float *data, *grad;
} posemb_pe_param;

/* One (sequence, head) of attention, as the attention hooks see it. */
typedef struct posemb_pe_head {
    int layer, head;
    int nq, nk;                 /* query rows and key rows */
    int d;                      /* head width */
    float scale;                /* the engine's logit scale, 1/sqrt(d) */
    const int32_t *qpos, *kpos; /* positions of the queries [nq] and keys [nk] */
    int slot;                   /* thread slot in [0, max_threads), usually the OpenMP thread id */
    int seq;                    /* the sequence's row in the batch, where the layer-input hook keeps its state */
    int batch_len;              /* the batch's largest position + 1 (what HF's dynamic RoPE scales by); 0: the
                                   call's own largest position + 1 */
    /* Multi-axis positions (M-RoPE, rope:mrope=): axis a of query i is
     * qaxes[a * axis_stride + i], of key j kaxes[a * axis_stride + j]; NULL: every axis is qpos, kpos. */
    const int32_t *qaxes, *kaxes;
    long axis_stride;
} posemb_pe_head;

/* Axes of a multi-axis position: temporal, height, width (Qwen2-VL's 3D position_ids). */
#define POSEMB_PE_AXES 3

/* Parses spec and builds the PE for dims. The caller owns *out and frees it
 * with posemb_pe_free. On failure *out is NULL and err names the spec and the
 * problem, e.g. "spec 'rpe:k=0': rpe option k must be >= 1" (EINVAL; a factors
 * file: EIO, EFORMAT; ENOMEM). */
POSEMB_API posemb_status posemb_pe_create(posemb_pe **out, const char *spec, const posemb_pe_dims *dims,
                                          posemb_error *err);
POSEMB_API void posemb_pe_free(posemb_pe *p);

/* The canonical spec: every option spelled out ("rpe:k=64,values=on"). */
POSEMB_API const char *posemb_pe_spec(const posemb_pe *p);
/* The short spec as given, without options ("lsin+lsrpe"). */
POSEMB_API const char *posemb_pe_name(const posemb_pe *p);
/* The dims p was built for. These and the two strings above belong to p,
 * valid while it lives. */
POSEMB_API const posemb_pe_dims *posemb_pe_get_dims(const posemb_pe *p);

/* Which hooks the PE uses, so that the engine can skip the others. */
POSEMB_API int posemb_pe_has_input(const posemb_pe *p);
POSEMB_API int posemb_pe_has_qk(const posemb_pe *p);
POSEMB_API int posemb_pe_has_logits(const posemb_pe *p);
POSEMB_API int posemb_pe_has_values(const posemb_pe *p);
/* 1 when a scale component multiplies each query row (ssmax, temperature);
 * posemb_pe_has_qk is then 1 too, the engine's q/k hook applying it. */
POSEMB_API int posemb_pe_has_scale(const posemb_pe *p);
/* 1 when the q/k transform differs between heads (lrope:per_head=on): the
 * heads that share a key/value head under grouped-query attention would need
 * their keys transformed apart, so such a PE takes one key head per query head. */
POSEMB_API int posemb_pe_qk_per_head(const posemb_pe *p);

/* Parameters: i in 0..n_params-1, or by local name and layer (NULL when
 * there is none); the PE owns them. */
POSEMB_API int posemb_pe_n_params(const posemb_pe *p);
POSEMB_API const posemb_pe_param *posemb_pe_get_param(const posemb_pe *p, int i);
POSEMB_API const posemb_pe_param *posemb_pe_find_param(const posemb_pe *p, const char *name, int layer);
POSEMB_API size_t posemb_pe_n_floats(const posemb_pe *p);
/* Binds params and grads, each posemb_pe_n_floats() floats owned by the caller. */
POSEMB_API void posemb_pe_bind(posemb_pe *p, float *params, float *grads);
/* Allocates (zeroed) params and grads inside the PE, which owns and frees
 * them. ENOMEM keeps the PE as it was (bound to its earlier memory, if
 * any). */
POSEMB_API posemb_status posemb_pe_alloc(posemb_pe *p, posemb_error *err);
/* Initialises every parameter (tables N(0, 0.02) unless the family says
 * otherwise, frequencies to their sinusoidal values). */
POSEMB_API void posemb_pe_init_params(posemb_pe *p, posemb_rng *rng);
POSEMB_API void posemb_pe_zero_grad(posemb_pe *p);
/* Recomputes tables derived from parameters (learned frequencies); call
 * after every parameter change, before the next forward. */
POSEMB_API void posemb_pe_prepare(posemb_pe *p);

/* Randomized positions (random:max=N, Ruoss et al. 2023): N, or 0 when the
 * PE takes the positions it is given. */
POSEMB_API int32_t posemb_pe_random_max(const posemb_pe *p);

/* Makes p take head calls of up to len tokens, as Hugging Face runs RoPE,
 * ALiBi and the other PEs without a table at any length: a PE built for
 * fewer (dims.max_len) is rebuilt in place, the same PE (its spec, length
 * defaults such as rope's original=, parameters and their binding kept;
 * derived tables recomputed from bound parameters), so p and its parameter
 * views stay valid. ERANGE naming the table when a component has a table indexed by
 * the token's index (relative_key, tupe), which takes no more; an `ape`
 * table, indexed by positions, keeps its rows, and positions past it are
 * refused by posemb_pe_check_positions (so packed inputs longer than the
 * table run when their positions fit, as HF runs them); EINVAL, ENOMEM
 * leave p as it was. */
POSEMB_API posemb_status posemb_pe_reserve(posemb_pe *p, int len, posemb_error *err);

/* Largest position the PE accepts + 1 (INT32_MAX when unbounded). */
POSEMB_API int32_t posemb_pe_position_limit(const posemb_pe *p);
/* Checks that every position in pos[0..n) is in [0, posemb_pe_position_limit):
 * ERANGE naming the first one that is not (and the table it is past). */
POSEMB_API posemb_status posemb_pe_check_positions(const posemb_pe *p, const int32_t *pos, long n, posemb_error *err);

/* 1. Input hook. x, y: [ntok, D]; y may equal x when integration is add.
 * scratch: posemb_pe_input_scratch_floats(ntok) floats. ERANGE for a
 * position past the PE's table. */
POSEMB_API size_t posemb_pe_input_scratch_floats(const posemb_pe *p, long ntok);
POSEMB_API posemb_status posemb_pe_input_forward(posemb_pe *p, const int32_t *pos, long ntok, const float *x, float *y,
                                                 float *scratch, posemb_error *err);
/* dy: [ntok, D] -> dx: [ntok, D] (dx may equal dy for add); accumulates
 * parameter gradients. x is the forward input (read only for concat). */
POSEMB_API void posemb_pe_input_backward(posemb_pe *p, const int32_t *pos, long ntok, const float *x, const float *dy,
                                         float *dx, float *scratch);

/* 2. q/k hook: q [nq, d] (row stride ldq) and k [nk, d] transformed in place:
 * the attention component's transform (a rotation), then the scale
 * component's factor on each query row (ssmax, temperature). The scale
 * reads a row's index, not its position: a call's query rows must be its
 * sequence's tokens from the first (as posemb's engine passes them). */
POSEMB_API void posemb_pe_qk_forward(posemb_pe *p, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk);
/* q, k: the rows as the forward left them (transformed; what attention
 * read), which learned transforms need for their parameters' gradients; k
 * (dk) may be NULL when nk is 0, q (dq) when nq is 0. dq [nq, d] (row
 * stride lddq), dk: gradients w.r.t. the transformed q, k, turned in place
 * into gradients w.r.t. the untransformed ones; parameter gradients
 * accumulate. */
POSEMB_API void posemb_pe_qk_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                      int ldk, float *dq, int lddq, float *dk, int lddk);

/* 3. Logits hook: s [nq, nk] += positional term. q, k are the (transformed) rows. */
POSEMB_API void posemb_pe_logits_forward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq, const float *k,
                                         int ldk, float *s, int lds);
/* ds: d loss / d s. Accumulates dq [nq, d] and dk [nk, d] (may be NULL
 * when the PE's term does not depend on them) and parameter gradients. */
POSEMB_API void posemb_pe_logits_backward(posemb_pe *p, const posemb_pe_head *h, const float *q, int ldq,
                                          const float *k, int ldk, const float *ds, int ldds, float *dq, int lddq,
                                          float *dk, int lddk);

/* 4. Values hook: z [nq, d] += sum_j prob[i][j] aV[r(i, j)]. */
POSEMB_API void posemb_pe_values_forward(posemb_pe *p, const posemb_pe_head *h, const float *prob, int ldp, float *z,
                                         int ldz);
/* dz: d loss / d z. Accumulates dprob [nq, nk] and parameter gradients. */
POSEMB_API void posemb_pe_values_backward(posemb_pe *p, const posemb_pe_head *h, const float *prob, int ldp,
                                          const float *dz, int lddz, float *dprob, int lddp);

/* 5. Layer-input hook: a PE that reads the input x of each attention layer
 * (the rows q, k and v are projected from), as FoX's forget gates do. The
 * caller keeps scratch, posemb_pe_layer_scratch_floats(ntok) floats (0 when
 * the PE has no such hook), from the forward passes of all layers to their
 * backward passes, and fills posemb_pe_head.seq. Forward: x [B*T, D], before
 * the layer's attention. */
POSEMB_API int posemb_pe_has_layer_input(const posemb_pe *p);
POSEMB_API size_t posemb_pe_layer_scratch_floats(const posemb_pe *p, long ntok);
POSEMB_API void posemb_pe_layer_input_forward(posemb_pe *p, int layer, const float *x, int B, int T, float *scratch);
/* After the layer's attention backward: dx [B*T, D] += the hook's gradient
 * w.r.t. x; parameter gradients accumulate. */
POSEMB_API void posemb_pe_layer_input_backward(posemb_pe *p, int layer, const float *x, int B, int T, float *dx,
                                               float *scratch);

/* Folds the per-thread gradient slots of layer's attention hooks into the
 * parameter gradients. Call once per layer after all its heads' backward. */
POSEMB_API void posemb_pe_layer_backward_end(posemb_pe *p, int layer);

/* What the PE is, as numbers: named matrices for n positions (the APE
 * table, relative tables, frequencies, per-head bias matrices, ...). The
 * first item is the primary one. Memory comes from a. */
typedef struct posemb_pe_named_matrix {
    char name[64];
    char desc[96]; /* what the rows and columns are */
    int rows, cols;
    float *data;
} posemb_pe_named_matrix;

typedef struct posemb_pe_export {
    int n, cap;
    posemb_pe_named_matrix *items; /* in the tables' own memory, freed with them; names are unique */
} posemb_pe_export;

/* What `posemb pe SPEC` shows, as one object the caller owns: spec's PE built
 * for dims, its parameters allocated and initialised from seed (learned PEs
 * at their initialisation), and its matrices for n positions. Returns
 * POSEMB_OK and sets *out, or an error (bad spec, sizes, out of memory) with
 * *out NULL. Free with posemb_pe_tables_free. */
typedef struct posemb_pe_tables posemb_pe_tables;
POSEMB_API posemb_status posemb_pe_tables_new(posemb_pe_tables **out, const char *spec, const posemb_pe_dims *dims,
                                              int n, uint64_t seed, posemb_error *err);
/* The PE they come from and its matrices, the first the primary one (none
 * for 'none'): owned by the tables, valid until posemb_pe_tables_free. */
POSEMB_API posemb_pe *posemb_pe_tables_pe(const posemb_pe_tables *t);
POSEMB_API const posemb_pe_export *posemb_pe_tables_export(const posemb_pe_tables *t);
POSEMB_API void posemb_pe_tables_free(posemb_pe_tables *t);

/* One-line description of each family, for --help and `posemb pe --list`:
 * i in 0..count-1 (not checked); the strings are static. positions_only: 1
 * for a family that only draws the positions the other components read
 * (random), which is no PE alone. */
typedef struct posemb_pe_family_doc {
    const char *name, *summary, *options;
    int positions_only;
} posemb_pe_family_doc;
POSEMB_API int posemb_pe_family_count(void);
POSEMB_API posemb_pe_family_doc posemb_pe_family_doc_at(int i);

#ifdef __cplusplus
}
#endif
#endif
