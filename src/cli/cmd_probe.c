/* posemb probe: one analysis at a time, its key numbers on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_args.h"
#include "commands.h"
#include "probe_order.h"

static const char USAGE[] = "usage: posemb probe KIND SOURCE [--json] [options]\n"
                            "       posemb probe order MODEL_DIR... --cache CACHE.safetensors [--json] [options]\n\n"
                            "KIND: similarity, identical, correlation, regress, regress-cv, relative, dims, psi.\n"
                            "SOURCE as for 'posemb analyze'. identical and correlation need a model folder.\n"
                            "order: the word-order cost of masked-LM models (see 'posemb probe order --help').\n"
                            "Prints the key numbers (one JSON object per line with --json).\n\n"
                            "  --json          machine-readable output\n" ANALYSIS_FLAGS_HELP;

static const char *const KINDS[] = {"similarity", "identical", "correlation", "regress", "regress-cv",
                                    "relative",   "dims",      "psi",         NULL};

static void print_indicators(const char *what, const posemb_indicators *in, int json)
{
    if (json)
        printf("{\"probe\": \"%s\", \"ti\": %.6f, \"mono\": %.6f, \"mono_fwd\": %.6f, \"mono_bwd\": %.6f, \"window\": "
               "%d, \"sym\": %.6f}\n",
               what, in->ti, in->mono, in->mono_fwd, in->mono_bwd, in->window, in->sym);
    else
        printf("%s: TI %.4f  MONO %.4f (fwd %.4f, bwd %.4f)  monotone window %d  SYM %.4f\n", what, in->ti, in->mono,
               in->mono_fwd, in->mono_bwd, in->window, in->sym);
}

/* A square matrix and its indicators. */
static posemb_status indicators_of(const float *m, int n, const char *what, const posemb_analyze_opts *o, int json,
                                   posemb_error *err)
{
    posemb_indicators in;
    posemb_status st = posemb_indicators_compute(m, n, o->K, &in, err);
    if (!st) print_indicators(what, &in, json);
    return st;
}

static posemb_status need(const posemb_source *s, int ape, int model, const char *kind, posemb_error *err)
{
    if (ape && !s->ape)
        return posemb_fail(err, POSEMB_EINVAL, "%s: %s has no table of position vectors", kind, s->name);
    if (model && !s->model) return posemb_fail(err, POSEMB_EINVAL, "%s: %s is not a model folder", kind, s->name);
    return POSEMB_OK;
}

