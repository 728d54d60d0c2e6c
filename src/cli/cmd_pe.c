/* posemb pe: what a position embedding is, as numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/fileio.h"
#include "posemb/pe.h"
#include "posemb/safetensors.h"
#include "pe/pe_internal.h"

static const char USAGE[] = "usage: posemb pe SPEC --len N --dim D [--heads H] [--layers L] [--max-len M] [--causal]\n"
                            "                 [--seed S] [--what NAME] [--out FILE.csv|FILE.safetensors]\n"
                            "       posemb pe --list\n\n"
                            "Writes what the PE is as numbers for positions 0..N-1: the APE table (N x D),\n"
                            "relative tables, frequencies, or per-head bias matrices. Learned PEs show their\n"
                            "initialisation (seeded). With --out FILE.csv (or no --out: CSV on stdout) one\n"
                            "matrix is written, the first unless --what names another; FILE.safetensors\n"
                            "holds them all. A one-line summary goes to the terminal.\n\n"
                            "  SPEC         e.g. sin, lsin+lsrpe, rpe:k=64,values=off, rope:base=500000 (--list)\n"
                            "  --len N      positions to show (required)\n"
                            "  --dim D      model width (required)\n"
                            "  --heads H    attention heads (default 1; head width D/H)\n"
                            "  --layers L   layers with per-layer tables (default 1)\n"
                            "  --max-len M  table length of learned APEs and HF relative types (default N)\n"
                            "  --causal     decoder model (T5 uses unidirectional buckets)\n"
                            "  --seed S     initialisation seed of learned PEs (default 0)\n"
                            "  --what NAME  which matrix goes to CSV (see the names in the summary)\n";

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

typedef struct pe_cmd {
    const char *spec, *out, *what;
    int len, dim, heads, layers, max_len, causal, seed, list;
} pe_cmd;

static int parse(int argc, char **argv, pe_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "pe", argc, argv);
    *c = (pe_cmd){.heads = 1, .layers = 1};
    const char *arg;
    int rc = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (cli_is(&a, "--help") || !strcmp(arg, "-h")) {
            fputs(USAGE, stdout);
            return -1;
        } else if (!a.flag) {
            if (c->spec) return cli_usage_error(&a, "one SPEC only (got '%s' and '%s')", c->spec, arg);
            c->spec = arg;
        } else if (cli_is(&a, "--list")) rc = cli_switch(&a, &c->list, 1);
        else if (cli_is(&a, "--causal")) rc = cli_switch(&a, &c->causal, 1);
        else if (cli_is(&a, "--len")) rc = cli_int(&a, 1, 1 << 16, &c->len);
        else if (cli_is(&a, "--dim")) rc = cli_int(&a, 2, 1 << 16, &c->dim);
        else if (cli_is(&a, "--heads")) rc = cli_int(&a, 1, 1024, &c->heads);
        else if (cli_is(&a, "--layers")) rc = cli_int(&a, 1, 64, &c->layers);
        else if (cli_is(&a, "--max-len")) rc = cli_int(&a, 1, 1 << 20, &c->max_len);
        else if (cli_is(&a, "--seed")) rc = cli_int(&a, 0, 2147483647, &c->seed);
        else if (cli_is(&a, "--out")) rc = (c->out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--what")) rc = (c->what = cli_value(&a)) ? 0 : EXIT_USAGE;
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb pe --help')", arg);
    }
    if (rc || c->list) return rc;
    if (!c->spec) return cli_usage_error(&a, "missing SPEC (see 'posemb pe --help')");
    if (!c->len || !c->dim) return cli_usage_error(&a, "--len and --dim are required");
    if (!c->max_len) c->max_len = c->len;
    /* Refuse sizes whose matrices would not fit in memory before building them. */
    if ((long)c->len * c->len * c->heads > 256L << 20 || (long)c->len * c->dim > 256L << 20 ||
        (long)c->max_len * c->dim > 256L << 20)
        return cli_usage_error(&a, "--len %d, --dim %d, --heads %d: the matrices would exceed 1 GiB", c->len, c->dim,
                               c->heads);
    if (c->what && c->out && ends_with(c->out, ".safetensors"))
        return cli_usage_error(&a, "--what picks the matrix of a CSV; a .safetensors file holds them all");
    return 0;
}

