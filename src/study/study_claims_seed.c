/* The seed paper's claims (Wang et al. 2021) on a synthetic or a real-data
 * study: scripts/claims' synthetic_rows and real_rows for the study folder
 * at hand. Group differences by Welch's interval over the units of
 * replication: a training run (PE, seed) on the synthetic study, a
 * pretraining (a PE's mean over its fine-tuning seeds) on real data;
 * translation invariance against the scores by Spearman's rho. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "study_claims.h"
#include "study_impl.h"
#include "study_store.h"

static const char *const APE[] = {"ape", "sin", "lsin", NULL}, *const RPE[] = {"rpe", "srpe", "lsrpe", NULL};
static const char *const LEARNED[] = {"lsin", "lsrpe", NULL}, *const FIXED[] = {"sin", "srpe", NULL};
static const char *const SIN[] = {"sin", NULL}, *const APE_ALONE[] = {"ape", NULL};
static const char *const CLS[] = {"absolute", "order", NULL}, *const SPAN[] = {"offset", "retrieve", "between", NULL};
static const char *const SIX[] = {"absolute", "order", "offset", "retrieve", "between", "reverse", NULL};
static const char *const GLUE[] = {"CoLA", "SST-2", "MRPC", "STS-B", "RTE", NULL}, *const LOC[] = {"SQuAD-locate",
                                                                                                   NULL};

static const char U_SCORE[] = "score difference (accuracy, F1, exact match)", U_RHO[] = "Spearman rho";
static const char EV_SYN[] = "docs/study.md#the-seed-papers-claims-one-by-one",
                  EV_REAL[] = "results/study-data/README.md";
static const char W1[] = "APEs beat RPEs on classification", W2[] = "RPEs beat APEs on span prediction",
                  W3[] = "RPEs beat APEs beyond the training length", W4[] = "learned sinusoid frequencies help",
                  W6[] = "the fixed sinusoid holds up on longer inputs (sin over ape)",
                  W7[] = "translation invariance helps performance";
/* scripts/claims' reasons, a finding of this repository's pretraining and the real-data study's design */
static const char UNLEARNED[] = "pretraining here never learns the APEs (shuffling a window costs their models at most "
                                "0.0001 nats: results/position-learning)",
                  ONE[] = "one pretraining per PE: %d fine-tuning seeds do not measure the pretraining's variance";

#define MAX_UNITS (POSEMB_STUDY_MAX_PES * 16)

typedef struct units {
    double x[MAX_UNITS];
    int n;
} units;

/* PE p's score with seed s averaged over tasks t[0..nt) at length m (a mult index); NAN when a run is missing. */
static double seed_score(const study_grid *g, int p, const int *t, int nt, int m, int s)
{
    double sum = 0;
    for (int i = 0; i < nt; i++) sum += g->v[study_grid_index(g->c, p, t[i], m, s)];
    return sum / nt;
}

/* The tasks' indices into t, their count; 0 (with why) when the study lacks one. */
static int task_indices(const posemb_study_config *c, const char *const *names, int *t, char *why, size_t cap)
{
    int n = 0;
    for (; names[n]; n++)
        if ((t[n] = study_grid_task(c, names[n])) < 0) {
            snprintf(why, cap, "no task %s", names[n]);
            return 0;
        }
    return n;
}

/* Appends each PE's scores (per seed, or pool: their mean over the seeds) to u; 0 (with why) when one is missing. */
static int collect(const study_grid *g, const char *const *pes, const char *const *tasks, int m, int pool, units *u,
                   char *why, size_t cap)
{
    int t[16], nt = task_indices(g->c, tasks, t, why, cap);
    for (int i = 0; nt && pes[i]; i++) {
        int p = study_grid_pe(g->c, pes[i]), got = 0;
        if (p < 0) {
            snprintf(why, cap, "no PE %s", pes[i]);
            return 0;
        }
        double sum = 0;
        for (int s = 0; s < g->c->n_seeds; s++) {
            double v = seed_score(g, p, t, nt, m, s);
            if (isnan(v)) continue; /* a seed not run yet */
            if (!pool && u->n < MAX_UNITS) u->x[u->n++] = v;
            sum += v;
            got++;
        }
        if (!got) {
            snprintf(why, cap, "no run of %s on every task yet", pes[i]);
            return 0;
        }
        if (pool && u->n < MAX_UNITS) u->x[u->n++] = sum / got;
    }
    return nt;
}

