/* MPI for the subcommands that spread over processes (posemb train): started
 * only when a launcher (mpirun, srun) started this process, so that a plain
 * `posemb ...` never touches MPI. A posemb built without MPI and launched
 * as several ranks refuses to run rather than train N copies alone. */
#ifndef POSEMB_CLI_MPI_H
#define POSEMB_CLI_MPI_H

#include "posemb/comm.h"

/* Starts MPI for subcommand sub when launched by a launcher; takes_mpi: sub
 * runs across ranks (others refuse more than one). Returns 0, or the exit
 * status after saying why on stderr. */
int cli_mpi_start(int *argc, char ***argv, const char *sub, int takes_mpi);
/* The world's group, or NULL when this process runs alone. */
const posemb_comm *cli_mpi_comm(void);
/* Splits the world into groups of size consecutive ranks (0..size-1, ...)
 * and returns this rank's group; every rank must call it, once. NULL with
 * err set when MPI cannot (EIO), or for size 1 with err untouched. */
const posemb_comm *cli_mpi_group(int size, posemb_error *err);
/* Ends MPI with the subcommand's exit status: a failed rank aborts the whole
 * group (the others would wait for it forever). Returns rc. */
int cli_mpi_end(int rc);

#endif
