/* Axes: outward ticks with their labels, axis labels, the frame and the
 * title. Each drawing function has a "room" twin that says how much space it
 * takes, so that layouts reserve exactly what is drawn. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot/plot_impl.h"

#define INK 0x222222u   /* text */
#define FRAME 0x333333u /* frame and ticks */

/* Gaps between a tick and its label, and between tick labels and the axis label. */
static double label_gap(const plot_style *st) { return 3 * st->s; }
static double axis_label_gap(const plot_style *st) { return 7 * st->s; }

double plot_map_at(const plot_map *m, double v) { return m->p0 + (v - m->v0) / (m->v1 - m->v0) * (m->p1 - m->p0); }

/* A line of odd device width is crisp on a pixel grid only through pixel centres. */
static double crisp(double v, double width)
{
    long w = lround(width);
    return (w % 2) ? floor(v) + 0.5 : round(v);
}

double plot_ticks_width(cairo_t *cr, const plot_style *st, const plot_ticks *t)
{
    plot_font(cr, st->tick, 0);
    double w = 0;
    for (int i = 0; i < t->n; i++) w = fmax(w, plot_text_width(cr, t->label[i]));
    return w;
}

void plot_ticks_fit(cairo_t *cr, const plot_style *st, plot_ticks *t, double lo, double hi, int integer,
                    const plot_map *m, int vertical)
{
    plot_font(cr, st->tick, 0);
    double line = plot_text_height(cr);
    for (int max_n = vertical ? 9 : 8; max_n >= 2; max_n--) {
        plot_ticks_make(t, lo, hi, max_n, integer);
        if (t->n < 2) return;
        double spacing = fabs(plot_map_at(m, t->v[1]) - plot_map_at(m, t->v[0]));
        double need = vertical ? 2.0 * line : plot_ticks_width(cr, st, t) + 1.6 * st->tick;
        if (spacing >= need) return;
    }
}

/* Names a tick at value v (ctx: what the caller's axis needs). */
typedef void (*tick_namer)(const void *ctx, double v, char *buf, size_t cap);

/* Ticks at from + j k for whole j up to to (aligned: at the multiples of k
 * instead), k the smallest of 1, 2, 5, 10, 20, 50, ... whose labels do not
 * crowd as plot_ticks_fit judges it; one tick when none fits. */
static void ticks_every(cairo_t *cr, const plot_style *st, plot_ticks *t, double from, double to, int aligned,
                        tick_namer name, const void *ctx, const plot_map *m, int vertical)
{
    plot_font(cr, st->tick, 0);
    double line = plot_text_height(cr), unit = fabs(plot_map_at(m, from + 1) - plot_map_at(m, from));
    static const double MULT[3] = {1, 2, 5};
    for (int e = 0; e < 9 * 3; e++) { /* k = 1, 2, 5, 10, 20, 50, ... */
        double k = MULT[e % 3] * pow(10, e / 3), start = aligned ? ceil(from / k) * k : from;
        if ((to - start) / k >= PLOT_MAX_TICKS) continue;
        memset(t, 0, sizeof *t);
        t->step = k;
        for (double v = start; v <= to + 1e-9 && t->n < PLOT_MAX_TICKS; v += k, t->n++) {
            t->v[t->n] = v;
            name(ctx, v, t->label[t->n], sizeof t->label[t->n]);
        }
        double need = vertical ? 2.0 * line : plot_ticks_width(cr, st, t) + 1.6 * st->tick;
        if (t->n < 2 || k * unit >= need) return;
    }
    t->n = 1;
}

typedef struct named_axis {
    double x0;
    const char *const *names;
} named_axis;

static void name_of(const void *ctx, double v, char *buf, size_t cap)
{
    const named_axis *a = ctx;
    snprintf(buf, cap, "%s", a->names[(int)lround(v - a->x0)]);
}

void plot_ticks_named(cairo_t *cr, const plot_style *st, plot_ticks *t, double x0, const char *const *names, int n,
                      const plot_map *m, int vertical)
{
    named_axis a = {x0, names};
    ticks_every(cr, st, t, x0, x0 + n - 1, 0, name_of, &a, m, vertical);
}

static void pow2_of(const void *ctx, double v, char *buf, size_t cap)
{
    (void)ctx;
    plot_format_pow2(buf, cap, (int)lround(v));
}

