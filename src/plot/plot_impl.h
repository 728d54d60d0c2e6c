/* Internals shared by the figure files: colour lookup, ticks, text, axes,
 * the colour bar and the output surface. Sizes are in device units (pixels
 * for PNG, points for SVG/PDF), origin at the top left. */
#ifndef POSEMB_PLOT_IMPL_H
#define POSEMB_PLOT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cairo.h>

#include "core/fileio.h"
#include "plot/plot.h"

/* Strict C11 has no M_PI. */
#define PLOT_PI 3.14159265358979323846

/* s to f with &, <, > and " escaped: text for SVG and HTML (surface.c). */
void plot_write_escaped(FILE *f, const char *s);

/* ---- colour maps (colormap.c) ------------------------------------------- */

#define PLOT_LUT 256

/* Colour of t as 0x00RRGGBB, cairo's RGB24 pixel layout. */
uint32_t plot_cmap_packed(posemb_cmap cmap, double t);
void plot_cmap_lut(posemb_cmap cmap, uint32_t lut[PLOT_LUT]);
/* A cols x rows RGB24 image, one pixel per cell, coloured over [vmin, vmax]
 * (vmin < vmax); check cairo_surface_status (out of memory). */
cairo_surface_t *plot_matrix_image(const float *m, int rows, int cols, posemb_cmap cmap, double vmin, double vmax);

/* ---- ticks (ticks.c) ----------------------------------------------------- */

#define PLOT_MAX_TICKS 24

typedef struct plot_ticks {
    int n;
    double step;
    double v[PLOT_MAX_TICKS];
    char label[PLOT_MAX_TICKS][POSEMB_PLOT_NAME_MAX]; /* UTF-8; negative numbers with a real minus sign */
} plot_ticks;

/* The multiples of the smallest step in {1, 2, 5} x 10^k that leaves at most
 * max_n of them in [lo, hi] (integer: steps of at least 1), with labels that
 * show just the digits the step needs. */
void plot_ticks_make(plot_ticks *t, double lo, double hi, int max_n, int integer);
/* One number formatted like a tick label with the given step's precision. */
void plot_format_number(char *dst, size_t cap, double v, double step);
/* 2^e as a number where it takes at most 6 characters (0.03125 .. 524288), else as "2" with e in superscript. */
void plot_format_pow2(char *dst, size_t cap, int e);
/* v as "m×10^e" with digits significant digits in m (superscript exponent). */
void plot_format_sci(char *dst, size_t cap, double v, int digits);

/* ---- style and text (text.c) --------------------------------------------- */

/* Typographic sizes for a figure drawn at scale s (1: the default size). */
typedef struct plot_style {
    double s;
    double title, label, tick, small; /* font sizes */
    double tick_len, line, pad;       /* tick length, frame line width, outer padding */
} plot_style;

plot_style plot_style_at(double s);
void plot_font(cairo_t *cr, double size, int bold);
double plot_text_width(cairo_t *cr, const char *text);
/* Height of a line of the current font (ascent + descent). */
double plot_text_height(cairo_t *cr);
/* Draws text anchored at (x, y): ax 0/0.5/1 = left/centre/right of the
 * text, ay 0/0.5/1 = top/middle/bottom of its line; then rotated by angle
 * (radians, counter-clockwise) around the anchor. */
void plot_text(cairo_t *cr, const char *text, double x, double y, double ax, double ay, double angle);
void plot_set_rgb(cairo_t *cr, uint32_t rgb);

/* ---- axes (axes.c) ------------------------------------------------------- */

/* Linear map from data value v0..v1 to device coordinate p0..p1. */
typedef struct plot_map {
    double v0, v1, p0, p1;
} plot_map;

double plot_map_at(const plot_map *m, double v);
/* The most ticks in [lo, hi] whose labels (tick font) do not crowd along an
 * axis mapped by m: horizontal labels need their width plus a gap, vertical
 * ones about two lines. */
void plot_ticks_fit(cairo_t *cr, const plot_style *st, plot_ticks *t, double lo, double hi, int integer,
                    const plot_map *m, int vertical);
/* Ticks at x0 + i k named names[i k] (0 <= i k < n), k the smallest of
 * 1, 2, 5, 10, ... whose labels do not crowd as plot_ticks_fit judges it. */
void plot_ticks_named(cairo_t *cr, const plot_style *st, plot_ticks *t, double x0, const char *const *names, int n,
                      const plot_map *m, int vertical);
