/* The length study's claims (scripts/claims' length_rows): which PEs'
 * decoders read past their training length, as one-sample t intervals of
 * log(ppl at 16x / ppl at 1x) over the trained models (decoder, seed); NoPE
 * against RoPE and each RoPE scaling against plain RoPE at 8x as paired
 * differences of those logs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "study_claims.h"

static const char U_LOG[] = "log perplexity ratio", EV[] = "docs/study-length-results.md",
                  REPL[] = "trained model (decoder, seed)";

#define MAX_MODELS (POSEMB_STUDY_MAX_TASKS * 16)

/* log(ppl(long) / ppl(1x)) of each (decoder, seed) model of pe with both lengths, [t * n_seeds + s] (NAN where
 * none); scaling >= 0: the long length's perplexity with RoPE scaled so at evaluation. 0 when the study lacks
 * the PE, the length or the scaling. */
static int log_ratios(const study_grid *g, const char *pe, int mult, int scaling, double *out)
{
    const posemb_study_config *c = g->c;
    int p = study_grid_pe(c, pe), m = study_grid_mult(c, mult), m1 = study_grid_mult(c, 1);
    if (p < 0 || m < 0 || m1 < 0 || scaling >= c->len.n_scalings) return 0;
    size_t cells = study_grid_index(c, c->n_pes, 0, 0, 0);
    for (int t = 0; t < c->n_tasks; t++)
        for (int s = 0; s < c->n_seeds; s++) {
            size_t k = study_grid_index(c, p, t, m, s);
            double hi = scaling >= 0 ? g->scaled[scaling * cells + k] : g->ppl[k];
            out[t * c->n_seeds + s] = log(hi / g->ppl[study_grid_index(c, p, t, m1, s)]);
        }
    return 1;
}

/* The finite values of a (minus b's where b is given, both finite) into x; their count. */
static int pairs(const double *a, const double *b, int n, double *x)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && (!b || isfinite(b[i]))) x[k++] = b ? a[i] - b[i] : a[i];
    return k;
}

/* "GPT-2 and Llama bytes LMs" (the decoders as their papers name them, and the tokenizer). */
static void decoders(const posemb_study_config *c, int with_tokenizer, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < c->n_tasks && n < cap; t++) {
        const char *name = !strcmp(c->tasks[t], "gpt2")      ? "GPT-2"
                           : !strcmp(c->tasks[t], "llama")   ? "Llama"
                           : !strcmp(c->tasks[t], "llama4")  ? "Llama 4"
                           : !strcmp(c->tasks[t], "smollm3") ? "SmolLM3"
                                                             : c->tasks[t];
        const char *sep = t == 0 ? "" : t + 1 == c->n_tasks ? " and " : ", ";
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, name);
    }
    if (with_tokenizer && n < cap) snprintf(buf + n, cap - n, " %s LMs", c->len.tokenizer);
}

typedef struct ratio_claim {
    const char *id, *pe, *claim;
    int sign; /* +1: perplexity rises past training */
} ratio_claim;

static const ratio_claim RATIOS[] = {
    {"P1", "alibi", "ALiBi extrapolates: perplexity does not rise past training", -1},
    {"P2", "kerple", "KERPLE extrapolates: perplexity does not rise past training", -1},
    {"P3", "fox", "FoX extrapolates: perplexity does not rise past training", -1},
    {"P4", "rope", "RoPE does not extrapolate: perplexity rises past training", +1},
    {"P5", "sin", "the sinusoid does not extrapolate: perplexity rises", +1},
    {"P6", "none", "NoPE extrapolates better than RoPE", -1}, /* NoPE's log ratio minus RoPE's */
};

static void add_row(study_claims *cl, const char *id, const char *claim, const char *testbed, const double *x, int n,
                    int sign)
{
    if (n < 2) return study_claims_skip(cl, id, "fewer than 2 trained models with both lengths");
    study_claim *r = study_claims_add(cl, id, claim, testbed, U_LOG, posemb_t_ci_one_sample(x, n), n, REPL, EV);
    if (r) study_claim_judge(r, sign, NULL, NULL);
}

static void ratio_rows(const study_grid *g, study_claims *cl)
{
    const posemb_study_config *c = g->c;
    int n = c->n_tasks * c->n_seeds;
    double v[MAX_MODELS], rope[MAX_MODELS], x[MAX_MODELS];
    char testbed[96], names[64];
    decoders(c, 1, names, sizeof names);
    int have_rope = log_ratios(g, "rope", 16, -1, rope);
    for (size_t i = 0; i < sizeof RATIOS / sizeof *RATIOS; i++) {
        const ratio_claim *k = &RATIOS[i];
        int paired = !strcmp(k->pe, "none");
        if (!log_ratios(g, k->pe, 16, -1, v) || (paired && !have_rope)) {
            study_claims_skip(cl, k->id, paired ? "no none or rope evaluated at 16x" : "no such PE evaluated at 16x");
            continue;
        }
        snprintf(testbed, sizeof testbed, "%s, %d vs %d%s", names, 16 * c->n_train, c->n_train,
                 paired ? " (NoPE - RoPE)" : "");
        add_row(cl, k->id, k->claim, testbed, x, pairs(v, paired ? rope : NULL, n, x), k->sign);
    }
}

static const struct scaled_claim {
    const char *id, *scaling, *claim;
} SCALED[] = {
    {"Y1", "yarn", "YaRN at evaluation beats plain RoPE past training"},
    {"Y2", "dynamic", "dynamic NTK at evaluation beats plain RoPE past training"},
    {"Y3", "linear", "linear interpolation (PI) at evaluation beats plain RoPE past training"},
};

static void scaled_rows(const study_grid *g, study_claims *cl)
{
    const posemb_study_config *c = g->c;
    int n = c->n_tasks * c->n_seeds, have = 0;
    double plain[MAX_MODELS], v[MAX_MODELS], x[MAX_MODELS];
    char testbed[96], names[64];
    decoders(c, 0, names, sizeof names);
    snprintf(testbed, sizeof testbed, "%s, %d tokens = 8x (scaled - plain)", names, 8 * c->n_train);
    have = log_ratios(g, "rope", 8, -1, plain);
    for (size_t i = 0; i < sizeof SCALED / sizeof *SCALED; i++) {
        int s = -1;
        for (int k = 0; k < c->len.n_scalings; k++) s = strcmp(c->len.scalings[k], SCALED[i].scaling) ? s : k;
        if (!have || s < 0 || !log_ratios(g, "rope", 8, s, v)) {
            study_claims_skip(cl, SCALED[i].id, "no rope evaluated at 8x with this scaling");
            continue;
        }
        add_row(cl, SCALED[i].id, SCALED[i].claim, testbed, x, pairs(v, plain, n, x), -1);
    }
}

void study_claims_length(const study_grid *g, study_claims *cl)
{
    ratio_rows(g, cl);
    scaled_rows(g, cl);
}
