/* The study end to end: two PEs on one task with two seeds, once straight
 * and once killed and resumed, give the same results.jsonl (timings
 * aside); the tables and report are written; synthetic tasks are what
 * they say; a bad config is one clear error. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "posemb/model.h"
#include "study/study.h"
#include "study/synthetic.h"
#include "testutil.h"

static char *dir;
static char out[1 << 15];

static int setup(void **state)
{
    dir = tu_tmpdir();
    char path[1200];
    const char *cfg =
        "{\"pes\": [\"none\", \"ape\"], \"tasks\": [\"order\"], \"seeds\": [1, 2], \"lengths\": [1, 2], "
        "\"n_train\": 16, \"steps\": 60, \"batch\": 16, \"eval_examples\": 64, \"curve_every\": 20, \"jobs\": 1}";
    snprintf(path, sizeof path, "%s/cfg.json", dir);
    return tu_write_file(path, cfg, strlen(cfg));
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    free(dir);
    return 0;
}

/* run's results.jsonl lines without their timings, sorted, joined. */
static char *canonical(const char *run)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
    return tu_results_canonical(path);
}

/* Starts `posemb study ARGS --out RUN` in dir and kills it once RUN's results hold `lines` lines. */
static void test_resume_same_results(void **state)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out a", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(tu_count_results(dir, "a"), 8); /* 2 PEs x 2 seeds x 2 lengths */
    int before =
        tu_study_killed_after(dir, "cfg.json", "b", 2); /* b: killed once its first run is recorded, then resumed */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out b", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    printf("killed after %d of 8 lines; resumed\n", before);
    assert_true(before < 8);
    char *a = canonical("a"), *b = canonical("b");
    assert_string_equal(a, b);
    free(a);
    free(b);
    snprintf(
        cmd, sizeof cmd,
        "cd '%s/a' && test -s tables.md && test -s tables.csv && test -s report.html && test -s curve_order.png && "
        "grep -q '| none |' tables.md && grep -q '^ape,order,classification,16,' tables.csv && "
        "test $(grep -cE '\"collapsed\": (true|false)' results.jsonl) = 8 && grep -q 'runs collapsed' tables.md && "
        "grep -q '\"posemb_pe\":.*\"ape:scale=1,learned_scale=on\"' models/ape/config.json && "
        "grep -q '\"pe\": \"ape\", \"spec\": \"ape:integration=add,learned_scale=on\"' results.jsonl && "
        "test $(grep -cE '\"blas\": \"[^\"]+\", \"products\": \"(OpenBLAS|libxsmm [0-9.]+)\"' results.jsonl) = 8",
        dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* --report on the study in progress: ape's seed-1 run only; none's row empty and out of the figures */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir partial && grep '\"pe\": \"ape\"' a/results.jsonl | grep '\"seed\": 1,' > "
             "partial/results.jsonl && test $(wc -l < partial/results.jsonl) = 2 && '%s' study cfg.json --out partial "
             "--report",
             dir, POSEMB_BIN);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "(3 of 4 runs still to run: ")) fail_msg("--report: %s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s/partial' && grep -q '^| none | - |' tables.md && grep -q '^| ape | [0-9.]* |' tables.md && "
             "test -s length_order.png && test -s curve_order.png && test -s report.html && ! test -e models && "
             "test $(wc -l < results.jsonl) = 2",
             dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("--report's tables: %s", out);
    /* a finished study has nothing left to do */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out a", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "4 already in"));
    /* lines whose products another library computed: the runs to go are other draws, and it says so */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir other && grep '\"pe\": \"none\"' a/results.jsonl | "
             "sed 's/\"products\": \"[^\"]*\"/\"products\": \"another library\"/' > other/results.jsonl && "
             "'%s' study cfg.json --out other 2>&1",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    if (!strstr(out, "4 line(s) ran under OpenBLAS's") || !strstr(out, "small products: another library, this process"))
        fail_msg("no word of the other library: %s", out);
    /* continued where its models are gone (another machine, only results and analysis/ kept):
     * the report's indicators come from analysis/PE/indicators.json, the same numbers */
    snprintf(cmd, sizeof cmd,
             "cd '%s/a' && sed -n '/Indicators of the trained models/,/<\\/table>/p' report.html > ind1 && "
             "test $(grep -c '<tr>' ind1) -ge 3 && rm -rf models && '%s' study ../cfg.json --out . && "
             "sed -n '/Indicators of the trained models/,/<\\/table>/p' report.html > ind2 && cmp ind1 ind2",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* a kept analysis over another number of positions than n_train is marked so in the report */
    snprintf(cmd, sizeof cmd,
             "cd '%s/a' && ! grep -qE '(similarity|identical), over' report.html && "
             "sed -i 's/\"n\":[[:space:]]*[0-9]*/\"n\": 99/' analysis/ape/indicators.json && "
             "'%s' study ../cfg.json --out . && "
             "test \"$(grep -oE '(similarity|identical), over [0-9]+' report.html)\" = 'similarity, over 99'",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
}

/* With analysis on, the first seed's model of every task is kept (the first
 * task's in models/PE, the others' in models/PE/TASK-sSEED) and analysed into
 * analysis/PE/TASK/: its identical-word indicators are those 'posemb analyze
 * --len n_train' gives the same model (the tables hold 2 x n_train rows: the
 * analysis reads the trained ones only), and the first task's those of the
 * report's analysis. */
static void test_task_models(void **state)
{
    char cmd[4096];
    const char *cfg = "{\"pes\": [\"ape\", \"rpe\"], \"tasks\": [\"order\", \"offset\"], \"seeds\": [1, 2], "
                      "\"lengths\": [1, 2], \"n_train\": 16, \"steps\": 20, \"batch\": 8, \"eval_examples\": 16, "
                      "\"curve_every\": 10, \"jobs\": 2}";
    char path[1200];
    snprintf(path, sizeof path, "%s/tasks.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study tasks.json --out t", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* identical-word block of an indicators.json, one line */
    const char *ident = "python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"identical\"])'";
    snprintf(
        cmd, sizeof cmd,
        "cd '%s/t' && for p in ape rpe; do test -s models/$p/model.safetensors && "
        "test -s models/$p/offset-s1/model.safetensors && test ! -e models/$p/offset-s2 && "
        "test ! -e models/$p/order-s1 && test -s analysis/$p/order/indicators.json && "
        "test -s analysis/$p/offset/indicators.json && test ! -e analysis/$p/offset/identical.png || exit 1; done && "
        "test \"$(%s analysis/ape/indicators.json)\" = \"$(%s analysis/ape/order/indicators.json)\" && "
        "'%s' analyze models/rpe/offset-s1 --len 16 --words 50 --no-figures --out cli > /dev/null && "
        "test \"$(%s cli/indicators.json)\" = \"$(%s analysis/rpe/offset/indicators.json)\" && "
        "test \"$(%s cli/indicators.json)\" != \"$(%s analysis/rpe/order/indicators.json)\" && "
        "grep -q '\"max_position_embeddings\":[[:space:]]*32' models/ape/config.json && "
        "grep -q 'positions 0..15\"' analysis/ape/indicators.json && "
        "grep -q 'positions 0..15\"' analysis/ape/offset/indicators.json",
        dir, ident, ident, POSEMB_BIN, ident, ident, ident, ident);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
}

/* The results line of task at evaluation length len (the caller deletes it). */
static cJSON *lm_line(const char *path, const char *task, int len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    cJSON *found = NULL;
    while (getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        if (!found && cJSON_GetObjectItem(j, "eval_len")->valueint == len &&
            !strcmp(cJSON_GetObjectItem(j, "task")->valuestring, task))
            found = j;
        else cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    assert_non_null(found);
    return found;
}

static double metric_of(const cJSON *line, const char *name)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(line, "metrics"), name);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* Hits of one evaluation length by input length n and by position j in the answer. */
typedef struct lm_counts {
    long right, total, whole;
    long ex[128], ex_tokens[128], ex_right[128], ex_whole[128], pos_right[128], pos_total[128];
    long err[4]; /* seq_copy's wrong tokens by class: 1 position, 2 content, 3 both, 0 neither */
} lm_counts;

/* The class of a wrong token pred at output k of a copy of x [n], by the rules of docs/study.md
 * written again here: position when pred stands next to x[k]; content when pred follows another
 * occurrence of the previous output x[k - 1]. */
static int copy_error_class(const int32_t *x, int n, int k, int32_t pred)
{
    int position = (k > 0 && x[k - 1] == pred) || (k + 1 < n && x[k + 1] == pred), content = 0;
    for (int j = 0; k > 0 && j + 1 < n; j++) content |= j != k - 1 && x[j] == x[k - 1] && x[j + 1] == pred;
    return position | content << 1;
}

/* The line's by_input_length and by_answer_position hold exactly what k counted, and
 * its length_mean_accuracy is the mean over input lengths of each length's accuracy. */
static void check_breakdown(const cJSON *line, const lm_counts *k)
{
    const cJSON *bl = cJSON_GetObjectItem(line, "by_input_length"),
                *bp = cJSON_GetObjectItem(line, "by_answer_position");
    const cJSON *e;
    int lengths = 0, positions = 0;
    double mean = 0;
    for (int n = 0; n < 128; n++) {
        if (!k->ex[n]) continue;
        e = cJSON_GetArrayItem(bl, lengths++);
        assert_non_null(e);
        assert_int_equal(cJSON_GetArrayItem(e, 0)->valueint, n);
        assert_int_equal(cJSON_GetArrayItem(e, 1)->valueint, k->ex[n]);
        double acc = (double)k->ex_right[n] / k->ex_tokens[n];
        assert_true(fabs(cJSON_GetArrayItem(e, 2)->valuedouble - acc) < 5.1e-5);
        assert_true(fabs(cJSON_GetArrayItem(e, 3)->valuedouble - (double)k->ex_whole[n] / k->ex[n]) < 5.1e-5);
        mean += acc;
    }
    assert_int_equal(cJSON_GetArraySize(bl), lengths);
    assert_true(fabs(metric_of(line, "length_mean_accuracy") - mean / lengths) < 1e-6);
    for (int j = 0; j < 128; j++) {
        if (!k->pos_total[j]) continue;
        e = cJSON_GetArrayItem(bp, positions++);
        assert_non_null(e);
        assert_int_equal(cJSON_GetArrayItem(e, 0)->valueint, j + 1);
        assert_int_equal(cJSON_GetArrayItem(e, 1)->valueint, k->pos_total[j]);
        assert_true(fabs(cJSON_GetArrayItem(e, 2)->valuedouble - (double)k->pos_right[j] / k->pos_total[j]) < 5.1e-5);
    }
    assert_int_equal(cJSON_GetArraySize(bp), positions);
    printf("  %d input lengths, %d answer positions, mean over lengths %.6f\n", lengths, positions, mean / lengths);
    const cJSON *errs = cJSON_GetObjectItem(line, "errors");
    long wrong = k->err[0] + k->err[1] + k->err[2] + k->err[3];
    if (!wrong) {
        assert_null(errs);
        return;
    }
    long want[5] = {wrong, k->err[1], k->err[2], k->err[3], k->err[0]};
    for (int i = 0; i < 5; i++) assert_int_equal(cJSON_GetArrayItem(errs, i)->valueint, want[i]);
    assert_int_equal(wrong, k->total - k->right);
    printf("  errors: %ld wrong, %ld position, %ld content, %ld both, %ld neither\n", wrong, want[1], want[2], want[3],
           want[4]);
}

/* Counts the hits of task's evaluation examples at length L (the study's: data seed
 * FNV-1a of the task's name + 7919 x seed 2, as study.c draws them) under model m:
 * each row's input the tokens between [CLS] and [SEP], its answer the tokens after
 * [SEP] up to [PAD], an answer token right when the argmax of the logits one position
 * before it is that token. */
static void count_hits(posemb_model *m, const char *task, int L, lm_counts *k)
{
    enum { B = 16, N = 64, NT = 42 };
    static int32_t ids[B * 2 * NT], lab[B], st[B], en[B];
    static float logits[B * 2 * NT * POSEMB_SYN_VOCAB];
    uint64_t seed = 14695981039346656037u;
    for (const char *p = task; *p; p++) seed = (seed ^ (unsigned char)*p) * 1099511628211u;
    seed += 7919 * 2;
    const posemb_syn_task *t = posemb_syn_find(task);
    memset(k, 0, sizeof *k);
    for (int k0 = 0; k0 < N; k0 += B) {
        posemb_syn_batch(t, seed, 1000000L + k0, B, L, NT, ids, lab, st, en);
        posemb_batch batch = {.B = B, .T = L, .ids = ids};
        assert_int_equal(posemb_model_forward(m, &batch, NULL), 0);
        assert_int_equal(posemb_model_lm_logits(m, logits, NULL), 0);
        for (int b = 0; b < B; b++) {
            const int32_t *row = ids + b * L;
            int sep = 0, hits = 0, n = 0;
            while (row[sep] != SYN_SEP) sep++;
            for (int i = sep + 1; i < L && row[i] != SYN_PAD; i++, n++) {
                const float *z = logits + ((size_t)b * L + i - 1) * POSEMB_SYN_VOCAB;
                int best = 0;
                for (int v = 1; v < POSEMB_SYN_VOCAB; v++) best = z[v] > z[best] ? v : best;
                hits += best == row[i];
                if (best != row[i] && !strcmp(task, "seq_copy")) k->err[copy_error_class(row + 1, sep - 1, n, best)]++;
                k->pos_right[n] += best == row[i];
                k->pos_total[n]++;
            }
            k->right += hits;
            k->total += n;
            k->whole += hits == n;
            k->ex[sep - 1]++;
            k->ex_tokens[sep - 1] += n;
            k->ex_right[sep - 1] += hits;
            k->ex_whole[sep - 1] += hits == n;
        }
    }
}

/* An LM task's token accuracy, exact match (every answer token right), and both by
 * input length and answer position, recomputed from the saved models: seq_copy, whose
 * answer is as long as its input, and seq_parity, whose answer is one token whatever
 * the input's length (so its mean over input lengths is not the pooled accuracy). */
static void test_lm_exact_match(void **state)
{
    enum { N = 64, NT = 42 };
    char cmd[4096], path[1200];
    const char *cfg = "{\"pes\": [\"ape\"], \"tasks\": [\"seq_copy\", \"seq_parity\"], \"seeds\": [2], "
                      "\"lengths\": [1, 2], \"n_train\": 42, \"steps\": 400, \"batch\": 16, \"eval_examples\": 64, "
                      "\"jobs\": 1}";
    snprintf(path, sizeof path, "%s/lm.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study lm.json --out lm", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *tasks[2] = {"seq_copy", "seq_parity"}, *models[2] = {"lm/models/ape", "lm/models/ape/seq_parity-s2"};
    static lm_counts k;
    for (int ti = 0; ti < 2; ti++) {
        posemb_model *m = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, models[ti]);
        assert_int_equal(posemb_model_load(&m, path, NULL), 0);
        posemb_model_set_train(m, 0, 0, 0);
        for (int L = NT; L <= 2 * NT; L += NT) {
            count_hits(m, tasks[ti], L, &k);
            snprintf(path, sizeof path, "%s/lm/results.jsonl", dir);
            cJSON *line = lm_line(path, tasks[ti], L);
            double tok = metric_of(line, "token_accuracy"), exact = metric_of(line, "exact_match"),
                   by_length = metric_of(line, "length_mean_accuracy");
            printf("%s, length %d: token accuracy %.6f (recomputed %.6f), exact match %.6f (recomputed %.6f)\n",
                   tasks[ti], L, tok, (double)k.right / k.total, exact, (double)k.whole / N);
            assert_true(fabs(tok - (double)k.right / k.total) < 1e-6);
            assert_true(fabs(exact - (double)k.whole / N) < 1e-6);
            check_breakdown(line, &k);
            cJSON_Delete(line);
            /* tables.csv: the exact_match and length_mean_accuracy columns (one seed: its values) */
            snprintf(cmd, sizeof cmd, "grep -q '^ape,%s,lm,%d,.*,%.6g,%.6g$' '%s/lm/tables.csv'", tasks[ti], L, exact,
                     by_length, dir);
            assert_int_equal(tu_run(cmd, out, sizeof out), 0);
        }
        posemb_model_free(m);
    }
}

/* Kazemnejad et al.'s mean reciprocal rank in tables.md, on a made-up study
 * whose every run is recorded (so `posemb study` only writes the tables).
 * Ties share the mean of the reciprocal ranks they span (two tied for 2nd
 * and 3rd: (1/2 + 1/3) / 2 = 5/12; for 1st and 2nd: 3/4; all three: 11/18).
 * At 42 tokens ape learns seq_copy (1.0), none seq_add at exactly the 0.9
 * threshold, no PE seq_sort (0.1); order is a classification task, whose
 * accuracy must not be ranked; rope's seq_add seed 2 line at 84 has no
 * exact match, so that pair is not ranked by it. The expected numbers were
 * worked out by averaging each PE's 1/rank over every order consistent with
 * the ties; e.g. by exact match at 84 over the learned tasks (3 pairs):
 * none (1 + 5/12 + 1/3) / 3 = 0.583, ape (5/12 + 5/12 + 3/4) / 3 = 0.528,
 * rope (5/12 + 1 + 3/4) / 3 = 0.722. Written again (mode 1) with those token
 * accuracies as each line's length_mean_accuracy and 0.5 as its token accuracy,
 * the second ranking is by the former, named as Ruoss et al.'s, with the same
 * numbers (by the latter every pair would tie); and again (mode 2) with the
 * accuracies in both but length_mean_accuracy left out of seed 2's lines, it
 * is by token accuracy, as the pairs of seed 2 would not count otherwise. */
static void test_lm_ranking(void **state)
{
    /* [length 84, 168][task][seed][pe none ape rope]; NAN: the line has no exact match */
    static const double em[2][3][2][3] = {
        {{{0.5, 0, 0}, {0.2, 0.2, 0.6}}, {{0, 0.3, 0.3}, {0.1, 0, NAN}}, {{0, 0, 0}, {0.1, 0, 0}}},
        {{{0, 0, 0.5}, {0.6, 0.2, 0.2}}, {{0.3, 0.3, 0}, {0, 0, 0.1}}, {{0, 0, 0}, {0, 0, 0.1}}}};
    static const double tok[2][3][2][3] = {
        {{{.9, .3, .6}, {.5, .4, .7}}, {{.2, .3, .1}, {.2, .2, .2}}, {{.5, .6, .7}, {.3, .3, .3}}},
        {{{.1, .2, .3}, {.3, .2, .1}}, {{.4, .4, .4}, {.5, .1, .9}}, {{.2, .2, .1}, {.9, .8, .7}}}};
    static const double at42[3][3] = {{0.1, 1.0, 0.1}, {0.9, 0.1, 0.1}, {0.1, 0.1, 0.1}}; /* [task][pe] */
    const char *tasks[3] = {"seq_copy", "seq_add", "seq_sort"}, *pes[3] = {"none", "ape", "rope"};
    const char *cfg = "{\"pes\": [\"none\", \"ape\", \"rope\"], \"tasks\": [\"seq_copy\", \"seq_add\", \"seq_sort\", "
                      "\"order\"], \"seeds\": [1, 2], \"lengths\": [1, 2, 4], \"n_train\": 42, \"steps\": 10, "
                      "\"analyze\": 0, \"jobs\": 1}";
    char path[1200], cmd[4096], exact[128];
    snprintf(path, sizeof path, "%s/rank.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/rank'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/rank/results.jsonl", dir);
    for (int mode = 0; mode < 3; mode++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < 2; s++)
                for (int p = 0; p < 3; p++)
                    for (int m = 0; m < 3; m++) {
                        const char *common = "\"spec\": \"%s\", \"seed\": %d, \"n_train\": 42, \"eval_len\": %d, ";
                        fprintf(f, "{\"pe\": \"%s\", \"task\": \"%s\", ", pes[p], t < 3 ? tasks[t] : "order");
                        fprintf(f, common, pes[p], s + 1, 42 << m);
                        if (t == 3) { /* order: an accuracy per PE that would reorder them all if ranked */
                            fprintf(f,
                                    "\"kind\": \"classification\", \"metrics\": {\"accuracy\": %g}, \"chance\": 0.5, "
                                    "\"collapsed\": false, \"steps\": 10, \"seconds\": 1}\n",
                                    (double)(3 - p) / 3);
                            continue;
                        }
                        double e = m ? em[m - 1][t][s][p] : at42[t][p], a = m ? tok[m - 1][t][s][p] : 0.95;
                        exact[0] = '\0';
                        if (!isnan(e)) snprintf(exact, sizeof exact, ", \"exact_match\": %g", e);
                        if (mode == 1 || (mode == 2 && s == 0))
                            snprintf(exact + strlen(exact), sizeof exact - strlen(exact),
                                     ", \"length_mean_accuracy\": %g", a);
                        fprintf(f,
                                "\"kind\": \"lm\", \"metrics\": {\"token_accuracy\": %g%s}, \"chance\": 0.02, "
                                "\"collapsed\": false, \"steps\": 10, \"seconds\": 1}\n",
                                mode == 1 ? 0.5 : a, exact);
                    }
        fclose(f);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' study rank.json --out rank && sed -n '/^## Ranking/,$p' rank/tables.md", dir,
                 POSEMB_BIN);
        assert_int_equal(tu_run(cmd, out, sizeof out), 0);
        printf("%s", out);
        const char *head = "| PE | 84 tokens | 168 tokens |\n|---|---:|---:|\n";
        const char *want[][2] = {
            {"learns at the training length (mean exact match over seeds >= 0.9): seq_copy seq_add.", ""},
            {"### By exact match, all causal-LM tasks\n\n",
             "| none | 0.672 | 0.602 |\n| ape | 0.522 | 0.505 |\n| rope | 0.639 | 0.727 |\n"
             "| *(task, seed) pairs ranked* | 5 | 6 |\n| *of them, pairs where the PEs differ* | 4 | 5 |\n"},
            {"### By exact match, the learned tasks\n\n",
             "| none | 0.583 | 0.646 |\n| ape | 0.528 | 0.500 |\n| rope | 0.722 | 0.688 |\n"
             "| *(task, seed) pairs ranked* | 3 | 4 |\n| *of them, pairs where the PEs differ* | 3 | 4 |\n"},
            {"### By %s, all causal-LM tasks\n\n",
             "| none | 0.593 | 0.699 |\n| ape | 0.565 | 0.532 |\n| rope | 0.676 | 0.602 |\n"
             "| *(task, seed) pairs ranked* | 6 | 6 |\n| *of them, pairs where the PEs differ* | 4 | 5 |\n"},
            {"### By %s, the learned tasks\n\n",
             "| none | 0.653 | 0.611 |\n| ape | 0.569 | 0.486 |\n| rope | 0.611 | 0.736 |\n"
             "| *(task, seed) pairs ranked* | 4 | 4 |\n| *of them, pairs where the PEs differ* | 3 | 3 |\n"}};
        const char *score = mode == 1 ? "answer-token accuracy averaged over input lengths (Ruoss et al.'s score)"
                                      : "answer-token accuracy";
        for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
            char block[1024], name[256];
            snprintf(name, sizeof name, want[i][0], score);
            snprintf(block, sizeof block, "%s%s%s", name, want[i][1][0] ? head : "", want[i][1]);
            if (!strstr(out, block)) fail_msg("tables.md lacks:\n%s", block);
        }
        snprintf(cmd, sizeof cmd,
                 "grep -q '(task, seed) pairs ranked</td><td[^>]*>5</td><td[^>]*>6<' '%s/rank/report.html'", dir);
        assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    }
}

