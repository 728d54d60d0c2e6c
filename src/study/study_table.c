/* The synthetic and real-data studies' results as a table (study_table.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "eval/stats.h"
#include "study_impl.h"
#include "study_store.h"
#include "study_table.h"

double *study_table_cell(const study_table *tb, int p, int t, int m, int s)
{
    const posemb_study_config *c = tb->c;
    return &tb->v[(((size_t)p * c->n_tasks + t) * c->n_mults + m) * c->n_seeds + s];
}

static unsigned char *study_table_collapsed_at(const study_table *tb, int p, int t, int m, int s)
{
    return tb->collapsed + (study_table_cell(tb, p, t, m, s) - tb->v);
}

int study_table_index_of(const char (*names)[128], int n, const char *x)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], x)) return i;
    return -1;
}

static posemb_status take_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n, (void)err;
    study_table *tb = ctx;
    const posemb_study_config *c = tb->c;
    const cJSON *spec = cJSON_GetObjectItem(j, "pe"), *task = cJSON_GetObjectItem(j, "task"),
                *seed = cJSON_GetObjectItem(j, "seed");
    const cJSON *len = cJSON_GetObjectItem(j, "eval_len"), *metrics = cJSON_GetObjectItem(j, "metrics");
    if (!cJSON_IsString(spec) || !cJSON_IsString(task) || !cJSON_IsNumber(seed) || !cJSON_IsNumber(len) || !metrics ||
        !metrics->child)
        return POSEMB_OK;
    int p = study_table_index_of(c->pes, c->n_pes, spec->valuestring), t = -1, s = -1, m = -1;
    for (int i = 0; i < c->n_tasks; i++) t = strcmp(c->tasks[i], task->valuestring) ? t : i;
    for (int i = 0; i < c->n_seeds; i++) s = c->seeds[i] == seed->valueint ? i : s;
    for (int i = 0; i < c->n_mults; i++) m = c->n_train * c->mults[i] == len->valueint ? i : m;
    if (p < 0 || t < 0 || s < 0 || m < 0) return POSEMB_OK; /* a run of another configuration */
    const cJSON *v = tb->metric ? cJSON_GetObjectItem(metrics, tb->metric) : metrics->child;
    if (!cJSON_IsNumber(v)) return POSEMB_OK; /* a line without it (an LM line from before exact_match) */
    *study_table_cell(tb, p, t, m, s) = v->valuedouble;
    *study_table_collapsed_at(tb, p, t, m, s) = cJSON_IsTrue(cJSON_GetObjectItem(j, "collapsed"));
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

