/* The interface one PE family implements: one file per family, one line in
 * registry.c. Hooks a family does not use stay NULL. */
#ifndef POSEMB_PE_FAMILY_H
#define POSEMB_PE_FAMILY_H

#include "posemb/pe.h"

/* Input families add to the embeddings, attention families act in attention,
 * position families change the positions the others see (random:max=),
 * scale families multiply each query row by a factor of its position and
 * the keys it sees (ssmax, temperature), after the attention family's q/k hook. */
typedef enum pe_kind { PE_KIND_INPUT = 1, PE_KIND_ATTENTION = 2, PE_KIND_POSITIONS = 3, PE_KIND_SCALE = 4 } pe_kind;

/* Attention hooks a component uses: set from the family's non-NULL hooks
 * before configure, which may clear some (rpe:values=off). */
enum {
    PE_HOOK_QK = 1,
    PE_HOOK_LOGITS = 2,
    PE_HOOK_VALUES = 4,
    PE_HOOK_LAYER_INPUT = 8,
    PE_HOOK_WEIGHTS = 16,
    PE_HOOK_SCORES = 32
};

#define PE_MAX_OPTS 16

/* key=value options of one component, marked as a family reads them so that
 * unknown keys can be reported. */
typedef struct pe_opts {
    int n;
    char key[PE_MAX_OPTS][32];
    char val[PE_MAX_OPTS][200]; /* room for a file path (rope:factors=) */
    int used[PE_MAX_OPTS];
    const char *spec; /* the whole spec string, for messages */
    const char *family;
} pe_opts;

typedef struct pe_comp pe_comp;

typedef struct pe_family {
    const char *name;
    pe_kind kind;
    /* Its table is indexed only by the positions it is given and sized by the
     * first build (pe_comp.len0): an input longer than the table runs when its
     * positions fall inside it (packed sequences), as HF's embedding lookup does. */
    int table_by_position;
    const char *summary;
    const char *options; /* "k=INT clip distance (64), values=on|off (on)" */
    int no_positions;    /* reads no positions (CoPE, FoX): random:max= has nothing to feed it */
    /* Its logits hook reads only the positions (qpos, kpos) and the head: it
     * takes a block of query rows against the keys [0, nk) as well as the
     * whole square (a decoder's inference pass by rows, attention.c). */
    int logits_by_rows;
    /* Reads options, sets state, declares parameters (pe_comp_param). */
    posemb_status (*configure)(pe_comp *c, pe_opts *o, posemb_error *err);
    /* Initialises parameters that are not N(0, std) (frequencies); may be NULL. */
    void (*init)(pe_comp *c);
    /* Recomputes derived tables from parameters; may be NULL. */
    void (*prepare)(pe_comp *c);
    void (*destroy)(pe_comp *c);

    /* Input families: rows of P for positions, out [n, width]. */
    void (*rows)(pe_comp *c, const int32_t *pos, long n, float *out);
    void (*rows_backward)(pe_comp *c, const int32_t *pos, long n, const float *dout);

    /* Attention families (see pe.h for the meaning of each hook). */
    void (*qk_forward)(pe_comp *c, const posemb_pe_head *h, float *q, int ldq, float *k, int ldk);
    /* q, k: this component's output rows (pe.h); dq, dk turned into gradients w.r.t. its input. */
    void (*qk_backward)(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                        float *dq, int lddq, float *dk, int lddk);
    /* In causal attention the logits right of each block of 32 query rows are
     * stale until the softmax writes them (src/nn/attention.c): a logits hook
     * may add to every entry but read only the keys a query sees (j <= i);
     * the values hook's dprob likewise. */
    void (*logits_forward)(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                           float *s, int lds);
    void (*logits_backward)(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                            const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk);
    void (*values_forward)(pe_comp *c, const posemb_pe_head *h, const float *prob, int ldp, float *z, int ldz);
    void (*values_backward)(pe_comp *c, const posemb_pe_head *h, const float *prob, int ldp, const float *dz, int lddz,
                            float *dprob, int lddp);
    /* Logits other than q.k (PoPE): s [nq, nk] <- the scaled logits of q and k, in place of the engine's
     * scale q k^T; the backward writes dq (overwritten) and dk (overwritten, or added to when accumulate: heads
     * that share a kv head) from ds. */
    void (*scores_forward)(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                           float *s, int lds);
    void (*scores_backward)(pe_comp *c, const posemb_pe_head *h, const float *q, int ldq, const float *k, int ldk,
                            const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate);
    /* Attention weights other than the softmax (stick-breaking): s [nq, nk] holds the masked, scaled logits
     * (masked: -FLT_MAX or below) and becomes the weights; the backward turns dw, d loss / d weights, into
     * d loss / d logits, given the weights w alone. */
    void (*weights_forward)(pe_comp *c, const posemb_pe_head *h, float *s, int lds);
    void (*weights_backward)(pe_comp *c, const posemb_pe_head *h, const float *w, int ldw, float *dw, int lddw);
    void (*layer_backward_end)(pe_comp *c, int layer);
    /* The layer-input hook (pe.h, 5.): scratch floats for ntok tokens over all layers. */
    size_t (*layer_scratch)(const pe_comp *c, long ntok);
    void (*layer_input_forward)(pe_comp *c, int layer, const float *x, int B, int T, float *scratch);
    void (*layer_input_backward)(pe_comp *c, int layer, const float *x, int B, int T, float *dx, float *scratch);

    /* Scale families: f [nq] <- the factor of each query row of the call; and, given
     * df [nq] = d loss / d f, the parameters' gradients (accumulated). */
    void (*q_factors)(pe_comp *c, const posemb_pe_head *h, float *f);
    void (*q_factors_backward)(pe_comp *c, const posemb_pe_head *h, const float *df);

    /* Appends the matrices that define the PE for n positions. */
    posemb_status (*export)(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, posemb_error *err);
} pe_family;

