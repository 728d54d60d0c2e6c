/* The length study (posemb study --length) and its parts: the byte-level
 * tokenizer it writes, the passkey prompt, and a tiny study on
 * ../shared/data whose perplexities are recomputed here from the saved
 * models' logits (windows and log-softmax written out in the test), killed
 * and resumed to the same lines. */
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "posemb/corpus.h"
#include "core/fileio.h"
#include "posemb/model.h"
#include "posemb/rng.h"
#include "study/study.h"
#include "posemb/tokenizer.h"
#include "study/study_length_impl.h"
#include "testutil.h"
#include "text/tokenizer_internal.h"
#include "core/rng_internal.h"

static char *dir;
static char out[1 << 15];

static int setup(void **state)
{
    dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static posemb_tokenizer *bytes_tokenizer(void) { return tu_bytes_tokenizer(dir); }

/* Ids are the bytes of the (UTF-8) text, and decoding gives the text back. */
static void test_bytes_tokenizer(void **state)
{
    posemb_tokenizer *tok = bytes_tokenizer();
    posemb_error err;
    assert_int_equal(posemb_tokenizer_vocab_size(tok), 256);
    unsigned char text[160]; /* every ASCII byte, NUL included, then 2-, 3- and 4-byte characters */
    for (int i = 0; i < 128; i++) text[i] = (unsigned char)i;
    memcpy(text + 128, "H\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x99\x82\n", 16);
    int len = 144;
    posemb_encoding enc;
    posemb_encoding_init(&enc);
    assert_int_equal(posemb_tokenizer_encode(tok, (const char *)text, (size_t)len, 0, &enc, &err), 0);
    assert_int_equal(enc.n, len);
    for (int i = 0; i < len; i++) assert_int_equal(enc.ids[i], text[i]);
    char *back = NULL;
    size_t n = 0;
    assert_int_equal(posemb_tokenizer_decode(tok, enc.ids, enc.n, 0, &back, &n, &err), 0);
    assert_int_equal(n, len);
    assert_memory_equal(back, text, len);
    free(back);
    posemb_encoding_free(&enc);
    posemb_tokenizer_free(tok);
}

/* The prompt, byte for byte, with the needle first and last, its key
 * said twice (the passkey's) and once (passkey_needle "once"). */
static void test_passkey_prompt(void **state)
{
    static const char filler[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                                 "again. ",
                      twice[] = "The pass key is 48213. Remember it. 48213 is the pass key. ",
                      once[] = "The pass key is 48213. Remember it. ",
                      tail[] = "What is the pass key? The pass key is 48213";
    posemb_tokenizer *tok = bytes_tokenizer();
    posemb_error err;
    int L = 200, fits = 0;
    int32_t ids[200], targets[200];
    char expect[201];
    for (int depth = 0; depth <= 3; depth++) {
        const char *needle = depth < 2 ? twice : once;
        int n_fill = L - (int)strlen(needle) - (int)strlen(tail);
        assert_int_equal(study_passkey_prompt(tok, "48213", depth >= 2, L, depth % 2, ids, targets, &fits, &err), 0);
        assert_true(fits);
        int at = 0;
        for (int i = 0; i < n_fill * (depth % 2); i++) expect[at++] = filler[i % (sizeof filler - 1)];
        at += snprintf(expect + at, sizeof expect - at, "%s", needle);
        for (int i = n_fill * (depth % 2); i < n_fill; i++) expect[at++] = filler[i % (sizeof filler - 1)];
        at += snprintf(expect + at, sizeof expect - at, "%s", tail);
        assert_int_equal(at, L);
        for (int i = 0; i < L; i++) {
            assert_int_equal(ids[i], (unsigned char)expect[i]);
            assert_int_equal(targets[i], i >= L - 5 ? ids[i] : -100); /* "48213" */
        }
    }
    assert_int_equal(study_passkey_prompt(tok, "48213", 0, 100, 0.5, ids, targets, &fits, &err), 0);
    assert_false(fits); /* needle, question and answer take 102 bytes */
    assert_int_equal(study_passkey_prompt(tok, "48213", 1, 100, 0.5, ids, targets, &fits, &err), 0);
    assert_true(fits); /* said once: 79 */
    posemb_tokenizer_free(tok);
}

/* passkey_train's mix: about its share of the training sequences become
 * prompts of the training length (each a prompt of the form above, targets
 * = ids, its own key, depths over the whole range); the others and every
 * validation batch are the text's, and a batch drawn again is the same. */
static void test_passkey_mix(void **state)
{
    enum { T = 128, B = 8, K = 400 };
    static const char needle[] = "The pass key is ", tail[] = "What is the pass key? The pass key is ";
    posemb_tokenizer *tok = bytes_tokenizer();
    static int32_t text[1 << 16], ids[B * T], tg[B * T], plain[B * T], ptg[B * T];
    for (int i = 0; i < (1 << 16); i++) text[i] = 'a' + (i * 7 + i / 13) % 26;
    posemb_lm_data d, ref;
    posemb_error err;
    posemb_lm_data_opts clm = {.T = T, .vocab = 256, .valid_frac = 0.01, .seed = 5};
    assert_int_equal(posemb_lm_data_init(&d, text, 1 << 16, &clm, &err), 0);
    assert_int_equal(posemb_lm_data_init(&ref, text, 1 << 16, &clm, &err), 0);
    study_passkey_train mix = {.tok = tok, .seed = 3, .share = 0.25};
    d.mix = study_passkey_mix;
    d.mix_ctx = &mix;
    int prompts = 0, early = 0, late = 0;
    for (long k = 0; k < K; k++) {
        posemb_lm_train_batch(&d, k, B, ids, tg);
        posemb_lm_train_batch(&ref, k, B, plain, ptg);
        for (int b = 0; b < B; b++) {
            const int32_t *row = ids + b * T;
            char s[T + 1];
            for (int i = 0; i < T; i++) s[i] = (char)row[i];
            s[T] = '\0';
            assert_memory_equal(tg + b * T, row, T * sizeof *row); /* targets are the ids, prompt or text */
            if (!memcmp(row, plain + b * T, T * sizeof *row)) continue;
            prompts++;
            const char *at = strstr(s, needle), *q = strstr(s, tail);
            assert_non_null(at);
            assert_non_null(q);
            assert_int_equal(q + strlen(tail) + 5 - s, T); /* the prompt ends with its five-digit key */
            assert_memory_equal(at + strlen(needle), q + strlen(tail), 5);
            for (int i = 0; i < 5; i++) assert_true(q[strlen(tail) + i] >= '0' && q[strlen(tail) + i] <= '9');
            int n_fill = T - 59 - (int)strlen(tail) - 5; /* the needle with its key is 59 bytes */
            early += at - s <= n_fill / 10;
            late += at - s >= n_fill * 9 / 10;
        }
    }
    printf("%d of %d sequences are prompts (share 0.25); needle in the first tenth %d, last tenth %d\n", prompts, K * B,
           early, late);
    assert_true(fabs(prompts / (double)(K * B) - 0.25) < 0.03); /* 4 standard deviations of 3200 draws */
    assert_true(early > prompts / 20 && late > prompts / 20);
    posemb_lm_train_batch(&d, 17, B, ids, tg); /* the same batch again */
    posemb_lm_train_batch(&d, 17, B, plain, ptg);
    assert_memory_equal(ids, plain, sizeof ids);
    posemb_lm_data half; /* batch k of B is micro-batches 2k and 2k + 1 of B / 2: ranks_per_run and resumes */
    assert_int_equal(posemb_lm_data_init(&half, text, 1 << 16, &clm, &err), 0);
    half.mix = study_passkey_mix;
    half.mix_ctx = &mix;
    for (long k = 0; k < 40; k++) {
        posemb_lm_train_batch(&d, k, B, ids, tg);
        posemb_lm_train_batch(&half, 2 * k, B / 2, plain, ptg);
        posemb_lm_train_batch(&half, 2 * k + 1, B / 2, plain + B / 2 * T, ptg + B / 2 * T);
        assert_memory_equal(ids, plain, sizeof ids);
        assert_memory_equal(tg, ptg, sizeof tg);
    }
    posemb_lm_data_free(&half);
    posemb_lm_valid_batch(&d, 0, B, ids, tg); /* validation is the text's */
    posemb_lm_valid_batch(&ref, 0, B, plain, ptg);
    assert_memory_equal(ids, plain, sizeof ids);
    study_passkey_train once = mix; /* the key said once: every prompt's needle ends after "Remember it. " */
    once.once = 1;
    d.mix_ctx = &once;
    int said_once = 0;
    for (long k = 0; k < 40; k++) {
        posemb_lm_train_batch(&d, k, B, ids, tg);
        posemb_lm_train_batch(&ref, k, B, plain, ptg);
        for (int b = 0; b < B; b++) {
            char s[T + 1];
            for (int i = 0; i < T; i++) s[i] = (char)ids[b * T + i];
            s[T] = '\0';
            if (!memcmp(ids + b * T, plain + b * T, T * sizeof *ids)) continue;
            const char *at = strstr(s, needle);
            assert_non_null(at);
            assert_memory_equal(at + strlen(needle) + 5, ". Remember it. ", 15);
            assert_null(strstr(s, "is the pass key."));
            said_once++;
        }
    }
    assert_true(said_once > 40);
    posemb_study_config c; /* the study's mix takes both departures from its config */
    memset(&c, 0, sizeof c);
    c.len.passkey_train = c.len.ruler_train = 0.25f;
    c.len.passkey_once = c.len.ruler_twice = 1;
    study_length_mix lm = study_length_mix_of(&c, tok, 3);
    assert_int_equal(lm.passkey.once, 1);
    assert_int_equal(lm.ruler.keys.twice, 1);
    posemb_lm_data_free(&d);
    posemb_lm_data_free(&ref);
    posemb_tokenizer_free(tok);
}

/* The held-out loss of the model in folder model at length L, from its logits: windows of
 * context (sliding by stride when less than L), log-softmax in double. */
static double loss_by_hand(const char *model, const int32_t *tokens, int n, int L, int context, long *count)
{
    char path[1400];
    posemb_config cfg;
    posemb_model *m = NULL;
    posemb_error err;
    snprintf(path, sizeof path, "%s/config.json", model);
    assert_int_equal(posemb_config_load(&cfg, path, &err), 0);
    assert_int_equal(posemb_config_set_head(&cfg, POSEMB_HEAD_CLM, 0, &err), 0);
    if (context > cfg.max_position) cfg.max_position = context;
    int missing = 0, stride = context < L ? context / 2 : context;
    assert_int_equal(posemb_model_create(&m, &cfg, &err), 0);
    assert_int_equal(posemb_model_init_from(m, model, &missing, &err), 0);
    assert_int_equal(missing, 0);
    posemb_model_set_train(m, 0, 0, 0);
    double nll = 0;
    *count = 0;
    for (long w = 0; w * stride + context <= n; w++) {
        posemb_batch b = {.B = 1, .T = context, .ids = tokens + w * stride};
        assert_int_equal(posemb_model_forward(m, &b, &err), 0);
        float *z = malloc((size_t)context * cfg.vocab_size * sizeof *z);
        assert_int_equal(posemb_model_lm_logits(m, z, &err), 0);
        int first = w && context > stride ? context - stride : 1; /* whole windows score their T - 1 predictions */
        for (int t = first; t < context; t++) {                   /* token t predicted at t - 1 */
            const float *row = z + (size_t)(t - 1) * cfg.vocab_size;
            double mx = row[0], sum = 0;
            for (int v = 1; v < cfg.vocab_size; v++) mx = row[v] > mx ? row[v] : mx;
            for (int v = 0; v < cfg.vocab_size; v++) sum += exp(row[v] - mx);
            nll += mx + log(sum) - row[b.ids[t]];
            (*count)++;
        }
        free(z);
    }
    posemb_model_free(m);
    return nll / (double)*count;
}

/* Each line's loss against the hand computation on WikiText-2's test bytes. */
static void check_losses(const char *run)
{
    char path[1200], line[8192];
    snprintf(path, sizeof path, "%s/data/wikitext-2/wiki.test.tokens", POSEMB_SHARED);
    FILE *f = fopen(path, "rb");
    unsigned char raw[2048];
    int32_t tokens[2048];
    assert_int_equal(fread(raw, 1, sizeof raw, f), sizeof raw);
    fclose(f);
    for (int i = 0; i < 2048; i++) tokens[i] = raw[i];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
    f = fopen(path, "r");
    int checked = 0, windowed = 0;
    double worst = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const char *pe = cJSON_GetObjectItem(j, "pe")->valuestring, *task = cJSON_GetObjectItem(j, "task")->valuestring;
        int L = cJSON_GetObjectItem(j, "eval_len")->valueint, context = cJSON_GetObjectItem(j, "context")->valueint;
        double loss = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metrics"), "loss")->valuedouble;
        long count, expect_count = cJSON_GetObjectItem(j, "tokens")->valueint;
        char model[1200];
        snprintf(model, sizeof model, "%s/%s/models/%s-%s-s1", dir, run, task, pe);
        double hand = loss_by_hand(model, tokens, 2048, L, context, &count);
        assert_int_equal(count, expect_count);
        worst = fmax(worst, fabs(hand - loss) / hand);
        if (fabs(hand - loss) > 2e-5 * hand) fail_msg("%s %s at %d: loss %.6f, by hand %.6f", task, pe, L, loss, hand);
        windowed += context < L;
        checked++;
        cJSON_Delete(j);
    }
    fclose(f);
    assert_int_equal(checked, 8);
    assert_int_equal(windowed, 2); /* ape at 128 in both decoders */
    printf("%d losses (%d in sliding windows) within %.2g of the hand computation\n", checked, windowed, worst);
}

/* attention.jsonl against posemb analyze --text on the same model, text
 * and length (its attention profile, averaged over heads by hand): every
 * run and length has its line, ape's past its table says so. */
static void check_attention(const char *run)
{
    char path[1200], line[8192], cmd[4096];
    snprintf(path, sizeof path, "%s/%s/attention.jsonl", dir, run);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0, unreached = 0, compared = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        lines++;
        const char *pe = cJSON_GetObjectItem(j, "pe")->valuestring, *task = cJSON_GetObjectItem(j, "task")->valuestring;
        int L = cJSON_GetObjectItem(j, "length")->valueint;
        const cJSON *dist = cJSON_GetObjectItem(j, "mean_distance"), *sink = cJSON_GetObjectItem(j, "first_token_mass");
        unreached += cJSON_GetObjectItem(j, "not_measured") != NULL;
        if (!dist) {
            assert_string_equal(pe, "ape");
            assert_int_equal(L, 128);
            cJSON_Delete(j);
            continue;
        }
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' analyze %s/models/%s-%s-s1 --text '%s/data/wikitext-2/wiki.test.tokens' --len %d "
                 "--words 5 --no-figures --out an-%s-%s-%d --threads 1",
                 dir, POSEMB_BIN, run, task, pe, POSEMB_SHARED, L, task, pe, L);
        if (tu_run(cmd, out, sizeof out)) fail_msg("%s", out);
        snprintf(path, sizeof path, "%s/an-%s-%s-%d/indicators.json", dir, task, pe, L);
        char *text = NULL;
        size_t len;
        posemb_error err;
        assert_int_equal(posemb_read_data_file(path, 1 << 20, &text, &len, &err), POSEMB_OK);
        cJSON *a = cJSON_Parse(text), *att = cJSON_GetObjectItem(a, "attention");
        assert_int_equal(cJSON_GetObjectItem(att, "sequences")->valueint, cJSON_GetObjectItem(j, "windows")->valueint);
        const cJSON *ad = cJSON_GetObjectItem(att, "mean_distance"), *as = cJSON_GetObjectItem(att, "first_token_mass");
        int layers = cJSON_GetArraySize(dist), heads = cJSON_GetArraySize(ad) / layers;
        assert_int_equal(heads, 2);
        for (int l = 0; l < layers; l++) {
            double d = 0, k = 0;
            for (int h = 0; h < heads; h++) {
                d += cJSON_GetArrayItem(ad, l * heads + h)->valuedouble / heads;
                k += cJSON_GetArrayItem(as, l * heads + h)->valuedouble / heads;
            }
            TU_CLOSE(cJSON_GetArrayItem(dist, l)->valuedouble, d, 1e-4, 1e-5, "attention distance", l);
            TU_CLOSE(cJSON_GetArrayItem(sink, l)->valuedouble, k, 1e-6, 1e-5, "first-token mass", l);
            assert_true(d > 0 && d < L && k > 0 && k < 1);
        }
        compared++;
        cJSON_Delete(a);
        free(text);
        cJSON_Delete(j);
    }
    fclose(f);
    assert_int_equal(lines, 8);
    assert_int_equal(unreached, 2); /* ape at 128 in both decoders */
    assert_int_equal(compared, 6);
    printf("%d attention profiles equal posemb analyze --text's\n", compared);
}