/* The mean over seeds of PE p's score on tasks at length m (scripts/claims' mean of per_unit); NAN when none ran. */
static double pe_mean(const study_grid *g, const char *pe, const char *const *tasks, int m)
{
    units u = {.n = 0};
    char why[128];
    if (!collect(g, (const char *const[]){pe, NULL}, tasks, m, 0, &u, why, sizeof why)) return NAN;
    double sum = 0;
    for (int i = 0; i < u.n; i++) sum += u.x[i];
    return sum / u.n;
}

/* Welch's interval of group a against group b on tasks at mult; 0 (and the claim skipped) when not posed. */
static int group_ci(const study_grid *g, study_claims *cl, const char *id, const char *const *a, const char *const *b,
                    const char *const *tasks, int mult, int pool, posemb_t_ci *ci, int *n_units)
{
    char why[160];
    int m = study_grid_mult(g->c, mult);
    units ua = {.n = 0}, ub = {.n = 0};
    if (m < 0) snprintf(why, sizeof why, "no evaluation at %dx", mult);
    if (m < 0 || !collect(g, a, tasks, m, pool, &ua, why, sizeof why) ||
        !collect(g, b, tasks, m, pool, &ub, why, sizeof why)) {
        study_claims_skip(cl, id, why);
        return 0;
    }
    if (ua.n < 2 || ub.n < 2) {
        study_claims_skip(cl, id, "fewer than 2 units a side");
        return 0;
    }
    *ci = posemb_t_ci_welch(ua.x, ua.n, ub.x, ub.n);
    *n_units = ua.n + ub.n;
    return 1;
}

typedef struct group_claim {
    const char *id, *claim, *testbed;
    const char *const *a, *const *b, *const *tasks;
    int mult;
} group_claim;

static const group_claim SYNTHETIC[] = {
    {"W1", W1, "synthetic absolute+order, 1x", APE, RPE, CLS, 1},
    {"W2", W2, "synthetic spans, 1x", RPE, APE, SPAN, 1},
    {"W3", W3, "synthetic spans, 8x", RPE, APE, SPAN, 8},
    {"W6", W6, "synthetic spans, 8x", SIN, APE_ALONE, SPAN, 8},
};

/* lsin - sin and lsrpe - srpe on the six tasks at 1x, paired by seed: one interval over the (pair, seed)
 * differences (scripts/claims' synthetic W4). */
static void synthetic_w4(const study_grid *g, study_claims *cl)
{
    char why[64];
    int t[16], nt = task_indices(g->c, SIX, t, why, sizeof why), m = study_grid_mult(g->c, 1), n = 0;
    double d[2 * 16];
    if (!nt || m < 0) return study_claims_skip(cl, "W4", nt ? "no evaluation at 1x" : why);
    for (int i = 0; i < 2; i++) {
        int a = study_grid_pe(g->c, LEARNED[i]), b = study_grid_pe(g->c, FIXED[i]);
        if (a < 0 || b < 0) return study_claims_skip(cl, "W4", "no lsin, sin, lsrpe and srpe");
        for (int s = 0; s < g->c->n_seeds && s < 16; s++) {
            double x = seed_score(g, a, t, nt, m, s) - seed_score(g, b, t, nt, m, s);
            if (!isnan(x)) d[n++] = x; /* a seed both PEs ran on every task */
        }
    }
    if (n < 2) return study_claims_skip(cl, "W4", "fewer than 2 seeds run by both PEs of a pair");
    study_claim *r = study_claims_add(cl, "W4", W4, "synthetic six tasks, 1x (paired by seed)", U_SCORE,
                                      posemb_t_ci_one_sample(d, n), n, "(pair, seed), paired", EV_SYN);
    if (r) study_claim_judge(r, +1, NULL, NULL);
}

