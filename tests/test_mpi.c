/* `mpirun -np 2 posemb train` (oversubscribed, on one machine) as a user
 * runs it: the same loss curve and model as one process with the same global
 * batch, to float rounding (the gradient sums are grouped differently); a
 * rank killed with SIGKILL ends the job, and --resume on the group ends
 * with that curve too; an accum the ranks cannot share and a subcommand
 * that runs alone are refused with one line. Skipped when posemb was built
 * without MPI or mpirun is missing. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "posemb/model.h"
#include "posemb/trainer.h"
#include "testutil.h"

static char *dir;
static char out[1 << 15];

/* mpirun as root in a container (CI), shared memory without ptrace rights, more ranks than cores. */
#define MPIRUN_NP(n)                                                                                                   \
    "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "     \
    "OMPI_MCA_rmaps_base_oversubscribe=1 '" POSEMB_MPIEXEC "' -np " #n " -x OMP_NUM_THREADS=1 "
#define MPIRUN MPIRUN_NP(2)

/* BERT with dropout, learned frequencies and an RPE: the ranks must draw the masks one process would, and a
 * resumed rank must rebuild its sinusoid from the weights it receives. */
#define TRAIN_ARGS                                                                                                     \
    "--model bert --pe lsin+rpe:k=4 --data %s/corpus.txt --vocab %s/vocab.txt --layers 2 --hidden 16 --heads 2 "       \
    "--seq-len 16 --batch-size 4 --accum 4 --steps 40 --save-every 5 --eval-every 10 --eval-batches 3 --dropout 0.1"

static int setup(void **state)
{
    dir = tu_tmpdir(); /* even unused (no MPI): a dir the compiler can prove null fails -Wformat-truncation */
    if (POSEMB_MPIEXEC[0]) tu_write_toy_corpus(dir, 4321);
    return 0;
}

static int teardown(void **state)
{
    if (dir) tu_rmtree(dir);
    free(dir);
    return 0;
}

/* Runs posemb train for run (prefix: "" or MPIRUN), fresh or resumed. */
static int train(const char *prefix, const char *run, int resume)
{
    char cmd[4096];
    if (resume) snprintf(cmd, sizeof cmd, "%s'%s' train --resume --out %s/%s", prefix, POSEMB_BIN, dir, run);
    else snprintf(cmd, sizeof cmd, "%s'%s' train " TRAIN_ARGS " --out %s/%s", prefix, POSEMB_BIN, dir, dir, dir, run);
    return tu_run(cmd, out, sizeof out);
}

/* The losses of a run's log: train and eval lines in order. */
static int read_log(const char *run, double *loss, int *eval, int cap)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, run);
    return tu_read_train_log(path, loss, eval, cap);
}

/* Run b's log equals run a's to rtol (the curve one process gives). */
static void assert_same_log(const char *a, const char *b, double rtol)
{
    double la[128], lb[128];
    int ea[128], eb[128];
    int na = read_log(a, la, ea, 128), nb = read_log(b, lb, eb, 128);
    assert_int_equal(na, nb);
    assert_int_equal(na, 40 + 4);
    double worst = 0;
    for (int i = 0; i < na; i++) {
        assert_int_equal(ea[i], eb[i]);
        TU_CLOSE(lb[i], la[i], 0, rtol, "loss", i);
        worst = fmax(worst, fabs(lb[i] - la[i]) / fabs(la[i]));
    }
    printf("%s: %d losses within %.1e (relative) of %s's\n", b, na, worst, a);
}

/* Every tensor of run b's final model within tol of its largest value in
 * run a's, plus 1e-7: a key bias has no gradient in exact arithmetic, and
 * AdamW turns the rounding noise it gets into steps of that size. */
static void assert_same_model(const char *a, const char *b, double tol)
{
    char pa[1200], pb[1200];
    posemb_model *ma, *mb;
    posemb_error err;
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    assert_int_equal(posemb_model_load(&ma, pa, &err), 0);
    assert_int_equal(posemb_model_load(&mb, pb, &err), 0);
    assert_int_equal(posemb_model_n_params(ma), posemb_model_n_params(mb));
    double worst = 0;
    for (int i = 0; i < posemb_model_n_params(ma); i++) {
        const posemb_param *x = posemb_model_param(ma, i);
        const float *wa = posemb_model_weights(ma) + x->offset, *wb = posemb_model_weights(mb) + x->offset;
        double big = 0, diff = 0;
        for (size_t k = 0; k < x->numel; k++) {
            big = fmax(big, fabs(wa[k]));
            diff = fmax(diff, fabs(wa[k] - wb[k]));
        }
        if (diff > tol * big + 1e-7) fail_msg("%s: %s differs by %g (largest value %g)", b, x->name, diff, big);
        if (big > 1e-3) worst = fmax(worst, diff / big);
    }
    printf("%s: every tensor within %.1e of its largest value in %s's (those above 1e-3)\n", b, worst, a);
    posemb_model_free(ma);
    posemb_model_free(mb);
}

