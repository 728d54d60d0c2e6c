/* The claims register of one study: its lines by cell, the papers' own
 * effects, the verdict rule and Spearman's interval, as scripts/claims has
 * them, so that a study's report and results/claims.csv give one verdict
 * by one rule (tests/test_study_claims.py compares them row by row). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "study_claims.h"
#include "study_impl.h"
#include "study_store.h"

static size_t grid_cells(const posemb_study_config *c) { return study_grid_index(c, c->n_pes, 0, 0, 0); }

size_t study_grid_index(const posemb_study_config *c, int p, int t, int m, int s)
{
    return (((size_t)p * c->n_tasks + t) * c->n_mults + m) * c->n_seeds + s;
}

int study_grid_pe(const posemb_study_config *c, const char *pe)
{
    for (int i = 0; i < c->n_pes; i++)
        if (!strcmp(c->pes[i], pe)) return i;
    return -1;
}

int study_grid_task(const posemb_study_config *c, const char *task)
{
    for (int i = 0; i < c->n_tasks; i++)
        if (!strcmp(c->tasks[i], task)) return i;
    return -1;
}

int study_grid_mult(const posemb_study_config *c, int mult)
{
    for (int i = 0; i < c->n_mults; i++)
        if (c->mults[i] == mult) return i;
    return -1;
}

static double number(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The cell of a line, -1 for a line of another configuration. */
static long line_cell(const posemb_study_config *c, const cJSON *j)
{
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(j, "pe"), *task = cJSON_GetObjectItemCaseSensitive(j, "task");
    int p = cJSON_IsString(pe) ? study_grid_pe(c, pe->valuestring) : -1;
    int t = cJSON_IsString(task) ? study_grid_task(c, task->valuestring) : -1, s = -1, m = -1;
    double seed = number(j, "seed"), len = number(j, "eval_len");
    for (int i = 0; i < c->n_seeds; i++) s = c->seeds[i] == seed ? i : s;
    for (int i = 0; i < c->n_mults; i++) m = (double)c->n_train * c->mults[i] == len ? i : m;
    return p < 0 || t < 0 || s < 0 || m < 0 ? -1 : (long)study_grid_index(c, p, t, m, s);
}

/* One line into the grid; later lines win, as a rerun replaces (a study_line_fn). */
static posemb_status grid_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n, (void)err;
    study_grid *g = ctx;
    const posemb_study_config *c = g->c;
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(j, "metrics"), *kind, *scaled;
    long k = line_cell(c, j);
    if (k < 0 || !cJSON_IsObject(metrics)) return POSEMB_OK;
    if (cJSON_IsNumber(metrics->child)) g->v[k] = metrics->child->valuedouble;
    kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "lm")) return POSEMB_OK; /* perplexity: LMs' alone */
    g->ppl[k] = number(metrics, "perplexity");
    g->windowed[k] = number(j, "context") < number(j, "eval_len");
    scaled = cJSON_GetObjectItemCaseSensitive(j, "scaled");
    for (int i = 0; i < c->len.n_scalings && cJSON_IsObject(scaled); i++)
        g->scaled[i * grid_cells(c) + k] = number(scaled, c->len.scalings[i]);
    return POSEMB_OK;
}

posemb_status study_grid_load(study_grid *g, const posemb_study_config *c, const char *out, posemb_error *err)
{
    size_t n = grid_cells(c), ns = (size_t)(c->len.n_scalings > 0 ? c->len.n_scalings : 1) * n;
    *g = (study_grid){.c = c, .v = malloc(n * sizeof(double)), .ppl = malloc(n * sizeof(double))};
    g->scaled = malloc(ns * sizeof(double));
    g->windowed = calloc(n, 1);
    if (!g->v || !g->ppl || !g->scaled || !g->windowed) return posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    for (size_t i = 0; i < n; i++) g->v[i] = g->ppl[i] = NAN;
    for (size_t i = 0; i < ns; i++) g->scaled[i] = NAN;
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot open", path);
    posemb_status st = study_each_line(f, grid_line, g, err);
    fclose(f);
    return st;
}

void study_grid_free(study_grid *g)
{
    free(g->v);
    free(g->ppl);
    free(g->scaled);
    free(g->windowed);
    *g = (study_grid){0};
}

/* What each paper reports, in its own terms (the report's "paper" column), and its effect in posemb's unit where
 * the two are the same quantity (the forest plot's diamond and the power test use only those): the C twin of
 * scripts/claims' PAPER_SAYS and PAPER, whose comments give the sources. No study claim has such an effect yet:
 * the papers report per-word perplexity of other models, GLUE points, or accuracy over other tasks. */
static const struct paper_effect {
    const char *id, *says;
    double effect;
} PAPER[] = {
    {"W1", "GLUE +0.3-0.5 pts (quoted; Table 2 unread)", NAN},
    {"W4", "GLUE +0.1-0.4 pts (quoted; Table 2 unread)", NAN},
    {"P1", "x0.93 at 16.6x, per word", NAN},
    {"P4", "x2.74 at 16.6x, per word", NAN},
    {"P5", "x15.2 at 16.6x, per word", NAN},
    {"Y3", "ppl 112 vs > 1000 at 8x (LLaMA 7B)", NAN},
};

