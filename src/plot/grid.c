/* Small multiples: line plots in a grid of panels that share their axes
 * (the y axis only, with free_x, for panels over different spans), so that
 * a figure of many series reads as a few groups, each compared with the
 * same reference. Each panel is drawn as posemb_plot_lines draws
 * its plot (lines.c); the axes' labels are the figure's. */
#include <math.h>
#include <string.h>

#include "plot/plot_impl.h"

#define MAX_PANELS 24
#define PANEL_W 330 /* a panel's plot area at the default size */
#define PANEL_H 230

typedef struct grid_geom {
    plot_style st;
    int width, height, cols, rows;
    double xlo, xhi, ylo, yhi;
    double top, left;      /* the first panel's title top, its plot area's left */
    double pw, ph;         /* a panel's plot area */
    double head, foot;     /* a panel's title above its plot area (without its legend), its x tick labels below */
    double hgap, vgap;     /* between panels */
    double xlabel_room;    /* the figure's x label under the last row */
    double legend_line;    /* a legend line's height */
    int lines[MAX_PANELS]; /* per row of panels: the lines of its longest legend */
    int looks[POSEMB_PLOT_MAX_SERIES]; /* every series' look, the panels' series one after the other */
    plot_ticks xt, yt;
    /* With free_x, each panel's own x limits and ticks, within the shared xlo, xhi (which panels draw otherwise). */
    int free_x;
    double pxlo[MAX_PANELS], pxhi[MAX_PANELS];
    plot_ticks pxt[MAX_PANELS];
} grid_geom;

posemb_grid_opts posemb_grid_defaults(void)
{
    posemb_grid_opts o = {0};
    o.xmin = o.xmax = o.ymin = o.ymax = NAN;
    return o;
}

static posemb_status check_args(const char *path, const posemb_panel *p, int n, const posemb_grid_opts *o,
                                posemb_error *err)
{
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "grid: no output path");
    if (!p || n < 1 || n > MAX_PANELS)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d panels (1..%d)", path, n, MAX_PANELS);
    if (o->width < 0 || o->height < 0 || o->cols < 0)
        return posemb_fail(err, POSEMB_EINVAL, "%s: negative size %d x %d or columns %d", path, o->width, o->height,
                           o->cols);
    int total = 0, finite = 0;
    posemb_status st = o->reference ? plot_series_check(path, o->reference, 1, &finite, err) : POSEMB_OK;
    for (int k = 0; !st && k < n; k++) {
        if (p[k].n_series < 0 || (p[k].n_series > 0 && !p[k].series))
            return posemb_fail(err, POSEMB_EINVAL, "%s: panel %d has no series", path, k);
        total += p[k].n_series;
        st = plot_series_check(path, p[k].series, p[k].n_series, &finite, err);
    }
    if (st) return st;
    if (total > POSEMB_PLOT_MAX_SERIES)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d series, more than the %d one figure tells apart", path, total,
                           POSEMB_PLOT_MAX_SERIES);
    if (!finite) return posemb_fail(err, POSEMB_EINVAL, "%s: no finite point to plot", path);
    return POSEMB_OK;
}

/* Columns: all panels in one row up to 3, then rows of 2 (4 panels) or 3. */
static int grid_columns(int n, int asked)
{
    if (asked) return asked < n ? asked : n;
    return n <= 3 ? n : n == 4 ? 2 : 3;
}

/* Panel k's own x limits: from its series (the reference's where it has no finite point), cut to the shared
 * limits so that given ends bound every panel; a panel with nothing inside them takes the shared limits. */
static posemb_status panel_x_limits(const char *path, const posemb_panel *p, int k, const posemb_grid_opts *o,
                                    grid_geom *g, posemb_error *err)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    plot_series_extent(p[k].series, p[k].n_series, &x0, &x1, &y0, &y1);
    if (!(x0 <= x1) && o->reference) plot_series_extent(o->reference, 1, &x0, &x1, &y0, &y1);
    x0 = fmax(x0, g->xlo);
    x1 = fmin(x1, g->xhi);
    g->pxlo[k] = g->xlo;
    g->pxhi[k] = g->xhi;
    if (!(x0 <= x1)) return POSEMB_OK;
    g->pxlo[k] = o->xmin;
    g->pxhi[k] = o->xmax;
    return plot_axis_limits(path, "x", &g->pxlo[k], &g->pxhi[k], x0, x1, err);
}