/* The file at path, malloc'ed and NUL-terminated; NULL when unreadable. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf) buf[fread(buf, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return buf;
}

/* A finished small synthetic study's lines (written here, so nothing trains): report.html opens with the verdicts
 * of the claims it can pose, their forest plot and the ranking, before its first existing table; claims.csv has
 * scripts/claims' columns and numbers and is read by posemb plot forest. Scores: on absolute and order, ape, sin and
 * lsin score 0.9, 0.8, 0.7 and rpe, srpe, lsrpe 0.6, 0.5, 0.4 (+ seed / 100; 0.1 less at 2x): W1's units are the
 * APEs' 0.91, 0.92, 0.81, 0.82, 0.71, 0.72 against the RPEs' 0.3 less, sd 0.0896 each, se 0.05174 on Welch's 10
 * degrees of freedom (equal variances and sizes); with t_0.975 = 2.2281 the interval is 0.3 -+ 0.1153, and the
 * minimum detectable effect (2.2281 + 0.8791) 0.05174 = 0.1608 (scripts/claims' welch_ci on these units). */
static void test_claims_report(void **state)
{
    (void)state;
    static const char *const pes[] = {"none", "ape", "sin", "lsin", "rpe", "srpe", "lsrpe"};
    static const double base[] = {0.3, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4};
    static const char *const tasks[] = {"absolute", "order", "offset"};
    const char *cfg = "{\"pes\": [\"none\", \"ape\", \"sin\", \"lsin\", \"rpe\", \"srpe\", \"lsrpe\"], \"tasks\": "
                      "[\"absolute\", \"order\", \"offset\"], \"seeds\": [1, 2], \"lengths\": [1, 2], \"n_train\": 16, "
                      "\"steps\": 10, \"analyze\": 0, \"jobs\": 1}";
    char path[1200], cmd[4096];
    snprintf(path, sizeof path, "%s/claims.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/cl'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/cl/results.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int p = 0; p < 7; p++)
        for (int t = 0; t < 3; t++)
            for (int s = 1; s <= 2; s++)
                for (int m = 1; m <= 2; m++)
                    fprintf(f,
                            "{\"pe\": \"%s\", \"spec\": \"%s\", \"task\": \"%s\", \"kind\": \"%s\", \"seed\": %d, "
                            "\"n_train\": 16, \"eval_len\": %d, \"metrics\": {\"%s\": %.2f}, \"chance\": 0.5, "
                            "\"collapsed\": false, \"steps\": 10, \"seconds\": 1}\n",
                            pes[p], pes[p], tasks[t], t < 2 ? "classification" : "span", s, 16 * m,
                            t < 2 ? "accuracy" : "exact_match", t < 2 ? base[p] + s / 100.0 - (m - 1) / 10.0 : 0.5);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study claims.json --out cl && '%s' plot forest cl/claims.csv --out f.png", dir,
             POSEMB_BIN, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/cl/claims.csv", dir);
    char *csv = slurp(path);
    assert_non_null(csv);
    const char *want = "claim_id,claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect,mde,p,n_units,unit_of_replication,"
                       "verdict,note,evidence\nW1,APEs beat RPEs on classification,\"synthetic absolute+order, 1x\","
                       "\"score difference (accuracy, F1, exact match)\",0.3,0.1847,0.4153,,0.1608,0.0001733,12,"
                       "\"training run (PE, seed)\",reproduced,,docs/study.md#the-seed-papers-claims-one-by-one\n";
    assert_string_equal(csv, want); /* the other claims need tasks, PEs or lengths this study lacks */
    free(csv);
    snprintf(path, sizeof path, "%s/cl/report.html", dir);
    char *html = slurp(path);
    assert_non_null(html);
    const char *order[] = {"<h2>The answer</h2>",
                           "This study trains 7 PEs from scratch on 3 synthetic tasks",
                           "APEs beat RPEs on classification",
                           "+0.300 [+0.185, +0.415]",
                           "Not posed here (the study lacks what the claim needs): W2: no task retrieve; W3: no "
                           "evaluation at 8x; W4: no task retrieve; W6: no evaluation at 8x; W7: no task reverse.",
                           "<img",
                           "The claims: each effect with its 95% interval",
                           "<h2>The PEs ranked</h2>",
                           "ape 0.815 ± 0.007",
                           "<h2>Table 2: classification</h2>"};
    const char *at = html;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        const char *hit = strstr(at, order[i]);
        if (!hit) fail_msg("report.html lacks, after the previous piece: %s", order[i]);
        at = hit + strlen(order[i]);
    }
    assert_true(strstr(strstr(html, "<h2>The answer</h2>"), "<table") < strstr(html, "<h2>Table 2: classification"));
    free(html);
}