static void test_two_ranks_train_as_one(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    int rc = train("env OMP_NUM_THREADS=1 ", "one", 0);
    if (rc) fail_msg("one process exited %d: %s", rc, out);
    rc = train(MPIRUN, "two", 0);
    if (rc) fail_msg("mpirun -np 2 exited %d: %s", rc, out);
    if (!strstr(out, "on each of 2 ranks")) fail_msg("no group in the output: %s", out);
    assert_same_log("one", "two", 1e-5);
    assert_same_model("one", "two", 1e-5);
}

/* pid of a child of parent (a rank under mpirun), or 0. */
static pid_t child_of(pid_t parent)
{
    char cmd[128], line[64];
    snprintf(cmd, sizeof cmd, "pgrep -P %d posemb", (int)parent);
    FILE *p = popen(cmd, "r");
    pid_t pid = p && fgets(line, sizeof line, p) ? (pid_t)atoi(line) : 0;
    if (p) pclose(p);
    return pid;
}

/* Runs cmd (exec mpirun ...) and SIGKILLs one rank once the run folder
 * holds checkpoint `at` or a later one; returns 1 if cmd finished first. */
static int kill_rank_at(const char *cmd, const char *run, long at)
{
    char path[POSEMB_PATH_MAX];
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status;
    for (int waited = 0; waited < 60000 && posemb_checkpoint_latest(run, path, sizeof path) < at; waited += 5) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    pid_t rank = child_of(pid); /* exec: pid is mpirun, its children the ranks */
    if (rank) kill(rank, SIGKILL);
    waitpid(pid, &status, 0); /* mpirun ends the other rank */
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Starts the group (fresh or resumed) and kills one rank at checkpoint `at`. */
static int run_and_kill_rank(int resume, long at)
{
    char cmd[4096], run[1200];
    snprintf(run, sizeof run, "%s/killed", dir);
    if (resume)
        snprintf(cmd, sizeof cmd, "exec " MPIRUN "'%s' train --resume --out %s > /dev/null 2>&1", POSEMB_BIN, run);
    else
        snprintf(cmd, sizeof cmd, "exec " MPIRUN "'%s' train " TRAIN_ARGS " --out %s > /dev/null 2>&1", POSEMB_BIN, dir,
                 dir, run);
    return kill_rank_at(cmd, run, at);
}

static void test_killed_rank_resumes(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    int finished = run_and_kill_rank(0, 5), kills = !finished;
    for (long at = 15; !finished && at < 40; at += 10) {
        finished = run_and_kill_rank(1, at);
        kills += !finished;
    }
    if (!finished) {
        int rc = train(MPIRUN, "killed", 1);
        if (rc) fail_msg("the last --resume exited %d: %s", rc, out);
    }
    printf("a rank killed %d times, the group resumed each time\n", kills);
    assert_true(kills > 0);
    assert_same_log("one", "killed", 1e-5);
    assert_same_model("one", "killed", 1e-5);
}

/* Runs one and two (study folders in dir) hold the same lines, timings aside. */
static void assert_same_results(const char *one, const char *two)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, one);
    char *a = tu_results_canonical(path);
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, two);
    char *b = tu_results_canonical(path);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* The study across ranks gives the lines of one process: each run is a function of its seed. */
