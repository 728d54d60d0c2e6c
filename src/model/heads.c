/* The heads on top of the last hidden state, their losses and backward
 * passes. Each computes d loss / d last_hidden_state into dlast and hands it
 * to the base model's backward pass. Only the rows a loss reads are
 * computed: the masked tokens of MLM, the predicted tokens of CLM, the first
 * token of each sequence for classification. */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "nn/nn_internal.h"

#define GR(ptr) (m->g + ((ptr)-m->w)) /* the gradient of a parameter view */

static const float *last_hidden(const posemb_model *m) { return posemb_model_last_hidden(m); }

/* Copies rows rows[0..M) of src [N, D] into dst [M, D]. */
static void gather(float *dst, const float *src, const int32_t *rows, int M, int D)
{
    for (int i = 0; i < M; i++) memcpy(dst + (size_t)i * D, src + (size_t)rows[i] * D, (size_t)D * sizeof *dst);
}

/* dst [N, D] rows rows[i] += src [M, D] row i. */
static void scatter_add(float *dst, const float *src, const int32_t *rows, int M, int D)
{
    for (int i = 0; i < M; i++)
        for (int k = 0; k < D; k++) dst[(size_t)rows[i] * D + k] += src[(size_t)i * D + k];
}

/* Rows a language-model loss reads, with their targets. MLM: the positions
 * with a target; CLM: position t predicts the label of t + 1 (HF's shift). */
static int lm_rows(posemb_model *m, const int32_t *tokens)
{
    model_acts *a = &m->a;
    int M = 0, T = m->T, clm = m->cfg.head == POSEMB_HEAD_CLM;
    for (int i = 0; i < m->B * T; i++) {
        int32_t y = clm ? (i % T + 1 < T ? tokens[i + 1] : -100) : tokens[i];
        if (y < 0) continue;
        a->rows[M] = i;
        a->tgt[M++] = y;
    }
    return M;
}

static posemb_status lm_loss(posemb_model *m, const posemb_targets *t, float gs, posemb_loss *out, posemb_error *err)
{
    const posemb_config *c = &m->cfg;
    model_acts *a = &m->a;
    head_params *h = &m->hp;
    int D = c->hidden, V = c->vocab_size, mlm = c->head == POSEMB_HEAD_MLM;
    if (!t->tokens) return posemb_fail(err, POSEMB_EINVAL, "loss: the LM head needs token targets");
    for (int i = 0; i < m->B * m->T; i++)
        if (t->tokens[i] >= V)
            return posemb_fail(err, POSEMB_ERANGE, "loss: target %d outside the vocabulary", t->tokens[i]);
    int M = lm_rows(m, t->tokens);
    out->count = M;
    if (!M) return POSEMB_OK;
    gather(a->hx, last_hidden(m), a->rows, M, D);
    const float *x = a->hx;
    if (mlm) { /* transform: dense, gelu, LayerNorm (RoBERTa's lm_head uses the erf GELU) */
        posemb_nn_gelu_kind act = c->arch == POSEMB_ROBERTA ? POSEMB_NN_GELU_ERF : c->act;
        posemb_nn_linear_forward(m->mm, a->ht, a->hx, h->dense_w, h->dense_b, M, D, D, POSEMB_NN_W_OUT_IN);
        posemb_nn_gelu_forward(a->hg, a->ht, (long)M * D, act);
        posemb_nn_layernorm_forward(a->hu, a->hmean, a->hrstd, a->hg, h->ln_w, h->ln_b, M, D, c->ln_eps);
        x = a->hu;
    }
    float scale = gs / (float)M;
    if (gs != 0.0f) memset(a->dhu, 0, (size_t)M * D * sizeof(float));
    double sum = posemb_nn_xent_tied(m->mm, x, M, D, m->lm_w, mlm ? h->bias : NULL, V, a->tgt, scale, a->dhu,
                                     GR(m->lm_w), mlm ? GR(h->bias) : NULL, a->lm_scratch, a->lm_chunk, &out->correct);
    out->loss = sum / M;
    if (gs == 0.0f) return POSEMB_OK;
    const float *dx = a->dhu;
    if (mlm) {
        posemb_nn_gelu_kind act = c->arch == POSEMB_ROBERTA ? POSEMB_NN_GELU_ERF : c->act;
        memset(a->dhg, 0, (size_t)M * D * sizeof(float));
        posemb_nn_layernorm_backward(a->dhg, GR(h->ln_w), GR(h->ln_b), a->dhu, a->hg, h->ln_w, a->hmean, a->hrstd, M,
                                     D);
        memset(a->dht, 0, (size_t)M * D * sizeof(float));
        posemb_nn_gelu_backward(a->dht, a->dhg, a->ht, (long)M * D, act);
        posemb_nn_linear_backward_set(m->mm, a->dhx, GR(h->dense_w), GR(h->dense_b), a->dht, a->hx, h->dense_w, M, D, D,
                                      POSEMB_NN_W_OUT_IN);
        dx = a->dhx;
    }
    scatter_add(a->dlast, dx, a->rows, M, D);
    return POSEMB_OK;
}

