/* The synthetic and real-data studies' report: report.html with its tables,
 * figures and the saved models' analyses (study_report.h). */
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

/* An HTML table of one kind at the trained length (Tables 2 and 3). */
static void html_table(posemb_report *rep, const study_table *tb, posemb_syn_kind kind, int ape, const char *caption)
{
    const posemb_study_config *c = tb->c;
    const char *head[POSEMB_STUDY_MAX_TASKS + 1] = {"PE"};
    int cols = 1, idx[POSEMB_STUDY_MAX_TASKS];
    for (int t = 0; t < c->n_tasks; t++)
        if (study_table_is_kind(c, t, kind)) {
            idx[cols - 1] = t;
            head[cols++] = c->tasks[t];
        }
    if (cols == 1) return;
    int rows = c->n_pes;
    char(*buf)[64] = calloc((size_t)(rows + 2) * cols, sizeof *buf);
    const char **cells = calloc((size_t)(rows + 2) * cols, sizeof *cells);
    for (int p = 0; buf && cells && p < c->n_pes; p++) {
        snprintf(buf[p * cols], 64, "%.63s", c->pes[p]);
        for (int k = 1; k < cols; k++)
            study_table_fmt_cell(buf[p * cols + k], 64, study_table_stats(tb, p, idx[k - 1], 0, ape));
    }
    const double *refs[2] = {tb->chance, tb->match}; /* the rows tables.md has under its tables */
    const char *names[2] = {"chance", "first matching word, no model"};
    for (int r = 0; buf && cells && r < 2; r++) {
        int known = 0;
        for (int k = 1; k < cols; k++) known |= !isnan(refs[r][idx[k - 1] * c->n_mults]);
        if (!known) continue;
        snprintf(buf[rows * cols], 64, "%s", names[r]);
        for (int k = 1; k < cols; k++) {
            double v = refs[r][idx[k - 1] * c->n_mults];
            snprintf(buf[rows * cols + k], 64, isnan(v) ? "-" : "%.3f", v);
        }
        rows++;
    }
    for (int i = 0; buf && cells && i < rows * cols; i++) cells[i] = buf[i];
    if (buf && cells) posemb_report_table(rep, head, cols, cells, rows, caption);
    free(buf);
    free(cells);
}

/* Metric against evaluation length, one line per PE, for task t. */
static posemb_status length_figure(posemb_report *rep, const study_table *tb, int t, const char *out, posemb_error *err)
{
    const posemb_study_config *c = tb->c;
    double x[8], y[POSEMB_STUDY_MAX_PES][8];
    posemb_series s[POSEMB_STUDY_MAX_PES];
    int ns = 0, seen[8] = {0}, lengths = 0;
    int log_axis = 1; /* lengths that are powers of two on a log axis, whose ticks then fall on them */
    for (int m = 0; m < c->n_mults; m++) {
        long n = (long)c->n_train * c->mults[m];
        log_axis &= (n & (n - 1)) == 0;
    }
    for (int m = 0; m < c->n_mults; m++)
        x[m] = log_axis ? log2((double)c->n_train * c->mults[m]) : (double)c->n_train * c->mults[m];
    for (int p = 0; p < c->n_pes; p++) { /* a PE with no run yet (--report) is left out */
        int any = 0;
        for (int m = 0; m < c->n_mults; m++) {
            y[ns][m] = study_table_stats(tb, p, t, m, -1).mean;
            int finite = !isnan(y[ns][m]);
            any |= finite;
            seen[m] |= finite;
        }
        if (!any) continue;
        s[ns] = (posemb_series){.label = c->pes[p], .x = x, .y = y[ns], .n = c->n_mults, .points = 2};
        ns++;
    }
    for (int m = 0; m < c->n_mults; m++) lengths += seen[m];
    if (lengths < 2) return POSEMB_OK; /* evaluated at the trained length only */
    char title[160], name[96], path[POSEMB_PATH_MAX];
    const char *metric = posemb_study_task_metric(c, t);
    snprintf(title, sizeof title, "%s: %s against length (trained at %d)", c->tasks[t], metric, c->n_train);
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = title;
    o.xlabel = log_axis ? "evaluation length (tokens, log scale)" : "evaluation length (tokens)";
    o.xlog2 = log_axis;
    o.ylabel = metric;
    o.ymin = 0;
    o.ymax = 1.02;
    o.width = 760;
    o.height = 480;
    o.legend = 1;
    snprintf(name, sizeof name, "length_%s.png", c->tasks[t]);
    if (posemb_path_join(path, sizeof path, out, name)) return posemb_fail(err, POSEMB_EINVAL, "path too long");
    posemb_status st = study_lines_figure(path, s, ns, &o, err);
    return st ? st : posemb_report_image(rep, path, title, err);
}