static posemb_status grid_limits(const char *path, const posemb_panel *p, int n, const posemb_grid_opts *o,
                                 grid_geom *g, posemb_error *err)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    if (o->reference) plot_series_extent(o->reference, 1, &x0, &x1, &y0, &y1);
    for (int k = 0; k < n; k++) plot_series_extent(p[k].series, p[k].n_series, &x0, &x1, &y0, &y1);
    g->xlo = o->xmin;
    g->xhi = o->xmax;
    g->ylo = o->ymin;
    g->yhi = o->ymax;
    g->free_x = o->free_x;
    posemb_status e = plot_axis_limits(path, "x", &g->xlo, &g->xhi, x0, x1, err);
    for (int k = 0; !e && g->free_x && k < n; k++) e = panel_x_limits(path, p, k, o, g, err);
    return e ? e : plot_axis_limits(path, "y", &g->ylo, &g->yhi, y0, y1, err);
}

static double legend_line(cairo_t *cr, const plot_style *st)
{
    plot_font(cr, st->tick, 0);
    return round(1.3 * plot_text_height(cr));
}

/* Measures (draw 0) or draws a panel's legend: its entries flow left to
 * right in lines of width w from (x, y). Returns the lines it takes. A
 * legend above the panel hides none of its data, as one inside might. */
static int legend_flow(cairo_t *cr, const plot_style *st, const plot_series_set *set, double x, double y, double w,
                       int draw)
{
    double line = legend_line(cr, st), at = 0;
    int lines = 0;
    for (int k = -1; k < set->n; k++) {
        const posemb_series *s = k < 0 ? set->ref : &set->s[k];
        if (!s || !s->label) continue;
        double e = plot_legend_entry_width(cr, st, s);
        if (!lines || (at > 0 && at + e > w)) {
            lines++;
            at = 0;
        }
        if (draw)
            plot_legend_entry(cr, st, s, k < 0 ? PLOT_REFERENCE : plot_set_look(set, k), x + at,
                              y + (lines - 0.5) * line);
        at += e + 14 * st->s;
    }
    return lines;
}

static plot_series_set panel_set(const posemb_panel *p, const int *looks, const posemb_series *ref)
{
    return (plot_series_set){.s = p->series, .n = p->n_series, .looks = looks, .ref = ref};
}

/* Each series' look in figure order: the next unused one, or with by_label
 * the look of the first series of the figure with the same label. */
static void assign_looks(const posemb_panel *p, int n, int by_label, int *looks)
{
    const posemb_series *first[POSEMB_PLOT_MAX_SERIES];
    int at = 0, used = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < p[k].n_series; i++, at++) {
            const posemb_series *s = &p[k].series[i];
            int j = 0;
            while (by_label && s->label && j < used && (!first[j]->label || strcmp(first[j]->label, s->label))) j++;
            if (!by_label || !s->label || j == used) first[j = used++] = s;
            looks[at] = j;
        }
}

/* Per row of panels, the lines its longest legend takes at the panels' width; 1 if any row changed. */
static int legend_lines(cairo_t *cr, const posemb_panel *p, int n, const posemb_series *ref, grid_geom *g)
{
    int most[MAX_PANELS] = {0}, changed = 0;
    for (int k = 0, at = 0; k < n; at += p[k].n_series, k++) {
        plot_series_set set = panel_set(&p[k], g->looks + at, ref);
        int lines = legend_flow(cr, &g->st, &set, 0, 0, g->pw, 0), r = k / g->cols;
        most[r] = lines > most[r] ? lines : most[r];
    }
    for (int r = 0; r < g->rows; r++) {
        changed |= most[r] > g->lines[r];
        g->lines[r] = most[r] > g->lines[r] ? most[r] : g->lines[r];
    }
    return changed;
}

/* Row r's head: its panels' titles and legends. */
static double row_head(const grid_geom *g, int r)
{
    return g->head + (g->lines[r] ? g->lines[r] * g->legend_line + round(4 * g->st.s) : 0);
}

/* The top of row r's heads. */
static double row_top(const grid_geom *g, int r)
{
    double y = g->top;
    for (int i = 0; i < r; i++) y += row_head(g, i) + g->ph + g->foot + g->vgap;
    return y;
}

