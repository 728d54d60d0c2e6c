/* The synthetic and real-data studies' tables: tables.md and tables.csv from
 * results.jsonl (study_report.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posemb/analyze.h"
#include "core/fileio.h"
#include "eval/metrics.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "eval/stats.h"
#include "study/study.h"
#include "study/synthetic.h"
#include "study_claims.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_report.h"
#include "study_store.h"
#include "study_table.h"

/* 1 when rl has a value wherever tb has a causal-LM one: a study with lines from before
 * rl's metric was recorded would rank and average the others over fewer pairs and tasks. */
static int study_table_covers(const study_table *rl, const study_table *tb)
{
    const posemb_study_config *c = tb->c;
    int any = 0;
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int m = 0; m < c->n_mults && study_table_is_kind(c, t, POSEMB_SYN_LM); m++)
                for (int s = 0; s < c->n_seeds; s++) {
                    if (isnan(*study_table_cell(tb, p, t, m, s))) continue;
                    if (isnan(*study_table_cell(rl, p, t, m, s))) return 0;
                    any = 1;
                }
    return any;
}

/* A reference row under a table (ref: [task][mult], NAN where unknown), its
 * cells as md_table's: a task's value at the trained length, or per length
 * the mean over the tasks; no row when every cell is unknown. */
static void ref_row(FILE *f, const study_table *tb, const double *ref, const char *name, posemb_syn_kind kind,
                    int by_length, int only)
{
    const posemb_study_config *c = tb->c;
    double cells[POSEMB_STUDY_MAX_TASKS + sizeof c->mults / sizeof *c->mults]; /* a column per task or length */
    int ncell = 0, known = 0;
    for (int i = 0; i < (by_length ? c->n_mults : c->n_tasks); i++) {
        if (!by_length && !study_table_is_kind(c, i, kind)) continue;
        double sum = 0;
        int n = 0;
        for (int t = 0; t < c->n_tasks; t++) {
            int in = by_length ? study_table_is_kind(c, t, kind) && (only < 0 || t == only) : t == i;
            double v = ref[t * c->n_mults + (by_length ? i : 0)];
            if (in && !isnan(v)) {
                sum += v;
                n++;
            }
        }
        cells[ncell++] = n ? sum / n : NAN;
        known += n > 0;
    }
    if (!known) return;
    fprintf(f, "| *%s* |", name);
    for (int i = 0; i < ncell; i++) fprintf(f, isnan(cells[i]) ? " - |" : " %.3f |", cells[i]);
    fprintf(f, "\n");
}

/* One markdown table: rows PEs; columns the tasks of a kind at the trained
 * length, or (by_length) one per length, each the mean over those tasks (over
 * the task `only` alone when only >= 0). */
static void md_table(FILE *f, const study_table *tb, posemb_syn_kind kind, int by_length, int only, int ape)
{
    const int m = 0; /* the trained length */
    const posemb_study_config *c = tb->c;
    char buf[64];
    fprintf(f, "| PE |");
    int cols = 0;
    for (int i = 0; i < (by_length ? c->n_mults : c->n_tasks); i++) {
        if (!by_length && !study_table_is_kind(c, i, kind)) continue;
        if (by_length) fprintf(f, " %d tokens |", c->n_train * c->mults[i]);
        else fprintf(f, " %s |", c->tasks[i]);
        cols++;
    }
    fprintf(f, "\n|---|");
    for (int i = 0; i < cols; i++) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int p = 0; p < c->n_pes; p++) {
        fprintf(f, "| %s |", c->pes[p]);
        for (int i = 0; i < (by_length ? c->n_mults : c->n_tasks); i++) {
            if (!by_length && !study_table_is_kind(c, i, kind)) continue;
            if (!by_length) {
                study_table_fmt_cell(buf, sizeof buf, study_table_stats(tb, p, i, m, ape));
                fprintf(f, " %s |", buf);
                continue;
            }
            double sum = 0; /* the mean over the kind's tasks */
            int n = 0;
            for (int t = 0; t < c->n_tasks; t++)
                if (study_table_is_kind(c, t, kind) && (only < 0 || t == only)) {
                    study_stats s = study_table_stats(tb, p, t, i, -1);
                    if (s.n) {
                        sum += s.mean;
                        n++;
                    }
                }
            fprintf(f, n ? " %.3f |" : " - |", n ? sum / n : 0);
        }
        fprintf(f, "\n");
    }
    ref_row(f, tb, tb->chance, "chance", kind, by_length, only);
    ref_row(f, tb, tb->match, "first matching word, no model", kind, by_length, only);
}

