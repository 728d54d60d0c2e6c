/* posemb analyze, probe and compare as a user runs them: the JSON contract
 * of ANALYSIS.md section 6, the numbers closed forms fix, the files, and
 * one-line errors. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

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

static int posemb(const char *fmt, const char *a1, const char *a2)
{
    char args[2048], cmd[4096];
    snprintf(args, sizeof args, fmt, a1, a2);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

static cJSON *read_json(const char *name)
{
    char path[1200], *text = malloc(1 << 20);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (!cJSON_IsNumber(x)) fail_msg("no number %s.%s", a, b ? b : "");
    return x->valuedouble;
}

static int exists(const char *name)
{
    char path[1200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

/* Without --heads a built-in PE takes 12 heads or the most below 12 that
 * divide the width (8 at 128): the sinusoid, which has no heads, gives
 * the indicators of any valid --heads, and ALiBi those of --heads 8. */
static void test_analyze_default_heads(void **state)
{
    (void)state;
    static const char *const runs[][2] = {{"sin", "4"}, {"alibi", "8"}};
    for (int r = 0; r < 2; r++) {
        char cmd[256], out0[64], outh[64];
        snprintf(out0, sizeof out0, "dh_%s", runs[r][0]);
        snprintf(outh, sizeof outh, "dh_%s_h%s", runs[r][0], runs[r][1]);
        snprintf(cmd, sizeof cmd, "analyze %s --len 256 --dim 128 --no-figures --out %%s", runs[r][0]);
        assert_int_equal(posemb(cmd, out0, ""), 0);
        snprintf(cmd, sizeof cmd, "analyze %s --len 256 --dim 128 --heads %s --no-figures --out %%s", runs[r][0],
                 runs[r][1]);
        assert_int_equal(posemb(cmd, outh, ""), 0);
        snprintf(cmd, sizeof cmd, "%s/indicators.json", out0);
        cJSON *a = read_json(cmd);
        snprintf(cmd, sizeof cmd, "%s/indicators.json", outh);
        cJSON *b = read_json(cmd);
        int n = 0;
        for (const cJSON *x = a->child; x; x = x->next) {
            if (!strcmp(x->string, "provenance")) continue; /* names the heads */
            if (!cJSON_Compare(x, cJSON_GetObjectItem(b, x->string), 1))
                fail_msg("%s: \"%s\" differs without --heads", runs[r][0], x->string);
            n++;
        }
        printf("%s --dim 128: %d entries of indicators.json equal those of --heads %s\n", runs[r][0], n, runs[r][1]);
        assert_true(n >= 6);
        assert_non_null(cJSON_GetObjectItem(a, r ? "bias" : "similarity")); /* compared above */
        assert_non_null(strstr(cJSON_GetObjectItem(a, "provenance")->valuestring, "width 128, 8 heads"));
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}

/* sin: TI = SYM = 1, the keys of a table, none of a model's. */
static void test_analyze_sin(void **state)
{
    assert_int_equal(posemb("analyze sin --len 128 --dim 64 --heads 4 --out a1 --svg", "", ""), 0);
    cJSON *j = read_json("a1/indicators.json");
    assert_string_equal(cJSON_GetObjectItem(j, "spec")->valuestring,
                        "sin:layout=interleaved,base=10000,integration=add");
    assert_int_equal((int)num(j, "n", NULL), 128);
    assert_int_equal((int)num(j, "dim", NULL), 64);
    assert_int_equal((int)num(j, "K", NULL), 32);
    TU_CLOSE(num(j, "similarity", "ti"), 1.0, 1e-5, 0, "sin TI", 0);
    /* over 16 positions the band is every distance, 1..15, and the file says so */
    assert_int_equal(posemb("analyze sin --len 16 --dim 64 --heads 4 --no-figures --out a1s", "", ""), 0);
    cJSON *s16 = read_json("a1s/indicators.json");
    assert_int_equal((int)num(s16, "K", NULL), 15);
    cJSON_Delete(s16);
    TU_CLOSE(num(j, "similarity", "sym"), 1.0, 1e-6, 0, "sin SYM", 0);
    const cJSON *reg = cJSON_GetObjectItem(j, "regress");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(reg, "mae_by_range")), 1);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(reg, "ranges"), 0), 1)->valueint, 127);
    assert_true(num(j, "regress_cv", "mae") >= 0 && (int)num(j, "regress_cv", "folds") == 5);
    assert_true(num(j, "relative", "error") >= 0 && num(j, "relative", "error") <= 1);
    assert_null(cJSON_GetObjectItem(j, "identical")); /* absent, never null-filled */
    assert_null(cJSON_GetObjectItem(j, "correlation"));
    cJSON_Delete(j);
    const char *files[] = {"a1/report.html",    "a1/similarity.csv", "a1/similarity.png",
                           "a1/similarity.svg", "a1/regress.csv",    "a1/regress.png",
                           "a1/psi.csv",        "a1/clock.png",      "a1/dims.csv"};
    for (int i = 0; i < 9; i++)
        if (!exists(files[i])) fail_msg("missing %s", files[i]);
    assert_non_null(strstr(out, "similarity (dot)"));
}

