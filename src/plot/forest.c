/* Forest plots of claims: one row per claim x testbed, its estimate and
 * 95% interval in the colour of its verdict, the paper's own effect as an
 * open diamond, rows of one unit in one panel with its own x axis and a
 * line at 0 (no effect). Units differ (differences of F1, log ratios of
 * perplexities, rank correlations), so panels never share an axis. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_impl.h"

#define ROW_H 24   /* a row's height at scale 1; even, so that row centres fall on whole pixels */
#define PLOT_W 420 /* a panel's axis, default */
#define ZERO_RGB 0x555555u
#define BAND_RGB 0xf3f5f7u /* every other row, to follow a row from its label to its marks */
#define INK 0x222222u

static const char *const NAMES[POSEMB_VERDICT_COUNT] = {"reproduced", "reproduced, confounded", "not reproduced",
                                                        "untestable here"};
/* Okabe and Ito's bluish green, sky blue, vermilion and grey: apart under each colour-vision deficiency. */
static const uint32_t COLOURS[POSEMB_VERDICT_COUNT] = {0x009e73, 0x56b4e9, 0xd55e00, 0x999999};

const char *posemb_verdict_name(posemb_verdict v) { return (unsigned)v < POSEMB_VERDICT_COUNT ? NAMES[v] : NULL; }

int posemb_verdict_from_name(const char *name)
{
    for (int v = 0; name && v < POSEMB_VERDICT_COUNT; v++)
        if (!strcmp(name, NAMES[v])) return v;
    return -1;
}

uint32_t plot_verdict_rgb(posemb_verdict v) { return COLOURS[(unsigned)v % POSEMB_VERDICT_COUNT]; }

/* ---- checks and panels --------------------------------------------------- */

static int has_interval(const posemb_forest_row *r) { return !isnan(r->lo) && !isnan(r->hi); }

static posemb_status check_row(const char *path, const posemb_forest_row *r, int i, posemb_error *err)
{
    if (!r->label || !r->unit) return posemb_fail(err, POSEMB_EINVAL, "%s: row %d has no label or unit", path, i);
    if ((unsigned)r->verdict >= POSEMB_VERDICT_COUNT)
        return posemb_fail(err, POSEMB_EINVAL, "%s: row %d: verdict %d is not one of the %d", path, i, (int)r->verdict,
                           POSEMB_VERDICT_COUNT);
    if (isinf(r->effect) || isinf(r->lo) || isinf(r->hi) || isinf(r->paper))
        return posemb_fail(err, POSEMB_EINVAL, "%s: row %d (%s): an infinite number", path, i, r->label);
    if (has_interval(r) && r->lo > r->hi)
        return posemb_fail(err, POSEMB_EINVAL, "%s: row %d (%s): interval [%g, %g] has lo > hi", path, i, r->label,
                           r->lo, r->hi);
    return POSEMB_OK;
}

struct plot_forest_geom {
    plot_style st;
    int width, height, n_panels;
    double label_x, plot_x, pw, row_h, legend_y, legend_h;
    const char *unit[POSEMB_FOREST_MAX_PANELS];
    int count[POSEMB_FOREST_MAX_PANELS];
    double head_y[POSEMB_FOREST_MAX_PANELS], rows_y[POSEMB_FOREST_MAX_PANELS]; /* heading top, first row top */
    plot_map xm[POSEMB_FOREST_MAX_PANELS];
    plot_ticks xt[POSEMB_FOREST_MAX_PANELS];
    int *panel, *slot; /* per row: its panel and its place in it */
};

static int panel_of(plot_forest_geom *g, const char *unit)
{
    for (int p = 0; p < g->n_panels; p++)
        if (!strcmp(g->unit[p], unit)) return p;
    if (g->n_panels == POSEMB_FOREST_MAX_PANELS) return -1;
    g->unit[g->n_panels] = unit;
    return g->n_panels++;
}

static posemb_status assign_panels(const char *path, const posemb_forest_row *rows, int n, plot_forest_geom *g,
                                   posemb_error *err)
{
    for (int i = 0; i < n; i++) {
        posemb_status st = check_row(path, &rows[i], i, err);
        if (st) return st;
        int p = panel_of(g, rows[i].unit);
        if (p < 0)
            return posemb_fail(err, POSEMB_EINVAL, "%s: more than %d units (row %d: %s)", path,
                               POSEMB_FOREST_MAX_PANELS, i, rows[i].unit);
        g->panel[i] = p;
        g->slot[i] = g->count[p]++;
    }
    return POSEMB_OK;
}

/* ---- layout -------------------------------------------------------------- */

