/* Typography: font sizes that scale with the figure, and text placed by its
 * anchor (centred under a tick, right-aligned against an axis, rotated for
 * a vertical axis label). Cairo's toy text API with the fontconfig
 * "sans-serif" face (DejaVu Sans on Debian). */
#include <math.h>

#include "plot/plot_impl.h"

/* Sizes at the default figure size (640 px wide): close to matplotlib's
 * defaults at 100 dpi, readable when a figure is shown at half size. */
plot_style plot_style_at(double s)
{
    plot_style st = {
        .s = s,
        .title = 16 * s,
        .label = 14 * s,
        .tick = 12.5 * s,
        .small = 11 * s,
        .tick_len = 5 * s,
        .line = 1.0 * s,
        .pad = 12 * s,
    };
    return st;
}

void plot_font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double plot_text_width(cairo_t *cr, const char *text)
{
    cairo_text_extents_t te;
    cairo_text_extents(cr, text, &te);
    return te.x_advance;
}

double plot_text_height(cairo_t *cr)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    return fe.ascent + fe.descent;
}

void plot_text(cairo_t *cr, const char *text, double x, double y, double ax, double ay, double angle)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double w = plot_text_width(cr, text);
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, -angle);
    /* The baseline sits `ascent` below the top of the line box. */
    cairo_move_to(cr, -ax * w, -ay * (fe.ascent + fe.descent) + fe.ascent);
    cairo_show_text(cr, text);
    cairo_restore(cr);
}

void plot_set_rgb(cairo_t *cr, uint32_t rgb)
{
    cairo_set_source_rgb(cr, (rgb >> 16 & 255) / 255.0, (rgb >> 8 & 255) / 255.0, (rgb & 255) / 255.0);
}
