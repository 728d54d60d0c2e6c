/* Line and scatter plots: series in distinct looks (styles.c) over a light
 * grid, limits from the data with a small margin, and a legend in the
 * corner that hides the fewest points. The panel grid (grid.c) draws its
 * panels with the same pieces. */
#include <math.h>
#include <stddef.h>

#include "plot/plot_impl.h"

#define DEFAULT_W 640
#define DEFAULT_H 440
#define MARGIN 0.04         /* share of the data range left free on each side */
#define LEGEND_INSIDE_MAX 8 /* longer legends go outside the plot */

posemb_lines_opts posemb_lines_defaults(void)
{
    posemb_lines_opts o = {0};
    o.xmin = o.xmax = o.ymin = o.ymax = NAN;
    return o;
}

static double px(const posemb_series *s, int i) { return s->x ? s->x[i] : i; }
static int finite_point(const posemb_series *s, int i) { return isfinite(px(s, i)) && isfinite(s->y[i]); }

posemb_status plot_series_check(const char *path, const posemb_series *s, int n, int *finite, posemb_error *err)
{
    for (int k = 0; k < n; k++) {
        if (s[k].n < 0 || (s[k].n > 0 && !s[k].y))
            return posemb_fail(err, POSEMB_EINVAL, "%s: series %d has no data", path, k);
        if (s[k].points < 0 || s[k].points > 2)
            return posemb_fail(err, POSEMB_EINVAL, "%s: series %d: points must be 0, 1 or 2", path, k);
        for (int i = 0; i < s[k].n && !*finite; i++) *finite = finite_point(&s[k], i);
    }
    return POSEMB_OK;
}

static posemb_status check_args(const char *path, const posemb_series *s, int n, const posemb_lines_opts *o,
                                posemb_error *err)
{
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "lines: no output path");
    if (!s || n < 1) return posemb_fail(err, POSEMB_EINVAL, "%s: no series to plot", path);
    if (n > POSEMB_PLOT_MAX_SERIES)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d series, more than the %d one figure tells apart", path, n,
                           POSEMB_PLOT_MAX_SERIES);
    if (o->width < 0 || o->height < 0)
        return posemb_fail(err, POSEMB_EINVAL, "%s: negative figure size %d x %d", path, o->width, o->height);
    int finite = 0;
    posemb_status st = plot_series_check(path, s, n, &finite, err);
    if (!st && !finite) return posemb_fail(err, POSEMB_EINVAL, "%s: no finite point to plot", path);
    return st;
}

void plot_series_extent(const posemb_series *s, int n, double *x0, double *x1, double *y0, double *y1)
{
    for (int k = 0; k < n; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!finite_point(&s[k], i)) continue;
            *x0 = fmin(*x0, px(&s[k], i));
            *x1 = fmax(*x1, px(&s[k], i));
            *y0 = fmin(*y0, s[k].y[i]);
            *y1 = fmax(*y1, s[k].y[i]);
        }
}

posemb_status plot_axis_limits(const char *path, const char *axis, double *lo, double *hi, double dlo, double dhi,
                               posemb_error *err)
{
    if (!isfinite(*lo)) *lo = NAN;
    if (!isfinite(*hi)) *hi = NAN;
    if (*lo == *hi) *lo = *hi = NAN; /* a zeroed struct */
    if (*lo > *hi) return posemb_fail(err, POSEMB_EINVAL, "%s: %s limits %g > %g", path, axis, *lo, *hi);
    if (!isfinite(dhi - dlo) || !isfinite(dlo + dhi)) /* the mapping to the page would overflow */
        return posemb_fail(err, POSEMB_EINVAL, "%s: %s values from %g to %g: a range too wide to draw", path, axis, dlo,
                           dhi);
    double span = dhi - dlo;
    if (span == 0) span = dlo != 0 ? fabs(dlo) * 0.2 : 1;
    double c = (dlo + dhi) / 2;
    if (dhi == dlo) {
        dlo = c - span / 2;
        dhi = c + span / 2;
    }
    if (isnan(*lo)) *lo = dlo - MARGIN * span;
    if (isnan(*hi)) *hi = dhi + MARGIN * span;
    if (!(*lo < *hi)) *hi = *lo + span; /* one end given beyond the data */
    if (!isfinite(*hi - *lo))
        return posemb_fail(err, POSEMB_EINVAL, "%s: %s axis from %g to %g: a range too wide to draw", path, axis, *lo,
                           *hi);
    return POSEMB_OK;
}