/* posemb passkey on a model the study kept gives the study's own passkey
 * fields for that run and length, and reads the ape model's last 64 tokens
 * as the study does (its table ends); a length no prompt fits is refused.
 * These 20-step models retrieve nothing, so the counting itself is checked
 * by test_passkey_copy_model. */
static void check_passkey_cli(const char *run)
{
    char path[1200], line[8192], cmd[4096];
    const char *pes[] = {"rope", "ape"};
    for (int p = 0; p < 2; p++) {
        snprintf(cmd, sizeof cmd, "'%s' passkey '%s/%s/models/llama-%s-s1' --lengths 128 --trials 2 --json --threads 1",
                 POSEMB_BIN, dir, run, pes[p]);
        if (tu_run(cmd, out, sizeof out)) fail_msg("posemb passkey: %s", out);
        cJSON *cli = cJSON_Parse(out), *study = NULL;
        assert_non_null(cli);
        snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        while (!study && fgets(line, sizeof line, f)) {
            cJSON *j = cJSON_Parse(line);
            if (j && !strcmp(cJSON_GetObjectItem(j, "pe")->valuestring, pes[p]) &&
                !strcmp(cJSON_GetObjectItem(j, "task")->valuestring, "llama") &&
                cJSON_GetObjectItem(j, "eval_len")->valueint == 128)
                study = j;
            else cJSON_Delete(j);
        }
        fclose(f);
        assert_non_null(study);
        const char *keys[] = {"passkey_depths", "passkey_digit_depths"};
        for (int k = 0; k < 2; k++) {
            const cJSON *x = cJSON_GetObjectItem(cli, keys[k]), *y = cJSON_GetObjectItem(study, keys[k]);
            assert_int_equal(cJSON_GetArraySize(x), 5);
            for (int d = 0; d < 5; d++)
                assert_true(cJSON_GetArrayItem(x, d)->valuedouble == cJSON_GetArrayItem(y, d)->valuedouble);
        }
        assert_int_equal(cJSON_GetObjectItem(cli, "passkey_context")->valueint,
                         cJSON_GetObjectItem(study, "passkey_context")->valueint);
        cJSON_Delete(cli);
        cJSON_Delete(study);
    }
    snprintf(cmd, sizeof cmd, "'%s' passkey '%s/%s/models/llama-rope-s1' --lengths 64", POSEMB_BIN, dir, run);
    if (tu_run(cmd, out, sizeof out) != 2 || !strstr(out, "a passkey prompt needs at least 102 tokens"))
        fail_msg("posemb passkey --lengths 64: %s", out);
}

/* The key of (seed, length, depth, trial), as the study draws it. */
static void study_key(int seed, int L, int d, int k, char key[8])
{
    posemb_rng r;
    posemb_rng_seed(&r, 0x9a55e7 + (uint64_t)seed, ((uint64_t)L * POSEMB_PASSKEY_DEPTHS + d) * 1000003u + k);
    snprintf(key, 8, "%05u", 10000 + posemb_rng_below(&r, 90000));
}

/* A byte-level GPT-2 (width 64, one layer) whose blocks and learned
 * positions add nothing (every c_proj and wpe zero), so that after token x
 * its final hidden state is e_x. */
/* j as one line of f, then freed. */
static void put_line(FILE *f, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(j);
}