/* M-RoPE's kernel over an image's patches: kernel_grid.csv, 31 x 31 offsets, its cell (dx, dy) the sum over
 * pairs of cos(w_m offset) of the pair's axis (pairs 0-1 temporal: offset 0; 2-4 height: dy; 5-7 width: dx). */
static void test_analyze_patch_grid(void **state)
{
    (void)state;
    assert_int_equal(posemb("analyze 'rope:mrope=2|3|3' --len 64 --dim 64 --heads 4 --out am", "", ""), 0);
    assert_true(exists("am/kernel_grid.png"));
    char path[1200];
    snprintf(path, sizeof path, "%s/am/kernel_grid.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static float grid[31][31];
    int rows = 0;
    for (; rows < 32; rows++) {
        int c = 0;
        for (; c < 31 && fscanf(f, "%f%*[,]", &grid[rows < 31 ? rows : 30][c]) == 1; c++) {}
        if (c == 0) break;
        assert_int_equal(c, 31);
    }
    fclose(f);
    assert_int_equal(rows, 31);
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -3; dx <= 3; dx += 3) {
            double want = 0;
            for (int m = 0; m < 8; m++) want += cos(pow(10000.0, -2.0 * m / 16) * (m < 2 ? 0 : m < 5 ? dy : dx));
            TU_CLOSE(grid[dy + 15][dx + 15], want, 1e-4, 1e-5, "kernel_grid", (dy + 15) * 31 + dx + 15);
        }
    assert_non_null(strstr(out, "bias / kernel"));
}

/* 2D axial RoPE's kernel over the grid: pairs k < d/4 turn by x theta^(-4k/d), the next d/4 by y (theta 100), so
 * cell (dx, dy) is sum_k cos(w_k dx) + cos(w_k dy), w_k = 100^(-4k/16) for head width 16. */
static void test_analyze_rope2d_grid(void **state)
{
    (void)state;
    assert_int_equal(posemb("analyze 'rope2d:grid=8' --len 64 --dim 64 --heads 4 --out ar --no-figures", "", ""), 0);
    char path[1200];
    snprintf(path, sizeof path, "%s/ar/kernel_grid.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static float grid[15][15];
    for (int r = 0; r < 15; r++)
        for (int c = 0; c < 15; c++) assert_int_equal(fscanf(f, "%f%*[,\n]", &grid[r][c]), 1);
    fclose(f);
    for (int dy = -7; dy <= 7; dy++)
        for (int dx = -7; dx <= 7; dx++) {
            double want = 0;
            for (int k = 0; k < 4; k++) {
                double w = pow(100.0, -4.0 * k / 16);
                want += cos(w * dx) + cos(w * dy);
            }
            TU_CLOSE(grid[dy + 7][dx + 7], want, 1e-4, 1e-5, "rope2d kernel_grid", (dy + 7) * 15 + dx + 7);
        }
}

/* Data-dependent PEs have no fixed matrix: the reason in the JSON and on the terminal; a decoder-only PE needs
 * --causal as a spec; a trained model's attention profile is the per-input analysis. */
static void test_analyze_data_dependent(void **state)
{
    (void)state;
    assert_int_equal(posemb("analyze path --len 16 --dim 32 --heads 2 --out ap0", "", ""), 2);
    assert_non_null(strstr(out, "defined for decoders"));
    const char *pes[] = {"stickbreaking", "path", "fox"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(
            posemb("analyze %s --causal --len 16 --dim 32 --heads 2 --no-figures --out ad-%s", pes[i], pes[i]), 0);
        assert_non_null(strstr(out, "nothing fixed to analyse"));
        char name[64];
        snprintf(name, sizeof name, "ad-%s/indicators.json", pes[i]);
        cJSON *j = read_json(name);
        const cJSON *why = cJSON_GetObjectItem(j, "nothing_fixed");
        assert_true(cJSON_IsString(why));
        assert_non_null(strstr(why->valuestring, "data-dependent"));
        assert_null(cJSON_GetObjectItem(j, "bias"));
        assert_non_null(strstr(cJSON_GetObjectItem(j, "provenance")->valuestring, "causal"));
        cJSON_Delete(j);
    }
    assert_int_equal(posemb("analyze ssmax --len 16 --dim 32 --heads 2 --no-figures --out ad-ss", "", ""), 0);
    assert_non_null(strstr(out, "a logit scale is a factor per position"));
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\na\\nb\\nc\\n' > v.txt && "
             "for i in $(seq 200); do printf 'a b c b a c '; done > c.txt && '%s' train --model gpt2 --pe "
             "stickbreaking --data c.txt --vocab v.txt --out sbrun --layers 1 --hidden 16 --heads 2 --seq-len 16 "
             "--batch-size 4 --steps 2 --threads 1 > /dev/null && '%s' analyze sbrun --words 5 --no-figures --out ad-m",
             dir, POSEMB_BIN, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "per input: where each head attends on"));
    assert_true(exists("ad-m/attention_profile.csv"));
    cJSON *j = read_json("ad-m/indicators.json");
    assert_non_null(strstr(cJSON_GetObjectItem(j, "nothing_fixed")->valuestring, "data-dependent"));
    assert_non_null(cJSON_GetObjectItem(j, "attention"));
    cJSON_Delete(j);
}