/* Panel p's x limits: its numbers and 0, with a margin. */
static void panel_limits(const posemb_forest_row *rows, int n, const plot_forest_geom *g, int p, double *lo, double *hi)
{
    double d0 = 0, d1 = 0;
    for (int i = 0; i < n; i++) {
        if (g->panel[i] != p) continue;
        const posemb_forest_row *r = &rows[i];
        double v[4] = {r->effect, r->paper, has_interval(r) ? r->lo : NAN, has_interval(r) ? r->hi : NAN};
        for (int k = 0; k < 4; k++)
            if (!isnan(v[k])) {
                d0 = fmin(d0, v[k]);
                d1 = fmax(d1, v[k]);
            }
    }
    *lo = *hi = NAN;
    posemb_error ignored; /* NAN ends cannot fail */
    plot_axis_limits("forest", "x", lo, hi, d0, d1, &ignored);
    double m = 0.04 * (*hi - *lo); /* room for a marker at an end */
    *lo -= m;
    *hi += m;
}

static double label_width(cairo_t *cr, const plot_style *st, const posemb_forest_row *rows, int n)
{
    plot_font(cr, st->tick, 0);
    double w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, plot_text_width(cr, rows[i].label));
    return ceil(w);
}

/* The legend's entries: the four verdicts, the paper's diamond, the interval. */
#define LEGEND_N (POSEMB_VERDICT_COUNT + 2)
static const char *legend_text(int k)
{
    return k < POSEMB_VERDICT_COUNT ? NAMES[k] : k == POSEMB_VERDICT_COUNT ? "paper's effect" : "95% interval";
}

static double legend_entry_w(cairo_t *cr, const plot_style *st, int k)
{
    return 22 * st->s + plot_text_width(cr, legend_text(k)) + 18 * st->s;
}

/* Lines the legend needs within width w (entries flow left to right). */
static int legend_lines(cairo_t *cr, const plot_style *st, double w)
{
    plot_font(cr, st->tick, 0);
    int lines = 1;
    double x = 0;
    for (int k = 0; k < LEGEND_N; k++) {
        double e = legend_entry_w(cr, st, k);
        if (x > 0 && x + e > w) {
            lines++;
            x = 0;
        }
        x += e;
    }
    return lines;
}

static void layout_panels(cairo_t *cr, const posemb_forest_row *rows, int n, plot_forest_geom *g, double y)
{
    const plot_style *st = &g->st;
    plot_font(cr, st->label, 1);
    double head = round(plot_text_height(cr) + 8 * st->s), foot = ceil(plot_axis_bottom_room(cr, st, NULL));
    for (int p = 0; p < g->n_panels; p++) {
        g->head_y[p] = y;
        g->rows_y[p] = y + head;
        double lo, hi;
        panel_limits(rows, n, g, p, &lo, &hi);
        g->xm[p] = (plot_map){lo, hi, g->plot_x, g->plot_x + g->pw};
        plot_ticks_fit(cr, st, &g->xt[p], lo, hi, 0, &g->xm[p], 0);
        y = g->rows_y[p] + g->count[p] * g->row_h + foot + round(14 * st->s);
    }
    g->height = (int)ceil(y - round(14 * st->s) + st->pad);
}

static void forest_layout(cairo_t *cr, const posemb_forest_row *rows, int n, const posemb_forest_opts *o,
                          plot_forest_geom *g)
{
    g->st = plot_style_at(1);
    const plot_style *st = &g->st;
    g->row_h = ROW_H;
    g->label_x = st->pad;
    g->plot_x = g->label_x + label_width(cr, st, rows, n) + round(16 * st->s);
    g->pw = o->plot_width > 0 ? o->plot_width : PLOT_W;
    double right = 14 * st->s + st->pad;
    g->width = (int)ceil(g->plot_x + g->pw + right);
    plot_font(cr, st->label, 1); /* a unit's heading may run past the label column */
    for (int p = 0; p < g->n_panels; p++)
        g->width = (int)fmax(g->width, ceil(plot_text_width(cr, g->unit[p]) + 2 * st->pad));
    plot_font(cr, st->title, 0);
    if (o->title) g->width = (int)fmax(g->width, ceil(plot_text_width(cr, o->title) + 2 * st->pad));
    g->legend_y = round(st->pad + plot_title_room(cr, st, o->title));
    int lines = legend_lines(cr, st, g->width - 2 * st->pad);
    g->legend_h = round(lines * 1.5 * plot_text_height(cr) + 10 * st->s);
    layout_panels(cr, rows, n, g, g->legend_y + g->legend_h);
}

/* ---- drawing ------------------------------------------------------------- */

static double row_y(const plot_forest_geom *g, int i) { return g->rows_y[g->panel[i]] + g->slot[i] * g->row_h; }

