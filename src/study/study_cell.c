/* Values over seeds: study_cell.h. */
#include <math.h>
#include <stdio.h>

#include "eval/stats.h"
#include "study_cell.h"

void cell_put(cell *c, double v)
{
    if (c->n < 16 && isfinite(v)) c->v[c->n++] = v;
}

double cell_mean(const cell *c)
{
    double s = 0;
    for (int i = 0; i < c->n; i++) s += c->v[i];
    return c->n ? s / c->n : NAN;
}

double cell_std(const cell *c)
{
    double m = cell_mean(c), s = 0;
    for (int i = 0; i < c->n; i++) s += (c->v[i] - m) * (c->v[i] - m);
    return c->n > 1 ? sqrt(s / (c->n - 1)) : 0;
}

const char *cell_star(const cell *a, const cell *b)
{
    if (!b || a == b || a->n < 2 || b->n < 2) return "";
    double p = posemb_welch_ttest(a->v, a->n, b->v, b->n).p;
    return !isnan(p) && p < 0.05 ? "*" : "";
}

void cell_ppl_text(const cell *loss, const cell *ref, int windowed, char *buf, size_t cap)
{
    cell ppl = {0};
    for (int i = 0; i < loss->n; i++) cell_put(&ppl, exp(loss->v[i]));
    if (!ppl.n) snprintf(buf, cap, "-");
    else if (ppl.n == 1) snprintf(buf, cap, "%.3f%s", cell_mean(&ppl), windowed ? " w" : ""); /* one seed so far */
    else
        snprintf(buf, cap, "%.3f +- %.3f%s%s", cell_mean(&ppl), cell_std(&ppl), cell_star(loss, ref),
                 windowed ? " w" : "");
}