/* A model folder: identical words and correlation appear; none is constant. */
static void test_analyze_model(void **state)
{
    char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\na\\nb\\nc\\n' > v.txt && "
        "for i in $(seq 200); do printf 'a b c b a c '; done > c.txt && '%s' train --model bert --pe ape --data c.txt "
        "--vocab v.txt --out run --layers 1 --hidden 16 --heads 2 --seq-len 16 --batch-size 4 --steps 4 --threads 1",
        dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(posemb("analyze run --words 20 --out a2", "", ""), 0);
    cJSON *j = read_json("a2/indicators.json");
    assert_non_null(cJSON_GetObjectItem(j, "identical"));
    assert_non_null(cJSON_GetObjectItem(j, "correlation"));
    assert_non_null(cJSON_GetObjectItem(j, "similarity"));
    assert_int_equal((int)num(j, "n", NULL), 16);
    cJSON_Delete(j);
    assert_true(exists("a2/identical.png") && exists("a2/identical_softmax.csv") && exists("a2/correlation.csv"));
    /* where attention goes: one mean distance and one first-token mass per layer x head, within their ranges */
    const cJSON *att = cJSON_GetObjectItem(j = read_json("a2/indicators.json"), "attention");
    const cJSON *dist = cJSON_GetObjectItem(att, "mean_distance"), *sink = cJSON_GetObjectItem(att, "first_token_mass");
    assert_int_equal(cJSON_GetArraySize(dist), 2);
    assert_int_equal(cJSON_GetArraySize(sink), 2);
    for (int h = 0; h < 2; h++) {
        double d = cJSON_GetArrayItem(dist, h)->valuedouble, s = cJSON_GetArrayItem(sink, h)->valuedouble;
        assert_true(d > 0 && d < 15 && s > 0 && s < 1);
    }
    cJSON_Delete(j);
    assert_true(exists("a2/attention_profile.csv") && exists("a2/attention_distance.png"));
    /* a model against itself: JS 0 on every layer and head */
    assert_int_equal(posemb("compare run run --words 20 --out c2", "", ""), 0);
    char path[1200], line[256] = "";
    snprintf(path, sizeof path, "%s/c2/attention_js.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "0,0\n");
    /* a rotary model: the norm of each of its d/2 = 4 rotation pairs per layer x head (2 rows) */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' train --model bert --pe rope --data c.txt --vocab v.txt --out rrun --layers 1 "
             "--hidden 16 --heads 2 --seq-len 16 --batch-size 4 --steps 2 --threads 1 && '%s' analyze rrun --words 5 "
             "--out a3 && test $(wc -l < a3/rotary_q.csv) = 2 && test $(head -1 a3/rotary_q.csv | tr ',' '\\n' | "
             "wc -l) = 4",
             dir, POSEMB_BIN, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
}

static void test_probe(void **state)
{
    assert_int_equal(posemb("probe psi sin --len 128", "", ""), 0);
    assert_non_null(strstr(out, "psi(m) falls strictly up to m = 43 (384 frequencies)"));
    assert_int_equal(posemb("probe similarity alibi --len 64 --dim 64 --heads 8 --json", "", ""), 2);
    assert_non_null(strstr(out, "has no table of position vectors"));
    assert_int_equal(posemb("probe similarity rpe --len 64 --dim 64 --heads 4 --json", "", ""), 0);
    assert_non_null(strstr(out, "\"probe\": \"similarity of the relative vectors\""));
    assert_int_equal(posemb("probe regress sin --len 256 --dim 64 --heads 4", "", ""), 0);
    assert_non_null(strstr(out, "regress: mean |error|"));
    assert_non_null(strstr(out, "128-255"));
    assert_int_equal(posemb("probe frobnicate sin", "", ""), 2);
    assert_int_equal(posemb("probe identical sin", "", ""), 2);
    assert_non_null(strstr(out, "is not a model folder"));
}

static void test_compare(void **state)
{
    assert_int_equal(posemb("compare sin alibi rpe --len 64 --dim 64 --heads 4 --out cmp", "", ""), 0);
    cJSON *j = read_json("cmp/compare.json");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sources")), 3);
    const cJSON *alibi = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "sources"), 1);
    assert_string_equal(cJSON_GetObjectItem(alibi, "matrix")->valuestring, "bias");
    TU_CLOSE(cJSON_GetObjectItem(alibi, "mono")->valuedouble, 1.0, 1e-9, 0, "alibi MONO", 0);
    cJSON_Delete(j);
    assert_true(exists("cmp/report.html") && exists("cmp/1-sin/similarity.png") && exists("cmp/2-alibi/bias.png"));
    assert_int_equal(posemb("compare sin", "", ""), 2);
}