/* Opens out/name to be written whole or not at all. */
static posemb_status open_output(const char *out, const char *name, posemb_atomic_file *af, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, name))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    return posemb_atomic_open(af, path, err);
}

/* One ranking table of score's PEs: a column per longer length. */
static void md_rank_table(FILE *f, const study_table *score, const study_table *ex, int learned_only)
{
    const posemb_study_config *c = score->c;
    double mrr[STUDY_TABLE_LENGTHS][POSEMB_STUDY_MAX_PES];
    int units[STUDY_TABLE_LENGTHS], decided[STUDY_TABLE_LENGTHS];
    study_table_rank_lengths(score, ex, learned_only, mrr, units, decided);
    fprintf(f, "| PE |");
    for (int m = 1; m < c->n_mults; m++) fprintf(f, " %d tokens |", c->n_train * c->mults[m]);
    fprintf(f, "\n|---|");
    for (int m = 1; m < c->n_mults; m++) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int p = 0; p < c->n_pes; p++) {
        fprintf(f, "| %s |", c->pes[p]);
        for (int m = 1; m < c->n_mults; m++) fprintf(f, units[m] ? " %.3f |" : " - |", mrr[m][p]);
        fprintf(f, "\n");
    }
    fprintf(f, "| *(task, seed) pairs ranked* |");
    for (int m = 1; m < c->n_mults; m++) fprintf(f, " %d |", units[m]);
    fprintf(f, "\n| *of them, pairs where the PEs differ* |");
    for (int m = 1; m < c->n_mults; m++) fprintf(f, " %d |", decided[m]);
    fprintf(f, "\n");
}

/* Kazemnejad et al. 2023's ranking of the PEs beyond the training length, by exact
 * match (theirs) and by answer-token accuracy averaged over input lengths (rl: Ruoss
 * et al.'s score; pooled over tokens, tb, when some line is from before it was recorded). */
static void md_lm_ranking(FILE *f, const study_table *tb, const study_table *ex, const study_table *rl)
{
    const posemb_study_config *c = ex->c;
    if (c->n_pes < 2) return;
    int learned = 0, lm = 0;
    char names[POSEMB_STUDY_MAX_TASKS * 34] = "";
    for (int t = 0; t < c->n_tasks; t++)
        if (study_table_is_kind(c, t, POSEMB_SYN_LM)) {
            lm++;
            if (!study_table_lm_task_learned(ex, t)) continue;
            learned++;
            snprintf(names + strlen(names), sizeof names - strlen(names), " %s", c->tasks[t]);
        }
    fprintf(f,
            "\n## Ranking beyond the training length (mean reciprocal rank, after Kazemnejad et al. 2023)\n\n"
            "In each task and seed the PEs are ranked by their score at the length; a PE's mean reciprocal rank "
            "over those pairs is 1 when it is always first, 1/%d when always last; tied PEs share the mean of the "
            "reciprocal ranks they span, so a pair where all tie changes no order but pulls every PE toward the "
            "mean. Only the pairs every PE ran are ranked. (Kazemnejad et al. rank one score per task and seed, "
            "pooled over their test lengths, and break ties by order.) The tasks some PE learns at the training "
            "length (mean exact match over seeds >= 0.9):%s.\n",
            c->n_pes, learned ? names : " none");
    int ruoss = study_table_covers(rl, tb);
    const study_table *score[2] = {ex, ruoss ? rl : tb};
    const char *what[2] = {"exact match", ruoss ? "answer-token accuracy averaged over input lengths (Ruoss et al.'s "
                                                  "score)"
                                                : "answer-token accuracy"};
    for (int k = 0; k < 2; k++)
        for (int only = 0; only <= (learned && learned < lm); only++) {
            fprintf(f, "\n### By %s, %s\n\n", what[k], only ? "the learned tasks" : "all causal-LM tasks");
            md_rank_table(f, score[k], ex, only);
        }
}

