/* Heatmaps: the matrix as an image of one pixel per cell, scaled with
 * nearest-neighbour filtering into the plot area (sharp cells at any size,
 * and a 2048 x 2048 matrix costs a lookup per cell), square cells where the
 * shape allows, ticks at row/column positions and a colour bar. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "plot/plot_impl.h"

#define DEFAULT_W 640
#define DEFAULT_H 560
#define MAX_CELLS 32767 /* cairo's largest image side */
/* Shapes further from square than 4:1 are stretched rather than drawn as a thin strip. */
#define MAX_ASPECT 4.0
/* Cells at least this many device units wide get a whole number of units each, so all look alike. */
#define UNIFORM_CELL 4.0
/* A default-sized figure is trimmed only of blank bands wider than this share of the space. */
#define MIN_BAND 0.08

typedef struct heat_geom {
    plot_style st;
    int width, height;
    double vmin, vmax;
    posemb_rect plot, bar;
    plot_map xm, ym;
    plot_ticks xt, yt;
} heat_geom;

posemb_heatmap_opts posemb_heatmap_defaults(void)
{
    posemb_heatmap_opts o = {0};
    o.cmap = POSEMB_CMAP_VIRIDIS;
    o.vmin = o.vmax = NAN;
    return o;
}

static posemb_status check_args(const char *path, const float *m, int rows, int cols, const posemb_heatmap_opts *o,
                                posemb_error *err)
{
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "heatmap: no output path");
    if (!m) return posemb_fail(err, POSEMB_EINVAL, "%s: no matrix to plot", path);
    if (rows < 1 || cols < 1 || rows > MAX_CELLS || cols > MAX_CELLS)
        return posemb_fail(err, POSEMB_EINVAL, "%s: matrix size %d x %d out of range (1..%d each)", path, rows, cols,
                           MAX_CELLS);
    if (o->width < 0 || o->height < 0)
        return posemb_fail(err, POSEMB_EINVAL, "%s: negative figure size %d x %d", path, o->width, o->height);
    if (o->cmap != POSEMB_CMAP_VIRIDIS && o->cmap != POSEMB_CMAP_DIVERGING)
        return posemb_fail(err, POSEMB_EINVAL, "%s: unknown colour map %d", path, (int)o->cmap);
    for (int axis = 0; axis < 2; axis++) {
        const char *const *names = axis ? o->ynames : o->xnames;
        for (int i = 0; names && i < (axis ? rows : cols); i++)
            if (!names[i] || strlen(names[i]) >= POSEMB_PLOT_NAME_MAX)
                return posemb_fail(err, POSEMB_EINVAL, "%s: %s name %d is %s", path, axis ? "row" : "column", i,
                                   names[i] ? "32 bytes or longer" : "missing");
    }
    return POSEMB_OK;
}

static void finite_extremes(const float *m, size_t n, double *lo, double *hi)
{
    float a = INFINITY, b = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(m[k])) continue;
        a = m[k] < a ? m[k] : a;
        b = m[k] > b ? m[k] : b;
    }
    *lo = a;
    *hi = b;
}

/* Widest y tick label: the widest row name, or the first or last row's
 * number (integers grow with their digits). */
static double row_label_width(cairo_t *cr, const plot_style *st, const posemb_heatmap_opts *o, int rows)
{
    plot_font(cr, st->tick, 0);
    double w = 0;
    for (int i = 0; o->ynames && i < rows; i++) w = fmax(w, plot_text_width(cr, o->ynames[i]));
    if (o->ynames) return w;
    char a[32], b[32];
    plot_format_number(a, sizeof a, o->y0, 1);
    plot_format_number(b, sizeof b, o->y0 + rows - 1, 1);
    return fmax(plot_text_width(cr, a), plot_text_width(cr, b));
}

/* Plot area of the matrix's shape inside the available box, centred. */
static posemb_rect fit_cells(double left, double top, double aw, double ah, int rows, int cols)
{
    double ratio = fmin(fmax((double)cols / rows, 1 / MAX_ASPECT), MAX_ASPECT);
    double pw = fmin(aw, ah * ratio), ph = pw / ratio;
    pw = pw / cols >= UNIFORM_CELL ? floor(pw / cols) * cols : floor(pw);
    ph = ph / rows >= UNIFORM_CELL ? floor(ph / rows) * rows : floor(ph);
    posemb_rect r = {round(left + (aw - pw) / 2), round(top + (ah - ph) / 2), pw, ph};
    return r;
}

/* A default-sized figure (width or height 0) loses the blank band, if wide,
 * that a matrix far from square leaves, down to the width its title and x
 * label need. */
static void shrink_to_fit(cairo_t *cr, const posemb_heatmap_opts *o, heat_geom *g, double left, double top, double aw,
                          double ah)
{
    posemb_rect *p = &g->plot;
    if (!o->height && p->h < ah * (1 - MIN_BAND)) {
        g->height -= (int)floor(ah - p->h);
        p->y = round(top);
    }
    if (!o->width && p->w < aw * (1 - MIN_BAND)) {
        double need = p->w;
        plot_font(cr, g->st.title, 0);
        if (o->title) need = fmax(need, plot_text_width(cr, o->title));
        plot_font(cr, g->st.label, 0);
        if (o->xlabel) need = fmax(need, plot_text_width(cr, o->xlabel));
        double cut = floor(aw - fmin(aw, need));
        g->width -= (int)cut;
        p->x = round(left + (aw - cut - p->w) / 2);
    }
}

