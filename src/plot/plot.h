/* Figures for papers, drawn with cairo: heatmaps with a colour bar, line and
 * scatter plots with a legend (alone or as a grid of panels), forest plots
 * of claims, and the "clock" of sinusoidal PEs.
 *
 * The output format follows the file extension: ".png" (pixels), ".svg" or
 * ".pdf" (vector; sizes are in points and matrices are embedded as images).
 * Any other extension is POSEMB_EINVAL. Files are written whole or not at
 * all (a temporary name renamed when complete): a failed call leaves no
 * file behind. Errors are one line naming the path: POSEMB_EINVAL for bad
 * arguments, POSEMB_EIO when the file cannot be written, POSEMB_ENOMEM.
 *
 * Sizes: width and height 0 take each figure's default. Fonts, margins and
 * line widths grow with the figure (relative to the default size), so a
 * 2x larger PNG looks like the default one at twice the resolution. */
#ifndef POSEMB_PLOT_H
#define POSEMB_PLOT_H

#include "posemb/api.h"

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- colour maps --------------------------------------------------------- */

typedef enum posemb_cmap {
    POSEMB_CMAP_VIRIDIS = 0,   /* magnitudes: matplotlib's viridis (its 256-entry table) */
    POSEMB_CMAP_DIVERGING = 1, /* signed values: ColorBrewer RdBu reversed, blue < 0 < red, near white at 0.5 */
} posemb_cmap;

/* Colour of t in [0, 1] (clamped) as 8-bit sRGB; NaN gives the grey used for NaN cells. */
void posemb_cmap_rgb(posemb_cmap cmap, double t, unsigned char rgb[3]);

/* ---- heatmaps ------------------------------------------------------------ */

#define POSEMB_PLOT_NAME_MAX 32 /* bytes of a tick name, its NUL included */

typedef struct posemb_heatmap_opts {
    const char *title, *xlabel, *ylabel, *cbar_label; /* NULL: none */
    posemb_cmap cmap;
    /* Colour range. NAN: from the finite data (diverging: symmetric around 0,
     * so that 0 is the middle colour). Equal values (a zeroed struct) mean
     * both from the data; vmin > vmax is POSEMB_EINVAL. */
    double vmin, vmax;
    /* Tick value of the first column / row (e.g. -k for a table of relative
     * offsets -k..k); step 1. Ticks are in these data coordinates. */
    double x0, y0;
    /* NULL: numeric ticks (x0, y0 above). Else one name per column / row
     * (each shorter than POSEMB_PLOT_NAME_MAX bytes), shown at every column / row, or every k-th
     * where they would crowd: a heatmap whose axes are not a range of
     * integers (context lengths 128 .. 2048, depths 0 .. 1). */
    const char *const *xnames, *const *ynames;
    /* 0: 640 x 560, less the blank band a matrix far from square would
     * leave (a 12 x 64 table gets a short, wide figure). */
    int width, height;
} posemb_heatmap_opts;

/* No title or labels, viridis, range from the data, x0 = y0 = 0, default size. */
posemb_heatmap_opts posemb_heatmap_defaults(void);

/* Draws the rows x cols matrix m (row-major, row 0 at the top) with square
 * cells where the figure allows, one colour per cell (nearest-neighbour
 * scaling; 2048 x 2048 takes milliseconds), NaN cells in grey, axes with
 * ticks at row/column positions and a colour bar. o may be NULL (defaults).
 * rows, cols in [1, 32767]. */
posemb_status posemb_plot_heatmap(const char *path, const float *m, int rows, int cols, const posemb_heatmap_opts *o,
                                  posemb_error *err);

typedef struct posemb_rect {
    double x, y, w, h; /* pixels (points for SVG/PDF), origin at the top left */
} posemb_rect;

/* Where posemb_plot_heatmap puts the matrix (plot: cell (i, j) covers
 * x + j w/cols .. x + (j+1) w/cols, likewise rows) and the colour bar (cbar),
 * for the same arguments (the data matter: the colour bar's labels take room);
 * either output may be NULL. */
posemb_status posemb_heatmap_layout(const float *m, int rows, int cols, const posemb_heatmap_opts *o, posemb_rect *plot,
                                    posemb_rect *cbar, posemb_error *err);

