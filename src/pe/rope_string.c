/* STRING (An, Zhang, Zhong, Li, Gong, Luo, Xu and Kong 2024, "Why Does the
 * Effective Context Length of LLMs Fall Short?", ICLR 2025): at evaluation,
 * a trained RoPE model's query-key distances d >= S, the least trained,
 * are overwritten by d - S + W, distances it saw often, while the W
 * nearest ... S - 1 keep their own:
 *   s_ij = f^2 scale q_i . R(p_ij) k_j,   p_ij = d if d < S, else d - S + W,
 * d = x_i - x_j. As the authors' code (justHungryMan/STRING,
 * string_for_llama.py): the far keys see the query rotated at x_i - S + W;
 * cos and sin are multiplied by f = 0.1 ln 2 + 1 (its attention_factor, to
 * sharpen the attention the shift smooths). One difference: the code's two
 * flash-attention calls both count the key at d = S (at S in the window,
 * at W among the shifted); here it is shifted only.
 *
 * With the rows already rotated at their positions (rope.c's q/k hook),
 * the far logits are (R(W - S) q_i) . k_j: two products per call, the
 * near or the far one kept per element. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rope_string.h"

struct rope_string {
    int shift, window;
    double factor;
    pe_slots work; /* per thread: the far logits [max_len, max_len], then q' and dq' [max_len, d] */
};

posemb_status rope_string_configure(pe_comp *c, pe_opts *o, rope_string **out, posemb_error *err)
{
    *out = NULL;
    if (!pe_opt_given(o, "string")) {
        if (pe_opt_given(o, "string_window") || pe_opt_given(o, "string_factor"))
            return posemb_fail(err, POSEMB_EINVAL, "spec '%s': rope string_window and string_factor need string=S",
                               o->spec);
        return POSEMB_OK;
    }
    rope_string *s = calloc(1, sizeof *s);
    if (!s) return posemb_fail(err, POSEMB_ENOMEM, "rope: out of memory");
    *out = s;
    posemb_status st = pe_opt_int(o, "string", 1, 1, 1 << 30, &s->shift, err);
    if (!st) st = pe_opt_int(o, "string_window", 128, 0, 1 << 30, &s->window, err);
    if (!st) st = pe_opt_double(o, "string_factor", 0.1 * log(2.0) + 1.0, 1e-3, 1e3, &s->factor, err);
    if (st) return st;
    if (s->window >= s->shift)
        return posemb_fail(err, POSEMB_EINVAL,
                           "spec '%s': rope string_window (%d) must be below string (%d): distances from string on "
                           "become distance - string + string_window",
                           o->spec, s->window, s->shift);
    pe_canon_add(c, "string=%d", s->shift);
    pe_canon_add(c, "string_window=%d", s->window);
    pe_canon_num(c, "string_factor", s->factor);
    size_t M = (size_t)c->dims.max_len;
    return pe_slots_init(&s->work, c->dims.max_threads, M * M + 2 * M * c->head_dim, err);
}

void rope_string_free(rope_string *s)
{
    if (!s) return;
    pe_slots_free(&s->work);
    free(s);
}

/* 1 where query i and key j are at least S apart. */
static int far(const rope_string *s, const posemb_pe_head *h, int i, int j)
{
    return h->qpos[i] - h->kpos[j] >= s->shift;
}

void rope_string_scores_forward(const rope_string *s, pe_comp *c, rope_rotate_fn rot, const posemb_pe_head *h,
                                const float *q, int ldq, const float *k, int ldk, float *out, int lds)
{
    int d = c->head_dim, nq = h->nq, nk = h->nk;
    size_t M = (size_t)c->dims.max_len;
    POSEMB_REQUIRE((size_t)nq <= M && (size_t)nk <= M, "rope string: more rows than the PE's max_len");
    float *sfar = pe_slot(&s->work, h->slot), *qs = sfar + M * M;
    float alpha = (float)(h->scale * s->factor * s->factor);
    for (int i = 0; i < nq; i++) memcpy(qs + (size_t)i * d, q + (size_t)i * ldq, (size_t)d * sizeof *qs);
    rot(c, qs, d, nq, s->shift - s->window, -1.0f); /* R(W - S) q */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, d, alpha, q, ldq, k, ldk, 0.0f, out, lds);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, d, alpha, qs, d, k, ldk, 0.0f, sfar, nk);
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nk; j++)
            if (far(s, h, i, j)) out[(size_t)i * lds + j] = sfar[(size_t)i * nk + j];
}

void rope_string_scores_backward(const rope_string *s, pe_comp *c, rope_rotate_fn rot, const posemb_pe_head *h,
                                 const float *q, int ldq, const float *k, int ldk, const float *ds, int ldds, float *dq,
                                 int lddq, float *dk, int lddk, int accumulate)
{
    int d = c->head_dim, nq = h->nq, nk = h->nk;
    size_t M = (size_t)c->dims.max_len;
    float *split = pe_slot(&s->work, h->slot), *qs = split + M * M, *dqs = qs + M * d;
    float alpha = (float)(h->scale * s->factor * s->factor);
    for (int i = 0; i < nq; i++) memcpy(qs + (size_t)i * d, q + (size_t)i * ldq, (size_t)d * sizeof *qs);
    rot(c, qs, d, nq, s->shift - s->window, -1.0f);
    /* the near part in place of ds's copy: ds where near, 0 where far; the far part: the rest */
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nk; j++) split[(size_t)i * nk + j] = far(s, h, i, j) ? 0.0f : ds[(size_t)i * ldds + j];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d, nk, alpha, split, nk, k, ldk, 0.0f, dq, lddq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, d, nq, alpha, split, nk, q, ldq, accumulate ? 1.0f : 0.0f,
                dk, lddk);
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nk; j++) split[(size_t)i * nk + j] = far(s, h, i, j) ? ds[(size_t)i * ldds + j] : 0.0f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d, nk, alpha, split, nk, k, ldk, 0.0f, dqs, d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, d, nq, alpha, split, nk, qs, d, 1.0f, dk, lddk);
    rot(c, dqs, d, nq, s->shift - s->window, 1.0f); /* R(W - S)^T dq' */
    for (int i = 0; i < nq; i++)
        for (int e = 0; e < d; e++) dq[(size_t)i * lddq + e] += dqs[(size_t)i * d + e];
}
