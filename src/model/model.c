/* Model lifetime, parameters, activations and the forward/backward entry
 * points shared by both architectures. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "posemb/attention.h"
#include "posemb/rng.h"
#include "posemb/threads.h"
#include "nn/nn_internal.h"
#include "model/model_internal.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"
#include "pe/pe_internal.h"

static posemb_status make_pe(posemb_model *m, posemb_error *err)
{
    posemb_pe_dims dims = config_pe_dims(&m->cfg);
    return posemb_pe_create(&m->pe, m->cfg.pe, &dims, err);
}

posemb_status posemb_model_create(posemb_model **out, const posemb_config *cfg, posemb_error *err)
{
    *out = NULL;
    posemb_status st = config_check_sizes(cfg, err); /* and the PE, built below */
    if (st) return st;
    posemb_model *m = calloc(1, sizeof *m);
    if (!m) return posemb_fail(err, POSEMB_ENOMEM, "model: out of memory");
    m->cfg = *cfg;
    m->L = calloc((size_t)cfg->layers, sizeof *m->L);
    posemb_arena_init(&m->arena, 0);
    if (!m->L) st = posemb_fail(err, POSEMB_ENOMEM, "model: out of memory");
    if (!st) st = make_pe(m, err);
    if (!st) st = model_layout(m, err);
    if (!st) {
        m->w = calloc(m->n_floats, sizeof(float));
        m->g = calloc(m->n_floats, sizeof(float));
        if (!m->w || !m->g) st = posemb_fail(err, POSEMB_ENOMEM, "model: cannot allocate %zu parameters", m->n_floats);
    }
    if (!st) st = model_layout(m, err); /* second pass: the views */
    if (st) {
        posemb_model_free(m);
        return st;
    }
    posemb_pe_bind(m->pe, m->w + m->pe_offset, m->g + m->pe_offset);
    *out = m;
    return POSEMB_OK;
}

void posemb_model_free(posemb_model *m)
{
    if (!m) return;
    posemb_pe_free(m->pe);
    free(m->params);
    free(m->w);
    free(m->g);
    free(m->L);
    free(m->a.h);
    free(m->a.layer);
    posemb_arena_free(&m->arena);
    free(m);
}

static int is_layernorm(const char *name)
{
    return strstr(name, "LayerNorm.") || strstr(name, "layer_norm.") || strstr(name, "ln_") ||
           strstr(name, "layernorm.") || !strcmp(name, "norm.weight") || strstr(name, "q_norm.") ||
           strstr(name, "k_norm.");
}

/* HF's _init_weights: Linear and Embedding N(0, initializer_range), biases 0,
 * LayerNorm weight 1 and bias 0; the padding row of the word embeddings 0.
 * The PE initialises its own tensors. */
void posemb_model_init(posemb_model *m, uint64_t seed)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, seed, 0);
    size_t pe_end = m->pe_offset + posemb_pe_n_floats(m->pe);
    for (int i = 0; i < m->n_params; i++) {
        posemb_param *p = &m->params[i];
        float *w = m->w + p->offset;
        if (p->offset >= m->pe_offset && p->offset < pe_end) continue;
        int weight = strstr(p->name, ".weight") != NULL;
        if (is_layernorm(p->name)) /* Gemma's RMSNorms scale by 1 + w: HF starts w at 0 */
            for (size_t k = 0; k < p->numel; k++) w[k] = weight && !m->cfg.gemma ? 1.0f : 0.0f;
        else if (p->ndim == 2) posemb_rng_fill_normal(&rng, w, (long)p->numel, m->cfg.initializer_range);
        else memset(w, 0, p->numel * sizeof *w);
    }
    if (m->cfg.pad_token_id >= 0 && m->cfg.arch != POSEMB_GPT2)
        memset(m->wte + (size_t)m->cfg.pad_token_id * m->cfg.hidden, 0, (size_t)m->cfg.hidden * sizeof(float));
    posemb_rng_seed(&rng, seed, 1);
    posemb_pe_init_params(m->pe, &rng);
}

