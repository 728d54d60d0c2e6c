/* The study's tables and report, from results.jsonl. */
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

/* results[pe][task][mult][seed]: the metric (NAN when absent); curves of the 1x lines. */
typedef struct table {
    const posemb_study_config *c;
    double *v;
    unsigned char *collapsed; /* as v: the run's predictions were constant ("collapsed": true) */
    double *curve;            /* [pe][task][seed][POSEMB_STUDY_MAX_CURVE][2] */
    int *n_curve;             /* [pe][task][seed] */
    double *chance;           /* [task][mult], as the lines record it */
    double *match;            /* [task][mult]: span tasks' first-matching-word reference ("token_match"), else NAN */
    const char *metric;       /* the lines' metric it holds; NULL: each line's first (the task kind's own) */
    char kind[POSEMB_STUDY_MAX_TASKS][16];
} table;

static double *cell(const table *tb, int p, int t, int m, int s)
{
    const posemb_study_config *c = tb->c;
    return &tb->v[(((size_t)p * c->n_tasks + t) * c->n_mults + m) * c->n_seeds + s];
}

static unsigned char *collapsed_at(const table *tb, int p, int t, int m, int s)
{
    return tb->collapsed + (cell(tb, p, t, m, s) - tb->v);
}

static int index_of(const char (*names)[128], int n, const char *x)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], x)) return i;
    return -1;
}

static posemb_status take_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n, (void)err;
    table *tb = ctx;
    const posemb_study_config *c = tb->c;
    const cJSON *spec = cJSON_GetObjectItem(j, "pe"), *task = cJSON_GetObjectItem(j, "task"),
                *seed = cJSON_GetObjectItem(j, "seed");
    const cJSON *len = cJSON_GetObjectItem(j, "eval_len"), *metrics = cJSON_GetObjectItem(j, "metrics");
    if (!cJSON_IsString(spec) || !cJSON_IsString(task) || !cJSON_IsNumber(seed) || !cJSON_IsNumber(len) || !metrics ||
        !metrics->child)
        return POSEMB_OK;
    int p = index_of(c->pes, c->n_pes, spec->valuestring), t = -1, s = -1, m = -1;
    for (int i = 0; i < c->n_tasks; i++) t = strcmp(c->tasks[i], task->valuestring) ? t : i;
    for (int i = 0; i < c->n_seeds; i++) s = c->seeds[i] == seed->valueint ? i : s;
    for (int i = 0; i < c->n_mults; i++) m = c->n_train * c->mults[i] == len->valueint ? i : m;
    if (p < 0 || t < 0 || s < 0 || m < 0) return POSEMB_OK; /* a run of another configuration */
    const cJSON *v = tb->metric ? cJSON_GetObjectItem(metrics, tb->metric) : metrics->child;
    if (!cJSON_IsNumber(v)) return POSEMB_OK; /* a line without it (an LM line from before exact_match) */
    *cell(tb, p, t, m, s) = v->valuedouble;
    *collapsed_at(tb, p, t, m, s) = cJSON_IsTrue(cJSON_GetObjectItem(j, "collapsed"));
    const cJSON *chance = cJSON_GetObjectItem(j, "chance"), *kind = cJSON_GetObjectItem(j, "kind");
    if (cJSON_IsNumber(chance)) tb->chance[t * c->n_mults + m] = chance->valuedouble;
    const cJSON *match = cJSON_GetObjectItem(j, "token_match");
    if (cJSON_IsNumber(match)) tb->match[t * c->n_mults + m] = match->valuedouble;
    if (cJSON_IsString(kind)) snprintf(tb->kind[t], sizeof tb->kind[t], "%.15s", kind->valuestring);
    const cJSON *curve = cJSON_GetObjectItem(j, "curve"), *pt;
    size_t k = ((size_t)p * c->n_tasks + t) * c->n_seeds + s;
    if (!cJSON_IsArray(curve)) return POSEMB_OK; /* only the line of the training length carries the curve */
    tb->n_curve[k] = 0;
    cJSON_ArrayForEach(pt, curve) if (tb->n_curve[k] < POSEMB_STUDY_MAX_CURVE)
    {
        tb->curve[(k * POSEMB_STUDY_MAX_CURVE + tb->n_curve[k]) * 2] = cJSON_GetArrayItem(pt, 0)->valuedouble;
        tb->curve[(k * POSEMB_STUDY_MAX_CURVE + tb->n_curve[k]++) * 2 + 1] = cJSON_GetArrayItem(pt, 1)->valuedouble;
    }
    return POSEMB_OK;
}

