/* The tables and figures of the length study's fine-tunes at a longer
 * context (extend.jsonl): study_extend_report.c, for
 * study_length_report.c. */
#ifndef POSEMB_STUDY_EXTEND_REPORT_H
#define POSEMB_STUDY_EXTEND_REPORT_H

#include <stdio.h>

#include "plot/report.h"
#include "study/study.h"
#include "study_cell.h"
#include "study_length_impl.h"

/* extend.jsonl's lines of a config, log-perplexities per seed. */
typedef struct study_extend_table {
    cell curve[POSEMB_STUDY_MAX_TASKS][8][4][STUDY_EXTEND_POINTS]; /* [task][scaling][factor][point] */
    cell end[POSEMB_STUDY_MAX_TASKS][8][4][8];                     /* [task][scaling][factor][length] */
    cell digits[POSEMB_STUDY_MAX_TASKS][8][4][8];                  /* the passkey's digits at the end, same */
    cell beta[POSEMB_STUDY_MAX_TASKS][8][4][8];                    /* DroPE's fitted temperature, same */
    int steps[STUDY_EXTEND_POINTS], n_steps;                       /* the curve's steps */
    int any[POSEMB_STUDY_MAX_TASKS];                               /* a line of the decoder was read */
} study_extend_table;

/* *tb: out/extend.jsonl's lines (free it), NULL when the config fine-tunes
 * nothing or no fine-tune is done yet. EIO, ENOMEM. */
posemb_status study_extend_load(const posemb_study_config *c, const char *out, study_extend_table **tb,
                                posemb_error *err);
/* Decoder t's tables, one per factor, into tables.md (nothing when tb is NULL or has no line of t). */
void study_extend_md(FILE *out, const study_extend_table *tb, const posemb_study_config *c, int t);
/* Decoder t's rows of tables.csv: metrics extend_xF_loss_step_S (at the target length), extend_xF_loss_end,
 * extend_xF_passkey_digits_end and (DroPE) extend_xF_beta_end. */
void study_extend_csv(FILE *out, const study_extend_table *tb, const posemb_study_config *c, int t);
/* Decoder t's tables and a curve figure per factor (out/extend_TASK_xF.png) into the report. */
posemb_status study_extend_html(posemb_report *rep, const study_extend_table *tb, const posemb_study_config *c,
                                const char *out, int t, posemb_error *err);

#endif
