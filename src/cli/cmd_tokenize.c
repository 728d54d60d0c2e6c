/* posemb tokenize: a text as Hugging Face's BertTokenizer / GPT2Tokenizer
 * (or a tokenizer.json) tokenizes it: the tokens and their ids; with
 * --decode, ids back to text. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "posemb/tokenizer.h"
#include "core/error_internal.h"
#include "text/tokenizer_internal.h"

static const char USAGE[] =
    "usage: posemb tokenize --vocab vocab.txt [--special] [--json] [--pair TEXT2] [--cased] [TEXT]\n"
    "       posemb tokenize --vocab encoder.json --merges vocab.bpe [--json] [--pair TEXT2] [TEXT]\n"
    "       posemb tokenize --tokenizer tokenizer.json [--special] [--json] [--pair TEXT2] [TEXT]\n"
    "       posemb tokenize (--vocab ... | --tokenizer FILE) --decode [--skip-special] [--json] [IDS...]\n"
    "       posemb tokenize --vocab vocab.txt --words [--cased] [TEXT]\n\n"
    "Tokenizes TEXT (without it: all of standard input as one text, NUL bytes\n"
    "included) exactly as Hugging Face's slow BertTokenizer (WordPiece) or\n"
    "GPT2Tokenizer (byte-level BPE), or for any other tokenizer.json as the Rust\n"
    "`tokenizers` library, does, and prints two lines: the tokens, then their ids (a\n"
    "third with the token type ids for --pair). Special and added tokens written in\n"
    "the text ([CLS], <|endoftext|>, <s>, ...) are kept whole.\n\n"
    "With --decode it does the reverse: the ids are the arguments (each may hold\n"
    "several, separated by spaces or commas) or, without any, read from standard\n"
    "input (separated by spaces, commas or newlines; a JSON array, or the output of\n"
    "--json whose \"ids\" it reads, too), and the decoded text is printed and a newline\n"
    "(with --json: {\"text\": \"...\"}).\n\n"
    "With --words it prints what BERT's BasicTokenizer hands to WordPiece: for each\n"
    "line of the text that has any, its words and punctuation marks, cleaned,\n"
    "lower-cased and stripped of accents (not with --cased), separated by spaces.\n"
    "It is what a WordPiece vocabulary is trained on (scripts/corpus-vocab).\n\n"
    "  --vocab FILE      WordPiece vocab.txt; with --merges, GPT-2's encoder.json (vocab.json)\n"
    "  --merges FILE     GPT-2's vocab.bpe (merges.txt)\n"
    "  --tokenizer FILE  a tokenizer.json: WordPiece, or BPE (GPT-2/RoBERTa byte-level,\n"
    "                    Llama 2, Llama 3, Qwen, ...: normalizers, pre-tokenizers, added\n"
    "                    tokens, post-processor and decoder as the file says)\n"
    "  --special         add the model's special tokens: [CLS] TEXT [SEP] for BERT, none for GPT-2,\n"
    "                    the post-processor's template for a tokenizer.json (<s> TEXT for Llama 2)\n"
    "  --decode          decode ids (arguments or standard input) instead of encoding\n"
    "  --skip-special    with --decode: leave the special tokens out\n"
    "  --words           vocab.txt: the words before WordPiece, a line per line of the text\n"
    "  --pair TEXT2      encode TEXT and TEXT2 as a pair with the special tokens,\n"
    "                    [CLS] TEXT [SEP] TEXT2 [SEP] for BERT, and print the token type ids\n"
    "  --cased           vocab.txt: keep case and accents (default: lower-case, strip accents)\n"
    "  --json            one line {\"tokens\": [...], \"ids\": [...]} (and \"token_type_ids\" for --pair)\n"
    "  -h, --help        show this help\n";

typedef struct tok_cmd {
    const char *vocab, *merges, *tokenizer, *text, *pair;
    int special, json, cased, decode, skip_special, words;
    char **ids; /* --decode: the positional arguments */
    int n_ids;
} tok_cmd;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int positional(cli_args *a, tok_cmd *c, const char *arg)
{
    if (c->decode) { /* argv outlives the command: keep pointers */
        c->ids[c->n_ids++] = (char *)arg;
        return 0;
    }
    if (c->text) return cli_usage_error(a, "one TEXT only (quote it; got a second: '%s')", arg);
    c->text = arg;
    return 0;
}