static void test_errors(void **state)
{
    struct {
        const char *args, *needle;
        int rc;
    } cases[] = {
        {"analyze", "missing SOURCE", 2},
        {"analyze nosuchpe", "unknown PE 'nosuchpe'", 2},
        {"analyze x.safetensors", "name the table with --tensor", 2},
        {"analyze /nonexistent.safetensors --tensor wpe.weight", "/nonexistent.safetensors", 1},
        {"analyze sin --len 1", "--len: 1 is outside", 2},
        {"analyze run --evolution --out ev", "no checkpoints", 2},
        {"analyze sin --bogus", "unknown flag '--bogus'", 2},
    };
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/run'; mkdir -p '%s/run'", dir, dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    for (int i = 0; i < 7; i++) {
        int rc = posemb(cases[i].args, "", "");
        if (rc != cases[i].rc || !strstr(out, cases[i].needle)) fail_msg("'%s': exit %d: %s", cases[i].args, rc, out);
    }
}

/* GPT-2's real position table, when ../shared is here. */
static void test_gpt2_wpe(void **state)
{
    if (!tu_have_shared("GPT-2 wpe analysis")) return;
    char args[1200];
    snprintf(args, sizeof args, "analyze %s/models/gpt2/gpt2_pe.safetensors --tensor wpe.weight --out gw",
             POSEMB_SHARED);
    assert_int_equal(posemb(args, "", ""), 0);
    cJSON *j = read_json("gw/indicators.json");
    assert_int_equal((int)num(j, "n", NULL), 1024);
    assert_int_equal((int)num(j, "dim", NULL), 768);
    printf("GPT-2 wpe: similarity TI %.3f MONO %.3f SYM %.3f window %d; regression mae %.2f; 5-fold %.2f; order error "
           "%.3f\n",
           num(j, "similarity", "ti"), num(j, "similarity", "mono"), num(j, "similarity", "sym"),
           (int)num(j, "similarity", "window"), num(j, "regress", "mae_all"), num(j, "regress_cv", "mae"),
           num(j, "relative", "error"));
    assert_true(num(j, "regress", "mae_all") < 50); /* GPT-2's table encodes position linearly to a good degree */
    cJSON_Delete(j);
}

/* --text: the attention analyses read windows of a text. A NoPE encoder on
 * one token repeated has identical states everywhere, so every query spreads
 * its attention evenly over the n keys: mean distance (1/n^2) sum_ij |i - j|
 * = (n^2 - 1) / (3n), 5.3125 at n = 16, and first-token mass 1/n; on random
 * tokens it is not even. Runs after test_analyze_model (v.txt, c.txt). */
