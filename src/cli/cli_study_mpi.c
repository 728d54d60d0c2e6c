/* A study over MPI ranks: a work queue on rank 0. Rank 0 prepares the study
 * (folders, the corpora's cache) and lists its pending units; a thread of
 * its own then answers the other workers, each asking for its next unit when
 * it is free and sending each finished run's lines, which the thread appends
 * to results.jsonl. Rank 0's own worker takes units from the same list
 * without MPI. The thread polls (1 ms sleeps) rather than block in MPI, whose
 * blocking calls spin on a core the worker needs.
 *
 * A worker is one rank, or with ranks_per_run N a group of N consecutive
 * ranks that trains each of its units data parallel; the group's first rank
 * talks to the queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_mpi.h"
#include "cli_study_mpi.h"

#ifdef POSEMB_HAVE_MPI
#include <mpi.h>
#include <pthread.h>
#include <time.h>

enum { TAG_NEXT = 1, TAG_UNIT, TAG_LINES, TAG_ACK };

/* Rank 0's list of units and its results file, shared by its thread and its worker. */
typedef struct coordinator {
    const char *out;
    const int *pending;
    int n, at;
    int workers; /* rank 0's own and the other groups' first ranks */
    pthread_mutex_t lock;
} coordinator;

static int take(coordinator *co)
{
    pthread_mutex_lock(&co->lock);
    int k = co->at < co->n ? co->pending[co->at++] : -1;
    pthread_mutex_unlock(&co->lock);
    return k;
}

static posemb_status put(coordinator *co, const char *lines, posemb_error *err)
{
    pthread_mutex_lock(&co->lock);
    posemb_status st = posemb_study_append(co->out, lines, err);
    pthread_mutex_unlock(&co->lock);
    return st;
}

/* The queue cannot go on (a message lost, no memory): the whole job ends,
 * the recorded runs kept for the next start. */
static void give_up(const char *why)
{
    fprintf(stderr, "posemb study: %s; the recorded runs are kept, run the study again to continue\n", why);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) give_up(what);
}

