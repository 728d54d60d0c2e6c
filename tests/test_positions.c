/* Caller positions (Hugging Face's position_ids) and lengths past
 * max_position_embeddings, in tiny models (2 layers, width 16, 2 heads):
 *
 * - tokens given position_ids = o + arange(T) give the logits of the same
 *   tokens placed at o behind o masked tokens (the engine's own positions),
 *   for an APE (its rows o..), RoPE (plain and dynamic), ALiBi, T5, Shaw's
 *   RPE, in BERT, RoBERTa, GPT-2 and Llama;
 * - restarting positions reach the PE: an APE's embedding rows are those of
 *   each document alone, ALiBi's layer-0 logits move by exactly
 *   -m_h (|P_i - P_j| - |i - j|);
 * - a PE without a table runs past max_position_embeddings and equals the
 *   same weights in a model built for the longer length (dynamic RoPE with
 *   its original length kept); an APE past its table is refused with one
 *   line naming the table, unless the positions given fit in it (packed
 *   documents longer than the table run, as HF's lookup runs them);
 * - training on packed documents: the gradient reaches the APE rows the
 *   positions name, and equals central differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/model.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "model/model_internal.h"
#include "pe/pe_internal.h"
#include "core/rng_internal.h"

enum { V = 40, D = 16 };

static int tiny_pre_ln; /* BERT, RoBERTa: pre-LN layers */

static posemb_model *tiny(posemb_arch arch, const char *spec, int max_position)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.pre_ln = tiny_pre_ln && (arch == POSEMB_BERT || arch == POSEMB_ROBERTA);
    c.vocab_size = V;
    c.hidden = D;
    c.layers = 2;
    c.heads = 2;
    c.intermediate = 24;
    c.max_position = max_position;
    c.ln_eps = 1e-5f;
    if (arch == POSEMB_BERT || arch == POSEMB_ROBERTA) c.type_vocab = 1;
    if (arch == POSEMB_LLAMA) c.kv_heads = 1;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_head head = arch == POSEMB_GPT2 || arch == POSEMB_LLAMA ? POSEMB_HEAD_CLM : POSEMB_HEAD_MLM;
    if (posemb_config_set_head(&c, head, 0, &err)) fail_msg("%s", err.msg);
    posemb_model *m;
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s: %s", spec, err.msg);
    posemb_model_init(m, 42);
    /* weights of O(0.3) (not HF's 0.02) so that positions move the outputs visibly */
    posemb_rng rng;
    posemb_rng_seed(&rng, 3, 3);
    float *w = posemb_model_weights(m);
    for (int i = 0; i < posemb_model_n_params(m); i++) {
        const posemb_param *p = posemb_model_param(m, i);
        if (p->ndim == 2 && !strstr(p->name, "frequencies") && !strstr(p->name, "kerple"))
            posemb_rng_fill_normal(&rng, w + p->offset, (long)p->numel, 0.3f);
    }
    posemb_pe_prepare(posemb_model_pe(m));
    return m;
}

/* The LM logits of a batch of one sequence, malloc'ed [T, V]. */
static float *logits(posemb_model *m, int T, const int32_t *ids, const float *mask, const int32_t *pos)
{
    posemb_batch b = {.B = 1, .T = T, .ids = ids, .mask = mask, .positions = pos};
    posemb_error err;
    if (posemb_model_forward(m, &b, &err)) fail_msg("forward: %s", err.msg);
    float *out = malloc((size_t)T * V * sizeof *out);
    assert_non_null(out);
    if (posemb_model_lm_logits(m, out, &err)) fail_msg("logits: %s", err.msg);
    return out;
}

/* max |a - b| over n, relative to max |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return worst / scale;
}

/* Tokens x at positions o.. through position_ids, against the same tokens
 * behind o masked ones: equal rows; against position_ids 0.. (no offset):
 * equal for a relative PE, different for an APE or a length-dependent RoPE. */
