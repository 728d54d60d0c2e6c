/* Nice tick values and their labels: multiples of 1, 2 or 5 times a power of
 * ten, as many as the axis has room for, labelled with exactly the digits
 * the step needs (0.2 -> "0.2", never "0.2000001"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot/plot_impl.h"

/* Exponent limits keep the search finite for any finite range. */
#define EXP_MIN (-300)
#define EXP_MAX 300

static double first_multiple(double lo, double step) { return ceil(lo / step - 1e-9); }
static double last_multiple(double hi, double step) { return floor(hi / step + 1e-9); }

static int count_multiples(double lo, double hi, double step)
{
    double n = last_multiple(hi, step) - first_multiple(lo, step) + 1;
    return n > 0 ? (n > 1e9 ? 1000000000 : (int)n) : 0;
}

/* Typographic minus (U+2212) for '-': a hyphen is too short next to digits. */
static void typographic_minus(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    for (const char *p = src; *p && o + 4 < cap; p++) {
        if (*p == '-') {
            memcpy(dst + o, "\xe2\x88\x92", 3);
            o += 3;
        } else {
            dst[o++] = *p;
        }
    }
    dst[o] = '\0';
}

void plot_format_number(char *dst, size_t cap, double v, double step)
{
    char raw[64];
    double a = fabs(v);
    if (!(step > 0) || !isfinite(step)) step = a > 0 ? a : 1;
    if (a < step * 1e-9) v = a = 0; /* no "-0" from rounding */
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (a >= 1e6 || decimals > 5) {
        int digits = a > 0 ? (int)floor(log10(a)) - (int)floor(log10(step)) + 1 : 1;
        snprintf(raw, sizeof raw, "%.*g", digits < 1 ? 1 : digits > 15 ? 15 : digits, v);
    } else {
        snprintf(raw, sizeof raw, "%.*f", decimals, v);
    }
    typographic_minus(dst, cap, raw);
}

static void ticks_single(plot_ticks *t, double v)
{
    t->n = 1;
    t->step = v != 0 ? pow(10, floor(log10(fabs(v)))) : 1;
    t->v[0] = v;
    plot_format_number(t->label[0], sizeof t->label[0], v, t->step);
}

/* Smallest {1, 2, 5} x 10^e step with at most max_n multiples in [lo, hi]
 * (and at least one, as long as a smaller step had one). */
static double nice_step(double lo, double hi, int max_n, int integer)
{
    static const double MULT[3] = {1, 2, 5};
    double prev = 0;
    int e = (int)floor(log10((hi - lo) / max_n)) - 1;
    for (e = e < EXP_MIN ? EXP_MIN : e; e <= EXP_MAX; e++) {
        for (int k = 0; k < 3; k++) {
            double step = MULT[k] * pow(10, e);
            if (integer && step < 1) continue;
            int n = count_multiples(lo, hi, step);
            if (n == 0 && prev > 0) return prev;
            if (n <= max_n) return step;
            prev = step;
        }
    }
    return hi - lo;
}

void plot_ticks_make(plot_ticks *t, double lo, double hi, int max_n, int integer)
{
    memset(t, 0, sizeof *t);
    if (max_n < 1) max_n = 1;
    if (max_n > PLOT_MAX_TICKS) max_n = PLOT_MAX_TICKS;
    if (!isfinite(lo) || !isfinite(hi)) return;
    if (!(hi > lo)) {
        ticks_single(t, lo);
        return;
    }
    double step = nice_step(lo, hi, max_n, integer);
    t->step = step;
    for (double k = first_multiple(lo, step); k <= last_multiple(hi, step) && t->n < max_n; k++) {
        double v = k == 0 ? 0.0 : k * step;
        t->v[t->n] = v;
        plot_format_number(t->label[t->n], sizeof t->label[t->n], v, step);
        t->n++;
    }
    if (t->n == 0) ticks_single(t, integer ? ceil(lo) : lo);
}
