/* `posemb train` as a user runs it: killed with SIGKILL at many moments and
 * resumed each time, it must end with the loss curve of a run never
 * stopped; a second process on the same run is refused; bad arguments and
 * data give one-line errors. Uses a vocab and corpus written here. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char *dir;
static char out[1 << 14];

static int setup(void **state)
{
    dir = tu_tmpdir();
    char path[1200];
    tu_write_toy_corpus(dir, 12345);
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    assert_int_equal(tu_write_file(path, "", 0), 0);
    snprintf(path, sizeof path, "%s/binary.bin", dir);
    assert_int_equal(tu_write_file(path, "ab\0cd", 5), 0);
    snprintf(path, sizeof path, "%s/small.txt", dir);
    assert_int_equal(tu_write_file(path, "the king sleeps .", 17), 0);
    /* A byte-level BPE with RoBERTa's <s> and </s> but no <mask>. */
    snprintf(path, sizeof path, "%s/nomask.json", dir);
    const char *bpe = "{\"<s>\": 0, \"</s>\": 1, \"the\": 2, \"\u0120\": 3}";
    assert_int_equal(tu_write_file(path, bpe, strlen(bpe)), 0);
    snprintf(path, sizeof path, "%s/nomask.txt", dir);
    assert_int_equal(tu_write_file(path, "#version: 0.2\n", 14), 0);
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    free(dir);
    return 0;
}

#define TRAIN_ARGS                                                                                                     \
    "--model bert --pe lsin+lsrpe:k=4 --data %s/corpus.txt --vocab %s/vocab.txt --layers 1 --hidden 16 --heads 2 "     \
    "--seq-len 16 --batch-size 8 --steps 80 --save-every 1 --eval-every 20 --eval-batches 2 --threads 1"

static int train(const char *extra, const char *run)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' train " TRAIN_ARGS " --out %s/%s %s", POSEMB_BIN, dir, dir, dir, run, extra);
    return tu_run(cmd, out, sizeof out);
}

/* The train losses of a run's log, in order. */
static int read_losses(const char *run, double *loss, int cap)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, run);
    return tu_read_train_log(path, loss, NULL, cap);
}

/* Starts posemb train (fresh or --resume) and kills it after delay_ms; returns
 * 1 if it finished on its own first. */
static int run_and_kill(int resume, int delay_ms)
{
    char cmd[4096];
    int n = resume ? snprintf(cmd, sizeof cmd, "exec '%s' train --resume --out %s/b --threads 1 > /dev/null 2>&1",
                              POSEMB_BIN, dir)
                   : snprintf(cmd, sizeof cmd, "exec '%s' train " TRAIN_ARGS " --out %s/b > /dev/null 2>&1", POSEMB_BIN,
                              dir, dir, dir);
    assert_true(n > 0 && n < (int)sizeof cmd);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return 0;
}

