/* The PEs ranked where they differ, for the top of report.html: at the
 * training length most synthetic cells read 1.000 +- 0.000, so the
 * synthetic study ranks by the score at its longest length (per task
 * group), the length study by how much perplexity grows from the training
 * length to the longest, the real-data study by SQuAD-locate's F1 at the
 * training length and the longest window and by the GLUE score. Each
 * column is its own ranking, mean +- sd over seeds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/synthetic.h"
#include "study_claims.h"

#define MAX_COLS 8

typedef struct rank_col {
    char title[96];
    double mean[POSEMB_STUDY_MAX_PES], sd[POSEMB_STUDY_MAX_PES];
    int n[POSEMB_STUDY_MAX_PES];        /* seeds counted; 0: the PE has no value */
    int windowed[POSEMB_STUDY_MAX_PES]; /* a run read in sliding windows at the length */
    int lower_first;                    /* 1: the smaller the better (a perplexity ratio) */
} rank_col;

/* PE p's value with seed s: the mean over tasks t[0..nt) at mult index m, or (ratio) the perplexity at m over
 * that at 1x; NAN when a run is missing. */
static double value(const study_grid *g, int p, const int *t, int nt, int m, int s, int ratio)
{
    const posemb_study_config *c = g->c;
    double sum = 0;
    for (int i = 0; i < nt; i++) {
        size_t k = study_grid_index(c, p, t[i], m, s);
        sum += ratio ? g->ppl[k] / g->ppl[study_grid_index(c, p, t[i], study_grid_mult(c, 1), s)] : g->v[k];
    }
    return sum / nt;
}

static void fill(rank_col *col, const study_grid *g, const int *t, int nt, int m, int ratio)
{
    for (int p = 0; p < g->c->n_pes; p++) {
        double x[16], sum = 0, ss = 0;
        int n = 0;
        col->windowed[p] = 0;
        for (int s = 0; s < g->c->n_seeds && s < 16; s++) {
            if (isfinite(x[n] = value(g, p, t, nt, m, s, ratio))) sum += x[n++];
            for (int i = 0; i < nt; i++) col->windowed[p] |= g->windowed[study_grid_index(g->c, p, t[i], m, s)];
        }
        col->n[p] = n;
        col->mean[p] = n ? sum / n : NAN;
        for (int i = 0; i < n; i++) ss += (x[i] - col->mean[p]) * (x[i] - col->mean[p]);
        col->sd[p] = n > 1 ? sqrt(ss / (n - 1)) : 0;
    }
    col->lower_first = ratio;
}

/* 1 when PE p ranks before PE q in col: the better value first, PEs without a value last. */
static int before(const rank_col *col, int p, int q)
{
    double x = col->mean[p], y = col->mean[q];
    if (isnan(x) || isnan(y)) return !isnan(x) && isnan(y);
    return col->lower_first ? x < y : x > y;
}

/* The PEs in col's order (an insertion sort: stable, so that ties keep the config's order). */
static int ranked(const rank_col *col, int n_pes, int *order)
{
    int with = 0;
    for (int p = 0; p < n_pes; p++) {
        int i = p;
        for (; i > 0 && before(col, p, order[i - 1]); i--) order[i] = order[i - 1];
        order[i] = p;
        with += col->n[p] > 0;
    }
    return with;
}

/* The columns side by side: row i holds each column's i-th PE with its mean +- sd. */
static void rank_table(posemb_report *rep, const posemb_study_config *c, const rank_col *cols, int n_cols,
                       const char *caption)
{
    int order[POSEMB_STUDY_MAX_PES], rows = 0, w = n_cols + 1;
    const char *head[MAX_COLS + 1] = {"rank"};
    char(*buf)[96] = calloc((size_t)c->n_pes * w, sizeof *buf);
    const char **cells = calloc((size_t)c->n_pes * w, sizeof *cells);
    for (int i = 0; buf && cells && i < c->n_pes * w; i++) cells[i] = buf[i];
    for (int i = 0; buf && i < c->n_pes; i++) snprintf(buf[i * w], 96, "%d", i + 1);
    for (int k = 0; buf && cells && k < n_cols; k++) {
        int with = ranked(&cols[k], c->n_pes, order);
        head[k + 1] = cols[k].title;
        rows = with > rows ? with : rows;
        for (int i = 0; i < with; i++)
            snprintf(buf[i * w + k + 1], 96, "%.40s %.3f ± %.3f%s", c->pes[order[i]], cols[k].mean[order[i]],
                     cols[k].sd[order[i]], cols[k].windowed[order[i]] ? " w" : "");
    }
    if (buf && cells && rows) posemb_report_table(rep, head, w, cells, rows, caption);
    free(buf);
    free(cells);
}