posemb_status posemb_model_lm_logits(posemb_model *m, float *out, posemb_error *err)
{
    const posemb_config *c = &m->cfg;
    model_acts *a = &m->a;
    head_params *h = &m->hp;
    int D = c->hidden, V = c->vocab_size, N = m->B * m->T;
    if (!m->B) return posemb_fail(err, POSEMB_EINVAL, "LM logits: no forward pass yet");
    if (c->head != POSEMB_HEAD_MLM && c->head != POSEMB_HEAD_CLM)
        return posemb_fail(err, POSEMB_EINVAL, "LM logits: %s has no language-model head", c->architecture);
    const float *x = last_hidden(m);
    if (c->head == POSEMB_HEAD_MLM) { /* the transform of lm_loss, on every row */
        posemb_nn_gelu_kind act = c->arch == POSEMB_ROBERTA ? POSEMB_NN_GELU_ERF : c->act;
        posemb_nn_linear_forward(m->mm, a->ht, x, h->dense_w, h->dense_b, N, D, D, POSEMB_NN_W_OUT_IN);
        posemb_nn_gelu_forward(a->hg, a->ht, (long)N * D, act);
        posemb_nn_layernorm_forward(a->hu, a->hmean, a->hrstd, a->hg, h->ln_w, h->ln_b, N, D, c->ln_eps);
        x = a->hu;
    }
    posemb_nn_gemm(m->mm, 0, 1, N, V, D, 1.0f, x, D, m->lm_w, D, 0.0f, out, V);
    if (c->head == POSEMB_HEAD_MLM)
        for (int i = 0; i < N; i++)
            for (int v = 0; v < V; v++) out[(size_t)i * V + v] += h->bias[v];
    return POSEMB_OK;
}

/* The first token of each sequence (BERT's [CLS], RoBERTa's <s>). */
static void first_tokens(posemb_model *m, float *dst)
{
    for (int b = 0; b < m->B; b++) m->a.rows[b] = b * m->T;
    gather(dst, last_hidden(m), m->a.rows, m->B, m->cfg.hidden);
}

/* Classifier logits [B, C] from the first tokens. BERT: pooler (dense,
 * tanh), dropout, linear. RoBERTa: dropout, dense, tanh, dropout, out_proj. */