/* Heights of the pieces around the plot areas, at the style's scale. */
static void grid_bands(cairo_t *cr, const char *title, const char *xlabel, grid_geom *g)
{
    const plot_style *st = &g->st;
    plot_font(cr, st->label, 0);
    g->head = round(plot_text_height(cr) + 6 * st->s);
    g->legend_line = legend_line(cr, st);
    g->foot = ceil(plot_axis_bottom_room(cr, st, NULL));
    g->xlabel_room = ceil(plot_axis_bottom_room(cr, st, xlabel) - plot_axis_bottom_room(cr, st, NULL));
    g->top = round(st->pad + plot_title_room(cr, st, title));
    g->hgap = round(18 * st->s);
    g->vgap = round(20 * st->s);
}

/* x ticks over [lo, hi] at the panels' width. */
static void x_ticks(cairo_t *cr, const posemb_grid_opts *o, const grid_geom *g, plot_ticks *t, double lo, double hi)
{
    plot_map xm = {lo, hi, g->left, g->left + g->pw};
    if (o->xlog2) plot_ticks_log2(cr, &g->st, t, lo, hi, &xm);
    else plot_ticks_fit(cr, &g->st, t, lo, hi, 0, &xm, 0);
}

/* The plot areas' size: from the figure's size when given, else the default panel. */
static void grid_sizes(cairo_t *cr, const posemb_grid_opts *o, grid_geom *g)
{
    const plot_style *st = &g->st;
    double bands_h = g->rows * g->foot + (g->rows - 1) * g->vgap;
    for (int r = 0; r < g->rows; r++) bands_h += row_head(g, r);
    g->ph =
        o->height ? floor((o->height - g->top - bands_h - g->xlabel_room - st->pad) / g->rows) : round(PANEL_H * st->s);
    plot_map ym = {g->ylo, g->yhi, g->ph, 0};
    plot_ticks_fit(cr, st, &g->yt, g->ylo, g->yhi, 0, &ym, 1);
    g->left = round(st->pad + plot_axis_left_room(cr, st, plot_ticks_width(cr, st, &g->yt), o->ylabel));
    double right = 14 * st->s + st->pad, gaps = (g->cols - 1) * g->hgap;
    g->pw = o->width ? floor((o->width - g->left - right - gaps) / g->cols) : round(PANEL_W * st->s);
    g->width = o->width ? o->width : (int)ceil(g->left + g->cols * g->pw + gaps + right);
    g->height = o->height ? o->height : (int)ceil(g->top + g->rows * g->ph + bands_h + g->xlabel_room + st->pad);
    x_ticks(cr, o, g, &g->xt, g->xlo, g->xhi);
}

/* A given size scales the fonts as posemb_plot_lines would for a plot of
 * one panel's share of it (a panel and its axes: about 420 x 310). */
static double grid_scale(const posemb_grid_opts *o, int cols, int rows)
{
    double sw = o->width ? (double)o->width / (cols * (PANEL_W + 90)) : INFINITY;
    double sh = o->height ? (double)o->height / (rows * (PANEL_H + 80)) : INFINITY;
    double s = fmin(sw, sh);
    return isinf(s) ? 1 : fmin(fmax(s, 0.4), 20);
}

static posemb_status grid_layout(cairo_t *cr, const char *path, const posemb_panel *p, int n, const posemb_grid_opts *o,
                                 grid_geom *g, posemb_error *err)
{
    g->cols = grid_columns(n, o->cols);
    g->rows = (n + g->cols - 1) / g->cols;
    g->st = plot_style_at(grid_scale(o, g->cols, g->rows));
    assign_looks(p, n, o->looks_by_label, g->looks);
    posemb_status e = grid_limits(path, p, n, o, g, err);
    if (e) return e;
    /* The legends' lines depend on the panels' width, which the heads' height barely moves: settle in a few rounds. */
    memset(g->lines, 0, sizeof g->lines);
    for (int round = 0; round < 3; round++) {
        grid_bands(cr, o->title, o->xlabel, g);
        grid_sizes(cr, o, g);
        if (!legend_lines(cr, p, n, o->reference, g)) break;
    }
    if (g->pw < 40 || g->ph < 40)
        return posemb_fail(err, POSEMB_EINVAL, "%s: figure %d x %d is too small for %d panels", path, g->width,
                           g->height, n);
    for (int k = 0; g->free_x && k < n; k++) x_ticks(cr, o, g, &g->pxt[k], g->pxlo[k], g->pxhi[k]);
    return POSEMB_OK;
}

