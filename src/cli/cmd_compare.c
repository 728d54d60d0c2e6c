/* posemb compare: several PEs side by side in one report. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis_args.h"
#include "commands.h"
#include "analysis/analysis.h"
#include "core/fileio.h"
#include "posemb/model.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "posemb/rng.h"
#include "core/rng_internal.h"

static const char USAGE[] =
    "usage: posemb compare SOURCE SOURCE... [--out DIR] [options]\n\n"
    "Analyses each SOURCE (as 'posemb analyze' does, into DIR/N-NAME/) and puts them side by\n"
    "side in DIR/report.html: the indicators of each PE's main matrix in one table, its heatmap\n"
    "in a grid. DIR/compare.json holds the table. When the first SOURCE and others are model\n"
    "folders of the same shape (layers x heads), their attention maps on the same seeded random\n"
    "sequences (or windows of --text) are compared too: the Jensen-Shannon divergence (nats, 0\n"
    "to ln 2) per layer and head of each against the first, in DIR/attention_js.csv and the\n"
    "report.\n\n"
    "  --out DIR       output folder (default: posemb-compare)\n"
    "  --no-figures    no PNG heatmaps (report.html without images)\n"
    "  --text PATH     the attention analyses on windows of this text (a file or a folder,\n"
    "                  tokenized by the first SOURCE's tokenizer) instead of random tokens\n" ANALYSIS_FLAGS_HELP;

#define MAX_SOURCES 32

/* The matrix that speaks for a source: APE similarity, relative vectors, bias, identical words. */
static const char *primary(const posemb_analysis *r, const posemb_indicators **in)
{
    if (r->has_similarity) {
        *in = &r->similarity;
        return "similarity";
    }
    if (r->has_rel) {
        *in = &r->rel_similarity;
        return "rel_similarity";
    }
    if (r->has_bias) {
        *in = &r->bias;
        return "bias";
    }
    if (r->has_identical) {
        *in = &r->identical;
        return "identical";
    }
    *in = NULL;
    return NULL;
}

static void folder_name(char *buf, size_t cap, int i, const char *src)
{
    const char *base = strrchr(src, '/');
    base = base && base[1] ? base + 1 : src;
    int n = snprintf(buf, cap, "%d-", i + 1);
    for (const char *p = base; *p && (size_t)n + 1 < cap && n < 60; p++)
        buf[n++] = isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.' ? *p : '_';
    buf[n] = '\0';
}

typedef struct row {
    char name[600], dir[128], matrix[32];
    posemb_indicators in;
    int has;
    double mae, order;
    int has_probe;
    int has_js; /* a model folder compared with the first source's model */
    double js_mean;
} row;

static int is_model_folder(const char *src)
{
    char cfg[POSEMB_PATH_MAX];
    return !posemb_path_join(cfg, sizeof cfg, src, "config.json") && !access(cfg, R_OK);
}

/* A model folder as a source, or NULL (a spec, a table). */
static posemb_model *load_model(const char *src)
{
    posemb_error err;
    posemb_model *m = NULL;
    if (!is_model_folder(src)) return NULL;
    return posemb_model_load(&m, src, &err) ? NULL : m;
}

/* Both models on the same inputs: up to 8 windows of the text in ao, else
 * 8 seeded random sequences (ids below both vocabularies, never a padding
 * token); JS per layer and head into js. */
static posemb_status attention_js(posemb_model *a, posemb_model *b, const posemb_analyze_opts *ao, float *js, int *T,
                                  posemb_error *err)
{
    const posemb_config *ca = posemb_model_config(a), *cb = posemb_model_config(b);
    int V = ca->vocab_size < cb->vocab_size ? ca->vocab_size : cb->vocab_size, B = 8;
    int n = ca->max_position < cb->max_position ? ca->max_position : cb->max_position;
    n = n < 128 ? n : 128;
    if (ca->arch == POSEMB_ROBERTA || cb->arch == POSEMB_ROBERTA)
        n -= ca->pad_token_id + 1; /* positions past the pad */
    *T = n;
    if (ao->text && ao->text_n / n < B) B = ao->text_n / n > 0 ? (int)(ao->text_n / n) : 1;
    int32_t *ids = malloc((size_t)B * n * sizeof *ids);
    if (!ids) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = POSEMB_OK;
    if (ao->text) st = posemb_text_windows(ao->text, ao->text_n, B, n, V, ids, err);
    posemb_rng r;
    posemb_rng_seed(&r, ao->seed, 13);
    for (int i = 0; !ao->text && i < B * n; i++) {
        do ids[i] = (int32_t)posemb_rng_below(&r, (uint32_t)V);
        while ((ids[i] == ca->pad_token_id || ids[i] == cb->pad_token_id) && V > 2);
    }
    posemb_batch batch = {.B = B, .T = n, .ids = ids};
    posemb_model_set_train(a, 0, 0, 0);
    posemb_model_set_train(b, 0, 0, 0);
    if (!st) st = posemb_model_forward(a, &batch, err);
    if (!st) st = posemb_model_forward(b, &batch, err);
    if (!st) st = posemb_attn_js(a, b, &batch, js, err);
    free(ids);
    return st;
}