/* Every synthetic-study config docs/ gives users to run (docs/configs,
 * results/lengthgen and its experiments) loads and passes the study's checks, PE
 * specs built for each task included: a stale one would fail only when a user
 * runs it. */
static void test_doc_configs(void **state)
{
    const char *folders[] = {POSEMB_TESTDATA "/../../docs/configs", POSEMB_TESTDATA "/../../results/lengthgen",
                             POSEMB_TESTDATA "/../../results/lengthgen/randomized"};
    int checked = 0;
    for (int i = 0; i < 3; i++) {
        DIR *d = opendir(folders[i]);
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            size_t n = strlen(e->d_name);
            if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
            char path[1400], where[1400];
            snprintf(path, sizeof path, "%s/%s", folders[i], e->d_name);
            snprintf(where, sizeof where, "%s/docs-config", dir);
            posemb_study_config c = posemb_study_default();
            posemb_error err;
            if (posemb_study_config_load(&c, path, &err) || posemb_study_prepare(&c, where, &err))
                fail_msg("%s: %s", path, err.msg);
            checked++;
        }
        closedir(d);
    }
    printf("%d configs checked\n", checked);
    assert_true(checked >= 11);
}

/* The last position of token id in a row of T, or -1. */
static int last_at(const int32_t *row, int T, int32_t id)
{
    int at = -1;
    for (int t = 0; t < T; t++) at = row[t] == id ? t : at;
    return at;
}

