/* posemb plot lines: a long table of points (panel, series, x, y) drawn as
 * small multiples, one panel per value of `panel` in the order they first
 * appear, each panel's series in theirs, one optional reference series in
 * grey in every panel. Every malformed row is refused with its file and
 * line, so a figure never silently drops or reorders points. */
#include "plot_lines.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "plot/plot.h"

#define MAX_POINTS 200000
#define MAX_PANELS 24              /* posemb_plot_lines_grid's */
#define REF POSEMB_PLOT_MAX_SERIES /* the reference's slot in table.lines */

enum { C_PANEL, C_SERIES, C_X, C_Y, N_COLS };
static const char *const COLS[N_COLS] = {"panel", "series", "x", "y"};

/* One series as read: its panel, label, points, the last x (for the order check). */
typedef struct line_in {
    int panel;
    const char *label;
    int n, at; /* points; their first index in the gathered arrays */
    double last_x;
    const char *last_text; /* last_x as the file wrote it */
} line_in;

typedef struct table {
    const posemb_csv *t;
    const char *path, *reference;
    const char *panels[MAX_PANELS];
    int n_panels;
    line_in lines[REF + 1]; /* the last: the reference */
    int n_lines;
    int *of_row; /* [n_rows] the row's slot in lines */
} table;

/* "posemb plot: FILE:LINE: problem" on stderr; returns 1. */
__attribute__((format(printf, 3, 4))) static int fail(const table *tb, long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "posemb plot: %s:%ld: ", tb->path, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int columns(const table *tb, int col[N_COLS])
{
    for (int i = 0; i < tb->t->n_cols; i++) {
        int k = 0;
        while (k < N_COLS && strcmp(tb->t->header[i], COLS[k])) k++;
        if (k == N_COLS)
            return fail(tb, 1, "unknown column '%s' (a lines table has panel, series, x, y)", tb->t->header[i]);
    }
    for (int k = 0; k < N_COLS; k++)
        if ((col[k] = posemb_csv_column(tb->t, COLS[k])) < 0)
            return fail(tb, 1, "no column '%s' (a lines table has panel, series, x, y)", COLS[k]);
    return 0;
}

/* A number: empty is NAN when allowed; anything but one finite decimal number (no spaces, no hex) is an error. */
static int number(const table *tb, long line, const char *column, const char *text, int may_be_empty, double *v)
{
    char *end;
    *v = NAN;
    if (!text[0] && may_be_empty) return 0;
    if (!text[0]) return fail(tb, line, "empty %s", column);
    double d = strtod(text, &end);
    if (*end || !isfinite(d) || text[strspn(text, "0123456789+-.eE")])
        return fail(tb, line, "%s '%s' is not a number", column, text);
    *v = d;
    return 0;
}

/* The panel's index, added when new; -1 after an error. */
static int panel_of(table *tb, long line, const char *name)
{
    for (int p = 0; p < tb->n_panels; p++)
        if (!strcmp(tb->panels[p], name)) return p;
    if (tb->n_panels == MAX_PANELS) {
        fail(tb, line, "panel '%s' is one more than the %d panels a figure has", name, MAX_PANELS);
        return -1;
    }
    tb->panels[tb->n_panels] = name;
    return tb->n_panels++;
}

/* The series (panel, label)'s index, added when new; -2 after an error. */
static int series_of(table *tb, long line, int panel, const char *label)
{
    for (int k = 0; k < tb->n_lines; k++)
        if (tb->lines[k].panel == panel && !strcmp(tb->lines[k].label, label)) return k;
    if (tb->n_lines == POSEMB_PLOT_MAX_SERIES) {
        fail(tb, line, "series '%s' is one more than the %d series a figure draws", label, POSEMB_PLOT_MAX_SERIES);
        return -2;
    }
    tb->lines[tb->n_lines] = (line_in){.panel = panel, .label = label, .last_x = -INFINITY};
    return tb->n_lines++;
}

/* Row i's series into tb->of_row[i]; its x must follow the series' last. */
static int read_row(table *tb, const int *col, int i, double *x, double *y)
{
    const char *const *f = tb->t->cells + (size_t)i * tb->t->n_cols;
    long line = tb->t->line[i];
    const char *panel = f[col[C_PANEL]], *label = f[col[C_SERIES]];
    if (!label[0]) return fail(tb, line, "empty series");
    if (number(tb, line, "x", f[col[C_X]], 0, x) || number(tb, line, "y", f[col[C_Y]], 1, y)) return 1;
    int k = REF;
    if (tb->reference && !strcmp(label, tb->reference)) {
        if (panel[0])
            return fail(tb, line,
                        "the reference series '%s' has panel '%s': leave it empty (it is drawn in every "
                        "panel)",
                        label, panel);
        if (!tb->lines[k].label) tb->lines[k] = (line_in){.panel = -1, .label = label, .last_x = -INFINITY};
    } else {
        if (!panel[0]) return fail(tb, line, "empty panel (only the --reference series goes in every panel)");
        int p = panel_of(tb, line, panel);
        if (p < 0 || (k = series_of(tb, line, p, label)) < 0) return 1;
    }
    line_in *s = &tb->lines[k];
    if (!(*x > s->last_x))
        return fail(tb, line, "x %s does not follow %s in its series: give each series' points in increasing x",
                    f[col[C_X]], s->last_text);
    s->last_x = *x;
    s->last_text = f[col[C_X]];
    s->n++;
    tb->of_row[i] = k;
    return 0;
}

/* The points gathered series by series (xs, ys), the series panel by panel (out), the panels (panels). */
static void gather(table *tb, const double *x, const double *y, int markers, double *xs, double *ys, posemb_series *out,
                   posemb_panel *panels, posemb_series *ref)
{
    int at = 0, n = 0;
    for (int k = 0; k <= REF; k++)
        if (k < tb->n_lines || (k == REF && tb->lines[k].label)) {
            tb->lines[k].at = at;
            at += tb->lines[k].n;
            tb->lines[k].n = 0;
        }
    for (int i = 0; i < tb->t->n_rows; i++) {
        line_in *s = &tb->lines[tb->of_row[i]];
        xs[s->at + s->n] = x[i];
        ys[s->at + s->n++] = y[i];
    }
    for (int p = 0; p < tb->n_panels; p++) {
        panels[p] = (posemb_panel){.title = tb->panels[p], .series = out + n};
        for (int k = 0; k < tb->n_lines; k++)
            if (tb->lines[k].panel == p)
                out[n++] = (posemb_series){.label = tb->lines[k].label,
                                           .x = xs + tb->lines[k].at,
                                           .y = ys + tb->lines[k].at,
                                           .n = tb->lines[k].n,
                                           .points = markers ? 2 : 0};
        panels[p].n_series = (int)(out + n - panels[p].series);
    }
    const line_in *r = &tb->lines[REF];
    *ref = (posemb_series){.label = r->label, .x = xs + r->at, .y = ys + r->at, .n = r->n, .points = markers ? 2 : 0};
}

static int read_table(table *tb, double *x, double *y)
{
    int col[N_COLS];
    if (columns(tb, col)) return 1;
    if (tb->t->n_rows < 1) return fail(tb, 1, "no points under the header");
    int drawn = 0;
    for (int i = 0; i < tb->t->n_rows; i++) {
        if (read_row(tb, col, i, &x[i], &y[i])) return 1;
        drawn |= !isnan(y[i]);
    }
    if (!drawn) {
        fprintf(stderr, "posemb plot: %s: every y is empty: no point to draw\n", tb->path);
        return 1;
    }
    if (tb->reference && !tb->lines[REF].label)
        return fail(tb, 1, "no row of the reference series '%s'", tb->reference);
    if (!tb->n_panels) return fail(tb, 1, "no series but the reference");
    return 0;
}

static int draw(table *tb, const plot_lines_args *a, const double *x, const double *y)
{
    int n = tb->t->n_rows, rc = 1;
    double *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
    posemb_series out[POSEMB_PLOT_MAX_SERIES], ref;
    posemb_panel panels[MAX_PANELS];
    if (!xs || !ys) {
        fprintf(stderr, "posemb plot: %s: out of memory\n", a->csv);
    } else {
        gather(tb, x, y, a->markers, xs, ys, out, panels, &ref);
        posemb_grid_opts o = posemb_grid_defaults();
        o.title = a->title;
        o.xlabel = a->xlabel;
        o.ylabel = a->ylabel;
        o.cols = a->cols;
        o.free_x = a->free_x;
        o.reference = tb->reference ? &ref : NULL;
        o.looks_by_label = 1; /* a series named alike in two panels is one method: one colour and dash */
        posemb_error err;
        if (posemb_plot_lines_grid(a->out, panels, tb->n_panels, &o, &err))
            fprintf(stderr, "posemb plot: %s (from %s)\n", err.msg, a->csv);
        else rc = 0;
    }
    if (!rc)
        fprintf(stderr, "posemb plot: wrote %s (%d panel%s, %d series%s, %d point%s)\n", a->out, tb->n_panels,
                tb->n_panels == 1 ? "" : "s", tb->n_lines, tb->reference ? " and the reference" : "", n,
                n == 1 ? "" : "s");
    free(xs);
    free(ys);
    return rc;
}

int plot_lines(const plot_lines_args *a)
{
    posemb_csv t;
    posemb_error err;
    if (posemb_csv_read(a->csv, MAX_POINTS, &t, &err)) {
        fprintf(stderr, "posemb plot: %s\n", err.msg);
        return 1;
    }
    table tb = {.t = &t, .path = a->csv, .reference = a->reference};
    double *x = malloc((size_t)(t.n_rows + 1) * sizeof *x), *y = malloc((size_t)(t.n_rows + 1) * sizeof *y);
    tb.of_row = malloc((size_t)(t.n_rows + 1) * sizeof *tb.of_row);
    int rc = 1;
    if (!x || !y || !tb.of_row) fprintf(stderr, "posemb plot: %s: out of memory\n", a->csv);
    else if (!read_table(&tb, x, y)) rc = draw(&tb, a, x, y);
    free(x);
    free(y);
    free(tb.of_row);
    posemb_csv_free(&t);
    return rc;
}
