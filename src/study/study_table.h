/* The synthetic and real-data studies' results as a table (study_table.c):
 * what their tables (study_tables.c) and their report (study_report.c) both
 * read from results.jsonl, and the statistics of its cells. */
#ifndef POSEMB_STUDY_TABLE_H
#define POSEMB_STUDY_TABLE_H

#include <stddef.h>

#include "study/study.h"

/* results[pe][task][mult][seed]: the metric (NAN when absent); curves of the 1x lines. */
typedef struct study_table {
    const posemb_study_config *c;
    double *v;
    unsigned char *collapsed; /* as v: the run's predictions were constant ("collapsed": true) */
    double *curve;            /* [pe][task][seed][POSEMB_STUDY_MAX_CURVE][2] */
    int *n_curve;             /* [pe][task][seed] */
    double *chance;           /* [task][mult], as the lines record it */
    double *match;            /* [task][mult]: span tasks' first-matching-word reference ("token_match"), else NAN */
    const char *metric;       /* the lines' metric it holds; NULL: each line's first (the task kind's own) */
    char kind[POSEMB_STUDY_MAX_TASKS][16];
} study_table;

typedef struct study_stats {
    double mean, std, p; /* p: Welch against ape (NAN for ape itself or when not computable) */
    int n, collapsed;    /* seeds that ran; those of them whose predictions were constant */
} study_stats;

/* Evaluation lengths a config holds at most (its mults). */
enum { STUDY_TABLE_LENGTHS = sizeof((posemb_study_config *)0)->mults / sizeof(int) };

/* Reads out/results.jsonl into tb (metric NULL: each line's first metric;
 * later lines win: a rerun replaces). EIO when it cannot be opened, EINVAL
 * for a path too long, ENOMEM. Free tb with study_table_free either way. */
posemb_status study_table_load(study_table *tb, const posemb_study_config *c, const char *out, const char *metric,
                               posemb_error *err);
/* A causal-LM tasks' metric other than the first: exact_match (a span task's own metric
 * has the name too: LM tasks' only) or length_mean_accuracy. */
posemb_status study_table_load_lm_metric(study_table *ex, const posemb_study_config *c, const char *out,
                                         const char *metric, posemb_error *err);
void study_table_free(study_table *tb);
/* The cell of PE p, task t, length m, seed s (NAN: not run). */
double *study_table_cell(const study_table *tb, int p, int t, int m, int s);
/* The index of x in names[n], -1 when absent. */
int study_table_index_of(const char (*names)[128], int n, const char *x);
/* Mean, std and Welch p against PE ape (-1: none) over the seeds of (p, t, m) that ran. */
study_stats study_table_stats(const study_table *tb, int p, int t, int m, int ape);
/* Whether task t is of kind k; whether any task is. */
int study_table_is_kind(const posemb_study_config *c, int t, posemb_syn_kind k);
int study_table_has_kind(const posemb_study_config *c, posemb_syn_kind k);
/* "0.912 ± 0.011*": the star marks p < 0.05 against ape; "(2c)": 2 of the seeds collapsed. */
void study_table_fmt_cell(char *buf, size_t cap, study_stats s);
/* How many runs of the table collapsed, of how many. */
void study_table_count_collapsed(const study_table *tb, int *collapsed, int *runs);
/* 1 when some PE's mean exact match over seeds at the training length is >= 0.9:
 * a task no PE learns ranks nothing about extrapolation. */
int study_table_lm_task_learned(const study_table *ex, int t);
/* Each PE's mean reciprocal rank by score at every longer length m (mrr[m][p];
 * units[m] the (task, seed) pairs ranked, decided[m] those where not every PE
 * ties), over the LM tasks (learned_only: those ex says some PE learns). */
void study_table_rank_lengths(const study_table *score, const study_table *ex, int learned_only,
                              double (*mrr)[POSEMB_STUDY_MAX_PES], int *units, int *decided);

#endif
