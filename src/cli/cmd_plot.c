/* posemb plot: figures from tables. "forest" draws a CSV of claims (one
 * row per claim x testbed: the estimate, its 95% interval, the paper's own
 * effect, the verdict) as a forest plot, one panel per unit of effect;
 * "lines" draws a long CSV of points as small multiples (plot_lines.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "commands.h"
#include "formats/csv.h"
#include "plot/plot.h"
#include "plot_lines.h"

static const char USAGE[] =
    "usage: posemb plot forest CLAIMS.csv --out FILE.png|FILE.svg [--title T]\n"
    "       posemb plot lines POINTS.csv --out FILE.png|FILE.svg [--title T] [--xlabel X] [--ylabel Y]\n"
    "                         [--reference SERIES] [--cols N] [--markers] [--free-x]\n\n"
    "Both read a CSV table with a header row naming its columns, in any order; fields may be\n"
    "double-quoted (\"\" for a quote); a column the figure does not know is an error.\n"
    "  --out FILE   the figure: .png or .svg (also .pdf), written whole or not at all\n"
    "  --title T    a title above the figure\n\n"
    "forest: the claims of CLAIMS.csv as a forest plot: a row per claim and testbed with its\n"
    "estimate and 95% interval coloured by the verdict, the paper's own effect as an open\n"
    "diamond, one panel (with its own x axis and a line at 0) per unit of effect. Columns:\n"
    "  claim, testbed        the row's label (\"claim (testbed)\")\n"
    "  unit                  what the effect measures (\"difference of F1\"); one panel each\n"
    "  effect, ci_lo, ci_hi  the estimate and its 95% interval; empty: absent\n"
    "  paper_effect          the paper's own effect; empty: absent\n"
    "  verdict               reproduced | reproduced, confounded | not reproduced | untestable here\n"
    "and optionally claim_id, mde, p, n_units, unit_of_replication, note, evidence (not drawn).\n\n"
    "lines: the points of POINTS.csv as small multiples sharing their axes (--free-x: y only).\n"
    "Columns exactly panel, series, x, y: one row per point, each series' points in increasing\n"
    "x, y empty to break the line there. One panel per value of panel (at most 24, in the order\n"
    "they first appear), in it its series (at most 40 in the figure, the reference not counted);\n"
    "a series named alike in several panels keeps one colour and dash.\n"
    "  --reference SERIES    the series drawn in grey in every panel; its rows leave panel empty\n"
    "  --xlabel, --ylabel    the axes' labels\n"
    "  --cols N              panels per row, 1-24 (default: up to 3, balanced)\n"
    "  --markers             a marker at every point as well as the line\n"
    "  --free-x              each panel's x axis from its own points, the reference cut to them\n"
    "                        (panels over different spans; the y axis stays shared)\n";

#define MAX_ROWS POSEMB_FOREST_MAX_ROWS

enum { C_CLAIM, C_TESTBED, C_UNIT, C_EFFECT, C_LO, C_HI, C_PAPER, C_VERDICT, N_REQUIRED };
static const char *const REQUIRED[N_REQUIRED] = {"claim", "testbed", "unit",         "effect",
                                                 "ci_lo", "ci_hi",   "paper_effect", "verdict"};
/* Columns a claims table has that the figure does not draw. */
static const char *const KNOWN[] = {"claim_id", "mde", "p", "n_units", "unit_of_replication", "note", "evidence"};
#define N_KNOWN (int)(sizeof KNOWN / sizeof KNOWN[0])

typedef struct plot_cmd {
    const char *kind;
    plot_lines_args lines; /* csv, out and title serve forest too */
} plot_cmd;

static int has_figure_extension(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".svg") || !strcasecmp(dot, ".pdf"));
}

/* A flag only `lines` reads; 0 or EXIT_USAGE. */
static int lines_flag(cli_args *a, plot_lines_args *l)
{
    if (cli_is(a, "--xlabel")) return (l->xlabel = cli_value(a)) ? 0 : EXIT_USAGE;
    if (cli_is(a, "--ylabel")) return (l->ylabel = cli_value(a)) ? 0 : EXIT_USAGE;
    if (cli_is(a, "--reference")) {
        if (!(l->reference = cli_value(a))) return EXIT_USAGE;
        return l->reference[0] ? 0 : cli_usage_error(a, "--reference: name a series");
    }
    if (cli_is(a, "--cols")) return cli_int(a, 1, 24, &l->cols);
    if (cli_is(a, "--markers")) return cli_switch(a, &l->markers, 1);
    if (cli_is(a, "--free-x")) return cli_switch(a, &l->free_x, 1);
    return cli_usage_error(a, "unknown flag '%s' (see 'posemb plot --help')", a->flag);
}