posemb_status study_table_load(study_table *tb, const posemb_study_config *c, const char *out, const char *metric,
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

void study_table_free(study_table *tb)
{
    free(tb->v);
    free(tb->collapsed);
    free(tb->curve);
    free(tb->n_curve);
    free(tb->chance);
    free(tb->match);
}

/* The seeds of (p, t, m) that ran. */
static int study_table_values(const study_table *tb, int p, int t, int m, double *out)
{
    int n = 0;
    for (int s = 0; s < tb->c->n_seeds; s++)
        if (!isnan(*study_table_cell(tb, p, t, m, s))) out[n++] = *study_table_cell(tb, p, t, m, s);
    return n;
}

study_stats study_table_stats(const study_table *tb, int p, int t, int m, int ape)
{
    double x[16], y[16];
    study_stats st = {NAN, NAN, NAN, study_table_values(tb, p, t, m, x), 0};
    if (!st.n) return st;
    for (int s = 0; s < tb->c->n_seeds; s++)
        st.collapsed += !isnan(*study_table_cell(tb, p, t, m, s)) && *study_table_collapsed_at(tb, p, t, m, s);
    double sum = 0, sq = 0;
    for (int i = 0; i < st.n; i++) sum += x[i];
    st.mean = sum / st.n;
    for (int i = 0; i < st.n; i++) sq += (x[i] - st.mean) * (x[i] - st.mean);
    st.std = st.n > 1 ? sqrt(sq / (st.n - 1)) : 0; /* the sample standard deviation */
    int ny = ape >= 0 && ape != p ? study_table_values(tb, ape, t, m, y) : 0;
    if (ny >= 2 && st.n >= 2) st.p = posemb_welch_ttest(x, st.n, y, ny).p;
    return st;
}

int study_table_is_kind(const posemb_study_config *c, int t, posemb_syn_kind k)
{
    return posemb_study_task_kind(c, t) == k;
}

int study_table_has_kind(const posemb_study_config *c, posemb_syn_kind k)
{
    for (int t = 0; t < c->n_tasks; t++)
        if (study_table_is_kind(c, t, k)) return 1;
    return 0;
}

/* "0.912 ± 0.011*": the star marks p < 0.05 against ape; "(2c)": 2 of the seeds collapsed. */
void study_table_fmt_cell(char *buf, size_t cap, study_stats s)
{
    char c[16] = "";
    if (s.collapsed) snprintf(c, sizeof c, " (%dc)", s.collapsed);
    if (!s.n) snprintf(buf, cap, "-");
    else if (s.n == 1) snprintf(buf, cap, "%.3f%s", s.mean, c); /* one seed (so far): no spread, no test */
    else snprintf(buf, cap, "%.3f ± %.3f%s%s", s.mean, s.std, !isnan(s.p) && s.p < 0.05 ? "*" : "", c);
}

/* 1 when some PE's mean exact match over seeds at the training length is >= 0.9:
 * a task no PE learns ranks nothing about extrapolation. */
int study_table_lm_task_learned(const study_table *ex, int t)
{
    for (int p = 0; p < ex->c->n_pes; p++)
        if (study_table_stats(ex, p, t, 0, -1).mean >= 0.9) return 1;
    return 0;
}

/* Each PE's mean reciprocal rank by score at every longer length m (mrr[m][p];
 * units[m] the (task, seed) pairs ranked, decided[m] those where not every PE
 * ties), over the LM tasks (learned_only: those ex says some PE learns). */
void study_table_rank_lengths(const study_table *score, const study_table *ex, int learned_only,
                              double (*mrr)[POSEMB_STUDY_MAX_PES], int *units, int *decided)
{
    const posemb_study_config *c = score->c;
    enum { MAX_SEEDS = sizeof c->seeds / sizeof *c->seeds };
    double v[POSEMB_STUDY_MAX_TASKS * MAX_SEEDS * POSEMB_STUDY_MAX_PES];
    for (int m = 1; m < c->n_mults; m++) {
        int n = 0;
        for (int t = 0; t < c->n_tasks; t++) {
            if (!study_table_is_kind(c, t, POSEMB_SYN_LM) || (learned_only && !study_table_lm_task_learned(ex, t)))
                continue;
            for (int s = 0; s < c->n_seeds; s++, n++)
                for (int p = 0; p < c->n_pes; p++) v[n * c->n_pes + p] = *study_table_cell(score, p, t, m, s);
        }
        units[m] = study_mrr(v, n, c->n_pes, mrr[m], &decided[m]);
    }
}

/* A causal-LM tasks' metric other than the first: exact_match (a span task's own metric
 * has the name too: LM tasks' only) or length_mean_accuracy. */
posemb_status study_table_load_lm_metric(study_table *ex, const posemb_study_config *c, const char *out,
                                         const char *metric, posemb_error *err)
{
    posemb_status st = study_table_load(ex, c, out, metric, err);
    for (int i = 0; !st && i < c->n_tasks * c->n_mults; i++) /* the token's chance is not a whole answer's */
        ex->chance[i] = ex->match[i] = NAN;
    for (int p = 0; !st && p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int m = 0; m < c->n_mults && !study_table_is_kind(c, t, POSEMB_SYN_LM); m++)
                for (int s = 0; s < c->n_seeds; s++) *study_table_cell(ex, p, t, m, s) = NAN;
    return st;
}

/* How many runs of the table collapsed, of how many. */
void study_table_count_collapsed(const study_table *tb, int *collapsed, int *runs)
{
    const posemb_study_config *c = tb->c;
    *collapsed = *runs = 0;
    for (int p = 0; p < c->n_pes; p++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int s = 0; s < c->n_seeds; s++)
                if (!isnan(*study_table_cell(tb, p, t, 0, s))) {
                    (*runs)++;
                    *collapsed += *study_table_collapsed_at(tb, p, t, 0, s);
                }
}
