/* The whole analysis of one PE source: every matrix and probe that applies,
 * written as indicators.json (ANALYSIS.md section 6), CSVs, figures (PNG, and
 * SVG with --svg) and one self-contained report.html. */
#ifndef POSEMB_ANALYZE_H
#define POSEMB_ANALYZE_H

#include "posemb/api.h"

#include "posemb/indicators.h"
#include "posemb/probes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_analyze_opts {
    int K;            /* indicator band 1 <= |i - j| <= K (32) */
    int n_words;      /* identical-word probing: words (300) */
    int pairs;        /* relative-order probe: pairs (512) */
    int folds;        /* cross-validation folds (5) */
    uint64_t seed;    /* words, shuffles, pairs (0) */
    double ridge;     /* regression ridge (0: minimum-norm least squares) */
    double dims_frac; /* a dimension moves when its range exceeds this share of the widest (0.5) */
    int figures;      /* write figures (1) */
    int svg;          /* also SVG (0) */
    int report;       /* write report.html (1) */
    int quiet;
    /* Token ids of a text (the model's tokenizer) the attention analyses of a
     * model read, as posemb_attn_windows consecutive windows of the analysis
     * length from its start (fewer when the text holds fewer): EINVAL when it
     * holds less than one, ERANGE for an id outside the vocabulary; ignored
     * for a source that is no model. NULL: seeded random tokens (NULL). */
    const int32_t *text;
    long text_n;
} posemb_analyze_opts;

POSEMB_API posemb_analyze_opts posemb_analyze_defaults(void);

/* What was found; a has_* flag says whether it applies to the source. */
typedef struct posemb_analysis {
    int has_similarity, has_rel, has_identical, has_correlation, has_bias, has_regress, has_psi;
    posemb_indicators similarity, similarity_cosine, rel_similarity, identical, correlation, bias;
    posemb_regress regress;
    double regress_cv_mae, relative_error;
    int dims_moving, psi_until;
    double seconds;
} posemb_analysis;

/* Analyses src into out_dir (created). EIO when out_dir or a file cannot be
 * written, EINVAL for a path too long, ENOMEM, or a probe's failure. res
 * holds what was found; free it with posemb_analysis_free, also after a
 * failure. */
POSEMB_API posemb_status posemb_analyze(posemb_source *src, const posemb_analyze_opts *o, const char *out_dir,
                                        posemb_analysis *res, posemb_error *err);
POSEMB_API void posemb_analysis_free(posemb_analysis *res);

/* posemb_analyze of a table [rows, dim] in memory (posemb_source_open_table):
 * writes out_dir/indicators.json and the rest as o asks; res may be NULL
 * (else free it as above). Fails as posemb_analyze, or EINVAL for fewer than
 * 2 rows. */
POSEMB_API posemb_status posemb_analyze_table(const float *table, int rows, int dim, const char *name,
                                              const posemb_analyze_opts *o, const char *out_dir, posemb_analysis *res,
                                              posemb_error *err);

/* A training run's saved checkpoints (run/checkpoint-STEP): the similarity
 * of the APE rows (or of layer 0's relative vectors) and its indicators at
 * each step: out_dir/evolution.json, evolution.csv, the indicators over
 * steps, heatmaps at up to 8 steps, report.html (the seed paper's Figure 5).
 * EIO when run cannot be read, EINVAL when it has no complete checkpoint or
 * its PE no table; else as posemb_source_open and the writers. */
POSEMB_API posemb_status posemb_evolution(const char *run, const char *out_dir, const posemb_source_opts *so,
                                          const posemb_analyze_opts *o, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
