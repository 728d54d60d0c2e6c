/* A tensor: a shape and contiguous row-major float32 data. The data belongs
 * to whoever allocated it (usually an arena); the struct is a plain view. */
#ifndef POSEMB_TENSOR_H
#define POSEMB_TENSOR_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/arena.h"
#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSEMB_MAX_DIMS 8

typedef struct posemb_tensor {
    int ndim; /* 0 for a scalar */
    int64_t shape[POSEMB_MAX_DIMS];
    float *data;
} posemb_tensor;

/* Product of the shape (1 for a scalar), or -1 if it overflows int64 or a
 * dimension is negative. */
POSEMB_API int64_t posemb_shape_numel(int ndim, const int64_t *shape);
static inline int64_t posemb_tensor_numel(const posemb_tensor *t) { return posemb_shape_numel(t->ndim, t->shape); }

#ifdef __cplusplus
}
#endif
#endif
