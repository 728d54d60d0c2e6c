/* The "clock" of sinusoidal PEs: one panel per frequency w with the points
 * (cos w p, sin w p) of positions p on the unit circle, coloured by p. A
 * fast frequency wraps around many times (positions far apart collide), a
 * slow one barely moves (neighbours are indistinguishable): together they
 * show why the sinusoid needs many frequencies. */
#include <math.h>
#include <stdio.h>

#include "plot/plot_impl.h"

#define PANEL 190 /* side of a panel's square, device units */
#define GAP 16    /* between panels */
#define MAX_FREQ 64
#define MAX_POS 1000000
#define MAX_DRAWN 4096 /* positions drawn per panel; beyond, every k-th (they overlap on the circle anyway) */

typedef struct clock_geom {
    plot_style st;
    int ncols, nrows, width, height;
    double top, head; /* first panel row's y; height of a panel's two title lines */
    double title_cx;  /* centre of the figure's title lines */
    posemb_rect grid, bar;
} clock_geom;

/* Columns: near a square grid, preferring the choice with fewer empty panels (8 -> 4 x 2). */
static int grid_columns(int n)
{
    int a = (int)ceil(sqrt((double)n)), b = a + 1;
    int empty_a = (n + a - 1) / a * a - n, empty_b = (n + b - 1) / b * b - n;
    return n > 2 && empty_b < empty_a ? b : a;
}

/* 3 significant digits; outside [1e-3, 1e5) as "1.33x10^-4" with a real
 * times sign and superscripts. */
static void format_value(char *dst, size_t cap, double v)
{
    double a = fabs(v);
    if (a == 0 || (a >= 1e-3 && a < 1e5)) snprintf(dst, cap, a >= 100 ? "%.0f" : "%.3g", v);
    else plot_format_sci(dst, cap, v, 3);
}

static posemb_status check_args(const char *path, const float *freqs, int n_freq, int n_pos, posemb_error *err)
{
    if (!path) return posemb_fail(err, POSEMB_EINVAL, "clock: no output path");
    if (!freqs || n_freq < 1 || n_freq > MAX_FREQ)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d frequencies (1..%d)", path, n_freq, MAX_FREQ);
    if (n_pos < 1 || n_pos > MAX_POS)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d positions (1..%d)", path, n_pos, MAX_POS);
    for (int k = 0; k < n_freq; k++)
        if (!isfinite(freqs[k])) return posemb_fail(err, POSEMB_EINVAL, "%s: frequency %d is not finite", path, k);
    return POSEMB_OK;
}

static double pos_max(int n_pos) { return n_pos > 1 ? n_pos - 1 : 1; }

static void subtitle_text(char *dst, size_t cap, int n_pos)
{
    snprintf(dst, cap, "(cos \xcf\x89p, sin \xcf\x89p) for positions p = 0 \xe2\x80\xa6 %d", n_pos - 1);
}

/* Widest of the title lines. */
static double titles_width(cairo_t *cr, const plot_style *st, const char *title, int n_pos)
{
    char sub[160];
    subtitle_text(sub, sizeof sub, n_pos);
    plot_font(cr, st->small, 0);
    double w = plot_text_width(cr, sub);
    plot_font(cr, st->title, 0);
    return title ? fmax(w, plot_text_width(cr, title)) : w;
}

/* The titles centre on the grid of panels, but stay inside the figure
 * (widened if a long title needs it). */
static void place_titles(cairo_t *cr, const char *title, int n_pos, clock_geom *g)
{
    double tw = titles_width(cr, &g->st, title, n_pos), pad = g->st.pad;
    if (g->width < tw + 2 * pad) g->width = (int)ceil(tw + 2 * pad);
    double cx = g->grid.x + g->grid.w / 2;
    g->title_cx = fmin(fmax(cx, pad + tw / 2), g->width - pad - tw / 2);
}

static void clock_layout(cairo_t *cr, const char *title, int n_freq, int n_pos, clock_geom *g)
{
    g->st = plot_style_at(1.0);
    const plot_style *st = &g->st;
    g->ncols = grid_columns(n_freq);
    g->nrows = (n_freq + g->ncols - 1) / g->ncols;
    plot_font(cr, st->small, 0);
    double subtitle = plot_text_height(cr) + 4;
    g->top = round(st->pad + (title ? plot_title_room(cr, st, title) : 0) + subtitle + 8);
    plot_font(cr, st->tick, 0);
    g->head = round(plot_text_height(cr) + 2 + 0.95 * st->small + 6);
    double gw = g->ncols * PANEL + (g->ncols - 1) * GAP;
    double gh = g->nrows * (g->head + PANEL) + (g->nrows - 1) * GAP;
    g->grid = (posemb_rect){round(st->pad + 8), g->top, gw, gh};
    /* The colour bar spans the circles, not the panel titles above them. */
    posemb_rect span = {g->grid.x, g->top + g->head, gw, gh - g->head};
    g->bar = plot_colorbar_rect(st, &span);
    double room = plot_colorbar_room(cr, st, 0, pos_max(n_pos), span.h, "position");
    g->width = (int)ceil(g->grid.x + gw + room + st->pad);
    g->height = (int)ceil(g->top + gh + st->pad);
    place_titles(cr, title, n_pos, g);
}