/* TI of the identical-word attention of PE p's model (analysis/PE/indicators.json): 1 when read, 0 when not
 * saved, EFORMAT for a file that is not an analysis's. */
static posemb_status read_ti(const char *out, const char *pe, double *ti, int *found, posemb_error *err)
{
    char name[160], dir[POSEMB_PATH_MAX], path[POSEMB_PATH_MAX], *text = NULL;
    size_t n;
    posemb_error quiet;
    study_folder_of(pe, name, sizeof name);
    *found = 0;
    if (snprintf(dir, sizeof dir, "%s/analysis/%s", out, name) >= (int)sizeof dir ||
        posemb_path_join(path, sizeof path, dir, "indicators.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    if (posemb_read_data_file(path, 1u << 24, &text, &n, &quiet)) return POSEMB_OK; /* no analysis of this PE */
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "identical"), "ti");
    *found = cJSON_IsNumber(v);
    *ti = *found ? v->valuedouble : NAN;
    cJSON_Delete(root);
    return *found ? POSEMB_OK
                  : posemb_fail(err, POSEMB_EFORMAT, "%s: not an analysis's indicators.json with an 'identical' block",
                                path);
}

typedef struct ti_scores {
    double ti[POSEMB_STUDY_MAX_PES], score[POSEMB_STUDY_MAX_PES];
    int pe[POSEMB_STUDY_MAX_PES], n;
} ti_scores;

/* Each PE but none with its indicators saved and a score on tasks at 1x (scripts/claims' W7 PEs). */
static posemb_status ti_against(const study_grid *g, const char *out, const char *const *tasks, ti_scores *ts,
                                posemb_error *err)
{
    ts->n = 0;
    posemb_status st = POSEMB_OK;
    for (int p = 0; !st && p < g->c->n_pes; p++) {
        int found = 0;
        double score = pe_mean(g, g->c->pes[p], tasks, study_grid_mult(g->c, 1)), ti;
        if (!strcmp(g->c->pes[p], "none") || isnan(score)) continue;
        if ((st = read_ti(out, g->c->pes[p], &ti, &found, err)) || !found) continue;
        ts->ti[ts->n] = ti;
        ts->score[ts->n] = score;
        ts->pe[ts->n++] = p;
    }
    return st;
}

/* Spearman's rho of the scores against whether the PE has no absolute part: the contrast TI mostly draws. */
static double split_rho(const study_grid *g, const ti_scores *ts)
{
    double split[POSEMB_STUDY_MAX_PES];
    for (int i = 0; i < ts->n; i++) {
        study_family f = study_pe_family(g->c->pes[ts->pe[i]]);
        split[i] = f != STUDY_FAMILY_ABSOLUTE && f != STUDY_FAMILY_BOTH;
    }
    return study_spearman_ci(split, ts->score, ts->n).effect;
}

static posemb_status w7_row(const study_grid *g, const char *out, study_claims *cl, const char *const *tasks,
                            const char *testbed, const char *evidence, posemb_error *err)
{
    ti_scores ts;
    if (study_grid_mult(g->c, 1) < 0) {
        study_claims_skip(cl, "W7", "no evaluation at 1x");
        return POSEMB_OK;
    }
    posemb_status st = ti_against(g, out, tasks, &ts, err);
    if (st) return st;
    posemb_t_ci ci = study_spearman_ci(ts.ti, ts.score, ts.n);
    if (isnan(ci.effect)) {
        char why[160];
        snprintf(why, sizeof why,
                 "%s: the indicators of %d PEs with a score (analysis/PE/indicators.json), or a "
                 "constant indicator or score; 4 PEs needed",
                 testbed, ts.n);
        {
            study_claims_skip(cl, "W7", why);
            return POSEMB_OK;
        }
    }
    int real = g->c->data[0] != 0;
    study_claim *r =
        study_claims_add(cl, "W7", W7, testbed, U_RHO, ci, ts.n, real ? "PE (one pretraining each)" : "PE", evidence);
    char split[200] = "";
    double rho = real ? NAN : split_rho(g, &ts);
    /* TI cannot be told from the absolute/relative split when the split alone ranks the scores as well */
    if (!isnan(rho) && fabs(rho) >= fabs(ci.effect))
        snprintf(split, sizeof split,
                 "TI is the split between PEs with and without an absolute part (the split alone: rho %.2f, TI %.2f): "
                 "TI ranks the PEs no better than the split does",
                 rho, ci.effect);
    if (r) study_claim_judge(r, +1, NULL, split);
    return POSEMB_OK;
}

