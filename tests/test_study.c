/* The study end to end: two PEs on one task with two seeds, once straight
 * and once killed and resumed, give the same results.jsonl (timings
 * aside); the tables and report are written; synthetic tasks are what
 * they say; a bad config is one clear error. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "posemb/synthetic.h"
#include "testutil.h"

static char *dir;
static char out[1 << 15];

static int setup(void **state)
{
    dir = tu_tmpdir();
    char path[1200];
    const char *cfg = "{\"pes\": [\"none\", \"ape\"], \"tasks\": [\"order\"], \"seeds\": [1, 2], \"lengths\": [1, 2], "
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

/* The lines of a results file without their timings, sorted, joined. */
static char *canonical(const char *run)
{
    char path[1200], line[8192];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *lines[64];
    int n = 0;
    while (n < 64 && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        cJSON_DeleteItemFromObject(j, "seconds");
        lines[n++] = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    fclose(f);
    for (int i = 0; i < n; i++) /* sort: workers may finish in any order */
        for (int k = i + 1; k < n; k++)
            if (strcmp(lines[k], lines[i]) < 0) {
                char *t = lines[i];
                lines[i] = lines[k], lines[k] = t;
            }
    char *all = calloc(1, 1 << 16);
    for (int i = 0; i < n; i++) strcat(strcat(all, lines[i]), "\n"), free(lines[i]);
    return all;
}

static int count_lines(const char *run)
{
    char path[1200], line[8192];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n++;
    if (f) fclose(f);
    return n;
}

static void test_resume_same_results(void **state)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out a", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(count_lines("a"), 8); /* 2 PEs x 2 seeds x 2 lengths */
    /* b: killed once its first run is recorded, then resumed */
    pid_t pid = fork();
    if (pid == 0) {
        snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' study cfg.json --out b > /dev/null 2>&1", dir, POSEMB_BIN);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {0, 5000000};
    for (int i = 0; i < 4000 && count_lines("b") < 2; i++) nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    int before = count_lines("b");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out b", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    printf("killed after %d of 8 lines; resumed\n", before);
    assert_true(before < 8);
    char *a = canonical("a"), *b = canonical("b");
    assert_string_equal(a, b);
    free(a), free(b);
    snprintf(cmd, sizeof cmd, "cd '%s/a' && test -s tables.md && test -s tables.csv && test -s report.html && "
             "grep -q '| none |' tables.md && grep -q '^ape,order,classification,16,' tables.csv", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* a finished study has nothing left to do */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study cfg.json --out a", dir, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "4 already in"));
}

/* The tasks hold what they say: markers placed, labels and spans right. */
static void test_tasks(void **state)
{
    enum { B = 200, T = 40 };
    static int32_t ids[B * T], lab[B], st[B], en[B];
    int yes = 0;
    posemb_syn_batch(posemb_syn_find("order"), 3, 0, B, T, 32, ids, lab, st, en);
    for (int b = 0; b < B; b++) {
        int a = -1, c = -1;
        for (int t = 0; t < T; t++) a = ids[b * T + t] == SYN_A ? t : a, c = ids[b * T + t] == SYN_B ? t : c;
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
    static int32_t again[B * T];
    posemb_syn_batch(posemb_syn_find("copy"), 3, 0, B, T, 32, again, lab, st, en);
    assert_memory_equal(ids, again, sizeof ids);
    TU_CLOSE(posemb_syn_chance(posemb_syn_find("absolute"), 32, 32), 1 - 15.0 / 31, 1e-12, 0, "chance", 0);
}

static void test_bad_config(void **state)
{
    char path[1200], cmd[4096];
    const char *bad[][2] = {{"{\"pes\": [\"rpe:k=0\"]}", "rpe option k=0"}, {"{\"tasks\": [\"sorting\"]}", "unknown task 'sorting'"},
                            {"{\"step\": 10}", "unknown key \"step\""}, {"{\"seeds\": []}", "\"seeds\" must be a list"},
                            {"[1]", "not a JSON object"}};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/bad.json", dir);
        assert_int_equal(tu_write_file(path, bad[i][0], strlen(bad[i][0])), 0);
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' study bad.json --out c", dir, POSEMB_BIN);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc != 2 || !strstr(out, bad[i][1])) fail_msg("%s: exit %d: %s", bad[i][0], rc, out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_same_results),
        cmocka_unit_test(test_tasks),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
