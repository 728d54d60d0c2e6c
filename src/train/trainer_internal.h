/* What the other layers, the CLI and the tests call of posemb/trainer.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_TRAIN_TRAINER_INTERNAL_H
#define POSEMB_TRAIN_TRAINER_INTERNAL_H

#include "posemb/trainer.h"

/* Fills the batch b and targets t of micro-batch micro (0 .. accum - 1) of
 * an update; what they point to stays valid until the next call. Returns
 * POSEMB_OK or a failure (with err) that ends the step. */
typedef posemb_status (*posemb_micro_batch_fn)(void *ctx, int micro, posemb_batch *b, posemb_targets *t,
                                               posemb_error *err);

typedef struct posemb_train_step_args {
    int accum;          /* micro-batches per update, each 1/accum of the gradient */
    uint64_t seed, key; /* dropout: micro-batch i's masks come from (seed, key + i) */
    posemb_micro_batch_fn next;
    void *ctx;
    const posemb_comm *comm; /* NULL, or each rank's share of the micro-batches (as posemb_train_args) */
} posemb_train_step_args;

/* One optimizer update (posemb_train_run's; the tests' loops), step (0-based) of the schedule in oc: zeroes the
 * gradients, runs forward and loss on each micro-batch in train mode (with
 * a group, this rank's micro-batches, the gradients and loss then summed
 * over the group), then AdamW. *loss is the mean loss; *grad_norm (may be NULL) the gradient norm
 * before clipping. A loss that is not finite fails with POSEMB_EFORMAT
 * ("step N: the loss is nan") before the update, leaving the weights as they
 * were; a failure of next, forward or loss is returned as is. */
posemb_status posemb_train_step(posemb_model *m, posemb_adamw *o, const posemb_adamw_config *oc,
                                const posemb_train_step_args *s, long step, double *loss, double *grad_norm,
                                posemb_error *err);

/* The loss at one context length of a decoder checkpoint (a model folder):
 * length asked for; context and stride of the windows used. */
typedef struct posemb_lm_length {
    int length, context, stride; /* context < length: sliding windows (the PE's table ends first) */
    double nll;                  /* summed loss in nats over count scored tokens */
    long count;
} posemb_lm_length;

/* Whether args->comm's ranks can share args' batches: accum must be a
 * multiple of the ranks (each computes whole micro-batches). EINVAL naming
 * the nearest split of the same global batch that they can share. posemb_train
 * checks it too; a program calls it first to refuse before it writes anything. */
posemb_status posemb_train_check_group(const posemb_train_args *args, posemb_error *err);
/* Removes run's checkpoints, and run once empty (a finished run's). */
void posemb_checkpoint_remove(const char *run);
/* posemb_lm_nll of the checkpoint in dir built with cfg (a causal-LM head;
 * its PE may differ from the checkpoint's, e.g. a RoPE scaling applied
 * without retraining) at context L: whole windows of L when the model takes
 * L positions (max_position raised to L for PEs without a table of
 * positions), else windows of max_position sliding by half of it, each
 * scoring its second half. B windows per pass (0: about 16384 tokens, fewer
 * where their attention probabilities would pass 64 MiB).
 * EINVAL when the checkpoint lacks tensors the model needs, the errors of
 * posemb_model_init_from and posemb_lm_nll. */
posemb_status posemb_lm_eval_length(const char *dir, const posemb_config *cfg, const int32_t *tokens, long n, int L,
                                    int B, posemb_lm_length *out, posemb_error *err);

#endif