static void test_study_across_ranks(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    char path[1200], cmd[4096];
    const char *cfg = "{\"pes\": [\"none\", \"ape\", \"rope\"], \"tasks\": [\"order\", \"reverse\"], "
                      "\"seeds\": [1, 2], \"lengths\": [1, 2], \"n_train\": 16, \"steps\": 30, \"batch\": 16, "
                      "\"eval_examples\": 32, \"curve_every\": 10, \"analyze\": 0}";
    snprintf(path, sizeof path, "%s/study.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && env OMP_NUM_THREADS=1 '%s' study study.json --jobs 1 --out one", dir,
             POSEMB_BIN);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc) fail_msg("one process exited %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "cd '%s' && " MPIRUN "'%s' study study.json --out two", dir, POSEMB_BIN);
    rc = tu_run(cmd, out, sizeof out);
    if (rc || !strstr(out, "12 unit(s) to go on 2 ranks")) fail_msg("mpirun -np 2 study exited %d: %s", rc, out);
    assert_same_results("one", "two");
    snprintf(cmd, sizeof cmd, "test -s '%s/two/tables.md' && test -s '%s/two/report.html'", dir, dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    printf("the study on 2 ranks: the 24 lines of one process\n");
}

/* The largest difference between the numbers of two canonical results files,
 * which must agree in everything else; -1 when they do not. */
static double results_diff(const char *a, const char *b)
{
    double worst = 0;
    while (*a && *b) {
        char *ea, *eb;
        int num = (*a == '-' || (*a >= '0' && *a <= '9'));
        double x = num ? strtod(a, &ea) : 0, y = num ? strtod(b, &eb) : 0;
        if (num && eb != b) {
            worst = fabs(x - y) > worst ? fabs(x - y) : worst;
            a = ea;
            b = eb;
        } else if (*a++ != *b++) return -1;
    }
    return *a || *b ? -1 : worst;
}

/* Runs study config cfg in one process (out one_dir) and on np ranks (mpi, out
 * two_dir; data: the real-data study on ../shared/data); returns the largest
 * difference of their results. */
static double study_one_and_ranks(const char *cfg, const char *data, const char *mpi, const char *one_dir,
                                  const char *two_dir, const char *expect)
{
    char path[1200], cmd[8192];
    snprintf(path, sizeof path, "%s/%s.json", dir, one_dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && env OMP_NUM_THREADS=1 '%s' study %s.json %s%s --jobs 1 --out %s", dir,
             POSEMB_BIN, one_dir, data ? "--data " : "", data ? data : "", one_dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc) fail_msg("one process exited %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s'%s' study %s.json %s%s --out %s", dir, mpi, POSEMB_BIN, one_dir,
             data ? "--data " : "", data ? data : "", two_dir);
    rc = tu_run(cmd, out, sizeof out);
    if (rc || !strstr(out, expect)) fail_msg("the study on ranks exited %d: %s", rc, out);
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, one_dir);
    char *a = tu_results_canonical(path);
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, two_dir);
    char *b = tu_results_canonical(path);
    double d = results_diff(a, b);
    if (d < 0) fail_msg("the results differ beyond their numbers:\n%s\n%s", a, b);
    free(a);
    free(b);
    return d;
}

/* ranks_per_run 2: each run trained by a group of two ranks, data parallel.
 * 4 ranks (2 groups) on the synthetic study and 2 ranks on the real-data
 * study (pretraining and fine-tuning with dropout) give the results of one
 * process that runs each update as the same 2 micro-batches, to float
 * rounding (a regression's correlation moves in its 5th digit). */
static void test_study_groups(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    const char *syn = "{\"pes\": [\"none\", \"ape\", \"rope\"], \"tasks\": [\"order\", \"reverse\"], "
                      "\"seeds\": [1, 2], \"lengths\": [1, 2], \"n_train\": 16, \"steps\": 30, \"batch\": 16, "
                      "\"eval_examples\": 32, \"curve_every\": 10, \"analyze\": 0, \"ranks_per_run\": 2}";
    double d = study_one_and_ranks(syn, NULL, MPIRUN_NP(4), "g1", "g4", "12 unit(s) to go on 4 ranks, each run data");
    printf("synthetic study, 4 ranks in groups of 2: results within %.2g of one process\n", d);
    assert_true(d <= 1e-4);
    if (!tu_have_shared("the real-data study in groups")) return;
    const char *real = "{\"pes\": [\"ape\", \"rpe\"], \"tasks\": [\"RTE\", \"STS-B\", \"SQuAD\"], \"seeds\": [1], "
                       "\"layers\": 1, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"n_train\": 64, "
                       "\"pretrain_steps\": 10, \"steps\": 6, \"curve_every\": 3, \"eval_examples\": 40, "
                       "\"squad_stride\": 8, \"squad_max_query\": 16, \"analyze\": 0, \"ranks_per_run\": 2}";
    char data[1200];
    snprintf(data, sizeof data, "'%s/data'", POSEMB_SHARED);
    d = study_one_and_ranks(real, data, MPIRUN, "d1", "d2", "2 unit(s) to go on 2 ranks, each run data");
    printf("real-data study, 2 ranks in one group: results within %.2g of one process\n", d);
    assert_true(d <= 1e-3);
    char cmd[4096]; /* a group size that does not divide the ranks */
    snprintf(cmd, sizeof cmd, "cd '%s' && " MPIRUN_NP(3) "'%s' study g1.json --out g3", dir, POSEMB_BIN);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc == 0 || !strstr(out, "ranks_per_run 2 does not divide the 3 ranks"))
        fail_msg("3 ranks in groups of 2: exit %d: %s", rc, out);
}