/* ---- legend -------------------------------------------------------------- */

int plot_legend_entries(const plot_series_set *set)
{
    int k = set->ref && set->ref->label;
    for (int i = 0; i < set->n; i++) k += set->s[i].label != NULL;
    return k;
}

static int legend_wanted(const posemb_lines_opts *o, const plot_series_set *set)
{
    int k = plot_legend_entries(set);
    return o->legend < 0 ? 0 : o->legend > 0 ? k > 0 : k >= 2;
}

static double swatch_w(const plot_style *st) { return 32 * st->s; }

double plot_legend_width(cairo_t *cr, const plot_style *st, const plot_series_set *set)
{
    plot_font(cr, st->tick, 0);
    double w = set->ref && set->ref->label ? plot_text_width(cr, set->ref->label) : 0;
    for (int i = 0; i < set->n; i++)
        if (set->s[i].label) w = fmax(w, plot_text_width(cr, set->s[i].label));
    return 2 * 7 * st->s + swatch_w(st) + 7 * st->s + w;
}

static posemb_rect legend_box(cairo_t *cr, const plot_style *st, const plot_series_set *set)
{
    double w = plot_legend_width(cr, st, set); /* sets the legend's font */
    double row = 1.35 * plot_text_height(cr), pad = 7 * st->s;
    double h = 2 * pad + plot_legend_entries(set) * row - 0.35 * plot_text_height(cr); /* no gap after the last row */
    return (posemb_rect){0, 0, w, h};
}

static int inside(const posemb_rect *b, double x, double y)
{
    return x >= b->x && x <= b->x + b->w && y >= b->y && y <= b->y + b->h;
}

/* Points (and line midpoints) of one series that would fall under the box. */
static long hidden_in(const plot_lines_geom *g, const posemb_series *s, const posemb_rect *b)
{
    long hits = 0;
    for (int i = 0; i < s->n; i++) {
        if (!finite_point(s, i)) continue;
        double x = plot_map_at(&g->xm, px(s, i)), y = plot_map_at(&g->ym, s->y[i]);
        hits += inside(b, x, y);
        if (s->points == 1 || i + 1 >= s->n || !finite_point(s, i + 1)) continue;
        double x2 = plot_map_at(&g->xm, px(s, i + 1)), y2 = plot_map_at(&g->ym, s->y[i + 1]);
        hits += inside(b, (x + x2) / 2, (y + y2) / 2);
    }
    return hits;
}

static long hidden_points(const plot_lines_geom *g, const plot_series_set *set, const posemb_rect *b)
{
    long hits = set->ref ? hidden_in(g, set->ref, b) : 0;
    for (int k = 0; k < set->n; k++) hits += hidden_in(g, &set->s[k], b);
    return hits;
}

/* The place that hides the fewest points, on a 5 x 5 grid of positions
 * inside the plot; the corners first, so that they win ties. */
static void place_legend(const plot_lines_geom *g, const plot_series_set *set, posemb_rect *b)
{
    static const int ORDER[25][2] = {{4, 0}, {0, 0}, {4, 4}, {0, 4}, {2, 0}, {2, 4}, {4, 2}, {0, 2}, {1, 0},
                                     {3, 0}, {1, 4}, {3, 4}, {4, 1}, {4, 3}, {0, 1}, {0, 3}, {1, 1}, {2, 1},
                                     {3, 1}, {1, 2}, {2, 2}, {3, 2}, {1, 3}, {2, 3}, {3, 3}};
    const posemb_rect *r = &g->plot;
    double inset = 8 * g->st.s;
    double free_w = r->w - 2 * inset - b->w, free_h = r->h - 2 * inset - b->h;
    long best = -1;
    posemb_rect pick = *b;
    for (int c = 0; c < 25; c++) {
        posemb_rect t = {round(r->x + inset + free_w * ORDER[c][0] / 4), round(r->y + inset + free_h * ORDER[c][1] / 4),
                         b->w, b->h};
        long h = hidden_points(g, set, &t);
        if (best < 0 || h < best) {
            best = h;
            pick = t;
        }
    }
    *b = pick;
}

static void draw_marker(cairo_t *cr, const plot_style *st, double x, double y)
{
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, 3.0 * st->s, 0, 2 * PLOT_PI);
    cairo_fill(cr);
}

