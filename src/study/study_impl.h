/* The study's private pieces shared by study.c (the runner) and
 * study_data.c (the real-data runs). */
#ifndef POSEMB_STUDY_IMPL_H
#define POSEMB_STUDY_IMPL_H

#include <stddef.h>

#include "posemb/study.h"

/* A PE spec as a folder name ("ape+rpe" -> "ape_rpe"). */
void study_set_names(char *rows, size_t width, int *n, const char *const *names, int count);
void study_folder_of(const char *spec, char *buf, size_t cap);
/* Appends whole lines to results.jsonl under a lock (workers append concurrently). */
posemb_status study_append_results(const char *path, const char *lines, posemb_error *err);
/* Index into done[] of (pe, task, seed). */
static inline size_t study_run_index(const posemb_study_config *c, int p, int t, int s)
{
    return ((size_t)p * c->n_tasks + t) * c->n_seeds + s;
}

#endif