static void test_kill_and_resume(void **state)
{
    int rc = train("", "a");
    if (rc) fail_msg("posemb train exited %d: %s", rc, out);
    double a[128], b[128];
    int na = read_losses("a", a, 128);
    assert_int_equal(na, 80);
    const int delays[] = {15, 40, 25, 60, 35, 80, 30, 120, 50, 200, 400, 1000, 3000, 8000};
    int done = 0, kills = 0;
    char runjson[1200];
    snprintf(runjson, sizeof runjson, "%s/b/run.json", dir);
    for (size_t i = 0; !done && i < sizeof delays / sizeof *delays; i++) {
        /* as a user would: resume once the run exists, else start it again */
        done = run_and_kill(access(runjson, F_OK) == 0, delays[i]);
        kills += !done;
    }
    if (!done) { /* whatever is left, uninterrupted (a sanitizer build on a busy machine may never get
                  * as far as run.json within the delays: then the run starts again, as in the loop) */
        char cmd[4096];
        if (access(runjson, F_OK) == 0)
            snprintf(cmd, sizeof cmd, "'%s' train --resume --out %s/b --threads 1", POSEMB_BIN, dir);
        else snprintf(cmd, sizeof cmd, "'%s' train " TRAIN_ARGS " --out %s/b", POSEMB_BIN, dir, dir, dir);
        rc = tu_run(cmd, out, sizeof out);
        if (rc) fail_msg("resume exited %d: %s", rc, out);
    }
    int nb = read_losses("b", b, 128);
    assert_int_equal(nb, na);
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) fail_msg("step %d: %.9g uninterrupted, %.9g after %d kills", i + 1, a[i], b[i], kills);
    printf("killed %d times, resumed: the 80 losses equal the uninterrupted run's\n", kills);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' forward %s/b --inputs /dev/null --out %s/x.safetensors", POSEMB_BIN, dir, dir);
    rc = tu_run(cmd, out, sizeof out); /* the run folder loads as a model: the inputs are what fail */
    if (rc != 1 || !strstr(out, "/dev/null")) fail_msg("forward on the resumed run exited %d: %s", rc, out);
}

/* A kill after the last checkpoint but before the final model (or before
 * the tokenizer's copy) leaves a run folder that is not a model folder;
 * --resume completes it, with the model the uninterrupted run wrote. */
static void resume_completes(const char *extra, const char *run)
{
    int rc = train(extra, run);
    if (rc) fail_msg("posemb train exited %d: %s", rc, out);
    char path[1200], saved[1200];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, run);
    snprintf(saved, sizeof saved, "%s/%s-model.safetensors", dir, run);
    assert_int_equal(rename(path, saved), 0);
    const char *gone[] = {"config.json", "vocab.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s/%s", dir, run, gone[i]);
        assert_int_equal(unlink(path), 0);
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' train --resume --out %s/%s --threads 1", POSEMB_BIN, dir, run);
    rc = tu_run(cmd, out, sizeof out);
    if (rc || !strstr(out, "nothing to do")) fail_msg("resume of a finished run exited %d: %s", rc, out);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s/%s", dir, run, gone[i]);
        if (access(path, F_OK)) fail_msg("%s not restored by --resume", path);
    }
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s/%s/model.safetensors'", saved, dir, run);
    assert_int_equal(system(cmd), 0);
    printf("--resume of a finished run%s restored its model (byte-identical), config and vocabulary\n", extra);
}

/* With --pre-ln the checkpoints hold pre-LN layers: --resume must rebuild
 * them from run.json, or the checkpoint's names would not load. */
static void test_resume_completes_folder(void **state)
{
    resume_completes("", "fin");
    resume_completes(" --pre-ln", "finpre");
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "grep -q '\"posemb_pre_ln\":' '%s/finpre/config.json' && grep -q '\"pre_ln\":\t1' '%s/finpre/run.json'",
             dir, dir);
    assert_int_equal(system(cmd), 0);
}

/* --init without --pe keeps the checkpoint's PE: "fin" holds lsin+lsrpe, whose
 * tensors a default ape would have dropped (and a fresh ape table initialised).
 * Tensors of the checkpoint the model does not read are counted, not dropped in silence. */
