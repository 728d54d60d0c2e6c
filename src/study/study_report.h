/* The tables and the report of the synthetic and the real-data studies
 * (study_report.c): tables.md and tables.csv from results.jsonl, and
 * report.html with its figures and the saved models' analyses. The length
 * study's are study_length_report.c's. */
#ifndef POSEMB_STUDY_REPORT_H
#define POSEMB_STUDY_REPORT_H

#include "study/study.h"

posemb_status study_runs_tables(const posemb_study_config *c, const char *out, posemb_error *err);
posemb_status study_runs_report(const posemb_study_config *c, const char *out, posemb_error *err);

#endif