/* The causal-LM tables: answer-token accuracy (tb) and whole answers right (ex) at the
 * training length, then by length, over the tasks and per task. */
static void md_lm_tables(FILE *f, const study_table *tb, const study_table *ex, const study_table *rl, int ape)
{
    const posemb_study_config *c = tb->c;
    fprintf(f, "\n## Causal language modelling (answer-token accuracy at %d tokens, a GPT-2-style decoder)\n\n",
            c->n_train);
    md_table(f, tb, POSEMB_SYN_LM, 0, -1, ape);
    fprintf(f,
            "\n## Causal language modelling, exact match (the share of examples with every scored answer token "
            "right, teacher forced, at %d tokens)\n\n",
            c->n_train);
    md_table(f, ex, POSEMB_SYN_LM, 0, -1, ape);
    if (c->n_mults < 2) return;
    fprintf(f, "\n## Longer sequences (causal-LM answer-token accuracy, mean over tasks)\n\n");
    md_table(f, tb, POSEMB_SYN_LM, 1, -1, ape);
    if (study_table_covers(rl, tb)) {
        fprintf(f, "\n## Longer sequences (answer-token accuracy averaged over input lengths, Ruoss et al. 2023's "
                   "score: each input length weighs alike; mean over tasks)\n\n");
        md_table(f, rl, POSEMB_SYN_LM, 1, -1, ape);
    }
    for (int t = 0; t < c->n_tasks; t++)
        if (study_table_is_kind(c, t, POSEMB_SYN_LM)) {
            fprintf(f, "\n### %s by length: answer-token accuracy\n\n", c->tasks[t]);
            md_table(f, tb, POSEMB_SYN_LM, 1, t, ape);
            fprintf(f, "\n### %s by length: exact match\n\n", c->tasks[t]);
            md_table(f, ex, POSEMB_SYN_LM, 1, t, ape);
        }
    md_lm_ranking(f, tb, ex, rl);
}

static posemb_status write_md(const study_table *tb, const study_table *ex, const study_table *rl, const char *out,
                              int ape, posemb_error *err)
{
    const posemb_study_config *c = tb->c;
    posemb_atomic_file af;
    posemb_status st = open_output(out, "tables.md", &af, err);
    if (st) return st;
    FILE *f = af.f;
    fprintf(f,
            "# Study results\n\nMean ± standard deviation over %d seeds; * marks a two-sided Welch t-test against "
            "`ape` with p < 0.05. Models: %d layers, width %d, %d heads, ",
            c->n_seeds, c->layers, c->hidden, c->heads);
    if (c->data[0])
        fprintf(f,
                "pretrained with MLM for %d steps of %d x %d tokens on %s's corpora, fine-tuned at most %d steps "
                "(batch %d%s) "
                "per task and seed; the best of the evaluations every %d steps is kept.\n\n",
                c->real.pretrain_steps, c->real.pretrain_batch, c->n_train, c->data, c->steps, c->batch,
                c->epochs > 0 ? ", fewer where the epochs take fewer" : "", c->curve_every);
    else fprintf(f, "trained %d steps at %d tokens.\n\n", c->steps, c->n_train);
    char budgets[2048];
    study_budgets_text(c, budgets, sizeof budgets);
    if (budgets[0]) fprintf(f, "%s\n\n", budgets);
    int nc, nr;
    study_table_count_collapsed(tb, &nc, &nr);
    fprintf(f,
            "(Nc) marks N seeds whose model collapsed: the same prediction (class, span or answer token) for every "
            "evaluation example. %d of %d runs collapsed at the training length.\n\n",
            nc, nr);
    if (c->data[0]) {
        study_pretrain_md(f, c, out);
        fprintf(f, "## Table 2: GLUE dev (CoLA: Matthews corr., MRPC: F1, STS-B: Pearson, others: accuracy)\n\n");
        md_table(f, tb, POSEMB_SYN_CLASSIFY, 0, -1, ape);
        fprintf(f,
                "\n## Table 3: span prediction on SQuAD v1.1 paragraphs (F1, the held-out articles, windows of "
                "%d tokens)\n\n",
                c->n_train);
        md_table(f, tb, POSEMB_SYN_SPAN, 0, -1, ape);
        for (int t = 0; t < c->n_tasks; t++)
            if (study_table_is_kind(c, t, POSEMB_SYN_SPAN)) {
                fprintf(f,
                        "\n## Figure 1: longer documents (%s F1 with windows of 1x, 2x, ... the pretraining "
                        "length)\n\n",
                        c->tasks[t]);
                md_table(f, tb, POSEMB_SYN_SPAN, 1, t, ape);
            }
        return posemb_atomic_commit(&af, err);
    }
    /* only the sections of the kinds of task the config has: no empty tables */
    if (study_table_has_kind(c, POSEMB_SYN_CLASSIFY)) {
        fprintf(f, "## Table 2: classification (accuracy at %d tokens)\n\n", c->n_train);
        md_table(f, tb, POSEMB_SYN_CLASSIFY, 0, -1, ape);
    }
    if (study_table_has_kind(c, POSEMB_SYN_SPAN)) {
        fprintf(f, "\n## Table 3: span prediction (exact match at %d tokens)\n\n", c->n_train);
        md_table(f, tb, POSEMB_SYN_SPAN, 0, -1, ape);
    }
    if (study_table_has_kind(c, POSEMB_SYN_CLASSIFY)) {
        fprintf(f, "\n## Figure 1: longer sequences (classification accuracy, mean over tasks)\n\n");
        md_table(f, tb, POSEMB_SYN_CLASSIFY, 1, -1, ape);
    }
    if (study_table_has_kind(c, POSEMB_SYN_SPAN)) {
        fprintf(f, "\n## Longer sequences (span exact match, mean over tasks)\n\n");
        md_table(f, tb, POSEMB_SYN_SPAN, 1, -1, ape);
    }
    if (study_table_has_kind(c, POSEMB_SYN_LM)) md_lm_tables(f, tb, ex, rl, ape);
    return posemb_atomic_commit(&af, err);
}

