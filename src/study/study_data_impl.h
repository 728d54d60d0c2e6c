/* The real-data study's private pieces: study_data.c (configuration,
 * pretraining) and study_finetune.c (fine-tuning, evaluation, the worker). */
#ifndef POSEMB_STUDY_DATA_IMPL_H
#define POSEMB_STUDY_DATA_IMPL_H

#include <stddef.h>

#include "posemb/study.h"
#include "posemb/tokenizer.h"

int study_is_squad(const char *task);
posemb_status study_load_tokenizer(const posemb_study_config *c, posemb_tokenizer **tok, char *desc, size_t cap,
                                   posemb_error *err);
/* Pretrains PE p (resumed from its checkpoints), data parallel over group (NULL: alone). */
posemb_status study_pretrain(const posemb_study_config *c, const char *out, int p, const posemb_comm *group,
                             posemb_error *err);
/* The real-data study's work on q's units, each a PE (study_finetune.c). */
posemb_status study_data_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                              posemb_error *err);

#endif