/* Every model source of the first's shape against the first: DIR/attention_js.csv
 * (one row per source: the layers x heads divergences) and a heatmap each. */
static posemb_status compare_attention(const char *out, const char *const *srcs, row *rows, int n,
                                       const posemb_analyze_opts *ao, posemb_error *err)
{
    posemb_model *ref = load_model(srcs[0]);
    if (!ref) return POSEMB_OK; /* the first source is not a model folder */
    const posemb_config *c = posemb_model_config(ref);
    int LH = c->layers * c->heads, have = 0;
    float *js = calloc((size_t)n * LH, sizeof *js);
    posemb_status st = js ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (int i = 1; !st && i < n; i++) {
        posemb_model *m = load_model(srcs[i]);
        const posemb_config *mc = m ? posemb_model_config(m) : NULL;
        int T = 0;
        if (mc && mc->layers == c->layers && mc->heads == c->heads) {
            st = attention_js(ref, m, ao, js + (size_t)i * LH, &T, err);
            double sum = 0;
            for (int k = 0; k < LH; k++) sum += js[(size_t)i * LH + k];
            rows[i].has_js = !st;
            rows[i].js_mean = sum / LH;
            have |= !st;
            char name[160], path[POSEMB_PATH_MAX], title[700];
            snprintf(name, sizeof name, "attention_js_%d.png", i + 1);
            snprintf(title, sizeof title,
                     "JS divergence of attention, %.300s against %.300s (layers x heads, %d tokens)", srcs[i], srcs[0],
                     T);
            posemb_heatmap_opts h = posemb_heatmap_defaults();
            h.title = title;
            h.xlabel = "head";
            h.ylabel = "layer";
            h.cbar_label = "nats";
            if (!st && ao->figures && !posemb_path_join(path, sizeof path, out, name))
                st = posemb_plot_heatmap(path, js + (size_t)i * LH, c->layers, c->heads, &h, err);
        }
        posemb_model_free(m);
    }
    char path[POSEMB_PATH_MAX];
    if (!st && have && !posemb_path_join(path, sizeof path, out, "attention_js.csv"))
        st = posemb_csv_write(path, js + LH, n - 1, LH, err);
    free(js);
    posemb_model_free(ref);
    return st;
}

/* The attention comparison's table and heatmaps, when there is one. */
static posemb_status js_section(posemb_report *rep, const char *out, const row *rows, int n, int text,
                                posemb_error *err)
{
    int k = 0;
    char cells[MAX_SOURCES][2][64], path[POSEMB_PATH_MAX], name[64];
    const char *ptr[MAX_SOURCES * 2];
    for (int i = 1; i < n; i++)
        if (rows[i].has_js) {
            snprintf(cells[k][0], 64, "%.63s", rows[i].name);
            snprintf(cells[k][1], 64, "%.4f", rows[i].js_mean);
            ptr[2 * k] = cells[k][0];
            ptr[2 * k + 1] = cells[k][1];
            k++;
        }
    if (!k) return POSEMB_OK;
    posemb_report_heading(rep, 2, "Attention maps against the first source");
    char para[512];
    snprintf(para, sizeof para,
             "Jensen-Shannon divergence between each model's attention and the first's on the same %s, per query "
             "row, averaged over rows, layers and heads (0: the same maps; ln 2 = 0.693: disjoint). attention_js.csv "
             "has each layer and head.",
             text ? "windows of the text (up to 8)" : "8 seeded random sequences");
    posemb_report_paragraph(rep, para);
    static const char *const head[] = {"model", "mean JS (nats)"};
    posemb_report_table(rep, head, 2, ptr, k, "Attention compared with the first model");
    posemb_status st = POSEMB_OK;
    for (int i = 1; !st && i < n; i++) {
        snprintf(name, sizeof name, "attention_js_%d.png", i + 1);
        if (!rows[i].has_js || posemb_path_join(path, sizeof path, out, name) || access(path, R_OK)) continue;
        st = posemb_report_image(rep, path, rows[i].name, err);
    }
    return st;
}