static void rank_synthetic(posemb_report *rep, const study_grid *g, rank_col *cols)
{
    static const char *const names[] = {"classification", "span prediction", "causal LM"};
    const posemb_study_config *c = g->c;
    int n = 0, m = c->n_mults - 1, t[3][POSEMB_STUDY_MAX_TASKS], nt[3] = {0};
    for (int i = 0; i < c->n_tasks; i++) {
        posemb_syn_kind k = posemb_study_task_kind(c, i);
        t[k][nt[k]++] = i;
    }
    for (int k = 0; k < 3; k++) {
        if (!nt[k]) continue;
        snprintf(cols[n].title, sizeof cols[n].title, "%s at %d tokens (%dx)", names[k], c->n_train * c->mults[m],
                 c->mults[m]);
        fill(&cols[n++], g, t[k], nt[k], m, 0);
    }
    posemb_report_paragraph(rep, "The PEs ranked where they differ, past the training length: each column ranks them "
                                 "by their score at the longest length (each task group's mean over its tasks; "
                                 "accuracy, exact match or answer-token accuracy), mean ± sd over seeds. At the "
                                 "training length most cells read 1.000 ± 0.000: the tables below.");
    rank_table(rep, c, cols, n, "PEs ranked by their score at the longest length");
}

static void rank_length(posemb_report *rep, const study_grid *g, rank_col *cols)
{
    const posemb_study_config *c = g->c;
    int m = c->n_mults - 1, n = 0;
    if (study_grid_mult(c, 1) < 0) return;
    for (int t = 0; t < c->n_tasks && n < MAX_COLS; t++) {
        snprintf(cols[n].title, sizeof cols[n].title, "%.32s: ppl at %d / at %d", c->tasks[t], c->n_train * c->mults[m],
                 c->n_train);
        fill(&cols[n++], g, &t, 1, m, 1);
    }
    posemb_report_paragraph(rep,
                            "The PEs ranked where they differ, past the training length: by their held-out "
                            "perplexity at the longest length over that at the training length (1: no worse "
                            "past training), per decoder, mean ± sd over seeds, the smallest first; w: read in sliding "
                            "windows of the training length (the PE's table ends there), so that its ratio "
                            "measures the windows, not the PE past training.");
    rank_table(rep, c, cols, n, "PEs ranked by how much perplexity grows past the training length");
}

static void rank_real(posemb_report *rep, const study_grid *g, rank_col *cols)
{
    static const char *const glue[] = {"CoLA", "SST-2", "MRPC", "STS-B", "RTE"};
    const posemb_study_config *c = g->c;
    int loc = study_grid_task(c, "SQuAD-locate"), m1 = study_grid_mult(c, 1), t[5], n = 0, ng = 0;
    for (int i = 0; i < 5; i++) ng += (t[ng] = study_grid_task(c, glue[i])) >= 0;
    if (m1 < 0) return;
    int ms[2] = {m1, c->n_mults - 1};
    for (int i = 0; loc >= 0 && i < (ms[1] != ms[0] ? 2 : 1); i++) {
        snprintf(cols[n].title, sizeof cols[n].title, "SQuAD-locate F1, %d tokens", c->n_train * c->mults[ms[i]]);
        fill(&cols[n++], g, &loc, 1, ms[i], 0);
    }
    if (ng == 5) {
        snprintf(cols[n].title, sizeof cols[n].title, "GLUE score (5 tasks' mean), %d tokens", c->n_train);
        fill(&cols[n++], g, t, 5, m1, 0);
    }
    posemb_report_paragraph(rep, "The PEs ranked where they differ: SQuAD-locate's F1 (span finding) at the "
                                 "pretraining length and in the longest window, and the GLUE score (the mean of the "
                                 "five tasks' main metrics); mean ± sd over fine-tuning seeds of one pretraining.");
    if (n) rank_table(rep, c, cols, n, "PEs ranked by SQuAD-locate F1 and GLUE score");
}

void study_rank_report(posemb_report *rep, const study_grid *g)
{
    rank_col *cols = calloc(MAX_COLS, sizeof *cols);
    if (!cols) return posemb_report_paragraph(rep, "(out of memory: no ranking)");
    posemb_report_heading(rep, 2, "The PEs ranked");
    if (g->c->length) rank_length(rep, g, cols);
    else if (g->c->data[0]) rank_real(rep, g, cols);
    else rank_synthetic(rep, g, cols);
    free(cols);
}