double plot_legend_entry_width(cairo_t *cr, const plot_style *st, const posemb_series *s)
{
    plot_font(cr, st->tick, 0);
    return swatch_w(st) + 7 * st->s + plot_text_width(cr, s->label);
}

void plot_legend_entry(cairo_t *cr, const plot_style *st, const posemb_series *s, int look, double x, double y)
{
    plot_look_apply(cr, st, look);
    if (s->points != 1) {
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + swatch_w(st), y);
        cairo_stroke(cr);
    }
    cairo_set_dash(cr, NULL, 0, 0);
    if (s->points) draw_marker(cr, st, x + swatch_w(st) / 2, y);
    cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
    plot_text(cr, s->label, x + swatch_w(st) + 7 * st->s, y, 0, 0.5, 0);
}

void plot_legend(cairo_t *cr, const plot_lines_geom *g, const plot_series_set *set)
{
    const plot_style *st = &g->st;
    posemb_rect b = legend_box(cr, st, set);
    if (g->legend_outside) {
        b.x = g->plot.x + g->plot.w + st->pad;
        b.y = g->plot.y;
    } else place_legend(g, set, &b);
    cairo_rectangle(cr, b.x + 0.5, b.y + 0.5, b.w, b.h);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    cairo_set_line_width(cr, 0.8 * st->s);
    cairo_stroke(cr);
    plot_font(cr, st->tick, 0);
    double row = 1.35 * plot_text_height(cr), pad = 7 * st->s;
    double y = b.y + pad + plot_text_height(cr) / 2;
    if (set->ref && set->ref->label) {
        plot_legend_entry(cr, st, set->ref, PLOT_REFERENCE, b.x + pad, y);
        y += row;
    }
    for (int k = 0; k < set->n; k++) {
        if (!set->s[k].label) continue;
        plot_legend_entry(cr, st, &set->s[k], plot_set_look(set, k), b.x + pad, y);
        y += row;
    }
}

/* ---- drawing ------------------------------------------------------------- */

static void draw_grid(cairo_t *cr, const plot_lines_geom *g)
{
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_set_line_width(cr, 0.8 * g->st.s);
    const posemb_rect *r = &g->plot;
    for (int i = 0; i < g->xt.n; i++) {
        double x = plot_map_at(&g->xm, g->xt.v[i]);
        cairo_move_to(cr, x, r->y);
        cairo_line_to(cr, x, r->y + r->h);
    }
    for (int i = 0; i < g->yt.n; i++) {
        double y = plot_map_at(&g->ym, g->yt.v[i]);
        cairo_move_to(cr, r->x, y);
        cairo_line_to(cr, r->x + r->w, y);
    }
    cairo_stroke(cr);
}

/* A polyline through the finite points; a non-finite point breaks it. */
static void draw_line(cairo_t *cr, const plot_lines_geom *g, const posemb_series *s)
{
    int pen_down = 0;
    for (int i = 0; i < s->n; i++) {
        if (!finite_point(s, i)) {
            pen_down = 0;
            continue;
        }
        double x = plot_map_at(&g->xm, px(s, i)), y = plot_map_at(&g->ym, s->y[i]);
        if (pen_down) cairo_line_to(cr, x, y);
        else cairo_move_to(cr, x, y);
        pen_down = 1;
    }
    cairo_stroke(cr);
}

static void draw_series(cairo_t *cr, const plot_lines_geom *g, const posemb_series *s, int look)
{
    plot_look_apply(cr, &g->st, look);
    if (s->points != 1) draw_line(cr, g, s);
    cairo_set_dash(cr, NULL, 0, 0);
    if (s->points == 0) return;
    for (int i = 0; i < s->n; i++)
        if (finite_point(s, i)) draw_marker(cr, &g->st, plot_map_at(&g->xm, px(s, i)), plot_map_at(&g->ym, s->y[i]));
}

void plot_lines_panel(cairo_t *cr, const plot_lines_geom *g, const plot_series_set *set)
{
    draw_grid(cr, g);
    cairo_save(cr);
    cairo_rectangle(cr, g->plot.x, g->plot.y, g->plot.w, g->plot.h);
    cairo_clip(cr);
    if (set->ref) draw_series(cr, g, set->ref, PLOT_REFERENCE);
    for (int k = 0; k < set->n; k++) draw_series(cr, g, &set->s[k], plot_set_look(set, k));
    cairo_restore(cr);
    plot_frame(cr, &g->st, &g->plot);
}

