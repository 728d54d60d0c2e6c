#include "posemb/tensor.h"
#include "core/arena_internal.h"
#include "core/tensor_internal.h"

#include <stdio.h>
#include <string.h>

int64_t posemb_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] != 0 && n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

posemb_status posemb_tensor_alloc(posemb_tensor *t, posemb_arena *a, int ndim, const int64_t *shape, const char *what,
                                  posemb_error *err)
{
    if (ndim < 0 || ndim > POSEMB_MAX_DIMS)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %d dimensions (at most %d)", what, ndim, POSEMB_MAX_DIMS);
    int64_t n = posemb_shape_numel(ndim, shape);
    if (n < 0) return posemb_fail(err, POSEMB_ERANGE, "%s: shape is negative or overflows", what);
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->data = posemb_arena_floats(a, (size_t)n);
    if (!t->data) return posemb_fail(err, POSEMB_ENOMEM, "%s: cannot allocate %lld floats", what, (long long)n);
    return POSEMB_OK;
}

void posemb_shape_str(int ndim, const int64_t *shape, char *buf, int size)
{
    int off = snprintf(buf, (size_t)size, "[");
    for (int i = 0; i < ndim && off < size; i++)
        off += snprintf(buf + off, (size_t)(size - off), "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (off < size) snprintf(buf + off, (size_t)(size - off), "]");
}
