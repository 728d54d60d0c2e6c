/* The distances one head call sees, for families that tabulate their bias
 * by |i - j| (kerple, fire) instead of computing it per pair. */
#include <stdlib.h>

#include "family.h"

long pe_distance_span(const posemb_pe_head *h, long cap)
{
    long qlo = h->qpos[0], qhi = qlo, klo = h->kpos[0], khi = klo;
    for (int i = 1; i < h->nq; i++) {
        qlo = h->qpos[i] < qlo ? h->qpos[i] : qlo;
        qhi = h->qpos[i] > qhi ? h->qpos[i] : qhi;
    }
    for (int j = 1; j < h->nk; j++) {
        klo = h->kpos[j] < klo ? h->kpos[j] : klo;
        khi = h->kpos[j] > khi ? h->kpos[j] : khi;
    }
    long top = labs(khi - qlo) > labs(qhi - klo) ? labs(khi - qlo) : labs(qhi - klo);
    return top + 1 < cap ? top + 1 : cap;
}