static posemb_model *blank_gpt2(const char *pe, int max_position, int tied, uint64_t seed, posemb_config *cfg)
{
    posemb_error err;
    posemb_config_defaults(cfg, POSEMB_GPT2);
    cfg->vocab_size = 256, cfg->hidden = 64, cfg->layers = 1, cfg->heads = 2, cfg->intermediate = 128;
    cfg->max_position = max_position, cfg->tie_embeddings = tied;
    snprintf(cfg->pe, sizeof cfg->pe, "%s", pe);
    assert_int_equal(posemb_config_set_head(cfg, POSEMB_HEAD_CLM, 0, &err), 0);
    posemb_model *m = NULL;
    assert_int_equal(posemb_model_create(&m, cfg, &err), 0);
    posemb_model_init(m, seed);
    for (int i = 0; i < posemb_model_n_params(m); i++) {
        const posemb_param *p = posemb_model_param(m, i);
        if (strstr(p->name, "c_proj") || strstr(p->name, "wpe"))
            memset(posemb_model_weights(m) + p->offset, 0, p->numel * sizeof(float));
    }
    return m;
}

/* Saves m as dir/name with the byte-level tokenizer, and frees it. */
static void save_with_bytes(posemb_model *m, const char *name)
{
    char path[1200];
    posemb_error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(posemb_model_save(m, path, &err), 0);
    posemb_model_free(m);
    snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir, name);
    assert_int_equal(posemb_tokenizer_write_bytes(path, &err), 0);
}

/* A GPT-2 without positions whose blocks add nothing (blank_gpt2):
 * its logits are LayerNorm(e_x) . e_j, so its argmax repeats the token read
 * (random embeddings of width 64 are near-orthogonal). On a passkey prompt
 * it predicts a key's digit k >= 1 exactly when the key repeats digit k - 1
 * there, and the first digit never: posemb passkey must give, per depth,
 * the share of such digits over the study's own keys of that seed, and no
 * key whole. */
static void test_passkey_copy_model(void **state)
{
    char cmd[4096], key[8];
    posemb_config cfg;
    save_with_bytes(blank_gpt2("none", 256, 1, 7, &cfg), "copier");
    enum { TRIALS = 40, SEED = 3 };
    snprintf(cmd, sizeof cmd, "'%s' passkey '%s/copier' --lengths 128,200 --trials %d --seed %d --json --threads 1",
             POSEMB_BIN, dir, TRIALS, SEED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("posemb passkey: %s", out);
    const char *line = out;
    const int lengths[] = {128, 200};
    int repeats_seen = 0;
    for (int l = 0; l < 2; l++, line = strchr(line, '\n') + 1) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        assert_int_equal(cJSON_GetObjectItem(j, "length")->valueint, lengths[l]);
        assert_true(cJSON_GetObjectItem(j, "passkey")->valuedouble == 0.0);
        for (int d = 0; d < POSEMB_PASSKEY_DEPTHS; d++) {
            int repeats = 0;
            for (int k = 0; k < TRIALS; k++) {
                study_key(SEED, lengths[l], d, k, key);
                for (int i = 1; i < 5; i++) repeats += key[i] == key[i - 1];
            }
            repeats_seen += repeats;
            double got = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "passkey_digit_depths"), d)->valuedouble;
            TU_CLOSE(got, repeats / (5.0 * TRIALS), 1e-9, 0, "digits predicted by the copier", d);
        }
        cJSON_Delete(j);
    }
    assert_true(repeats_seen > 20); /* about 0.1 of 1600 digits: the check has something to count */
    /* a PE whose tensors the checkpoint lacks is refused in one line */
    snprintf(cmd, sizeof cmd, "'%s' passkey '%s/copier' --lengths 128 --pe ape", POSEMB_BIN, dir);
    if (tu_run(cmd, out, sizeof out) == 0 || !strstr(out, "posemb passkey: ")) fail_msg("--pe ape: %s", out);
}

/* Head row pi(x) = LayerNorm(e_x) for every token x of the model's
 * embeddings: after e_x the argmax is pi(x) (width-64 random embeddings are
 * near-orthogonal). */
static void head_maps_to(posemb_model *m, const int *pi, double eps)
{
    float *w = posemb_model_weights(m);
    const posemb_param *wte = posemb_model_find(m, "wte.weight"), *head = posemb_model_find(m, "lm_head.weight");
    assert_non_null(wte);
    assert_non_null(head);
    for (int x = 0; x < 256; x++) {
        const float *e = w + wte->offset + (size_t)x * 64;
        double mean = 0, var = 0;
        for (int i = 0; i < 64; i++) mean += e[i] / 64.0;
        for (int i = 0; i < 64; i++) var += (e[i] - mean) * (e[i] - mean) / 64.0;
        for (int i = 0; i < 64; i++)
            w[head->offset + (size_t)pi[x] * 64 + i] = (float)((e[i] - mean) / sqrt(var + eps));
    }
}

/* A GPT-2 with a 128-row table whose blocks and positions add nothing and
 * whose untied head maps the token read to pi(token), pi the cycle
 * ' ' -> k0 -> .. -> k4 -> ' ' through the digits of the key the study draws
 * for depth 0: it retrieves that key whole and every other key as far as pi
 * predicts it. Prompts of 200 tokens pass its table, so it must read their
 * last 128 (its first 128 hold no question). */
static void test_passkey_lookup_model(void **state)
{
    enum { L = 200 };
    char cmd[4096], key[8];
    int seed = 0;
    for (int s = 1; !seed && s < 1000; s++) { /* a seed whose depth-0 key has five different digits */
        study_key(s, L, 0, 0, key);
        int distinct = 1;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < i; j++) distinct &= key[i] != key[j];
        if (distinct) seed = s;
    }
    assert_true(seed > 0);
    study_key(seed, L, 0, 0, key);
    int pi[256];
    for (int i = 0; i < 256; i++) pi[i] = i;
    pi[' '] = key[0], pi[(int)key[4]] = ' ';
    for (int i = 0; i < 4; i++) pi[(int)key[i]] = key[i + 1];
    posemb_config cfg;
    posemb_model *m = blank_gpt2("ape", 128, 0, 11, &cfg);
    head_maps_to(m, pi, cfg.ln_eps);
    save_with_bytes(m, "lookup");
    snprintf(cmd, sizeof cmd, "'%s' passkey '%s/lookup' --lengths %d --trials 1 --seed %d --json --threads 1",
             POSEMB_BIN, dir, L, seed);
    if (tu_run(cmd, out, sizeof out)) fail_msg("posemb passkey: %s", out);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "passkey_context")->valueint, 128);
    const cJSON *keys = cJSON_GetObjectItem(j, "passkey_depths"),
                *digits = cJSON_GetObjectItem(j, "passkey_digit_depths");
    for (int d = 0; d < POSEMB_PASSKEY_DEPTHS; d++) {
        study_key(seed, L, d, 0, key);
        int right = 0, prev = ' ';
        for (int i = 0; i < 5; prev = key[i++]) right += pi[prev] == key[i];
        TU_CLOSE(cJSON_GetArrayItem(digits, d)->valuedouble, right / 5.0, 1e-9, 0, "lookup digits", d);
        TU_CLOSE(cJSON_GetArrayItem(keys, d)->valuedouble, right == 5, 0, 0, "lookup keys", d);
    }
    assert_true(cJSON_GetArrayItem(keys, 0)->valuedouble == 1.0);
    cJSON_Delete(j);
}

/* Writes cfg to DIR/file and runs `posemb study file --length --data
 * SHARED/data --out outdir` in DIR; returns its exit status, its output in out. */
static void put_config(const char *file, const char *cfg)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
}

static int run_study(const char *file, const char *cfg, const char *outdir)
{
    char cmd[4096];
    put_config(file, cfg);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study %s --length --data '%s/data' --out %s 2>&1", dir, POSEMB_BIN, file,
             POSEMB_SHARED, outdir);
    return tu_run(cmd, out, sizeof out);
}

/* sink_every keeps a checkpoint every 10 of 20 steps and reads each one's
 * first-token attention; the last point is the final model's, which the
 * study's attention profile (attention.jsonl, a second path: the final
 * model, loaded from the run folder) measures at the training length too:
 * its first-token mass averaged over layers is the curve's mean; the two
 * points differ (each reads its checkpoint) and stay above 1/n_train (the
 * first query sees only the first token). A sink_every that does not
 * divide a task's steps, its budget's included, is refused, as is one
 * outside the length study. */
static void test_sink_curve(void **state)
{
    (void)state;
    if (!tu_have_shared("the length study")) return;
    char path[1200], line[16384];
    const char *cfg = "{\"pes\": [\"rope\", \"none\"], \"tasks\": [\"gpt2\"], \"seeds\": [1], \"lengths\": [1], "
                      "\"layers\": 2, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, "
                      "\"steps\": 20, \"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, "
                      "\"passkey_trials\": 0, \"passkey_train\": 0, \"sink_every\": 10, \"jobs\": 1}";
    if (run_study("sink.json", cfg, "s")) fail_msg("%s", out);
    double mean_at[2] = {NAN, NAN}, profile_at[2] = {NAN, NAN};
    snprintf(path, sizeof path, "%s/s/results.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line), *curve = cJSON_GetObjectItem(j, "sink_curve");
        int p = strcmp(cJSON_GetObjectItem(j, "pe")->valuestring, "rope") != 0;
        assert_int_equal(cJSON_GetArraySize(curve), 2);
        for (int k = 0; k < 2; k++) {
            const cJSON *pt = cJSON_GetArrayItem(curve, k);
            double step = cJSON_GetArrayItem(pt, 0)->valuedouble, mean = cJSON_GetArrayItem(pt, 1)->valuedouble,
                   top = cJSON_GetArrayItem(pt, 2)->valuedouble, share = cJSON_GetArrayItem(pt, 3)->valuedouble;
            assert_true(step == 10.0 * (k + 1));
            assert_true(mean >= 1.0 / 64 && mean <= top && top <= 1 && share >= 0 && share <= 1); /* row 0: 1/64 */
        }
        mean_at[p] = cJSON_GetArrayItem(cJSON_GetArrayItem(curve, 1), 1)->valuedouble;
        /* each point reads its own checkpoint, not the final model */
        assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(curve, 0), 1)->valuedouble != mean_at[p]);
        cJSON_Delete(j);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/s/attention.jsonl", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line), *mass = cJSON_GetObjectItem(j, "first_token_mass");
        int p = strcmp(cJSON_GetObjectItem(j, "pe")->valuestring, "rope") != 0;
        double sum = 0;
        for (int l = 0; l < cJSON_GetArraySize(mass); l++) sum += cJSON_GetArrayItem(mass, l)->valuedouble;
        profile_at[p] = sum / cJSON_GetArraySize(mass);
        cJSON_Delete(j);
    }
    fclose(f);
    for (int p = 0; p < 2; p++) {
        printf("%s: first-token mass at step 20 %.6f (sink curve), %.6f (attention profile)\n", p ? "none" : "rope",
               mean_at[p], profile_at[p]);
        TU_CLOSE(mean_at[p], profile_at[p], 5.1e-7, 0, "sink curve against the attention profile", p);
    }
    const char *bad = "{\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"steps\": 20, \"sink_every\": 7}";
    assert_int_not_equal(run_study("sink-bad.json", bad, "sb"), 0);
    assert_non_null(strstr(out, "task gpt2: \"sink_every\" 7 must divide its 20 steps into at most 64 parts"));
    const char *budget = "{\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"steps\": 20, \"sink_every\": 10, "
                         "\"task_budgets\": {\"gpt2\": {\"steps\": 25}}}";
    assert_int_not_equal(run_study("sink-budget.json", budget, "sb"), 0);
    assert_non_null(strstr(out, "task gpt2: \"sink_every\" 10 must divide its 25 steps"));
}