static void check_offset(posemb_arch arch, const char *spec, int max_position, int o, int relative)
{
    enum { T = 7 };
    posemb_model *m = tiny(arch, spec, max_position);
    int pad = posemb_model_config(m)->pad_token_id, first = arch == POSEMB_ROBERTA ? pad + 1 : 0;
    int32_t full[64], x[T], pos[T], zero[T];
    float mask[64];
    for (int t = 0; t < o + T; t++) {
        full[t] = t < o ? 3 + t % 5 : 2 + (7 * t) % (V - 2); /* no padding id among them */
        mask[t] = t >= o;
    }
    for (int t = 0; t < T; t++) {
        x[t] = full[o + t];
        pos[t] = first + o + t;
        zero[t] = first + t;
    }
    float *placed = logits(m, o + T, full, mask, NULL), *given = logits(m, T, x, NULL, pos);
    float *from0 = logits(m, T, x, NULL, zero);
    double same = rel_diff(given, placed + (size_t)o * V, (size_t)T * V), moved = rel_diff(from0, given, (size_t)T * V);
    printf("%-40s offset %2d: given vs placed %.2e, vs positions from 0 %.2e\n", spec, o, same, moved);
    if (same > 2e-6) fail_msg("%s: position_ids %d.. differ from placing the tokens there: %g", spec, o, same);
    if (relative ? moved > 2e-6 : moved < 1e-3)
        fail_msg("%s: the offset %s the logits (%g)", spec, relative ? "moves" : "does not move", moved);
    free(placed);
    free(given);
    free(from0);
    posemb_model_free(m);
}

static void test_offset_positions(void **state)
{
    (void)state;
    check_offset(POSEMB_BERT, "ape", 32, 9, 0);
    check_offset(POSEMB_ROBERTA, "ape", 34, 9, 0);
    check_offset(POSEMB_GPT2, "ape", 32, 9, 0);
    check_offset(POSEMB_BERT, "rpe:k=4", 32, 9, 1);
    check_offset(POSEMB_BERT, "alibi", 32, 9, 1);
    check_offset(POSEMB_GPT2, "t5", 32, 9, 1);
    check_offset(POSEMB_LLAMA, "rope", 32, 9, 1);
    /* dynamic NTK: HF's length is max(position_ids) + 1 = 16 > 8, so the base grows with the offset */
    check_offset(POSEMB_LLAMA, "rope:scaling=dynamic,factor=2", 8, 9, 0);
}

/* hidden_states.0 of one sequence, malloc'ed [T, D]. */
static float *embedded(posemb_model *m, int T, const int32_t *ids, const int32_t *pos)
{
    posemb_batch b = {.B = 1, .T = T, .ids = ids, .positions = pos};
    posemb_error err;
    if (posemb_model_forward(m, &b, &err)) fail_msg("forward: %s", err.msg);
    float *out = malloc((size_t)T * D * sizeof *out);
    assert_non_null(out);
    memcpy(out, posemb_model_hidden(m, 0), (size_t)T * D * sizeof *out);
    return out;
}

/* Two packed documents whose positions restart: each document's embedding
 * rows (APE: word + position rows, LayerNorm in BERT) are those of the
 * document alone, bit for bit. */
static void check_packed_ape(posemb_arch arch)
{
    enum { N1 = 5, N2 = 6 };
    posemb_model *m = tiny(arch, "ape", 16);
    int32_t ids[N1 + N2], pos[N1 + N2];
    for (int t = 0; t < N1 + N2; t++) {
        ids[t] = 2 + (5 * t) % (V - 2);
        pos[t] = t < N1 ? t : t - N1;
    }
    float *packed = embedded(m, N1 + N2, ids, pos), *doc1 = embedded(m, N1, ids, NULL),
          *doc2 = embedded(m, N2, ids + N1, NULL);
    assert_memory_equal(packed, doc1, sizeof(float) * N1 * D);
    assert_memory_equal(packed + N1 * D, doc2, sizeof(float) * N2 * D);
    float *arange = embedded(m, N1 + N2, ids, NULL);
    assert_true(rel_diff(arange + N1 * D, doc2, (size_t)N2 * D) > 1e-2); /* without position_ids: rows N1.. */
    free(packed);
    free(doc1);
    free(doc2);
    free(arange);
    posemb_model_free(m);
}

/* ALiBi reads the given positions: layer 0's logits with positions P minus
 * those with 0..T-1 are -m_h (|P_i - P_j| - |i - j|) (the q.k part cancels). */
static void check_packed_alibi(void)
{
    enum { T = 9, H = 2 };
    posemb_model *m = tiny(POSEMB_BERT, "alibi", 16);
    int32_t ids[T], pos[T] = {0, 1, 2, 3, 0, 1, 2, 0, 1};
    for (int t = 0; t < T; t++) ids[t] = 2 + (3 * t) % (V - 2);
    float with[H * T * T], without[H * T * T], slopes[H];
    posemb_error err;
    posemb_batch b = {.B = 1, .T = T, .ids = ids, .positions = pos};
    if (posemb_model_layer0_logits(m, &b, with, &err)) fail_msg("%s", err.msg);
    b.positions = NULL;
    if (posemb_model_layer0_logits(m, &b, without, &err)) fail_msg("%s", err.msg);
    posemb_pe_alibi_slopes(H, slopes);
    double worst = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                size_t k = ((size_t)h * T + i) * T + j;
                double want = -slopes[h] * (abs(pos[i] - pos[j]) - abs(i - j));
                worst = fmax(worst, fabs((with[k] - without[k]) - want));
            }
    printf("alibi, restarting positions: |change - closed form| <= %.2e\n", worst);
    assert_true(worst < 1e-5);
    posemb_model_free(m);
}

