/* Line and scatter plots: series in matplotlib's tab10 colours over a light
 * grid, limits from the data with a small margin, and a legend in the
 * corner that hides the fewest points. */
#include <math.h>
#include <stddef.h>

#include "plot/plot_impl.h"

#define DEFAULT_W 640
#define DEFAULT_H 440
#define MARGIN 0.04 /* share of the data range left free on each side */

static const uint32_t TAB10[10] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

typedef struct lines_geom {
    plot_style st;
    int width, height;
    double xlo, xhi, ylo, yhi;
    posemb_rect plot;
    plot_map xm, ym;
    plot_ticks xt, yt;
    int legend_outside; /* the legend right of the plot, not over it */
} lines_geom;

#define LEGEND_INSIDE_MAX 8 /* longer legends go outside the plot */

posemb_lines_opts posemb_lines_defaults(void)
{
    posemb_lines_opts o = {0};
    o.xmin = o.xmax = o.ymin = o.ymax = NAN;
    return o;
}

static double px(const posemb_series *s, int i) { return s->x ? s->x[i] : i; }
static int finite_point(const posemb_series *s, int i) { return isfinite(px(s, i)) && isfinite(s->y[i]); }

static posemb_status check_args(const char *path, const posemb_series *s, int n, const posemb_lines_opts *o,
                                posemb_error *err)
{
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "lines: no output path");
    if (!s || n < 1) return posemb_fail(err, POSEMB_EINVAL, "%s: no series to plot", path);
    if (o->width < 0 || o->height < 0)
        return posemb_fail(err, POSEMB_EINVAL, "%s: negative figure size %d x %d", path, o->width, o->height);
    int finite = 0;
    for (int k = 0; k < n; k++) {
        if (s[k].n < 0 || (s[k].n > 0 && !s[k].y))
            return posemb_fail(err, POSEMB_EINVAL, "%s: series %d has no data", path, k);
        if (s[k].points < 0 || s[k].points > 2)
            return posemb_fail(err, POSEMB_EINVAL, "%s: series %d: points must be 0, 1 or 2", path, k);
        for (int i = 0; i < s[k].n && !finite; i++) finite = finite_point(&s[k], i);
    }
    if (!finite) return posemb_fail(err, POSEMB_EINVAL, "%s: no finite point to plot", path);
    return POSEMB_OK;
}

static void data_extent(const posemb_series *s, int n, double *x0, double *x1, double *y0, double *y1)
{
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!finite_point(&s[k], i)) continue;
            *x0 = fmin(*x0, px(&s[k], i));
            *x1 = fmax(*x1, px(&s[k], i));
            *y0 = fmin(*y0, s[k].y[i]);
            *y1 = fmax(*y1, s[k].y[i]);
        }
}

/* One axis's limits: given ends kept, the others from the data plus a margin. */
static posemb_status axis_limits(const char *path, const char *axis, double *lo, double *hi, double dlo, double dhi,
                                 posemb_error *err)
{
    if (!isfinite(*lo)) *lo = NAN;
    if (!isfinite(*hi)) *hi = NAN;
    if (*lo == *hi) *lo = *hi = NAN; /* a zeroed struct */
    if (*lo > *hi) return posemb_fail(err, POSEMB_EINVAL, "%s: %s limits %g > %g", path, axis, *lo, *hi);
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
    return POSEMB_OK;
}

/* ---- legend -------------------------------------------------------------- */

static int labelled(const posemb_series *s, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += s[i].label != NULL;
    return k;
}

static int legend_wanted(const posemb_lines_opts *o, const posemb_series *s, int n)
{
    int k = labelled(s, n);
    return o->legend < 0 ? 0 : o->legend > 0 ? k > 0 : k >= 2;
}

static double swatch_w(const plot_style *st) { return 26 * st->s; }

static posemb_rect legend_box(cairo_t *cr, const lines_geom *g, const posemb_series *s, int n)
{
    const plot_style *st = &g->st;
    plot_font(cr, st->tick, 0);
    double w = 0;
    for (int i = 0; i < n; i++)
        if (s[i].label) w = fmax(w, plot_text_width(cr, s[i].label));
    double row = 1.35 * plot_text_height(cr), pad = 7 * st->s;
    double h = 2 * pad + labelled(s, n) * row - 0.35 * plot_text_height(cr); /* no gap after the last row */
    posemb_rect b = {0, 0, 2 * pad + swatch_w(st) + 7 * st->s + w, h};
    return b;
}

