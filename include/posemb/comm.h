/* A group of processes that train one model together (data parallelism).
 *
 * The library reaches other processes through this table only, so it has no
 * MPI dependency of its own: the posemb program fills it from MPI when it is
 * built with MPI and launched by mpirun or srun (src/cli/cli_mpi.c); another
 * program may fill it from whatever it runs on. NULL, or size 1, is one
 * process. A rank that fails must end the whole group (MPI_Abort): the
 * others would wait for it in their next call. */
#ifndef POSEMB_COMM_H
#define POSEMB_COMM_H

#include "posemb/api.h"

#include <stddef.h>

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_comm {
    int rank, size; /* this process, 0 .. size - 1; the group's size */
    void *ctx;      /* the implementation's own state, passed back to each call */
    /* x [n] replaced by its sum over the ranks, taken in rank order
     * ((x_0 + x_1) + x_2 ...), with the same bits on every rank whatever the
     * timing: ranks that start equal stay equal. */
    posemb_status (*sum_f32)(void *ctx, float *x, size_t n, posemb_error *err);
    posemb_status (*sum_f64)(void *ctx, double *x, size_t n, posemb_error *err);
    /* buf [n bytes] of rank 0 copied to every rank; also a barrier: no rank
     * returns before rank 0 has called it. */
    posemb_status (*bcast)(void *ctx, void *buf, size_t n, posemb_error *err);
} posemb_comm;

/* 1 when c stands for more than one process. */
static inline int posemb_comm_active(const posemb_comm *c) { return c && c->size > 1; }
/* 1 on the rank that writes files and prints progress (rank 0, or the only process). */
static inline int posemb_comm_leader(const posemb_comm *c) { return !c || c->rank == 0; }

#ifdef __cplusplus
}
#endif
#endif
