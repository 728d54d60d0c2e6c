/* The posemb command line, end to end: outputs, exit codes (0 ok, 1 runtime
 * failure, 2 usage error) and one-line messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posemb/safetensors.h"
#include "testutil.h"

static char out[1 << 16];
static char *dir;

static int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

static int one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == '\0';
}

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

static void test_top_level(void **state)
{
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "pe "));
    assert_int_equal(run(""), 2);
    assert_int_equal(run("frobnicate"), 2);
    assert_non_null(strstr(out, "unknown subcommand 'frobnicate'"));
    assert_true(one_line(out));
    assert_int_equal(run("pe --help"), 0);
    assert_non_null(strstr(out, "usage: posemb pe SPEC"));
    assert_int_equal(run("pe -h"), 0); /* -h before any SPEC or figure kind is help, not the SPEC */
    assert_non_null(strstr(out, "usage: posemb pe SPEC"));
    assert_int_equal(run("plot -h"), 0);
    assert_non_null(strstr(out, "usage: posemb plot"));
    assert_int_equal(run("demo --help"), 0);
    assert_int_equal(run("pe --list"), 0);
    assert_non_null(strstr(out, "relative_key_query"));
    assert_non_null(strstr(out, "Every attention PE takes layers=LIST")); /* NoPE layers: SmolLM3, Llama 4 */
}

char *openblas_get_config(void);

/* OpenBLAS's kernels: an OpenBLAS older than the CPU takes SSE3 ones on a
 * CPU with AVX2 (posemb/blas.h); posemb runs with kernels of the CPU's
 * class, keeps what OPENBLAS_CORETYPE asks for, and runs as itself when
 * started through the dynamic loader. */
