/* What the other layers, the CLI and the tests call of posemb/tensor.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_CORE_TENSOR_INTERNAL_H
#define POSEMB_CORE_TENSOR_INTERNAL_H

#include "posemb/tensor.h"

/* Sets t's shape and allocates zeroed data from a, which owns it. what names
 * the tensor in the error message: EINVAL for ndim outside 0..POSEMB_MAX_DIMS,
 * ERANGE for a negative or overflowing shape, ENOMEM (t->data NULL). */
posemb_status posemb_tensor_alloc(posemb_tensor *t, posemb_arena *a, int ndim, const int64_t *shape, const char *what,
                                  posemb_error *err);
/* Writes the shape as "[2, 3]" into buf. */
void posemb_shape_str(int ndim, const int64_t *shape, char *buf, int size);

#endif