/* The tasks hold what they say: markers placed, labels and spans right. */
static void test_tasks(void **state)
{
    enum { B = 200, T = 40 };
    static int32_t ids[B * T], lab[B], st[B], en[B];
    int yes = 0;
    posemb_syn_batch(posemb_syn_find("order"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        int a = last_at(ids + b * T, T, SYN_A), c = last_at(ids + b * T, T, SYN_B);
        assert_true(a > 0 && c > 0 && ids[b * T] == SYN_CLS);
        assert_int_equal(lab[b], a < c);
        yes += lab[b];
    }
    assert_true(yes > 70 && yes < 130);
    posemb_syn_batch(posemb_syn_find("between"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        assert_int_equal(ids[b * T + st[b] - 1], SYN_A);
        assert_int_equal(ids[b * T + en[b] + 1], SYN_B);
    }
    posemb_syn_batch(posemb_syn_find("copy"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        assert_int_equal(ids[b * T + st[b]], ids[b * T + 2]);
        for (int t = 3; t < T; t++) assert_true(t == st[b] || ids[b * T + t] != ids[b * T + 2]);
    }
    /* offset: the digit after [CLS] says d; the answer is the one token d after A */
    int seen[9] = {0};
    posemb_syn_batch(posemb_syn_find("offset"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        int d = ids[b * T + 1] - SYN_DIGIT;
        assert_true(d >= 1 && d <= 8 && st[b] == en[b] && st[b] < T);
        assert_int_equal(ids[b * T + st[b] - d], SYN_A);
        seen[d]++;
    }
    for (int d = 1; d <= 8; d++) assert_true(seen[d] > 5);
    /* near: B within 4 tokens of A for the positive half, further for the other */
    yes = 0;
    posemb_syn_batch(posemb_syn_find("near"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        int a = last_at(ids + b * T, T, SYN_A), c = last_at(ids + b * T, T, SYN_B);
        assert_true(a > 0 && c > 0);
        assert_int_equal(lab[b], abs(a - c) <= 4);
        yes += lab[b];
    }
    assert_true(yes > 70 && yes < 130);
    static int32_t again[B * T];
    posemb_syn_batch(posemb_syn_find("copy"), 3, 0, B, T, 32, ids, lab, st, en);
    posemb_syn_batch(posemb_syn_find("copy"), 3, 0, B, T, 32, again, lab, st, en);
    assert_memory_equal(ids, again, sizeof ids);
    TU_CLOSE(posemb_syn_chance(posemb_syn_find("absolute"), 32, 32), 1 - 15.0 / 31, 1e-12, 0, "chance", 0);
}

/* reverse: [CLS] x [SEP] reversed x, scored after [SEP] only. */
static void test_reverse_task(void **state)
{
    enum { B = 20, T = 33 };
    static int32_t ids[B * T], tg[B * T];
    const posemb_syn_task *t = posemb_syn_find("reverse");
    assert_non_null(t);
    assert_int_equal(t->kind, POSEMB_SYN_LM);
    posemb_syn_batch(t, 5, 0, B, T, 32, ids, NULL, NULL, NULL);
    posemb_syn_lm_targets(t, ids, B, T, tg);
    for (int b = 0; b < B; b++) {
        const int32_t *r = ids + b * T, *g = tg + b * T;
        int k = (T - 2) / 2, scored = 0;
        assert_int_equal(r[0], SYN_CLS);
        assert_int_equal(r[k + 1], SYN_SEP);
        assert_int_equal(r[T - 1], SYN_PAD); /* T odd: one token left over */
        for (int j = 0; j < k; j++) assert_int_equal(r[k + 2 + j], r[k - j]);
        for (int i = 0; i < T; i++) {
            if (i <= k + 1 || i == T - 1) assert_int_equal(g[i], -100);
            else {
                assert_int_equal(g[i], r[i]);
                scored++;
            }
        }
        assert_int_equal(scored, k);
    }
    TU_CLOSE(posemb_syn_chance(t, 64, 32), 1.0 / 48, 1e-12, 0, "chance", 0);
}

/* The real-data study on ../shared/data, tiny: pretraining, GLUE and SQuAD
 * fine-tuning, killed during its runs and resumed, gives the lines of a
 * straight run. */
/* A real-data study of the config head + tail in dir/name, then `checks` run in its folder. */
static void data_run(const char *name, const char *head, const char *tail, const char *checks)
{
    char path[1200], cmd[8192], cfg[2048];
    snprintf(cfg, sizeof cfg, "%s%s", head, tail);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study %s.json --data '%s/data' --out %s && cd %s && %s", dir, POSEMB_BIN,
             name, POSEMB_SHARED, name, name, checks);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s: %s", name, out);
}

/* The first-matching-word reference of every span line: a property of the
 * data alone, so one value per (task, length) whatever the PE and seed, and
 * above 0 (SQuAD-locate's question is its answer, whose first word the
 * paragraph holds). */
static void check_token_match(const char *root, const char *run)
{
    char path[1200], line[16384], key[64][48];
    double val[64];
    int nk = 0, nlines = 0;
    snprintf(path, sizeof path, "%s/%s/results.jsonl", root, run);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *m = cJSON_GetObjectItem(j, "token_match");
        int span = !strcmp(cJSON_GetObjectItem(j, "kind")->valuestring, "span");
        assert_int_equal(span, cJSON_IsNumber(m));
        if (span) {
            char k[48];
            snprintf(k, sizeof k, "%.31s@%d", cJSON_GetObjectItem(j, "task")->valuestring,
                     cJSON_GetObjectItem(j, "eval_len")->valueint);
            int i = 0;
            while (i < nk && strcmp(key[i], k)) i++;
            if (i == nk) {
                snprintf(key[nk], sizeof key[nk], "%s", k);
                val[nk++] = m->valuedouble;
            }
            assert_true(m->valuedouble == val[i]);
            if (strstr(k, "locate")) assert_true(m->valuedouble > 0.1);
            nlines++;
        }
        cJSON_Delete(j);
    }
    fclose(f);
    assert_int_equal(nk, 6); /* SQuAD and SQuAD-locate at 3 lengths */
    assert_int_equal(nlines, 24);
}

/* A fine-tuning run killed after one of its checkpoints continues from it to
 * the line and best model of an uninterrupted run, and leaves no checkpoint
 * behind; a checkpoint whose notes are not the run's is one clear error. */
static void test_finetune_resume(void **state)
{
    char cmd[8192], args[2048];
    if (!tu_have_shared("the fine-tuning's resume")) return;
    const char *cfg = "{\"pes\": [\"ape\"], \"tasks\": [\"STS-B\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
                      "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 4, \"steps\": 150, "
                      "\"curve_every\": 5, \"jobs\": 1, \"analyze\": 0}";
    data_run("fa", cfg, "", "true");
    snprintf(args, sizeof args, "fa.json --data '%s/data'", POSEMB_SHARED);
    const char *ckpt = "%s/models/ape/STS-B-s1/resume/checkpoint-*/trainer_state.json";
    char pattern[256];
    snprintf(pattern, sizeof pattern, ckpt, "fb");
    assert_true(tu_study_killed_when(dir, args, "fb", pattern));
    assert_int_equal(tu_count_results(dir, "fb"), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study %s --out fb", dir, POSEMB_BIN, args);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "resumed at step "));
    char *a = canonical("fa"), *b = canonical("fb");
    assert_string_equal(a, b);
    free(a);
    free(b);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cmp fa/models/ape/STS-B-s1/model.safetensors fb/models/ape/STS-B-s1/model.safetensors && "
             "test ! -e fb/models/ape/STS-B-s1/resume && test ! -e fa/models/ape/STS-B-s1/resume",
             dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* notes that are not this run's progress */
    snprintf(pattern, sizeof pattern, ckpt, "fc");
    assert_true(tu_study_killed_when(dir, args, "fc", pattern));
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && for f in fc/models/ape/STS-B-s1/resume/checkpoint-*/notes.json; do echo '{\"steps\": 7}' > $f; "
        "done && '%s' study %s --out fc",
        dir, POSEMB_BIN, args);
    assert_int_not_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "notes.json is not the progress of this fine-tuning of 150 steps at lr 0.0003"));
}

static void test_data_study(void **state)
{
    char path[1200], cmd[8192];
    if (!tu_have_shared("the real-data study")) return;
    const char *cfg = "{\"pes\": [\"ape\", \"rpe\"], \"tasks\": [\"RTE\", \"STS-B\", \"SQuAD\", \"SQuAD-locate\"], "
                      "\"seeds\": [1, 2], "
                      "\"layers\": 1, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, "
                      "\"pretrain_steps\": 10, \"steps\": 6, \"curve_every\": 3, \"eval_examples\": 40, "
                      "\"squad_stride\": 8, \"squad_max_query\": 16, \"jobs\": 1, \"analyze\": 0, "
                      "\"task_budgets\": {\"SQuAD-locate\": {\"steps\": 4, \"curve_every\": 2}}}";
    snprintf(path, sizeof path, "%s/data.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study data.json --data '%s/data' --out da", dir, POSEMB_BIN,
             POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(tu_count_results(dir, "da"),
                     2 * 2 * (1 + 1 + 3 + 3)); /* GLUE: the trained length; SQuAD(-locate): 3 lengths */
    snprintf(cmd, sizeof cmd, "data.json --data '%s/data'", POSEMB_SHARED);
    printf("data study killed after %d of 32 lines; resumed\n", tu_study_killed_after(dir, cmd, "db", 1));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study data.json --data '%s/data' --out db", dir, POSEMB_BIN,
             POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    char *a = canonical("da"), *b = canonical("db");
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* another pretraining draw into the same folder is refused, not counted as done */
    char draw2[1024]; /* the same config, another draw */
    snprintf(draw2, sizeof draw2, "%.*s, \"pretrain_seed\": 2}", (int)strlen(cfg) - 1, cfg);
    snprintf(path, sizeof path, "%s/draw2.json", dir);
    assert_int_equal(tu_write_file(path, draw2, strlen(draw2)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study draw2.json --data '%s/data' --out da", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) ||
        !strstr(out, "line 1 came from the pretraining with \"pretrain_seed\" 1, this config has 2"))
        fail_msg("another pretraining draw into the same folder: %s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s/da' && grep -q 'Table 3: span prediction on SQuAD' tables.md && grep -q '^rpe,SQuAD,span,256,' "
             "tables.csv && "
             "grep -q '^ape,SQuAD-locate,span,256,' tables.csv && grep -q 'Figure 1: longer documents (SQuAD-locate' "
             "tables.md && "
             "grep -q '^| rpe | 10 | [0-9.]* | [0-9.]* | [0-9.-]*%% |$' tables.md && test -s pretrain_curves.png && "
             "grep -q '^ape,STS-B,regression,64,' tables.csv && test -s models/rpe/SQuAD-s2/model.safetensors && "
             "test -s models/ape/pretrain/model.safetensors && test -s report.html && "
             "grep -q 'SQuAD-locate has its own budget: at most 4 steps, evaluated every 2' tables.md && "
             "test $(grep -c '\"task\": \"SQuAD-locate\".*\"steps\": 4,' results.jsonl) = 12 && "
             "test $(grep -c '\"task\": \"SQuAD\".*\"steps\": 6,' results.jsonl) = 12 && "
             "test $(grep -c 'token_match' results.jsonl) = 24 && "
             "grep -q '^| \\*first matching word, no model\\* | 0\\.[0-9]* | 0\\.[0-9]* |$' tables.md && "
             "grep -q '^| \\*chance\\* | 0.000 | 0.000 |$' tables.md && "
             "grep -q '<tr><td>first matching word, no model</td><td>0\\.[0-9]*</td><td>0\\.[0-9]*</td></tr>' "
             "report.html",
             dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    check_token_match(dir, "da");
    /* each pretraining's log is kept in pretrain/, and the tables of a copy without models read it */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cmp da/pretrain/rpe.train_log.jsonl da/models/rpe/pretrain/train_log.jsonl && rm -rf dm && "
             "cp -r da dm && rm -rf dm/models dm/tables.md && '%s' study data.json --data '%s/data' --out dm --report "
             "&& cmp da/tables.md dm/tables.md && grep -q '^| ape | 10 | [0-9.]* |' dm/tables.md",
             dir, POSEMB_BIN, POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* a PE pretrained from a list where it is first is the same model as from
     * da's, where it is second: its initialisation does not depend on the list */
    data_run("alone",
             "{\"pes\": [\"rpe\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
             "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 10, \"steps\": 1, ",
             "\"jobs\": 1, \"analyze\": 0}", "cmp pretrain/rpe.train_log.jsonl ../da/pretrain/rpe.train_log.jsonl");
    /* pretrain_seed 2 is another pretraining: another draw from the first step on */
    data_run("seed2",
             "{\"pes\": [\"rpe\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
             "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 10, \"steps\": 1, ",
             "\"pretrain_seed\": 2, \"jobs\": 1, \"analyze\": 0}",
             "! cmp -s pretrain/rpe.train_log.jsonl ../da/pretrain/rpe.train_log.jsonl && "
             "head -1 pretrain/rpe.train_log.jsonl > s2 && head -1 ../da/pretrain/rpe.train_log.jsonl > s1 && "
             "! cmp -s s1 s2");
    /* pre_ln 1 pretrains (and fine-tunes) pre-LN layers: another pretraining, said on every line, and a
     * folder of post-LN lines refuses it */
    data_run("preln",
             "{\"pes\": [\"rpe\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
             "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 10, \"steps\": 1, ",
             "\"pre_ln\": 1, \"jobs\": 1, \"analyze\": 0}",
             "grep -q '\"pre_ln\": 1' results.jsonl && grep -q 'posemb_pre_ln' models/rpe/pretrain/config.json && "
             "grep -q 'posemb_pre_ln' models/rpe/RTE-s1/config.json && "
             "! cmp -s pretrain/rpe.train_log.jsonl ../alone/pretrain/rpe.train_log.jsonl");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study preln.json --data '%s/data' --out alone", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) ||
        !strstr(out, "line 1 came from a post-LN pretraining, this config's is pre-LN (\"pre_ln\")"))
        fail_msg("a pre-LN config over post-LN lines: %s", out);
    /* pretrain_warmup sets the pretraining's warm-up: the log's rates follow it (step 2 at a fifth of the
     * peak for 5 steps, where the default for 10 steps, 1, puts it at the peak; step 6 at the peak, step 7
     * decaying), every line says it and so does the pretraining's pretrain.json; a folder of the default's
     * lines, or of its pretraining alone, refuses it and takes the default's length written out as its own */
    data_run("warm",
             "{\"pes\": [\"rpe\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
             "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 10, \"steps\": 1, ",
             "\"pretrain_warmup\": 5, \"jobs\": 1, \"analyze\": 0}",
             "grep -q '\"pretrain_warmup\": 5' results.jsonl && "
             "grep -q '\"step\": 2, .*\"lr\": 0.0002000' pretrain/rpe.train_log.jsonl && "
             "grep -q '\"step\": 6, .*\"lr\": 0.0010000' pretrain/rpe.train_log.jsonl && "
             "grep -q '\"step\": 7, .*\"lr\": 0.0008000' pretrain/rpe.train_log.jsonl && "
             "grep -q '\"step\": 2, .*\"lr\": 0.0010000' ../alone/pretrain/rpe.train_log.jsonl && "
             "grep -qx '{\"warmup\": 5, \"seed\": 1}' models/rpe/pretrain/pretrain.json");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study warm.json --data '%s/data' --out alone", dir, POSEMB_BIN,
             POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "line 1 came from a pretraining with a warm-up of 1 step, this "
                                                      "config's is 5 (\"pretrain_warmup\")"))
        fail_msg("a warm-up of 5 over the default's lines: %s", out);
    /* before any line, a pretraining's record refuses another warm-up or draw, and one from before the
     * record counts as the default warm-up */
    const char *kept[][3] = {
        {"warm", "alone",
         "warm/models/rpe/pretrain/pretrain.json records a warm-up of 5 and \"pretrain_seed\" 1, "
         "this config's are 1 and 1"},
        {"seed2", "alone", "seed2/models/rpe/pretrain/pretrain.json records a warm-up of 1 and \"pretrain_seed\" 2"},
        {"warm", "warm",
         "pretrained before pretrain.json was kept, so with the default warm-up of 1, this config's "
         "is 5"},
    };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && rm -rf k%d && mkdir -p k%d/models/rpe && cp -r %s/models/rpe/pretrain k%d/models/rpe/ && "
                 "%s && '%s' study %s.json --data '%s/data' --out k%d",
                 dir, i, i, kept[i][0], i, i == 2 ? "rm k2/models/rpe/pretrain/pretrain.json" : "true", POSEMB_BIN,
                 kept[i][1], POSEMB_SHARED, i);
        if (!tu_run(cmd, out, sizeof out) || !strstr(out, kept[i][2] + (i < 2 ? strlen(kept[i][0]) : 0)))
            fail_msg("a pretraining of another schedule, before any line (%d): %s", i, out);
    }
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sed 's/\"pretrain_warmup\": 5/\"pretrain_warmup\": 1/' warm.json > warm1.json && "
             "'%s' study warm1.json --data '%s/data' --out alone",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (tu_run(cmd, out, sizeof out) || !strstr(out, "0 PE(s) with runs to go"))
        fail_msg("the default's warm-up written out, over the default's lines: %s", out);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sed 's/\"pretrain_warmup\": 5/\"pretrain_warmup\": 11/' warm.json > warm11.json && "
             "'%s' study warm11.json --data '%s/data' --out w11",
             dir, POSEMB_BIN, POSEMB_SHARED);
    if (!tu_run(cmd, out, sizeof out) || !strstr(out, "study: pretrain_warmup 11 is longer than pretrain_steps 10"))
        fail_msg("a warm-up longer than the pretraining: %s", out);
    /* vocab: another vocab.txt inside the data folder tokenizes everything (BERT's without "the", its [PAD]
     * moved from id 0 to the last id: another pretraining, whose padding id follows the vocabulary), is kept
     * beside the pretraining, is said on every line, resumes, and is refused by a folder of the default
     * vocabulary's lines (before the folder's cache is touched) or pretraining, as the default is by its */
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && rm -rf dv && mkdir -p dv/small && for f in '%s'/data/*; do ln -s \"$f\" dv/; done && "
        "sed -e 's/^the$/xthe/' -e '/^\\[PAD\\]$/d' '%s/data/bert-base-uncased/vocab.txt' > dv/small/vocab.txt && "
        "echo '[PAD]' >> dv/small/vocab.txt && printf '%%s' '{\"pes\": [\"rpe\"], "
        "\"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, "
        "\"n_train\": 64, \"pretrain_steps\": 10, \"steps\": 1, \"jobs\": 1, \"analyze\": 0, \"vocab\": "
        "\"small/vocab.txt\"}' > voc.json && '%s' study voc.json --data dv --out voc && "
        "grep -q '\"vocab\": \"small/vocab.txt\"' voc/results.jsonl && "
        "cmp dv/small/vocab.txt voc/models/rpe/pretrain/vocab.txt && "
        "grep -q '\"pad_token_id\":.30521' voc/models/rpe/pretrain/config.json && "
        "! cmp -s voc/pretrain/rpe.train_log.jsonl alone/pretrain/rpe.train_log.jsonl && "
        "'%s' study voc.json --data dv --out voc 2>&1 | grep -q '0 PE(s) with runs to go' && "
        "cp -r alone/cache kept-cache && ! '%s' study voc.json --data dv --out alone 2> refused.txt && "
        "diff -r kept-cache alone/cache && grep -q 'line 1 came from a pretraining with \"vocab\" \"\"' refused.txt && "
        "! '%s' study data.json --data dv --out voc 2> refused.txt && "
        "grep -q 'this config.s is \"\": use another' refused.txt && "
        "mkdir -p kv/models/rpe && cp -r voc/models/rpe/pretrain kv/models/rpe/ && "
        "! '%s' study alone.json --data dv --out kv 2> refused.txt && "
        "grep -q 'pretrained with another vocabulary than dv/bert-base-uncased/vocab.txt' refused.txt",
        dir, POSEMB_SHARED, POSEMB_SHARED, POSEMB_BIN, POSEMB_BIN, POSEMB_BIN, POSEMB_BIN, POSEMB_BIN);
    if (tu_run(cmd, out, sizeof out)) fail_msg("vocab: %s", out);
    /* the pretraining text chosen and cut (corpora, corpus_tokens), and its checkpoints kept (pretrain_keep) */
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && printf '%%s' '{\"pes\": [\"ape\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, "
        "\"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 10, "
        "\"steps\": 1, \"jobs\": 1, \"analyze\": 0, \"corpora\": [\"tinyshakespeare\"], "
        "\"corpus_tokens\": 20000, \"pretrain_keep\": 3}' > cut.json && '%s' study cut.json --data '%s/data' "
        "--out cut 2>&1 && test -e cut/cache/tinyshakespeare.safetensors && test ! -e cut/cache/wikitext-2.safetensors "
        "&& test $(ls -d cut/models/ape/pretrain/checkpoint-* | wc -l) = 3",
        dir, POSEMB_BIN, POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "pretraining corpora: 20000 tokens from 1 files"));
    /* epochs: RTE's 2490 pairs at batch 32 for 0.05 passes are ceil(3.9) = 4 steps, fewer than
     * steps; the amplitude rule's spec is recorded (ape starts at the tokens' RMS, learning it) */
    const char *rte = "{\"pes\": [\"ape\"], \"tasks\": [\"RTE\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
                      "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 4, \"steps\": 6, "
                      "\"squad_stride\": 8, \"jobs\": 1, \"analyze\": 0, ";
    data_run(
        "epochs", rte, "\"epochs\": 0.05}",
        "grep -q '\"steps\": 4,' results.jsonl && grep -q '\"spec\": \"ape:scale=1,learned_scale=on\"' results.jsonl");
    /* the same cap from RTE's own budget, the study's epochs lifted */
    data_run("budget_epochs", rte, "\"epochs\": 0, \"task_budgets\": {\"rte\": {\"epochs\": 0.05}}}",
             "grep -q '\"steps\": 4,' results.jsonl && grep -q 'RTE has its own budget: at most 6 steps (fewer where "
             "0.05 epochs take fewer), evaluated every 100.' tables.md");
    /* a stride that leaves no room for context is refused before anything runs */
    const char *bad = "{\"n_train\": 64, \"squad_stride\": 40}";
    snprintf(path, sizeof path, "%s/bad.json", dir);
    assert_int_equal(tu_write_file(path, bad, strlen(bad)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study bad.json --data '%s/data' --out dc", dir, POSEMB_BIN,
             POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "squad_stride 40 must be less than the context window"));
    const char *outside = "{\"corpora\": [\"../etc\"]}";
    snprintf(path, sizeof path, "%s/outside.json", dir);
    assert_int_equal(tu_write_file(path, outside, strlen(outside)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study outside.json --data '%s/data' --out dd", dir, POSEMB_BIN,
             POSEMB_SHARED);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "corpus \"../etc\" must be a path inside the data folder"));
}