posemb_status study_claims_synthetic(const study_grid *g, const char *out, study_claims *cl, posemb_error *err)
{
    for (size_t i = 0; i < sizeof SYNTHETIC / sizeof *SYNTHETIC; i++) {
        const group_claim *k = &SYNTHETIC[i];
        posemb_t_ci ci;
        int n;
        if (!strcmp(k->id, "W6")) synthetic_w4(g, cl); /* scripts/claims' order: W4, paired, before W6 */
        if (!group_ci(g, cl, k->id, k->a, k->b, k->tasks, k->mult, 0, &ci, &n)) continue;
        study_claim *r =
            study_claims_add(cl, k->id, k->claim, k->testbed, U_SCORE, ci, n, "training run (PE, seed)", EV_SYN);
        if (r) study_claim_judge(r, +1, NULL, NULL);
    }
    if (study_grid_task(g->c, "reverse") < 0) {
        study_claims_skip(cl, "W7", "no task reverse");
        return POSEMB_OK;
    }
    return w7_row(g, out, cl, (const char *const[]){"reverse", NULL}, "synthetic reverse (decoder), 1x", EV_SYN, err);
}

/* ---- the real-data study ---- */

/* Each PE's F1 change on SQuAD-locate from 1x to 4x, the mean over its seeds (scripts/claims' change()). */
static int f1_change(const study_grid *g, const char *const *pes, units *u)
{
    int t = study_grid_task(g->c, LOC[0]), m1 = study_grid_mult(g->c, 1), m4 = study_grid_mult(g->c, 4);
    for (int i = 0; pes[i]; i++) {
        int p = study_grid_pe(g->c, pes[i]), got = 0;
        double sum = 0;
        for (int s = 0; p >= 0 && s < g->c->n_seeds; s++) {
            double d = g->v[study_grid_index(g->c, p, t, m4, s)] - g->v[study_grid_index(g->c, p, t, m1, s)];
            if (!isnan(d)) {
                sum += d;
                got++;
            }
        }
        if (!got) return 0;
        u->x[u->n++] = sum / got;
    }
    return 1;
}

static void real_w3(const study_grid *g, study_claims *cl, const char *repl)
{
    units ua = {.n = 0}, ub = {.n = 0};
    char testbed[96];
    if (study_grid_mult(g->c, 4) < 0 || study_grid_task(g->c, LOC[0]) < 0 || !f1_change(g, RPE, &ua) ||
        !f1_change(g, APE, &ub))
        return study_claims_skip(cl, "W3", "no SQuAD-locate runs of every APE and RPE at 1x and 4x");
    snprintf(testbed, sizeof testbed, "SQuAD-locate, F1 change %d to %d", g->c->n_train, 4 * g->c->n_train);
    study_claim *r = study_claims_add(cl, "W3", W3, testbed, U_SCORE, posemb_t_ci_welch(ua.x, ua.n, ub.x, ub.n),
                                      ua.n + ub.n, repl, EV_REAL);
    if (r) study_claim_judge(r, +1, NULL, NULL);
}

/* lsin - sin and lsrpe - srpe on GLUE, each the difference of the PEs' means: one interval over the two pairs. */
static void real_w4(const study_grid *g, study_claims *cl, const char *one)
{
    double d[2];
    int m = study_grid_mult(g->c, 1);
    for (int i = 0; i < 2; i++) d[i] = pe_mean(g, LEARNED[i], GLUE, m) - pe_mean(g, FIXED[i], GLUE, m);
    if (m < 0 || isnan(d[0]) || isnan(d[1]))
        return study_claims_skip(cl, "W4", "no GLUE runs of lsin, sin, lsrpe and srpe");
    study_claim *r = study_claims_add(cl, "W4", W4, "GLUE, lsin - sin and lsrpe - srpe", U_SCORE,
                                      posemb_t_ci_one_sample(d, 2), 2, "pair of pretrainings", EV_REAL);
    if (r) study_claim_judge(r, +1, NULL, one);
}