/* The softmax of posemb_model_layer0_logits (the analysis' path; causal for a decoder) is the
 * forward's attention map of layer 0 (logits [B, H, T, T] of batch b); returns the worst difference. */
static double layer0_against_forward(posemb_model *m, const posemb_batch *b, float *logits, int causal)
{
    enum { H = 2 };
    posemb_error err;
    if (posemb_model_layer0_logits(m, b, logits, &err) || posemb_model_forward(m, b, &err)) fail_msg("%s", err.msg);
    const float *att = posemb_model_attention(m, 0);
    double worst = 0;
    for (int r = 0; r < b->B * H * b->T; r++) {
        const float *z = logits + (size_t)r * b->T;
        int last = causal ? r % b->T : b->T - 1;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= last; j++) mx = fmax(mx, z[j]);
        for (int j = 0; j <= last; j++) sum += exp(z[j] - mx);
        for (int j = 0; j <= last; j++) worst = fmax(worst, fabs(exp(z[j] - mx) / sum - att[(size_t)r * b->T + j]));
    }
    return worst;
}

/* M-RoPE's 3D ids reach layer 0's logits as they reach the forward pass, and the ids move them; the
 * decoupled rotary sub-head's layer-input projections too, in each architecture. */
static void check_layer0_paths(void)
{
    enum { B = 2, T = 6, H = 2 };
    posemb_model *m = tiny(POSEMB_LLAMA, "rope:mrope=1|2|1", 16);
    int32_t ids[B * T], axes[3 * B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = 2 + (7 * i) % (V - 2);
        axes[i] = i / T, axes[B * T + i] = 3 + (i % T) / 3, axes[2 * B * T + i] = 5 + 2 * (i % 3);
    }
    float logits[B * H * T * T], plain[B * H * T * T];
    posemb_error err;
    posemb_batch b = {.B = B, .T = T, .ids = ids, .axes = axes};
    double worst = layer0_against_forward(m, &b, logits, 1);
    printf("mrope, layer 0: |softmax(layer0 logits) - forward's attention| <= %.2e\n", worst);
    assert_true(worst < 1e-5);
    b.axes = NULL;
    if (posemb_model_layer0_logits(m, &b, plain, &err)) fail_msg("%s", err.msg);
    assert_true(rel_diff(logits, plain, (size_t)B * H * T * T) > 1e-2);
    posemb_model_free(m);
    const posemb_arch archs[] = {POSEMB_LLAMA, POSEMB_GPT2, POSEMB_BERT};
    for (int a = 0; a < 3; a++) {
        m = tiny(archs[a], "decoupled", 16);
        worst = layer0_against_forward(m, &b, logits, archs[a] != POSEMB_BERT);
        printf("decoupled, arch %d, layer 0: |softmax(layer0 logits) - forward's attention| <= %.2e\n", a, worst);
        assert_true(worst < 1e-5);
        posemb_model_free(m);
    }
    /* a pre-LN encoder's layer 0 reads LN1 of the embeddings' LayerNorm */
    tiny_pre_ln = 1;
    const char *specs[] = {"ape", "decoupled", "rope"};
    for (int i = 0; i < 3; i++) {
        m = tiny(POSEMB_BERT, specs[i], 16);
        worst = layer0_against_forward(m, &b, logits, 0);
        printf("pre-LN BERT %s, layer 0: |softmax(layer0 logits) - forward's attention| <= %.2e\n", specs[i], worst);
        assert_true(worst < 1e-5);
        posemb_model_free(m);
    }
    tiny_pre_ln = 0;
}

static void test_packed_positions(void **state)
{
    (void)state;
    check_packed_ape(POSEMB_BERT);
    check_packed_ape(POSEMB_GPT2);
    check_packed_alibi();
    check_layer0_paths();
}

/* T tokens past max_position_embeddings (8): the model runs them, as a
 * model of the same weights built for 64 positions does. */