static posemb_status load_table(table *tb, const posemb_study_config *c, const char *out, const char *metric,
                                posemb_error *err)
{
    size_t n = (size_t)c->n_pes * c->n_tasks * c->n_mults * c->n_seeds, nr = (size_t)c->n_pes * c->n_tasks * c->n_seeds;
    tb->c = c;
    tb->metric = metric;
    tb->v = malloc(n * sizeof *tb->v);
    tb->collapsed = calloc(n, 1);
    tb->curve = calloc(nr * POSEMB_STUDY_MAX_CURVE * 2, sizeof *tb->curve);
    tb->n_curve = calloc(nr, sizeof *tb->n_curve);
    tb->chance = malloc((size_t)c->n_tasks * c->n_mults * sizeof *tb->chance);
    tb->match = malloc((size_t)c->n_tasks * c->n_mults * sizeof *tb->match);
    if (!tb->v || !tb->collapsed || !tb->curve || !tb->n_curve || !tb->chance || !tb->match)
        return posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    for (size_t i = 0; i < n; i++) tb->v[i] = NAN;
    for (int i = 0; i < c->n_tasks * c->n_mults; i++) tb->chance[i] = tb->match[i] = NAN;
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "path too long");
    FILE *f = fopen(path, "r");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot open", path);
    posemb_status st = study_each_line(f, take_line, tb, err); /* later lines win: a rerun replaces */
    fclose(f);
    return st;
}

static void free_table(table *tb)
{
    free(tb->v);
    free(tb->collapsed);
    free(tb->curve);
    free(tb->n_curve);
    free(tb->chance);
    free(tb->match);
}

typedef struct stats {
    double mean, std, p; /* p: Welch against ape (NAN for ape itself or when not computable) */
    int n, collapsed;    /* seeds that ran; those of them whose predictions were constant */
} stats;

/* The seeds of (p, t, m) that ran. */
static int values(const table *tb, int p, int t, int m, double *out)
{
    int n = 0;
    for (int s = 0; s < tb->c->n_seeds; s++)
        if (!isnan(*cell(tb, p, t, m, s))) out[n++] = *cell(tb, p, t, m, s);
    return n;
}

static stats stats_of(const table *tb, int p, int t, int m, int ape)
{
    double x[16], y[16];
    stats st = {NAN, NAN, NAN, values(tb, p, t, m, x), 0};
    if (!st.n) return st;
    for (int s = 0; s < tb->c->n_seeds; s++)
        st.collapsed += !isnan(*cell(tb, p, t, m, s)) && *collapsed_at(tb, p, t, m, s);
    double sum = 0, sq = 0;
    for (int i = 0; i < st.n; i++) sum += x[i];
    st.mean = sum / st.n;
    for (int i = 0; i < st.n; i++) sq += (x[i] - st.mean) * (x[i] - st.mean);
    st.std = st.n > 1 ? sqrt(sq / (st.n - 1)) : 0; /* the sample standard deviation */
    int ny = ape >= 0 && ape != p ? values(tb, ape, t, m, y) : 0;
    if (ny >= 2 && st.n >= 2) st.p = posemb_welch_ttest(x, st.n, y, ny).p;
    return st;
}

static int is_kind(const posemb_study_config *c, int t, posemb_syn_kind k) { return posemb_study_task_kind(c, t) == k; }

static int has_kind(const posemb_study_config *c, posemb_syn_kind k)
{
    for (int t = 0; t < c->n_tasks; t++)
        if (is_kind(c, t, k)) return 1;
    return 0;
}

/* "0.912 ± 0.011*": the star marks p < 0.05 against ape; "(2c)": 2 of the seeds collapsed. */
static void fmt_cell(char *buf, size_t cap, stats s)
{
    char c[16] = "";
    if (s.collapsed) snprintf(c, sizeof c, " (%dc)", s.collapsed);
    if (!s.n) snprintf(buf, cap, "-");
    else if (s.n == 1) snprintf(buf, cap, "%.3f%s", s.mean, c); /* one seed (so far): no spread, no test */
    else snprintf(buf, cap, "%.3f ± %.3f%s%s", s.mean, s.std, !isnan(s.p) && s.p < 0.05 ? "*" : "", c);
}