static posemb_status lines_layout(cairo_t *cr, const char *path, const posemb_series *s, int n,
                                  const posemb_lines_opts *o, lines_geom *g, posemb_error *err)
{
    g->width = o->width ? o->width : DEFAULT_W;
    g->height = o->height ? o->height : DEFAULT_H;
    g->st = plot_style_at(plot_scale(g->width, g->height, DEFAULT_W, DEFAULT_H));
    const plot_style *st = &g->st;
    double dx0, dx1, dy0, dy1;
    data_extent(s, n, &dx0, &dx1, &dy0, &dy1);
    g->xlo = o->xmin;
    g->xhi = o->xmax;
    g->ylo = o->ymin;
    g->yhi = o->ymax;
    posemb_status e = axis_limits(path, "x", &g->xlo, &g->xhi, dx0, dx1, err);
    if (!e) e = axis_limits(path, "y", &g->ylo, &g->yhi, dy0, dy1, err);
    if (e) return e;

    double top = round(st->pad + plot_title_room(cr, st, o->title));
    double ph = floor(g->height - top - st->pad - plot_axis_bottom_room(cr, st, o->xlabel));
    g->ym = (plot_map){g->ylo, g->yhi, top + ph, top};
    plot_ticks_fit(cr, st, &g->yt, g->ylo, g->yhi, 0, &g->ym, 1);
    double left = round(st->pad + plot_axis_left_room(cr, st, plot_ticks_width(cr, st, &g->yt), o->ylabel));
    /* Right: room for half of a last x label centred on the edge, or for a
     * legend too long to sit inside the plot without hiding the data. */
    g->legend_outside = legend_wanted(o, s, n) && labelled(s, n) > LEGEND_INSIDE_MAX;
    double right = g->legend_outside ? legend_box(cr, g, s, n).w + 2 * st->pad : 14 * st->s;
    double pw = floor(g->width - left - st->pad - right);
    if (pw < 16 || ph < 16)
        return posemb_fail(err, POSEMB_EINVAL, "%s: figure %d x %d is too small for its labels", path, g->width,
                           g->height);
    g->plot = (posemb_rect){left, top, pw, ph};
    g->xm = (plot_map){g->xlo, g->xhi, left, left + pw};
    if (o->xlog2) plot_ticks_log2(cr, st, &g->xt, g->xlo, g->xhi, &g->xm);
    else plot_ticks_fit(cr, st, &g->xt, g->xlo, g->xhi, 0, &g->xm, 0);
    return POSEMB_OK;
}

static void draw_grid(cairo_t *cr, const lines_geom *g)
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

static void draw_marker(cairo_t *cr, const plot_style *st, double x, double y)
{
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, 3.0 * st->s, 0, 2 * PLOT_PI);
    cairo_fill(cr);
}

/* A polyline through the finite points; a non-finite point breaks it. */
static void draw_line(cairo_t *cr, const lines_geom *g, const posemb_series *s)
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
    cairo_set_line_width(cr, 1.8 * g->st.s);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_stroke(cr);
}

/* Series k's colour (tab10, cycling) and, from the eleventh on, a dash so
 * that series sharing a colour stay apart. */
static void series_style(cairo_t *cr, const plot_style *st, int k)
{
    plot_set_rgb(cr, TAB10[k % 10]);
    double dash[2] = {6 * st->s, 3 * st->s};
    cairo_set_dash(cr, dash, (k / 10) % 2 ? 2 : 0, 0);
}

static void draw_series(cairo_t *cr, const lines_geom *g, const posemb_series *s, int k)
{
    series_style(cr, &g->st, k);
    if (s->points != 1) draw_line(cr, g, s);
    if (s->points == 0) return;
    for (int i = 0; i < s->n; i++)
        if (finite_point(s, i)) draw_marker(cr, &g->st, plot_map_at(&g->xm, px(s, i)), plot_map_at(&g->ym, s->y[i]));
    cairo_set_dash(cr, NULL, 0, 0);
}