static void test_tiny_length_study(void **state)
{
    if (!tu_have_shared("the length study")) return;
    char path[1200], cmd[4096];
    const char *cfg =
        "{\"pes\": [\"ape\", \"rope\"], \"tasks\": [\"gpt2\", \"llama\"], \"seeds\": [1], \"lengths\": [1, 2], "
        "\"layers\": 2, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"steps\": 20, "
        "\"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, \"passkey_trials\": 2, \"passkey_train\": 0, "
        "\"rope_scalings\": [\"linear\", \"yarn\", \"string\"], \"jobs\": 1, \"model\": {\"tie_word_embeddings\": "
        "true}}";
    if (run_study("len.json", cfg, "a")) fail_msg("%s", out);
    assert_int_equal(tu_count_results(dir, "a"), 8); /* 2 PEs x 2 decoders x 2 lengths */
    check_losses("a");
    check_attention("a");
    check_passkey_cli("a");
    /* --report again: nothing measured twice, one seed per cell */
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && '%s' study len.json --length --data '%s/data' --out a --report && test $(wc -l < "
        "a/attention.jsonl) = 8 && grep -q '^gpt2,rope,,128,attention_distance,[0-9.]*,0.000000,1,0,$' a/tables.csv",
        dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("attention after --report: %s", out);
    snprintf(
        cmd, sizeof cmd,
        "cd '%s/a' && grep -q '^| rope | ' tables.md && grep -q '^| yarn | (= rope) | ' tables.md && "
        "grep -q '^| ape | [0-9.]* / 0\\.[0-9]* | (table ends) |$' tables.md && test -s attention_llama.png && "
        "grep -q '^gpt2,rope,,128,attention_distance,' tables.csv && "
        "grep -q '^gpt2,rope,linear,128,loss,' tables.csv && test -s length_llama.png && "
        "test -s passkey_gpt2_ape.png && test -s report.html && test -s models/llama-rope-s1/tokenizer.json && "
        "grep -q '\"scaled\": {\"linear\": ' results.jsonl && grep -q '\"string\": [0-9]' results.jsonl && grep -q "
        "'\"passkey_depths\": \\[null' results.jsonl && "
        "grep -q '\"passkey_digits\": 0\\.' results.jsonl && test $(grep -c '\"passkey_train\": 0,' results.jsonl) = 8 "
        "&& "
        "test $(grep -c '\"model\": {\"tie_word_embeddings\":true}' results.jsonl) = 8 && grep -q '(model)' tables.md "
        "&& "
        "grep -q '\"tie_word_embeddings\":.*true' models/llama-ape-s1/config.json && "
        "! grep -q lm_head models/llama-ape-s1/model.safetensors",
        dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the tables, figures and lines: %s", out);
    /* the perplexity command reads a model folder the study wrote */
    snprintf(cmd, sizeof cmd,
             "'%s' perplexity '%s/a/models/gpt2-rope-s1' --data '%s/data/wikitext-2/wiki.test.tokens' --tokens 2048 "
             "--lengths 64 --json",
             POSEMB_BIN, dir, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "\"length\": 64")) fail_msg("posemb perplexity: %s", out);
    /* --report on a study in progress: the one finished run's rows, the others empty, nothing trained */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir r && head -n 2 a/results.jsonl > r/results.jsonl && test $(grep -c '\"pe\": \"ape\", "
             ".*\"task\": "
             "\"gpt2\"' r/results.jsonl) = 2 && '%s' study len.json --length --data "
             "'%s/data' --out r --report",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) ||
        !strstr(out, "(3 of 4 runs still to run: their cells are empty, or hold the seeds run so far)"))
        fail_msg("--report: %s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s/r' && grep -q '^| ape | [0-9.]* | [0-9.]* w |$' tables.md && "
             "test $(grep -c '^| rope | - | - |$' tables.md) = 4 && test $(grep -c '^| ape | - | - |$' tables.md) = 2 "
             "&& test -s length_gpt2.png && test -s passkey_gpt2_ape.png && test -s report.html && "
             "! test -e length_llama.png && ! test -e passkey_gpt2_rope.png && ! test -e models && "
             "test $(wc -l < results.jsonl) = 2",
             dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("--report's tables: %s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study len.json --length --data '%s/data' --out none --report", dir,
             POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) != 1 || !strstr(out, "none/results.jsonl: no runs recorded yet"))
        fail_msg("--report with no runs: %s", out);
    snprintf(cmd, sizeof cmd, "len.json --length --data '%s/data'", POSEMB_SHARED);
    printf("killed after %d of 8 lines; resumed\n", tu_study_killed_after(dir, cmd, "b", 2));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study len.json --length --data '%s/data' --out b", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s", out);
    /* a run killed at a checkpoint says where it went on from, its seconds counting from there */
    const char *one = "{\"pes\": [\"ape\"], \"tasks\": [\"gpt2\"], \"seeds\": [1], \"lengths\": [1], \"layers\": 1, "
                      "\"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"steps\": 200, "
                      "\"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, \"passkey_trials\": 2, "
                      "\"passkey_train\": 0, \"jobs\": 1}";
    snprintf(path, sizeof path, "%s/one.json", dir);
    assert_int_equal(tu_write_file(path, one, strlen(one)), 0);
    snprintf(cmd, sizeof cmd, "one.json --length --data '%s/data'", POSEMB_SHARED);
    assert_true(tu_study_killed_when(dir, cmd, "c", "c/models/gpt2-ape-s1/checkpoint-*"));
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && '%s' study one.json --length --data '%s/data' --out c 2>&1 && grep -o '\"resumed_from\": [0-9]*' "
        "c/results.jsonl",
        dir, POSEMB_BIN, POSEMB_SHARED);
    const char *at = NULL;
    if (tu_run(cmd, out, sizeof out) || !(at = strstr(out, "\"resumed_from\": "))) fail_msg("no resumed_from: %s", out);
    int from = atoi(at + strlen("\"resumed_from\": "));
    printf("killed at a checkpoint, resumed from step %d\n", from);
    assert_true(from > 0 && from < 200 && from % 10 == 0);
    /* the same folder under other "model" keys is refused, not counted as done */
    char other[4096];
    snprintf(other, sizeof other, "%.*s}", (int)(strstr(cfg, ", \"model\"") - cfg), cfg);
    snprintf(path, sizeof path, "%s/len2.json", dir);
    assert_int_equal(tu_write_file(path, other, strlen(other)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study len2.json --length --data '%s/data' --out a", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "line 1 was run with \"model\" {\"tie_word_embeddings\":true}, "
                                                      "this config has {}: use another --out folder"))
        fail_msg("another model into the same folder: %s", out);
    char *a, *b;
    snprintf(path, sizeof path, "%s/a/results.jsonl", dir);
    a = tu_results_canonical(path);
    snprintf(path, sizeof path, "%s/b/results.jsonl", dir);
    b = tu_results_canonical(path);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* Number key of line (a JSON object), or array key's element i (i >= 0); NaN when absent. */
static double json_at(const char *line, const char *key, int i)
{
    cJSON *j = cJSON_Parse(line), *v = cJSON_GetObjectItem(j, key);
    if (i >= 0) v = cJSON_GetArrayItem(v, i);
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(j);
    return x;
}

/* Line n (0-based) of path whose text holds `has`, copied into buf; fails the test when none. */
static void line_with(const char *path, const char *has, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(buf, (int)cap, f))
        if (strstr(buf, has)) {
            fclose(f);
            return;
        }
    fclose(f);
    fail_msg("%s: no line with %s", path, has);
}

/* The fine-tune at a longer context (extend_factors): its step 0 is the
 * trained model's perplexity under the scaling (the numbers results.jsonl
 * holds, read by another path), its end the fine-tuned model's; killed
 * mid-fine-tune it resumes to the same lines; a study with its runs done
 * does only the fine-tunes added later, its results.jsonl untouched. */
