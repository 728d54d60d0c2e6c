/* AdamW with decoupled weight decay (Loshchilov and Hutter 2019), as
 * torch.optim.AdamW computes it, over the model's flat parameter block;
 * Hugging Face's linear warm-up and decay schedule; clipping by global norm. */
#ifndef POSEMB_OPTIM_H
#define POSEMB_OPTIM_H

#include "posemb/api.h"

#include <stddef.h>

#include "posemb/error.h"
#include "posemb/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_adamw_config {
    float lr; /* peak learning rate */
    float beta1, beta2, eps;
    float weight_decay; /* applied to tensors whose posemb_param.decay is set (not biases, LayerNorm) */
    float clip;         /* max global gradient norm; <= 0: no clipping */
    long warmup, total; /* linear warm-up over warmup steps, then linear decay to 0 at total */
} posemb_adamw_config;

/* HF's defaults: beta (0.9, 0.999), eps 1e-8 (torch), weight decay 0.01, clip 1. */
POSEMB_API posemb_adamw_config posemb_adamw_defaults(float lr, long warmup, long total);

typedef struct posemb_adamw {
    size_t n;
    float *m, *v;         /* first and second moments, the parameter block's layout */
    unsigned char *decay; /* per float: 1 where weight decay applies */
    long step;            /* updates done */
} posemb_adamw;

/* Zeroed moments for model's parameter block, owned by o (posemb_adamw_free);
 * ENOMEM leaves o empty. */
POSEMB_API posemb_status posemb_adamw_init(posemb_adamw *o, const posemb_model *model, posemb_error *err);
POSEMB_API void posemb_adamw_free(posemb_adamw *o);

/* The learning rate of update number step (0-based): HF's get_linear_schedule_with_warmup. */
POSEMB_API float posemb_lr_at(const posemb_adamw_config *c, long step);

/* One AdamW update of the model's parameters (torch.optim.AdamW's), at the learning rate posemb_lr_at gives o's
 * count of updates so far (0-based), the gradients first scaled to global norm c->clip when c->clip > 0 and their
 * norm exceeds it (torch's clip_grad_norm_); then the PE's derived tables refreshed. Returns the gradients' global
 * norm before clipping. Cannot fail: o was made for this model by posemb_adamw_init. */
POSEMB_API double posemb_adamw_step(posemb_adamw *o, posemb_model *model, const posemb_adamw_config *c);

#ifdef __cplusplus
}
#endif
#endif