/* How many runs of the table collapsed, of how many. */
static void count_collapsed(const table *tb, int *collapsed, int *runs)
{
    const posemb_study_config *c = tb->c;
    *collapsed = *runs = 0;
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int s = 0; s < c->n_seeds; s++)
                if (!isnan(*cell(tb, p, t, 0, s))) {
                    (*runs)++;
                    *collapsed += *collapsed_at(tb, p, t, 0, s);
                }
}

/* A reference row under a table (ref: [task][mult], NAN where unknown), its
 * cells as md_table's: a task's value at the trained length, or per length
 * the mean over the tasks; no row when every cell is unknown. */
static void ref_row(FILE *f, const table *tb, const double *ref, const char *name, posemb_syn_kind kind, int by_length,
                    int only)
{
    const posemb_study_config *c = tb->c;
    double cells[POSEMB_STUDY_MAX_TASKS + sizeof c->mults / sizeof *c->mults]; /* a column per task or length */
    int ncell = 0, known = 0;
    for (int i = 0; i < (by_length ? c->n_mults : c->n_tasks); i++) {
        if (!by_length && !is_kind(c, i, kind)) continue;
        double sum = 0;
        int n = 0;
        for (int t = 0; t < c->n_tasks; t++) {
            int in = by_length ? is_kind(c, t, kind) && (only < 0 || t == only) : t == i;
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
static void md_table(FILE *f, const table *tb, posemb_syn_kind kind, int by_length, int only, int ape)
{
    const int m = 0; /* the trained length */
    const posemb_study_config *c = tb->c;
    char buf[64];
    fprintf(f, "| PE |");
    int cols = 0;
    for (int i = 0; i < (by_length ? c->n_mults : c->n_tasks); i++) {
        if (!by_length && !is_kind(c, i, kind)) continue;
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
            if (!by_length && !is_kind(c, i, kind)) continue;
            if (!by_length) {
                fmt_cell(buf, sizeof buf, stats_of(tb, p, i, m, ape));
                fprintf(f, " %s |", buf);
                continue;
            }
            double sum = 0; /* the mean over the kind's tasks */
            int n = 0;
            for (int t = 0; t < c->n_tasks; t++)
                if (is_kind(c, t, kind) && (only < 0 || t == only)) {
                    stats s = stats_of(tb, p, t, i, -1);
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

/* The tasks trained to their own budget (task_budgets), a sentence each, into buf ("" for none). */
void study_budgets_text(const posemb_study_config *c, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < c->n_tasks && n < cap; t++) {
        posemb_study_config b;
        const posemb_study_config *ct = posemb_study_for_task(c, c->tasks[t], &b);
        if (ct->steps == c->steps && ct->epochs == c->epochs && ct->curve_every == c->curve_every && ct->lr == c->lr)
            continue;
        n += (size_t)snprintf(buf + n, cap - n, "%s%s has its own budget: %s%d steps", n ? " " : "", c->tasks[t],
                              study_glue(c) ? "at most " : "", ct->steps);
        if (n < cap && study_glue(c) && ct->epochs != c->epochs)
            n += ct->epochs > 0 ? (size_t)snprintf(buf + n, cap - n, " (fewer where %g epochs take fewer)", ct->epochs)
                                : (size_t)snprintf(buf + n, cap - n, " (whatever the epochs)");
        if (n < cap && ct->lr != c->lr) n += (size_t)snprintf(buf + n, cap - n, " at learning rate %g", ct->lr);
        if (n < cap)
            n += ct->curve_every ? (size_t)snprintf(buf + n, cap - n, ", evaluated every %d.", ct->curve_every)
                                 : (size_t)snprintf(buf + n, cap - n, ", evaluated at the end.");
    }
}

/* 1 when some PE's mean exact match over seeds at the training length is >= 0.9:
 * a task no PE learns ranks nothing about extrapolation. */
static int lm_task_learned(const table *ex, int t)
{
    for (int p = 0; p < ex->c->n_pes; p++)
        if (stats_of(ex, p, t, 0, -1).mean >= 0.9) return 1;
    return 0;
}

enum { N_LENGTHS = sizeof((posemb_study_config *)0)->mults / sizeof(int) };

/* Each PE's mean reciprocal rank by score at every longer length m (mrr[m][p];
 * units[m] the (task, seed) pairs ranked, decided[m] those where not every PE
 * ties), over the LM tasks (learned_only: those ex says some PE learns). */
static void rank_lengths(const table *score, const table *ex, int learned_only, double (*mrr)[POSEMB_STUDY_MAX_PES],
                         int *units, int *decided)
{
    const posemb_study_config *c = score->c;
    enum { MAX_SEEDS = sizeof c->seeds / sizeof *c->seeds };
    double v[POSEMB_STUDY_MAX_TASKS * MAX_SEEDS * POSEMB_STUDY_MAX_PES];
    for (int m = 1; m < c->n_mults; m++) {
        int n = 0;
        for (int t = 0; t < c->n_tasks; t++) {
            if (!is_kind(c, t, POSEMB_SYN_LM) || (learned_only && !lm_task_learned(ex, t))) continue;
            for (int s = 0; s < c->n_seeds; s++, n++)
                for (int p = 0; p < c->n_pes; p++) v[n * c->n_pes + p] = *cell(score, p, t, m, s);
        }
        units[m] = study_mrr(v, n, c->n_pes, mrr[m], &decided[m]);
    }
}

/* One ranking table of score's PEs: a column per longer length. */
static void md_rank_table(FILE *f, const table *score, const table *ex, int learned_only)
{
    const posemb_study_config *c = score->c;
    double mrr[N_LENGTHS][POSEMB_STUDY_MAX_PES];
    int units[N_LENGTHS], decided[N_LENGTHS];
    rank_lengths(score, ex, learned_only, mrr, units, decided);
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

/* 1 when rl has a value wherever tb has a causal-LM one: a study with lines from before
 * rl's metric was recorded would rank and average the others over fewer pairs and tasks. */
static int covers(const table *rl, const table *tb)
{
    const posemb_study_config *c = tb->c;
    int any = 0;
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int m = 0; m < c->n_mults && is_kind(c, t, POSEMB_SYN_LM); m++)
                for (int s = 0; s < c->n_seeds; s++) {
                    if (isnan(*cell(tb, p, t, m, s))) continue;
                    if (isnan(*cell(rl, p, t, m, s))) return 0;
                    any = 1;
                }
    return any;
}

/* Kazemnejad et al. 2023's ranking of the PEs beyond the training length, by exact
 * match (theirs) and by answer-token accuracy averaged over input lengths (rl: Ruoss
 * et al.'s score; pooled over tokens, tb, when some line is from before it was recorded). */
static void md_lm_ranking(FILE *f, const table *tb, const table *ex, const table *rl)
{
    const posemb_study_config *c = ex->c;
    if (c->n_pes < 2) return;
    int learned = 0, lm = 0;
    char names[POSEMB_STUDY_MAX_TASKS * 34] = "";
    for (int t = 0; t < c->n_tasks; t++)
        if (is_kind(c, t, POSEMB_SYN_LM)) {
            lm++;
            if (!lm_task_learned(ex, t)) continue;
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
    int ruoss = covers(rl, tb);
    const table *score[2] = {ex, ruoss ? rl : tb};
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
static void md_lm_tables(FILE *f, const table *tb, const table *ex, const table *rl, int ape)
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
    if (covers(rl, tb)) {
        fprintf(f, "\n## Longer sequences (answer-token accuracy averaged over input lengths, Ruoss et al. 2023's "
                   "score: each input length weighs alike; mean over tasks)\n\n");
        md_table(f, rl, POSEMB_SYN_LM, 1, -1, ape);
    }
    for (int t = 0; t < c->n_tasks; t++)
        if (is_kind(c, t, POSEMB_SYN_LM)) {
            fprintf(f, "\n### %s by length: answer-token accuracy\n\n", c->tasks[t]);
            md_table(f, tb, POSEMB_SYN_LM, 1, t, ape);
            fprintf(f, "\n### %s by length: exact match\n\n", c->tasks[t]);
            md_table(f, ex, POSEMB_SYN_LM, 1, t, ape);
        }
    md_lm_ranking(f, tb, ex, rl);
}

static posemb_status write_md(const table *tb, const table *ex, const table *rl, const char *out, int ape,
                              posemb_error *err)
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
                c->pretrain_steps, c->pretrain_batch, c->n_train, c->data, c->steps, c->batch,
                c->epochs > 0 ? ", fewer where the epochs take fewer" : "", c->curve_every);
    else fprintf(f, "trained %d steps at %d tokens.\n\n", c->steps, c->n_train);
    char budgets[2048];
    study_budgets_text(c, budgets, sizeof budgets);
    if (budgets[0]) fprintf(f, "%s\n\n", budgets);
    int nc, nr;
    count_collapsed(tb, &nc, &nr);
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
            if (is_kind(c, t, POSEMB_SYN_SPAN)) {
                fprintf(f,
                        "\n## Figure 1: longer documents (%s F1 with windows of 1x, 2x, ... the pretraining "
                        "length)\n\n",
                        c->tasks[t]);
                md_table(f, tb, POSEMB_SYN_SPAN, 1, t, ape);
            }
        return posemb_atomic_commit(&af, err);
    }
    /* only the sections of the kinds of task the config has: no empty tables */
    if (has_kind(c, POSEMB_SYN_CLASSIFY)) {
        fprintf(f, "## Table 2: classification (accuracy at %d tokens)\n\n", c->n_train);
        md_table(f, tb, POSEMB_SYN_CLASSIFY, 0, -1, ape);
    }
    if (has_kind(c, POSEMB_SYN_SPAN)) {
        fprintf(f, "\n## Table 3: span prediction (exact match at %d tokens)\n\n", c->n_train);
        md_table(f, tb, POSEMB_SYN_SPAN, 0, -1, ape);
    }
    if (has_kind(c, POSEMB_SYN_CLASSIFY)) {
        fprintf(f, "\n## Figure 1: longer sequences (classification accuracy, mean over tasks)\n\n");
        md_table(f, tb, POSEMB_SYN_CLASSIFY, 1, -1, ape);
    }
    if (has_kind(c, POSEMB_SYN_SPAN)) {
        fprintf(f, "\n## Longer sequences (span exact match, mean over tasks)\n\n");
        md_table(f, tb, POSEMB_SYN_SPAN, 1, -1, ape);
    }
    if (has_kind(c, POSEMB_SYN_LM)) md_lm_tables(f, tb, ex, rl, ape);
    return posemb_atomic_commit(&af, err);
}

static posemb_status write_csv(const table *tb, const table *ex, const table *rl, const char *out, int ape,
                               posemb_error *err)
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
                stats s = stats_of(tb, p, t, m, ape);
                if (!s.n) continue;                  /* GLUE tasks have the trained length only */
                stats e = stats_of(ex, p, t, m, -1); /* LM tasks' whole answers, mean over seeds */
                stats r = stats_of(rl, p, t, m, -1); /* and their accuracy averaged over input lengths */
                fprintf(af.f, "%s,%s,%s,%d,%.6f,%.6f,%d,%.6g,%.6f,%d,%.6g,%.6g,%.6g\n", c->pes[p], c->tasks[t],
                        tb->kind[t], c->n_train * c->mults[m], s.mean, s.std, s.n, s.p, tb->chance[t * c->n_mults + m],
                        s.collapsed, tb->match[t * c->n_mults + m], e.n ? e.mean : NAN, r.n ? r.mean : NAN);
            }
    return posemb_atomic_commit(&af, err);
}

/* A causal-LM tasks' metric other than the first: exact_match (a span task's own metric
 * has the name too: LM tasks' only) or length_mean_accuracy. */
static posemb_status load_lm_metric(table *ex, const posemb_study_config *c, const char *out, const char *metric,
                                    posemb_error *err)
{
    posemb_status st = load_table(ex, c, out, metric, err);
    for (int i = 0; !st && i < c->n_tasks * c->n_mults; i++) /* the token's chance is not a whole answer's */
        ex->chance[i] = ex->match[i] = NAN;
    for (int p = 0; !st && p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int m = 0; m < c->n_mults && !is_kind(c, t, POSEMB_SYN_LM); m++)
                for (int s = 0; s < c->n_seeds; s++) *cell(ex, p, t, m, s) = NAN;
    return st;
}

posemb_status posemb_study_tables(const posemb_study_config *c, const char *out, posemb_error *err)
{
    if (c->length) return study_length_tables(c, out, err);
    table tb = {0}, ex = {0}, rl = {0};
    posemb_status st = load_table(&tb, c, out, NULL, err);
    if (!st) st = load_lm_metric(&ex, c, out, "exact_match", err);
    if (!st) st = load_lm_metric(&rl, c, out, "length_mean_accuracy", err);
    int ape = index_of(c->pes, c->n_pes, "ape");
    if (!st && c->data[0]) st = study_pretrain_keep(c, out, err);
    if (!st) st = write_md(&tb, &ex, &rl, out, ape, err);
    if (!st) st = write_csv(&tb, &ex, &rl, out, ape, err);
    free_table(&tb);
    free_table(&ex);
    free_table(&rl);
    return st;
}

/* An HTML table of one kind at the trained length (Tables 2 and 3). */
static void html_table(posemb_report *rep, const table *tb, posemb_syn_kind kind, int ape, const char *caption)
{
    const posemb_study_config *c = tb->c;
    const char *head[POSEMB_STUDY_MAX_TASKS + 1] = {"PE"};
    int cols = 1, idx[POSEMB_STUDY_MAX_TASKS];
    for (int t = 0; t < c->n_tasks; t++)
        if (is_kind(c, t, kind)) {
            idx[cols - 1] = t;
            head[cols++] = c->tasks[t];
        }
    if (cols == 1) return;
    int rows = c->n_pes;
    char(*buf)[64] = calloc((size_t)(rows + 2) * cols, sizeof *buf);
    const char **cells = calloc((size_t)(rows + 2) * cols, sizeof *cells);
    for (int p = 0; buf && cells && p < c->n_pes; p++) {
        snprintf(buf[p * cols], 64, "%.63s", c->pes[p]);
        for (int k = 1; k < cols; k++) fmt_cell(buf[p * cols + k], 64, stats_of(tb, p, idx[k - 1], 0, ape));
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
static posemb_status length_figure(posemb_report *rep, const table *tb, int t, const char *out, posemb_error *err)
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
            y[ns][m] = stats_of(tb, p, t, m, -1).mean;
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
static int curve_points(const table *tb, int p, int t, double *x, double *y)
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
static posemb_status curve_figure(posemb_report *rep, const table *tb, int t, const char *out, posemb_error *err)
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
    if (!has_kind(c, POSEMB_SYN_LM) || c->n_mults < 2 || c->n_pes < 2) return POSEMB_OK;
    table ex = {0};
    posemb_status st = load_lm_metric(&ex, c, out, "exact_match", err);
    double mrr[N_LENGTHS][POSEMB_STUDY_MAX_PES];
    int units[N_LENGTHS], decided[N_LENGTHS], cols = c->n_mults;
    int rows = c->n_pes + 2; /* the PEs, the pairs ranked, those where the PEs differ */
    char head_buf[N_LENGTHS][32], (*buf)[64] = calloc((size_t)rows * cols, sizeof *buf);
    const char *head[N_LENGTHS] = {"PE"}, **cells = calloc((size_t)rows * cols, sizeof *cells);
    if (!st && (!buf || !cells)) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) {
        rank_lengths(&ex, &ex, 0, mrr, units, decided);
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
    free_table(&ex);
    return st;
}

posemb_status posemb_study_report(const posemb_study_config *c, const char *out, posemb_error *err)
{
    if (c->length) return study_length_report(c, out, err);
    table tb = {0};
    posemb_status st = load_table(&tb, c, out, NULL, err);
    int ape = index_of(c->pes, c->n_pes, "ape");
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
                c->n_pes, c->n_tasks, c->n_seeds, c->data, c->layers, c->hidden, c->heads, c->pretrain_steps,
                c->pretrain_batch, c->n_train, c->steps);
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
        if (has_kind(c, POSEMB_SYN_CLASSIFY)) {
            posemb_report_heading(rep, 2, "Table 2: classification");
            html_table(rep, &tb, POSEMB_SYN_CLASSIFY, ape, "Accuracy at the training length");
        }
        if (has_kind(c, POSEMB_SYN_SPAN)) {
            posemb_report_heading(rep, 2, "Table 3: span prediction");
            html_table(rep, &tb, POSEMB_SYN_SPAN, ape, "Exact match at the training length");
        }
        if (has_kind(c, POSEMB_SYN_LM)) {
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
    free_table(&tb);
    return st;
}