/* The estimate's marker: a shape per verdict, so that the verdict reads without colour too. */
static void estimate_marker(cairo_t *cr, const plot_style *st, posemb_verdict v, double x, double y)
{
    double r = 4.6 * st->s;
    plot_set_rgb(cr, COLOURS[v]);
    cairo_new_path(cr);
    if (v == POSEMB_VERDICT_CONFOUNDED) cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
    else if (v == POSEMB_VERDICT_NOT_REPRODUCED) {
        cairo_move_to(cr, x, y - 1.15 * r);
        cairo_line_to(cr, x + 1.05 * r, y + 0.75 * r);
        cairo_line_to(cr, x - 1.05 * r, y + 0.75 * r);
        cairo_close_path(cr);
    } else cairo_arc(cr, x, y, r, 0, 2 * PLOT_PI);
    if (v != POSEMB_VERDICT_UNTESTABLE) {
        cairo_fill(cr);
        return;
    }
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_fill_preserve(cr);
    plot_set_rgb(cr, COLOURS[v]);
    cairo_set_line_width(cr, 2.0 * st->s);
    cairo_stroke(cr);
}

static void paper_diamond(cairo_t *cr, const plot_style *st, double x, double y)
{
    double r = 5.6 * st->s;
    cairo_new_path(cr);
    cairo_move_to(cr, x, y - r);
    cairo_line_to(cr, x + r, y);
    cairo_line_to(cr, x, y + r);
    cairo_line_to(cr, x - r, y);
    cairo_close_path(cr);
    plot_set_rgb(cr, INK);
    cairo_set_line_width(cr, 1.4 * st->s);
    cairo_stroke(cr);
}

static void interval_line(cairo_t *cr, const plot_style *st, uint32_t rgb, double x0, double x1, double y)
{
    double cap = 4 * st->s;
    plot_set_rgb(cr, rgb);
    cairo_set_line_width(cr, 2.4 * st->s);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_move_to(cr, x0, y);
    cairo_line_to(cr, x1, y);
    cairo_move_to(cr, x0, y - cap);
    cairo_line_to(cr, x0, y + cap);
    cairo_move_to(cr, x1, y - cap);
    cairo_line_to(cr, x1, y + cap);
    cairo_stroke(cr);
}

static void draw_row(cairo_t *cr, const plot_forest_geom *g, const posemb_forest_row *r, int i)
{
    const plot_style *st = &g->st;
    const plot_map *m = &g->xm[g->panel[i]];
    double y = row_y(g, i), cy = y + g->row_h / 2;
    plot_font(cr, st->tick, 0);
    plot_set_rgb(cr, INK);
    plot_text(cr, r->label, g->label_x, cy, 0, 0.5, 0);
    if (!isnan(r->paper)) paper_diamond(cr, st, plot_map_at(m, r->paper), cy);
    if (has_interval(r)) interval_line(cr, st, COLOURS[r->verdict], plot_map_at(m, r->lo), plot_map_at(m, r->hi), cy);
    if (!isnan(r->effect)) {
        estimate_marker(cr, st, r->verdict, plot_map_at(m, r->effect), cy);
        return;
    }
    plot_font(cr, st->small, 0);
    plot_set_rgb(cr, r->verdict == POSEMB_VERDICT_UNTESTABLE ? 0x737373u : COLOURS[r->verdict]);
    plot_text(cr, "no estimate", g->plot_x + 6 * st->s, cy, 0, 0.5, 0);
}

/* Bands behind every other row of panel p, the line at 0, the axis. */
static void draw_panel_frame(cairo_t *cr, const plot_forest_geom *g, int p)
{
    const plot_style *st = &g->st;
    double top = g->rows_y[p], h = g->count[p] * g->row_h;
    plot_set_rgb(cr, BAND_RGB);
    for (int k = 0; k < g->count[p]; k += 2)
        cairo_rectangle(cr, g->label_x - 4 * st->s, top + k * g->row_h, g->plot_x + g->pw - g->label_x + 4 * st->s,
                        g->row_h);
    cairo_fill(cr);
    double x0 = floor(plot_map_at(&g->xm[p], 0)) + 0.5; /* one crisp pixel column */
    plot_set_rgb(cr, ZERO_RGB);
    cairo_set_line_width(cr, 1.0);
    cairo_move_to(cr, x0, top);
    cairo_line_to(cr, x0, top + h);
    cairo_stroke(cr);
    posemb_rect r = {g->plot_x, top, g->pw, h};
    plot_set_rgb(cr, 0x333333u);
    cairo_set_line_width(cr, st->line);
    cairo_move_to(cr, r.x, top + h);
    cairo_line_to(cr, r.x + r.w, top + h);
    cairo_stroke(cr);
    plot_axis_bottom(cr, st, &r, &g->xm[p], &g->xt[p], NULL);
    plot_font(cr, st->label, 1);
    plot_set_rgb(cr, INK);
    plot_text(cr, g->unit[p], g->label_x, g->head_y[p] + 2 * st->s, 0, 0, 0);
}