static void test_length_extend(void **state)
{
    if (!tu_have_shared("the length study")) return;
    char path[1200], cmd[4096], line[4096], base[4096];
    const char *cfg =
        "{\"pes\": [\"rope\"], \"tasks\": [\"llama\"], \"seeds\": [1], \"lengths\": [1, 2], \"layers\": 2, "
        "\"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"steps\": 20, \"batch\": 8, "
        "\"curve_every\": 10, \"eval_tokens\": 2048, \"passkey_trials\": 2, \"passkey_train\": 0, "
        "\"rope_scalings\": [\"linear\"], \"jobs\": 1, \"extend_factors\": [2], \"extend_scalings\": [\"none\", "
        "\"linear\"], \"extend_steps\": 5, \"extend_every\": 2";
    snprintf(path, sizeof path, "%s/ext.json", dir);
    snprintf(line, sizeof line, "%s}", cfg);
    assert_int_equal(tu_write_file(path, line, strlen(line)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study ext.json --length --data '%s/data' --out e", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s", out);
    snprintf(path, sizeof path, "%s/e/results.jsonl", dir);
    line_with(path, "\"eval_len\": 128", base, sizeof base);
    cJSON *b = cJSON_Parse(base);
    double plain = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "metrics"), "perplexity")->valuedouble,
           linear = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "scaled"), "linear")->valuedouble;
    cJSON_Delete(b);
    snprintf(path, sizeof path, "%s/e/extend.jsonl", dir);
    const char *scaling[2] = {"\"scaling\":\"none\"", "\"scaling\":\"linear\""};
    for (int k = 0; k < 2; k++) {
        line_with(path, scaling[k], line, sizeof line);
        TU_CLOSE(json_at(line, "curve_perplexity", 0), k ? linear : plain, 0, 1e-5, "step 0 against results.jsonl", k);
        static const double steps[4] = {0, 2, 4, 5};
        for (int i = 0; i < 4; i++) TU_CLOSE(json_at(line, "curve_steps", i), steps[i], 0, 0, "step", i);
        TU_CLOSE(json_at(line, "perplexity", 1), json_at(line, "curve_perplexity", 3), 0, 0, "the end at 2x", k);
        assert_true(json_at(line, "curve_perplexity", 3) < json_at(line, "curve_perplexity", 0)); /* it learned */
        TU_CLOSE(json_at(line, "batch", -1), 4, 0, 0, "batch", k); /* 8 sequences of 64 tokens: 4 of 128 */
        TU_CLOSE(json_at(line, "lr", -1), 1e-4, 0, 0, "lr", k);
        TU_CLOSE(json_at(line, "passkey_train", -1), 0, 0, 0, "the mix it read", k);
    }
    snprintf(cmd, sizeof cmd,
             "cd '%s/e' && test $(wc -l < extend.jsonl) = 2 && test $(wc -l < results.jsonl) = 2 && grep -q "
             "'\"type\":.*\"linear\"' models/llama-rope-s1/extend-linear-x2/config.json && test -d "
             "models/llama-rope-s1/extend-none-x2/checkpoint-4 && grep -q '^### llama: RoPE fine-tuned at 128 "
             "tokens (2x), 5 steps' tables.md && grep -q '^| linear | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* | "
             "[0-9.]* | [0-9.]* |$' tables.md && grep -q '^llama,rope,linear,128,extend_x2_loss_step_5,' tables.csv "
             "&& grep -q '^llama,rope,none,64,extend_x2_loss_end,' tables.csv && test -s extend_llama_x2.png",
             dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the fine-tunes' folders and lines: %s", out);
    /* killed in a fine-tune, resumed: the same lines */
    snprintf(cmd, sizeof cmd, "ext.json --length --data '%s/data'", POSEMB_SHARED);
    assert_true(tu_study_killed_when(dir, cmd, "k", "k/models/llama-rope-s1/extend-none-x2/checkpoint-2"));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study ext.json --length --data '%s/data' --out k", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s", out);
    char *x, *y;
    snprintf(path, sizeof path, "%s/e/extend.jsonl", dir);
    x = tu_results_canonical(path);
    snprintf(path, sizeof path, "%s/k/extend.jsonl", dir);
    y = tu_results_canonical(path);
    assert_string_equal(x, y);
    free(y);
    /* a finished study given one more scaling: that fine-tune alone, results.jsonl as it was */
    snprintf(path, sizeof path, "%s/ext2.json", dir);
    snprintf(line, sizeof line, "%.*s\"linear\", \"yarn\"], \"extend_steps\": 5, \"extend_every\": 2}",
             (int)(strstr(cfg, "\"linear\"], \"extend_steps") - cfg), cfg);
    assert_int_equal(tu_write_file(path, line, strlen(line)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cp e/results.jsonl before && '%s' study ext2.json --length --data '%s/data' --out e 2>&1 && "
             "cmp before e/results.jsonl && test $(wc -l < e/extend.jsonl) = 3 && grep -q '\"scaling\":\"yarn\"' "
             "e/extend.jsonl",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("a fine-tune added later: %s", out);
    if (strstr(out, "perplexity") && strstr(out, "at 64 tokens"))
        fail_msg("the trained run was evaluated again: %s", out);
    /* the same folder under other fine-tune settings is refused */
    snprintf(line, sizeof line, "%.*s\"linear\"], \"extend_steps\": 6, \"extend_every\": 2}",
             (int)(strstr(cfg, "\"linear\"], \"extend_steps") - cfg), cfg);
    assert_int_equal(tu_write_file(path, line, strlen(line)), 0);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "extend.jsonl: line 1 was run with other \"extend_steps\""))
        fail_msg("other fine-tune settings: %s", out);
    free(x);
    /* DroPE: recalibrated as NoPE at the training length with the pretraining's batch, its temperature fitted at
     * 2x; the perplexity it reports is posemb perplexity's on that model with that temperature; trained with
     * RULER's niah_single in the mix and tied embeddings, which its line says */
    snprintf(path, sizeof path, "%s/drope.json", dir);
    snprintf(line, sizeof line,
             "%.*s\"drope\"], \"extend_steps\": 5, \"extend_every\": 2, \"ruler_tasks\": [\"niah_single\"], "
             "\"ruler_train\": 0.2, \"ruler_trials\": 1, \"model\": {\"tie_word_embeddings\": true}}",
             (int)(strstr(cfg, "\"linear\"], \"extend_steps") - cfg), cfg);
    assert_int_equal(tu_write_file(path, line, strlen(line)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study drope.json --length --data '%s/data' --out dr && test -d "
             "dr/models/llama-rope-s1/extend-drope && cp dr/models/llama-rope-s1/tokenizer.json "
             "dr/models/llama-rope-s1/extend-drope/ && grep -q \"^| drope's temperature beta | 1.00 | \" "
             "dr/tables.md && grep -q '^llama,rope,none,128,extend_x2_passkey_digits_end,' dr/tables.csv",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("drope: %s", out);
    snprintf(path, sizeof path, "%s/dr/extend.jsonl", dir);
    line_with(path, "\"scaling\":\"drope\"", line, sizeof line);
    double beta = json_at(line, "beta", 1), ppl = json_at(line, "perplexity", 1);
    assert_true(json_at(line, "beta", 0) == 1 && beta >= 1 && beta <= 3);
    assert_true(json_at(line, "train_length", -1) == 64 && json_at(line, "batch", -1) == 8);
    TU_CLOSE(json_at(line, "lr", -1), 1e-3, 0, 0, "drope recalibrates at the pretraining's rate", 0);
    /* the mix it read, as results.jsonl says it (RULER's prompts in a fifth of the sequences, the float's %.9g as
     * there; tied embeddings) */
    if (!strstr(line, "\"passkey_train\":0,\"ruler_tasks\":[\"niah_single\"],\"ruler_train\":0.200000003,"
                      "\"model\":{\"tie_word_embeddings\":true}"))
        fail_msg("the mix in the drope line: %s", line);
    snprintf(cmd, sizeof cmd,
             "'%s' perplexity '%s/dr/models/llama-rope-s1/extend-drope' --data '%s/data/wikitext-2/wiki.test.tokens' "
             "--tokens 2048 --lengths 128 --pe drope:c=%.9g,original=64 --json",
             POSEMB_BIN, dir, POSEMB_SHARED, (beta - 1) / log(2.0));
    const char *at;
    if (tu_run(cmd, out, sizeof out) || !(at = strstr(out, "\"perplexity\": "))) fail_msg("perplexity: %s", out);
    TU_CLOSE(atof(at + strlen("\"perplexity\": ")), ppl, 0, 1e-5, "drope's perplexity at 2x", 0);
    /* the passkey at the end is posemb passkey's on the fine-tuned folder, with the run's seed */
    snprintf(path, sizeof path, "%s/dr/extend.jsonl", dir);
    line_with(path, "\"scaling\":\"none\"", line, sizeof line);
    snprintf(cmd, sizeof cmd,
             "cd '%s/dr/models/llama-rope-s1' && cp tokenizer.json extend-none-x2/ && '%s' passkey extend-none-x2 "
             "--lengths 128 --trials 2 --seed 1 --json",
             dir, POSEMB_BIN);
    if (tu_run(cmd, out, sizeof out) || !(at = strstr(out, "\"passkey_digits\": "))) fail_msg("passkey: %s", out);
    TU_CLOSE(atof(at + strlen("\"passkey_digits\": ")), json_at(line, "passkey_digits", 1), 1e-4, 0, "digits", 0);
    assert_true(strstr(line, "\"passkey\":[null,") != NULL); /* 64 tokens hold no prompt */
}

/* The Welch star of the length tables: a's lines as two seeds whose loss is
 * set, 2.0 + 0.01 s for ape everywhere, 2.5 + 0.01 s for GPT-2's rope (far
 * from ape's: p = 0.0002) and 2.0 + 0.01 s for Llama's (equal: p = 1). */
static void test_length_welch(void **state)
{
    if (!tu_have_shared("the length study's tables")) return;
    char path[1200], line[1 << 16], cmd[4096];
    snprintf(path, sizeof path, "%s/a/results.jsonl", dir);
    FILE *in = fopen(path, "r");
    if (!in) skip(); /* test_tiny_length_study made it */
    snprintf(cmd, sizeof cmd, "%s/w", dir);
    assert_int_equal(mkdir(cmd, 0755), 0);
    snprintf(path, sizeof path, "%s/w/results.jsonl", dir);
    FILE *out_f = fopen(path, "w");
    while (fgets(line, sizeof line, in))
        for (int seed = 1; seed <= 2; seed++) {
            cJSON *j = cJSON_Parse(line);
            int gpt2_rope = !strcmp(cJSON_GetObjectItem(j, "pe")->valuestring, "rope") &&
                            !strcmp(cJSON_GetObjectItem(j, "task")->valuestring, "gpt2");
            cJSON_SetNumberValue(cJSON_GetObjectItem(j, "seed"), seed);
            cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metrics"), "loss"),
                                 (gpt2_rope ? 2.5 : 2.0) + 0.01 * seed);
            put_line(out_f, j);
        }
    fclose(in);
    fclose(out_f);
    snprintf(path, sizeof path, "%s/len.json", dir);
    char *cfg = NULL;
    size_t len;
    posemb_error err;
    assert_int_equal(posemb_read_data_file(path, 1 << 16, &cfg, &len, &err), POSEMB_OK);
    char *seeds = strstr(cfg, "\"seeds\": [1]");
    assert_non_null(seeds);
    snprintf(cmd, sizeof cmd, "%.*s\"seeds\": [1, 2]%s", (int)(seeds - cfg), cfg, seeds + strlen("\"seeds\": [1]"));
    free(cfg);
    snprintf(path, sizeof path, "%s/len12.json", dir);
    assert_int_equal(tu_write_file(path, cmd, strlen(cmd)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study len12.json --length --data '%s/data' --out w --report && cd w && "
             "test $(grep -c '^| rope | 12.[0-9]* +- 0.[0-9]*\\* | ' tables.md) = 1 && "
             "test $(grep -c '^| rope | 7.[0-9]* +- 0.[0-9]* | ' tables.md) = 1 && "
             "grep -q '^gpt2,rope,,64,loss,2.515000,0.007071,2,0,0.000[0-9]*$' tables.csv && "
             "grep -q '^llama,rope,,64,loss,2.015000,0.007071,2,0,1$' tables.csv && "
             "grep -q '^gpt2,ape,,64,loss,2.015000,0.007071,2,0,$' tables.csv",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the Welch star: %s", out);
}

/* The run's lines of ru/ again as seeds 1 and 2 with niah_single's answers set by hand (seed 1: 1.0 at 128, 0.5
 * at 256; seed 2: 0.6 and 0.9; every depth alike) and kv's (0.5 at 128, 1.0 at 256: past the first miss counts
 * nothing), and seed 1's line at 128 again as alibi's (a length with no run after one that passes), into folder
 * rr/ of a config with a PE not run at all (fire): its tables give the means (0.80, exactly the default
 * threshold, which passes; 0.70) and each task's effective length under the threshold, "-" for alibi and fire,
 * and its report a heatmap per run PE and task that places its needle at a depth (niah_single and kv for rope
 * and alibi; not vt, cwe or fire). */
static void check_effective_length(const char *cfg)
{
    char path[1200], cmd[4096], line[1 << 16];
    const double niah[2][2] = {{1.0, 0.5}, {0.6, 0.9}}, kv[2] = {0.5, 1.0};
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/rr'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/rr/results.jsonl", dir);
    FILE *w = fopen(path, "w");
    assert_non_null(w);
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof path, "%s/ru/results.jsonl", dir);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        for (int i = 0; fgets(line, sizeof line, f); i++) {
            cJSON *j = cJSON_Parse(line), *acc = cJSON_GetObjectItem(j, "ruler"),
                  *depths = cJSON_GetObjectItem(j, "ruler_depths");
            assert_true(i < 2 && cJSON_GetObjectItem(j, "eval_len")->valueint == 128 << i);
            cJSON_ReplaceItemInObject(j, "seed", cJSON_CreateNumber(s + 1));
            cJSON_ReplaceItemInObject(acc, "niah_single", cJSON_CreateNumber(niah[s][i]));
            cJSON_ReplaceItemInObject(acc, "kv", cJSON_CreateNumber(kv[i]));
            double nd[5] = {niah[s][i], niah[s][i], niah[s][i], niah[s][i], niah[s][i]},
                   kd[5] = {kv[i], kv[i], kv[i], kv[i], kv[i]};
            cJSON_ReplaceItemInObject(depths, "niah_single", cJSON_CreateDoubleArray(nd, 5));
            cJSON_ReplaceItemInObject(depths, "kv", cJSON_CreateDoubleArray(kd, 5));
            if (s == 0 && i == 0) { /* alibi: this line alone, no run at 256 */
                cJSON *a = cJSON_Duplicate(j, 1);
                cJSON_ReplaceItemInObject(a, "pe", cJSON_CreateString("alibi"));
                cJSON_ReplaceItemInObject(a, "spec", cJSON_CreateString("alibi"));
                put_line(w, a);
            }
            put_line(w, j);
        }
        fclose(f);
    }
    fclose(w);
    const char *thresholds[][3] = {
        {"", "0.8", "| rope | 0.80 | 0.70 | 128 |"},
        {", \"ruler_threshold\": 0.65", "0.65", "| rope | 0.80 | 0.70 | 256 (every length) |"},
        {", \"ruler_threshold\": 0.95", "0.95", "| rope | 0.80 | 0.70 | below 128 |"}};
    for (int k = 0; k < 3; k++) {
        char two[2048];
        const char *key = "\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"seeds\": [1]", *seeds = strstr(cfg, key),
                   *after = seeds + strlen(key);
        assert_non_null(seeds);
        snprintf(two, sizeof two,
                 "%.*s\"pes\": [\"rope\", \"alibi\", \"fire\"], \"tasks\": [\"gpt2\"], \"seeds\": [1, 2]%.*s%s}",
                 (int)(seeds - cfg), cfg, (int)strlen(after) - 1, after, thresholds[k][0]);
        snprintf(path, sizeof path, "%s/rr.json", dir);
        assert_int_equal(tu_write_file(path, two, strlen(two)), 0);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' study rr.json --length --data '%s/data' --out rr --report && cd rr && "
                 "grep -c -F '| PE | 128 | 256 | effective length (>= %s) |' tables.md && grep -q -F '%s' tables.md && "
                 "grep -q -F '| rope | 0.50 | 1.00 | below 128 |' tables.md && "
                 "grep -q -F '| alibi | 1.00 | - | - |' tables.md && "
                 "grep -q -F '| alibi | 0.50 | - | below 128 |' tables.md && "
                 "grep -c -F '| fire | - | - | - |' tables.md && "
                 "test -s ruler_niah_single_gpt2_rope.png && test -s ruler_kv_gpt2_rope.png && "
                 "test -s ruler_niah_single_gpt2_alibi.png && ! ls ruler_vt_* ruler_cwe_* ruler_*fire* 2>/dev/null && "
                 "grep -c 'the fraction of prompts answered whole, by the gold needle' report.html",
                 dir, POSEMB_BIN, POSEMB_SHARED, thresholds[k][1], thresholds[k][2]);
        if (tu_run(cmd, out, sizeof out) || !strstr(out, "\n4\n4\n4\n")) /* 4 RULER tables, fire in each; 4 maps */
            fail_msg("effective length %s: %s", thresholds[k][1], out);
    }
}

