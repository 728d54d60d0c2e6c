/* The looks of a figure's series: matplotlib's tab10 colours (its grey
 * replaced by black, so that a grid's grey reference series stands apart)
 * times four dash patterns. The colour cycles first: series that share a
 * colour are ten apart in the order, and differ in dash. */
#include "plot/plot_impl.h"

static const uint32_t COLOURS[PLOT_N_COLOURS] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                                 0x8c564b, 0xe377c2, 0x111111, 0xbcbd22, 0x17becf};
#define REFERENCE_GREY 0xa8a8a8

plot_look plot_look_at(int k)
{
    if (k < 0) return (plot_look){REFERENCE_GREY, 0};
    return (plot_look){COLOURS[k % PLOT_N_COLOURS], (k / PLOT_N_COLOURS) % PLOT_N_DASHES};
}

/* On and off lengths at scale 1 for a 1.8-wide line with round caps (which
 * add a cap's width to every dash: a zero-length dash is a dot). */
static int dash_pattern(int dash, double s, double *d)
{
    switch (dash) {
    case 1:
        d[0] = 7 * s;
        d[1] = 4.5 * s;
        return 2;
    case 2:
        d[0] = 0;
        d[1] = 3.6 * s;
        return 2;
    case 3:
        d[0] = 8 * s;
        d[1] = 3.6 * s;
        d[2] = 0;
        d[3] = 3.6 * s;
        return 4;
    default:
        return 0;
    }
}

void plot_look_apply(cairo_t *cr, const plot_style *st, int k)
{
    plot_look l = plot_look_at(k);
    double d[4];
    plot_set_rgb(cr, l.rgb);
    cairo_set_dash(cr, d, dash_pattern(l.dash, st->s, d), 0);
    cairo_set_line_width(cr, (k < 0 ? 2.6 : 1.8) * st->s);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
}