const posemb_config *posemb_model_config(const posemb_model *m) { return &m->cfg; }
posemb_pe *posemb_model_pe(posemb_model *m) { return m->pe; }
void posemb_model_set_matmul(posemb_model *m, posemb_matmul *mm) { m->mm = mm; }
posemb_matmul *posemb_model_matmul(const posemb_model *m) { return m->mm; }
int posemb_model_n_params(const posemb_model *m) { return m->n_params; }
const posemb_param *posemb_model_param(const posemb_model *m, int i)
{
    return i >= 0 && i < m->n_params ? &m->params[i] : NULL;
}
float *posemb_model_weights(posemb_model *m) { return m->w; }
float *posemb_model_grads(posemb_model *m) { return m->g; }
size_t posemb_model_n_floats(const posemb_model *m) { return m->n_floats; }
void posemb_model_zero_grad(posemb_model *m) { memset(m->g, 0, m->n_floats * sizeof(float)); }

const posemb_param *posemb_model_find(const posemb_model *m, const char *name)
{
    for (int i = 0; i < m->n_params; i++)
        if (!strcmp(m->params[i].name, name)) return &m->params[i];
    return NULL;
}

/* n floats from the arena; clears *ok when the arena cannot give them. */
static float *take(posemb_arena *ar, size_t n, int *ok)
{
    float *p = posemb_arena_floats(ar, n);
    if (!p) *ok = 0;
    return p;
}

int model_lm_chunk(int vocab, size_t rows)
{
    size_t n = LM_CHUNK_FLOATS / (size_t)vocab;
    if (n < 64) n = 64;
    return (int)(n < rows ? n : rows);
}

