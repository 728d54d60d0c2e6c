/* The word-order cost (posemb_order_cost, posemb probe order) on tiny
 * models made here:
 *   - no PE: attention is permutation equivariant, so the shuffled and the
 *     reversed windows give the loss of the intact ones, to float rounding;
 *   - ALiBi in an encoder, -m |i - j|, is symmetric: reversing costs nothing,
 *     shuffling does;
 *   - the losses equal the cross-entropy computed here from the model's
 *     logits (a second method: the logits row of each token's new place, as
 *     order_ablation.py read them), on the windows the library draws;
 *   - a learned scale set to 0 gives the loss of the same model with no PE;
 *   - the command: its JSON, where the special ids come from, and one line
 *     and exit 1 for a cache without tokens, one shorter than a window, and a
 *     model that is no masked-LM model. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/order_impl.h"
#include "posemb/model.h"
#include "posemb/probes.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "core/rng_internal.h"

enum { V = 200, N_TOKENS = 3000, LEN = 32, WINDOWS = 6 };
/* A reading that costs less than this costs nothing: float rounding moves
 * the no-PE model's loss by about 1e-7, and at these random weights ALiBi's
 * shuffle costs 1.5e-3, the learned table's reversal 2.8e-3. */
#define SEEN 2e-4

static char *dir;
static char out[1 << 15];
static int32_t tokens[N_TOKENS];

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir();
    posemb_rng r;
    posemb_rng_seed(&r, 7, 1);
    for (int i = 0; i < N_TOKENS; i++) tokens[i] = 110 + (int32_t)posemb_rng_below(&r, V - 110); /* no specials */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static posemb_model *tiny(posemb_arch arch, const char *spec, posemb_head head)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = V;
    c.hidden = 32;
    c.layers = 2;
    c.heads = 2;
    c.intermediate = 64;
    c.max_position = 64;
    c.initializer_range = 0.2f; /* weights large enough that a token's prediction hangs on its context */
    if (arch == POSEMB_ROBERTA) c.type_vocab = 1;
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, head, 0, &err) || posemb_model_create(&m, &c, &err))
        fail_msg("%s: %s", spec, err.msg);
    posemb_model_init(m, 17);
    return m;
}

static posemb_order_opts opts(int windows)
{
    posemb_order_opts o = posemb_order_defaults();
    o.windows = windows;
    o.len = LEN;
    return o;
}

static posemb_order_result cost(posemb_model *m, int windows)
{
    posemb_order_opts o = opts(windows);
    posemb_order_result r;
    posemb_error err;
    if (posemb_order_cost(m, tokens, N_TOKENS, &o, &r, &err)) fail_msg("%s", err.msg);
    assert_true(r.masked > 0);
    printf("  %-28s as is %.6f  shuffled %.6f  reversed %.6f  scale 0 %.6f  (%ld masked)\n", r.spec, r.as_is,
           r.shuffled, r.reversed, r.scale0, r.masked);
    return r;
}

/* (1) No PE: every reading gives the intact loss. */
static void test_none_is_blind(void **state)
{
    (void)state;
    posemb_model *m = tiny(POSEMB_BERT, "none", POSEMB_HEAD_MLM);
    posemb_order_result r = cost(m, WINDOWS);
    TU_CLOSE(r.shuffled, r.as_is, 0, 1e-6, "none: shuffled = as is", 0);
    TU_CLOSE(r.reversed, r.as_is, 0, 1e-6, "none: reversed = as is", 0);
    assert_false(r.has_scale);
    assert_true(isnan(r.scale0));
    assert_int_equal(r.cls, 101);
    assert_int_equal(r.mask, 103);
    assert_string_equal(r.specials, "BERT's defaults");
    posemb_model_free(m);
}

