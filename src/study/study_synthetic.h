/* The synthetic study (study_synthetic.c): its runs are (PE, task, seed) in
 * study_run_index order. */
#ifndef POSEMB_STUDY_SYNTHETIC_H
#define POSEMB_STUDY_SYNTHETIC_H

#include "study/study.h"

/* Trains, evaluates and records the runs q hands out until none is left;
 * the first seed's model of each task kept for the analysis (c->analyze). */
posemb_status study_synthetic_work(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                   posemb_error *err);

#endif