/* PE p's seed-averaged curve on task t: up to POSEMB_STUDY_MAX_CURVE points into x, y; returns how many. */
static int curve_points(const study_table *tb, int p, int t, double *x, double *y)
{
    const posemb_study_config *c = tb->c;
    int n = 0;
    for (int k = 0; k < POSEMB_STUDY_MAX_CURVE; k++) {
        double sum = 0, step = 0;
        int cnt = 0;
        for (int sd = 0; sd < c->n_seeds; sd++) {
            size_t r = ((size_t)p * c->n_tasks + t) * c->n_seeds + sd;
            if (k < tb->n_curve[r]) {
                step = tb->curve[(r * POSEMB_STUDY_MAX_CURVE + k) * 2];
                sum += tb->curve[(r * POSEMB_STUDY_MAX_CURVE + k) * 2 + 1];
                cnt++;
            }
        }
        if (cnt) {
            x[n] = step;
            y[n++] = sum / cnt;
        }
    }
    return n;
}

static posemb_status curve_plot(posemb_report *rep, const posemb_study_config *c, int t, const posemb_series *s, int ns,
                                const char *out, posemb_error *err)
{
    char title[160], name[96], path[POSEMB_PATH_MAX];
    snprintf(title, sizeof title, "%s: training curve at %d tokens", c->tasks[t], c->n_train);
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = title;
    o.xlabel = "training step";
    o.ylabel = "held-out metric";
    o.ymin = c->data[0] ? -0.2 : 0;
    o.ymax = 1.02;
    o.width = 760;
    o.height = 480;
    o.legend = 1;
    snprintf(name, sizeof name, "curve_%s.png", c->tasks[t]);
    if (posemb_path_join(path, sizeof path, out, name)) return posemb_fail(err, POSEMB_EINVAL, "path too long");
    posemb_status st = study_lines_figure(path, s, ns, &o, err);
    return st ? st : posemb_report_image(rep, path, title, err);
}

/* Metric against training step at the trained length, seed-averaged, one line per PE. */
static posemb_status curve_figure(posemb_report *rep, const study_table *tb, int t, const char *out, posemb_error *err)
{
    const posemb_study_config *c = tb->c;
    double *x = malloc((size_t)c->n_pes * POSEMB_STUDY_MAX_CURVE * 2 * sizeof *x),
           *y = x + (size_t)c->n_pes * POSEMB_STUDY_MAX_CURVE;
    if (!x) return posemb_fail(err, POSEMB_ENOMEM, "out of memory for a curve figure");
    posemb_series s[POSEMB_STUDY_MAX_PES];
    int ns = 0;
    for (int p = 0; p < c->n_pes; p++) {
        int n = curve_points(tb, p, t, x + p * POSEMB_STUDY_MAX_CURVE, y + p * POSEMB_STUDY_MAX_CURVE);
        if (n)
            s[ns++] = (posemb_series){
                .label = c->pes[p], .x = x + p * POSEMB_STUDY_MAX_CURVE, .y = y + p * POSEMB_STUDY_MAX_CURVE, .n = n};
    }
    posemb_status st = ns ? curve_plot(rep, c, t, s, ns, out, err) : POSEMB_OK;
    free(x);
    return st;
}