/* ---- the figure ---------------------------------------------------------- */

static posemb_status lines_limits(const char *path, const posemb_series *s, int n, const posemb_lines_opts *o,
                                  plot_lines_geom *g, posemb_error *err)
{
    double dx0 = INFINITY, dx1 = -INFINITY, dy0 = INFINITY, dy1 = -INFINITY;
    plot_series_extent(s, n, &dx0, &dx1, &dy0, &dy1);
    g->xlo = o->xmin;
    g->xhi = o->xmax;
    g->ylo = o->ymin;
    g->yhi = o->ymax;
    posemb_status e = plot_axis_limits(path, "x", &g->xlo, &g->xhi, dx0, dx1, err);
    return e ? e : plot_axis_limits(path, "y", &g->ylo, &g->yhi, dy0, dy1, err);
}

static posemb_status lines_layout(cairo_t *cr, const char *path, const plot_series_set *set, const posemb_lines_opts *o,
                                  plot_lines_geom *g, posemb_error *err)
{
    int width = o->width ? o->width : DEFAULT_W, height = o->height ? o->height : DEFAULT_H;
    g->st = plot_style_at(plot_scale(width, height, DEFAULT_W, DEFAULT_H));
    const plot_style *st = &g->st;
    posemb_status e = lines_limits(path, set->s, set->n, o, g, err);
    if (e) return e;
    double top = round(st->pad + plot_title_room(cr, st, o->title));
    double ph = floor(height - top - st->pad - plot_axis_bottom_room(cr, st, o->xlabel));
    g->ym = (plot_map){g->ylo, g->yhi, top + ph, top};
    plot_ticks_fit(cr, st, &g->yt, g->ylo, g->yhi, 0, &g->ym, 1);
    double left = round(st->pad + plot_axis_left_room(cr, st, plot_ticks_width(cr, st, &g->yt), o->ylabel));
    /* Right: room for half of a last x label centred on the edge, or for a
     * legend too long to sit inside the plot without hiding the data. */
    g->legend_outside = legend_wanted(o, set) && plot_legend_entries(set) > LEGEND_INSIDE_MAX;
    double right = g->legend_outside ? plot_legend_width(cr, st, set) + 2 * st->pad : 14 * st->s;
    double pw = floor(width - left - st->pad - right);
    if (pw < 16 || ph < 16)
        return posemb_fail(err, POSEMB_EINVAL, "%s: figure %d x %d is too small for its labels", path, width, height);
    g->plot = (posemb_rect){left, top, pw, ph};
    g->xm = (plot_map){g->xlo, g->xhi, left, left + pw};
    if (o->xlog2) plot_ticks_log2(cr, st, &g->xt, g->xlo, g->xhi, &g->xm);
    else plot_ticks_fit(cr, st, &g->xt, g->xlo, g->xhi, 0, &g->xm, 0);
    return POSEMB_OK;
}

static void lines_draw(cairo_t *cr, const plot_lines_geom *g, const plot_series_set *set, const posemb_lines_opts *o)
{
    plot_lines_panel(cr, g, set);
    plot_axis_bottom(cr, &g->st, &g->plot, &g->xm, &g->xt, o->xlabel);
    plot_axis_left(cr, &g->st, &g->plot, &g->ym, &g->yt, o->ylabel);
    if (legend_wanted(o, set)) plot_legend(cr, g, set);
    plot_title(cr, &g->st, o->title, g->plot.x + g->plot.w / 2, g->plot.y);
}

posemb_status posemb_plot_lines(const char *path, const posemb_series *s, int n_series, const posemb_lines_opts *o,
                                posemb_error *err)
{
    posemb_lines_opts opts = o ? *o : posemb_lines_defaults();
    posemb_status st = check_args(path, s, n_series, &opts, err);
    if (st) return st;
    cairo_t *mc = plot_measure_context();
    if (!mc) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    plot_series_set set = {.s = s, .n = n_series};
    plot_lines_geom g;
    st = lines_layout(mc, path, &set, &opts, &g, err);
    cairo_destroy(mc);
    if (st) return st;
    plot_canvas c;
    st = plot_canvas_open(&c, path, opts.width ? opts.width : DEFAULT_W, opts.height ? opts.height : DEFAULT_H,
                          opts.title, err);
    if (st) return st;
    lines_draw(c.cr, &g, &set, &opts);
    return plot_canvas_close(&c, err);
}