static void classify_forward(posemb_model *m)
{
    model_acts *a = &m->a;
    head_params *h = &m->hp;
    int B = m->B, D = m->cfg.hidden, C = m->cfg.num_labels;
    uint64_t key1, key2;
    float p1 = model_dropout(m, m->cfg.layers, SITE_ATTN_OUT, &key1),
          p2 = model_dropout(m, m->cfg.layers, SITE_FFN_OUT, &key2);
    first_tokens(m, a->hx);
    const float *w1 = m->cfg.arch == POSEMB_BERT ? m->pool_w : h->dense_w,
                *b1 = m->cfg.arch == POSEMB_BERT ? m->pool_b : h->dense_b;
    const float *in = a->hx;
    if (m->cfg.arch != POSEMB_BERT) { /* RoBERTa drops out before its dense layer too */
        posemb_nn_dropout_forward(a->hg, a->hx, (long)B * D, p1, key1);
        in = a->hg;
    }
    posemb_nn_linear_forward(m->mm, a->ht, in, w1, b1, B, D, D, POSEMB_NN_W_OUT_IN);
    posemb_nn_tanh_forward(a->ht, a->ht, (long)B * D);
    posemb_nn_dropout_forward(a->hu, a->ht, (long)B * D, p2, key2);
    posemb_nn_linear_forward(m->mm, a->logits, a->hu, h->out_w, h->out_b, B, D, C, POSEMB_NN_W_OUT_IN);
}

/* dlogits [B, C] -> dlast rows of the first tokens, and the head's gradients. */
static void classify_backward(posemb_model *m, const float *dlogits)
{
    model_acts *a = &m->a;
    head_params *h = &m->hp;
    int B = m->B, D = m->cfg.hidden, C = m->cfg.num_labels, bert = m->cfg.arch == POSEMB_BERT;
    const float *w1 = bert ? m->pool_w : h->dense_w, *b1 = bert ? m->pool_b : h->dense_b;
    size_t BD = (size_t)B * D;
    posemb_nn_linear_backward_set(m->mm, a->dhu, GR(h->out_w), GR(h->out_b), dlogits, a->hu, h->out_w, B, D, C,
                                  POSEMB_NN_W_OUT_IN);
    const float *dt = model_undrop(m, m->cfg.layers, SITE_FFN_OUT, a->dhu, a->dhg, (long)BD);
    memset(a->dht, 0, BD * sizeof(float));
    posemb_nn_tanh_backward(a->dht, dt, a->ht, (long)BD);
    posemb_nn_linear_backward_set(m->mm, a->dhx, GR(w1), GR(b1), a->dht, bert ? a->hx : a->hg, w1, B, D, D,
                                  POSEMB_NN_W_OUT_IN);
    const float *dx = bert ? a->dhx : model_undrop(m, m->cfg.layers, SITE_ATTN_OUT, a->dhx, a->dhu, (long)BD);
    scatter_add(a->dlast, dx, a->rows, B, D);
}

static posemb_status classify_loss(posemb_model *m, const posemb_targets *t, float gs, posemb_loss *out,
                                   posemb_error *err)
{
    int B = m->B, C = m->cfg.num_labels, regress = m->cfg.head == POSEMB_HEAD_REGRESS;
    if (regress ? !t->values : !t->labels)
        return posemb_fail(err, POSEMB_EINVAL, "loss: the head needs %s", regress ? "values" : "labels");
    classify_forward(m);
    float *z = m->a.logits;
    out->count = B;
    if (regress) { /* HF: MSE, mean over the batch */
        double sum = 0;
        for (int b = 0; b < B; b++) {
            double e = z[b] - t->values[b];
            sum += e * e;
            z[b] = (float)(gs * 2.0 * e / B);
        }
        out->loss = sum / B;
    } else {
        for (int b = 0; b < B; b++)
            if (t->labels[b] < 0 || t->labels[b] >= C)
                return posemb_fail(err, POSEMB_ERANGE, "loss: label %d of sequence %d is outside [0, %d)", t->labels[b],
                                   b, C);
        out->loss = posemb_nn_xent(z, B, C, t->labels, gs / (float)B, &out->correct) / B;
    }
    if (gs != 0.0f) classify_backward(m, z);
    return POSEMB_OK;
}

/* Start and end logits [B, T, 2]. */
static void span_forward(posemb_model *m)
{
    posemb_nn_linear_forward(m->mm, m->a.logits, last_hidden(m), m->hp.out_w, m->hp.out_b, m->B * m->T, m->cfg.hidden,
                             2, POSEMB_NN_W_OUT_IN);
}

/* HF: positions clamped to [0, T], T ignored; loss = (CE(start) + CE(end)) / 2,
 * each a mean over the sequences it counts. */
