/* What the other layers, the CLI and the tests call of posemb/optim.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_TRAIN_OPTIM_INTERNAL_H
#define POSEMB_TRAIN_OPTIM_INTERNAL_H

#include "posemb/optim.h"

/* State for n floats with no weight decay (set o->decay[i] to enable it);
 * owned and failing as posemb_adamw_init. */
posemb_status posemb_adamw_init_n(posemb_adamw *o, size_t n, posemb_error *err);
/* Global L2 norm of g [n], accumulated in double. */
double posemb_grad_norm(const float *g, size_t n);
/* One update of w [n] from g [n] (clipped first); returns the gradient norm before clipping. */
double posemb_adamw_update(posemb_adamw *o, float *w, const float *g, const posemb_adamw_config *c);

#endif