static void list_families(void)
{
    printf("none                 no position information (bag of words)\n");
    for (int i = 0; i < posemb_pe_family_count(); i++) {
        posemb_pe_family_doc d = posemb_pe_family_doc_at(i);
        printf("%-20s %s\n%-20s   options: %s\n", d.name, d.summary, "", d.options[0] ? d.options : "none");
    }
    printf("\nCombine one absolute PE with one relative PE or bias: ape+rpe, lsin+lsrpe, ape+alibi, ...;\n"
           "a logit scale (ssmax, temperature) with a rotary PE or none: rope+ssmax, lrope+ssmax;\n"
           "add random:max=N to either for randomized positions: ape+random:max=256, rope+random:max=1024\n"
           "\nEvery attention PE takes layers=LIST: it acts only in those layers, the others are NoPE layers\n"
           "(rope:layers=0-2 is SmolLM3's no_rope_layers; rope:layers=0-2|4-6 Llama 4's in 8 layers). Chunked and\n"
           "sliding-window attention (Llama 4's attention_chunk_size, Command A's and Gemma's windows) belong\n"
           "to the model, not the PE: docs/models.md.\n");
}

static posemb_status write_safetensors(const pe_cmd *c, const posemb_pe *p, const posemb_pe_export *ex,
                                       posemb_error *err)
{
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    char buf[32];
    posemb_status st = posemb_st_writer_meta(&w, "spec", posemb_pe_spec(p), err);
    snprintf(buf, sizeof buf, "%d", c->len);
    if (!st) st = posemb_st_writer_meta(&w, "len", buf, err);
    snprintf(buf, sizeof buf, "%d", c->dim);
    if (!st) st = posemb_st_writer_meta(&w, "dim", buf, err);
    snprintf(buf, sizeof buf, "%d", c->heads);
    if (!st) st = posemb_st_writer_meta(&w, "heads", buf, err);
    snprintf(buf, sizeof buf, "%d", c->seed);
    if (!st) st = posemb_st_writer_meta(&w, "seed", buf, err);
    for (int i = 0; !st && i < ex->n; i++) {
        int64_t shape[2] = {ex->items[i].rows, ex->items[i].cols};
        st = posemb_st_writer_add_f32(&w, ex->items[i].name, 2, shape, ex->items[i].data, err);
    }
    if (!st) st = posemb_st_write(&w, c->out, err);
    posemb_st_writer_free(&w);
    return st;
}

static const posemb_pe_named_matrix *pick(const posemb_pe_export *ex, const char *what, posemb_error *err)
{
    if (!what) return &ex->items[0];
    for (int i = 0; i < ex->n; i++)
        if (!strcmp(ex->items[i].name, what)) return &ex->items[i];
    char names[512] = "";
    for (int i = 0; i < ex->n && strlen(names) < 400; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", ex->items[i].name);
    posemb_fail(err, POSEMB_EINVAL, "--what %s: no such matrix (this PE has: %s)", what, names);
    return NULL;
}

static int run(const pe_cmd *c)
{
    posemb_error err;
    posemb_pe_tables *t;
    posemb_pe_dims dims = {.dim = c->dim,
                           .n_heads = c->heads,
                           .n_layers = c->layers,
                           .max_len = c->max_len,
                           .causal = c->causal,
                           .max_threads = 1};
    if (posemb_pe_tables_new(&t, c->spec, &dims, c->len, (uint64_t)c->seed, &err)) return cli_report("pe", &err);
    const posemb_pe *p = posemb_pe_tables_pe(t);
    const posemb_pe_export *ex = posemb_pe_tables_export(t);
    int rc = 0;
    if (!ex->n && posemb_pe_has_weights(p)) {
        printf("%s: 0 parameters; data-dependent: its weights come from the logits and the keys' order, nothing "
               "fixed to write (posemb analyze MODEL shows a trained model's attention)\n",
               posemb_pe_spec(p));
        posemb_pe_tables_free(t);
        return 0;
    }
    if (!ex->n) {
        printf("%s: 0 parameters; adds no position information, nothing written\n", posemb_pe_spec(p));
        posemb_pe_tables_free(t);
        return 0;
    }
    const posemb_pe_named_matrix *m = pick(ex, c->what, &err);
    const char *out = c->out ? c->out : "-";
    int all = c->out && ends_with(c->out, ".safetensors");
    posemb_status st = POSEMB_OK;
    if (m) st = all ? write_safetensors(c, p, ex, &err) : posemb_csv_write(out, m->data, m->rows, m->cols, &err);
    if (!m || st) rc = cli_report("pe", &err);
    else
        fprintf(c->out ? stdout : stderr, "%s: %zu parameters; %d matrices; wrote %s%s [%d x %d] (%s) to %s\n",
                posemb_pe_spec(p), posemb_pe_n_floats(p), ex->n, all ? "all, first " : "", m->name, m->rows, m->cols,
                m->desc, c->out ? c->out : "stdout");
    posemb_pe_tables_free(t);
    return rc;
}

int cmd_pe(int argc, char **argv)
{
    pe_cmd c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    if (c.list) {
        list_families();
        return 0;
    }
    return run(&c);
}