/* The indicators an earlier analysis wrote to dir/indicators.json, for a
 * model that is gone (a study continued elsewhere keeps its analysis/ but
 * not its models): the first of similarity, rel_similarity, identical, and
 * the positions it read (0 if the file does not say). */
static int saved_indicators(const char *dir, posemb_indicators *in, const char **which, int *positions)
{
    static const char *const KINDS[] = {"similarity", "rel_similarity", "identical"};
    char path[POSEMB_PATH_MAX], *text = NULL;
    size_t n;
    posemb_error quiet;
    if (posemb_path_join(path, sizeof path, dir, "indicators.json") ||
        posemb_read_data_file(path, 1u << 24, &text, &n, &quiet))
        return -1;
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    const cJSON *npos = cJSON_GetObjectItemCaseSensitive(root, "n");
    *positions = cJSON_IsNumber(npos) ? npos->valueint : 0;
    int found = -1;
    for (int k = 0; k < 3 && found < 0; k++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, KINDS[k]);
        const cJSON *ti = cJSON_GetObjectItemCaseSensitive(o, "ti"),
                    *mono = cJSON_GetObjectItemCaseSensitive(o, "mono");
        const cJSON *win = cJSON_GetObjectItemCaseSensitive(o, "window"),
                    *sym = cJSON_GetObjectItemCaseSensitive(o, "sym");
        if (!cJSON_IsNumber(ti) || !cJSON_IsNumber(mono) || !cJSON_IsNumber(win) || !cJSON_IsNumber(sym)) continue;
        *in = (posemb_indicators){
            .ti = ti->valuedouble, .mono = mono->valuedouble, .window = win->valueint, .sym = sym->valuedouble};
        *which = KINDS[k];
        found = 0;
    }
    cJSON_Delete(root);
    return found;
}

/* A study analyses its models over the positions they were trained at, the
 * first n_train (the pretraining's for a real-data study): the rows of a
 * learned table past them keep their initialisation, and indicators over
 * them would measure that, not what the PE learned (docs/study.md). */
static posemb_source_opts trained_positions(const posemb_study_config *c)
{
    return (posemb_source_opts){.len = c->n_train};
}

/* The analysis of a study's models: 50 identical words, no report of its own. */
static posemb_analyze_opts study_analyze_opts(void)
{
    posemb_analyze_opts ao = posemb_analyze_defaults();
    ao.n_words = 50;
    ao.report = 0;
    ao.quiet = 1;
    return ao;
}