/* Panel k's plot area, maps and ticks as one line plot's. */
static plot_lines_geom panel_geom(const grid_geom *g, int k)
{
    double xlo = g->free_x ? g->pxlo[k] : g->xlo, xhi = g->free_x ? g->pxhi[k] : g->xhi;
    plot_lines_geom pg = {.st = g->st, .xlo = xlo, .xhi = xhi, .ylo = g->ylo, .yhi = g->yhi};
    double x = g->left + (k % g->cols) * (g->pw + g->hgap);
    double y = row_top(g, k / g->cols) + row_head(g, k / g->cols);
    pg.plot = (posemb_rect){x, y, g->pw, g->ph};
    pg.xm = (plot_map){xlo, xhi, x, x + g->pw};
    pg.ym = (plot_map){g->ylo, g->yhi, y + g->ph, y};
    pg.xt = g->free_x ? g->pxt[k] : g->xt;
    pg.yt = g->yt;
    return pg;
}

static void draw_panel(cairo_t *cr, const grid_geom *g, const posemb_panel *p, int k, int at, const posemb_series *ref)
{
    plot_lines_geom pg = panel_geom(g, k);
    plot_series_set set = panel_set(p, g->looks + at, ref);
    plot_lines_panel(cr, &pg, &set);
    plot_axis_bottom(cr, &g->st, &pg.plot, &pg.xm, &pg.xt, NULL);
    if (k % g->cols) /* inner panels: tick marks without labels; the left column names them */
        for (int i = 0; i < pg.yt.n; i++) pg.yt.label[i][0] = '\0';
    plot_axis_left(cr, &g->st, &pg.plot, &pg.ym, &pg.yt, NULL);
    double y = pg.plot.y - row_head(g, k / g->cols);
    if (p->title) {
        plot_font(cr, g->st.label, 0);
        cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
        plot_text(cr, p->title, pg.plot.x + pg.plot.w / 2, y, 0.5, 0, 0);
    }
    plot_font(cr, g->st.label, 0);
    y += plot_text_height(cr) + 4 * g->st.s;
    legend_flow(cr, &g->st, &set, pg.plot.x, y, pg.plot.w, 1);
}

/* The figure's title and axis labels, centred on the whole grid. */
static void draw_labels(cairo_t *cr, const grid_geom *g, const posemb_grid_opts *o)
{
    double gw = g->cols * g->pw + (g->cols - 1) * g->hgap;
    double last = row_top(g, g->rows - 1) + row_head(g, g->rows - 1) + g->ph;
    plot_ticks none = {0};
    plot_map m = {0, 1, 0, 1};
    posemb_rect across = {g->left, g->top, gw, last - g->top};
    plot_axis_bottom(cr, &g->st, &across, &m, &none, o->xlabel);
    /* The y label sits left of the tick labels, as plot_axis_left would put it. */
    posemb_rect down = {g->left - plot_ticks_width(cr, &g->st, &g->yt), g->top, gw, last - g->top};
    plot_axis_left(cr, &g->st, &down, &m, &none, o->ylabel);
    plot_title(cr, &g->st, o->title, g->left + gw / 2, g->top);
}

posemb_status posemb_plot_lines_grid(const char *path, const posemb_panel *panels, int n_panels,
                                     const posemb_grid_opts *o, posemb_error *err)
{
    posemb_grid_opts opts = o ? *o : posemb_grid_defaults();
    posemb_status st = check_args(path, panels, n_panels, &opts, err);
    if (st) return st;
    cairo_t *mc = plot_measure_context();
    if (!mc) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    grid_geom g;
    st = grid_layout(mc, path, panels, n_panels, &opts, &g, err);
    cairo_destroy(mc);
    if (st) return st;
    plot_canvas c;
    st = plot_canvas_open(&c, path, g.width, g.height, opts.title, err);
    if (st) return st;
    for (int k = 0, at = 0; k < n_panels; at += panels[k].n_series, k++)
        draw_panel(c.cr, &g, &panels[k], k, at, opts.reference);
    draw_labels(c.cr, &g, &opts);
    return plot_canvas_close(&c, err);
}
