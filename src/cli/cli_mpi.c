/* The posemb_comm of the posemb program: MPI_COMM_WORLD. Sums use a
 * non-commutative MPI operation, which MPI applies in rank order and whose
 * result Open MPI computes once and hands to every rank (reduce, then
 * broadcast): the same bits everywhere, whatever the timing. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_mpi.h"
#include "commands.h"

/* How many processes a launcher started, from its environment: mpirun's
 * OMPI_COMM_WORLD_SIZE, PMI's PMI_SIZE (MPICH, srun --mpi=pmi2); -1 for a
 * PMIx launch (srun --mpi=pmix), which names no size; 0 for none. */
static int launched_size(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v) v = getenv("PMI_SIZE");
    if (v && atoi(v) > 0) return atoi(v);
    return getenv("PMIX_RANK") ? -1 : 0;
}

#ifdef POSEMB_HAVE_MPI
#include <mpi.h>

#define CHUNK (1 << 26) /* elements per MPI call: counts are ints */

static posemb_comm world, group; /* ctx: their MPI_Comm */
static MPI_Comm world_mc, group_mc;
static int started;
static MPI_Op sum_f32_op, sum_f64_op;

/* inout = in + inout, in from the lower rank: MPI's order for a non-commutative op. */
static void add_f32(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const float *a = in;
    float *b = inout;
    for (int i = 0; i < *len; i++) b[i] = a[i] + b[i];
}

static void add_f64(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) b[i] = a[i] + b[i];
}

static posemb_status failed(int rc, const char *what, posemb_error *err)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return posemb_fail(err, POSEMB_EIO, "MPI %s: %s", what, msg);
}

static posemb_status sum(void *ctx, void *x, size_t n, size_t size, MPI_Datatype type, MPI_Op op, posemb_error *err)
{
    for (size_t i = 0; i < n; i += CHUNK) {
        int count = n - i < CHUNK ? (int)(n - i) : CHUNK;
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)x + i * size, count, type, op, *(MPI_Comm *)ctx);
        if (rc != MPI_SUCCESS) return failed(rc, "allreduce", err);
    }
    return POSEMB_OK;
}

static posemb_status mpi_sum_f32(void *ctx, float *x, size_t n, posemb_error *err)
{
    return sum(ctx, x, n, sizeof *x, MPI_FLOAT, sum_f32_op, err);
}

static posemb_status mpi_sum_f64(void *ctx, double *x, size_t n, posemb_error *err)
{
    return sum(ctx, x, n, sizeof *x, MPI_DOUBLE, sum_f64_op, err);
}

static posemb_status mpi_bcast(void *ctx, void *buf, size_t n, posemb_error *err)
{
    size_t i = 0;
    do { /* n = 0 still makes one call: the barrier comm.h promises */
        int count = n - i < CHUNK ? (int)(n - i) : CHUNK;
        int rc = MPI_Bcast((char *)buf + i, count, MPI_BYTE, 0, *(MPI_Comm *)ctx);
        if (rc != MPI_SUCCESS) return failed(rc, "broadcast", err);
    } while ((i += CHUNK) < n);
    return POSEMB_OK;
}

int cli_mpi_start(int *argc, char ***argv, const char *sub, int takes_mpi)
{
    if (!launched_size()) return 0;
    int provided; /* the study's queue answers from a thread of rank 0 (cli_study_mpi.c) */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "posemb %s: MPI_Init failed\n", sub);
        return 1;
    }
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* errors come back as posemb_status */
    MPI_Op_create(add_f32, 0, &sum_f32_op);
    MPI_Op_create(add_f64, 0, &sum_f64_op);
    world.sum_f32 = mpi_sum_f32;
    world.sum_f64 = mpi_sum_f64;
    world.bcast = mpi_bcast;
    world_mc = MPI_COMM_WORLD;
    world.ctx = &world_mc;
    group_mc = MPI_COMM_NULL;
    if (world.size > 1 && !takes_mpi) {
        if (world.rank == 0)
            fprintf(stderr, "posemb %s: runs as one process; launch it without mpirun or srun (%d ranks)\n", sub,
                    world.size);
        return cli_mpi_end(EXIT_USAGE);
    }
    return 0;
}

const posemb_comm *cli_mpi_comm(void) { return started && world.size > 1 ? &world : NULL; }

const posemb_comm *cli_mpi_group(int size, posemb_error *err)
{
    if (!started || size <= 1) return NULL;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, world.rank / size, world.rank, &group_mc);
    if (rc != MPI_SUCCESS) {
        failed(rc, "split into groups", err);
        return NULL;
    }
    MPI_Comm_set_errhandler(group_mc, MPI_ERRORS_RETURN);
    group = world;
    group.ctx = &group_mc;
    MPI_Comm_rank(group_mc, &group.rank);
    MPI_Comm_size(group_mc, &group.size);
    return &group;
}

int cli_mpi_end(int rc)
{
    if (!started) return rc;
    started = 0;
    if (rc && world.size > 1) MPI_Abort(MPI_COMM_WORLD, rc);
    if (group_mc != MPI_COMM_NULL) MPI_Comm_free(&group_mc);
    MPI_Op_free(&sum_f32_op);
    MPI_Op_free(&sum_f64_op);
    MPI_Finalize();
    return rc;
}

#else /* built without MPI */

int cli_mpi_start(int *argc, char ***argv, const char *sub, int takes_mpi)
{
    int n = launched_size();
    if (n == 0 || n == 1) return 0;
    fprintf(stderr,
            "posemb %s: launched by mpirun or srun, but this posemb was built without MPI (install "
            "libopenmpi-dev, as scripts/install-deps does, and rebuild); each rank would run alone\n",
            sub);
    return EXIT_USAGE;
}

const posemb_comm *cli_mpi_comm(void) { return NULL; }

const posemb_comm *cli_mpi_group(int size, posemb_error *err) { return NULL; }

int cli_mpi_end(int rc) { return rc; }

#endif
