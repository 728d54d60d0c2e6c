/* stickbreaking: stick-breaking attention (Tan, Shen, Yang, Courville and
 * Panda, ICLR 2025, "Scaling Stick-Breaking Attention"). No PE and no
 * softmax: query i takes from a stick of length 1, nearest key first,
 *   beta_ij = sigmoid(z_ij),   A_ij = beta_ij prod_{j<k<i} (1 - beta_ik),
 * z the scaled logits q.k/sqrt(d). Order alone makes the weights depend on
 * position, so it is defined for decoders. The stick's remainder
 * 1 - sum_j A_ij goes nowhere, as in flash-linear-attention's
 * `naive_stickbreaking_attn` (fla/ops/stickbreaking_attn/naive.py); by
 * default the query does not take from its own token (its attend_current
 * False, fla/layers/stickbreaking_attn.py's default), so the first token
 * attends to nothing; current=on lets key i take first.
 *
 * Forward, per row, from the nearest key back: A_ij = exp(ln sigmoid(z_ij)
 * + L_j), L_j = sum_{j<k<=last} ln sigmoid(-z_ik), summed in double. Both
 * logs share t = log1p(exp(-|z|)): ln sigmoid(z) = min(z, 0) - t and
 * ln sigmoid(-z) = min(-z, 0) - t. t and the exp are vmath.h's float
 * functions over chunks of a row (vector code; libm's double log1p and exp
 * were three quarters of a length-study run of this PE), and only the sum
 * is a scalar loop. A masked key (z = -FLT_MAX or below) gets t = 0, so
 * beta = 0: no weight, and the stick passes it whole.
 *
 * Backward, with g = d loss / d A:
 *   d loss / d z_ij = g_ij A_ij (1 - beta_ij) - beta_ij sum_{k<j} g_ik A_ik.
 * beta comes back from the weights alone: the stick left at key j is
 * R_ij = 1 - sum_{j<k<=last} A_ik and beta_ij = A_ij / R_ij. Where R is
 * small its rounding (about nk float epsilons) is divided by R, but every
 * term beta multiplies is at most g R, so the gradient's error stays
 * within about nk epsilons of |g|; the engine keeps no logits for it. */
#include <math.h>
#include <stdlib.h>

#include "core/simd.h"
#include "core/vmath.h"
#include "family.h"

typedef struct sb_state {
    int current; /* the query's own token takes from the stick first (fla's attend_current) */
} sb_state;

static posemb_status sb_configure(pe_comp *c, pe_opts *o, posemb_error *err)
{
    sb_state *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "stickbreaking: out of memory");
    c->state = s;
    if (!c->dims.causal)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': stickbreaking is defined for decoders (causal attention): the stick is broken "
                           "from the nearest preceding key back",
                           o->spec);
    posemb_status st = pe_opt_bool(o, "current", 0, &s->current, err);
    if (st) return st;
    pe_canon_add(c, "current=%s", s->current ? "on" : "off");
    return POSEMB_OK;
}

static void sb_destroy(pe_comp *c) { free(c->state); }

/* The last key row i takes from: the query's own token (current=on) or the one before it. Rows are aligned
 * at the end when nq < nk (the queries are the last nq tokens). */
static int last_key(const pe_comp *c, const posemb_pe_head *h, int i)
{
    const sb_state *s = c->state;
    return i + h->nk - h->nq - (s->current ? 0 : 1);
}

enum { SB_CHUNK = 256 }; /* keys per chunk of a row: two float buffers of it on the stack */

/* z [n] <- the weights of keys 0..n-1 of one row, from the nearest (n - 1)
 * back, in chunks of SB_CHUNK keys: the logs and the exps vectorised, the
 * stick's log L summed in double by a scalar loop between them. */
POSEMB_KERNEL static void sb_row(float *z, int n)
{
    float lsp[SB_CHUNK], lsn[SB_CHUNK]; /* ln sigmoid(z), ln sigmoid(-z) */
    double left = 0.0;                  /* ln of the stick left before key j's turn */
    for (int b = n; b > 0; b -= SB_CHUNK) {
        int a = b > SB_CHUNK ? b - SB_CHUNK : 0, m = b - a;
        float *zc = z + a;
        for (int j = 0; j < m; j++) {
            float x = zc[j], t = vm_log1pf(vm_expf(x < 0.0f ? x : -x));
            lsp[j] = (x < 0.0f ? x : 0.0f) - t;
            lsn[j] = (x > 0.0f ? -x : 0.0f) - t;
        }
        for (int j = m - 1; j >= 0; j--) {
            zc[j] = (float)(lsp[j] + left);
            left += lsn[j];
        }
        for (int j = 0; j < m; j++) zc[j] = vm_expf(zc[j]);
    }
}

/* s [nq, nk] <- A: the masked, scaled logits become the stick-breaking weights. */
static void sb_weights_forward(pe_comp *c, const posemb_pe_head *h, float *s, int lds)
{
    for (int i = 0; i < h->nq; i++) {
        float *si = s + (size_t)i * lds;
        int last = last_key(c, h, i);
        for (int j = h->nk - 1; j > last; j--) si[j] = 0.0f;
        if (last >= 0) sb_row(si, last + 1);
    }
}

/* dw [nq, nk] <- d loss / d z, given w = A and dw = d loss / d A. */
static void sb_weights_backward(pe_comp *c, const posemb_pe_head *h, const float *w, int ldw, float *dw, int lddw)
{
    for (int i = 0; i < h->nq; i++) {
        const float *wi = w + (size_t)i * ldw;
        float *gi = dw + (size_t)i * lddw;
        int last = last_key(c, h, i);
        for (int j = h->nk - 1; j > last; j--) gi[j] = 0.0f;
        /* the stick left at key j, from the nearest key back, into gi's place after g is read: */
        double before = 0.0; /* sum_{k<j} g_ik A_ik, over keys before j */
        double taken = 0.0;  /* sum_{k>j} A_ik */
        for (int j = 0; j <= last; j++) before += (double)gi[j] * wi[j];
        for (int j = last; j >= 0; j--) {
            double a = wi[j], g = gi[j];
            before -= g * a;
            double left = 1.0 - taken, beta = left > 0.0 ? a / left : 0.0;
            if (beta > 1.0) beta = 1.0;
            gi[j] = (float)(g * a * (1.0 - beta) - beta * before);
            taken += a;
        }
    }
}

const pe_family pe_family_stickbreaking = {
    .name = "stickbreaking",
    .kind = PE_KIND_ATTENTION,
    .no_positions = 1,
    .summary = "stick-breaking attention in place of the softmax: sigmoid(z_ij) times what nearer keys left, no PE, "
               "decoders only (Tan et al. 2025)",
    .options = "current=on|off the query's own token takes first (off: fla's attend_current=False)",
    .configure = sb_configure,
    .destroy = sb_destroy,
    .weights_forward = sb_weights_forward,
    .weights_backward = sb_weights_backward,
};