static void test_analyze_text(void **state)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for i in $(seq 300); do printf 'a '; done > aaa.txt && printf 'a a a' > short.txt && '%s' "
             "train --model bert --pe none --data c.txt --vocab v.txt --out nrun --layers 2 --hidden 16 --heads 2 "
             "--seq-len 16 --batch-size 4 --steps 3 --threads 1",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *runs[2] = {"analyze nrun --words 5 --text aaa.txt --out t1", "analyze nrun --words 5 --out t2"};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(posemb(runs[k], "", ""), 0);
        cJSON *j = read_json(k ? "t2/indicators.json" : "t1/indicators.json");
        const cJSON *att = cJSON_GetObjectItem(j, "attention");
        assert_string_equal(cJSON_GetObjectItem(att, "inputs")->valuestring,
                            k ? "seeded random tokens of the vocabulary" : "windows of the text");
        assert_int_equal((int)num(att, "sequences", NULL), 8);
        assert_int_equal((int)num(att, "length", NULL), 16);
        const cJSON *dist = cJSON_GetObjectItem(att, "mean_distance"),
                    *sink = cJSON_GetObjectItem(att, "first_token_mass");
        assert_int_equal(cJSON_GetArraySize(dist), 4);
        double off = 0;
        for (int h = 0; h < 4; h++) {
            double d = cJSON_GetArrayItem(dist, h)->valuedouble, f = cJSON_GetArrayItem(sink, h)->valuedouble;
            if (!k) TU_CLOSE(d, 255.0 / 48, 1e-4, 0, "even attention's mean distance", h);
            if (!k) TU_CLOSE(f, 1.0 / 16, 1e-5, 0, "even attention's first-token mass", h);
            off += fabs(d - 255.0 / 48);
        }
        if (k) assert_true(off > 1e-3); /* random tokens: not even */
        cJSON_Delete(j);
    }
    /* two different NoPE encoders both attend evenly on the repeated token: JS 0 on every layer and head, where
     * random tokens tell them apart; a model of another tokenizer is refused */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' train --model bert --pe none --data c.txt --vocab v.txt --out nrun2 --layers 2 "
             "--hidden 16 --heads 2 --seq-len 16 --batch-size 4 --steps 9 --seed 5 --threads 1 && mkdir -p other && "
             "cp nrun2/config.json nrun2/model.safetensors other/ && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n"
             "[MASK]\\na\\nc\\nb\\n' > other/vocab.txt",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(posemb(k ? "compare nrun nrun2 --words 5 --out t3r"
                                  : "compare nrun nrun2 --text aaa.txt "
                                    "--words 5 --out t3",
                                "", ""),
                         0);
        char path[1200], line[256] = "", *end;
        snprintf(path, sizeof path, "%s/%s/attention_js.csv", dir, k ? "t3r" : "t3");
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof line, f));
        fclose(f);
        double sum = 0;
        for (char *p = line; *p && *p != '\n'; p = *end == ',' ? end + 1 : end) sum += strtod(p, &end);
        if (k) assert_true(sum > 1e-6); /* random tokens: the models differ (2.4e-5 here) */
        else TU_CLOSE(sum, 0, 1e-9, 0, "JS on the repeated token", 0);
    }
    snprintf(cmd, sizeof cmd, "grep -q 'windows of the text' '%s/t3/report.html'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(posemb("compare nrun other --text aaa.txt --words 5 --out t3o", "", ""), 2);
    assert_non_null(strstr(out, "other's tokenizer is not nrun's"));
    snprintf(cmd, sizeof cmd, "test ! -e '%s/t3o'", dir); /* refused before anything is written */
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* a text shorter than one window, a PE spec, a missing file: one line each, no crash */
    static const struct {
        const char *args, *says;
        int rc;
    } bad[3] = {{"analyze nrun --words 5 --text short.txt --out t4", "less than 1 window of 16", 2},
                {"analyze sin --text aaa.txt --out t5", "not a model folder", 2},
                {"analyze nrun --text missing.txt --out t6", "missing.txt", 1}};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(posemb(bad[k].args, "", ""), bad[k].rc);
        if (!strstr(out, bad[k].says)) fail_msg("%s: no '%s' in: %s", bad[k].args, bad[k].says, out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analyze_sin),
        cmocka_unit_test(test_analyze_default_heads),
        cmocka_unit_test(test_analyze_model),
        cmocka_unit_test(test_analyze_text),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_gpt2_wpe),
        cmocka_unit_test(test_analyze_patch_grid),
        cmocka_unit_test(test_analyze_rope2d_grid),
        cmocka_unit_test(test_analyze_data_dependent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
