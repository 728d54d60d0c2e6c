/* Figure scale and value ranges: what a figure's options leave to the data. */
#include <math.h>

#include "plot/plot_impl.h"

double plot_scale(int width, int height, int default_w, int default_h)
{
    double s = fmin((double)width / default_w, (double)height / default_h);
    return s < 0.4 ? 0.4 : s > 20 ? 20 : s;
}

/* Ends given by the caller: a zeroed struct (equal ends) or non-finite values leave both to the data. */
static void normalise_given(double *vmin, double *vmax)
{
    if (!isfinite(*vmin)) *vmin = NAN;
    if (!isfinite(*vmax)) *vmax = NAN;
    if (*vmin == *vmax) *vmin = *vmax = NAN;
}

static void symmetric_ends(double *vmin, double *vmax, double lo, double hi)
{
    double a = fmax(fabs(lo), fabs(hi));
    if (isnan(*vmin) && isnan(*vmax)) {
        *vmin = -a;
        *vmax = a;
    } else if (isnan(*vmax)) {
        *vmax = *vmin < 0 ? -*vmin : hi;
    } else if (isnan(*vmin)) {
        *vmin = *vmax > 0 ? -*vmax : lo;
    }
}

posemb_status plot_resolve_range(const char *path, double *vmin, double *vmax, double lo, double hi, int symmetric,
                                 posemb_error *err)
{
    normalise_given(vmin, vmax);
    if (*vmin > *vmax)
        return posemb_fail(err, POSEMB_EINVAL, "%s: colour range vmin %g is above vmax %g", path, *vmin, *vmax);
    if (!(lo <= hi)) { /* no finite data */
        lo = symmetric ? -1 : 0;
        hi = 1;
    }
    if (symmetric) {
        symmetric_ends(vmin, vmax, lo, hi);
    } else {
        if (isnan(*vmin)) *vmin = lo;
        if (isnan(*vmax)) *vmax = hi;
    }
    if (*vmin > *vmax)
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: colour range [%g, %g] is empty (one end given, the other from the data)", path, *vmin,
                           *vmax);
    if (*vmin == *vmax) { /* constant data: a range around it, so that ticks and colours are defined */
        double d = *vmin != 0 ? fabs(*vmin) * 0.1 : 1;
        *vmin -= d;
        *vmax += d;
    }
    return POSEMB_OK;
}
