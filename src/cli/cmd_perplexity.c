/* posemb perplexity: a decoder's held-out perplexity at several context
 * lengths, the "train short, test long" measurement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "decoder_cfg.h"
#include "tokfiles.h"
#include "posemb/corpus.h"
#include "core/fileio.h"
#include "posemb/threads.h"
#include "posemb/trainer.h"
#include "train/trainer_internal.h"

static const char USAGE[] =
    "usage: posemb perplexity MODEL_DIR --data PATH [--lengths N,N,...] [--tokens N] [--pe SPEC]\n"
    "                         [--batch N] [--threads N] [--json]\n\n"
    "Perplexity of the decoder (GPT-2, Llama or GPT-NeoX) in MODEL_DIR on the text at PATH (a file or a\n"
    "folder, tokenized with the folder's tokenizer: tokenizer.json, vocab.json + merges.txt, or\n"
    "vocab.txt), at each context length: the tokens cut into windows of that length at\n"
    "positions 0..N-1, each window scoring its own predictions. A length past what the PE can\n"
    "take (a learned table of max_position_embeddings rows) is evaluated with sliding windows\n"
    "of the longest length it can take, each scoring its second half, and the line says so.\n"
    "--pe replaces the PE at evaluation (a RoPE scaling applied without retraining:\n"
    "--pe rope:scaling=yarn,factor=4,original=128); a PE whose tensors the checkpoint lacks is\n"
    "refused.\n\n"
    "  --lengths N,...  context lengths in tokens (default: max_position_embeddings)\n"
    "  --tokens N       score the first N tokens of the text (default: all)\n"
    "  --batch N        windows per forward pass (default: about 16384 tokens' worth, fewer\n"
    "                   where their attention probabilities would pass 64 MiB)\n"
    "  --threads N      threads (default: the CPUs not busy with other processes)\n"
    "  --json           one JSON line per length instead of the table\n";

typedef struct ppl_cmd {
    const char *dir, *data, *pe;
    int lengths[16], n_lengths, batch, threads, json;
    long tokens;
} ppl_cmd;

static int parse(int argc, char **argv, ppl_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "perplexity", argc, argv);
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
        } else if (cli_is(&a, "--data")) rc = (c->data = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--pe")) rc = (c->pe = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--lengths")) rc = cli_lengths(&a, c->lengths, &c->n_lengths);
        else if (cli_is(&a, "--batch")) rc = cli_int(&a, 1, 4096, &c->batch);
        else if (cli_is(&a, "--threads")) rc = cli_int(&a, 1, 1024, &c->threads);
        else if (cli_is(&a, "--json")) rc = cli_switch(&a, &c->json, 1);
        else if (cli_is(&a, "--tokens")) {
            int k = 0;
            rc = cli_int(&a, 2, 1 << 30, &k);
            c->tokens = k;
        } else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb perplexity --help')", arg);
    }
    if (rc) return rc;
    if (!c->dir || !c->data)
        return cli_usage_error(&a, "give MODEL_DIR and --data PATH (see 'posemb perplexity --help')");
    return 0;
}

/* One length: in full windows when the model takes them, else in sliding windows of its own max. */
static posemb_status one_length(const ppl_cmd *c, const posemb_config *cfg, const posemb_corpus *text, int L,
                                posemb_lm_length *out, posemb_error *err)
{
    long n = c->tokens && c->tokens < text->n ? c->tokens : text->n;
    return posemb_lm_eval_length(c->dir, cfg, text->tokens, n, L, c->batch, out, err);
}

static void print_line(const ppl_cmd *c, const posemb_lm_length *l)
{
    double mean = l->count ? l->nll / (double)l->count : NAN;
    if (c->json)
        printf("{\"length\": %d, \"context\": %d, \"stride\": %d, \"windowed\": %s, \"tokens\": %ld, \"nll\": %.6f, "
               "\"perplexity\": %.6g}\n",
               l->length, l->context, l->stride, l->context < l->length ? "true" : "false", l->count, mean, exp(mean));
    else
        printf("%8d %10.4f %12.3f %10ld  %s\n", l->length, mean, exp(mean), l->count,
               l->context < l->length ? "sliding windows of the model's max length" : "");
    fflush(stdout);
}

int cmd_perplexity(int argc, char **argv)
{
    ppl_cmd c = {0};
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    cli_say_threads();
    if (c.threads) posemb_threads_set(c.threads);
    posemb_error err;
    posemb_config cfg;
    char desc[2 * POSEMB_PATH_MAX + 2];
    posemb_tokenizer *tok = NULL;
    posemb_corpus text = {0};
    posemb_status st = cli_decoder_config(c.dir, c.pe, &cfg, &err);
    if (!st && !c.n_lengths) c.lengths[c.n_lengths++] = cfg.max_position;
    if (!st) st = cli_tok_files_folder(c.dir, &tok, desc, sizeof desc, &err);
    if (!st) st = posemb_corpus_load(&text, c.data, tok, desc, NULL, &err);
    for (int i = 0; !st && i < c.n_lengths; i++) {
        posemb_lm_length l;
        st = one_length(&c, &cfg, &text, c.lengths[i], &l, &err);
        if (!st && !c.json && !i) printf("  length  nll/token   perplexity     tokens\n");
        if (!st) print_line(&c, &l);
    }
    posemb_corpus_free(&text);
    posemb_tokenizer_free(tok);
    return st ? cli_report("perplexity", &err) : 0;
}
