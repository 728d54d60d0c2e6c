/* `mpirun -np N posemb study`: the study's units handed to the ranks as
 * they free up, rank 0 writing results.jsonl, the tables and the report. */
#ifndef POSEMB_CLI_STUDY_MPI_H
#define POSEMB_CLI_STUDY_MPI_H

#include "posemb/comm.h"
#include "study/study.h"

/* Runs study c in out over group g (every rank calls it). */
posemb_status cli_study_mpi(const posemb_study_config *c, const char *out, const posemb_comm *g, posemb_error *err);

#endif