/* Everything given is what the figure reads; 0 or EXIT_USAGE. */
static int check(cli_args *a, const plot_cmd *c, int lines_only)
{
    if (!c->kind) return cli_usage_error(a, "missing what to plot: forest or lines (see 'posemb plot --help')");
    int forest = !strcmp(c->kind, "forest");
    if (!forest && strcmp(c->kind, "lines"))
        return cli_usage_error(a, "unknown figure '%s': posemb plots forest or lines", c->kind);
    if (forest && lines_only)
        return cli_usage_error(a,
                               "--xlabel, --ylabel, --reference, --cols, --markers and --free-x are for 'lines', not "
                               "'forest'");
    if (!c->lines.csv)
        return cli_usage_error(a, "missing %s (see 'posemb plot --help')", forest ? "CLAIMS.csv" : "POINTS.csv");
    if (!c->lines.out) return cli_usage_error(a, "--out FILE.png or FILE.svg is required");
    if (!has_figure_extension(c->lines.out))
        return cli_usage_error(a, "--out %s: name the figure .png, .svg or .pdf", c->lines.out);
    return 0;
}

/* 0, -1 after --help, or EXIT_USAGE. */
static int parse(int argc, char **argv, plot_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "plot", argc, argv);
    *c = (plot_cmd){0};
    plot_lines_args *l = &c->lines;
    const char *arg;
    int rc = 0, lines_only = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (cli_is(&a, "--help") || !strcmp(arg, "-h")) {
            fputs(USAGE, stdout);
            return -1;
        } else if (!a.flag) {
            if (!c->kind) c->kind = arg;
            else if (!l->csv) l->csv = arg;
            else return cli_usage_error(&a, "one table only (got '%s' and '%s')", l->csv, arg);
        } else if (cli_is(&a, "--out")) rc = (l->out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--title")) rc = (l->title = cli_value(&a)) ? 0 : EXIT_USAGE;
        else {
            rc = lines_flag(&a, l);
            lines_only = 1;
        }
    }
    return rc ? rc : check(&a, c, lines_only);
}

/* ---- the claims table ---------------------------------------------------- */

static int is_known(const char *name)
{
    for (int k = 0; k < N_REQUIRED; k++)
        if (!strcmp(name, REQUIRED[k])) return 1;
    for (int k = 0; k < N_KNOWN; k++)
        if (!strcmp(name, KNOWN[k])) return 1;
    return 0;
}

/* col[k]: the index of REQUIRED[k]; every column of the file must be one posemb knows. */
static int find_columns(const posemb_csv *t, const char *path, int col[N_REQUIRED])
{
    for (int i = 0; i < t->n_cols; i++)
        if (!is_known(t->header[i])) {
            fprintf(stderr,
                    "posemb plot: %s:1: unknown column '%s' (posemb reads claim, testbed, unit, effect, ci_lo, ci_hi, "
                    "paper_effect, verdict and knows claim_id, mde, p, n_units, unit_of_replication, note, evidence)\n",
                    path, t->header[i]);
            return 1;
        }
    for (int k = 0; k < N_REQUIRED; k++)
        if ((col[k] = posemb_csv_column(t, REQUIRED[k])) < 0) {
            fprintf(stderr,
                    "posemb plot: %s:1: no column '%s' (a claims table needs claim, testbed, unit, effect, "
                    "ci_lo, ci_hi, paper_effect, verdict)\n",
                    path, REQUIRED[k]);
            return 1;
        }
    return 0;
}

/* A number field: empty is NAN (absent); anything but a whole finite number is an error. */
static int number(const char *path, long line, const char *column, const char *text, double *out)
{
    char *end;
    *out = NAN;
    if (!text[0]) return 0;
    double v = strtod(text, &end);
    if (*end || !isfinite(v) || text[0] == ' ' || text[0] == '\t') {
        fprintf(stderr, "posemb plot: %s:%ld: %s '%s' is not a number (write it as 0.031, -1.2e-3; empty if absent)\n",
                path, line, column, text);
        return 1;
    }
    *out = v;
    return 0;
}

typedef struct claims {
    posemb_forest_row *rows;
    char *labels; /* the rows' labels, one after the other */
    int n;
} claims;

static int row_numbers(const char *path, long line, const char *const *f, const int *col, posemb_forest_row *r)
{
    if (number(path, line, "effect", f[col[C_EFFECT]], &r->effect) ||
        number(path, line, "ci_lo", f[col[C_LO]], &r->lo) || number(path, line, "ci_hi", f[col[C_HI]], &r->hi) ||
        number(path, line, "paper_effect", f[col[C_PAPER]], &r->paper))
        return 1;
    if (isnan(r->lo) != isnan(r->hi)) {
        fprintf(stderr, "posemb plot: %s:%ld: ci_lo and ci_hi: give both ends of the interval or neither\n", path,
                line);
        return 1;
    }
    if (r->lo > r->hi) {
        fprintf(stderr, "posemb plot: %s:%ld: ci_lo %s > ci_hi %s\n", path, line, f[col[C_LO]], f[col[C_HI]]);
        return 1;
    }
    return 0;
}

