/* The study's small shared pieces: the amplitude rule, the pretraining's
 * report parts, the rank, the tally and the figures. The results store and
 * the worker pool are study_store.h and study_pool.h. */
#ifndef POSEMB_STUDY_IMPL_H
#define POSEMB_STUDY_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include "posemb/pe.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "study/study.h"

/* The amplitude rule (study_amplitude.c): spec with each added absolute PE
 * that leaves its amplitude unset starting at RMS sigma over positions
 * [0, n_train) and learning it; out receives the spec the model is built with. */
posemb_status study_amplitude_rule(const char *spec, const posemb_pe_dims *dims, int n_train, float sigma, char *out,
                                   size_t cap, posemb_error *err);
/* The real-data study's pretraining (study_pretrain_report.c): its table in
 * tables.md, its held-out loss curves in the report, each log kept in
 * pretrain/ for when the models are gone. */
posemb_status study_pretrain_keep(const posemb_study_config *c, const char *out, posemb_error *err);
void study_pretrain_md(FILE *f, const posemb_study_config *c, const char *out);
/* The tasks trained to their own budget (task_budgets), a sentence each, into buf ("" for none; study_config.c). */
void study_budgets_text(const posemb_study_config *c, char *buf, size_t cap);
posemb_status study_pretrain_figure(posemb_report *rep, const posemb_study_config *c, const char *out,
                                    posemb_error *err);
/* Kazemnejad et al.'s mean reciprocal rank (study_rank.c): v[u * n_pes + p]
 * is PE p's score in unit u (a task and seed; NAN: not run); mrr[p] the mean
 * over the units every PE ran of p's reciprocal rank, ties sharing theirs;
 * *decided the units among them where not every PE ties. Returns the units
 * counted (mrr NAN when none). */
int study_mrr(const double *v, int n_units, int n_pes, double *mrr, int *decided);
/* A causal-LM evaluation's answer-token hits (study_tally.c), each array [cap]:
 * by input length n (the tokens between [CLS] and [SEP]: the instance's size)
 * the examples, their answer tokens scored and right, and the examples wholly
 * right; by position in the answer (0: its first scored token) the tokens
 * scored and right. */
typedef struct study_tally {
    int cap;
    long *examples, *tokens, *right, *whole;
    long *pos_right, *pos_total;
    /* copy and reverse tasks' wrong tokens by class (index: SEQ_ERR_* bits, 0 neither), and the sums of
     * each error's chance of falling in the position and content sets */
    long err[4];
    double err_chance[3];
} study_tally;
posemb_status study_tally_init(study_tally *t, int cap, posemb_error *err);
void study_tally_free(study_tally *t);
void study_tally_token(study_tally *t, int pos, int hit);
void study_tally_example(study_tally *t, int input_len, int scored, int hits);
/* One wrong token of class cls (posemb_syn_error_class, >= 0) with its chance[3]. */
void study_tally_error(study_tally *t, int cls, const double chance[3]);
/* Ruoss et al. 2023's score: the answer-token accuracy at each input length, averaged
 * over the lengths seen (NAN when none). */
double study_tally_length_mean(const study_tally *t);
/* `, "by_input_length": [[n, examples, token accuracy, exact match], ...],
 * "by_answer_position": [[j from 1, tokens, accuracy], ...]` and, for copy and reverse tasks with
 * wrong tokens, `, "errors": [wrong, position, content, both, neither], "errors_chance": [position,
 * content, content alone]` (the mean share of the other symbols in each set) into out (cut at cap); the
 * length written, below study_tally_json_cap. */
size_t study_tally_json(const study_tally *t, char *out, size_t cap);
size_t study_tally_json_cap(const study_tally *t);
/* ---- figures (study_figures.c) ---- */

/* PE families as the figures group them, read off what the PE does
 * (posemb_pe_has_*): none, absolute (input), rotary (q/k), relative
 * tables (values), biases (logits), data-dependent (layer input, or a
 * bias that reads no positions: CoPE), an absolute PE with a relative one
 * (input and attention: ape+rpe), other (not a spec posemb builds). */
typedef enum study_family {
    STUDY_FAMILY_NONE,
    STUDY_FAMILY_ABSOLUTE,
    STUDY_FAMILY_ROTARY,
    STUDY_FAMILY_RELATIVE,
    STUDY_FAMILY_BIAS,
    STUDY_FAMILY_DATA,
    STUDY_FAMILY_BOTH,
    STUDY_FAMILY_OTHER,
    STUDY_FAMILIES
} study_family;

study_family study_pe_family(const char *spec);
/* A panel title for the family ("rotary (rotates queries and keys)"); NULL outside the enum. */
const char *study_family_title(study_family f);

/* The series of s (labelled by PE spec) sorted into sorted[n] and one
 * panel per family present (at most STUDY_FAMILIES, in the enum's order,
 * the series' order kept within a panel, titled by study_family_title);
 * the first "none" is left out as *ref (NULL without one). Returns the
 * panel count, -1 when out of memory. */
int study_panels_by_family(const posemb_series *s, int n, posemb_series *sorted, posemb_panel *panels,
                           const posemb_series **ref);
/* Series on one axis up to this many; more go to panels by family. */
#define STUDY_LINES_ONE_AXIS 6

/* posemb_plot_lines for up to STUDY_LINES_ONE_AXIS series, labelled by PE
 * spec; beyond, a grid of one panel per family present (in the order of
 * study_family) with the "none" series drawn in every panel as a grey
 * reference, the same titles, labels and limits. */
posemb_status study_lines_figure(const char *path, const posemb_series *s, int n, const posemb_lines_opts *o,
                                 posemb_error *err);

#endif