static posemb_status run_probe(int kind, posemb_source *s, const posemb_analyze_opts *o, int json, posemb_error *err)
{
    int n = s->n, side = s->rel_rows > n ? s->rel_rows : n; /* a relative table may have more rows than positions */
    size_t nn = (size_t)side * side;
    float *m = malloc(nn * sizeof *m + sizeof(float) * (size_t)(s->dim > n ? s->dim : n));
    if (!m) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = POSEMB_OK;
    double x;
    int k;
    switch (kind) {
    case 0:
        if (!s->ape && s->rel) {
            posemb_similarity(s->rel, s->rel_rows, s->rel_dim, 0, m);
            st = indicators_of(m, s->rel_rows, "similarity of the relative vectors", o, json, err);
        } else if (!(st = need(s, 1, 0, "similarity", err))) {
            posemb_similarity(s->ape, n, s->dim, 0, m);
            st = indicators_of(m, n, "similarity (dot)", o, json, err);
            posemb_similarity(s->ape, n, s->dim, 1, m);
            if (!st) st = indicators_of(m, n, "similarity (cosine)", o, json, err);
        }
        break;
    case 1:
        if (!(st = need(s, 0, 1, "identical", err)))
            st = posemb_identical_words(s->model, n, o->n_words, o->seed, m, NULL, NULL, err);
        if (!st) st = indicators_of(m, n, "identical words", o, json, err);
        break;
    case 2:
        if (!(st = need(s, 1, 1, "correlation", err))) st = posemb_correlation(s->model, s->ape, n, NULL, m, err);
        if (!st) st = indicators_of(m, n, "correlation", o, json, err);
        break;
    case 3: {
        posemb_regress r;
        if (!(st = need(s, 1, 0, "regress", err))) st = posemb_regress_seed(s->ape, n, s->dim, o->ridge, &r, err);
        if (st) break;
        if (json) {
            printf("{\"probe\": \"regress\", \"mae_all\": %.6f, \"mae_by_range\": [", r.mae_all);
            for (int i = 0; i < r.n_ranges; i++) printf("%s%.6f", i ? ", " : "", r.mae_by_range[i]);
            printf("]}\n");
        } else {
            printf("regress: mean |error| %.4f; by range:", r.mae_all);
            for (int i = 0; i < r.n_ranges; i++)
                printf(" %d-%d %.4f", r.ranges[i][0], r.ranges[i][1], r.mae_by_range[i]);
            printf("\n");
        }
        free(r.pred);
        break;
    }
    case 4:
        if (!(st = need(s, 1, 0, "regress-cv", err)))
            st = posemb_regress_cv(s->ape, n, s->dim, o->folds, o->seed, o->ridge, &x, err);
        if (!st)
            printf(json ? "{\"probe\": \"regress-cv\", \"mae\": %.6f, \"folds\": %d}\n"
                        : "regress-cv: mean |round(pred) - x| %.4f over %d folds\n",
                   x, o->folds);
        break;
    case 5:
        if (!(st = need(s, 1, 0, "relative", err)))
            st = posemb_relative_order(s->ape, n, s->dim, o->pairs, o->folds, o->seed, 1.0, &x, err);
        if (!st)
            printf(json ? "{\"probe\": \"relative\", \"error\": %.6f, \"pairs\": %d}\n"
                        : "relative order: error rate %.4f (%d pairs, 5-fold)\n",
                   x, o->pairs);
        break;
    case 6:
        if (!(st = need(s, 1, 0, "dims", err))) posemb_dim_ranges(s->ape, n, s->dim, o->dims_frac, m, &k);
        if (!st)
            printf(json ? "{\"probe\": \"dims\", \"moving\": %d, \"of\": %d}\n"
                        : "dims: %d of %d dimensions move by more than half the widest range\n",
                   k, s->dim);
        break;
    default:
        if (!s->freqs) st = posemb_fail(err, POSEMB_EINVAL, "psi: %s has no sinusoid frequencies", s->name);
        else posemb_psi(s->freqs, s->n_freqs, n, m, &k);
        if (!st)
            printf(json ? "{\"probe\": \"psi\", \"decreasing_until\": %d, \"frequencies\": %d}\n"
                        : "psi(m) falls strictly up to m = %d (%d frequencies)\n",
                   k, s->n_freqs);
    }
    free(m);
    return st;
}

int cmd_probe(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "order")) return cmd_probe_order(argc - 1, argv + 1); /* its own arguments */
    cli_args a;
    cli_args_init(&a, "probe", argc, argv);
    posemb_source_opts so = {0};
    posemb_analyze_opts ao = posemb_analyze_defaults();
    const char *kind = NULL, *src = NULL, *arg;
    int rc = 0, json = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!a.flag && strcmp(arg, "-K")) {
            if (!kind) kind = arg;
            else if (!src) src = arg;
            else return cli_usage_error(&a, "unexpected argument '%s'", arg);
        } else if (cli_is(&a, "--json")) rc = cli_switch(&a, &json, 1);
        else if (!analysis_flag(&a, &so, &ao, &rc))
            return cli_usage_error(&a, "unknown flag '%s' (see 'posemb probe --help')", arg);
    }
    if (rc) return rc;
    if (!kind || !src) return cli_usage_error(&a, "usage: posemb probe KIND SOURCE (see 'posemb probe --help')");
    int k = 0;
    while (KINDS[k] && strcmp(KINDS[k], kind)) k++;
    if (!KINDS[k])
        return cli_usage_error(
            &a,
            "unknown probe '%s' (similarity, identical, correlation, regress, regress-cv, relative, dims, psi, order)",
            kind);
    cli_say_threads();
    posemb_source s;
    posemb_error err;
    if (posemb_source_open(&s, src, &so, &err)) return cli_report("probe", &err);
    posemb_status st = run_probe(k, &s, &ao, json, &err);
    posemb_source_close(&s);
    return st ? cli_report("probe", &err) : 0;
}