/* ---- line and scatter plots ---------------------------------------------- */

typedef struct posemb_series {
    const char *label;   /* legend text; NULL: not in the legend */
    const double *x, *y; /* n points; x NULL: 0, 1, ..., n-1. Non-finite points are skipped (a line breaks there) */
    int n;
    int points; /* 0: a line, 1: markers only, 2: a line with markers */
} posemb_series;

typedef struct posemb_lines_opts {
    const char *title, *xlabel, *ylabel; /* NULL: none */
    int width, height;                   /* 0: 640 x 440 */
    /* 0: a legend when two or more series have labels; 1: always (the
     * labelled series); -1: never. It goes in the corner with the fewest points. */
    int legend;
    /* Axis limits. NAN: from the data with a 4% margin. Equal values (a
     * zeroed struct) mean both from the data; min > max is POSEMB_EINVAL. */
    double xmin, xmax, ymin, ymax;
    /* 1: x holds log2 of the quantity (context lengths 128 .. 2048 as 7 ..
     * 11), so the x ticks sit at whole numbers and read 2^x (128, 256 ...). */
    int xlog2;
} posemb_lines_opts;

/* No title or labels, automatic legend and limits, default size. */
posemb_lines_opts posemb_lines_defaults(void);

/* Series one figure tells apart: each gets its own (colour, dash) pair,
 * the ten colours of matplotlib's "tab10" (black for its grey) first solid,
 * then dashed, dotted and dash-dotted, so that series sharing a colour are
 * ten apart in the order. */
#define POSEMB_PLOT_MAX_SERIES 40

/* Draws the series, in the looks above in order, with a light grid, axes
 * and an optional legend. o may be NULL (defaults). Needs n_series in
 * [1, POSEMB_PLOT_MAX_SERIES] and at least one finite point overall. More
 * than about six series on one axis are hard to follow: see
 * posemb_plot_lines_grid. */
posemb_status posemb_plot_lines(const char *path, const posemb_series *s, int n_series, const posemb_lines_opts *o,
                                posemb_error *err);

/* ---- small multiples: a grid of line plots with shared axes (x on request free) */

typedef struct posemb_panel {
    const char *title; /* above the panel; NULL: none */
    const posemb_series *series;
    int n_series; /* >= 0: a panel may show the reference alone */
} posemb_panel;

typedef struct posemb_grid_opts {
    const char *title, *xlabel, *ylabel; /* the figure's; NULL: none */
    /* 0: each panel's plot area about 330 x 230 and the figure around them;
     * else the figure's size (fonts scale with it, as for posemb_plot_lines). */
    int width, height;
    int cols; /* panels per row; 0: up to 3, balanced (4 panels: 2 x 2) */
    /* Limits, as posemb_lines_opts: NAN (or equal values) from all panels' data
     * (x with free_x: from each panel's own, within these). */
    double xmin, xmax, ymin, ymax;
    int xlog2; /* as posemb_lines_opts */
    /* 1: each panel's x limits and ticks from its own series (the reference,
     * cut to them, where it has some; the reference's span where it has none),
     * for panels over different spans; xmin and xmax, when given, still bound
     * every panel. 0: one x axis for all. */
    int free_x;
    /* Drawn in every panel in grey beneath the panel's series and listed
     * first in each legend (a baseline such as "no PE"); NULL: none. */
    const posemb_series *reference;
    /* 1: series with the same label share a look in every panel (a method
     * keeps its colour across the figure); 0: no two series look alike. */
    int looks_by_label;
} posemb_grid_opts;

/* No titles, limits from the data, automatic size and columns, no reference. */
posemb_grid_opts posemb_grid_defaults(void);

/* Draws n_panels line plots in a grid, row by row, sharing their y axis
 * and, unless free_x, their x axis: the same limits and ticks everywhere,
 * y tick labels on the left column, x tick labels under every panel, the
 * axis labels once for the figure. Each panel has its own legend (above it,
 * under its title, where it hides none of its data) and its series take the
 * looks of posemb_plot_lines in order over the whole figure (panel 0's
 * first), so that no two series of the figure look alike (or, with
 * looks_by_label, no two labels). o may be NULL (defaults). Needs n_panels
 * in [1, 24], at most POSEMB_PLOT_MAX_SERIES series over all panels, and one
 * finite point overall; POSEMB_EINVAL otherwise, or when the size leaves a panel too
 * small for its labels. */
