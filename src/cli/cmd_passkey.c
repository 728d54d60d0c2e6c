/* posemb passkey: passkey retrieval of a decoder over a grid of lengths and
 * needle depths, the test the length study runs on its models, for any
 * GPT-2 or Llama folder (a PE replaced at evaluation too). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "decoder_cfg.h"
#include "tokfiles.h"
#include "core/fileio.h"
#include "study/study.h"
#include "posemb/threads.h"

static const char USAGE[] =
    "usage: posemb passkey MODEL_DIR [--lengths N,N,...] [--trials N] [--seed S] [--pe SPEC]\n"
    "                      [--key-once] [--threads N] [--json]\n\n"
    "Passkey retrieval of the decoder (GPT-2, Llama or GPT-NeoX) in MODEL_DIR, as the length study measures\n"
    "it: a five-digit key in filler text (\"The pass key is 48213. Remember it. 48213 is the pass\n"
    "key.\") at depth 0, 1/4, 1/2, 3/4 or 1 of the filler, asked for at the end (\"What is the\n"
    "pass key? The pass key is \"), tokenized with the folder's tokenizer. For each length and\n"
    "depth: the keys retrieved whole (the argmax predicts every token of the key, as greedy\n"
    "decoding would) and the share of the key's tokens predicted. Keys are drawn from --seed as\n"
    "the study draws them for a run of that seed, so a study's model gives its results line.\n"
    "A model whose table ends before the length reads the prompt's last tokens.\n"
    "--pe replaces the PE at evaluation (--pe rope:scaling=yarn,factor=4,original=128,\n"
    "--pe fire:interpolate=off); a PE whose tensors the checkpoint lacks is refused.\n\n"
    "  --lengths N,...  prompt lengths in tokens (default: max_position_embeddings)\n"
    "  --trials N       prompts per length and depth (default 10)\n"
    "  --seed S         the keys' seed (default 1)\n"
    "  --key-once       the needle says its key once (\"The pass key is 48213. Remember it.\"), as\n"
    "                   a study with \"passkey_needle\": \"once\" trains and tests it\n"
    "  --threads N      threads (default: the CPUs not busy with other processes)\n"
    "  --json           one JSON line per length instead of the table, its passkey fields named as\n"
    "                   in the study's results lines (null where no prompt fits)\n";

typedef struct passkey_cmd {
    const char *dir, *pe;
    int lengths[16], n_lengths, given_lengths, trials, seed, threads, json, key_once;
} passkey_cmd;

static int parse(int argc, char **argv, passkey_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "passkey", argc, argv);
    const char *arg;
    int rc = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        }
        if (!a.flag) {
            if (cli_positional(&a, arg)) return EXIT_USAGE;
            if (c->dir) return cli_usage_error(&a, "unexpected argument '%s'", arg);
            c->dir = arg;
        } else if (cli_is(&a, "--pe")) rc = (c->pe = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--lengths")) rc = cli_lengths(&a, c->lengths, &c->n_lengths);
        else if (cli_is(&a, "--trials")) rc = cli_int(&a, 1, 100000, &c->trials);
        else if (cli_is(&a, "--seed")) rc = cli_int(&a, 0, 1 << 30, &c->seed);
        else if (cli_is(&a, "--threads")) rc = cli_int(&a, 1, 1024, &c->threads);
        else if (cli_is(&a, "--json")) rc = cli_switch(&a, &c->json, 1);
        else if (cli_is(&a, "--key-once")) rc = cli_switch(&a, &c->key_once, 1);
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb passkey --help')", arg);
    }
    if (rc) return rc;
    if (!c->dir) return cli_usage_error(&a, "give MODEL_DIR (see 'posemb passkey --help')");
    return 0;
}

static double mean_of(const double *v)
{
    double mean = 0;
    for (int d = 0; d < POSEMB_PASSKEY_DEPTHS; d++) mean += v[d] / POSEMB_PASSKEY_DEPTHS;
    return mean;
}

/* A number as JSON: NaN (no prompt fitted) is null. */
static void print_json_number(double x)
{
    if (isnan(x)) printf("null");
    else printf("%.4f", x);
}

static void print_json_array(const char *key, const double *v)
{
    printf(", \"%s\": [", key);
    for (int d = 0; d < POSEMB_PASSKEY_DEPTHS; d++) {
        if (d) printf(", ");
        print_json_number(v[d]);
    }
    printf("]");
}

static void print_length(const passkey_cmd *c, int L, int context, const double *acc, const double *digits)
{
    if (c->json) {
        printf("{\"length\": %d, \"passkey_context\": %d, \"trials\": %d, \"seed\": %d, \"passkey\": ", L, context,
               c->trials, c->seed);
        print_json_number(mean_of(acc));
        printf(", \"passkey_digits\": ");
        print_json_number(mean_of(digits));
        print_json_array("passkey_depths", acc);
        print_json_array("passkey_digit_depths", digits);
        printf("%s}\n", c->key_once ? ", \"passkey_needle\": \"once\"" : ""); /* as the study's line says it */
    } else {
        printf("%8d %8d %6.2f %7.3f  ", L, context, mean_of(acc), mean_of(digits));
        for (int d = 0; d < POSEMB_PASSKEY_DEPTHS; d++) printf(" %5.2f", acc[d]);
        printf("%s\n", context < L ? "  (its last tokens: the table ends)" : "");
    }
    fflush(stdout);
}

int cmd_passkey(int argc, char **argv)
{
    passkey_cmd c = {.trials = 10, .seed = 1};
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    cli_say_threads();
    if (c.threads) posemb_threads_set(c.threads);
    posemb_error err;
    posemb_config cfg;
    char desc[2 * POSEMB_PATH_MAX + 2];
    posemb_tokenizer *tok = NULL;
    int need = 0;
    posemb_status st = cli_decoder_config(c.dir, c.pe, &cfg, &err);
    c.given_lengths = c.n_lengths > 0;
    if (!st && !c.n_lengths) c.lengths[c.n_lengths++] = cfg.max_position;
    if (!st) st = cli_tok_files_folder(c.dir, &tok, desc, sizeof desc, &err);
    if (!st) st = posemb_passkey_min_length(tok, c.key_once, &need, &err);
    for (int i = 0; !st && i < c.n_lengths; i++)
        if (c.lengths[i] < need)
            st = posemb_fail(&err, POSEMB_EINVAL, "length %d%s: a passkey prompt needs at least %d tokens of %s",
                             c.lengths[i], c.given_lengths ? "" : " (max_position_embeddings)", need, desc);
    for (int i = 0; !st && i < c.n_lengths; i++) {
        double acc[POSEMB_PASSKEY_DEPTHS], digits[POSEMB_PASSKEY_DEPTHS];
        int context = 0;
        st = posemb_passkey(c.dir, &cfg, tok, c.key_once, c.lengths[i], c.seed, c.trials, acc, digits, &context, &err);
        if (!st && !c.json && !i) printf("  length  context   keys  digits   keys at depth 0, 1/4, 1/2, 3/4, 1\n");
        if (!st) print_length(&c, c.lengths[i], context, acc, digits);
    }
    posemb_tokenizer_free(tok);
    return st ? cli_report("passkey", &err) : 0;
}
