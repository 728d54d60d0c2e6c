/* Kazemnejad et al. 2023's aggregate over length-generalisation tasks: in
 * each (task, seed) the PEs are ranked by their score, and a PE's mean
 * reciprocal rank over those units is its place overall (1 when it is always
 * first, 1/n when always last of n). A unit where every PE ties (all score
 * 0) orders no PE but pulls every mean toward (1 + ... + 1/n) / n, so the
 * units that decide something are counted apart. */
#include <math.h>

#include "study_impl.h"

/* rr[p] += PE p's reciprocal rank among v[0..n) (higher is better). Tied PEs
 * share the mean of the reciprocal ranks they span, so a unit always adds
 * 1 + 1/2 + ... + 1/n in all, whatever its ties. */
static void add_reciprocal_ranks(const double *v, int n, double *rr)
{
    for (int p = 0; p < n; p++) {
        int above = 0, tied = 0;
        for (int q = 0; q < n; q++) {
            above += v[q] > v[p];
            tied += v[q] == v[p];
        }
        double sum = 0;
        for (int r = above + 1; r <= above + tied; r++) sum += 1.0 / r;
        rr[p] += sum / tied;
    }
}

int study_mrr(const double *v, int n_units, int n_pes, double *mrr, int *decided)
{
    int used = 0;
    *decided = 0;
    for (int p = 0; p < n_pes; p++) mrr[p] = 0;
    for (int u = 0; u < n_units; u++) {
        const double *row = v + (size_t)u * n_pes;
        int complete = 1, all_tie = 1;
        for (int p = 0; p < n_pes; p++) {
            complete &= !isnan(row[p]);
            all_tie &= row[p] == row[0];
        }
        if (!complete) continue; /* a PE without this run cannot be ranked in it */
        add_reciprocal_ranks(row, n_pes, mrr);
        used++;
        *decided += !all_tie;
    }
    for (int p = 0; p < n_pes; p++) mrr[p] = used ? mrr[p] / used : NAN;
    return used;
}