/* Horizontal ticks at the whole numbers of [lo, hi] (every k-th, aligned
 * to multiples of k, where they crowd) named 2^v (a log2 axis); where
 * [lo, hi] holds no whole number, numeric ticks labelled 2^v. */
void plot_ticks_log2(cairo_t *cr, const plot_style *st, plot_ticks *t, double lo, double hi, const plot_map *m);
/* Widest label of t in the tick font. */
double plot_ticks_width(cairo_t *cr, const plot_style *st, const plot_ticks *t);
/* Room an axis needs outside the plot area: below it for a bottom axis
 * (ticks, labels, axis label), left of it for a left axis (tick_w: the
 * widest tick label). label may be NULL. */
double plot_axis_bottom_room(cairo_t *cr, const plot_style *st, const char *label);
double plot_axis_left_room(cairo_t *cr, const plot_style *st, double tick_w, const char *label);
/* Outward ticks, their labels and the axis label of the bottom / left side of r. */
void plot_axis_bottom(cairo_t *cr, const plot_style *st, const posemb_rect *r, const plot_map *m, const plot_ticks *t,
                      const char *label);
void plot_axis_left(cairo_t *cr, const plot_style *st, const posemb_rect *r, const plot_map *m, const plot_ticks *t,
                    const char *label);
void plot_frame(cairo_t *cr, const plot_style *st, const posemb_rect *r);
/* Room the title takes above the plot (0 without one), and the title centred
 * on cx with its line ending just above y. */
double plot_title_room(cairo_t *cr, const plot_style *st, const char *title);
void plot_title(cairo_t *cr, const plot_style *st, const char *title, double cx, double y);

/* ---- series styles (styles.c) -------------------------------------------- */

/* The looks a figure gives its series: PLOT_N_COLOURS colours times
 * PLOT_N_DASHES dash patterns, so POSEMB_PLOT_MAX_SERIES series of one
 * figure all differ in (colour, dash). */
#define PLOT_N_COLOURS 10
#define PLOT_N_DASHES 4
#define PLOT_REFERENCE (-1) /* the style index of a grid's grey reference series */

typedef struct plot_look {
    uint32_t rgb;
    int dash; /* 0 solid, 1 dashed, 2 dotted, 3 dash-dot */
} plot_look;

/* Series k's look (k in 0 .. POSEMB_PLOT_MAX_SERIES - 1, or PLOT_REFERENCE):
 * the colour cycles first, so series that share a colour are
 * PLOT_N_COLOURS apart in the order and differ in dash. */
plot_look plot_look_at(int k);
/* Sets series k's colour, dash and line width on cr (dashes scaled to st). */
void plot_look_apply(cairo_t *cr, const plot_style *st, int k);

/* ---- line plots (lines.c), shared by the panel grid (grid.c) -------------- */

/* Where a line plot (or one panel of a grid) draws: limits, plot area, maps and ticks. */
typedef struct plot_lines_geom {
    plot_style st;
    double xlo, xhi, ylo, yhi;
    posemb_rect plot;
    plot_map xm, ym;
    plot_ticks xt, yt;
    int legend_outside; /* the legend right of the plot, not over it */
} plot_lines_geom;

/* The series of one plot area: s[0..n) drawn with looks first_look + k, and
 * an optional reference (PLOT_REFERENCE look, drawn beneath, listed first). */
typedef struct plot_series_set {
    const posemb_series *s;
    int n, first_look;
    const int *looks;         /* [n] each series' look; NULL: first_look + k */
    const posemb_series *ref; /* NULL: none */
} plot_series_set;

/* Series k's look in set. */
static inline int plot_set_look(const plot_series_set *set, int k)
{
    return set->looks ? set->looks[k] : set->first_look + k;
}

/* POSEMB_EINVAL naming path for a malformed series (no data, points not 0..2);
 * *finite tells whether any point is finite. */
posemb_status plot_series_check(const char *path, const posemb_series *s, int n, int *finite, posemb_error *err);
/* Widens [x0, x1] x [y0, y1] to the finite points of s[0..n). */
void plot_series_extent(const posemb_series *s, int n, double *x0, double *x1, double *y0, double *y1);
/* One axis's limits: ends given (finite, unequal) are kept, the others come
 * from the data [dlo, dhi] plus a margin. POSEMB_EINVAL for lo > hi. */