/* Appends the ids in s[0..n) (integers separated by spaces, commas,
 * newlines, with optional [ ]) to *ids (*n of them, *cap room; ids NULL
 * only checks). Returns 0, or -1 on anything else or an id out of range. */
static int parse_ids(const char *s, size_t n, int32_t **ids, int *cnt, int *cap)
{
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == ' ' || ch == ',' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '[' || ch == ']') {
            i++;
            continue;
        }
        if (ch < '0' || ch > '9') return -1;
        long v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (s[i++] - '0');
            if (v > INT32_MAX) return -1;
        }
        if (!ids) continue;
        if (*cnt == *cap) {
            int nc = *cap ? *cap * 2 : 256;
            int32_t *p = nc > 0 ? realloc(*ids, (size_t)nc * sizeof *p) : NULL;
            if (!p) return -1;
            *ids = p;
            *cap = nc;
        }
        (*ids)[(*cnt)++] = (int32_t)v;
    }
    return 0;
}

/* 0 to go on, -1 after --help, or the usage exit status. */
static int parse(int argc, char **argv, tok_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "tokenize", argc, argv);
    memset(c, 0, sizeof *c);
    for (int i = 1; i < argc; i++) /* --decode changes what the positionals are */
        if (!strcmp(argv[i], "--decode")) c->decode = 1;
        else if (!strcmp(argv[i], "--")) break;
    c->ids = calloc((size_t)argc + 1, sizeof *c->ids);
    if (!c->ids) {
        fprintf(stderr, "posemb tokenize: out of memory\n");
        return 1;
    }
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
        else if (cli_is(&a, "--special")) rc = cli_switch(&a, &c->special, 1);
        else if (cli_is(&a, "--json")) rc = cli_switch(&a, &c->json, 1);
        else if (cli_is(&a, "--cased")) rc = cli_switch(&a, &c->cased, 1);
        else if (cli_is(&a, "--decode")) rc = cli_switch(&a, &c->decode, 1);
        else if (cli_is(&a, "--skip-special")) rc = cli_switch(&a, &c->skip_special, 1);
        else if (cli_is(&a, "--words")) rc = cli_switch(&a, &c->words, 1);
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
    if (c->decode && (c->pair || c->special))
        return cli_usage_error(&a, "--decode takes ids: --pair and --special are for encoding");
    if (c->skip_special && !c->decode) return cli_usage_error(&a, "--skip-special goes with --decode");
    if (c->words && (c->merges || c->tokenizer))
        return cli_usage_error(&a, "--words applies to a WordPiece vocab.txt only");
    if (c->words && (c->decode || c->pair || c->special || c->json))
        return cli_usage_error(&a, "--words prints words: --decode, --pair, --special and --json do not apply");
    for (int i = 0; i < c->n_ids; i++) /* the ids are checked before any file is read */
        if (parse_ids(c->ids[i], strlen(c->ids[i]), NULL, NULL, NULL) < 0)
            return cli_usage_error(&a, "--decode: '%s' is not a list of ids (non-negative integers)", c->ids[i]);
    return 0;
}

/* All of standard input (binary-safe, NUL-terminated beyond *len). NULL
 * when out of memory or unreadable. */
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
            buf[n] = '\0'; /* room is left: the buffer grows before it is full */
            *len = n;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* A JSON string of n bytes (valid UTF-8 is written as is). */