/* (2) ALiBi's symmetric bias: reversing is free, shuffling is not. */
static void test_alibi_reads_order_not_direction(void **state)
{
    (void)state;
    posemb_model *m = tiny(POSEMB_BERT, "alibi", POSEMB_HEAD_MLM);
    posemb_order_result r = cost(m, WINDOWS);
    TU_CLOSE(r.reversed, r.as_is, 0, 1e-6, "alibi: reversed = as is", 0);
    if (fabs(r.shuffled - r.as_is) < SEEN) fail_msg("alibi: shuffling costs %g, nothing", r.shuffled - r.as_is);
    posemb_model_free(m);
    /* a learned table reads direction: both readings cost it */
    m = tiny(POSEMB_BERT, "ape", POSEMB_HEAD_MLM);
    r = cost(m, WINDOWS);
    assert_true(fabs(r.reversed - r.as_is) > SEEN && fabs(r.shuffled - r.as_is) > SEEN);
    posemb_model_free(m);
}

/* The cross-entropy at the masked places of window 0, read at logits row
 * order[t] for drawn place t: m's logits of input x [1, T]. */
static double direct_ce(posemb_model *m, const int32_t *x, const order_windows *w, const int *order, float *logits)
{
    posemb_batch b = {.B = 1, .T = LEN, .ids = x};
    posemb_error err;
    if (posemb_model_forward(m, &b, &err) || posemb_model_lm_logits(m, logits, &err)) fail_msg("%s", err.msg);
    double sum = 0;
    for (int t = 0; t < LEN; t++) {
        if (w->target[t] < 0) continue;
        const float *row = logits + (size_t)order[t] * V;
        double mx = row[0], z = 0;
        for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        for (int v = 0; v < V; v++) z += exp((double)row[v] - mx);
        sum += mx + log(z) - row[w->target[t]];
    }
    return sum / (double)w->masked;
}

/* (3) The three losses of one window against the logits themselves. */
static void test_against_logits(void **state)
{
    (void)state;
    posemb_model *m = tiny(POSEMB_BERT, "ape", POSEMB_HEAD_MLM);
    posemb_order_opts o = opts(1);
    o.cls = 101;
    o.sep = 102;
    o.mask = 103;
    order_windows w, w6;
    posemb_error err;
    assert_int_equal(order_draw(tokens, N_TOKENS, &o, &w, &err), POSEMB_OK);
    assert_true(w.masked > 0);
    o.windows = 6; /* a window does not depend on how many are drawn */
    assert_int_equal(order_draw(tokens, N_TOKENS, &o, &w6, &err), POSEMB_OK);
    assert_memory_equal(w.input, w6.input, LEN * sizeof(int32_t));
    assert_memory_equal(w.perm, w6.perm, LEN * sizeof(int32_t));
    int32_t x[LEN];
    int ident[LEN], inv[LEN], rev[LEN];
    for (int t = 0; t < LEN; t++) {
        ident[t] = t;
        inv[w.perm[t]] = t; /* drawn place perm[j] sits at j */
        rev[t] = LEN - 1 - t;
    }
    float *logits = malloc((size_t)LEN * V * sizeof *logits);
    double as_is = direct_ce(m, w.input, &w, ident, logits);
    for (int j = 0; j < LEN; j++) x[j] = w.input[w.perm[j]];
    double shuffled = direct_ce(m, x, &w, inv, logits);
    for (int j = 0; j < LEN; j++) x[j] = w.input[LEN - 1 - j];
    double reversed = direct_ce(m, x, &w, rev, logits);
    posemb_order_result r = cost(m, 1);
    printf("  direct: as is %.6f  shuffled %.6f  reversed %.6f  (%ld masked)\n", as_is, shuffled, reversed, w.masked);
    assert_int_equal(r.masked, w.masked);
    TU_CLOSE(r.as_is, as_is, 0, 1e-5, "as is", 0);
    TU_CLOSE(r.shuffled, shuffled, 0, 1e-5, "shuffled", 0);
    TU_CLOSE(r.reversed, reversed, 0, 1e-5, "reversed", 0);
    free(logits);
    order_windows_free(&w);
    order_windows_free(&w6);
    posemb_model_free(m);
}