posemb_status posemb_plot_lines_grid(const char *path, const posemb_panel *panels, int n_panels,
                                     const posemb_grid_opts *o, posemb_error *err);

/* ---- forest plots of claims ---------------------------------------------- */

/* What a replication concluded about a claim on one testbed; it sets the
 * row's colour (Okabe and Ito's colour-blind-safe palette) and marker. */
typedef enum posemb_verdict {
    POSEMB_VERDICT_REPRODUCED = 0,     /* "reproduced": bluish green, a disc */
    POSEMB_VERDICT_CONFOUNDED = 1,     /* "reproduced, confounded": sky blue, a square */
    POSEMB_VERDICT_NOT_REPRODUCED = 2, /* "not reproduced": vermilion, a triangle */
    POSEMB_VERDICT_UNTESTABLE = 3,     /* "untestable here": grey, a ring */
} posemb_verdict;
#define POSEMB_VERDICT_COUNT 4

/* The verdict's name as above (static); NULL outside the enum. */
const char *posemb_verdict_name(posemb_verdict v);
/* The verdict named exactly (case-sensitive, as posemb_verdict_name spells it); -1 for any other string. */
int posemb_verdict_from_name(const char *name);

typedef struct posemb_forest_row {
    const char *label; /* the row's text: the claim and its testbed */
    const char
        *unit;     /* the effect's unit ("difference of F1", "log perplexity ratio"): rows of one unit share a panel */
    double effect; /* the point estimate; NAN: none (the row shows its label and "no estimate") */
    double lo, hi; /* its 95% interval; NAN (either): none, the point alone */
    double paper;  /* the paper's own effect, an open diamond; NAN: none */
    posemb_verdict verdict;
} posemb_forest_row;

#define POSEMB_FOREST_MAX_ROWS 400
#define POSEMB_FOREST_MAX_PANELS 16

typedef struct posemb_forest_opts {
    const char *title; /* NULL: none */
    int plot_width;    /* width of each panel's axis, device units; 0: 420 */
} posemb_forest_opts;

/* Draws a forest plot: one panel per unit (in the order of their first
 * row, stacked vertically), titled by the unit, with its own x axis that
 * spans the panel's estimates, intervals, paper effects and 0, and a
 * vertical line at 0; one row per claim x testbed in the rows' order, its
 * label left of the axis (the label column as wide as the longest label),
 * its interval as a line and its estimate as a marker in the verdict's
 * colour, the paper's effect as an open diamond; a legend of the verdicts
 * and markers above the panels. The figure's size follows the rows and the
 * labels (about 24 units a row). rows and o belong to the caller and are
 * only read; o may be NULL. POSEMB_EINVAL (naming the path, and the row for
 * a bad row) for n_rows outside [1, POSEMB_FOREST_MAX_ROWS], a row without
 * label or unit, an unknown verdict, a non-finite-but-not-NaN number, lo >
 * hi, more than POSEMB_FOREST_MAX_PANELS units, or a figure beyond the
 * largest size; then, and on POSEMB_EIO or POSEMB_ENOMEM, no file is left. */
posemb_status posemb_plot_forest(const char *path, const posemb_forest_row *rows, int n_rows,
                                 const posemb_forest_opts *o, posemb_error *err);

/* ---- the clock of sinusoidal PEs ----------------------------------------- */

/* For each of the n_freq frequencies w (one small panel each, in a grid),
 * the points (cos(w p), sin(w p)) for positions p = 0..n_pos-1 on the unit
 * circle, coloured by p (viridis, with a shared colour bar); the panel title
 * gives w and its period 2 pi / w in positions. The figure size follows the
 * grid (about 190 px a panel). title may be NULL. n_freq in [1, 64],
 * n_pos in [1, 1000000]. */
posemb_status posemb_plot_clock(const char *path, const float *freqs, int n_freq, int n_pos, const char *title,
                                posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
