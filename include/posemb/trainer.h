/* Training runs: the loop, evaluation, logging and checkpoints that make a
 * killed run resumable with the same loss curve.
 *
 * A run folder holds checkpoint-STEP/ folders (config.json and
 * model.safetensors in HF's layout, optimizer.safetensors with AdamW's
 * moments, trainer_state.json with the step and the history), train_log.jsonl
 * (one line per logged step and per evaluation) and, at the end, the final
 * model (config.json + model.safetensors) at its top level. A checkpoint is
 * written under a temporary name and renamed when complete, so a kill at any
 * moment leaves the previous checkpoint intact. */
#ifndef POSEMB_TRAINER_H
#define POSEMB_TRAINER_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/comm.h"
#include "posemb/corpus.h"
#include "posemb/model.h"
#include "posemb/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_train_args {
    const char *out;  /* run folder (created) */
    long steps;       /* optimizer updates in the whole run (the schedule's length) */
    long stop_at;     /* stop (with a checkpoint) after this step; 0: run to the end */
    int batch, accum; /* sequences per micro-batch, micro-batches per update */
    float lr, weight_decay, clip;
    long warmup;
    uint64_t seed;
    long log_every, eval_every, save_every; /* 0: never (save: at the end only) */
    int eval_batches;
    int keep;     /* checkpoints kept (oldest removed) */
    int progress; /* 1: a progress bar (a terminal); 0: a line every log_every steps */
    /* Data parallel over a group (NULL: one process): each rank computes the
     * micro-batches micro = rank, rank + size, ... of every update (accum a
     * multiple of size), the gradients are summed in rank order, and every
     * rank takes the same AdamW step. Rank 0 alone reads the checkpoint it
     * resumes from (the others receive it) and writes checkpoints, the log
     * and the final model; the result equals one process's with the same
     * batch and accum, up to the order of the gradient sums. */
    const posemb_comm *comm;
} posemb_train_args;

/* Sensible defaults for a run of steps updates. */
POSEMB_API posemb_train_args posemb_train_defaults(const char *out, long steps);

typedef struct posemb_train_point {
    long step;
    double loss, lr, grad_norm;
} posemb_train_point;

typedef struct posemb_train_result {
    long step;         /* last step done */
    long resumed_from; /* 0, or the checkpoint step the run resumed from */
    double eval_loss, eval_accuracy;
    double tokens_per_s;
    posemb_train_point *history; /* [step] the loss of every step so far, resumed ones included */
    long n_history;
} posemb_train_result;

/* Fills the batch b and targets t of micro-batch micro (0 .. accum - 1) of
 * update step (0-based); what they point to stays valid until the next
 * call. Returns POSEMB_OK or a failure (with err) that ends the run. */
typedef posemb_status (*posemb_step_batch_fn)(void *ctx, long step, int micro, posemb_batch *b, posemb_targets *t,
                                              posemb_error *err);
/* One training loop, for every loop posemb has (posemb_train, the study's
 * pretraining, synthetic runs and fine-tuning) and loops of one's own: steps
 * first .. stop - 1 (0-based) of a schedule of steps updates, each zeroing
 * the gradients, running forward and loss on each micro-batch in train mode
 * (1/accum of the gradient each; micro-batch i of step s draws its dropout
 * masks from (seed, s * accum + i)), then AdamW with oc. A group (comm, NULL:
 * one process) computes micro-batches rank, rank + size, ... of each update,
 * sums gradients and loss in rank order, and takes the same update.
 *
 * After each update (step counted from 1 from here on) the hooks run, on
 * every rank, each when it is not NULL: on_step with the update's point;
 * evaluate at every multiple of eval_every (0: none) and at step == steps;
 * checkpoint at every multiple of save_every (0: none) and at step == stop.
 * A hook's failure ends the run with it. */