/* (4) A learned scale at 0 is the model without its PE; the scale goes back. */
static void test_scale0_is_none(void **state)
{
    (void)state;
    posemb_model *m = tiny(POSEMB_BERT, "ape:learned_scale=on", POSEMB_HEAD_MLM),
                 *bare = tiny(POSEMB_BERT, "none", POSEMB_HEAD_MLM);
    for (int i = 0; i < posemb_model_n_params(bare); i++) { /* every tensor but the PE's */
        const posemb_param *p = posemb_model_param(bare, i), *q = posemb_model_find(m, p->name);
        if (!q || q->numel != p->numel) fail_msg("no %s in the ape model", p->name);
        memcpy(posemb_model_weights(bare) + p->offset, posemb_model_weights(m) + q->offset, p->numel * sizeof(float));
    }
    posemb_order_result r = cost(m, WINDOWS), b = cost(bare, WINDOWS);
    assert_true(r.has_scale);
    TU_CLOSE(r.scale0, b.as_is, 0, 1e-6, "scale 0 = no PE", 0);
    assert_true(fabs(r.scale0 - r.as_is) > SEEN); /* the scale is 1: the PE mattered */
    const posemb_pe_param *s = posemb_pe_find_param(posemb_model_pe(m), "position_scale", 0);
    assert_non_null(s);
    assert_true(s->data[0] == 1.0f);
    TU_CLOSE(cost(m, WINDOWS).as_is, r.as_is, 0, 1e-12, "the same read again", 0);
    posemb_model_free(m);
    posemb_model_free(bare);
}