/* Each PE's first model (seed 1, first task): its indicators and main heatmap. */
static posemb_status model_analyses(posemb_report *rep, const posemb_study_config *c, const char *out,
                                    posemb_error *err)
{
    static const char *const head[] = {"PE", "matrix", "TI", "MONO", "window", "SYM"};
    char(*buf)[48] = calloc((size_t)c->n_pes * 6, sizeof *buf), models[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX],
    img[POSEMB_PATH_MAX];
    const char **cells = calloc((size_t)c->n_pes * 6, sizeof *cells);
    char(*imgs)[POSEMB_PATH_MAX + 32] = calloc((size_t)c->n_pes, sizeof *imgs);
    if (!buf || !cells || !imgs) {
        free(buf);
        free(cells);
        free(imgs);
        return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    int rows = 0;
    posemb_status st = POSEMB_OK;
    snprintf(img, sizeof img, "%s/analysis", out);
    if (mkdir(img, 0755) && errno != EEXIST) st = posemb_fail(err, POSEMB_EIO, "%s: cannot create", img);
    posemb_analyze_opts ao = study_analyze_opts();
    posemb_source_opts so = trained_positions(c);
    for (int p = 0; !st && p < c->n_pes; p++) {
        char name[160];
        study_folder_of(c->pes[p], name, sizeof name);
        snprintf(models, sizeof models, c->data[0] ? "%s/models/%s/pretrain" : "%s/models/%s", out, name);
        snprintf(dir, sizeof dir, "%s/analysis/%s", out, name);
        posemb_source s;
        posemb_analysis r;
        posemb_indicators kept;
        const posemb_indicators *in = NULL;
        const char *which = NULL;
        int open = !posemb_source_open(&s, models, &so, NULL), positions = c->n_train;
        if (!open && !saved_indicators(dir, &kept, &which, &positions)) in = &kept; /* gone, its analysis kept */
        if (!open && !in) continue;                                                 /* not saved (analysis off) */
        if (open) {
            st = posemb_analyze(&s, &ao, dir, &r, err);
            in = r.has_similarity  ? &r.similarity
                 : r.has_rel       ? &r.rel_similarity
                 : r.has_identical ? &r.identical
                                   : NULL;
            which = r.has_similarity ? "similarity" : r.has_rel ? "rel_similarity" : "identical";
        }
        if (!st && in) {
            snprintf(buf[rows * 6], 48, "%.47s", c->pes[p]);
            if (positions == c->n_train) snprintf(buf[rows * 6 + 1], 48, "%s", which);
            else snprintf(buf[rows * 6 + 1], 48, "%s, over %d", which, positions); /* kept from another rule */
            snprintf(buf[rows * 6 + 2], 48, "%.3f", in->ti);
            snprintf(buf[rows * 6 + 3], 48, "%.3f", in->mono);
            snprintf(buf[rows * 6 + 4], 48, "%d", in->window);
            snprintf(buf[rows * 6 + 5], 48, "%.3f", in->sym);
            for (int k = 0; k < 6; k++) cells[rows * 6 + k] = buf[rows * 6 + k];
            snprintf(imgs[rows++], sizeof imgs[0], "%s/%s.png", dir, which);
            if (!open && access(imgs[rows - 1], R_OK)) imgs[rows - 1][0] = '\0'; /* its figure not kept either */
        }
        if (!open) continue;
        posemb_analysis_free(&r);
        posemb_source_close(&s);
    }
    if (!st && rows) {
        posemb_report_heading(rep, 2, "What each PE learned");
        char text[600];
        snprintf(text, sizeof text,
                 "%s, analysed as 'posemb analyze --len %d --words 50' does, over the %d positions it was trained at: "
                 "the indicators of its position similarity (or of its relative vectors, or of its identical-word "
                 "attention) and the heatmap. A row whose matrix says 'over N' was kept from an analysis over N "
                 "positions, its model gone.",
                 c->data[0] ? "Each PE's pretrained model"
                            : "Each PE's model trained on the first task with the first seed",
                 c->n_train, c->n_train);
        posemb_report_paragraph(rep, text);
        posemb_report_table(rep, head, 6, cells, rows, "Indicators of the trained models");
        for (int i = 0; !st && i < rows; i++)
            if (imgs[i][0]) st = posemb_report_image(rep, imgs[i], cells[i * 6], err);
    }
    free(buf);
    free(cells);
    free(imgs);
    return st;
}

/* Each PE's first-seed model of every task analysed without figures into
 * analysis/PE/TASK/ (the first task's is models/PE, analysed again here so
 * that every task has the same layout): scripts/study-claims tests the
 * properties against each task's scores with its own models. A model not
 * kept (a study from before, or moved elsewhere) is skipped. */
static posemb_status task_analyses(const posemb_study_config *c, const char *out, posemb_error *err)
{
    posemb_analyze_opts ao = study_analyze_opts();
    posemb_source_opts so = trained_positions(c);
    ao.figures = 0;
    posemb_status st = POSEMB_OK;
    for (int k = 0; !st && k < c->n_pes * c->n_tasks; k++) {
        int p = k / c->n_tasks, t = k % c->n_tasks;
        char name[160], model[POSEMB_PATH_MAX], pe_dir[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX], cfg[POSEMB_PATH_MAX];
        study_folder_of(c->pes[p], name, sizeof name);
        int n = snprintf(pe_dir, sizeof pe_dir, "%s/analysis/%s", out, name);
        if (study_model_dir(out, name, t ? c->tasks[t] : NULL, c->seeds[0], model, sizeof model) || n < 0 ||
            (size_t)n >= sizeof pe_dir || posemb_path_join(dir, sizeof dir, pe_dir, c->tasks[t]) ||
            posemb_path_join(cfg, sizeof cfg, model, "config.json"))
            return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
        struct stat info;
        if (stat(cfg, &info)) continue;
        if (mkdir(pe_dir, 0755) && errno != EEXIST) return posemb_fail(err, POSEMB_EIO, "%s: cannot create", pe_dir);
        posemb_source s;
        if ((st = posemb_source_open(&s, model, &so, err))) break;
        posemb_analysis r = {0};
        st = posemb_analyze(&s, &ao, dir, &r, err);
        posemb_analysis_free(&r);
        posemb_source_close(&s);
    }
    return st;
}

/* The report's ranking beyond the training length: exact match over every LM task, as tables.md's first. */
static posemb_status html_lm_ranking(posemb_report *rep, const posemb_study_config *c, const char *out,
                                     posemb_error *err)
{
    if (!study_table_has_kind(c, POSEMB_SYN_LM) || c->n_mults < 2 || c->n_pes < 2) return POSEMB_OK;
    study_table ex = {0};
    posemb_status st = study_table_load_lm_metric(&ex, c, out, "exact_match", err);
    double mrr[STUDY_TABLE_LENGTHS][POSEMB_STUDY_MAX_PES];
    int units[STUDY_TABLE_LENGTHS], decided[STUDY_TABLE_LENGTHS], cols = c->n_mults;
    int rows = c->n_pes + 2; /* the PEs, the pairs ranked, those where the PEs differ */
    char head_buf[STUDY_TABLE_LENGTHS][32], (*buf)[64] = calloc((size_t)rows * cols, sizeof *buf);
    const char *head[STUDY_TABLE_LENGTHS] = {"PE"}, **cells = calloc((size_t)rows * cols, sizeof *cells);
    if (!st && (!buf || !cells)) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) {
        study_table_rank_lengths(&ex, &ex, 0, mrr, units, decided);
        for (int m = 1; m < cols; m++) {
            snprintf(head_buf[m], sizeof head_buf[m], "%d tokens", c->n_train * c->mults[m]);
            head[m] = head_buf[m];
        }
        for (int p = 0; p < rows; p++)
            for (int m = 0; m < cols; m++) {
                char *x = buf[p * cols + m];
                const char *name = p < c->n_pes    ? c->pes[p]
                                   : p == c->n_pes ? "(task, seed) pairs ranked"
                                                   : "of them, pairs where the PEs differ";
                if (!m) snprintf(x, 64, "%.63s", name);
                else if (p >= c->n_pes) snprintf(x, 64, "%d", p == c->n_pes ? units[m] : decided[m]);
                else snprintf(x, 64, units[m] ? "%.3f" : "-", mrr[m][p]);
                cells[p * cols + m] = x;
            }
        posemb_report_heading(rep, 2, "Ranking beyond the training length");
        posemb_report_paragraph(rep, "After Kazemnejad et al. 2023: in each causal-LM task and seed the PEs are "
                                     "ranked by exact match at the length, and each PE's mean reciprocal rank is "
                                     "given (1: always first); tied PEs share the mean of the reciprocal ranks they "
                                     "span. tables.md also ranks by answer-token accuracy (averaged over input "
                                     "lengths, Ruoss et al.'s score, when every line has it) and over the learned "
                                     "tasks alone.");
        posemb_report_table(rep, head, cols, cells, rows, "Mean reciprocal rank by exact match");
    }
    free(buf);
    free(cells);
    study_table_free(&ex);
    return st;
}