/* RULER's tasks in a tiny length study: every line carries each task's
 * accuracy (a fraction), its answer tokens, its five depths and the mix;
 * the same folder under other tasks or keys is refused. */
static void test_ruler_length_study(void **state)
{
    if (!tu_have_shared("the length study with RULER's tasks")) return;
    char path[1200], cmd[4096];
    const char *cfg =
        "{\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"seeds\": [1], \"lengths\": [1, 2], \"layers\": 1, "
        "\"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 128, \"steps\": 20, \"batch\": 8, "
        "\"curve_every\": 10, \"eval_tokens\": 2048, \"passkey_trials\": 0, \"passkey_train\": 0, \"jobs\": 1, "
        "\"ruler_tasks\": [\"niah_single\", \"vt\", \"cwe\", \"kv\"], \"ruler_train\": 0.3333333, \"ruler_trials\": 2}";
    snprintf(path, sizeof path, "%s/ruler.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study ruler.json --length --data '%s/data' --out ru", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s", out);
    snprintf(path, sizeof path, "%s/ru/results.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1 << 16];
    const char *tasks[] = {"niah_single", "vt", "cwe", "kv"};
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line), *acc = cJSON_GetObjectItem(j, "ruler"),
              *part = cJSON_GetObjectItem(j, "ruler_part");
        cJSON *depths = cJSON_GetObjectItem(j, "ruler_depths");
        assert_int_equal(cJSON_GetArraySize(acc), 4);
        for (int t = 0; t < 4; t++) {
            double a = cJSON_GetObjectItem(acc, tasks[t])->valuedouble,
                   p = cJSON_GetObjectItem(part, tasks[t])->valuedouble;
            cJSON *d = cJSON_GetObjectItem(depths, tasks[t]);
            assert_true(a >= 0 && a <= 1 && p >= a && p <= 1);
            assert_int_equal(cJSON_GetArraySize(d), 5);
            double mean = 0;
            for (int k = 0; k < 5; k++) mean += cJSON_GetArrayItem(d, k)->valuedouble / 5;
            assert_true(fabs(mean - a) < 1e-4); /* the mean over depths, as written */
        }
        assert_true((float)cJSON_GetObjectItem(j, "ruler_train")->valuedouble == 0.3333333f);
        assert_int_equal(cJSON_GetObjectItem(j, "ruler_trials")->valueint, 2);
        cJSON_Delete(j);
        lines++;
    }
    fclose(f);
    assert_int_equal(lines, 2);
    snprintf(cmd, sizeof cmd,
             "cd '%s/ru' && grep -q \"^### gpt2: RULER's niah_single (prompts answered whole\" tables.md && "
             "grep -q '^| rope | [01]\\.[0-9][0-9] | [01]\\.[0-9][0-9] | [0-9a-z ()]* |$' tables.md && "
             "grep -q '^gpt2,rope,,256,ruler_kv,[01]\\.[0-9]*,0.000000,1,0,$' tables.csv && "
             "grep -q 'ruler_train)' tables.md",
             dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("RULER's tables: %s", out);
    check_effective_length(cfg);
    /* the same config again: every run done (its share read back as written) */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study ruler.json --length --data '%s/data' --out ru", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "1 already in ru/results.jsonl, 0 to go"))
        fail_msg("the same RULER config again: %s", out);
    const char *other = "{\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"seeds\": [1], \"lengths\": [1, 2], "
                        "\"layers\": 1, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 128, "
                        "\"steps\": 20, \"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, "
                        "\"passkey_trials\": 0, \"passkey_train\": 0, \"jobs\": 1, \"ruler_tasks\": [\"kv\"], "
                        "\"ruler_train\": 0.3333333, \"ruler_trials\": 2}";
    snprintf(path, sizeof path, "%s/ruler2.json", dir);
    assert_int_equal(tu_write_file(path, other, strlen(other)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study ruler2.json --length --data '%s/data' --out ru", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "line 1 was run with other \"ruler_tasks\""))
        fail_msg("other RULER tasks into the same folder: %s", out);
    /* keys from 6 fixed words: in the line and the tables' header; the folder refuses RULER's keys, and the
     * folder of RULER's keys refuses fixed words */
    char keyed[1024];
    snprintf(keyed, sizeof keyed, "%.*s, \"ruler_keys\": 6, \"ruler_key_form\": \"words\"}", (int)strlen(cfg) - 1, cfg);
    snprintf(path, sizeof path, "%s/ruler3.json", dir);
    assert_int_equal(tu_write_file(path, keyed, strlen(keyed)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study ruler3.json --length --data '%s/data' --out rk && grep -c '\"ruler_trials\": 2, "
             "\"ruler_keys\": 6, \"ruler_key_form\": \"words\", \"ruler\": {' rk/results.jsonl && grep -q "
             "'drawn from 6 fixed ones (ruler_keys) and written as lower-case words (ruler_key_form)' rk/tables.md",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "\n2\n")) fail_msg("RULER with fixed keys: %s", out);
    snprintf(keyed, sizeof keyed, "%.*s, \"ruler_keys\": 6}", (int)strlen(cfg) - 1, cfg); /* the same set as digits */
    snprintf(path, sizeof path, "%s/ruler4.json", dir);
    assert_int_equal(tu_write_file(path, keyed, strlen(keyed)), 0);
    const char *into[][2] = {{"ruler.json", "rk"}, {"ruler3.json", "ru"}, {"ruler4.json", "rk"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study %s --length --data '%s/data' --out %s", dir, POSEMB_BIN,
                 into[i][0], POSEMB_SHARED, into[i][1]);
        if (!tu_run(cmd, out, sizeof out) || !strstr(out, "or \"ruler_key_form\" than this config's"))
            fail_msg("%s into %s: %s", into[i][0], into[i][1], out);
    }
}

/* passkey_needle "once" and ruler_needle "twice": each line says so, as
 * does the tables' header; its n_train of 96 tokens holds the passkey's
 * prompt with the key said once (79 bytes) and not twice (102), so the
 * line's digits are numbers, which `posemb passkey --key-once` reads
 * again, and 90 tokens hold that prompt for --key-once alone; a folder of
 * either prompts refuses the other's config. */
static void test_needles_study(void **state)
{
    (void)state;
    if (!tu_have_shared("the length study's needles")) return;
    const char *base =
        "{\"pes\": [\"rope\"], \"tasks\": [\"gpt2\"], \"seeds\": [1], \"lengths\": [1], \"layers\": 1, "
        "\"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 96, \"steps\": 20, \"batch\": 8, "
        "\"curve_every\": 10, \"eval_tokens\": 2048, \"passkey_trials\": 2, \"jobs\": 1, "
        "\"ruler_tasks\": [\"niah_single\"], \"ruler_train\": 0.25, \"ruler_trials\": 2}";
    char path[1200], cmd[4096], cfg[1024], plain[1024]; /* plain: 96 tokens hold no passkey prompt to train */
    snprintf(cfg, sizeof cfg, "%.*s, \"passkey_needle\": \"once\", \"ruler_needle\": \"twice\"}", (int)strlen(base) - 1,
             base);
    snprintf(plain, sizeof plain, "%.*s, \"passkey_train\": 0}", (int)strlen(base) - 1, base);
    put_config("needles.json", cfg);
    put_config("plain.json", plain);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study needles.json --length --data '%s/data' --out nd && grep -c '\"ruler_trials\": 2, "
             "\"ruler_needle\": \"twice\", \"ruler\": {' nd/results.jsonl && grep -c '\"passkey_needle\": \"once\"' "
             "nd/results.jsonl && grep -q 'said its key once' nd/tables.md && grep -q 'said their value twice' "
             "nd/tables.md",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "\n1\n1\n")) fail_msg("the needles' study: %s", out);
    snprintf(path, sizeof path, "%s/nd/results.jsonl", dir);
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    cJSON *line = cJSON_Parse(text);
    cJSON *pk = cJSON_GetObjectItem(line, "passkey_digit_depths");
    assert_int_equal(cJSON_GetArraySize(pk), 5);
    snprintf(cmd, sizeof cmd,
             "'%s' passkey '%s/nd/models/gpt2-rope-s1' --lengths 96 --trials 2 --json --key-once --threads 1",
             POSEMB_BIN, dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("posemb passkey --key-once: %s", out);
    cJSON *again = cJSON_Parse(out), *d = cJSON_GetObjectItem(again, "passkey_digit_depths");
    if (cJSON_GetArraySize(d) != 5) fail_msg("posemb passkey --key-once: %s", out);
    for (int k = 0; k < 5; k++) {
        assert_true(cJSON_IsNumber(cJSON_GetArrayItem(pk, k))); /* 96 tokens hold the key said once, not twice */
        assert_float_equal(cJSON_GetArrayItem(d, k)->valuedouble, cJSON_GetArrayItem(pk, k)->valuedouble, 1e-4);
    }
    cJSON_Delete(again);
    /* 90 tokens hold the key said once (79) and not twice (102) */
    snprintf(cmd, sizeof cmd,
             "'%s' passkey '%s/nd/models/gpt2-rope-s1' --lengths 90 --trials 1 --json --key-once --threads 1",
             POSEMB_BIN, dir);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "\"passkey_context\": 90") || strstr(out, "null") ||
        !strstr(out, "\"passkey_needle\": \"once\"}"))
        fail_msg("--key-once at 90 tokens: %s", out);
    snprintf(cmd, sizeof cmd, "'%s' passkey '%s/nd/models/gpt2-rope-s1' --lengths 90 --trials 1 --threads 1",
             POSEMB_BIN, dir);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "a passkey prompt needs at least 102 tokens"))
        fail_msg("the key said twice at 90 tokens: %s", out);
    cJSON_Delete(line);
    snprintf(cfg, sizeof cfg, "%.*s, \"passkey_needle\": \"once\"}", (int)strlen(base) - 1, base);
    put_config("once.json", cfg); /* the passkey's the same, RULER's needle not */
    const char *into[][2] = {{"plain.json", "nd"}, {"needles.json", "pl"}, {"once.json", "nd"}, {"once.json", "pl"}};
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study plain.json --length --data '%s/data' --out pl", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the plain study: %s", out);
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study %s --length --data '%s/data' --out %s", dir, POSEMB_BIN,
                 into[i][0], POSEMB_SHARED, into[i][1]);
        if (!tu_run(cmd, out, sizeof out) || !strstr(out, "another \"passkey_needle\" or \"ruler_needle\""))
            fail_msg("%s into %s: %s", into[i][0], into[i][1], out);
    }
}