/* A group's fine-tuning run (ranks_per_run 2) killed at one of its
 * checkpoints continues from it on the group to the lines of the
 * uninterrupted group, exactly (the gradients are summed in rank order). */
static void test_study_group_resumes(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    if (!tu_have_shared("the real-data study's resume in a group")) return;
    char path[1200], cmd[8192], run[1200];
    const char *cfg = "{\"pes\": [\"ape\"], \"tasks\": [\"STS-B\"], \"seeds\": [1], \"layers\": 1, \"hidden\": 32, "
                      "\"heads\": 2, \"intermediate\": 64, \"n_train\": 64, \"pretrain_steps\": 4, \"steps\": 150, "
                      "\"curve_every\": 5, \"analyze\": 0, \"ranks_per_run\": 2}";
    snprintf(path, sizeof path, "%s/gr.json", dir);
    assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
    const char *study = "cd '%s' && exec " MPIRUN "'%s' study gr.json --data '%s/data' --out %s";
    snprintf(cmd, sizeof cmd, study, dir, POSEMB_BIN, POSEMB_SHARED, "gr1");
    int rc = tu_run(cmd, out, sizeof out);
    if (rc) fail_msg("the group's study exited %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, study, dir, POSEMB_BIN, POSEMB_SHARED, "gr2 > /dev/null 2>&1");
    snprintf(run, sizeof run, "%s/gr2/models/ape/STS-B-s1/resume", dir);
    assert_false(kill_rank_at(cmd, run, 5));
    assert_int_equal(tu_count_results(dir, "gr2"), 0);
    snprintf(cmd, sizeof cmd, study, dir, POSEMB_BIN, POSEMB_SHARED, "gr2");
    rc = tu_run(cmd, out, sizeof out);
    if (rc || !strstr(out, "resumed at step ")) fail_msg("the group's resumed study exited %d: %s", rc, out);
    assert_same_results("gr1", "gr2");
    printf("a group's fine-tuning killed at a checkpoint and resumed: the lines of the uninterrupted group\n");
}

static void test_refusals(void **state)
{
    if (!POSEMB_MPIEXEC[0]) skip();
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             MPIRUN "'%s' train --model bert --data %s/corpus.txt --vocab %s/vocab.txt --layers 1 --hidden 16 "
                    "--heads 2 --seq-len 16 --batch-size 8 --accum 1 --steps 2 --out %s/odd",
             POSEMB_BIN, dir, dir, dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc == 0 || !strstr(out, "accum 1 is not a multiple of the 2 ranks") || !strstr(out, "batch 4 and accum 2") ||
        strstr(out, "differs from the cache"))
        fail_msg("an accum the ranks cannot share: exit %d: %s", rc, out);
    /* refused before anything is written: no run folder left behind (a refusal after rank 0 wrote the corpus
     * cache raced the other ranks' reading of it, and an MPI abort could stop rank 0 before it removed the folder) */
    snprintf(cmd, sizeof cmd, "test ! -e '%s/odd'", dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, MPIRUN "'%s' pe sin --dim 8 --len 4", POSEMB_BIN);
    rc = tu_run(cmd, out, sizeof out);
    if (rc == 0 || !strstr(out, "runs as one process")) fail_msg("posemb pe on 2 ranks: exit %d: %s", rc, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks_train_as_one), cmocka_unit_test(test_killed_rank_resumes),
        cmocka_unit_test(test_study_across_ranks),     cmocka_unit_test(test_study_groups),
        cmocka_unit_test(test_study_group_resumes),    cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