static void test_init_keeps_pe(void **state)
{
    char cmd[4096], path[1200];
    snprintf(cmd, sizeof cmd,
             "'%s' train --model bert --init %s/fin --data %s/corpus.txt --out %s/fromfin --seq-len 16 "
             "--batch-size 8 --steps 2 --eval-every 2 --eval-batches 1 --threads 1",
             POSEMB_BIN, dir, dir, dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s: %s", cmd, out);
    if (!strstr(out, ": 0 tensors not in the checkpoint were initialised; 0 of its tensors not read\n"))
        fail_msg("%s", out);
    snprintf(path, sizeof path, "%s/fromfin/config.json", dir);
    snprintf(cmd, sizeof cmd, "grep -q '\"posemb_pe\":.*lsin+lsrpe' '%s'", path);
    assert_int_equal(system(cmd), 0);
    /* An explicit --pe builds another PE: the checkpoint's lsin+lsrpe tensors are counted as not read. */
    snprintf(cmd, sizeof cmd,
             "'%s' train --model bert --init %s/fin --pe ape --data %s/corpus.txt --out %s/fromfin-ape --seq-len 16 "
             "--batch-size 8 --steps 1 --eval-every 1 --eval-batches 1 --threads 1",
             POSEMB_BIN, dir, dir, dir);
    if (tu_run(cmd, out, sizeof out)) fail_msg("%s: %s", cmd, out);
    if (!strstr(out, " of its tensors not read (the first: ") || strstr(out, "; 0 of its tensors not read"))
        fail_msg("%s", out);
}

static void test_lock_and_errors(void **state)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/a/.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0 && flock(fd, LOCK_EX) == 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' train --resume --out %s/a", POSEMB_BIN, dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "another posemb process is training in this folder"));
    close(fd);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "finished at step 80; nothing to do"));
    assert_int_equal(train("", "a"), 2); /* a fresh run into a folder that holds one */
    assert_non_null(strstr(out, "already holds a run"));
    struct {
        const char *args, *needle;
        int rc;
    } cases[] = {
        {"--model t5 --data x --out y", "--model t5: one of bert, roberta, gpt2", 2},
        {"--model bert --data x --out y --precision fp16", "--precision fp16: one of fp32, bf16", 2},
        {"--model gpt2 --task mlm --data x --out y", "does not fit --model gpt2", 2},
        {"--model llama --pre-ln --data x --out y", "--pre-ln: BERT and RoBERTa only", 2},
        {"--model bert --pre-ln --init %s/fin --data %s/corpus.txt --out %s/h", "/fin holds a post-LN BertForMaskedLM",
         2},
        {"--resume --out /nonexistent/run", "no run to resume", 1},
        {"--resume --out y --steps 3", "give only --out", 2},
        {"--model bert --data /nonexistent --out %s/c --vocab %s/vocab.txt", "/nonexistent", 1},
        {"--model bert --data %s/vocab.txt --out %s/d --vocab %s/vocab.txt --seq-len 600 --max-position 64", "exceeds",
         2},
        {"--model bert --data %s/empty.txt --out %s/e --vocab %s/vocab.txt", "empty.txt: the corpus has no tokens", 1},
        {"--model bert --data %s/binary.bin --out %s/f --vocab %s/vocab.txt", "binary.bin: not a text file", 1},
        {"--model bert --data %s/corpus.txt --out %s/g --vocab %s/nope.txt", "nope.txt", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[2048];
        snprintf(args, sizeof args, cases[i].args, dir, dir, dir);
        snprintf(cmd, sizeof cmd, "'%s' train %s", POSEMB_BIN, args);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc != cases[i].rc || !strstr(out, cases[i].needle)) fail_msg("'%s': exit %d: %s", args, rc, out);
    }
}

/* The names of a folder's entries, sorted and joined by spaces ("-" when
 * the folder does not exist). */
static void folder_listing(const char *name, char *buf, size_t cap)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ls -A '%s/%s' 2>/dev/null | sort | tr '\\n' ' ' || true; test -d '%s/%s' || printf -",
             dir, name, dir, name);
    assert_int_equal(tu_run(cmd, buf, cap), 0);
}

/* A run that cannot start leaves --out as it found it: no new folder, or an
 * existing one with only what it held (here after failures before the
 * corpus is read, after the token cache is written, and in the tokenizer
 * check that names RoBERTa's own special tokens; an empty folder stays). */