/* The study's perplexity at 256 of the run in RUN whose line matches
 * GREP, against `posemb perplexity` on its saved folder models/FOLDER:
 * equal, so the saved config.json makes the trained model. */
static void check_read_back(const char *run, const char *grep, const char *folder, const char *what)
{
    char cmd[4096];
    double study = -1, again = -2;
    snprintf(cmd, sizeof cmd, "cd '%s/%s' && grep '\"eval_len\": 256' results.jsonl | grep '%s'", dir, run, grep);
    const char *at = tu_run(cmd, out, sizeof out) ? NULL : strstr(out, "\"perplexity\": ");
    if (at) study = strtod(at + 14, NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' perplexity \"$(ls -d '%s'/%s/models/%s)\" --data '%s/data/wikitext-2/wiki.test.tokens' "
             "--tokens 2048 --lengths 256 --json --threads 1",
             POSEMB_BIN, dir, run, folder, POSEMB_SHARED);
    at = tu_run(cmd, out, sizeof out) ? NULL : strstr(out, "\"perplexity\": ");
    if (at) again = strtod(at + 14, NULL);
    printf("%s at 256: the study's perplexity %.6f, read back %.6f\n", what, study, again);
    assert_true(study > 1 && fabs(again - study) <= 1e-5 * study);
}

/* Task llama4: Llama 4's dense text decoder at the study's sizes, iRoPE as
 * a spec (RoPE on layers 0-2, the temperature on NoPE layer 3; pairing
 * its first option, which the HF keys must still say) with
 * chunks of 16 from "model". Its config.json is Llama4TextConfig's own
 * (every fourth layer NoPE, chunked attention on the RoPE layers, the
 * temperature's keys), and read back by `posemb perplexity` it gives the
 * study's perplexity: the saved keys make the trained PE. Plain `rope` on
 * the same decoder stays itself (posemb_pe), not the iRoPE Llama 4's keys
 * would make. */
static void test_llama4_length_task(void **state)
{
    if (!tu_have_shared("the length study's llama4 task")) return;
    const char *cfg =
        "{\"pes\": [\"rope:pairing=interleaved,layers=0-2+temperature:attn_scale=0.1,"
        "floor_scale=16,layers=3\", \"rope\"], \"tasks\": [\"llama4\"], \"seeds\": [1], \"lengths\": [1, 4], "
        "\"layers\": 4, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, "
        "\"steps\": 10, \"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, "
        "\"passkey_trials\": 0, \"passkey_train\": 0, \"jobs\": 1, \"model\": "
        "{\"attention_chunk_size\": 16}}";
    if (run_study("l4.json", cfg, "l4")) fail_msg("%s", out);
    char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        "cd '%s/l4' && test $(grep -c '\"task\": \"llama4\"' results.jsonl) = 4 && "
        "grep -q '\"posemb_pe\":.*\"rope\",' models/llama4-rope-s1/config.json && c=$(ls -d "
        "models/llama4-rope_*-s1) && "
        "tr -d ' \\t\\n' < $c/config.json > flat && grep -q '\"model_type\":\"llama4_text\"' flat && "
        "grep -q '\"no_rope_layers\":\\[1,1,1,0\\]' flat && grep -q '\"attention_chunk_size\":16,' flat && "
        "grep -q '\"layer_types\":\\[\"chunked_attention\",\"chunked_attention\",\"chunked_attention\",'"
        "'\"full_attention\"\\]' flat && grep -q '\"attn_temperature_tuning\":true' flat && "
        "grep -q '\"floor_scale\":16,' flat && grep -q '\"head_dim\":16,' flat && "
        "grep -q '\"use_qk_norm\":true' flat && grep -q '\"rms_norm_eps\":1e-05,' flat && ! grep -q posemb_pe flat",
        dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the llama4 run's lines and config.json: %s", out);
    check_read_back("l4", "temperature", "llama4-rope_*-s1", "llama4");
}