static void check_past(posemb_arch arch, const char *spec, const char *spec_at_64)
{
    enum { T = 21 };
    posemb_model *small = tiny(arch, spec, 8), *big = tiny(arch, spec_at_64, 64);
    assert_int_equal(posemb_model_n_floats(small), posemb_model_n_floats(big));
    memcpy(posemb_model_weights(big), posemb_model_weights(small), posemb_model_n_floats(small) * sizeof(float));
    posemb_pe_prepare(posemb_model_pe(big));
    int32_t ids[T];
    for (int t = 0; t < T; t++) ids[t] = 2 + (11 * t) % (V - 2);
    char before[512];
    snprintf(before, sizeof before, "%s", posemb_pe_spec(posemb_model_pe(small)));
    float *a = logits(small, T, ids, NULL, NULL), *b = logits(big, T, ids, NULL, NULL);
    double diff = rel_diff(a, b, (size_t)T * V);
    printf("%-40s %d tokens at max_position_embeddings 8 vs 64: %.2e\n", spec, T, diff);
    if (diff > 1e-6) fail_msg("%s: %g", spec, diff);
    assert_string_equal(posemb_pe_spec(posemb_model_pe(small)), before); /* rebuilt for 21 tokens, the same PE */
    assert_int_equal(posemb_pe_get_dims(posemb_model_pe(small))->max_len, T);
    free(a);
    free(b);
    posemb_model_free(small);
    posemb_model_free(big);
}

static void test_past_max_position(void **state)
{
    (void)state;
    const char *specs[] = {"rope", "alibi", "t5",  "kerple",  "fire", "sandwich",
                           "xpos", "cope",  "fox", "rpe:k=4", "sin"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) check_past(POSEMB_GPT2, specs[i], specs[i]);
    check_past(POSEMB_LLAMA, "rope", "rope");
    /* dynamic and yarn keep the original length they were built with (8), not the longer one */
    check_past(POSEMB_LLAMA, "rope:scaling=dynamic,factor=2", "rope:scaling=dynamic,factor=2,original=8");
    check_past(POSEMB_LLAMA, "rope:scaling=yarn,factor=4", "rope:scaling=yarn,factor=4,original=8");
    check_past(POSEMB_BERT, "alibi", "alibi");
}

/* Copies every parameter of from into the same-named one of to; a table
 * with more rows in to (an APE built for more positions) gets from's rows
 * first and keeps the rest. */
static void copy_weights(posemb_model *to, posemb_model *from)
{
    assert_int_equal(posemb_model_n_params(to), posemb_model_n_params(from));
    for (int i = 0; i < posemb_model_n_params(from); i++) {
        const posemb_param *a = posemb_model_param(from, i), *b = posemb_model_param(to, i);
        assert_string_equal(a->name, b->name);
        assert_true(a->numel <= b->numel);
        memcpy(posemb_model_weights(to) + b->offset, posemb_model_weights(from) + a->offset, a->numel * sizeof(float));
    }
    posemb_pe_prepare(posemb_model_pe(to));
}

/* An APE table of 16 rows, 20 packed tokens whose positions restart at 10
 * (two documents of 10): they run, as HF's lookup runs them, and give the
 * logits of the same weights in a model whose table has 32 rows. */
static void check_packed_past_table(posemb_arch arch, const char *spec)
{
    enum { T = 20 };
    posemb_model *small = tiny(arch, spec, 16), *big = tiny(arch, spec, 32);
    copy_weights(big, small);
    size_t n_small = posemb_model_n_floats(small);
    int first = arch == POSEMB_ROBERTA ? posemb_model_config(small)->pad_token_id + 1 : 0;
    int32_t ids[T], pos[T];
    for (int t = 0; t < T; t++) {
        ids[t] = 2 + (11 * t) % (V - 2);
        pos[t] = first + t % 10;
    }
    float *a = logits(small, T, ids, NULL, pos), *b = logits(big, T, ids, NULL, pos);
    float *c = logits(big, T, ids, NULL, NULL); /* the engine's own positions, 0..19 */
    double diff = rel_diff(a, b, (size_t)T * V), moved = rel_diff(c, b, (size_t)T * V);
    printf("%-40s %d packed tokens, table of 16 rows vs 32: %.2e (positions 0..19: %.2e)\n", spec, T, diff, moved);
    if (diff > 1e-6) fail_msg("%s: %g", spec, diff);
    if (moved < 1e-3) fail_msg("%s: the restarting positions do not move the logits (%g)", spec, moved);
    free(c);
    assert_int_equal(posemb_model_n_floats(small), n_small); /* the table kept its 16 rows */
    assert_int_equal(posemb_pe_position_limit(posemb_model_pe(small)), 16);
    free(a);
    free(b);
    posemb_model_free(small);
    posemb_model_free(big);
}

