/* The study (shared spec STUDY.md): train a model with each PE on each task
 * and seed, evaluate it at longer lengths, tabulate mean +- std with Welch
 * t-tests against ape, and report. Runs are recorded one JSON line per run
 * and evaluation length in results.jsonl; a resumed study skips the runs
 * recorded there (an interrupted run is redone from its start: it is a
 * function of its seed, so the record is the same). */
#ifndef POSEMB_STUDY_H
#define POSEMB_STUDY_H

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSEMB_STUDY_MAX_PES 32
#define POSEMB_STUDY_MAX_TASKS 16

typedef struct posemb_study_config {
    int n_pes, n_tasks, n_seeds, n_mults;
    char pes[POSEMB_STUDY_MAX_PES][128];
    char tasks[POSEMB_STUDY_MAX_TASKS][32];
    int seeds[16];
    int mults[8];  /* evaluation lengths, multiples of n_train */
    int layers, hidden, heads, intermediate;
    int n_train;   /* training sequence length */
    int steps, batch;
    float lr;
    int eval_examples; /* per evaluation length */
    int curve_every;   /* steps between points of the training curve (0: none) */
    int jobs;          /* worker processes */
    int analyze;       /* analyse each PE's first model (seed, first task) into the report */
} posemb_study_config;

/* The embedded default: the seed paper's 13 PEs plus rope, alibi, t5; the
 * six synthetic tasks; 3 seeds; a 2-layer width-64 encoder trained at 32
 * tokens and evaluated at 32, 64, 128 and 256. */
posemb_study_config posemb_study_default(void);
/* Reads a JSON config; absent keys keep the default's values. */
posemb_status posemb_study_config_load(posemb_study_config *c, const char *path, posemb_error *err);

/* Runs every run not yet in out/results.jsonl, then writes the tables and the report. */
posemb_status posemb_study_run(const posemb_study_config *c, const char *out, posemb_error *err);

/* From out/results.jsonl: tables.md, tables.csv; then report.html. */
posemb_status posemb_study_tables(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status posemb_study_report(const posemb_study_config *c, const char *out, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
