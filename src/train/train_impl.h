/* The trainer's private pieces shared by trainer.c and checkpoint.c. */
#ifndef POSEMB_TRAIN_IMPL_H
#define POSEMB_TRAIN_IMPL_H

#include "posemb/trainer.h"
#include "train/trainer_internal.h"

typedef struct train_state {
    long step; /* updates done */
    uint64_t seed;
    posemb_train_point *history;
    long n_history, cap_history;
    const char *notes; /* NULL, or the caller's JSON, saved as notes.json (posemb_checkpoint_save) */
} train_state;

/* Appends a point; -1 when out of memory. */
int train_history_add(train_state *s, posemb_train_point p);

posemb_status train_checkpoint_save(const char *run, const posemb_model *m, const posemb_adamw *o, const train_state *s,
                                    int keep, posemb_error *err);
posemb_status train_checkpoint_load(const char *dir, posemb_model *m, posemb_adamw *o, train_state *s,
                                    posemb_error *err);

/* The group (NULL: one process) takes its leader's weights and AdamW state. */
posemb_status train_share_weights(const posemb_comm *c, posemb_model *m, posemb_adamw *o, posemb_error *err);

#endif
