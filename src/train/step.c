/* One optimizer update, the same for every training loop posemb has (the
 * language-model trainer, the study's synthetic runs and its fine-tuning). */
#include <math.h>
#include <string.h>

#include "posemb/trainer.h"
#include "train/trainer_internal.h"

/* The group's gradient and loss: sums of each rank's share. */
static posemb_status reduce(const posemb_comm *c, posemb_model *m, double *loss, posemb_error *err)
{
    posemb_status st = c->sum_f32(c->ctx, posemb_model_grads(m), posemb_model_n_floats(m), err);
    return st ? st : c->sum_f64(c->ctx, loss, 1, err);
}

posemb_status posemb_train_step(posemb_model *m, posemb_adamw *o, const posemb_adamw_config *oc,
                                const posemb_train_step_args *s, long step, double *loss, double *grad_norm,
                                posemb_error *err)
{
    int group = posemb_comm_active(s->comm), first = group ? s->comm->rank : 0, every = group ? s->comm->size : 1;
    posemb_model_zero_grad(m);
    *loss = 0.0;
    for (int micro = first; micro < s->accum; micro += every) {
        posemb_batch b;
        posemb_targets t;
        posemb_loss l;
        memset(&b, 0, sizeof b); /* a callback that fills fields one by one leaves the others NULL */
        memset(&t, 0, sizeof t);
        posemb_status st = s->next(s->ctx, micro, &b, &t, err);
        if (st) return st;
        posemb_model_set_train(m, 1, s->seed, s->key + (uint64_t)micro);
        st = posemb_model_forward(m, &b, err);
        if (!st) st = posemb_model_loss(m, &t, 1.0f / (float)s->accum, &l, err);
        if (st) return st;
        *loss += l.loss / s->accum;
    }
    posemb_status st = group ? reduce(s->comm, m, loss, err) : POSEMB_OK;
    if (st) return st;
    if (!isfinite(*loss)) return posemb_fail(err, POSEMB_EFORMAT, "step %ld: the loss is %g", step + 1, *loss);
    double norm = posemb_adamw_step(o, m, oc);
    if (grad_norm) *grad_norm = norm;
    return POSEMB_OK;
}