/* A run that fails stops the study with that run's error and a non-zero exit, in a
 * worker process or in-process: the run is never skipped (the study once went on to
 * the next run, and finished as if complete). The failure: the folder the first
 * run's model goes to is a file. */
static void test_failed_run(void **state)
{
    char cmd[4096], path[1200];
    const char *cfg = "{\"pes\": [\"ape\", \"rope\"], \"tasks\": [\"order\"], \"seeds\": [1], \"lengths\": [1], "
                      "\"n_train\": 16, \"steps\": 5, \"batch\": 8, \"eval_examples\": 8, \"jobs\": %d}";
    for (int jobs = 1; jobs <= 2; jobs++) {
        char text[512];
        snprintf(text, sizeof text, cfg, jobs);
        snprintf(path, sizeof path, "%s/fail.json", dir);
        assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && rm -rf f && mkdir -p f/models && touch f/models/ape && '%s' study fail.json --out f", dir,
                 POSEMB_BIN);
        int rc = tu_run(cmd, out, sizeof out);
        printf("jobs %d: exit %d: %s\n", jobs, rc, out);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(out, "study run ape / order / seed 1: "));
        assert_non_null(strstr(out, "f/models/ape"));
        assert_null(strstr(out, "wrote"));
    }
}

/* The amplitude rule splits a spec as the spec parser does and rewrites each added
 * absolute PE: random:max=N (no PE alone) is left as written, the PE it draws positions
 * for is rewritten, and sin:base=1e+4 is one component (its '+' is an exponent's), which
 * starts at the tokens' RMS, 0.02 / 0.7071 = 0.0282843 of the sinusoid's; ape:rms=R holds
 * its rows' size itself and is left as written, and so is ape:scale=1 (HF's APE: a scale
 * written at its default value, which the canonical spec omits, is still set). */