/* sin against ape on SQuAD-locate at 4x, their fine-tuning seeds as the units. */
static void real_w6(const study_grid *g, study_claims *cl, const char *one)
{
    posemb_t_ci ci;
    int n;
    char testbed[96];
    if (!group_ci(g, cl, "W6", SIN, APE_ALONE, LOC, 4, 0, &ci, &n)) return;
    snprintf(testbed, sizeof testbed, "SQuAD-locate F1, %d tokens", 4 * g->c->n_train);
    study_claim *r =
        study_claims_add(cl, "W6", W6, testbed, U_SCORE, ci, n, "fine-tuning seed (one pretraining per PE)", EV_REAL);
    if (r) study_claim_judge(r, +1, NULL, one);
}

/* W2's confound: where ape's F1 sits against no PE's and the RPEs'. */
static void w2_confound(const study_grid *g, char *buf, size_t cap)
{
    int m = study_grid_mult(g->c, 1);
    double ape = pe_mean(g, "ape", LOC, m), none = pe_mean(g, "none", LOC, m), rpe = 0;
    for (int i = 0; RPE[i]; i++) rpe += pe_mean(g, RPE[i], LOC, m) / 3;
    int cut = (int)(strstr(UNLEARNED, " (") - UNLEARNED);
    if (isnan(none)) snprintf(buf, cap, "%.*s: ape %.3f against the RPEs' %.3f", cut, UNLEARNED, ape, rpe);
    else snprintf(buf, cap, "%.*s: ape %.3f sits between none %.3f and the RPEs %.3f", cut, UNLEARNED, ape, none, rpe);
}

static void real_groups(const study_grid *g, study_claims *cl, const char *repl)
{
    posemb_t_ci ci;
    int n;
    char testbed[96], confound[256];
    if (group_ci(g, cl, "W1", APE, RPE, GLUE, 1, 1, &ci, &n)) {
        snprintf(testbed, sizeof testbed, "GLUE (5 tasks' mean), %d tokens", g->c->n_train);
        study_claim *r = study_claims_add(cl, "W1", W1, testbed, U_SCORE, ci, n, repl, EV_REAL);
        if (r) study_claim_judge(r, +1, NULL, UNLEARNED);
    }
    if (group_ci(g, cl, "W2", RPE, APE, LOC, 1, 1, &ci, &n)) {
        snprintf(testbed, sizeof testbed, "SQuAD-locate F1, %d tokens", g->c->n_train);
        w2_confound(g, confound, sizeof confound);
        study_claim *r = study_claims_add(cl, "W2", W2, testbed, U_SCORE, ci, n, repl, EV_REAL);
        if (r) study_claim_judge(r, +1, confound, NULL);
    }
}

posemb_status study_claims_real(const study_grid *g, const char *out, study_claims *cl, posemb_error *err)
{
    char repl[80], one[128], testbed[96];
    snprintf(repl, sizeof repl, "pretraining (a PE's mean over %d fine-tuning seeds)", g->c->n_seeds);
    snprintf(one, sizeof one, ONE, g->c->n_seeds);
    real_groups(g, cl, repl);
    real_w3(g, cl, repl);
    real_w4(g, cl, one);
    real_w6(g, cl, one);
    char why[64];
    int t[16];
    posemb_status st = POSEMB_OK;
    if (task_indices(g->c, GLUE, t, why, sizeof why)) st = w7_row(g, out, cl, GLUE, "GLUE", EV_REAL, err);
    else study_claims_skip(cl, "W7 (GLUE)", why);
    snprintf(testbed, sizeof testbed, "SQuAD-locate F1, %d tokens", g->c->n_train);
    if (!st && study_grid_task(g->c, LOC[0]) >= 0) st = w7_row(g, out, cl, LOC, testbed, EV_REAL, err);
    else if (!st) study_claims_skip(cl, "W7 (SQuAD-locate)", "no task SQuAD-locate");
    return st;
}
