#include "analysis_args.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "core/fileio.h"
#include "tokfiles.h"

int analysis_flag(cli_args *a, posemb_source_opts *so, posemb_analyze_opts *ao, int *rc)
{
    const char *arg = a->argv[a->i];
    int seed = 0;
    if (cli_is(a, "--tensor")) *rc = (so->tensor = cli_value(a)) ? 0 : EXIT_USAGE;
    else if (cli_is(a, "--len")) *rc = cli_int(a, 2, 1 << 15, &so->len);
    else if (cli_is(a, "--dim")) *rc = cli_int(a, 2, 1 << 15, &so->dim);
    else if (cli_is(a, "--heads")) *rc = cli_int(a, 1, 1024, &so->heads);
    else if (cli_is(a, "--causal")) *rc = cli_switch(a, &so->causal, 1);
    else if (!strcmp(arg, "-K") || cli_is(a, "--K")) {
        a->flag = "-K";
        *rc = cli_int(a, 1, 1 << 15, &ao->K);
    } else if (cli_is(a, "--words")) *rc = cli_int(a, 0, 1 << 20, &ao->n_words);
    else if (cli_is(a, "--pairs")) *rc = cli_int(a, 10, 1 << 22, &ao->pairs);
    else if (cli_is(a, "--seed")) {
        *rc = cli_int(a, 0, 2147483647, &seed);
        ao->seed = so->seed = (uint64_t)seed;
    } else if (cli_is(a, "--ridge")) {
        const char *v = cli_value(a);
        char *end;
        double x = v ? strtod(v, &end) : -1;
        *rc = !v                                ? EXIT_USAGE
              : (end == v || *end || !(x >= 0)) ? cli_usage_error(a, "--ridge: '%s' is not a number >= 0", v)
                                                : 0;
        ao->ridge = x;
    } else if (cli_is(a, "--threads")) *rc = cli_threads(a);
    else return 0;
    return 1;
}

posemb_status analysis_text_load(const char *dir, const char *path, posemb_corpus *text, posemb_analyze_opts *ao,
                                 posemb_error *err)
{
    char cfg[POSEMB_PATH_MAX], desc[2 * POSEMB_PATH_MAX + 2];
    struct stat sb;
    if (posemb_path_join(cfg, sizeof cfg, dir, "config.json") || stat(cfg, &sb))
        return posemb_fail(err, POSEMB_EINVAL, "--text %s: %s is not a model folder (no config.json)", path, dir);
    posemb_tokenizer *tok = NULL;
    posemb_status st = cli_tok_files_folder(dir, &tok, desc, sizeof desc, err);
    if (!st) st = posemb_corpus_load(text, path, tok, desc, NULL, err);
    posemb_tokenizer_free(tok);
    ao->text = st ? NULL : text->tokens;
    ao->text_n = st ? 0 : text->n;
    return st;
}

/* Whether files a and b (either may be NULL) hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    posemb_error err;
    int same = !posemb_read_data_file(a, 1 << 28, &x, &nx, &err) && !posemb_read_data_file(b, 1 << 28, &y, &ny, &err) &&
               nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

int analysis_same_tokenizer(const char *a, const char *b)
{
    char bufa[2][POSEMB_PATH_MAX], bufb[2][POSEMB_PATH_MAX];
    cli_tok_files fa, fb;
    if (!cli_tok_files_find(a, bufa, &fa) || !cli_tok_files_find(b, bufb, &fb)) return 0;
    return same_file(fa.json, fb.json) && same_file(fa.vocab, fb.vocab) && same_file(fa.merges, fb.merges);
}