static posemb_status write_compare(const char *out, row *rows, int n, const posemb_analyze_opts *ao, posemb_error *err)
{
    int K = ao->K;
    posemb_report *rep = posemb_report_new("posemb: position embeddings compared");
    if (!rep) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_report_heading(rep, 1, "Position embeddings compared");
    char text[256], (*cells)[64] = calloc((size_t)n * 9, sizeof *cells), path[POSEMB_PATH_MAX];
    const char **ptr = calloc((size_t)n * 9, sizeof *ptr);
    if (!cells || !ptr) {
        free(cells);
        free(ptr);
        posemb_report_free(rep);
        return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    snprintf(text, sizeof text,
             "Indicators of each PE's main matrix over 1 <= |i - j| <= %d (higher = the property holds "
             "better); regression: mean |error| of the position read linearly from the table.",
             K);
    posemb_report_paragraph(rep, text);
    static const char *const head[] = {"PE",  "matrix",           "TI",          "MONO",  "window",
                                       "SYM", "regression error", "order error", "folder"};
    size_t len = 0, cap = (size_t)n * 512 + 64;
    char *json = malloc(cap);
    len += (size_t)snprintf(json, cap, "{\"K\": %d, \"sources\": [", K);
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        snprintf(cells[i * 9 + 0], 64, "%.63s", r->name);
        snprintf(cells[i * 9 + 1], 64, "%s", r->has ? r->matrix : "-");
        snprintf(cells[i * 9 + 2], 64, r->has ? "%.3f" : "-", r->in.ti);
        snprintf(cells[i * 9 + 3], 64, r->has ? "%.3f" : "-", r->in.mono);
        snprintf(cells[i * 9 + 4], 64, r->has ? "%d" : "-", r->in.window);
        snprintf(cells[i * 9 + 5], 64, r->has ? "%.3f" : "-", r->in.sym);
        snprintf(cells[i * 9 + 6], 64, r->has_probe ? "%.2f" : "-", r->mae);
        snprintf(cells[i * 9 + 7], 64, r->has_probe ? "%.3f" : "-", r->order);
        snprintf(cells[i * 9 + 8], 64, "%.63s", r->dir);
        for (int k = 0; k < 9; k++) ptr[i * 9 + k] = cells[i * 9 + k];
        if (json)
            len += (size_t)snprintf(json + len, cap - len,
                                    "%s{\"source\": \"%s\", \"folder\": \"%s\", \"matrix\": \"%s\", \"ti\": %.6f, "
                                    "\"mono\": %.6f, \"window\": %d, \"sym\": %.6f%s",
                                    i ? ", " : "", r->name, r->dir, r->has ? r->matrix : "", r->in.ti, r->in.mono,
                                    r->in.window, r->in.sym, r->has_js ? "" : "}");
        if (json && r->has_js)
            len += (size_t)snprintf(json + len, cap - len, ", \"attention_js_mean\": %.6f}", r->js_mean);
    }
    posemb_report_table(rep, head, 9, ptr, n, "One row per PE");
    posemb_status st = POSEMB_OK;
    for (int i = 0; !st && i < n; i++) {
        if (!rows[i].has) continue;
        snprintf(text, sizeof text, "%s/%s.png", rows[i].dir, rows[i].matrix);
        if (posemb_path_join(path, sizeof path, out, text)) continue;
        FILE *f = fopen(path, "rb");
        if (!f) continue; /* --no-figures */
        fclose(f);
        st = posemb_report_image(rep, path, rows[i].name, err);
    }
    if (!st) st = js_section(rep, out, rows, n, ao->text != NULL, err);
    if (!st && posemb_path_join(path, sizeof path, out, "report.html"))
        st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st) st = posemb_report_write(rep, path, err);
    if (!st && json) {
        snprintf(json + len, cap - len, "]}");
        if (!posemb_path_join(path, sizeof path, out, "compare.json")) st = posemb_write_text(path, json, err);
    }
    free(json);
    free(cells);
    free(ptr);
    posemb_report_free(rep);
    return st;
}