void plot_ticks_log2(cairo_t *cr, const plot_style *st, plot_ticks *t, double lo, double hi, const plot_map *m)
{
    if (floor(hi) >= ceil(lo)) {
        ticks_every(cr, st, t, ceil(lo), floor(hi), 1, pow2_of, NULL, m, 0);
        return;
    }
    plot_ticks_fit(cr, st, t, lo, hi, 0, m, 0); /* no whole power of two: 2^v at numeric ticks */
    for (int i = 0; i < t->n; i++) snprintf(t->label[i], sizeof t->label[i], "%.3g", pow(2, t->v[i]));
}

double plot_axis_bottom_room(cairo_t *cr, const plot_style *st, const char *label)
{
    plot_font(cr, st->tick, 0);
    double room = st->tick_len + label_gap(st) + plot_text_height(cr);
    if (label) {
        plot_font(cr, st->label, 0);
        room += axis_label_gap(st) + plot_text_height(cr);
    }
    return room;
}

double plot_axis_left_room(cairo_t *cr, const plot_style *st, double tick_w, const char *label)
{
    double room = st->tick_len + label_gap(st) + tick_w;
    if (label) {
        plot_font(cr, st->label, 0);
        room += axis_label_gap(st) + plot_text_height(cr);
    }
    return room;
}

/* Ticks outside the plot (a margin beyond the data) are not drawn. */
static int on_axis(double p, double a, double b) { return p >= fmin(a, b) - 0.5 && p <= fmax(a, b) + 0.5; }

void plot_axis_bottom(cairo_t *cr, const plot_style *st, const posemb_rect *r, const plot_map *m, const plot_ticks *t,
                      const char *label)
{
    double y = r->y + r->h;
    cairo_set_line_width(cr, st->line);
    plot_font(cr, st->tick, 0);
    double tick_h = plot_text_height(cr);
    for (int i = 0; i < t->n; i++) {
        double x = plot_map_at(m, t->v[i]);
        if (!on_axis(x, r->x, r->x + r->w)) continue;
        plot_set_rgb(cr, FRAME);
        cairo_move_to(cr, crisp(x, st->line), y);
        cairo_line_to(cr, crisp(x, st->line), y + st->tick_len);
        cairo_stroke(cr);
        plot_set_rgb(cr, INK);
        plot_text(cr, t->label[i], x, y + st->tick_len + label_gap(st), 0.5, 0, 0);
    }
    if (!label) return;
    plot_font(cr, st->label, 0);
    plot_set_rgb(cr, INK);
    plot_text(cr, label, r->x + r->w / 2, y + st->tick_len + label_gap(st) + tick_h + axis_label_gap(st), 0.5, 0, 0);
}

void plot_axis_left(cairo_t *cr, const plot_style *st, const posemb_rect *r, const plot_map *m, const plot_ticks *t,
                    const char *label)
{
    double x = r->x;
    double tick_w = plot_ticks_width(cr, st, t);
    cairo_set_line_width(cr, st->line);
    plot_font(cr, st->tick, 0);
    for (int i = 0; i < t->n; i++) {
        double y = plot_map_at(m, t->v[i]);
        if (!on_axis(y, r->y, r->y + r->h)) continue;
        plot_set_rgb(cr, FRAME);
        cairo_move_to(cr, x, crisp(y, st->line));
        cairo_line_to(cr, x - st->tick_len, crisp(y, st->line));
        cairo_stroke(cr);
        plot_set_rgb(cr, INK);
        plot_text(cr, t->label[i], x - st->tick_len - label_gap(st), y, 1, 0.5, 0);
    }
    if (!label) return;
    plot_font(cr, st->label, 0);
    plot_set_rgb(cr, INK);
    double lx = x - st->tick_len - label_gap(st) - tick_w - axis_label_gap(st);
    plot_text(cr, label, lx, r->y + r->h / 2, 0.5, 1, PLOT_PI / 2);
}

void plot_frame(cairo_t *cr, const plot_style *st, const posemb_rect *r)
{
    plot_set_rgb(cr, FRAME);
    cairo_set_line_width(cr, st->line);
    /* Centred on the plot's edge, so the frame half covers the outer cells. */
    cairo_rectangle(cr, r->x, r->y, r->w, r->h);
    cairo_stroke(cr);
}

double plot_title_room(cairo_t *cr, const plot_style *st, const char *title)
{
    if (!title) return 0;
    plot_font(cr, st->title, 0);
    return plot_text_height(cr) + 8 * st->s;
}

void plot_title(cairo_t *cr, const plot_style *st, const char *title, double cx, double y)
{
    if (!title) return;
    plot_font(cr, st->title, 0);
    plot_set_rgb(cr, INK);
    plot_text(cr, title, cx, y - 8 * st->s, 0.5, 1, 0);
}