/* Carves the activations of a B x T batch out of the arena; 0 when out of memory. */
static int carve(posemb_model *m, int B, int T)
{
    int ok = 1;
    const posemb_config *c = &m->cfg;
    posemb_arena *ar = &m->arena;
    size_t N = (size_t)B * T, D = (size_t)c->hidden, F = (size_t)c->intermediate /* not I: <complex.h> */,
           H = (size_t)c->heads, glu = c->arch == POSEMB_LLAMA ? 2 : 1;
    /* q, k, v per token: grouped-query attention keeps only kv_heads keys and values;
     * attention is A = H d wide (d: head_dim), D but for a Llama that sets head_dim */
    size_t d = (size_t)posemb_config_head_dim(c), A = H * d;
    size_t W = (size_t)model_qkv_width(c), DA = D > A ? D : A;
    model_acts *a = &m->a;
#define F(n) take(ar, (n), &ok)
    a->emb_sum = F(N * D);
    a->emb = F(N * D);
    a->emb_mean = F(N);
    a->emb_rstd = F(N);
    a->hf = F(N * D);
    a->hf_mean = F(N);
    a->hf_rstd = F(N);
    a->pooled = F((size_t)B * D);
    a->pool_in = F((size_t)B * D);
    for (int l = 0; l <= c->layers; l++) a->h[l] = F(N * D);
    for (int l = 0; l < c->layers; l++) {
        layer_acts *la = &a->layer[l];
        la->a = F(N * D);
        la->qkv = F(N * W);
        la->probs = F((size_t)B * H * T * T);
        la->z = F(N * A);
        la->r1 = F(N * D);
        la->h1 = F(N * D);
        la->fi = F(N * F * glu); /* Llama: gate and up */
        la->ga = F(N * F);
        la->r2 = F(N * D);
        la->mean1 = F(N);
        la->rstd1 = F(N);
        la->mean2 = F(N);
        la->rstd2 = F(N);
        if (c->gemma) la->ffo = F(N * D);
        if (c->qk_norm || config_any_qk_unit_norm(c)) { /* inference shares layer 0's buffers */
            la->qk_raw = F(N * (size_t)(c->heads + c->kv_heads) * posemb_config_head_dim(c));
            la->qk_rstd = F(N * (size_t)(c->heads + c->kv_heads));
        }
    }
    a->dx = F(N * D);
    a->dx2 = F(N * D);
    a->dres = F(N * D);
    a->dh = F(N * D);
    a->dz = F(N * DA); /* also the FFN's dropout scratch, D wide */
    a->dqkv = F(N * W);
    a->dfi = F(N * F * glu);
    a->dga = F(N * F);
    a->demb = F(N * D);
    posemb_nn_attn_shape sh = {.B = B, .T = T, .D = (int)A, .H = c->heads};
    a->attn_scratch = F(posemb_nn_attention_scratch_floats(&sh, m->pe));
    a->pe_scratch = F(posemb_pe_input_scratch_floats(m->pe, (long)N) + 1);
    a->pe_layer_scratch = F(posemb_pe_layer_scratch_floats(m->pe, (long)N) + 1);
    if (c->arch == POSEMB_NEOX) a->qkv_hf = F(N * W);
    if (c->gemma) a->norm_w1 = F(2 * (D > d ? D : d));
    a->mask = F(N);
    a->hx = F(N * D);
    a->ht = F(N * D);
    a->hg = F(N * D);
    a->hu = F(N * D);
    a->hmean = F(N);
    a->hrstd = F(N);
    a->dhx = F(N * D);
    a->dht = F(N * D);
    a->dhg = F(N * D);
    a->dhu = F(N * D);
    a->dlast = F(N * D);
    size_t nlog = N * 2 > (size_t)B * (c->num_labels + 1) ? N * 2 : (size_t)B * (c->num_labels + 1);
    a->logits = F(nlog);
    a->lm_chunk = model_lm_chunk(c->vocab_size, N);
    if (c->head == POSEMB_HEAD_MLM || c->head == POSEMB_HEAD_CLM)
        a->lm_scratch = F((size_t)a->lm_chunk * c->vocab_size);
#undef F
    a->rows = posemb_arena_alloc(ar, N * sizeof(int32_t));
    a->tgt = posemb_arena_alloc(ar, (N + 2 * (size_t)B) * sizeof(int32_t)); /* span: 2 per sequence */
    int32_t **ints[] = {&a->pos_in, &a->pos_attn, &a->ids, &a->types};
    for (int i = 0; i < 4; i++) ok &= (*ints[i] = posemb_arena_alloc(ar, N * sizeof(int32_t))) != NULL;
    ok &= (a->pos_axes = posemb_arena_alloc(ar, POSEMB_PE_AXES * N * sizeof(int32_t))) != NULL;
    return ok && a->rows && a->tgt;
}

posemb_status model_reserve(posemb_model *m, int B, int T, posemb_error *err)
{
    if (B <= m->cap_B && T <= m->cap_T && m->a.h) return POSEMB_OK;
    posemb_arena_free(&m->arena);
    posemb_arena_init(&m->arena, 1 << 20);
    free(m->a.h);
    free(m->a.layer);
    m->a.h = calloc((size_t)m->cfg.layers + 1, sizeof *m->a.h);
    m->a.layer = calloc((size_t)m->cfg.layers, sizeof *m->a.layer);
    if (!m->a.h || !m->a.layer || !carve(m, B, T)) {
        m->cap_B = m->cap_T = 0;
        return posemb_fail(err, POSEMB_ENOMEM, "model: cannot allocate activations for a %d x %d batch", B, T);
    }
    m->cap_B = B;
    m->cap_T = T;
    return POSEMB_OK;
}

/* Copies the batch in, checking every id against the vocabulary. */
static posemb_status take_batch(posemb_model *m, const posemb_batch *b, posemb_error *err)
{
    const posemb_config *c = &m->cfg;
    model_acts *a = &m->a;
    for (int t = 0; t < b->B * b->T; t++) {
        int32_t id = b->ids[t], ty = b->types ? b->types[t] : 0;
        if (id < 0 || id >= c->vocab_size)
            return posemb_fail(err, POSEMB_ERANGE, "token id %d at [%d, %d] is outside the vocabulary (%d)", id,
                               t / b->T, t % b->T, c->vocab_size);
        if (ty < 0 || (ty > 0 && ty >= c->type_vocab))
            return posemb_fail(err, POSEMB_ERANGE, "token type %d at [%d, %d] is outside [0, %d)", ty, t / b->T,
                               t % b->T, c->type_vocab);
        a->ids[t] = id;
        a->types[t] = ty;
        a->mask[t] = b->mask ? b->mask[t] : 1.0f;
    }
    return POSEMB_OK;
}