double study_claims_paper(const char *id)
{
    for (size_t i = 0; i < sizeof PAPER / sizeof *PAPER; i++)
        if (!strcmp(PAPER[i].id, id)) return PAPER[i].effect;
    return NAN;
}

const char *study_claims_paper_says(const char *id)
{
    for (size_t i = 0; i < sizeof PAPER / sizeof *PAPER; i++)
        if (!strcmp(PAPER[i].id, id)) return PAPER[i].says;
    return "-";
}

/* The verdict and its reason before any remark (scripts/claims' verdict()). */
static posemb_verdict judge(const study_claim *r, int sign, const char *confound, const char *untestable, char *why,
                            size_t cap)
{
    double lo = r->ci.lo, hi = r->ci.hi, mde = r->ci.mde, paper = r->paper;
    why[0] = '\0';
    if (untestable && untestable[0]) {
        snprintf(why, cap, "%s", untestable);
        return POSEMB_VERDICT_UNTESTABLE;
    }
    if ((lo > 0 && sign > 0) || (hi < 0 && sign < 0)) {
        if (!confound || !confound[0]) return POSEMB_VERDICT_REPRODUCED;
        snprintf(why, cap, "%s", confound);
        return POSEMB_VERDICT_CONFOUNDED;
    }
    if ((lo > 0 && sign < 0) || (hi < 0 && sign > 0)) {
        snprintf(why, cap, "the opposite direction, outside the interval");
        return POSEMB_VERDICT_NOT_REPRODUCED;
    }
    if (!isnan(paper) && mde <= fabs(paper)) {
        snprintf(why, cap, "the test detects %.3g (80%% power); the paper's effect %.3g lies within reach", mde, paper);
        return POSEMB_VERDICT_NOT_REPRODUCED;
    }
    if (!isnan(paper))
        snprintf(why, cap, "underpowered: the test detects %.3g (80%% power), not the paper's %.3g", mde, paper);
    else snprintf(why, cap, "no paper effect in this unit to power for; the test detects %.3g (80%% power)", mde);
    return POSEMB_VERDICT_UNTESTABLE;
}

void study_claim_judge(study_claim *r, int sign, const char *confound, const char *untestable)
{
    r->verdict = judge(r, sign, confound, untestable, r->note, sizeof r->note);
}

void study_claims_skip(study_claims *cl, const char *id, const char *why)
{
    size_t n = strlen(cl->not_posed);
    snprintf(cl->not_posed + n, sizeof cl->not_posed - n, "%s%s: %s", n ? "; " : "", id, why);
}

study_claim *study_claims_add(study_claims *cl, const char *id, const char *claim, const char *testbed,
                              const char *unit, posemb_t_ci ci, int n_units, const char *replication,
                              const char *evidence)
{
    if (cl->n == STUDY_MAX_CLAIMS) return NULL;
    study_claim *r = &cl->row[cl->n++];
    *r = (study_claim){.claim = claim, .unit = unit, .evidence = evidence, .ci = ci};
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->replication, sizeof r->replication, "%s", replication);
    snprintf(r->testbed, sizeof r->testbed, "%s", testbed);
    r->paper = study_claims_paper(id);
    r->n_units = n_units;
    return r;
}

/* Average ranks, ties sharing the mean of their places (scripts/study-claims' ranks). */
static void ranks(const double *v, int n, double *r)
{
    for (int i = 0; i < n; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            below += v[j] < v[i];
            equal += v[j] == v[i];
        }
        r[i] = below + (equal - 1) / 2.0;
    }
}

/* Spearman's rho in doubles: the scores' ranks are not those of their floats when two differ past float's digits. */
static double spearman(const double *x, const double *y, int n)
{
    double *rx = malloc(2 * (size_t)n * sizeof *rx), mx = 0, my = 0, num = 0, sx = 0, sy = 0;
    if (!rx) return NAN;
    double *ry = rx + n;
    ranks(x, n, rx);
    ranks(y, n, ry);
    for (int i = 0; i < n; i++) {
        mx += rx[i] / n;
        my += ry[i] / n;
    }
    for (int i = 0; i < n; i++) {
        num += (rx[i] - mx) * (ry[i] - my);
        sx += (rx[i] - mx) * (rx[i] - mx);
        sy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx);
    return sx * sy > 0 ? num / sqrt(sx * sy) : NAN;
}

posemb_t_ci study_spearman_ci(const double *x, const double *y, int n)
{
    const double z975 = 1.959964, z80 = 0.841621; /* scripts/claims' normal quantiles, to its digits */
    double rho = n > 3 ? spearman(x, y, n) : NAN, se = n > 3 ? sqrt(1.06 / (n - 3)) : NAN;
    posemb_t_ci r = {.effect = rho, .lo = NAN, .hi = NAN, .se = se, .df = NAN, .p = NAN, .mde = NAN};
    if (isnan(rho)) return r;
    double z = atanh(fmax(-0.999999, fmin(0.999999, rho))); /* |rho| = 1 has no z: clamped as scripts/claims */
    r.p = erfc(fabs(z) / se / sqrt(2.0));
    r.lo = tanh(z - z975 * se);
    r.hi = tanh(z + z975 * se);
    r.mde = tanh((z975 + z80) * se);
    return r;
}
