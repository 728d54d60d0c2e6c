/* posemb tokenize: a text as Hugging Face's BertTokenizer / GPT2Tokenizer
 * (or a tokenizer.json) tokenizes it: the tokens and their ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "posemb/tokenizer.h"

static const char USAGE[] =
    "usage: posemb tokenize --vocab vocab.txt [--special] [--json] [--pair TEXT2] [--cased] [TEXT]\n"
    "       posemb tokenize --vocab encoder.json --merges vocab.bpe [--json] [--pair TEXT2] [TEXT]\n"
    "       posemb tokenize --tokenizer tokenizer.json [--special] [--json] [--pair TEXT2] [TEXT]\n\n"
    "Tokenizes TEXT (without it: all of standard input, as one text) exactly as\n"
    "Hugging Face's slow BertTokenizer (WordPiece) or GPT2Tokenizer (byte-level BPE)\n"
    "does, and prints two lines: the tokens, then their ids (a third with the token\n"
    "type ids for --pair). Special tokens written in the text ([CLS], <|endoftext|>,\n"
    "...) are kept whole.\n\n"
    "  --vocab FILE      WordPiece vocab.txt; with --merges, GPT-2's encoder.json (vocab.json)\n"
    "  --merges FILE     GPT-2's vocab.bpe (merges.txt)\n"
    "  --tokenizer FILE  a tokenizer.json: WordPiece, or BPE with a ByteLevel pre-tokenizer\n"
    "  --special         add the model's special tokens: [CLS] TEXT [SEP] for BERT, none for GPT-2\n"
    "  --pair TEXT2      encode TEXT and TEXT2 as a pair with the special tokens,\n"
    "                    [CLS] TEXT [SEP] TEXT2 [SEP] for BERT, and print the token type ids\n"
    "  --cased           vocab.txt: keep case and accents (default: lower-case, strip accents)\n"
    "  --json            one line {\"tokens\": [...], \"ids\": [...]} (and \"token_type_ids\" for --pair)\n"
    "  -h, --help        show this help\n";

typedef struct tok_cmd {
    const char *vocab, *merges, *tokenizer, *text, *pair;
    int special, json, cased;
} tok_cmd;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int positional(cli_args *a, tok_cmd *c, const char *arg)
{
    if (c->text) return cli_usage_error(a, "one TEXT only (quote it; got a second: '%s')", arg);
    c->text = arg;
    return 0;
}

/* 0 to go on, -1 after --help, or the usage exit status. */
static int parse(int argc, char **argv, tok_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "tokenize", argc, argv);
    memset(c, 0, sizeof *c);
    const char *arg;
    int rc = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "--")) { /* the rest is TEXT, even if it starts with -- */
            while (!rc && a.i + 1 < argc) rc = positional(&a, c, argv[++a.i]);
        } else if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        } else if (!a.flag) {
            rc = positional(&a, c, arg);
        } else if (cli_is(&a, "--vocab")) rc = (c->vocab = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--merges")) rc = (c->merges = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--tokenizer")) rc = (c->tokenizer = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--pair")) rc = (c->pair = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--special")) c->special = 1;
        else if (cli_is(&a, "--json")) c->json = 1;
        else if (cli_is(&a, "--cased")) c->cased = 1;
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb tokenize --help')", arg);
    }
    if (rc) return rc;
    if (!c->vocab && !c->tokenizer)
        return cli_usage_error(&a, "give --vocab FILE (with --merges for GPT-2) or --tokenizer FILE");
    if (c->vocab && c->tokenizer) return cli_usage_error(&a, "--vocab and --tokenizer exclude each other");
    if (c->merges && !c->vocab) return cli_usage_error(&a, "--merges goes with --vocab encoder.json");
    if (c->vocab && !c->merges && ends_with(c->vocab, ".json"))
        return cli_usage_error(&a, "--vocab %s looks like GPT-2's encoder.json: it needs --merges vocab.bpe", c->vocab);
    if (c->cased && (c->merges || c->tokenizer))
        return cli_usage_error(&a, "--cased applies to a WordPiece vocab.txt only");
    return 0;
}

/* All of standard input (binary-safe). NULL when out of memory or unreadable. */
static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (!got) {
            if (ferror(stdin)) break;
            *len = n;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* A JSON string (the tokens are valid UTF-8, written as is). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch == '\r') fputs("\\r", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void print_ints(FILE *f, const int32_t *v, int n, const char *sep)
{
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? sep : "", v[i]);
}

static void print_encoding(const posemb_encoding *e, int json, int types)
{
    if (json) {
        fputs("{\"tokens\": [", stdout);
        for (int i = 0; i < e->n; i++) {
            if (i) fputs(", ", stdout);
            json_string(stdout, e->tokens[i]);
        }
        fputs("], \"ids\": [", stdout);
        print_ints(stdout, e->ids, e->n, ", ");
        if (types) {
            fputs("], \"token_type_ids\": [", stdout);
            print_ints(stdout, e->type_ids, e->n, ", ");
        }
        fputs("]}\n", stdout);
        return;
    }
    for (int i = 0; i < e->n; i++) printf("%s%s", i ? " " : "", e->tokens[i]);
    putchar('\n');
    print_ints(stdout, e->ids, e->n, " ");
    putchar('\n');
    if (types) {
        print_ints(stdout, e->type_ids, e->n, " ");
        putchar('\n');
    }
}

static posemb_status load(const tok_cmd *c, posemb_tokenizer **tok, posemb_error *err)
{
    if (c->tokenizer) return posemb_tokenizer_load_json(c->tokenizer, tok, err);
    if (c->merges) return posemb_tokenizer_load_bpe(c->vocab, c->merges, tok, err);
    return posemb_tokenizer_load_wordpiece(c->vocab, !c->cased, tok, err);
}

int cmd_tokenize(int argc, char **argv)
{
    tok_cmd c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    posemb_error err;
    posemb_error_clear(&err);
    posemb_tokenizer *tok = NULL;
    if (load(&c, &tok, &err)) return cli_report("tokenize", &err);
    char *input = NULL;
    size_t len = 0;
    if (c.text) {
        len = strlen(c.text);
    } else if (!(input = read_stdin(&len))) {
        posemb_tokenizer_free(tok);
        fprintf(stderr, "posemb tokenize: cannot read standard input\n");
        return 1;
    }
    const char *text = c.text ? c.text : input;
    posemb_encoding enc;
    posemb_encoding_init(&enc);
    unsigned flags = POSEMB_ENC_TOKENS | (c.special || c.pair ? POSEMB_ENC_SPECIAL : 0);
    posemb_status st = c.pair ? posemb_tokenizer_encode_pair(tok, text, len, c.pair, strlen(c.pair), flags, &enc, &err)
                              : posemb_tokenizer_encode(tok, text, len, flags, &enc, &err);
    if (st) rc = cli_report("tokenize", &err);
    else print_encoding(&enc, c.json, c.pair != NULL);
    if (!rc && (fflush(stdout) || ferror(stdout))) {
        fprintf(stderr, "posemb tokenize: cannot write standard output\n");
        rc = 1;
    }
    posemb_encoding_free(&enc);
    posemb_tokenizer_free(tok);
    free(input);
    return rc;
}