/* Positions as HF computes them: arange for BERT and GPT-2; RoBERTa counts
 * non-padding tokens from pad + 1, and gives padding the position pad.
 * Relative terms always see the token index. With randomized positions
 * (random:max=N) both see, in place of index t, the t-th of T sorted
 * positions drawn once for the batch: a new draw every training step, one
 * fixed draw in evaluation. */
static void make_positions(posemb_model *m, int B, int T)
{
    model_acts *a = &m->a;
    int pad = m->cfg.pad_token_id;
    int32_t *drawn = a->pos_attn; /* the first sequence's row holds the draw */
    int random = posemb_pe_random_max(m->pe) > 0;
    if (random) {
        uint64_t key = posemb_nn_dropout_key(m->seed, m->train ? m->step : UINT64_MAX, UINT64_MAX);
        if (posemb_pe_draw_positions(m->pe, key, T, drawn, NULL)) random = 0; /* T > N: checked by the caller */
    }
    for (int b = 0; b < B; b++) {
        int32_t count = 0;
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            a->pos_attn[i] = random ? drawn[t] : t;
            if (m->cfg.arch != POSEMB_ROBERTA) a->pos_in[i] = a->pos_attn[i];
            else a->pos_in[i] = a->ids[i] != pad ? pad + 1 + (random ? drawn[count++] : count++) : pad;
        }
    }
}

/* The caller's position_ids, as HF reads them: the input hook takes them
 * as given, the attention hooks the same positions counted from 0, which
 * for RoBERTa (whose positions start at pad + 1, padding's being pad) is
 * less pad + 1, a padding token (attended by no query) keeping its index. */
static posemb_status given_positions(posemb_model *m, const int32_t *pos, int N, int T, posemb_error *err)
{
    model_acts *a = &m->a;
    int roberta = m->cfg.arch == POSEMB_ROBERTA, pad = m->cfg.pad_token_id, lo = roberta ? pad : 0;
    if (posemb_pe_random_max(m->pe))
        return posemb_fail(err, POSEMB_EINVAL,
                           "batch: position_ids given to PE %s, which draws its own positions (random:max=)",
                           posemb_pe_spec(m->pe));
    for (int i = 0; i < N; i++) {
        if (pos[i] < lo || pos[i] == INT32_MAX)
            return posemb_fail(err, POSEMB_ERANGE, "batch: position_ids[%d][%d] = %d is outside [%d, %d)", i / T, i % T,
                               pos[i], lo, INT32_MAX);
        a->pos_in[i] = pos[i];
        a->pos_attn[i] = !roberta ? pos[i] : pos[i] > pad ? pos[i] - pad - 1 : i % T;
    }
    return POSEMB_OK;
}

/* The caller's multi-axis position_ids [3, B, T] (Qwen2-VL's temporal,
 * height, width), for a PE that reads them: the attention hooks take them
 * in place of one position per token. */
static posemb_status given_axes(posemb_model *m, const int32_t *axes, long N, int T, posemb_error *err)
{
    model_acts *a = &m->a;
    a->has_axes = 0;
    if (!axes) return POSEMB_OK;
    if (posemb_pe_random_max(m->pe))
        return posemb_fail(err, POSEMB_EINVAL,
                           "batch: position_ids given to PE %s, which draws its own positions (random:max=)",
                           posemb_pe_spec(m->pe));
    if (posemb_pe_n_axes(m->pe) != POSEMB_PE_AXES)
        return posemb_fail(err, POSEMB_EINVAL,
                           "batch: position_ids with %d axes given to PE %s, which reads one position per token "
                           "(M-RoPE reads them: rope:mrope=T|H|W)",
                           POSEMB_PE_AXES, posemb_pe_spec(m->pe));
    for (long i = 0; i < POSEMB_PE_AXES * N; i++) {
        if (axes[i] < 0 || axes[i] == INT32_MAX)
            return posemb_fail(err, POSEMB_ERANGE, "batch: position_ids[%ld][%ld][%ld] = %d is outside [0, %d)", i / N,
                               i % N / T, i % T, axes[i], INT32_MAX);
        a->pos_axes[i] = axes[i];
    }
    a->has_axes = 1;
    return POSEMB_OK;
}