static void test_random_positions(void **state)
{
    char cmd[4096], path[1200];
    const char *cfg =
        "{\"pes\": [\"rope+random:max=64\", \"ape+random:max=64\", \"sin:base=1e+4\", \"ape:rms=0.05\", "
        "\"ape:scale=1\"], \"tasks\": "
        "[\"seq_copy\"], \"seeds\": [1], \"lengths\": [1, 2], \"n_train\": 32, \"steps\": 5, \"batch\": 8, "
        "\"eval_examples\": 8, \"jobs\": 1, \"analyze\": 0}";
    snprintf(path, sizeof path, "%s/random.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && '%s' study random.json --out r && test $(grep -c . r/results.jsonl) = 10 && "
        "test $(grep -c '\"spec\": \"ape:rms=0.05,integration=add\"' r/results.jsonl) = 2 && "
        "test $(grep -c '\"spec\": \"ape:integration=add\"' r/results.jsonl) = 2 && "
        "grep -q '\"spec\": \"ape:integration=add,learned_scale=on+random:max=64\"' r/results.jsonl && "
        "grep -q '\"spec\": \"rope:base=10000,pairing=halves,frac=1,scaling=none+random:max=64\"' r/results.jsonl && "
        "grep -q '\"spec\": \"sin:layout=interleaved,base=10000,integration=add,scale=0.0282843,learned_scale=on\"' "
        "r/results.jsonl",
        dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
}

/* A run whose line is longer than any fixed buffer (here 40 kB, as by_input_length
 * makes at long evaluations) counts as done: read cut in pieces, it would parse as no
 * line, and the run be trained again. */
static void test_long_line_done(void **state)
{
    char path[1200], cmd[4096];
    const char *cfg = "{\"pes\": [\"ape\"], \"tasks\": [\"order\"], \"seeds\": [1], \"lengths\": [1], "
                      "\"n_train\": 16, \"steps\": 5, \"analyze\": 0, \"jobs\": 1}";
    snprintf(path, sizeof path, "%s/long.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/long'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(path, sizeof path, "%s/long/results.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"pe\": \"ape\", \"task\": \"order\", \"kind\": \"classification\", \"seed\": 1, "
               "\"n_train\": 16, \"eval_len\": 16, \"metrics\": {\"accuracy\": 0.75}, \"chance\": 0.5, "
               "\"collapsed\": false, \"steps\": 5, \"seconds\": 1, \"pad\": \"");
    for (int i = 0; i < 40000; i++) fputc('x', f);
    fprintf(f, "\"}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study long.json --out long 2>&1 && test $(grep -c . long/results.jsonl) = 1 && "
             "grep -q '^| ape | 0.750 |' long/tables.md",
             dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "1 already in"));
}