/* Points (and line midpoints) of the data that would fall under the box. */
static long hidden_points(const lines_geom *g, const posemb_series *s, int n, const posemb_rect *b)
{
    long hits = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!finite_point(&s[k], i)) continue;
            double x = plot_map_at(&g->xm, px(&s[k], i)), y = plot_map_at(&g->ym, s[k].y[i]);
            hits += x >= b->x && x <= b->x + b->w && y >= b->y && y <= b->y + b->h;
            if (s[k].points == 1 || i + 1 >= s[k].n || !finite_point(&s[k], i + 1)) continue;
            double x2 = plot_map_at(&g->xm, px(&s[k], i + 1)), y2 = plot_map_at(&g->ym, s[k].y[i + 1]);
            double mx = (x + x2) / 2, my = (y + y2) / 2;
            hits += mx >= b->x && mx <= b->x + b->w && my >= b->y && my <= b->y + b->h;
        }
    return hits;
}

/* The place that hides the fewest points, on a 5 x 5 grid of positions
 * inside the plot; the corners first, so that they win ties. */
static void place_legend(const lines_geom *g, const posemb_series *s, int n, posemb_rect *b)
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
        long h = hidden_points(g, s, n, &t);
        if (best < 0 || h < best) {
            best = h;
            pick = t;
        }
    }
    *b = pick;
}

static void draw_legend(cairo_t *cr, const lines_geom *g, const posemb_series *s, int n)
{
    const plot_style *st = &g->st;
    posemb_rect b = legend_box(cr, g, s, n);
    if (g->legend_outside) {
        b.x = g->plot.x + g->plot.w + st->pad;
        b.y = g->plot.y;
    } else place_legend(g, s, n, &b);
    cairo_rectangle(cr, b.x + 0.5, b.y + 0.5, b.w, b.h);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    cairo_set_line_width(cr, 0.8 * st->s);
    cairo_stroke(cr);
    plot_font(cr, st->tick, 0);
    double row = 1.35 * plot_text_height(cr), pad = 7 * st->s;
    double y = b.y + pad + plot_text_height(cr) / 2;
    for (int k = 0; k < n; k++) {
        if (!s[k].label) continue;
        double x = b.x + pad;
        series_style(cr, st, k);
        if (s[k].points != 1) {
            cairo_move_to(cr, x, y);
            cairo_line_to(cr, x + swatch_w(st), y);
            cairo_set_line_width(cr, 1.8 * st->s);
            cairo_stroke(cr);
        }
        cairo_set_dash(cr, NULL, 0, 0);
        if (s[k].points) draw_marker(cr, st, x + swatch_w(st) / 2, y);
        cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
        plot_text(cr, s[k].label, x + swatch_w(st) + 7 * st->s, y, 0, 0.5, 0);
        y += row;
    }
}

/* ---- the figure ---------------------------------------------------------- */

static void lines_draw(cairo_t *cr, const lines_geom *g, const posemb_series *s, int n, const posemb_lines_opts *o)
{
    draw_grid(cr, g);
    cairo_save(cr);
    cairo_rectangle(cr, g->plot.x, g->plot.y, g->plot.w, g->plot.h);
    cairo_clip(cr);
    for (int k = 0; k < n; k++) draw_series(cr, g, &s[k], k);
    cairo_restore(cr);
    plot_frame(cr, &g->st, &g->plot);
    plot_axis_bottom(cr, &g->st, &g->plot, &g->xm, &g->xt, o->xlabel);
    plot_axis_left(cr, &g->st, &g->plot, &g->ym, &g->yt, o->ylabel);
    if (legend_wanted(o, s, n)) draw_legend(cr, g, s, n);
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
    lines_geom g;
    st = lines_layout(mc, path, s, n_series, &opts, &g, err);
    cairo_destroy(mc);
    if (st) return st;
    plot_canvas c;
    st = plot_canvas_open(&c, path, g.width, g.height, opts.title, err);
    if (st) return st;
    lines_draw(c.cr, &g, s, n_series, &opts);
    return plot_canvas_close(&c, err);
}
