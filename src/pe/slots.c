#include <stdlib.h>
#include <string.h>

#include "family.h"

posemb_status pe_slots_init(pe_slots *s, int n, size_t size, posemb_error *err)
{
    s->n = n;
    s->size = size;
    s->data = calloc((size_t)n * size + 1, sizeof(float));
    if (!s->data) return posemb_fail(err, POSEMB_ENOMEM, "PE: cannot allocate %d x %zu floats of scratch", n, size);
    return POSEMB_OK;
}

void pe_slots_fold(pe_slots *s, float *dst)
{
    if (!s->data) return;
    for (int k = 0; k < s->n; k++) {
        float *src = pe_slot(s, k);
        for (size_t i = 0; i < s->size; i++) dst[i] += src[i];
        memset(src, 0, s->size * sizeof *src);
    }
}

void pe_slots_free(pe_slots *s)
{
    free(s->data);
    s->data = NULL;
}