static int row_verdict(const char *path, long line, const char *text, posemb_forest_row *r)
{
    int v = posemb_verdict_from_name(text);
    if (v < 0) {
        fprintf(stderr,
                "posemb plot: %s:%ld: verdict '%s' is not one of 'reproduced', 'reproduced, confounded', 'not "
                "reproduced', 'untestable here'\n",
                path, line, text);
        return 1;
    }
    r->verdict = (posemb_verdict)v;
    return 0;
}

/* Row i of t into cl->rows[i], its label "claim (testbed)" written at *label. */
static int read_row(const posemb_csv *t, const char *path, const int *col, int i, claims *cl, char **label)
{
    const char *const *f = t->cells + (size_t)i * t->n_cols;
    long line = t->line[i];
    posemb_forest_row *r = &cl->rows[i];
    if (!f[col[C_CLAIM]][0] || !f[col[C_UNIT]][0]) {
        fprintf(stderr, "posemb plot: %s:%ld: empty %s\n", path, line, f[col[C_CLAIM]][0] ? "unit" : "claim");
        return 1;
    }
    if (row_numbers(path, line, f, col, r) || row_verdict(path, line, f[col[C_VERDICT]], r)) return 1;
    r->unit = f[col[C_UNIT]];
    r->label = *label;
    *label += f[col[C_TESTBED]][0] ? sprintf(*label, "%s (%s)", f[col[C_CLAIM]], f[col[C_TESTBED]]) + 1
                                   : sprintf(*label, "%s", f[col[C_CLAIM]]) + 1;
    return 0;
}

/* Units beyond the figure's panels, reported at the row that brings one too many. */
static int check_units(const claims *cl, const posemb_csv *t, const char *path)
{
    const char *seen[POSEMB_FOREST_MAX_PANELS];
    int n = 0;
    for (int i = 0; i < cl->n; i++) {
        int k = 0;
        while (k < n && strcmp(seen[k], cl->rows[i].unit)) k++;
        if (k < n) continue;
        if (n == POSEMB_FOREST_MAX_PANELS) {
            fprintf(stderr, "posemb plot: %s:%ld: unit '%s' is one more than the %d panels a figure has\n", path,
                    t->line[i], cl->rows[i].unit, POSEMB_FOREST_MAX_PANELS);
            return 1;
        }
        seen[n++] = cl->rows[i].unit;
    }
    return 0;
}

static int read_claims(const posemb_csv *t, const char *path, claims *cl)
{
    int col[N_REQUIRED];
    if (find_columns(t, path, col)) return 1;
    if (t->n_rows < 1) {
        fprintf(stderr, "posemb plot: %s: no claims under the header\n", path);
        return 1;
    }
    size_t bytes = 0;
    for (int i = 0; i < t->n_rows; i++)
        bytes += strlen(t->cells[(size_t)i * t->n_cols + col[C_CLAIM]]) +
                 strlen(t->cells[(size_t)i * t->n_cols + col[C_TESTBED]]) + 4;
    cl->rows = calloc((size_t)t->n_rows, sizeof *cl->rows);
    cl->labels = malloc(bytes);
    if (!cl->rows || !cl->labels) {
        fprintf(stderr, "posemb plot: %s: out of memory\n", path);
        return 1;
    }
    char *label = cl->labels;
    for (cl->n = 0; cl->n < t->n_rows; cl->n++)
        if (read_row(t, path, col, cl->n, cl, &label)) return 1;
    return check_units(cl, t, path);
}

static int forest(const plot_lines_args *c)
{
    posemb_csv t;
    posemb_error err;
    if (posemb_csv_read(c->csv, MAX_ROWS, &t, &err)) {
        fprintf(stderr, "posemb plot: %s\n", err.msg);
        return 1;
    }
    claims cl = {0};
    int rc = read_claims(&t, c->csv, &cl);
    posemb_forest_opts o = {.title = c->title};
    if (!rc && posemb_plot_forest(c->out, cl.rows, cl.n, &o, &err)) {
        fprintf(stderr, "posemb plot: %s\n", err.msg);
        rc = 1;
    }
    if (!rc) fprintf(stderr, "posemb plot: wrote %s (%d rows)\n", c->out, cl.n);
    free(cl.rows);
    free(cl.labels);
    posemb_csv_free(&t);
    return rc;
}

int cmd_plot(int argc, char **argv)
{
    plot_cmd c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    return strcmp(c.kind, "forest") ? plot_lines(&c.lines) : forest(&c.lines);
}