posemb_status study_runs_report(const posemb_study_config *c, const char *out, posemb_error *err)
{
    study_table tb = {0};
    posemb_status st = study_table_load(&tb, c, out, NULL, err);
    int ape = study_table_index_of(c->pes, c->n_pes, "ape");
    posemb_report *rep = st ? NULL : posemb_report_new("posemb study");
    if (!st && !rep) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    char text[2048], path[POSEMB_PATH_MAX];
    if (!st) {
        posemb_report_heading(rep, 1, "Position embeddings compared by training");
        st = study_claims_report(rep, c, out, err); /* the answer first: verdicts and ranking */
    }
    if (!st) {
        posemb_report_heading(rep, 2, "How the study ran");
        if (c->data[0])
            snprintf(
                text, sizeof text,
                "%d PEs x %d tasks x %d seeds on %.512s. For each PE a BERT (%d layers, width %d, %d "
                "heads) is pretrained with masked LM for %d steps of %d sequences of %d tokens, then fine-tuned "
                "on each "
                "task with each seed for at most %d steps; the best dev evaluation is kept. GLUE: dev sets; SQuAD and "
                "SQuAD-locate (each question replaced by its answer's text): the held-out articles of the dev "
                "file, also with windows longer than the pretraining length. Mean ± std over "
                "seeds; * marks a two-sided Welch t-test against ape with p < 0.05.",
                c->n_pes, c->n_tasks, c->n_seeds, c->data, c->layers, c->hidden, c->heads, c->real.pretrain_steps,
                c->real.pretrain_batch, c->n_train, c->steps);
        else
            snprintf(
                text, sizeof text,
                "%d PEs x %d tasks x %d seeds. Each run trains a BERT-style encoder (a GPT-2-style "
                "decoder for causal-LM tasks; %d layers, width %d, %d heads) from its initialisation for %d steps of "
                "%d "
                "sequences of %d tokens, then evaluates it on %d held-out sequences at each length. Mean ± std over "
                "seeds; * marks a two-sided Welch t-test against ape with p < 0.05. Chance: 0.5 for the order and "
                "distance tasks, about 1/length for spans, 1/48 for LM tokens.",
                c->n_pes, c->n_tasks, c->n_seeds, c->layers, c->hidden, c->heads, c->steps, c->batch, c->n_train,
                c->eval_examples);
        posemb_report_paragraph(rep, text);
        study_budgets_text(c, text, sizeof text);
        if (text[0]) posemb_report_paragraph(rep, text);
        if (study_table_has_kind(c, POSEMB_SYN_CLASSIFY)) {
            posemb_report_heading(rep, 2, "Table 2: classification");
            html_table(rep, &tb, POSEMB_SYN_CLASSIFY, ape, "Accuracy at the training length");
        }
        if (study_table_has_kind(c, POSEMB_SYN_SPAN)) {
            posemb_report_heading(rep, 2, "Table 3: span prediction");
            html_table(rep, &tb, POSEMB_SYN_SPAN, ape, "Exact match at the training length");
        }
        if (study_table_has_kind(c, POSEMB_SYN_LM)) {
            posemb_report_heading(rep, 2, "Causal language modelling");
            html_table(rep, &tb, POSEMB_SYN_LM, ape,
                       "Answer-token accuracy of a GPT-2-style decoder at the training length");
        }
        posemb_report_heading(rep, 2, "Figure 1: longer sequences");
    }
    for (int t = 0; !st && t < c->n_tasks; t++) st = length_figure(rep, &tb, t, out, err);
    if (!st) st = html_lm_ranking(rep, c, out, err);
    if (!st) posemb_report_heading(rep, 2, "Training curves");
    if (!st && c->data[0]) st = study_pretrain_figure(rep, c, out, err);
    for (int t = 0; !st && t < c->n_tasks; t++) st = curve_figure(rep, &tb, t, out, err);
    if (!st && c->analyze) st = model_analyses(rep, c, out, err);
    if (!st && c->analyze && !c->data[0]) st = task_analyses(c, out, err);
    if (!st && posemb_path_join(path, sizeof path, out, "report.html"))
        st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st) st = posemb_report_write(rep, path, err);
    posemb_report_free(rep);
    study_table_free(&tb);
    return st;
}