static void panel_titles(cairo_t *cr, const plot_style *st, double cx, double y, double w)
{
    char a[64], b[96], line[128];
    format_value(a, sizeof a, w);
    snprintf(line, sizeof line, "\xcf\x89 = %s", a); /* omega */
    plot_font(cr, st->tick, 0);
    cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
    plot_text(cr, line, cx, y, 0.5, 0, 0);
    if (w == 0) {
        snprintf(b, sizeof b, "period \xe2\x88\x9e");
    } else {
        format_value(a, sizeof a, 2 * PLOT_PI / fabs(w));
        snprintf(b, sizeof b, "period %s positions", a);
    }
    double y2 = y + plot_text_height(cr) + 2;
    plot_font(cr, st->small * 0.95, 0);
    cairo_set_source_rgb(cr, 0.42, 0.42, 0.42);
    plot_text(cr, b, cx, y2, 0.5, 0, 0);
}

/* Unit circle and faint axes through its centre (the subtitle names them). */
static void panel_frame(cairo_t *cr, double cx, double cy, double R)
{
    cairo_set_source_rgb(cr, 0.87, 0.87, 0.87);
    cairo_set_line_width(cr, 0.8);
    cairo_move_to(cr, cx - 1.08 * R, cy);
    cairo_line_to(cr, cx + 1.08 * R, cy);
    cairo_move_to(cr, cx, cy - 1.08 * R);
    cairo_line_to(cr, cx, cy + 1.08 * R);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
    cairo_set_line_width(cr, 1.0);
    cairo_arc(cr, cx, cy, R, 0, 2 * PLOT_PI);
    cairo_stroke(cr);
}

static void panel_points(cairo_t *cr, double cx, double cy, double R, double w, int n_pos)
{
    int stride = n_pos > MAX_DRAWN ? (n_pos + MAX_DRAWN - 1) / MAX_DRAWN : 1;
    double r = n_pos <= 64 ? 3.4 : n_pos <= 512 ? 2.6 : 2.0;
    for (int p = 0; p < n_pos; p += stride) {
        plot_set_rgb(cr, plot_cmap_packed(POSEMB_CMAP_VIRIDIS, p / pos_max(n_pos)));
        double a = w * (double)p;
        cairo_new_sub_path(cr);
        cairo_arc(cr, cx + R * cos(a), cy - R * sin(a), r, 0, 2 * PLOT_PI);
        cairo_fill(cr);
    }
    /* Position 0 is always at angle 0: a ring marks where every clock starts. */
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_set_line_width(cr, 1.2);
    cairo_arc(cr, cx + R, cy, r + 2.2, 0, 2 * PLOT_PI);
    cairo_stroke(cr);
}

static void draw_panel(cairo_t *cr, const clock_geom *g, int k, double w, int n_pos)
{
    double x = g->grid.x + (k % g->ncols) * (PANEL + GAP);
    double y = g->grid.y + (k / g->ncols) * (g->head + PANEL + GAP);
    double cx = x + PANEL / 2.0, cy = y + g->head + PANEL / 2.0, R = PANEL / 2.0 - 14;
    panel_titles(cr, &g->st, cx, y, w);
    panel_frame(cr, cx, cy, R);
    panel_points(cr, cx, cy, R, w, n_pos);
}

static void figure_titles(cairo_t *cr, const clock_geom *g, const char *title, int n_pos)
{
    const plot_style *st = &g->st;
    double cx = g->title_cx, y = st->pad;
    if (title) {
        plot_font(cr, st->title, 0);
        cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
        plot_text(cr, title, cx, y, 0.5, 0, 0);
        y += plot_text_height(cr) + 4;
    }
    char sub[160];
    subtitle_text(sub, sizeof sub, n_pos);
    plot_font(cr, st->small, 0);
    cairo_set_source_rgb(cr, 0.42, 0.42, 0.42);
    plot_text(cr, sub, cx, y, 0.5, 0, 0);
}

posemb_status posemb_plot_clock(const char *path, const float *freqs, int n_freq, int n_pos, const char *title,
                                posemb_error *err)
{
    posemb_status st = check_args(path, freqs, n_freq, n_pos, err);
    if (st) return st;
    cairo_t *mc = plot_measure_context();
    if (!mc) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    clock_geom g;
    clock_layout(mc, title, n_freq, n_pos, &g);
    cairo_destroy(mc);
    plot_canvas c;
    st = plot_canvas_open(&c, path, g.width, g.height, title, err);
    if (st) return st;
    figure_titles(c.cr, &g, title, n_pos);
    for (int k = 0; k < n_freq; k++) draw_panel(c.cr, &g, k, freqs[k], n_pos);
    plot_colorbar(c.cr, &g.st, &g.bar, POSEMB_CMAP_VIRIDIS, 0, pos_max(n_pos), "position");
    return plot_canvas_close(&c, err);
}