typedef struct posemb_train_loop {
    long first, stop, steps;
    int accum;
    uint64_t seed;
    const posemb_adamw_config *oc;
    const posemb_comm *comm;
    posemb_step_batch_fn next;
    long eval_every, save_every;
    void *ctx; /* passed to next and the hooks */
    posemb_status (*on_step)(void *ctx, const posemb_train_point *p, posemb_error *err);
    posemb_status (*evaluate)(void *ctx, posemb_model *m, long step, posemb_error *err);
    posemb_status (*checkpoint)(void *ctx, const posemb_model *m, const posemb_adamw *o, long step, posemb_error *err);
} posemb_train_loop;
/* Runs l on m with the optimizer state o (posemb_adamw_init'ed; resumed
 * state as the caller restored it). *last (may be NULL) receives the last
 * update's point, the failed one's too: a loss that is not finite fails
 * with POSEMB_EFORMAT ("step N: the loss is nan") before that update,
 * leaving the weights as they were. EINVAL for first > stop, stop > steps,
 * accum < 1 or a missing next; a failure of next, forward, loss or a hook
 * is returned as is. */
POSEMB_API posemb_status posemb_train_run(posemb_model *m, posemb_adamw *o, const posemb_train_loop *l,
                                          posemb_train_point *last, posemb_error *err);
/* Trains m on d. With resume, continues from the newest complete checkpoint
 * in args->out (if there is one). Stops with EFORMAT naming the step when
 * the loss is not finite, keeping the last good checkpoint; EINVAL for bad
 * args, ERANGE without training sequences, EIO for the run folder (or
 * another process training in it), ENOMEM. res is filled even on failure:
 * free its history with posemb_train_result_free either way. */
POSEMB_API posemb_status posemb_train(posemb_model *m, posemb_lm_data *d, const posemb_train_args *args, int resume,
                                      posemb_train_result *res, posemb_error *err);
POSEMB_API void posemb_train_result_free(posemb_train_result *res);

/* The newest complete checkpoint folder of a run, or 0 (path untouched). */
POSEMB_API long posemb_checkpoint_latest(const char *run, char *path, size_t cap);

/* Causal-LM loss of a decoder on tokens [n], in windows of T tokens at
 * positions 0..T-1 moved by stride (1 <= stride <= T): the first window
 * scores every prediction, each later one its last stride tokens only
 * (Hugging Face's sliding-window perplexity; stride = T: non-overlapping
 * windows, each scoring its T - 1 predictions), B windows per forward pass,
 * in eval and inference mode. *nll: the summed loss in nats over *count
 * scored tokens; perplexity = exp(*nll / *count). Tokens past the last full
 * window are not scored. EINVAL for the arguments, ERANGE for n < T, the
 * model's errors (a T past its PE's positions). */
POSEMB_API posemb_status posemb_lm_nll(posemb_model *m, const int32_t *tokens, long n, int T, int stride, int B,
                                       double *nll, long *count, posemb_error *err);

/* Checkpoints for training loops of one's own (the study's fine-tuning) in
 * the trainer's layout: run/checkpoint-STEP (STEP = o->step, run created)
 * with the model, AdamW's state and, when notes is not NULL, notes.json: the
 * caller's JSON as written (its own progress, read back byte for byte). The
 * keep newest are kept. */
POSEMB_API posemb_status posemb_checkpoint_save(const char *run, const posemb_model *m, const posemb_adamw *o,
                                                const char *notes, int keep, posemb_error *err);
/* Continues from run's newest complete checkpoint, if it has one: its
 * weights into m (same config), AdamW's moments and step into o (o->step 0
 * when there is none), its notes into *notes (malloc'ed, NULL when none). A
 * group (NULL: one process) takes its leader's; the others' notes are NULL.
 * EFORMAT/EIO name the file that failed. */
POSEMB_API posemb_status posemb_checkpoint_resume(const char *run, const posemb_comm *group, posemb_model *m,
                                                  posemb_adamw *o, char **notes, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