static posemb_status span_loss(posemb_model *m, const posemb_targets *t, float gs, posemb_loss *out, posemb_error *err)
{
    int B = m->B, T = m->T;
    model_acts *a = &m->a;
    if (!t->starts || !t->ends) return posemb_fail(err, POSEMB_EINVAL, "loss: the span head needs starts and ends");
    span_forward(m);
    float *z = a->ht; /* [2][B, T]: start logits then end logits */
    double total = 0;
    long hits[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        const int32_t *pos = k ? t->ends : t->starts;
        int counted = 0;
        for (int b = 0; b < B; b++) {
            int y = pos[b] < 0 ? 0 : pos[b] > T ? T : pos[b];
            a->tgt[k * B + b] = y < T ? y : -1;
            counted += y < T;
            for (int i = 0; i < T; i++)
                z[(size_t)k * B * T + (size_t)b * T + i] = a->logits[((size_t)b * T + i) * 2 + k];
        }
        float scale = counted ? gs / (2.0f * counted) : 0.0f;
        double sum = posemb_nn_xent(z + (size_t)k * B * T, B, T, a->tgt + k * B, scale, &hits[k]);
        total += counted ? sum / counted / 2.0 : 0.0;
    }
    out->loss = total;
    out->count = B;
    out->correct = hits[0] < hits[1] ? hits[0] : hits[1];
    if (gs == 0.0f) return POSEMB_OK;
    for (int b = 0; b < B; b++) /* back to [B, T, 2] */
        for (int i = 0; i < T; i++)
            for (int k = 0; k < 2; k++)
                a->logits[((size_t)b * T + i) * 2 + k] = z[(size_t)k * B * T + (size_t)b * T + i];
    posemb_nn_linear_backward(m->mm, a->dlast, GR(m->hp.out_w), GR(m->hp.out_b), a->logits, last_hidden(m), m->hp.out_w,
                              B * T, m->cfg.hidden, 2, POSEMB_NN_W_OUT_IN);
    return POSEMB_OK;
}

posemb_status posemb_model_loss(posemb_model *m, const posemb_targets *t, float grad_scale, posemb_loss *out,
                                posemb_error *err)
{
    memset(out, 0, sizeof *out);
    if (!m->B) return posemb_fail(err, POSEMB_EINVAL, "loss: no forward pass yet");
    if (grad_scale != 0.0f && m->acts_shared)
        return posemb_fail(err, POSEMB_EINVAL, "loss: gradients after an inference pass (posemb_model_set_inference)");
    if (grad_scale != 0.0f) memset(m->a.dlast, 0, (size_t)m->B * m->T * m->cfg.hidden * sizeof(float));
    posemb_status st;
    switch (m->cfg.head) {
    case POSEMB_HEAD_MLM:
    case POSEMB_HEAD_CLM:
        st = lm_loss(m, t, grad_scale, out, err);
        break;
    case POSEMB_HEAD_CLASSIFY:
    case POSEMB_HEAD_REGRESS:
        st = classify_loss(m, t, grad_scale, out, err);
        break;
    case POSEMB_HEAD_SPAN:
        st = span_loss(m, t, grad_scale, out, err);
        break;
    default:
        return posemb_fail(err, POSEMB_EINVAL, "loss: %s has no head", m->cfg.architecture);
    }
    if (!st && grad_scale != 0.0f) posemb_model_backward(m, m->a.dlast);
    return st;
}

const float *posemb_model_head_logits(posemb_model *m, posemb_error *err)
{
    if (!m->B) {
        posemb_fail(err, POSEMB_EINVAL, "head: no forward pass yet");
        return NULL;
    }
    if (m->cfg.head == POSEMB_HEAD_CLASSIFY || m->cfg.head == POSEMB_HEAD_REGRESS) classify_forward(m);
    else if (m->cfg.head == POSEMB_HEAD_SPAN) span_forward(m);
    else {
        posemb_fail(err, POSEMB_EINVAL, "head: %s has no per-sequence logits", m->cfg.architecture);
        return NULL;
    }
    return m->a.logits;
}
