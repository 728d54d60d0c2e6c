/* The claims register of one study (study_claims*.c): the rows of
 * scripts/claims for the testbed of the study folder at hand, by the same
 * rules (docs/study.md, "Verdicts"), written to claims.csv and claims.png
 * and opening report.html with the ranking of the PEs where they differ. */
#ifndef POSEMB_STUDY_CLAIMS_H
#define POSEMB_STUDY_CLAIMS_H

#include <stddef.h>

#include "plot/plot.h"
#include "plot/report.h"
#include "eval/stats.h"
#include "study/study.h"

#define STUDY_MAX_CLAIMS 24

/* One claim on this study's testbed: a row of results/claims.csv. */
typedef struct study_claim {
    char id[4];
    const char *claim, *unit, *evidence; /* static text */
    char testbed[96], replication[80];
    posemb_t_ci ci; /* effect, lo, hi, p, mde (Spearman rows: Fisher z's) */
    double paper;   /* the paper's own effect; NAN: the paper gives none */
    int n_units;
    posemb_verdict verdict;
    char note[512]; /* the verdict's reason */
} study_claim;

typedef struct study_claims {
    study_claim row[STUDY_MAX_CLAIMS];
    int n;
    char not_posed[1024]; /* "W3, W6: no evaluation at 8x; ...": the claims the study cannot pose, and why */
} study_claims;

/* A study's lines by cell: [pe][task][mult][seed] of the config, NAN where no line is. */
typedef struct study_grid {
    const posemb_study_config *c;
    double *v;               /* the line's first metric (the task's main one, as scripts/claims reads it) */
    double *ppl;             /* metrics.perplexity (causal LMs) */
    double *scaled;          /* [scaling] x the cells: perplexity with RoPE scaled at evaluation ("scaled") */
    unsigned char *windowed; /* 1: read in sliding windows, its context shorter than the length (a table's end) */
} study_grid;

posemb_status study_grid_load(study_grid *g, const posemb_study_config *c, const char *out, posemb_error *err);
void study_grid_free(study_grid *g);
size_t study_grid_index(const posemb_study_config *c, int p, int t, int m, int s);
/* The index of PE spec, task name or length multiple in the config, -1 when absent. */
int study_grid_pe(const posemb_study_config *c, const char *pe);
int study_grid_task(const posemb_study_config *c, const char *task);
int study_grid_mult(const posemb_study_config *c, int mult);

/* The paper's own effect of a claim in posemb's unit (scripts/claims' PAPER); NAN when none. */
double study_claims_paper(const char *id);
/* What the paper reports, in its own terms (scripts/claims' PAPER_SAYS); "-" when nothing. */
const char *study_claims_paper_says(const char *id);
/* Fills a row's verdict and note by the rule of scripts/claims' verdict(): sign +1 when the claim predicts a
 * positive effect; a confound (NULL: none) qualifies a reproduction, an untestable reason overrides all. */
void study_claim_judge(study_claim *r, int sign, const char *confound, const char *untestable);
/* Adds "id: why" to the claims not posed. */
void study_claims_skip(study_claims *cl, const char *id, const char *why);
/* A row with its static text, testbed and interval; NULL when the register is full. */
study_claim *study_claims_add(study_claims *cl, const char *id, const char *claim, const char *testbed,
                              const char *unit, posemb_t_ci ci, int n_units, const char *replication,
                              const char *evidence);

/* The rows of each kind of study (study_claims_seed.c, study_claims_length.c). */
posemb_status study_claims_synthetic(const study_grid *g, const char *out, study_claims *cl, posemb_error *err);
posemb_status study_claims_real(const study_grid *g, const char *out, study_claims *cl, posemb_error *err);
void study_claims_length(const study_grid *g, study_claims *cl);
/* Spearman's rho of x and y with the Fisher-z interval (se sqrt(1.06 / (n - 3))) as scripts/claims' spearman_ci. */
posemb_t_ci study_spearman_ci(const double *x, const double *y, int n);

/* What report.html opens with: what the study is, the verdict table, the forest plot, the ranking of the PEs
 * where they differ; writes claims.csv and claims.png on the way. */
posemb_status study_claims_report(posemb_report *rep, const posemb_study_config *c, const char *out, posemb_error *err);
/* The ranking (study_claims_rank.c). */
void study_rank_report(posemb_report *rep, const study_grid *g);

#endif