/* A sequence longer than the PE was built for: a PE without a table is
 * rebuilt for it (and the activations, whose PE scratch it sizes, with
 * it); one with a table is refused, naming the table. */
static posemb_status reserve_pe(posemb_model *m, int T, posemb_error *err)
{
    int before = posemb_pe_get_dims(m->pe)->max_len;
    posemb_error why;
    posemb_status st = posemb_pe_reserve(m->pe, T, &why);
    if (st == POSEMB_ERANGE)
        return posemb_fail(err, st, "batch: %s (max_position_embeddings %d)", why.msg, m->cfg.max_position);
    if (st) return posemb_fail(err, st, "%s", why.msg);
    if (posemb_pe_get_dims(m->pe)->max_len != before) m->cap_T = 0;
    return POSEMB_OK;
}

/* Positions past a PE's table, named with the config key that sizes it;
 * for positions posemb counted itself, the input's length is what to change. */
static posemb_status check_positions(posemb_model *m, const int32_t *pos, long n, int T, int given, posemb_error *err)
{
    posemb_error why;
    if (!posemb_pe_check_positions(m->pe, pos, n, &why)) return POSEMB_OK;
    if (given)
        return posemb_fail(err, why.code, "batch: %s (max_position_embeddings %d)", why.msg, m->cfg.max_position);
    return posemb_fail(err, why.code, "batch: %d tokens are too many: %s (max_position_embeddings %d)", T, why.msg,
                       m->cfg.max_position);
}

/* Checks and takes the batch: sizes, ids, positions. */
static posemb_status prepare_batch(posemb_model *m, const posemb_batch *b, posemb_error *err)
{
    if (b->B < 1 || b->T < 1) return posemb_fail(err, POSEMB_EINVAL, "batch: %d x %d is empty", b->B, b->T);
    m->B = 0; /* a failed forward leaves no last batch to read (its buffers may be gone) */
    posemb_status st = reserve_pe(m, b->T, err);
    if (!st) st = model_reserve(m, b->B, b->T, err);
    if (!st) st = take_batch(m, b, err);
    if (st) return st;
    if (!b->positions && posemb_pe_random_max(m->pe) && b->T > posemb_pe_random_max(m->pe))
        return posemb_fail(err, POSEMB_ERANGE, "batch: %d tokens, more than random:max=%d distinct positions", b->T,
                           posemb_pe_random_max(m->pe));
    if (b->positions) st = given_positions(m, b->positions, b->B * b->T, b->T, err);
    else make_positions(m, b->B, b->T);
    if (!st) st = check_positions(m, m->a.pos_in, (long)b->B * b->T, b->T, b->positions != NULL, err);
    if (!st) st = check_positions(m, m->a.pos_attn, (long)b->B * b->T, b->T, b->positions != NULL, err);
    if (!st) st = given_axes(m, b->axes, (long)b->B * b->T, b->T, err);
    if (st) return st;
    m->B = b->B;
    m->T = b->T;
    m->has_pooled = 0;
    return POSEMB_OK;
}

posemb_status posemb_model_forward(posemb_model *m, const posemb_batch *b, posemb_error *err)
{
    posemb_status st = prepare_batch(m, b, err);
    if (st) return st;
    m->acts_shared = m->inference;
    matmul_new_pass(m->mm, !m->inference); /* bf16: a backward may read this forward's copies */
    if (m->cfg.arch == POSEMB_GPT2) decoder_forward(m);
    else if (m->cfg.arch == POSEMB_LLAMA) llama_forward(m);
    else if (m->cfg.arch == POSEMB_NEOX) neox_forward(m);
    else encoder_forward(m);
    return POSEMB_OK;
}