/* Library errors: options, ids, heads. */
static void test_library_errors(void **state)
{
    (void)state;
    posemb_model *m = tiny(POSEMB_BERT, "none", POSEMB_HEAD_MLM), *base = tiny(POSEMB_BERT, "none", POSEMB_HEAD_NONE);
    posemb_order_opts o = opts(2);
    posemb_order_result r;
    posemb_error err;
    assert_int_equal(posemb_order_cost(base, tokens, N_TOKENS, &o, &r, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_order_cost(m, tokens, LEN - 3, &o, &r, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "fewer than one window"));
    o.mask = V;
    assert_int_equal(posemb_order_cost(m, tokens, N_TOKENS, &o, &r, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "[MASK]"));
    o = opts(2);
    o.mask_rate = 0;
    assert_int_equal(posemb_order_cost(m, tokens, N_TOKENS, &o, &r, &err), POSEMB_EINVAL);
    int32_t bad[LEN];
    memcpy(bad, tokens, sizeof bad);
    bad[5] = V;
    o = opts(2);
    assert_int_equal(posemb_order_cost(m, bad, LEN, &o, &r, &err), POSEMB_ERANGE);
    posemb_model_free(m);
    posemb_model_free(base);
}

/* ---- the command ---- */

static void save_model(posemb_arch arch, const char *spec, posemb_head head, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    posemb_model *m = tiny(arch, spec, head);
    posemb_error err;
    if (posemb_model_save(m, path, &err)) fail_msg("%s", err.msg);
    posemb_model_free(m);
}

static void save_tokens(const char *name, const char *tensor, posemb_dtype dt, long n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    int64_t shape[1] = {n};
    posemb_error err;
    float f[LEN];
    for (int i = 0; i < LEN; i++) f[i] = (float)tokens[i];
    if (posemb_st_writer_add(&w, tensor, dt, 1, shape, dt == POSEMB_F32 ? (const void *)f : tokens, &err) ||
        posemb_st_write(&w, path, &err))
        fail_msg("%s", err.msg);
    posemb_st_writer_free(&w);
}

static int posemb(const char *args)
{
    char cmd[4096];
    /* --threads: no line on the CPUs other processes take, which would make an error two lines */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' probe order %s --threads 1 2>&1", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static double num(const cJSON *j, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(x)) fail_msg("no number '%s' in %s", key, out);
    return x->valuedouble;
}

/* The JSON of two models, their numbers those of the library. */
static void test_cli_json(void **state)
{
    (void)state;
    save_model(POSEMB_BERT, "ape:learned_scale=on", POSEMB_HEAD_MLM, "mlm");
    save_model(POSEMB_BERT, "none", POSEMB_HEAD_MLM, "bare");
    save_tokens("cache.safetensors", "tokens", POSEMB_I32, N_TOKENS);
    assert_int_equal(posemb("mlm bare --cache cache.safetensors --len 32 --windows 6 --json"), 0);
    assert_int_equal(lines(out), 2);
    cJSON *j = cJSON_Parse(out); /* the first line */
    assert_non_null(j);
    char path[1200];
    snprintf(path, sizeof path, "%s/mlm", dir);
    posemb_model *m;
    posemb_error err;
    if (posemb_model_load(&m, path, &err)) fail_msg("%s", err.msg);
    posemb_order_result r = cost(m, WINDOWS);
    /* the command runs on 1 thread, this test on OMP_NUM_THREADS: sums in another order */
    TU_CLOSE(num(j, "as_is"), r.as_is, 0, 1e-6, "json as_is", 0);
    TU_CLOSE(num(j, "shuffled"), r.shuffled, 0, 1e-6, "json shuffled", 0);
    TU_CLOSE(num(j, "reversed"), r.reversed, 0, 1e-6, "json reversed", 0);
    TU_CLOSE(num(j, "scale0"), r.scale0, 0, 1e-6, "json scale0", 0);
    TU_CLOSE(num(j, "order_cost"), num(j, "shuffled") - num(j, "as_is"), 1e-12, 0, "json order_cost", 0);
    assert_int_equal((long)num(j, "masked"), r.masked);
    assert_int_equal((int)num(j, "cls"), 101);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "mlm");
    assert_string_equal(cJSON_GetObjectItem(j, "pe")->valuestring, r.spec);
    assert_string_equal(cJSON_GetObjectItem(j, "specials")->valuestring, "BERT's defaults");
    cJSON_Delete(j);
    j = cJSON_Parse(strchr(out, '\n') + 1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "scale0")));
    cJSON_Delete(j);
    posemb_model_free(m);
}

/* A model folder with trainer_state.json, as a training checkpoint has. */
static void save_checkpoint(const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *strrchr(path, '/') = '\0';
    mkdir(path, 0755); /* its training folder (there already or not) */
    save_model(POSEMB_BERT, "none", POSEMB_HEAD_MLM, name);
    snprintf(path, sizeof path, "%s/%s/trainer_state.json", dir, name);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"global_step\": 5}\n");
    fclose(f);
}