static void legend_swatch(cairo_t *cr, const plot_style *st, int k, double x, double y)
{
    if (k < POSEMB_VERDICT_COUNT) estimate_marker(cr, st, (posemb_verdict)k, x + 9 * st->s, y);
    else if (k == POSEMB_VERDICT_COUNT) paper_diamond(cr, st, x + 9 * st->s, y);
    else interval_line(cr, st, 0x666666u, x + 1 * st->s, x + 16 * st->s, y);
}

static void draw_legend(cairo_t *cr, const plot_forest_geom *g)
{
    const plot_style *st = &g->st;
    plot_font(cr, st->tick, 0);
    double line = 1.5 * plot_text_height(cr), x = st->pad, y = g->legend_y + line / 2;
    for (int k = 0; k < LEGEND_N; k++) {
        double e = legend_entry_w(cr, st, k);
        if (x > st->pad && x + e > g->width - st->pad) {
            x = st->pad;
            y += line;
        }
        legend_swatch(cr, st, k, x, y);
        plot_font(cr, st->tick, 0);
        plot_set_rgb(cr, INK);
        plot_text(cr, legend_text(k), x + 22 * st->s, y, 0, 0.5, 0);
        x += e;
    }
}

/* ---- the figure ---------------------------------------------------------- */

static void geom_free(plot_forest_geom *g)
{
    if (!g) return;
    free(g->panel);
    free(g->slot);
    free(g);
}

static posemb_status geom_new(const char *path, const posemb_forest_row *rows, int n, const posemb_forest_opts *o,
                              plot_forest_geom **out, posemb_error *err)
{
    *out = NULL;
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "forest: no output path");
    if (!rows || n < 1 || n > POSEMB_FOREST_MAX_ROWS)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d rows (1..%d)", path, n, POSEMB_FOREST_MAX_ROWS);
    if (o->plot_width < 0 || o->plot_width > 4096)
        return posemb_fail(err, POSEMB_EINVAL, "%s: plot_width %d (0..4096)", path, o->plot_width);
    plot_forest_geom *g = calloc(1, sizeof *g);
    cairo_t *mc = plot_measure_context();
    if (g) g->panel = malloc((size_t)n * sizeof *g->panel);
    if (g) g->slot = malloc((size_t)n * sizeof *g->slot);
    posemb_status st = g && mc && g->panel && g->slot ? assign_panels(path, rows, n, g, err)
                                                      : posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    if (!st) forest_layout(mc, rows, n, o, g);
    if (mc) cairo_destroy(mc);
    if (st) geom_free(g);
    else *out = g;
    return st;
}

posemb_status plot_forest_geometry(const posemb_forest_row *rows, int n, const posemb_forest_opts *o, int row,
                                   double *cy, plot_map *xm, posemb_error *err)
{
    posemb_forest_opts opts = o ? *o : (posemb_forest_opts){0};
    plot_forest_geom *g;
    posemb_status st = geom_new("forest", rows, n, &opts, &g, err);
    if (st) return st;
    if (row < 0 || row >= n) st = posemb_fail(err, POSEMB_EINVAL, "forest: row %d of %d", row, n);
    else {
        *cy = row_y(g, row) + g->row_h / 2;
        *xm = g->xm[g->panel[row]];
    }
    geom_free(g);
    return st;
}

posemb_status posemb_plot_forest(const char *path, const posemb_forest_row *rows, int n_rows,
                                 const posemb_forest_opts *o, posemb_error *err)
{
    posemb_forest_opts opts = o ? *o : (posemb_forest_opts){0};
    plot_forest_geom *g;
    posemb_status st = geom_new(path, rows, n_rows, &opts, &g, err);
    if (st) return st;
    plot_canvas c;
    st = plot_canvas_open(&c, path, g->width, g->height, opts.title, err);
    if (!st) {
        plot_title(c.cr, &g->st, opts.title, g->width / 2.0, g->legend_y);
        draw_legend(c.cr, g);
        for (int p = 0; p < g->n_panels; p++) draw_panel_frame(c.cr, g, p);
        for (int i = 0; i < n_rows; i++) draw_row(c.cr, g, &rows[i], i);
        st = plot_canvas_close(&c, err);
    }
    geom_free(g);
    return st;
}
