/* The real-data study's private pieces: study_data.c (configuration,
 * pretraining) and study_finetune.c (fine-tuning, evaluation, the worker). */
#ifndef POSEMB_STUDY_DATA_IMPL_H
#define POSEMB_STUDY_DATA_IMPL_H

#include <stddef.h>

#include "posemb/corpus.h"
#include "study/study.h"
#include "posemb/tokenizer.h"

/* SQuAD or SQuAD-locate (datasets.h: posemb_squad_ask_answers), the span tasks. */
int study_is_squad(const char *task);
int study_is_squad_locate(const char *task);
/* The text corpora data/names[i] (files or folders), each tokenized once
 * into out/cache, concatenated into all. */
posemb_status study_load_corpora(const posemb_study_config *c, const char *out, const posemb_tokenizer *tok,
                                 const char *desc, const char *const *names, int n, posemb_corpus *all,
                                 posemb_error *err);
/* The length study (study_length.c): its settings' check, its corpora's
 * tokens, its units (runs) on q. */
posemb_status study_length_check(const posemb_study_config *c, posemb_error *err);
posemb_status study_length_prepare(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status study_length_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                posemb_error *err);
/* Its tables and report (study_length_report.c). */
posemb_status study_length_tables(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status study_length_report(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status study_load_tokenizer(const posemb_study_config *c, posemb_tokenizer **tok, char *desc, size_t cap,
                                   posemb_error *err);
/* Pretrains PE p (resumed from its checkpoints), data parallel over group (NULL: alone). */
posemb_status study_pretrain(const posemb_study_config *c, const char *out, int p, const posemb_comm *group,
                             posemb_error *err);
/* The real-data study's work on q's units, each a PE (study_finetune.c). */
posemb_status study_data_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                              posemb_error *err);

#endif