void posemb_model_set_inference(posemb_model *m, int on) { m->inference = on != 0; }

const posemb_layer_params *posemb_model_layer(const posemb_model *m, int l, posemb_nn_wlayout *layout)
{
    if (layout) *layout = model_wlayout(m);
    return l >= 0 && l < m->cfg.layers ? &m->L[l] : NULL;
}

posemb_status posemb_model_layer0_logits(posemb_model *m, const posemb_batch *b, float *out, posemb_error *err)
{
    int train = m->train;
    m->train = 0;
    posemb_status st = prepare_batch(m, b, err);
    m->train = train;
    if (st) return st;
    model_acts *a = &m->a;
    layer_acts *la = &a->layer[0];
    const posemb_config *c = &m->cfg;
    int N = m->B * m->T, D = c->hidden, H = c->heads, T = m->T, d = posemb_config_head_dim(c), A = H * d;
    int gpt2 = c->arch == POSEMB_GPT2, llama = c->arch == POSEMB_LLAMA, neox = c->arch == POSEMB_NEOX;
    int KV = model_kv_heads(c), grp = H / KV;
    int ld = model_qkv_width(c);
    posemb_nn_embedding_forward(a->emb_sum, m->wte, a->ids, N, D, 0);
    if (m->wtype) posemb_nn_embedding_forward(a->emb_sum, m->wtype, a->types, N, D, 1);
    posemb_pe_input_forward(m->pe, a->pos_in, N, a->emb_sum, a->emb, a->pe_scratch, NULL); /* positions checked */
    const float *lnw = model_is_decoder(m) ? model_norm_weight(m, m->L[0].ln1_w, D, 0) : m->emb_ln_w;
    const float *lnb = gpt2 || neox ? m->L[0].ln1_b : m->emb_ln_b;
    if (llama) posemb_nn_rmsnorm_forward(la->a, NULL, la->rstd1, a->emb, lnw, N, D, c->ln_eps);
    else posemb_nn_layernorm_forward(la->a, la->mean1, la->rstd1, a->emb, lnw, lnb, N, D, c->ln_eps);
    if (c->pre_ln) { /* a pre-LN encoder's layer 0 reads LN1 of the embeddings' LayerNorm */
        memcpy(a->h[0], la->a, (size_t)N * D * sizeof(float));
        posemb_nn_layernorm_forward(la->a, la->mean1, la->rstd1, a->h[0], m->L[0].ln1_w, m->L[0].ln1_b, N, D,
                                    c->ln_eps);
    }
    posemb_nn_linear_forward(m->mm, neox ? a->qkv_hf : la->qkv, la->a, m->L[0].qkv_w, m->L[0].qkv_b, N, D, ld,
                             gpt2 ? POSEMB_NN_W_IN_OUT : POSEMB_NN_W_OUT_IN);
    if (neox) neox_qkv_from_hf(la->qkv, a->qkv_hf, N, H, d);
    if (c->qk_norm || config_qk_unit_norm(c, 0)) /* Qwen3, Llama 4: the PE sees the normalised heads */
        posemb_nn_qk_rmsnorm_forward(la->qkv, la->qk_raw, la->qk_rstd, model_norm_weight(m, m->L[0].qn_w, d, 0),
                                     model_norm_weight(m, m->L[0].kn_w, d, 1), N, H, KV, d, c->ln_eps);
    float scale = model_attn_scale(c);
    posemb_pe_layer_input_forward(m->pe, 0, la->a, m->B, T, a->pe_layer_scratch);
    int32_t top = 0; /* the batch's largest position, as the attention passes it (HF's dynamic RoPE) */
    for (int i = 0; i < N; i++) top = a->pos_attn[i] > top ? a->pos_attn[i] : top;
    for (int bi = 0; bi < m->B; bi++) {
        const int32_t *ps = a->pos_attn + (size_t)bi * T;
        float *row = la->qkv + (size_t)bi * T * ld;
        const int32_t *ax = a->has_axes ? a->pos_axes + (size_t)bi * T : NULL;
        const posemb_pe_head seq = {.d = d,
                                    .scale = scale,
                                    .qpos = ps,
                                    .kpos = ps,
                                    .seq = bi,
                                    .batch_len = top + 1,
                                    .qaxes = ax,
                                    .kaxes = ax,
                                    .axis_stride = N};
        posemb_pe_head hd = seq;
        hd.nk = T;
        for (int g = 0; g < KV; g++) { /* each key rotated once, however many query heads read it */
            hd.head = g * grp;
            posemb_pe_qk_forward(m->pe, &hd, NULL, ld, row + A + (size_t)g * d, ld);
        }
        for (int h = 0; h < H; h++) {
            float *q = row + (size_t)h * d, *k = row + A + (size_t)(h / grp) * d,
                  *s = out + ((size_t)bi * H + h) * T * T;
            hd = seq;
            hd.head = h;
            hd.nq = T;
            posemb_pe_qk_forward(m->pe, &hd, q, ld, NULL, ld);
            hd.nk = T;
            if (!posemb_pe_scores_forward(m->pe, &hd, q, ld, k, ld, s, T))
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, scale, q, ld, k, ld, 0.0f, s, T);
            posemb_pe_logits_forward(m->pe, &hd, q, ld, k, ld, s, T);
        }
    }
    return POSEMB_OK;
}