/* Task smollm3 with Command A's interleaving: RoPE and windows of 16 on
 * layers 0-2, layer 3 NoPE and global, written in SmolLM3's keys (and the
 * head untied, as the llama task's). Read back by `posemb perplexity` at
 * 256, past the windows, it gives the study's perplexity: the saved keys
 * make the trained model, windows included. Plain `rope` on the same
 * decoder stays itself (posemb_pe). */
static void test_smollm3_length_task(void **state)
{
    if (!tu_have_shared("the length study's smollm3 task")) return;
    const char *cfg = "{\"pes\": [\"rope:layers=0-2\", \"rope\"], \"tasks\": [\"smollm3\"], \"seeds\": [1], "
                      "\"lengths\": [1, 4], \"layers\": 4, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, "
                      "\"n_train\": 64, \"steps\": 10, \"batch\": 8, \"curve_every\": 10, \"eval_tokens\": 2048, "
                      "\"passkey_trials\": 0, \"passkey_train\": 0, \"jobs\": 1, \"model\": "
                      "{\"use_sliding_window\": true, \"sliding_window\": 16, \"layer_types\": [\"sliding_attention\", "
                      "\"sliding_attention\", \"sliding_attention\", \"full_attention\"]}}";
    if (run_study("s3.json", cfg, "s3")) fail_msg("%s", out);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s/s3' && test $(grep -c '\"task\": \"smollm3\"' results.jsonl) = 4 && "
             "grep -q '\"posemb_pe\":.*\"rope\",' models/smollm3-rope-s1/config.json && c=$(ls -d "
             "models/smollm3-rope_*-s1) && tr -d ' \\t\\n' < $c/config.json > flat && "
             "grep -q '\"model_type\":\"smollm3\"' flat && grep -q '\"no_rope_layers\":\\[1,1,1,0\\]' flat && "
             "grep -q '\"sliding_window\":16,' flat && grep -q '\"use_sliding_window\":true' flat && "
             "grep -q '\"layer_types\":\\[\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",'"
             "'\"full_attention\"\\]' flat && grep -q '\"tie_word_embeddings\":false' flat && "
             "grep -q '\"rope_theta\":10000' flat && ! grep -q posemb_pe flat",
             dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("the smollm3 run's lines and config.json: %s", out);
    check_read_back("s3", "layers=0-2", "smollm3-rope_*-s1", "smollm3 (Command A's layers)");
}

static void test_length_refusals(void **state)
{
    char path[1200], cmd[4096];
    const char *bad[][2] = {
        {"{\"extend_factors\": [2], \"extend_scalings\": [\"yarn\", \"yarn\"]}",
         "\"extend_scalings\" has 'yarn' twice"},
        {"{\"extend_factors\": [2, 2]}", "\"extend_factors\" has 2 twice"},
        {"{\"extend_steps\": 100}", "extend_* keys without \"extend_factors\": nothing is fine-tuned"},
        {"{\"extend_scalings\": [\"pi\"]}", "'pi' is not none, linear, ntk, dynamic, yarn, llama3 or drope"},
        {"{\"tasks\": [\"bert\"]}", "tasks are decoders, gpt2, llama, llama4 or smollm3, not 'bert'"},
        {"{\"rope_scalings\": [\"fast\"]}", "'fast' is not linear, ntk, dynamic, yarn, llama3 or string"},
        {"{\"tokenizer\": \"chars\"}", "\"tokenizer\" must be \"bytes\" or \"gpt2\""},
        {"{\"passkey_train\": 1}", "\"passkey_train\" must be a number in [0, 1)"},
        {"{\"model\": [1]}", "\"model\" must be an object of config.json keys"},
        {"{\"model\": {\"initializer_range\": 0.05}}", "\"model\": \"initializer_range\" is the study's to set"},
        {"{\"model\": {\"no_rope_layers\": [1, 0, 1, 0]}}", "\"model\": \"no_rope_layers\" is the study's to set"},
        {"{\"model\": {\"attn_temperature_tuning\": false}}",
         "\"model\": \"attn_temperature_tuning\" is the study's to set"},
        {"{\"ruler_tasks\": [\"niah\"]}", "\"ruler_tasks\": no task \"niah\" (niah_single, "},
        {"{\"ruler_train\": 0.2}", "\"ruler_train\" 0.2 names no \"ruler_tasks\" to train"},
        {"{\"ruler_keys\": 8}", "\"ruler_keys\" or \"ruler_key_form\" without \"ruler_tasks\""},
        {"{\"ruler_keys\": 33, \"ruler_tasks\": [\"kv\"]}", "\"ruler_keys\" must be an integer in [0, 32]"},
        {"{\"ruler_keys\": 4, \"ruler_tasks\": [\"kv\", \"vt\"]}", "\"ruler_keys\" 4: vt needs at least 6 fixed keys"},
        {"{\"ruler_key_form\": \"letters\", \"ruler_tasks\": [\"kv\"]}",
         "\"ruler_key_form\" must be \"ruler\" or \"words\""},
        {"{\"ruler_key_form\": \"words\", \"ruler_tasks\": [\"cwe\", \"fwe\"]}",
         "\"ruler_keys\" and \"ruler_key_form\": no task of \"ruler_tasks\" has keys"},
        {"{\"ruler_threshold\": 0.8}", "\"ruler_threshold\" without \"ruler_tasks\""},
        {"{\"ruler_threshold\": 0, \"ruler_tasks\": [\"kv\"]}", "\"ruler_threshold\" must be a number in (0, 1]"},
        {"{\"ruler_threshold\": 1.01, \"ruler_tasks\": [\"kv\"]}", "\"ruler_threshold\" must be a number in (0, 1]"},
        {"{\"ruler_threshold\": \"0.8\", \"ruler_tasks\": [\"kv\"]}", "\"ruler_threshold\" must be a number in (0, 1]"},
        {"{\"passkey_needle\": \"thrice\"}", "\"passkey_needle\" must be \"twice\" or \"once\""},
        {"{\"ruler_needle\": \"twice\"}", "\"ruler_needle\" without \"ruler_tasks\""},
        {"{\"ruler_needle\": \"twice\", \"ruler_tasks\": [\"niah_single\", \"vt\"]}",
         "\"ruler_needle\" \"twice\": vt has no \"key K = V.\" needle to say twice"},
        {"{\"passkey_needle\": \"once\", \"passkey_train\": 0, \"passkey_trials\": 0}",
         "\"passkey_needle\" applies to the length study's passkey"},
        {"{\"passkey_train\": 0.1, \"n_train\": 64, \"lengths\": [1, 2], \"eval_tokens\": 4096}",
         "passkey_train: a passkey prompt needs 102 tokens, more than n_train 64"},
        {"{\"eval_tokens\": 100}", "eval_tokens 100 is less than one window"},
        {"{\"ruler_tasks\": [\"vt\"], \"ruler_train\": 0.2, \"passkey_train\": 0, \"n_train\": 64, \"lengths\": [1, "
         "2], \"eval_tokens\": "
         "4096}",
         "ruler_train: vt's prompts do not fit in n_train 64 tokens"},
        {"{\"model\": {\"rms_norm_eps\": 1e-5}}",
         "\"model\": \"rms_norm_eps\" is not a setting posemb's gpt2 config takes"},
        {"{\"extend_factors\": [2], \"pes\": [\"ape\"]}", "\"extend_factors\": no \"rope\" among the PEs"},
        {"{\"ruler_tasks\": [\"niah_single\"], \"ruler_needle\": \"twice\", \"ruler_train\": 0.2, \"passkey_train\": "
         "0, \"n_train\": 64, \"lengths\": [1, 2], \"eval_tokens\": 4096}", /* said once, it fits (34 bytes); twice: 65 */
         "ruler_train: niah_single's prompts do not fit in n_train 64 tokens"}};
    int shared = access(POSEMB_SHARED "/data", R_OK) == 0; /* the last six cases read the data folder */
    for (int i = 0; i < 25 + 6 * shared; i++) {
        snprintf(path, sizeof path, "%s/bad.json", dir);
        assert_int_equal(tu_write_file(path, bad[i][0], strlen(bad[i][0])), 0);
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study bad.json --length --data '%s' --out c", dir, POSEMB_BIN,
                 shared ? POSEMB_SHARED "/data" : dir);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc == 0 || !strstr(out, bad[i][1])) fail_msg("%s: exit %d: %s", bad[i][0], rc, out);
    }
    snprintf(path, sizeof path, "%s/bad.json", dir); /* the synthetic study fine-tunes nothing */
    assert_int_equal(tu_write_file(path, "{\"extend_factors\": [2]}", 23), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study bad.json --out c", dir, POSEMB_BIN);
    int code = tu_run(cmd, out, sizeof out);
    if (code == 0 || !strstr(out, "the extend_* keys apply to the length study (--length) only"))
        fail_msg("extend_factors in the synthetic study: exit %d: %s", code, out);
    snprintf(cmd, sizeof cmd, "'%s' study --length", POSEMB_BIN);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 2 || !strstr(out, "--length needs --data")) fail_msg("--length alone: exit %d: %s", rc, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_tokenizer),      cmocka_unit_test(test_passkey_prompt),
        cmocka_unit_test(test_passkey_mix),          cmocka_unit_test(test_passkey_copy_model),
        cmocka_unit_test(test_passkey_lookup_model), cmocka_unit_test(test_tiny_length_study),
        cmocka_unit_test(test_llama4_length_task),   cmocka_unit_test(test_smollm3_length_task),
        cmocka_unit_test(test_sink_curve),           cmocka_unit_test(test_length_welch),
        cmocka_unit_test(test_length_refusals),      cmocka_unit_test(test_ruler_length_study),
        cmocka_unit_test(test_needles_study),        cmocka_unit_test(test_length_extend),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