/* Special ids from the folder's vocab.txt, said in the line. */
static void test_cli_vocab(void **state)
{
    (void)state;
    save_model(POSEMB_BERT, "none", POSEMB_HEAD_MLM, "withvocab");
    save_tokens("cache.safetensors", "tokens", POSEMB_I32, N_TOKENS);
    char path[1200];
    snprintf(path, sizeof path, "%s/withvocab/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
    for (int i = 5; i < V; i++) fprintf(f, "w%d\n", i);
    fclose(f);
    assert_int_equal(posemb("withvocab --cache cache.safetensors --len 32 --windows 6"), 0);
    assert_int_equal(lines(out), 1);
    assert_non_null(strstr(out, "[CLS] [SEP] [MASK] = 2 3 4, from "));
    assert_non_null(strstr(out, "withvocab/vocab.txt"));
    assert_int_equal(posemb("withvocab --cache cache.safetensors --len 32 --windows 6 --json"), 0);
    cJSON *j = cJSON_Parse(out);
    assert_int_equal((int)num(j, "mask"), 4);
    cJSON_Delete(j);
    /* a training checkpoint (checkpoint-N with trainer_state.json) without a vocabulary reads its
     * training folder's; a folder of another name does not, trainer_state.json or not */
    const char *const sub[] = {"withvocab/checkpoint-5", "withvocab/other"};
    for (int i = 0; i < 2; i++) save_checkpoint(sub[i]);
    assert_int_equal(posemb("withvocab/checkpoint-5/ withvocab/other --cache cache.safetensors --len 32 --windows 6"),
                     0);
    assert_int_equal(lines(out), 2);
    assert_non_null(strstr(out, "= 2 3 4, from "));
    assert_non_null(strstr(out, "checkpoint-5//../vocab.txt"));
    assert_non_null(strstr(strchr(out, '\n'), "= 101 102 103, BERT's defaults"));
}

static void expect_failure(const char *args, int status, const char *a, const char *b)
{
    assert_int_equal(posemb(args), status);
    if (lines(out) != 1) fail_msg("'%s': not one line: %s", args, out);
    if (!strstr(out, a) || !strstr(out, b)) fail_msg("'%s': no '%s' or '%s' in: %s", args, a, b, out);
}

/* (5) Bad inputs: one line naming the file, exit 1; usage errors exit 2. */
static void test_cli_errors(void **state)
{
    (void)state;
    save_model(POSEMB_BERT, "ape", POSEMB_HEAD_MLM, "mlm");
    save_model(POSEMB_BERT, "ape", POSEMB_HEAD_NONE, "base");
    save_model(POSEMB_ROBERTA, "ape", POSEMB_HEAD_MLM, "roberta");
    save_tokens("cache.safetensors", "tokens", POSEMB_I32, N_TOKENS);
    save_tokens("ids.safetensors", "ids", POSEMB_I32, N_TOKENS);
    save_tokens("float.safetensors", "tokens", POSEMB_F32, LEN);
    save_tokens("short.safetensors", "tokens", POSEMB_I32, LEN - 3);
    expect_failure("mlm --cache ids.safetensors --len 32", 1, "ids.safetensors", "'tokens'");
    expect_failure("mlm --cache float.safetensors --len 32", 1, "float.safetensors", "I32");
    expect_failure("mlm --cache short.safetensors --len 32", 1, "short.safetensors", "fewer than one window of 30");
    expect_failure("mlm --cache missing.safetensors", 1, "missing.safetensors", "probe order");
    expect_failure("base --cache cache.safetensors --len 32", 1, "base", "not a masked-LM model");
    expect_failure("roberta --cache cache.safetensors --len 32", 1, "roberta", "<mask>");
    expect_failure("nowhere --cache cache.safetensors", 1, "nowhere", "probe order");
    save_checkpoint("small/checkpoint-7"); /* its training folder's vocabulary is another model's */
    char path[1200];
    snprintf(path, sizeof path, "%s/small/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
    fclose(f);
    expect_failure("small/checkpoint-7 --cache cache.safetensors --len 32", 1, "small/checkpoint-7",
                   "has 5 tokens, the model");
    expect_failure("mlm", 2, "--cache", "probe order");
    expect_failure("--cache cache.safetensors", 2, "MODEL_DIR", "probe order");
    expect_failure("mlm --cache cache.safetensors --len 2", 2, "--len", "probe order");
    expect_failure("mlm --cache cache.safetensors --bogus", 2, "--bogus", "probe order");
    assert_int_equal(posemb("--help"), 0);
    assert_non_null(strstr(out, "shuffled - as is"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_is_blind),  cmocka_unit_test(test_alibi_reads_order_not_direction),
        cmocka_unit_test(test_against_logits), cmocka_unit_test(test_scale0_is_none),
        cmocka_unit_test(test_library_errors), cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_cli_vocab),      cmocka_unit_test(test_cli_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