const float *posemb_model_hidden(const posemb_model *m, int i)
{
    if (!m->B || i < 0 || i > m->cfg.layers) return NULL;          /* no forward pass yet, or no such layer */
    if (i == m->cfg.layers && model_is_decoder(m)) return m->a.hf; /* HF's decoders add theirs after the norm */
    return m->a.h[i];
}

const float *posemb_model_last_hidden(const posemb_model *m)
{
    if (!m->B) return NULL;
    return model_has_final_norm(m) ? m->a.hf : m->a.h[m->cfg.layers];
}

const float *posemb_model_attention(const posemb_model *m, int l)
{
    return !m->B || m->acts_shared || l < 0 || l >= m->cfg.layers ? NULL : m->a.layer[l].probs;
}

const float *posemb_model_qkv(const posemb_model *m, int l, int *ld)
{
    const posemb_config *c = &m->cfg;
    *ld = model_qkv_width(c);
    return !m->B || m->acts_shared || l < 0 || l >= c->layers ? NULL : m->a.layer[l].qkv;
}

const float *posemb_model_pooled(posemb_model *m)
{
    if (model_is_decoder(m) || !m->pool_w) return NULL; /* GPT-2 and HF's *ForMaskedLM have no pooler */
    if (m->has_pooled) return m->a.pooled;
    int D = m->cfg.hidden;
    for (int b = 0; b < m->B; b++)
        memcpy(m->a.pool_in + (size_t)b * D, posemb_model_last_hidden(m) + (size_t)b * m->T * D,
               (size_t)D * sizeof(float));
    posemb_nn_linear_forward(m->mm, m->a.pooled, m->a.pool_in, m->pool_w, m->pool_b, m->B, D, D, POSEMB_NN_W_OUT_IN);
    posemb_nn_tanh_forward(m->a.pooled, m->a.pooled, (long)m->B * D);
    m->has_pooled = 1;
    return m->a.pooled;
}

void posemb_model_backward(posemb_model *m, const float *dlast)
{
    POSEMB_REQUIRE(!m->acts_shared, "backward after an inference pass (posemb_model_set_inference)");
    if (m->cfg.arch == POSEMB_GPT2) decoder_backward(m, dlast);
    else if (m->cfg.arch == POSEMB_LLAMA) llama_backward(m, dlast);
    else if (m->cfg.arch == POSEMB_NEOX) neox_backward(m, dlast);
    else encoder_backward(m, dlast);
}

void posemb_model_set_train(posemb_model *m, int train, uint64_t seed, uint64_t step)
{
    m->train = train;
    m->seed = seed;
    m->step = step;
}