static void test_blas_kernels(void **state)
{
    static const char *const AVX2[] = {"Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Excavator"};
    assert_int_equal(run("--version"), 0);
    char core[64] = "";
    assert_int_equal(sscanf(out, "posemb %*s (OpenBLAS's %63s kernels;", core), 1);
    int avx2 = 0, fast = 0, dynamic = strstr(openblas_get_config(), "DYNAMIC_ARCH") != NULL;
    for (size_t i = 0; i < sizeof AVX2 / sizeof *AVX2; i++) fast |= !strcasecmp(core, AVX2[i]);
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    printf("kernels %s on a CPU %s AVX2, OpenBLAS %s\n", core, avx2 ? "with" : "without",
           dynamic ? "DYNAMIC_ARCH" : "built for one CPU (the variable does nothing)");
    if (!dynamic) return;
    if (avx2 && !fast) fail_msg("posemb runs OpenBLAS's %s kernels on a CPU with AVX2", core);
#if defined(__x86_64__)
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE=Prescott '%s' --version", POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    if (!strstr(out, "(OpenBLAS's Prescott kernels;")) fail_msg("OPENBLAS_CORETYPE=Prescott not kept: %s", out);
    const char *ld = "/lib64/ld-linux-x86-64.so.2";
    snprintf(cmd, sizeof cmd, "'%s' '%s' --version", ld, POSEMB_BIN);
    if (access(ld, X_OK) == 0 && (tu_run(cmd, out, sizeof out) || strncmp(out, "posemb ", 7)))
        fail_msg("started by %s: %s", ld, out);
#endif
}

/* The CSV holds sin(w_k x), cos(w_k x) and no temporary file is left. */
static void test_pe_csv(void **state)
{
    assert_int_equal(run("pe sin --len 7 --dim 8 --out sin.csv"), 0);
    assert_non_null(strstr(out, "wrote ape [7 x 8]"));
    char path[1024];
    snprintf(path, sizeof path, "%s/sin.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (int x = 0; x < 7; x++)
        for (int c = 0; c < 8; c++) {
            double v;
            assert_int_equal(fscanf(f, "%lf%*[,\n]", &v), 1);
            double w = pow(10000.0, -2.0 * (c / 2) / 8);
            TU_CLOSE(v, c % 2 ? cos(w * x) : sin(w * x), 1e-6, 0, "sin.csv", x * 8 + c);
        }
    fclose(f);
    char ls[1200];
    snprintf(ls, sizeof ls, "ls -a '%s'", dir);
    assert_int_equal(tu_run(ls, out, sizeof out), 0);
    assert_non_null(strstr(out, "sin.csv"));
    assert_null(strstr(out, ".tmp."));
    /* no --out: CSV on stdout, the summary on stderr */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "('%s' pe alibi --len 3 --dim 8 --heads 2 --what bias.head0 2>/dev/null)", POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0); /* head 0 of 2: slope 2^-4 */
    assert_string_equal(out, "0,-0.0625,-0.125\n-0.0625,0,-0.0625\n-0.125,-0.0625,0\n");
}

static void test_pe_safetensors(void **state)
{
    assert_int_equal(run("pe ape+rpe:k=4 --len 8 --dim 16 --heads 2 --layers 2 --seed 3 --out pe.safetensors"), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/pe.safetensors", dir);
    posemb_st_file f;
    posemb_error err;
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    const posemb_st_entry *e = posemb_st_find(&f, "rel_value.layer1");
    assert_non_null(e);
    assert_int_equal(e->shape[0], 9);
    assert_int_equal(e->shape[1], 8);
    e = posemb_st_find(&f, "ape");
    assert_non_null(e);
    assert_int_equal(e->shape[0], 8);
    assert_int_equal(e->shape[1], 16);
    assert_string_equal(posemb_st_meta(&f, "spec"), "ape:integration=add+rpe:k=4,values=on");
    posemb_st_close(&f);
}

static void test_pe_errors(void **state)
{
    struct {
        const char *args, *needle;
        int rc;
    } cases[] = {
        {"pe rpe:k=0 --len 4 --dim 8", "posemb pe: spec 'rpe:k=0': rpe option k=0 is outside", 2},
        {"pe nope --len 4 --dim 8", "unknown PE 'nope'", 2},
        {"pe ape+sin --len 4 --dim 8", "combine at most one absolute PE", 2},
        {"pe sin --len abc --dim 8", "--len: 'abc' is not an integer", 2},
        {"pe sin --len 4", "--len and --dim are required", 2},
        {"pe sin --len 4 --dim 8 --bogus", "unknown flag '--bogus'", 2},
        {"pe sin --len 4 --dim 8 --out", "--out needs a value", 2},
        {"pe sin --len 4 --dim 7", "even width", 2},
        {"pe sin --len 4 --dim 8 --what nope", "no such matrix", 2},
        {"pe ape --len 9 --dim 8 --max-len 4", "9 positions asked, the table has 4 rows", 1},
        {"pe sin --len 4 --dim 8 --out no/such/dir/x.csv", "no/such/dir/x.csv: cannot write", 1},
        {"study --threads 0", "--threads: 0 is outside", 2},
        /* a misspelt option where a path goes is refused, not opened as a file (--threads: no busy-CPU line) */
        {"study -x --threads 1", "posemb study: unknown option '-x'", 2},
        {"perplexity -x --threads 1", "posemb perplexity: unknown option '-x'", 2},
        {"probe order -x --threads 1", "posemb probe order: unknown option '-x'", 2},
        {"passkey -x", "posemb passkey: unknown option '-x'", 2}, /* one line even when CPUs are busy */
        {"forward", "MODEL_DIR, --inputs and --out are required", 2},
        {"study --length", "--length needs --data", 2},
        {"pe --list=no", "--list takes no value (got 'no')", 2},
        {"study --report=x --threads 1", "--report takes no value", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run(cases[i].args);
        if (rc != cases[i].rc || !strstr(out, cases[i].needle) || !one_line(out))
            fail_msg("'%s': exit %d, output '%s'", cases[i].args, rc, out);
    }
}

/* The demo's closed-form rows: sin is translation invariant and symmetric;
 * alibi's bias is a strictly decreasing profile of |i - j|. */
static void test_demo(void **state)
{
    assert_int_equal(run("demo --len 64 --dim 64 --heads 4 --layers 2 -K 8"), 0);
    const char *sin = strstr(out, "\nsin ");
    assert_non_null(sin);
    double ti, mono, sym;
    int window;
    long params;
    assert_int_equal(sscanf(sin, " sin %ld %lf %lf %d %lf", &params, &ti, &mono, &window, &sym), 5);
    assert_int_equal(params, 0);
    TU_CLOSE(ti, 1.0, 1e-3, 0, "sin TI", 0);
    TU_CLOSE(sym, 1.0, 1e-3, 0, "sin SYM", 0);
    const char *alibi = strstr(out, "\nalibi ");
    assert_non_null(alibi);
    assert_int_equal(sscanf(alibi, " alibi %ld %lf %lf %d %lf", &params, &ti, &mono, &window, &sym), 5);
    TU_CLOSE(ti, 1.0, 1e-3, 0, "alibi TI", 0);
    TU_CLOSE(mono, 1.0, 1e-3, 0, "alibi MONO", 0);
    assert_int_equal(window, 63);
    TU_CLOSE(sym, 1.0, 1e-3, 0, "alibi SYM", 0);
    const char *rpe = strstr(out, "\nape+rpe ");
    assert_non_null(rpe);
    assert_int_equal(sscanf(rpe, " ape+rpe %ld", &params), 1);
    assert_int_equal(params, 64 * 64 + 2 * 2 * 129 * 16); /* table + keys/values x layers x (2k+1) x d */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_level),      cmocka_unit_test(test_blas_kernels), cmocka_unit_test(test_pe_csv),
        cmocka_unit_test(test_pe_safetensors), cmocka_unit_test(test_pe_errors),    cmocka_unit_test(test_demo),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