static void test_failed_start_leaves_no_folder(void **state)
{
    char cmd[4096], args[2048], listing[1024], path[1200];
    snprintf(path, sizeof path, "%s/kept", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/kept/notes.txt", dir);
    assert_int_equal(tu_write_file(path, "mine", 4), 0);
    snprintf(path, sizeof path, "%s/bare", dir); /* an empty folder: nothing to list (UBSan caught qsort(NULL)) */
    assert_int_equal(mkdir(path, 0755), 0);
    struct {
        const char *args, *folder, *needle, *listing;
    } cases[] = {
        {"--model bert --data %s/empty.txt --vocab %s/vocab.txt --out %s/new1", "new1", "the corpus has no tokens",
         "-"},
        {"--model bert --data %s/small.txt --vocab %s/vocab.txt --seq-len 16 --out %s/new2", "new2",
         "fewer than one sequence", "-"},
        {"--model roberta --data %s/corpus.txt --vocab %s/nomask.json --merges %s/nomask.txt --out %s/new3", "new3",
         "masked LM needs the tokenizer's <s>, </s> and <mask> tokens; ", "-"},
        {"--model bert --data %s/binary.bin --vocab %s/vocab.txt --out %s/kept", "kept", "not a text file",
         "notes.txt "},
        {"--model bert --data %s/binary.bin --vocab %s/vocab.txt --out %s/bare", "bare", "not a text file", ""},
        {"--model bert --data %s/bare --vocab %s/vocab.txt --out %s/new4", "new4", "the corpus has no tokens (0 files)",
         "-"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *a = cases[i].args;
        int dirs = 0;
        for (const char *p = a; (p = strstr(p, "%s")); p++) dirs++;
        if (dirs == 3) snprintf(args, sizeof args, a, dir, dir, dir);
        else snprintf(args, sizeof args, a, dir, dir, dir, dir);
        snprintf(cmd, sizeof cmd, "'%s' train %s --layers 1 --hidden 16 --heads 2 --steps 2", POSEMB_BIN, args);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc == 0 || !strstr(out, cases[i].needle)) fail_msg("'%s': exit %d: %s", args, rc, out);
        folder_listing(cases[i].folder, listing, sizeof listing);
        if (strcmp(listing, cases[i].listing)) fail_msg("'%s' left %s/%s as [%s]", args, dir, cases[i].folder, listing);
    }
}

/* --precision bf16 trains with bf16 products (or, on a CPU without them,
 * says so and trains in fp32), keeps the precision for --resume, and follows
 * the fp32 loss curve closely. */
static void test_precision(void **state)
{
    double l32[64], l16[64];
    assert_int_equal(train("--steps 30 --save-every 0", "p32"), 0);
    assert_non_null(strstr(out, "fp32 products"));
    assert_int_equal(train("--steps 30 --save-every 0 --precision bf16", "p16"), 0);
    assert_true(strstr(out, "bf16 products") || strstr(out, "--precision bf16: this"));
    int bf16 = strstr(out, "bf16 products") != NULL;
    char path[1200], text[4096];
    snprintf(path, sizeof path, "%s/p16/run.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "\"precision\":\t\"bf16\""));
    int n = read_losses("p32", l32, 64);
    assert_int_equal(read_losses("p16", l16, 64), n);
    double worst = 0;
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(l16[i] - l32[i]) / l32[i]);
    printf("%s products: loss %.4f -> %.4f (fp32 %.4f -> %.4f), worst relative gap %.4f over %d logged steps\n",
           bf16 ? "bf16" : "fp32 (no bf16 here)", l16[0], l16[n - 1], l32[0], l32[n - 1], worst, n);
    assert_true(n >= 3 && worst < 0.02);
    assert_true(bf16 ? worst > 0 : worst == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_and_resume),
        cmocka_unit_test(test_resume_completes_folder),
        cmocka_unit_test(test_init_keeps_pe),
        cmocka_unit_test(test_lock_and_errors),
        cmocka_unit_test(test_failed_start_leaves_no_folder),
        cmocka_unit_test(test_precision),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
