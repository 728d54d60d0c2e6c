/* The study's worker pool (study_pool.h): local workers by fork, each taking
 * every jobs-th pending unit; an MPI group's queue is the CLI's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "posemb/threads.h"
#include "study_pool.h"
#include "study_store.h"

posemb_status study_next_unit(const posemb_study_queue *q, int *k, posemb_error *err)
{
    *k = posemb_comm_leader(q->group) ? q->next(q->ctx) : -1;
    return posemb_comm_active(q->group) ? q->group->bcast(q->group->ctx, k, sizeof *k, err) : POSEMB_OK;
}

/* The queue of one local worker: every jobs-th pending unit from w, results appended under a lock. */
typedef struct local_queue {
    const int *pending;
    int n, at, jobs;
    char results[POSEMB_PATH_MAX];
} local_queue;

static int local_next(void *ctx)
{
    local_queue *l = ctx;
    int k = l->at < l->n ? l->pending[l->at] : -1;
    l->at += l->jobs;
    return k;
}

static posemb_status local_append(void *ctx, const char *lines, posemb_error *err)
{
    return study_append_results(((local_queue *)ctx)->results, lines, err);
}

static posemb_status local_worker(const posemb_study_config *c, const char *out, const int *pending, int n, int w,
                                  int jobs, study_work_fn work, posemb_error *err)
{
    local_queue l = {pending, n, w, jobs, ""};
    if (posemb_path_join(l.results, sizeof l.results, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "path too long");
    posemb_study_queue q = {&l, local_next, local_append, NULL};
    return work(c, out, &q, err);
}

posemb_status study_run_workers(const posemb_study_config *c, const char *out, const int *pending, int n,
                                study_work_fn work, posemb_error *err)
{
    int jobs = c->jobs > 1 ? c->jobs : 1;
    if (jobs == 1) {
        if (c->threads > 0) posemb_threads_set(c->threads);
        return local_worker(c, out, pending, n, 0, 1, work, err);
    }
    pid_t *pids = malloc((size_t)jobs * sizeof *pids);
    if (!pids) return posemb_fail(err, POSEMB_ENOMEM, "study: out of memory for %d workers", jobs);
    int forked = 0, failed = 0;
    fflush(NULL);
    for (int w = 0; w < jobs; w++) {
        pid_t pid = fork();
        if (pid == 0) { /* one thread by default: small models parallelise better by runs */
            posemb_threads_set(c->threads > 0 ? c->threads : 1);
            posemb_error e;
            posemb_status st = local_worker(c, out, pending, n, w, jobs, work, &e);
            if (st) fprintf(stderr, "posemb study: %s\n", e.msg);
            fflush(NULL);
            _exit(st ? 1 : 0);
        }
        if (pid > 0) pids[forked++] = pid;
        else fprintf(stderr, "posemb study: cannot start worker %d: %s\n", w + 1, strerror(errno));
    }
    for (int i = 0; i < forked; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {}
        failed += !WIFEXITED(status) || WEXITSTATUS(status);
    }
    free(pids);
    failed += jobs - forked; /* fork refused: its share of the units was not run */
    return failed ? posemb_fail(err, POSEMB_EFORMAT,
                                "study: %d worker(s) failed (see above); finished runs are kept, "
                                "run the study again to continue",
                                failed)
                  : POSEMB_OK;
}
