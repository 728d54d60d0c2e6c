#include "testutil.h"

#include <math.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "text/tokenizer_internal.h"
#include "posemb/tokenizer.h"
#include <unistd.h>

#include <cjson/cJSON.h>

#include "posemb/rng.h"
#include "core/rng_internal.h"
#include "nn/precision_internal.h"

int tu_have_shared(const char *what)
{
    struct stat st;
    if (stat(POSEMB_SHARED, &st) == 0 && S_ISDIR(st.st_mode)) return 1;
    printf("SKIP %s: %s is absent (it holds the shared data; CI has it)\n", what, POSEMB_SHARED);
    return 0;
}

char *tu_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/posemb-test-XXXXXX", base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

void tu_rmtree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

int tu_run(const char *cmd, char *out, size_t cap)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = 0;
    if (out && cap) {
        n = fread(out, 1, cap - 1, p);
        out[n] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

int tu_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

void tu_assert_close(double a, double b, double atol, double rtol, const char *what, long i, const char *file, int line)
{
    if (fabs(a - b) <= atol + rtol * fabs(b)) return;
    print_error("%s:%d: %s[%ld]: got %.9g, expected %.9g (atol %g, rtol %g)\n", file, line, what, i, a, b, atol, rtol);
    _fail(file, line);
}

posemb_pe *tu_pe(const char *spec, int D, int H, int layers, int max_len, int causal)
{
    posemb_pe_dims dims = {.dim = D, .n_heads = H, .n_layers = layers, .max_len = max_len, .causal = causal};
    posemb_error err;
    posemb_pe *p;
    if (posemb_pe_create(&p, spec, &dims, &err)) fail_msg("posemb_pe_create(%s): %s", spec, err.msg);
    assert_int_equal(posemb_pe_alloc(p, &err), POSEMB_OK);
    posemb_rng rng;
    posemb_rng_seed(&rng, 3, 3);
    posemb_pe_init_params(p, &rng);
    posemb_pe_prepare(p);
    return p;
}

void tu_pe_scramble(posemb_pe *p)
{
    posemb_rng rng;
    posemb_rng_seed(&rng, 5, 5);
    for (int i = 0; i < posemb_pe_n_params(p); i++) {
        const posemb_pe_param *t = posemb_pe_get_param(p, i);
        if (!strstr(t->name, "frequencies") && !strstr(t->name, "threshold"))
            posemb_rng_fill_normal(&rng, t->data, (long)t->numel, 0.5f);
    }
    posemb_pe_prepare(p);
}

float *tu_st_read(const posemb_st_file *f, const char *name, int64_t *numel)
{
    const posemb_st_entry *e = posemb_st_find(f, name);
    if (!e) fail_msg("%s: no tensor %s", f->path, name);
    float *x = malloc((size_t)e->numel * sizeof *x + 1);
    posemb_error err;
    if (posemb_st_read_f32(f, e, x, &err)) fail_msg("%s", err.msg);
    *numel = e->numel;
    return x;
}

/* A WordPiece vocabulary of 20 words and sentences drawn from them with some order to learn. */
static const char *const TOY_WORDS[] = {"the",    "king",   "queen", "is",    "was",  "in",    "a",
                                        "castle", "garden", "and",   "sword", "rose", "night", "day",
                                        "speaks", "sleeps", "walks", "##s",   ".",    ","};

void tu_write_toy_corpus(const char *dir, unsigned seed)
{
    char path[1200], text[1 << 16];
    int n = snprintf(text, sizeof text, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
    for (size_t i = 0; i < sizeof TOY_WORDS / sizeof *TOY_WORDS; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\n", TOY_WORDS[i]);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
    unsigned x = seed;
    n = 0;
    for (int i = 0; i < 3000 && n <= (int)sizeof text - 64; i++) {
        x = x * 1103515245u + 12345u;
        n += snprintf(text + n, sizeof text - (size_t)n, "%s %s %s . ", TOY_WORDS[x >> 28 & 7],
                      TOY_WORDS[7 + (x >> 24 & 7)], TOY_WORDS[(x >> 20 & 3) + 14]);
    }
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

int tu_read_train_log(const char *run, double *loss, int *eval, int cap)
{
    char path[1200], line[512];
    snprintf(path, sizeof path, "%s/train_log.jsonl", run);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"loss\": ");
        int is_eval = strstr(line, "\"eval\"") != NULL;
        if (!p || (is_eval && !eval)) continue;
        if (eval) eval[n] = is_eval;
        loss[n++] = strtod(p + 8, NULL);
    }
    fclose(f);
    return n;
}

static int cmp_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char *tu_results_canonical(const char *path)
{
    char *line = NULL;
    size_t cap = 0, size = 1;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *lines[256];
    int n = 0;
    while (n < 256 && getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        cJSON_DeleteItemFromObject(j, "seconds");      /* timings */
        cJSON_DeleteItemFromObject(j, "resumed_from"); /* where a killed run went on: its results are the same */
        lines[n] = cJSON_PrintUnformatted(j);
        size += strlen(lines[n++]) + 1;
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    qsort(lines, (size_t)n, sizeof *lines, cmp_lines); /* workers may finish in any order */
    char *all = calloc(1, size);
    assert_non_null(all);
    for (int i = 0; i < n; i++) {
        strcat(strcat(all, lines[i]), "\n");
        free(lines[i]);
    }
    return all;
}

int tu_count_results(const char *dir, const char *run)
{
    char path[1200], line[8192];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, run);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n++;
    if (f) fclose(f);
    return n;
}

/* Starts `posemb study ARGS --out RUN` in dir. */
static pid_t start_study(const char *dir, const char *args, const char *run)
{
    char cmd[8192];
    pid_t pid = fork();
    if (pid == 0) {
        snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' study %s --out %s > /dev/null 2>&1", dir, POSEMB_BIN, args,
                 run);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void kill_study(pid_t pid)
{
    int status;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
}

/* True once the study pid has exited (reaped here). */
static int study_exited(pid_t pid)
{
    int status;
    return waitpid(pid, &status, WNOHANG) == pid;
}

/* Polls every 2 ms until done(dir, run, arg) or the study exits: no
 * deadline but the study's own end, so a slow machine (ASan, CI's parallel
 * tests) only waits longer, never fails for time. */
static int wait_until(pid_t pid, const char *dir, const char *run, const void *arg,
                      int (*done)(const char *, const char *, const void *))
{
    struct timespec ts = {0, 2000000};
    int found = 0, exited = 0;
    while (!(found = done(dir, run, arg)) && !(exited = study_exited(pid))) nanosleep(&ts, NULL);
    if (!found && exited) found = done(dir, run, arg); /* what it wrote just before ending */
    if (!exited) kill_study(pid);
    return found;
}

static int has_lines(const char *dir, const char *run, const void *lines)
{
    return tu_count_results(dir, run) >= *(const int *)lines;
}

int tu_study_killed_after(const char *dir, const char *args, const char *run, int lines)
{
    wait_until(start_study(dir, args, run), dir, run, &lines, has_lines);
    return tu_count_results(dir, run);
}

static int path_exists(const char *dir, const char *pattern)
{
    char path[1200];
    glob_t g;
    snprintf(path, sizeof path, "%s/%s", dir, pattern);
    int found = glob(path, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

static int has_path(const char *dir, const char *run, const void *pattern)
{
    (void)run;
    return path_exists(dir, pattern);
}

int tu_study_killed_when(const char *dir, const char *args, const char *run, const char *pattern)
{
    return wait_until(start_study(dir, args, run), dir, run, pattern, has_path);
}

posemb_tokenizer *tu_bytes_tokenizer(const char *dir)
{
    char path[4200];
    posemb_error err;
    posemb_tokenizer *tok = NULL;
    snprintf(path, sizeof path, "%s/bytes.json", dir);
    if (posemb_tokenizer_write_bytes(path, &err)) fail_msg("%s", err.msg);
    if (posemb_tokenizer_load_json(path, &tok, &err)) fail_msg("%s", err.msg);
    return tok;
}

int tu_bf16_here(const char *what)
{
    char why[256];
    if (posemb_bf16_available(why, sizeof why)) return 1;
    printf("%s not checked on this machine: %s\n", what, why);
    return 0;
}
