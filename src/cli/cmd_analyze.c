/* posemb analyze: everything posemb can say about one PE, as files. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_args.h"
#include "commands.h"
#include "analysis/analysis.h"
#include "core/arena_internal.h"

static const char USAGE[] =
    "usage: posemb analyze SOURCE [--out DIR] [--svg] [--no-figures] [options]\n"
    "       posemb analyze RUN_DIR --evolution [--out DIR] [options]\n\n"
    "SOURCE is a PE spec (sin, lsin+lsrpe, alibi, ...), a model folder (posemb's or a\n"
    "Hugging Face BERT, RoBERTa or GPT-2: config.json + model.safetensors), or a .safetensors\n"
    "file with --tensor NAME. Runs every analysis that applies: position similarity (dot,\n"
    "cosine), the similarity of relative vectors, identical-word probing and the position-wise\n"
    "correlation of a model's first layer, the three property indicators of each, the\n"
    "regression and order probes, per-dimension ranges, psi(m). Writes DIR/indicators.json,\n"
    "a CSV per matrix and probe, figures (PNG; SVG with --svg) and DIR/report.html.\n"
    "With --evolution, RUN_DIR is a posemb train folder: the similarity and its indicators at\n"
    "every saved checkpoint (keep them with 'posemb train --keep N').\n\n"
    "  --out DIR       output folder (default: posemb-analysis)\n"
    "  --text PATH     a model's attention analyses on windows of this text (a file or a folder,\n"
    "                  tokenized by the model's tokenizer) instead of random tokens\n" ANALYSIS_FLAGS_HELP;

static void print_row(const char *name, const posemb_indicators *in)
{
    printf("  %-22s TI %.3f  MONO %.3f (fwd %.3f, bwd %.3f)  window %4d  SYM %.3f\n", name, in->ti, in->mono,
           in->mono_fwd, in->mono_bwd, in->window, in->sym);
}

/* Why the PE has no fixed matrix to read (its own words: data-dependent, a logit
 * scale, no PE), and what there is to read instead. */
static void print_nothing_fixed(const posemb_source *s)
{
    posemb_pe *pe = s->own_pe ? s->own_pe : s->model ? posemb_model_pe(s->model) : NULL;
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_matrix m;
    posemb_error err = {0};
    if (pe && posemb_pe_matrix_of(pe, s->n, &a, &m, &err)) printf("  nothing fixed to analyse: %s\n", err.msg);
    posemb_arena_free(&a);
    if (pe && posemb_pe_has_scale(pe)) printf("  a logit scale is a factor per position: 'posemb pe SPEC' writes it\n");
    if (s->model) printf("  per input: where each head attends on the sequences analysed (attention_profile.csv)\n");
    else printf("  per input: a trained model folder shows where its heads attend on a text\n");
}

static void print_analysis(const posemb_source *s, const posemb_analysis *r, int K)
{
    printf("%s: %s\n  indicators over 1 <= |i-j| <= %d:\n", s->name, s->provenance, posemb_indicators_band(K, s->n));
    if (r->has_similarity) {
        print_row("similarity (dot)", &r->similarity);
        print_row("similarity (cosine)", &r->similarity_cosine);
    }
    if (r->has_rel) print_row("relative vectors", &r->rel_similarity);
    if (r->has_identical) print_row("identical words", &r->identical);
    if (r->has_correlation) print_row("correlation", &r->correlation);
    if (r->has_bias) print_row("bias / kernel", &r->bias);
    if (r->has_regress) {
        printf("  regression (even positions): mean |error| %.3f; by range:", r->regress.mae_all);
        for (int i = 0; i < r->regress.n_ranges; i++)
            printf(" %d-%d %.2f", r->regress.ranges[i][0], r->regress.ranges[i][1], r->regress.mae_by_range[i]);
        printf("\n  5-fold regression: %.3f   order of two positions: error %.3f   moving dimensions: %d of %d\n",
               r->regress_cv_mae, r->relative_error, r->dims_moving, s->dim);
    }
    if (r->has_psi) printf("  psi(m) falls strictly up to m = %d\n", r->psi_until);
    if (!r->has_similarity && !r->has_rel && !r->has_bias && !r->has_regress) print_nothing_fixed(s);
}

int cmd_analyze(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "analyze", argc, argv);
    posemb_source_opts so = {0};
    posemb_analyze_opts ao = posemb_analyze_defaults();
    const char *src = NULL, *out = "posemb-analysis", *text_path = NULL, *arg;
    int rc = 0, evolution = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!a.flag && strcmp(arg, "-K")) {
            if (src) return cli_usage_error(&a, "one SOURCE only (got '%s' and '%s'); see posemb compare", src, arg);
            src = arg;
        } else if (cli_is(&a, "--out")) rc = (out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--text")) rc = (text_path = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--svg")) rc = cli_switch(&a, &ao.svg, 1);
        else if (cli_is(&a, "--no-figures")) rc = cli_switch(&a, &ao.figures, 0);
        else if (cli_is(&a, "--evolution")) rc = cli_switch(&a, &evolution, 1);
        else if (!analysis_flag(&a, &so, &ao, &rc))
            return cli_usage_error(&a, "unknown flag '%s' (see 'posemb analyze --help')", arg);
    }
    if (rc) return rc;
    if (!src) return cli_usage_error(&a, "missing SOURCE (see 'posemb analyze --help')");
    posemb_error err;
    if (evolution && text_path) return cli_usage_error(&a, "--text is for a model folder, not --evolution");
    cli_say_threads();
    if (evolution) return posemb_evolution(src, out, &so, &ao, &err) ? cli_report("analyze", &err) : 0;
    posemb_corpus text = {0};
    if (text_path && analysis_text_load(src, text_path, &text, &ao, &err)) return cli_report("analyze", &err);
    posemb_source s;
    posemb_analysis r;
    if (posemb_source_open(&s, src, &so, &err)) {
        posemb_corpus_free(&text);
        return cli_report("analyze", &err);
    }
    posemb_status st = posemb_analyze(&s, &ao, out, &r, &err);
    if (!st) {
        print_analysis(&s, &r, ao.K);
        printf("  %.2f s; wrote %s/indicators.json and %s/report.html\n", r.seconds, out, out);
    }
    posemb_analysis_free(&r);
    posemb_source_close(&s);
    posemb_corpus_free(&text);
    return st ? cli_report("analyze", &err) : 0;
}