static void test_bad_config(void **state)
{
    char path[1200], cmd[4096];
    const char *bad[][2] = {
        {"{\"pes\": [\"rpe:k=0\"]}", "rpe option k=0"},
        {"{\"tasks\": [\"sorting\"]}", "unknown task 'sorting'"},
        {"{\"step\": 10}", "unknown key \"step\""},
        {"{\"seeds\": []}", "\"seeds\" must be a list"},
        {"[1]", "not a JSON object"},
        {"{\"pes\": [\"xpos\"], \"tasks\": [\"reverse\", \"order\"]}",
         "task order (an encoder): spec 'xpos': xpos is defined for decoders"},
        {"{\"pes\": [\"rope:layers=2\"]}", "layer 2 is outside 0..1"},
        {"{\"pe_amplitude\": \"loud\"}", "\"pe_amplitude\" must be \"rule\" or \"defined\""},
        {"{\"epochs\": 2}", "\"epochs\" applies to the real-data study"},
        {"{\"pre_ln\": 1}", "\"pre_ln\", \"pretrain_seed\", \"pretrain_warmup\" and \"vocab\" apply to the real-data"},
        {"{\"pretrain_seed\": 2}", "\"pre_ln\", \"pretrain_seed\", \"pretrain_warmup\" and \"vocab\" apply to the"},
        {"{\"pretrain_warmup\": 100}", "\"pretrain_warmup\" and \"vocab\" apply to the real-data study"},
        {"{\"pretrain_warmup\": -1}", "\"pretrain_warmup\" must be an integer in [0, 10000000]"},
        {"{\"vocab\": \"small/vocab.txt\"}", "and \"vocab\" apply to the real-data study"},
        {"{\"vocab\": \"../vocab.txt\"}", "\"vocab\" must be a vocab.txt path inside the data folder"},
        {"{\"vocab\": \"/etc/vocab.txt\"}", "\"vocab\" must be a vocab.txt path inside"},
        {"{\"vocab\": \"a\\\"b.txt\"}", "(no quotes, backslashes or control characters)"},
        {"{\"vocab\": 3}", "\"vocab\" must be a vocab.txt path inside the data folder"},
        {"{\"pes\": [\"rope+random:max=200\"]}",
         "positions drawn from [0, 200) cannot cover the longest evaluation, 256 tokens (max=256"},
        {"{\"passkey_train\": 0.1}", "\"passkey_train\" applies to the length study"},
        {"{\"model\": {\"tie_word_embeddings\": true}}", "\"model\" applies to the length study"},
        {"{\"ranks_per_run\": 3}", "batch 32 is not a multiple of ranks_per_run 3"},
        {"{\"ranks_per_run\": 0}", "\"ranks_per_run\" must be"},
        {"{\"task_budgets\": [1]}", "\"task_budgets\" must be an object"},
        {"{\"task_budgets\": {\"order\": 3}}", "\"task_budgets\": 'order': must be an object"},
        {"{\"task_budgets\": {\"order\": {\"step\": 3}}}", "'order': unknown key \"step\""},
        {"{\"task_budgets\": {\"order\": {\"lr\": 0}}}",
         "\"task_budgets\": 'order': \"lr\" must be a number in (0, 10)"},
        {"{\"task_budgets\": {\"order\": {\"steps\": 0}}}",
         "\"task_budgets\": 'order': \"steps\" must be an integer in [1, 10000000]"},
        {"{\"task_budgets\": {\"ordr\": {\"steps\": 4}}}", "'ordr': not one of the study's tasks"},
        {"{\"task_budgets\": {\"order\": {\"steps\": 4}, \"Order\": {\"curve_every\": 2}}}",
         "'Order': the task has a budget already"},
        {"{\"task_budgets\": {\"order\": {\"epochs\": 2}}}",
         "\"task_budgets\" of order: \"epochs\" applies to the real-data study"},
        {"{\"task_budgets\": {\"order\": {\"steps\": 1000, \"curve_every\": 10}}}",
         "task order: 1000 steps with curve_every 10 make 100 curve points; at most 64"}};
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        snprintf(path, sizeof path, "%s/bad.json", dir);
        assert_int_equal(tu_write_file(path, bad[i][0], strlen(bad[i][0])), 0);
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study bad.json --out c", dir, POSEMB_BIN);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc != 2 || !strstr(out, bad[i][1])) fail_msg("%s: exit %d: %s", bad[i][0], rc, out);
    }
}