static void test_packed_past_table(void **state)
{
    (void)state;
    for (int arch = 0; arch < 3; arch++) check_packed_past_table((posemb_arch)arch, "ape");
    check_packed_past_table(POSEMB_BERT, "ape+rpe:k=4");
    check_packed_past_table(POSEMB_GPT2, "ape+alibi");
}

/* An APE past its table: refused with one line naming the table. */
static void test_table_refused(void **state)
{
    (void)state;
    int32_t ids[20], pos[4] = {2, 3, 4, 16}; /* RoBERTa's too: its rows are the positions, from pad + 1 = 2 */
    posemb_error err;
    for (int arch = 0; arch < 3; arch++) {
        posemb_model *m = tiny((posemb_arch)arch, "ape", 16);
        posemb_batch b = {.B = 1, .T = 20, .ids = ids};
        for (int t = 0; t < 20; t++) ids[t] = 2 + t;
        assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_ERANGE);
        printf("%s\n", err.msg);
        assert_non_null(strstr(err.msg, "20 tokens are too many"));
        assert_non_null(strstr(err.msg, "past ape's table of 16 positions (max_position_embeddings 16)"));
        assert_null(strchr(err.msg, '\n'));
        b = (posemb_batch){.B = 1, .T = 4, .ids = ids, .positions = pos};
        assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_ERANGE);
        printf("%s\n", err.msg);
        assert_non_null(strstr(err.msg, "past ape's table of 16 positions (max_position_embeddings 16)"));
        posemb_model_free(m);
    }
    /* negative positions and position_ids with randomized positions */
    posemb_model *m = tiny(POSEMB_GPT2, "rope+random:max=64", 16);
    posemb_batch b = {.B = 1, .T = 4, .ids = ids, .positions = pos};
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "draws its own positions"));
    posemb_model_free(m);
    m = tiny(POSEMB_GPT2, "rope", 16);
    pos[2] = -1;
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "position_ids[0][2] = -1"));
    posemb_model_free(m);
}

/* CLM loss of a batch of one sequence (its gradient accumulated when grad). */
static double clm_loss(posemb_model *m, int T, const int32_t *ids, const int32_t *pos, int grad)
{
    posemb_batch b = {.B = 1, .T = T, .ids = ids, .positions = pos};
    posemb_targets t = {.tokens = ids};
    posemb_loss l;
    posemb_error err;
    if (posemb_model_forward(m, &b, &err) || posemb_model_loss(m, &t, grad ? 1.0f : 0.0f, &l, &err))
        fail_msg("%s", err.msg);
    return l.loss;
}

/* Training on packed documents (a micro-batch with positions, as a loop
 * over posemb_train_run gives them): the gradient reaches the APE rows the
 * positions name, and only those, and equals central differences. */
static void test_packed_training(void **state)
{
    (void)state;
    enum { T = 8 };
    posemb_model *m = tiny(POSEMB_GPT2, "ape", 16);
    int32_t ids[T] = {5, 9, 14, 3, 22, 7, 30, 11}, pos[T] = {0, 1, 2, 3, 0, 1, 2, 3};
    posemb_model_zero_grad(m);
    clm_loss(m, T, ids, pos, 1);
    const posemb_param *wpe = posemb_model_find(m, "wpe.weight");
    assert_non_null(wpe);
    float *w = posemb_model_weights(m) + wpe->offset, *g = posemb_model_grads(m) + wpe->offset;
    for (int r = 0; r < 16; r++) {
        double norm = 0;
        for (int k = 0; k < D; k++) norm += fabs(g[r * D + k]);
        if (r < 4 ? norm == 0 : norm != 0) fail_msg("wpe row %d: gradient norm %g", r, norm);
    }
    double worst = 0;
    for (int r = 0; r < 4; r++) {
        const float h = 1e-2f;
        float keep = w[r * D + r];
        w[r * D + r] = keep + h;
        double up = clm_loss(m, T, ids, pos, 0);
        w[r * D + r] = keep - h;
        double down = clm_loss(m, T, ids, pos, 0);
        w[r * D + r] = keep;
        double fd = (up - down) / (2 * h), an = g[r * D + r];
        worst = fmax(worst, fabs(fd - an) / (1e-3 + fabs(an)));
        TU_CLOSE(an, fd, 1e-3, 2e-2, "wpe gradient", r);
    }
    printf("packed training: wpe rows 0-3 get gradient, rows 4-15 none; worst |fd - grad| / (1e-3 + |grad|) %.2e\n",
           worst);
    posemb_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_positions),  cmocka_unit_test(test_packed_positions),
        cmocka_unit_test(test_past_max_position), cmocka_unit_test(test_table_refused),
        cmocka_unit_test(test_packed_training),   cmocka_unit_test(test_packed_past_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
