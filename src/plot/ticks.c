/* Nice tick values and their labels: multiples of 1, 2 or 5 times a power of
 * ten, as many as the axis has room for, labelled with exactly the digits
 * the step needs (0.2 -> "0.2", never "0.2000001"), in scientific notation
 * ("1.5x10^6" with a times sign and superscripts) when plain numbers would
 * need more than 6 digits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Superscript digits 0..9 and minus, in UTF-8. */
static const char *const SUPERSCRIPT[10] = {
    "\xe2\x81\xb0", "\xc2\xb9",     "\xc2\xb2",     "\xc2\xb3",     "\xe2\x81\xb4",
    "\xe2\x81\xb5", "\xe2\x81\xb6", "\xe2\x81\xb7", "\xe2\x81\xb8", "\xe2\x81\xb9",
};
#define SUPERSCRIPT_MINUS "\xe2\x81\xbb"

void plot_format_sci(char *dst, size_t cap, double v, int digits)
{
    char raw[64];
    if (v == 0 || !isfinite(v)) {
        snprintf(raw, sizeof raw, "%g", v);
        typographic_minus(dst, cap, raw);
        return;
    }
    digits = digits < 1 ? 1 : digits > 15 ? 15 : digits;
    int e = (int)floor(log10(fabs(v)));
    double m = v / pow(10, e);
    snprintf(raw, sizeof raw, "%.*g", digits, m);
    if (fabs(atof(raw)) >= 10) { /* 9.996 rounds to 10: 1.00 x 10^(e+1) instead */
        e++;
        snprintf(raw, sizeof raw, "%.*g", digits, m / 10);
    }
    char out[128];
    int n = snprintf(out, sizeof out,
                     "%s\xc3\x97"
                     "10%s",
                     raw, e < 0 ? SUPERSCRIPT_MINUS : "");
    char exp_digits[16];
    snprintf(exp_digits, sizeof exp_digits, "%d", abs(e));
    for (const char *d = exp_digits; *d && n > 0 && (size_t)n + 4 < sizeof out; d++)
        n += snprintf(out + n, sizeof out - (size_t)n, "%s", SUPERSCRIPT[*d - '0']);
    typographic_minus(dst, cap, out);
}

void plot_format_pow2(char *dst, size_t cap, int e)
{
    if (e >= -5 && e <= 19) { /* up to 6 characters plain: 0.03125 .. 524288 */
        char raw[32];
        snprintf(raw, sizeof raw, "%.*f", e < 0 ? -e : 0, ldexp(1, e));
        snprintf(dst, cap, "%s", raw);
        return;
    }
    char digits[16], out[64];
    int n = snprintf(out, sizeof out, "2%s", e < 0 ? SUPERSCRIPT_MINUS : "");
    snprintf(digits, sizeof digits, "%d", abs(e));
    for (const char *d = digits; *d && n > 0 && (size_t)n + 4 < sizeof out; d++)
        n += snprintf(out + n, sizeof out - (size_t)n, "%s", SUPERSCRIPT[*d - '0']);
    snprintf(dst, cap, "%s", out);
}

static int step_decimals(double step) { return step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9); }

/* Numbers beyond these need too many digits in plain notation. */
static int needs_sci(double largest, double step) { return largest >= 1e6 || step_decimals(step) > 5; }

static void format_tick(char *dst, size_t cap, double v, double step, int sci)
{
    double a = fabs(v);
    if (a < step * 1e-9) v = a = 0; /* no "-0" from rounding */
    if (sci) {
        plot_format_sci(dst, cap, v, a > 0 ? (int)floor(log10(a)) - (int)floor(log10(step)) + 1 : 1);
        return;
    }
    char raw[64];
    snprintf(raw, sizeof raw, "%.*f", step_decimals(step), v);
    typographic_minus(dst, cap, raw);
}

void plot_format_number(char *dst, size_t cap, double v, double step)
{
    if (!(step > 0) || !isfinite(step)) step = fabs(v) > 0 ? fabs(v) : 1;
    format_tick(dst, cap, v, step, needs_sci(fabs(v), step));
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
    for (double k = first_multiple(lo, step); k <= last_multiple(hi, step) && t->n < max_n; k++)
        t->v[t->n++] = k == 0 ? 0.0 : k * step;
    if (t->n == 0) {
        ticks_single(t, integer ? ceil(lo) : lo);
        return;
    }
    /* One notation for the whole axis: 5x10^5 next to 1x10^6, not 500000. */
    int sci = needs_sci(fmax(fabs(t->v[0]), fabs(t->v[t->n - 1])), step);
    for (int i = 0; i < t->n; i++) format_tick(t->label[i], sizeof t->label[i], t->v[i], step, sci);
}