/* The synthetic default's learning rate for its classification tasks; the
 * real-data default's budget for SQuAD-locate, found whatever the case of
 * the name; a config's own steps, epochs or curve_every drop it (their budget
 * is for every task), {} drops it, other keys keep it. */
static void test_default_budget(void **state)
{
    /* the synthetic default: its classification tasks at 1e-3, the rest at the study's 3e-3 */
    posemb_study_config s = posemb_study_default(), sb;
    assert_true(posemb_study_for_task(&s, "absolute", &sb)->lr == 1e-3f && sb.steps == 350);
    assert_true(posemb_study_for_task(&s, "order", &sb)->lr == 1e-3f && sb.curve_every == 50);
    assert_true(posemb_study_for_task(&s, "offset", &sb)->lr == 3e-3f);
    assert_true(posemb_study_for_task(&s, "reverse", &sb)->lr == 3e-3f);
    posemb_study_config c = posemb_study_data_default("data"), b;
    assert_int_equal(c.n_budgets, 1);
    const posemb_study_config *t = posemb_study_for_task(&c, "squad-LOCATE", &b);
    assert_int_equal(t->steps, 3600);
    assert_true(t->epochs == 10);
    assert_int_equal(t->curve_every, 300);
    assert_true(t->lr == 1e-3f);
    t = posemb_study_for_task(&c, "SST-2", &b);
    assert_int_equal(t->steps, 1200);
    assert_true(t->epochs == 3);
    assert_int_equal(t->curve_every, 100);
    const char *cfg[][2] = {{"{\"lr\": 0.001}", "0"},        {"{\"steps\": 10}", "0"},
                            {"{\"epochs\": 1}", "0"},        {"{\"curve_every\": 5}", "0"},
                            {"{\"task_budgets\": {}}", "0"}, {"{\"task_budgets\": {\"sst2\": {\"steps\": 7}}}", "1"}};
    char path[1200];
    snprintf(path, sizeof path, "%s/default.json", dir);
    for (int i = 0; i < (int)(sizeof cfg / sizeof *cfg); i++) {
        posemb_error err;
        c = posemb_study_data_default("data");
        assert_int_equal(tu_write_file(path, cfg[i][0], strlen(cfg[i][0])), 0);
        if (posemb_study_config_load(&c, path, &err)) fail_msg("%s: %s", cfg[i][0], err.msg);
        assert_int_equal(c.n_budgets, atoi(cfg[i][1]));
    }
    assert_int_equal(posemb_study_for_task(&c, "SST-2", &b)->steps, 7); /* GLUE's spelling folded */
    assert_int_equal(posemb_study_for_task(&c, "SQuAD-locate", &b)->steps, 1200);
    /* a budget of an lr alone: the task's lr, the study's steps */
    const char *lr = "{\"task_budgets\": {\"SQuAD-locate\": {\"lr\": 0.002}}}";
    posemb_error err;
    c = posemb_study_data_default("data");
    assert_int_equal(tu_write_file(path, lr, strlen(lr)), 0);
    if (posemb_study_config_load(&c, path, &err)) fail_msg("%s: %s", lr, err.msg);
    t = posemb_study_for_task(&c, "SQuAD-locate", &b);
    assert_true(t->lr == 0.002f && t->steps == 1200 && t->curve_every == 100);
    assert_true(posemb_study_for_task(&c, "RTE", &b)->lr == 3e-4f);
}

/* A task's budget replaces steps, curve_every and lr for that task alone:
 * order trains 20 steps with curve points at 10 and 20, absolute the
 * study's 30; a budget's lr changes order's run and no other. And absolute
 * studied alone gives the line it got second in the list: a run's data
 * follow from its task's name and seed, not from the task's place. */
#define BUDGET_STUDY                                                                                                   \
    "\"pes\": [\"ape\"], \"seeds\": [1], \"lengths\": [1], \"n_train\": 16, \"steps\": 30, \"batch\": 8, "             \
    "\"eval_examples\": 16, \"curve_every\": 15, \"jobs\": 1, \"analyze\": 0"

static void test_task_budget(void **state)
{
    char path[1200], cmd[4096];
    const char *cfg = "{\"tasks\": [\"order\", \"absolute\"], " BUDGET_STUDY
                      ", \"task_budgets\": {\"order\": {\"steps\": 20, \"curve_every\": 10}}}";
    snprintf(path, sizeof path, "%s/budget.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study budget.json --out tb && "
             "grep -q '\"task\": \"order\".*\"steps\": 20,.*\"curve\": \\[\\[10, [0-9.]*\\], \\[20, [0-9.]*\\]\\]' "
             "tb/results.jsonl && "
             "grep -q '\"task\": \"absolute\".*\"steps\": 30,.*\"curve\": \\[\\[15, [0-9.]*\\], \\[30, [0-9.]*\\]\\]' "
             "tb/results.jsonl && grep -q 'order has its own budget: 20 steps, evaluated every 10.' tb/tables.md",
             dir, POSEMB_BIN);
    if (tu_run(cmd, out, sizeof out)) fail_msg("task budget: %s", out);
    /* a budget's lr: order's run alone changes; at the study's own lr (3e-3) nothing does */
    const char *lrs[] = {"0.000001", "0.003"};
    for (int i = 0; i < 2; i++) {
        char cfg_lr[2048], run[16]; /* "tl" and any int */
        snprintf(cfg_lr, sizeof cfg_lr, "%.*s, \"lr\": %s}}}", (int)(strlen(cfg) - 3), cfg, lrs[i]);
        snprintf(path, sizeof path, "%s/budget_lr%d.json", dir, i);
        assert_int_equal(tu_write_file(path, cfg_lr, strlen(cfg_lr)), 0);
        snprintf(run, sizeof run, "tl%d", i);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' study budget_lr%d.json --out %s && for r in tb %s; do for t in order absolute; do "
                 "grep \"\\\"task\\\": \\\"$t\\\"\" $r/results.jsonl | sed 's/, \"seconds\": [0-9.]*//' > $r.$t; done; "
                 "done && cmp -s tb.absolute %s.absolute && %s cmp -s tb.order %s.order && "
                 "grep -q 'order has its own budget: 20 steps%s, evaluated every 10.' %s/tables.md",
                 dir, POSEMB_BIN, i, run, run, run, i ? "" : "!", run, i ? "" : " at learning rate 1e-06", run);
        if (tu_run(cmd, out, sizeof out)) fail_msg("task budget with lr %s: %s", lrs[i], out);
    }
    const char *alone = "{\"tasks\": [\"absolute\"], " BUDGET_STUDY "}";
    snprintf(path, sizeof path, "%s/alone.json", dir);
    assert_int_equal(tu_write_file(path, alone, strlen(alone)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' study alone.json --out ta && sed 's/, \"seconds\": [0-9.]*//' ta/results.jsonl > "
             "ta.absolute && cmp tb.absolute ta.absolute",
             dir, POSEMB_BIN);
    if (tu_run(cmd, out, sizeof out)) fail_msg("a task studied alone: %s", out);
}

/* With arguments: only the tests named, or with --except first all but them
 * (ctest runs the slow ones as tests of their own, side by side with the rest). */
int main(int argc, char **argv)
{
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_resume_same_results), cmocka_unit_test(test_task_models),
        cmocka_unit_test(test_lm_exact_match),      cmocka_unit_test(test_lm_ranking),
        cmocka_unit_test(test_claims_report),       cmocka_unit_test(test_doc_configs),
        cmocka_unit_test(test_failed_run),          cmocka_unit_test(test_random_positions),
        cmocka_unit_test(test_finetune_resume),     cmocka_unit_test(test_tasks),
        cmocka_unit_test(test_reverse_task),        cmocka_unit_test(test_data_study),
        cmocka_unit_test(test_bad_config),          cmocka_unit_test(test_long_line_done),
        cmocka_unit_test(test_task_budget),         cmocka_unit_test(test_default_budget),
    };
    struct CMUnitTest tests[sizeof all / sizeof *all];
    size_t n = 0;
    int except = argc > 1 && !strcmp(argv[1], "--except");
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        int named = 0;
        for (int a = 1 + except; a < argc; a++) named |= !strcmp(argv[a], all[i].name);
        if (argc < 2 || named != except) tests[n++] = all[i];
    }
    if (!n) fail_msg("no test of that name");
    return _cmocka_run_group_tests("test_study", tests, n, setup, teardown);
}
