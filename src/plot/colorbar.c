/* The colour bar right of a heatmap: the map's 256 colours from vmin (bottom)
 * to vmax (top), as tall as the plot, with ticks in data values and a
 * rotated label. */
#include <math.h>

#include "plot/plot_impl.h"

static double bar_gap(const plot_style *st) { return 18 * st->s; }
static double bar_width(const plot_style *st) { return round(16 * st->s); }
static double label_gap(const plot_style *st) { return 3 * st->s; }
static double axis_label_gap(const plot_style *st) { return 8 * st->s; }

posemb_rect plot_colorbar_rect(const plot_style *st, const posemb_rect *plot)
{
    posemb_rect r = {round(plot->x + plot->w + bar_gap(st)), plot->y, bar_width(st), plot->h};
    return r;
}

static void bar_ticks(cairo_t *cr, const plot_style *st, plot_ticks *t, double vmin, double vmax, double y, double h)
{
    plot_map m = {vmin, vmax, y + h, y};
    plot_ticks_fit(cr, st, t, vmin, vmax, 0, &m, 1);
}

double plot_colorbar_room(cairo_t *cr, const plot_style *st, double vmin, double vmax, double height, const char *label)
{
    plot_ticks t;
    bar_ticks(cr, st, &t, vmin, vmax, 0, height);
    double room = bar_gap(st) + bar_width(st) + st->tick_len + label_gap(st) + plot_ticks_width(cr, st, &t);
    if (label) {
        plot_font(cr, st->label, 0);
        room += axis_label_gap(st) + plot_text_height(cr);
    }
    return room;
}

/* 1 x 256 image, vmax's colour in the top row. */
static cairo_surface_t *gradient_image(posemb_cmap cmap)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, PLOT_LUT);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) return img;
    uint32_t lut[PLOT_LUT];
    plot_cmap_lut(cmap, lut);
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (int k = 0; k < PLOT_LUT; k++) *(uint32_t *)(void *)(data + (size_t)k * (size_t)stride) = lut[PLOT_LUT - 1 - k];
    cairo_surface_mark_dirty(img);
    return img;
}

static void bar_axis(cairo_t *cr, const plot_style *st, const posemb_rect *bar, const plot_ticks *t, double vmin,
                     double vmax)
{
    plot_map m = {vmin, vmax, bar->y + bar->h, bar->y};
    double x = bar->x + bar->w;
    cairo_set_line_width(cr, st->line);
    plot_font(cr, st->tick, 0);
    for (int i = 0; i < t->n; i++) {
        double y = plot_map_at(&m, t->v[i]);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        cairo_move_to(cr, x, floor(y) + 0.5);
        cairo_line_to(cr, x + st->tick_len, floor(y) + 0.5);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
        plot_text(cr, t->label[i], x + st->tick_len + label_gap(st), y, 0, 0.5, 0);
    }
}

void plot_colorbar(cairo_t *cr, const plot_style *st, const posemb_rect *bar, posemb_cmap cmap, double vmin,
                   double vmax, const char *label)
{
    cairo_surface_t *img = gradient_image(cmap);
    plot_paint_cells(cr, img, bar);
    cairo_surface_destroy(img);
    plot_frame(cr, st, bar);
    plot_ticks t;
    bar_ticks(cr, st, &t, vmin, vmax, bar->y, bar->h);
    bar_axis(cr, st, bar, &t, vmin, vmax);
    if (!label) return;
    double x = bar->x + bar->w + st->tick_len + label_gap(st) + plot_ticks_width(cr, st, &t) + axis_label_gap(st);
    plot_font(cr, st->label, 0);
    cairo_set_source_rgb(cr, 0.133, 0.133, 0.133);
    plot_text(cr, label, x, bar->y + bar->h / 2, 0.5, 0, PLOT_PI / 2);
}