static posemb_status heat_layout(cairo_t *cr, const char *path, const float *m, int rows, int cols,
                                 const posemb_heatmap_opts *o, heat_geom *g, posemb_error *err)
{
    g->width = o->width ? o->width : DEFAULT_W;
    g->height = o->height ? o->height : DEFAULT_H;
    const plot_style *st = &g->st;
    g->st = plot_style_at(plot_scale(g->width, g->height, DEFAULT_W, DEFAULT_H));
    double lo, hi;
    finite_extremes(m, (size_t)rows * (size_t)cols, &lo, &hi);
    g->vmin = o->vmin;
    g->vmax = o->vmax;
    posemb_status s = plot_resolve_range(path, &g->vmin, &g->vmax, lo, hi, o->cmap == POSEMB_CMAP_DIVERGING, err);
    if (s) return s;

    double top = st->pad + plot_title_room(cr, st, o->title);
    double bottom = st->pad + plot_axis_bottom_room(cr, st, o->xlabel);
    double left = st->pad + plot_axis_left_room(cr, st, row_label_width(cr, st, o, rows), o->ylabel);
    double ah = g->height - top - bottom;
    double aw = g->width - left - st->pad - plot_colorbar_room(cr, st, g->vmin, g->vmax, ah, o->cbar_label);
    if (aw < 16 || ah < 16)
        return posemb_fail(err, POSEMB_EINVAL, "%s: figure %d x %d is too small for its labels", path, g->width,
                           g->height);
    g->plot = fit_cells(left, top, aw, ah, rows, cols);
    shrink_to_fit(cr, o, g, left, top, aw, ah);
    g->bar = plot_colorbar_rect(st, &g->plot);
    /* Column k spans the values x0 + k -+ 0.5, so that its tick (x0 + k) sits at its centre. */
    g->xm = (plot_map){o->x0 - 0.5, o->x0 + cols - 0.5, g->plot.x, g->plot.x + g->plot.w};
    g->ym = (plot_map){o->y0 - 0.5, o->y0 + rows - 0.5, g->plot.y, g->plot.y + g->plot.h};
    if (o->xnames) plot_ticks_named(cr, st, &g->xt, o->x0, o->xnames, cols, &g->xm, 0);
    else plot_ticks_fit(cr, st, &g->xt, o->x0, o->x0 + cols - 1, 1, &g->xm, 0);
    if (o->ynames) plot_ticks_named(cr, st, &g->yt, o->y0, o->ynames, rows, &g->ym, 1);
    else plot_ticks_fit(cr, st, &g->yt, o->y0, o->y0 + rows - 1, 1, &g->ym, 1);
    return POSEMB_OK;
}

static void heat_draw(cairo_t *cr, const heat_geom *g, cairo_surface_t *img, const posemb_heatmap_opts *o)
{
    plot_paint_cells(cr, img, &g->plot);
    plot_frame(cr, &g->st, &g->plot);
    plot_axis_bottom(cr, &g->st, &g->plot, &g->xm, &g->xt, o->xlabel);
    plot_axis_left(cr, &g->st, &g->plot, &g->ym, &g->yt, o->ylabel);
    plot_colorbar(cr, &g->st, &g->bar, o->cmap, g->vmin, g->vmax, o->cbar_label);
    plot_title(cr, &g->st, o->title, g->plot.x + g->plot.w / 2, g->plot.y);
}

/* Layout with a measuring context: the same metrics as every canvas (unhinted). */
static posemb_status measured_layout(const char *path, const float *m, int rows, int cols, const posemb_heatmap_opts *o,
                                     heat_geom *g, posemb_error *err)
{
    posemb_status s = check_args(path, m, rows, cols, o, err);
    if (s) return s;
    cairo_t *cr = plot_measure_context();
    if (!cr) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    s = heat_layout(cr, path, m, rows, cols, o, g, err);
    cairo_destroy(cr);
    return s;
}

posemb_status posemb_heatmap_layout(const float *m, int rows, int cols, const posemb_heatmap_opts *o, posemb_rect *plot,
                                    posemb_rect *cbar, posemb_error *err)
{
    posemb_heatmap_opts opts = o ? *o : posemb_heatmap_defaults();
    heat_geom g;
    posemb_status s = measured_layout("heatmap", m, rows, cols, &opts, &g, err);
    if (s) return s;
    if (plot) *plot = g.plot;
    if (cbar) *cbar = g.bar;
    return POSEMB_OK;
}

posemb_status posemb_plot_heatmap(const char *path, const float *m, int rows, int cols, const posemb_heatmap_opts *o,
                                  posemb_error *err)
{
    posemb_heatmap_opts opts = o ? *o : posemb_heatmap_defaults();
    heat_geom g;
    posemb_status s = measured_layout(path, m, rows, cols, &opts, &g, err);
    if (s) return s;
    plot_canvas c;
    s = plot_canvas_open(&c, path, g.width, g.height, opts.title, err);
    if (s) return s;
    cairo_surface_t *img = plot_matrix_image(m, rows, cols, opts.cmap, g.vmin, g.vmax);
    heat_draw(c.cr, &g, img, &opts);
    cairo_surface_destroy(img);
    return plot_canvas_close(&c, err);
}