int cmd_compare(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "compare", argc, argv);
    posemb_source_opts so = {0};
    posemb_analyze_opts ao = posemb_analyze_defaults();
    const char *srcs[MAX_SOURCES], *out = "posemb-compare", *text_path = NULL, *arg;
    int n = 0, rc = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!a.flag && strcmp(arg, "-K")) {
            if (n == MAX_SOURCES) return cli_usage_error(&a, "at most %d sources", MAX_SOURCES);
            srcs[n++] = arg;
        } else if (cli_is(&a, "--out")) rc = (out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--no-figures")) rc = cli_switch(&a, &ao.figures, 0);
        else if (cli_is(&a, "--text")) rc = (text_path = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (!analysis_flag(&a, &so, &ao, &rc))
            return cli_usage_error(&a, "unknown flag '%s' (see 'posemb compare --help')", arg);
    }
    if (rc) return rc;
    if (n < 2) return cli_usage_error(&a, "give two or more SOURCEs (see 'posemb compare --help')");
    for (int i = 1; text_path && i < n; i++) /* one text, one tokenizer: other ids would mean another text */
        if (is_model_folder(srcs[i]) && !analysis_same_tokenizer(srcs[0], srcs[i]))
            return cli_usage_error(&a, "--text: %s's tokenizer is not %s's (the same text is other ids for it)",
                                   srcs[i], srcs[0]);
    cli_say_threads();
    posemb_error err;
    posemb_corpus text = {0};
    if (text_path && analysis_text_load(srcs[0], text_path, &text, &ao, &err)) return cli_report("compare", &err);
    if (mkdir(out, 0755) && errno != EEXIST) {
        posemb_fail(&err, POSEMB_EIO, "%s: cannot create: %s", out, strerror(errno));
        posemb_corpus_free(&text);
        return cli_report("compare", &err);
    }
    row *rows = calloc((size_t)n, sizeof *rows);
    posemb_status st = rows ? POSEMB_OK : posemb_fail(&err, POSEMB_ENOMEM, "out of memory");
    ao.quiet = 1;
    for (int i = 0; !st && i < n; i++) {
        char dir[POSEMB_PATH_MAX];
        posemb_source s;
        posemb_analysis r;
        folder_name(rows[i].dir, sizeof rows[i].dir, i, srcs[i]);
        snprintf(rows[i].name, sizeof rows[i].name, "%s", srcs[i]);
        if (posemb_path_join(dir, sizeof dir, out, rows[i].dir)) st = posemb_fail(&err, POSEMB_EINVAL, "path too long");
        if (!st && !(st = posemb_source_open(&s, srcs[i], &so, &err))) {
            st = posemb_analyze(&s, &ao, dir, &r, &err);
            const posemb_indicators *in;
            const char *m = st ? NULL : primary(&r, &in);
            if (m) {
                rows[i].has = 1;
                rows[i].in = *in;
                snprintf(rows[i].matrix, sizeof rows[i].matrix, "%s", m);
            }
            if (!st && r.has_regress) {
                rows[i].has_probe = 1;
                rows[i].mae = r.regress.mae_all;
                rows[i].order = r.relative_error;
            }
            if (!st)
                printf("%-28s %-15s TI %.3f  MONO %.3f  window %4d  SYM %.3f\n", srcs[i], m ? m : "-", rows[i].in.ti,
                       rows[i].in.mono, rows[i].in.window, rows[i].in.sym);
            posemb_analysis_free(&r);
            posemb_source_close(&s);
        }
    }
    if (!st) st = compare_attention(out, srcs, rows, n, &ao, &err);
    if (!st) st = write_compare(out, rows, n, &ao, &err);
    if (!st) printf("wrote %s/report.html\n", out);
    free(rows);
    posemb_corpus_free(&text);
    return st ? cli_report("compare", &err) : 0;
}