posemb_status plot_axis_limits(const char *path, const char *axis, double *lo, double *hi, double dlo, double dhi,
                               posemb_error *err);
/* The light grid at the ticks, the series (clipped to the plot area) and
 * the frame; the axes are the caller's (a grid labels only its outer panels). */
void plot_lines_panel(cairo_t *cr, const plot_lines_geom *g, const plot_series_set *set);
/* Legend of the labelled series: 0 when none has a label. */
int plot_legend_entries(const plot_series_set *set);
/* Draws the legend inside g's plot area where it hides the fewest points,
 * or right of it when g->legend_outside. */
void plot_legend(cairo_t *cr, const plot_lines_geom *g, const plot_series_set *set);
/* One legend entry with its left end at x and its middle at y: the
 * series' swatch in look, then its label (tick font); and its width. */
void plot_legend_entry(cairo_t *cr, const plot_style *st, const posemb_series *s, int look, double x, double y);
double plot_legend_entry_width(cairo_t *cr, const plot_style *st, const posemb_series *s);
/* Width of the legend box (for a legend outside the plot). */
double plot_legend_width(cairo_t *cr, const plot_style *st, const plot_series_set *set);

/* ---- forest plots (forest.c) --------------------------------------------- */

typedef struct plot_forest_geom plot_forest_geom;
/* The verdict's colour as 0x00RRGGBB. */
uint32_t plot_verdict_rgb(posemb_verdict v);
/* Where posemb_plot_forest puts row `row` of these rows: the y of its
 * centre line and its panel's x map (for tests that read pixels back). */
posemb_status plot_forest_geometry(const posemb_forest_row *rows, int n, const posemb_forest_opts *o, int row,
                                   double *cy, plot_map *xm, posemb_error *err);

/* ---- colour bar (colorbar.c) --------------------------------------------- */

/* Room the colour bar takes right of the plot (gap, bar, ticks, labels,
 * axis label) at the given bar height. */
double plot_colorbar_room(cairo_t *cr, const plot_style *st, double vmin, double vmax, double height,
                          const char *label);
/* Where the bar goes for a plot area. */
posemb_rect plot_colorbar_rect(const plot_style *st, const posemb_rect *plot);
void plot_colorbar(cairo_t *cr, const plot_style *st, const posemb_rect *bar, posemb_cmap cmap, double vmin,
                   double vmax, const char *label);

/* ---- output (surface.c) -------------------------------------------------- */

typedef enum plot_format { PLOT_PNG, PLOT_SVG, PLOT_PDF } plot_format;

typedef struct plot_buf {
    unsigned char *data;
    size_t len, cap;
    int failed;
} plot_buf;

typedef struct plot_canvas {
    plot_format format;
    cairo_surface_t *surface;
    cairo_t *cr;
    posemb_atomic_file af;
    plot_buf svg; /* the SVG stream, held to insert a <title> before writing */
    const char *title;
    int width, height;
} plot_canvas;

/* Checks the extension and size, opens the atomic output file and a white
 * canvas. On failure nothing is left open and no file exists. */
posemb_status plot_canvas_open(plot_canvas *c, const char *path, int width, int height, const char *title,
                               posemb_error *err);
/* Renders the file and renames it into place; on failure removes it. */
posemb_status plot_canvas_close(plot_canvas *c, posemb_error *err);
void plot_canvas_abort(plot_canvas *c);
/* A 1 x 1 image context for measuring text (layout without drawing); NULL when out of memory. */
cairo_t *plot_measure_context(void);
/* Consistent text metrics on every surface: unhinted, so that PNG, SVG and
 * PDF lay out alike. */
void plot_context_setup(cairo_t *cr);

/* Paints an image (one pixel per cell) into r with nearest-neighbour
 * scaling: cells stay sharp however far they are enlarged. */
void plot_paint_cells(cairo_t *cr, cairo_surface_t *img, const posemb_rect *r);

/* Figure scale from the requested size and the default one. */
double plot_scale(int width, int height, int default_w, int default_h);

/* Resolves a colour range: NAN ends from the data's finite extremes (lo, hi;
 * diverging: symmetric around 0); widens an empty range. 0 or POSEMB_EINVAL
 * for vmin > vmax. */
posemb_status plot_resolve_range(const char *path, double *vmin, double *vmax, double lo, double hi, int symmetric,
                                 posemb_error *err);

#endif