static void json_string_n(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (const char *end = s + n; s < end; s++) {
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

static void json_string(FILE *f, const char *s) { json_string_n(f, s, strlen(s)); }

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

/* rc, or 1 (said) when what was written to standard output did not all get there. */
static int flushed(int rc)
{
    if (rc || (!fflush(stdout) && !ferror(stdout))) return rc;
    fprintf(stderr, "posemb tokenize: cannot write standard output\n");
    return 1;
}

/* --decode: the ids of the arguments or of standard input, as text. */
static int decode(const tok_cmd *c, posemb_tokenizer *tok)
{
    int32_t *ids = NULL;
    int n = 0, cap = 0, rc = 0;
    if (c->n_ids) {
        for (int i = 0; i < c->n_ids && !rc; i++) rc = parse_ids(c->ids[i], strlen(c->ids[i]), &ids, &n, &cap) ? 1 : 0;
        if (rc) fprintf(stderr, "posemb tokenize: out of memory\n");
    } else {
        size_t len = 0;
        char *in = read_stdin(&len);
        if (!in) {
            fprintf(stderr, "posemb tokenize: cannot read standard input\n");
            return 1;
        }
        /* the output of --json: its "ids" array */
        const char *s = in, *key = len == strlen(in) ? strstr(in, "\"ids\"") : NULL;
        const char *open = key ? strchr(key, '[') : NULL, *close = open ? strchr(open, ']') : NULL;
        size_t slen = len;
        if (close) {
            s = open;
            slen = (size_t)(close - open) + 1;
        }
        if (parse_ids(s, slen, &ids, &n, &cap)) {
            fprintf(stderr, "posemb tokenize: --decode: standard input is not a list of ids (non-negative integers)\n");
            rc = 2;
        }
        free(in);
    }
    char *text = NULL;
    size_t len = 0;
    posemb_error err;
    posemb_error_clear(&err);
    if (!rc && posemb_tokenizer_decode(tok, ids, n, c->skip_special ? POSEMB_DEC_SKIP_SPECIAL : 0, &text, &len, &err))
        rc = cli_report("tokenize", &err);
    if (!rc && c->json) {
        fputs("{\"text\": ", stdout);
        json_string_n(stdout, text, len);
        fputs("}\n", stdout);
    } else if (!rc) {
        fwrite(text, 1, len, stdout);
        putchar('\n');
    }
    rc = flushed(rc);
    free(text);
    free(ids);
    return rc;
}

typedef struct words_out {
    int n; /* words written on the current line */
} words_out;

static int put_word(void *ctx, const char *word, size_t len)
{
    words_out *w = ctx;
    if (w->n++) putchar(' ');
    fwrite(word, 1, len, stdout);
    return ferror(stdout);
}

/* --words: each line of text[0..len) through BasicTokenizer, its words on one line. */
static int words(posemb_tokenizer *tok, const char *text, size_t len)
{
    posemb_error err;
    posemb_error_clear(&err);
    for (size_t a = 0; a < len;) {
        const char *nl = memchr(text + a, '\n', len - a);
        size_t b = nl ? (size_t)(nl - text) : len;
        words_out w = {0};
        if (posemb_tokenizer_words(tok, text + a, b - a, put_word, &w, &err))
            return ferror(stdout) ? flushed(0) : cli_report("tokenize", &err); /* a failed write says so */
        if (w.n) putchar('\n');
        a = b + 1;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tok_cmd c;
    int rc = parse(argc, argv, &c);
    if (rc) {
        free(c.ids);
        return rc < 0 ? 0 : rc;
    }
    posemb_error err;
    posemb_error_clear(&err);
    posemb_tokenizer *tok = NULL;
    if (load(&c, &tok, &err)) {
        free(c.ids);
        return cli_report("tokenize", &err);
    }
    if (c.decode) {
        rc = decode(&c, tok);
        posemb_tokenizer_free(tok);
        free(c.ids);
        return rc;
    }
    free(c.ids);
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
    if (c.words) {
        rc = words(tok, text, len);
        rc = flushed(rc);
        posemb_tokenizer_free(tok);
        free(input);
        return rc;
    }
    posemb_encoding enc;
    posemb_encoding_init(&enc);
    unsigned flags = POSEMB_ENC_TOKENS | (c.special || c.pair ? POSEMB_ENC_SPECIAL : 0);
    posemb_status st = c.pair ? posemb_tokenizer_encode_pair(tok, text, len, c.pair, strlen(c.pair), flags, &enc, &err)
                              : posemb_tokenizer_encode(tok, text, len, flags, &enc, &err);
    if (st) rc = cli_report("tokenize", &err);
    else print_encoding(&enc, c.json, c.pair != NULL);
    rc = flushed(rc);
    posemb_encoding_free(&enc);
    posemb_tokenizer_free(tok);
    free(input);
    return rc;
}