/* One component of a PE: a family instance. */
struct pe_comp {
    const pe_family *fam;
    posemb_pe_dims dims; /* of the whole PE, max_threads resolved */
    int head_dim;        /* dims.head_dim, resolved (dims.dim / dims.n_heads unless the model sets it) */
    int width;           /* input families: columns of P (D, or the concat width) */
    int32_t max_pos;     /* input families: positions must be < max_pos */
    char canon[240];     /* canonical "name:k=v,..." */
    unsigned hooks;      /* PE_HOOK_* */
    int n_params;
    posemb_pe_param *params; /* this component's parameters, contiguous in the PE's list */
    posemb_pe *owner;
    void *state;             /* family-owned */
    unsigned char *layer_on; /* attention families: [n_layers], 1 where the PE acts (layers=); NULL: every layer */
    int32_t draw_max;        /* position families: positions are drawn from [0, draw_max) */
    int qk_per_head;         /* its q/k transform differs between heads (lrope:per_head=on) */
    int multi_axis;          /* reads a position per axis (posemb_pe_head.qaxes: rope:mrope=) */
    int len0;                /* the max_len the PE was first built for: length defaults (rope's original=) come
                                from it, so that a PE rebuilt for longer inputs (posemb_pe_reserve) stays the same PE */
};

/* layers=LIST (layers.c): read and checked for an attention component, written to its canonical spec. */
posemb_status pe_layers_configure(pe_comp *c, pe_opts *o, posemb_error *err);
/* Any option key=LIST of layers, as layers=: *on [n_layers] 1 in the listed layers (caller frees), NULL
 * when the option is absent; written to the canonical spec. */
posemb_status pe_opt_layers(pe_comp *c, pe_opts *o, const char *key, unsigned char **on, posemb_error *err);
/* 1 when the component acts in layer. */
int pe_layer_on(const pe_comp *c, int layer);

/* Declares a parameter; returns its index within the component, or -1 (and
 * sets err) when the PE has too many. init_std < 0 means the family's init()
 * sets it. Components declare their parameters one after the other. */
int pe_comp_param(pe_comp *c, const char *name, posemb_pe_scope scope, int layer, int rows, int cols, float init_std,
                  int decay, posemb_error *err);

/* Option readers: absent keys give the default; bad values fail with a message
 * naming the spec, the family and the option. */
posemb_status pe_opt_int(pe_opts *o, const char *key, int def, int lo, int hi, int *out, posemb_error *err);
posemb_status pe_opt_double(pe_opts *o, const char *key, double def, double lo, double hi, double *out,
                            posemb_error *err);
