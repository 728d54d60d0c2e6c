/* The study's workers: a queue of units (runs, or PEs) that local workers
 * (fork) or an MPI group take one at a time. The part of the study that
 * does a unit's work is passed in (study_work_fn): the pool calls no part
 * of the study by name. */
#ifndef POSEMB_STUDY_POOL_H
#define POSEMB_STUDY_POOL_H

#include "study/study.h"

/* The next unit of q for this process, -1 when none is left: the group's
 * rank 0 asks q and hands it to the others. */
posemb_status study_next_unit(const posemb_study_queue *q, int *k, posemb_error *err);

/* Does the units q hands out until none is left (posemb_study_work's shape). */
typedef posemb_status (*study_work_fn)(const posemb_study_config *c, const char *out, const posemb_study_queue *q,
                                       posemb_error *err);
/* Runs work on the n units of pending with c->jobs workers (forked, each
 * taking every jobs-th unit; in this process for one), results appended to
 * out/results.jsonl under a lock; waits for them all. EFORMAT when a
 * worker failed (its message printed), ENOMEM when the workers cannot be
 * counted. */
posemb_status study_run_workers(const posemb_study_config *c, const char *out, const int *pending, int n,
                                study_work_fn work, posemb_error *err);

#endif
