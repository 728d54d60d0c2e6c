/* Sinusoid tables shared by sin/lsin (per position) and srpe/lsrpe (per
 * distance). Angles are computed in double so that large positions keep
 * full float accuracy. */
#include <math.h>
#include <stddef.h>

#include "family.h"

void pe_sinusoid_freqs(double base, int width, double *freq)
{
    for (int m = 0; m < width / 2; m++) freq[m] = pow(base, -2.0 * m / width);
}

void pe_sinusoid_freqs_f(double base, int width, float *freq)
{
    for (int m = 0; m < width / 2; m++) freq[m] = (float)pow(base, -2.0 * m / width);
}

void pe_freqs_widen(const float *freq, int n, double *out)
{
    for (int m = 0; m < n; m++) out[m] = freq[m];
}

/* Columns of the sine and cosine of frequency m. */
static inline void sin_cos_cols(int m, int nfreq, int halves, int *cs, int *cc)
{
    *cs = halves ? m : 2 * m;
    *cc = halves ? nfreq + m : 2 * m + 1;
}

void pe_sinusoid_table(const double *freq, int nfreq, int halves, long x0, long rows, float *table)
{
    for (long r = 0; r < rows; r++) {
        float *row = table + (size_t)r * 2 * nfreq;
        double x = (double)(x0 + r);
        for (int m = 0; m < nfreq; m++) {
            int cs, cc;
            sin_cos_cols(m, nfreq, halves, &cs, &cc);
            double a = freq[m] * x;
            row[cs] = (float)sin(a);
            row[cc] = (float)cos(a);
        }
    }
}

/* d sin(w x)/dw = x cos(w x); d cos(w x)/dw = -x sin(w x); the table holds
 * those sines and cosines already. */
void pe_sinusoid_table_backward(int nfreq, int halves, long x0, long rows, const float *table, const float *dtable,
                                float *dfreq)
{
    for (int m = 0; m < nfreq; m++) {
        int cs, cc;
        sin_cos_cols(m, nfreq, halves, &cs, &cc);
        double acc = 0.0;
        for (long r = 0; r < rows; r++) {
            const float *t = table + (size_t)r * 2 * nfreq, *dt = dtable + (size_t)r * 2 * nfreq;
            acc += (double)(x0 + r) * ((double)dt[cs] * t[cc] - (double)dt[cc] * t[cs]);
        }
        dfreq[m] += (float)acc;
    }
}