/* choices: NULL-terminated list; *out is the index of the chosen one. */
posemb_status pe_opt_enum(pe_opts *o, const char *key, const char *const *choices, int def, int *out,
                          posemb_error *err);
posemb_status pe_opt_bool(pe_opts *o, const char *key, int def, int *out, posemb_error *err);

/* The value of key, marked read; NULL when the spec does not give it. */
const char *pe_opt_str(pe_opts *o, const char *key);
/* 1 when the spec gives key (without marking it read). */
int pe_opt_given(const pe_opts *o, const char *key);

/* Appends "key=value" to c->canon (comma-separated after the family name). */
void pe_canon_add(pe_comp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends "key=x" with the shortest decimal form of x that parses back exactly. */
void pe_canon_num(pe_comp *c, const char *key, double x);

/* Reserves the next export item, with its data from a; NULL (err set) when full. */
posemb_pe_named_matrix *pe_export_add(posemb_pe_export *ex, posemb_arena *a, const char *name, const char *desc,
                                      int rows, int cols, posemb_error *err);

/* Appends a copy of parameter first + stride * l for every layer l, named
 * "base.layerL" (just "base" for one layer), with its own shape. */
posemb_status pe_export_per_layer(pe_comp *c, const char *base, const char *desc, int first, int stride,
                                  posemb_arena *a, posemb_pe_export *out, posemb_error *err);

/* The bias of head h at query i, key j, as a family's export shows it. */
typedef float (*pe_bias_fn)(const pe_comp *c, int h, int i, int j);
/* Appends bias.headH [n, n] for every head H, filled by bias. */
posemb_status pe_export_head_biases(pe_comp *c, int n, posemb_arena *a, posemb_pe_export *out, const char *desc,
                                    pe_bias_fn bias, posemb_error *err);

/* 1 + the largest |kpos[j] - qpos[i]| of a head call, at most cap: the
 * length of a by-distance table that covers the call. */
long pe_distance_span(const posemb_pe_head *h, long cap);

/* Fills table [rows, 2*nfreq] with sin(w_m x) and cos(w_m x) for x = x0 + row,
 * interleaved (sin at 2m, cos at 2m+1) or halves (sin at m, cos at nfreq + m).
 * Angles are taken in double, so large x stays accurate. */
void pe_sinusoid_table(const double *freq, int nfreq, int halves, long x0, long rows, float *table);
/* Given d loss / d table for the same layout, accumulates d loss / d freq. */
void pe_sinusoid_table_backward(int nfreq, int halves, long x0, long rows, const float *table, const float *dtable,
                                float *dfreq);
/* w_m = base^(-2m / width), m < width/2. Fixed sinusoids keep them in double,
 * so their tables are the closed form to float rounding (float frequencies
 * put the angle off by up to x * 2^-24 rad: 1.5e-5 at x = 511). */
void pe_sinusoid_freqs(double base, int width, double *freq);
/* The same, rounded to float: the initial value of learned frequencies. */
void pe_sinusoid_freqs_f(double base, int width, float *freq);
/* Widens n learned (float) frequencies for pe_sinusoid_table. */
void pe_freqs_widen(const float *freq, int n, double *out);

/* Per-thread buffers (slots.c): gradient accumulators and scratch, one per
 * thread slot, so that heads run in parallel without locks. */
typedef struct pe_slots {
    int n;
    size_t size; /* floats per slot */
    float *data;
} pe_slots;

posemb_status pe_slots_init(pe_slots *s, int n, size_t size, posemb_error *err);
static inline float *pe_slot(const pe_slots *s, int i)
{
    POSEMB_REQUIRE(i >= 0 && i < s->n, "thread slot outside the PE's max_threads");
    return s->data + (size_t)i * s->size;
}
/* dst[0..size) += the sum of all slots; the slots are zeroed. */
void pe_slots_fold(pe_slots *s, float *dst);
void pe_slots_free(pe_slots *s);

/* T sorted distinct positions from [0, max), a function of key (random.c). */
void pe_draw_positions(int32_t max, uint64_t key, int T, int32_t *pos);

/* The registry (registry.c). */
const pe_family *pe_family_find(const char *name);
extern const pe_family *const PE_FAMILIES[];
extern const int PE_N_FAMILIES;

#endif