/* Answers one message from rank src; returns 1 when it told src that no unit is left. */
static int answer(coordinator *co, const MPI_Status *probe)
{
    int src = probe->MPI_SOURCE;
    if (probe->MPI_TAG == TAG_NEXT) {
        int ask, k;
        check(MPI_Recv(&ask, 1, MPI_INT, src, TAG_NEXT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI receive failed");
        k = take(co);
        check(MPI_Send(&k, 1, MPI_INT, src, TAG_UNIT, MPI_COMM_WORLD), "MPI send failed");
        return k < 0;
    }
    int len = 0, ok;
    MPI_Get_count(probe, MPI_CHAR, &len);
    char *lines = malloc((size_t)len + 1);
    posemb_error err;
    if (!lines) give_up("out of memory for a rank's results");
    check(MPI_Recv(lines, len, MPI_CHAR, src, TAG_LINES, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI receive failed");
    lines[len] = '\0';
    ok = !put(co, lines, &err);
    if (!ok) fprintf(stderr, "posemb study: rank %d's results: %s\n", src, err.msg);
    check(MPI_Send(&ok, 1, MPI_INT, src, TAG_ACK, MPI_COMM_WORLD), "MPI send failed");
    free(lines);
    return 0;
}

/* Rank 0's thread: serves until every other worker has been told none are left. */
static void *serve(void *arg)
{
    coordinator *co = arg;
    for (int finished = 0; finished < co->workers - 1;) {
        MPI_Status probe;
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &probe);
        if (flag) finished += answer(co, &probe);
        else nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    return NULL;
}

/* Rank 0's own worker failed: end the job now where MPI allows a call beside
 * the serving thread's; else empty the list, so that the others stop after
 * their current unit. */
static void stop_early(coordinator *co, const char *why)
{
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided >= MPI_THREAD_MULTIPLE) give_up(why);
    pthread_mutex_lock(&co->lock);
    co->at = co->n;
    pthread_mutex_unlock(&co->lock);
}

static int leader_next(void *ctx) { return take(ctx); }

static posemb_status leader_append(void *ctx, const char *lines, posemb_error *err) { return put(ctx, lines, err); }

static int remote_next(void *ctx)
{
    int ask = 0, k = -1;
    check(MPI_Send(&ask, 1, MPI_INT, 0, TAG_NEXT, MPI_COMM_WORLD), "MPI send failed");
    check(MPI_Recv(&k, 1, MPI_INT, 0, TAG_UNIT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI receive failed");
    return k;
}

static posemb_status remote_append(void *ctx, const char *lines, posemb_error *err)
{
    int ok = 0;
    check(MPI_Send(lines, (int)strlen(lines), MPI_CHAR, 0, TAG_LINES, MPI_COMM_WORLD), "MPI send failed");
    check(MPI_Recv(&ok, 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI receive failed");
    return ok ? POSEMB_OK : posemb_fail(err, POSEMB_EIO, "rank 0 could not append this rank's results (see its error)");
}

/* Rank 0: prepare, list the pending units, serve them while working on them too (in group). */
static posemb_status lead(const posemb_study_config *c, const char *out, const posemb_comm *g, const posemb_comm *group,
                          posemb_error *err)
{
    coordinator co = {.out = out, .workers = g->size / c->ranks_per_run};
    int *pending = malloc((size_t)posemb_study_n_units(c) * sizeof *pending), ready = 1;
    posemb_status st = pending ? posemb_study_prepare(c, out, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = posemb_study_pending(c, out, pending, &co.n, err);
    co.pending = pending;
    if (!st)
        fprintf(stderr, "posemb study: %d runs (%d PEs x %d tasks x %d seeds) in %s; %d unit(s) to go on %d ranks%s\n",
                c->n_pes * c->n_tasks * c->n_seeds, c->n_pes, c->n_tasks, c->n_seeds, out, co.n, g->size,
                group ? ", each run data parallel over a group of ranks_per_run of them" : "");
    if (!st) st = g->bcast(g->ctx, &ready, sizeof ready, err); /* the others start once the cache exists */
    pthread_t thread;
    pthread_mutex_init(&co.lock, NULL);
    int serving = !st && !pthread_create(&thread, NULL, serve, &co);
    if (!st && !serving) st = posemb_fail(err, POSEMB_ENOMEM, "study: cannot start the queue's thread");
    posemb_study_queue q = {&co, leader_next, leader_append, group};
    if (!st) st = posemb_study_work(c, out, &q, err);
    if (st && serving) stop_early(&co, err->msg);
    if (serving) pthread_join(thread, NULL);
    pthread_mutex_destroy(&co.lock);
    free(pending);
    return st ? st : posemb_study_finish(c, out, err);
}

posemb_status cli_study_mpi(const posemb_study_config *c, const char *out, const posemb_comm *g, posemb_error *err)
{
    int provided = 0, n = c->ranks_per_run;
    MPI_Query_thread(&provided);
    if (provided < (n > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED)) /* groups: rank 0's worker sums too */
        return posemb_fail(err, POSEMB_EINVAL, "study: this MPI cannot serve the queue from a thread");
    if (n < 1 || g->size % n)
        return posemb_fail(err, POSEMB_EINVAL, "study: ranks_per_run %d does not divide the %d ranks into groups", n,
                           g->size);
    const posemb_comm *group = cli_mpi_group(n, err);
    if (n > 1 && !group) return POSEMB_EIO;
    if (g->rank == 0) return lead(c, out, g, group, err);
    int ready = 0;
    posemb_status st = g->bcast(g->ctx, &ready, sizeof ready, err);
    posemb_study_queue q = {NULL, remote_next, remote_append, group};
    if (!posemb_comm_leader(group)) { /* its group's first rank talks to the queue and hands it units */
        q.next = NULL;
        q.append = NULL;
    }
    return st ? st : posemb_study_work(c, out, &q, err);
}

#else

posemb_status cli_study_mpi(const posemb_study_config *c, const char *out, const posemb_comm *g, posemb_error *err)
{
    return posemb_fail(err, POSEMB_EINVAL, "study: posemb was built without MPI");
}

#endif
