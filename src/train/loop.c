/* The one training loop (posemb_train_run): the updates of a schedule and,
 * after each, the caller's hooks at their cadence. posemb_train, the study's
 * pretraining (through posemb_train), its synthetic runs and its fine-tuning
 * all run here. */
#include "posemb/trainer.h"
#include "train/trainer_internal.h"

/* The micro-batch source of one update: the loop's, told the step. */
typedef struct step_source {
    const posemb_train_loop *l;
    long step;
} step_source;

static posemb_status next_micro(void *ctx, int micro, posemb_batch *b, posemb_targets *t, posemb_error *err)
{
    const step_source *s = ctx;
    return s->l->next(s->l->ctx, s->step, micro, b, t, err);
}

/* The hooks due after update step (from 1). */
static posemb_status after_update(const posemb_train_loop *l, posemb_model *m, const posemb_adamw *o,
                                  const posemb_train_point *p, posemb_error *err)
{
    long step = p->step;
    posemb_status st = l->on_step ? l->on_step(l->ctx, p, err) : POSEMB_OK;
    if (!st && l->evaluate && ((l->eval_every && step % l->eval_every == 0) || step == l->steps))
        st = l->evaluate(l->ctx, m, step, err);
    if (!st && l->checkpoint && ((l->save_every && step % l->save_every == 0) || step == l->stop))
        st = l->checkpoint(l->ctx, m, o, step, err);
    return st;
}

posemb_status posemb_train_run(posemb_model *m, posemb_adamw *o, const posemb_train_loop *l, posemb_train_point *last,
                               posemb_error *err)
{
    if (l->first < 0 || l->first > l->stop || l->stop > l->steps || l->accum < 1 || !l->next || !l->oc)
        return posemb_fail(err, POSEMB_EINVAL,
                           "train: steps %ld to %ld of %ld with accum %d, a batch source and AdamW's settings needed",
                           l->first, l->stop, l->steps, l->accum);
    posemb_status st = POSEMB_OK;
    for (long step = l->first; !st && step < l->stop; step++) {
        step_source src = {l, step};
        posemb_train_step_args s = {.accum = l->accum,
                                    .seed = l->seed,
                                    .key = (uint64_t)(step * l->accum),
                                    .next = next_micro,
                                    .ctx = &src,
                                    .comm = l->comm};
        posemb_train_point p = {.step = step + 1, .lr = posemb_lr_at(l->oc, step)};
        st = posemb_train_step(m, o, l->oc, &s, step, &p.loss, &p.grad_norm, err);
        if (last) *last = p;
        if (!st) st = after_update(l, m, o, &p, err);
    }
    return st;
}