static posemb_status write_csv(const study_table *tb, const study_table *ex, const study_table *rl, const char *out,
                               int ape, posemb_error *err)
{
    const posemb_study_config *c = tb->c;
    posemb_atomic_file af;
    posemb_status st = open_output(out, "tables.csv", &af, err);
    if (st) return st;
    fprintf(
        af.f,
        "pe,task,kind,eval_len,mean,std,n,p_vs_ape,chance,collapsed,token_match,exact_match,length_mean_accuracy\n");
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int m = 0; m < c->n_mults; m++) {
                study_stats s = study_table_stats(tb, p, t, m, ape);
                if (!s.n) continue;                                 /* GLUE tasks have the trained length only */
                study_stats e = study_table_stats(ex, p, t, m, -1); /* LM tasks' whole answers, mean over seeds */
                study_stats r = study_table_stats(rl, p, t, m, -1); /* and their accuracy averaged over input lengths */
                fprintf(af.f, "%s,%s,%s,%d,%.6f,%.6f,%d,%.6g,%.6f,%d,%.6g,%.6g,%.6g\n", c->pes[p], c->tasks[t],
                        tb->kind[t], c->n_train * c->mults[m], s.mean, s.std, s.n, s.p, tb->chance[t * c->n_mults + m],
                        s.collapsed, tb->match[t * c->n_mults + m], e.n ? e.mean : NAN, r.n ? r.mean : NAN);
            }
    return posemb_atomic_commit(&af, err);
}

posemb_status study_runs_tables(const posemb_study_config *c, const char *out, posemb_error *err)
{
    study_table tb = {0}, ex = {0}, rl = {0};
    posemb_status st = study_table_load(&tb, c, out, NULL, err);
    if (!st) st = study_table_load_lm_metric(&ex, c, out, "exact_match", err);
    if (!st) st = study_table_load_lm_metric(&rl, c, out, "length_mean_accuracy", err);
    int ape = study_table_index_of(c->pes, c->n_pes, "ape");
    if (!st && c->data[0]) st = study_pretrain_keep(c, out, err);
    if (!st) st = write_md(&tb, &ex, &rl, out, ape, err);
    if (!st) st = write_csv(&tb, &ex, &rl, out, ape, err);
    study_table_free(&tb);
    study_table_free(&ex);
    study_table_free(&rl);
    return st;
}
