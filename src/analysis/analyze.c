/* posemb analyze: every analysis that applies to a source, to files. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analysis/analysis.h"
#include "posemb/analyze.h"
#include "core/fileio.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "posemb/rng.h"
#include "core/timer.h"
#include "model/model_internal.h"
#include "pe/pe_internal.h"
#include "core/rng_internal.h"
#include "core/arena_internal.h"

posemb_analyze_opts posemb_analyze_defaults(void)
{
    posemb_analyze_opts o = {
        .K = 32, .n_words = 300, .pairs = 512, .folds = 5, .dims_frac = 0.5, .figures = 1, .report = 1};
    return o;
}

typedef struct ctx {
    const posemb_source *src;
    const posemb_analyze_opts *o;
    const char *out;
    posemb_analysis *res;
    cJSON *json;
    posemb_report *report;
    posemb_arena arena;
    char figs[32][64], captions[32][160];
    int n_figs;
} ctx;

static int path_in(const ctx *c, const char *name, char *buf, size_t cap)
{
    return posemb_path_join(buf, cap, c->out, name);
}

static posemb_status csv(const ctx *c, const char *name, const float *m, int rows, int cols, posemb_error *err)
{
    char p[POSEMB_PATH_MAX];
    if (path_in(c, name, p, sizeof p)) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", c->out);
    return posemb_csv_write(p, m, rows, cols, err);
}

/* A heatmap in PNG (and SVG); diverging when the values change sign. */
static posemb_status heatmap(ctx *c, const char *stem, const float *m, int rows, int cols, double x0, double y0,
                             const char *title, const char *xl, const char *yl, const char *cbar, posemb_error *err)
{
    if (!c->o->figures) return POSEMB_OK;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < (size_t)rows * cols; k++) {
        lo = fminf(lo, m[k]);
        hi = fmaxf(hi, m[k]);
    }
    posemb_heatmap_opts h = posemb_heatmap_defaults();
    h.title = title;
    h.xlabel = xl;
    h.ylabel = yl;
    h.cbar_label = cbar;
    h.x0 = x0;
    h.y0 = y0;
    h.cmap = lo < 0 && hi > 0 ? POSEMB_CMAP_DIVERGING : POSEMB_CMAP_VIRIDIS;
    h.vmin = h.vmax = NAN;
    char name[96], p[POSEMB_PATH_MAX];
    for (int svg = 0; svg <= c->o->svg; svg++) {
        snprintf(name, sizeof name, "%s.%s", stem, svg ? "svg" : "png");
        if (path_in(c, name, p, sizeof p)) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", c->out);
        posemb_status st = posemb_plot_heatmap(p, m, rows, cols, &h, err);
        if (st) return st;
    }
    if (c->n_figs < 32) {
        snprintf(c->figs[c->n_figs], sizeof c->figs[0], "%s.png", stem);
        snprintf(c->captions[c->n_figs++], sizeof c->captions[0], "%s", title);
    }
    return POSEMB_OK;
}

static posemb_status lines(ctx *c, const char *stem, const posemb_series *s, int n, const char *title, const char *xl,
                           const char *yl, posemb_error *err)
{
    if (!c->o->figures) return POSEMB_OK;
    posemb_lines_opts lo = posemb_lines_defaults();
    lo.title = title;
    lo.xlabel = xl;
    lo.ylabel = yl;
    char name[96], p[POSEMB_PATH_MAX];
    for (int svg = 0; svg <= c->o->svg; svg++) {
        snprintf(name, sizeof name, "%s.%s", stem, svg ? "svg" : "png");
        if (path_in(c, name, p, sizeof p)) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", c->out);
        posemb_status st = posemb_plot_lines(p, s, n, &lo, err);
        if (st) return st;
    }
    if (c->n_figs < 32) {
        snprintf(c->figs[c->n_figs], sizeof c->figs[0], "%s.png", stem);
        snprintf(c->captions[c->n_figs++], sizeof c->captions[0], "%s", title);
    }
    return POSEMB_OK;
}

static cJSON *indicators_json(const posemb_indicators *in)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ti", in->ti);
    cJSON_AddNumberToObject(o, "mono", in->mono);
    cJSON_AddNumberToObject(o, "mono_fwd", in->mono_fwd);
    cJSON_AddNumberToObject(o, "mono_bwd", in->mono_bwd);
    cJSON_AddNumberToObject(o, "window", in->window);
    cJSON_AddNumberToObject(o, "sym", in->sym);
    return o;
}

/* Indicators of a matrix, its CSV and heatmap, under key in indicators.json. */
/* What the colour bar of each matrix measures. */
static const char *value_label(const char *key)
{
    static const char *const map[][2] = {{"similarity", "dot product"},     {"similarity_cosine", "cosine"},
                                         {"rel_similarity", "dot product"}, {"identical", "attention logit"},
                                         {"correlation", "P Wq Wk^T P^T"},  {"bias", "logit term"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i][0], key)) return map[i][1];
    return key;
}

static posemb_status matrix(ctx *c, const char *key, const float *m, int n, double x0, const char *title,
                            posemb_indicators *out, posemb_error *err)
{
    posemb_status st = posemb_indicators_compute(m, n, c->o->K, out, err);
    char name[96];
    snprintf(name, sizeof name, "%s.csv", key);
    if (!st) st = csv(c, name, m, n, n, err);
    if (!st)
        st = heatmap(c, key, m, n, n, x0, x0, title, x0 ? "offset" : "position", x0 ? "offset" : "position",
                     value_label(key), err);
    if (!st) cJSON_AddItemToObject(c->json, key, indicators_json(out));
    return st;
}

static float *floats(ctx *c, size_t n, posemb_error *err)
{
    float *p = posemb_arena_floats(&c->arena, n);
    if (!p) posemb_fail(err, POSEMB_ENOMEM, "analysis: out of memory");
    return p;
}

/* The plots take double coordinates. */
static double *doubles(ctx *c, size_t n, posemb_error *err)
{
    double *p = posemb_arena_alloc(&c->arena, n * sizeof *p);
    if (!p) posemb_fail(err, POSEMB_ENOMEM, "analysis: out of memory");
    return p;
}

/* Similarity of the APE rows (dot and cosine). */
static posemb_status similarity(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    float *dot = floats(c, (size_t)s->n * s->n, err), *cos = dot ? floats(c, (size_t)s->n * s->n, err) : NULL;
    if (!cos) return POSEMB_ENOMEM;
    posemb_similarity(s->ape, s->n, s->dim, 0, dot);
    posemb_similarity(s->ape, s->n, s->dim, 1, cos);
    c->res->has_similarity = 1;
    posemb_status st =
        matrix(c, "similarity", dot, s->n, 0, "Position similarity <P_x, P_y>", &c->res->similarity, err);
    if (!st)
        st = matrix(c, "similarity_cosine", cos, s->n, 0, "Position similarity, cosine", &c->res->similarity_cosine,
                    err);
    return st;
}

/* What a learned table encodes: regression (both protocols), order, dimensions. */
static posemb_status probes(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    const posemb_analyze_opts *o = c->o;
    posemb_analysis *r = c->res;
    posemb_status st = posemb_regress_seed(s->ape, s->n, s->dim, o->ridge, &r->regress, err);
    if (!st) st = posemb_regress_cv(s->ape, s->n, s->dim, o->folds, o->seed, o->ridge, &r->regress_cv_mae, err);
    if (!st)
        st = posemb_relative_order(s->ape, s->n, s->dim, o->pairs, o->folds, o->seed, 1.0, &r->relative_error, err);
    if (st) return st;
    r->has_regress = 1;
    cJSON *reg = cJSON_AddObjectToObject(c->json, "regress"), *mae = cJSON_AddArrayToObject(reg, "mae_by_range"),
          *rng = cJSON_AddArrayToObject(reg, "ranges");
    for (int i = 0; i < r->regress.n_ranges; i++) {
        cJSON_AddItemToArray(mae, cJSON_CreateNumber(r->regress.mae_by_range[i]));
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(r->regress.ranges[i][0]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(r->regress.ranges[i][1]));
        cJSON_AddItemToArray(rng, pair);
    }
    cJSON_AddNumberToObject(reg, "mae_all", r->regress.mae_all);
    cJSON *cv = cJSON_AddObjectToObject(c->json, "regress_cv");
    cJSON_AddNumberToObject(cv, "mae", r->regress_cv_mae);
    cJSON_AddNumberToObject(cv, "folds", o->folds);
    cJSON_AddNumberToObject(cv, "seed", (double)o->seed);
    cJSON *rel = cJSON_AddObjectToObject(c->json, "relative");
    cJSON_AddNumberToObject(rel, "error", r->relative_error);
    cJSON_AddNumberToObject(rel, "pairs", o->pairs);
    cJSON_AddNumberToObject(rel, "folds", o->folds);
    /* files: predictions, dimension ranges */
    float *xy = floats(c, (size_t)2 * s->n, err), *range = xy ? floats(c, (size_t)s->dim, err) : NULL;
    if (!range) return POSEMB_ENOMEM;
    double *xs = doubles(c, (size_t)s->n, err), *ys = doubles(c, (size_t)s->n, err);
    if (!xs || !ys) return POSEMB_ENOMEM;
    for (int x = 0; x < s->n; x++) {
        xy[2 * x] = (float)x;
        xy[2 * x + 1] = r->regress.pred[x];
        xs[x] = x;
        ys[x] = r->regress.pred[x];
    }
    posemb_dim_ranges(s->ape, s->n, s->dim, o->dims_frac, range, &r->dims_moving);
    cJSON *dims = cJSON_AddObjectToObject(c->json, "dims");
    cJSON_AddNumberToObject(dims, "moving", r->dims_moving);
    cJSON_AddNumberToObject(dims, "of", s->dim);
    cJSON_AddNumberToObject(dims, "frac", o->dims_frac);
    st = csv(c, "regress.csv", xy, s->n, 2, err);
    if (!st) st = csv(c, "dims.csv", range, s->dim, 1, err);
    posemb_series ser[2] = {{"prediction", xs, ys, s->n, 1}, {"truth", xs, xs, s->n, 0}};
    if (!st)
        st = lines(c, "regress", ser, 2, "Linear regression of the position (fit on even positions)", "position",
                   "predicted position", err);
    double *ds = doubles(c, (size_t)s->dim, err);
    if (!ds) return POSEMB_ENOMEM;
    for (int d = 0; d < s->dim; d++) ds[d] = range[d];
    posemb_series dser = {.label = "range over positions", .y = ds, .n = s->dim, .points = 1};
    if (!st)
        st = lines(c, "dims", &dser, 1, "Per-dimension range of the position vectors", "dimension", "max - min", err);
    return st;
}

static posemb_status psi(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    float *p = floats(c, (size_t)s->n, err);
    double *ys = p ? doubles(c, (size_t)s->n, err) : NULL;
    if (!ys) return POSEMB_ENOMEM;
    posemb_psi(s->freqs, s->n_freqs, s->n, p, &c->res->psi_until);
    c->res->has_psi = 1;
    cJSON *j = cJSON_AddObjectToObject(c->json, "psi");
    cJSON_AddNumberToObject(j, "decreasing_until", c->res->psi_until);
    cJSON_AddNumberToObject(j, "frequencies", s->n_freqs);
    for (int m = 0; m < s->n; m++) ys[m] = p[m];
    posemb_series ser = {.label = "psi(m)", .y = ys, .n = s->n};
    posemb_status st = csv(c, "psi.csv", p, s->n, 1, err);
    if (!st) st = lines(c, "psi", &ser, 1, "psi(m) = sum_k cos(w_k m)", "offset m", "psi(m)", err);
    if (!st && c->o->figures) {
        char path[POSEMB_PATH_MAX];
        float pick[8];
        int n = s->n_freqs < 8 ? s->n_freqs : 8;
        for (int i = 0; i < n; i++) pick[i] = s->freqs[(size_t)i * (s->n_freqs - 1) / (n > 1 ? n - 1 : 1)];
        if (path_in(c, "clock.png", path, sizeof path)) return posemb_fail(err, POSEMB_EINVAL, "path too long");
        st = posemb_plot_clock(path, pick, n, s->n, "Sine/cosine pairs of 8 frequencies", err);
        if (!st && c->n_figs < 32) {
            snprintf(c->figs[c->n_figs], sizeof c->figs[0], "clock.png");
            snprintf(c->captions[c->n_figs++], sizeof c->captions[0], "The clock: (cos w x, sin w x) by position x");
        }
    }
    return st;
}

static posemb_status relative(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    float *m = floats(c, (size_t)s->rel_rows * s->rel_rows, err);
    if (!m) return POSEMB_ENOMEM;
    posemb_similarity(s->rel, s->rel_rows, s->rel_dim, 0, m);
    c->res->has_rel = 1;
    return matrix(c, "rel_similarity", m, s->rel_rows, s->rel_x0, "Similarity of the relative vectors (layer 0)",
                  &c->res->rel_similarity, err);
}

/* The first layer: identical words, and the APE's own correlation. */
static posemb_status first_layer(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    int n = s->n;
    float *mean = floats(c, (size_t)n * n, err), *spread = mean ? floats(c, (size_t)n * n, err) : NULL;
    float *soft = spread ? floats(c, (size_t)n * n, err) : NULL;
    if (!soft) return POSEMB_ENOMEM;
    posemb_status st = posemb_identical_words(s->model, n, c->o->n_words, c->o->seed, mean, spread, soft, err);
    if (!st)
        st = matrix(c, "identical", mean, n, 0, "Identical-word attention logits, layer 0", &c->res->identical, err);
    if (!st) st = csv(c, "identical_spread.csv", spread, n, n, err);
    if (!st) st = csv(c, "identical_softmax.csv", soft, n, n, err);
    if (!st)
        st = heatmap(c, "identical_softmax", soft, n, n, 0, 0, "Identical-word attention (softmax), layer 0", "key",
                     "query", "probability", err);
    if (!st) c->res->has_identical = 1;
    if (st || !s->ape || posemb_model_config(s->model)->arch == POSEMB_ROBERTA) return st;
    float *corr = floats(c, (size_t)n * n, err);
    if (!corr) return POSEMB_ENOMEM;
    st = posemb_correlation(s->model, s->ape, n, NULL, corr, err);
    if (!st)
        st = matrix(c, "correlation", corr, n, 0, "Position-wise correlation P Wq Wk^T P^T, layer 0",
                    &c->res->correlation, err);
    if (!st) c->res->has_correlation = 1;
    return st;
}

/* Seeded random sequences of n tokens of the vocabulary (never the padding token). */
static void random_ids(const posemb_config *mc, uint64_t seed, int B, int n, int32_t *ids)
{
    posemb_rng r;
    posemb_rng_seed(&r, seed, 11);
    for (long i = 0; i < (long)B * n; i++) {
        do ids[i] = (int32_t)posemb_rng_below(&r, (uint32_t)mc->vocab_size);
        while (ids[i] == mc->pad_token_id && mc->vocab_size > 1);
    }
}

/* The attention profile's CSVs, JSON and figure. */
static posemb_status profile_out(ctx *c, const posemb_attn_profile *pr, int B, posemb_error *err)
{
    int L = pr->layers, H = pr->heads;
    float *both = floats(c, (size_t)L * H * 2, err);
    if (!both) return POSEMB_ENOMEM;
    for (int k = 0; k < L * H; k++) {
        both[2 * k] = pr->mean_dist[k];
        both[2 * k + 1] = pr->sink[k];
    }
    posemb_status st = csv(c, "attention_profile.csv", both, L * H, 2, err);
    if (!st) st = csv(c, "attention_histogram.csv", pr->hist, L * H, pr->bins, err);
    if (!st)
        st = heatmap(c, "attention_distance", pr->mean_dist, L, H, 0, 0,
                     "Mean attention distance sum_j p_ij |i - j| (rows: layers, columns: heads)", "head", "layer",
                     "tokens", err);
    if (!st)
        st =
            heatmap(c, "attention_sink", pr->sink, L, H, 0, 0,
                    "Attention on the first token (rows: layers, columns: heads)", "head", "layer", "probability", err);
    cJSON *j = cJSON_AddObjectToObject(c->json, "attention");
    cJSON_AddNumberToObject(j, "sequences", B);
    cJSON_AddNumberToObject(j, "length", c->src->n);
    cJSON_AddStringToObject(j, "inputs", c->o->text ? "windows of the text" : "seeded random tokens of the vocabulary");
    cJSON_AddItemToObject(j, "mean_distance", cJSON_CreateFloatArray(pr->mean_dist, L * H));
    cJSON_AddItemToObject(j, "first_token_mass", cJSON_CreateFloatArray(pr->sink, L * H));
    return st;
}

/* A rotary model's use of each rotation pair per head (posemb_rotary_usage):
 * rotary_q.csv, rotary_k.csv (rows: layer x head; columns: pair m, from the
 * fastest frequency to the slowest) and a heatmap of q's. */
static posemb_status rotary(ctx *c, const posemb_batch *b, posemb_error *err)
{
    posemb_model *m = c->src->model;
    const char *spec = posemb_pe_spec(posemb_model_pe(m));
    if (!posemb_pe_has_qk(posemb_model_pe(m)) || !strstr(spec, "pairing=")) return POSEMB_OK; /* not rotary */
    const posemb_config *mc = posemb_model_config(m);
    int L = mc->layers, H = mc->heads, KV = mc->arch == POSEMB_LLAMA ? mc->kv_heads : H;
    int half = posemb_config_head_dim(mc) / 2;
    float *q = floats(c, (size_t)L * H * half, err), *k = q ? floats(c, (size_t)L * KV * half, err) : NULL;
    if (!k) return POSEMB_ENOMEM;
    posemb_status st = posemb_rotary_usage(m, b, !strstr(spec, "pairing=interleaved"), q, k, err);
    if (!st) st = csv(c, "rotary_q.csv", q, L * H, half, err);
    if (!st) st = csv(c, "rotary_k.csv", k, L * KV, half, err);
    if (!st)
        st = heatmap(c, "rotary_q", q, L * H, half, 0, 0,
                     "Mean norm of each rotation pair of q (rows: layer x head; columns: pair, fast to slow)", "pair",
                     "layer x head", "norm", err);
    if (!st) cJSON_AddNumberToObject(cJSON_GetObjectItem(c->json, "attention"), "rotary_pairs", half);
    return st;
}

/* The sequences the attention analyses read: posemb_attn_windows of them,
 * fewer when the text has fewer windows. */
static int attn_sequences(const ctx *c)
{
    const posemb_config *mc = posemb_model_config(c->src->model);
    int n = c->src->n, B = posemb_attn_windows(mc->layers, mc->heads, n);
    long windows = c->o->text ? c->o->text_n / n : B;
    return windows < B ? (int)windows : B;
}

/* Where a model's heads attend: the attention-weighted distance and the
 * mass on the first token per layer and head (posemb_attn_profile_of), on
 * windows of the analysis length from the text in c->o, else on seeded
 * random sequences. */
static posemb_status attention(ctx *c, posemb_error *err)
{
    posemb_model *m = c->src->model;
    const posemb_config *mc = posemb_model_config(m);
    int n = c->src->n, bins = n < 16 ? n : 16, B = attn_sequences(c);
    int32_t *ids = malloc((size_t)(B > 1 ? B : 1) * n * sizeof *ids);
    if (!ids) return posemb_fail(err, POSEMB_ENOMEM, "attention profile: out of memory");
    posemb_status st = POSEMB_OK;
    if (c->o->text) st = posemb_text_windows(c->o->text, c->o->text_n, B > 1 ? B : 1, n, mc->vocab_size, ids, err);
    else random_ids(mc, c->o->seed, B, n, ids);
    posemb_batch b = {.B = B, .T = n, .ids = ids};
    posemb_attn_profile pr = {0};
    posemb_model_set_train(m, 0, 0, 0);
    if (!st) st = posemb_model_forward(m, &b, err);
    if (!st) st = posemb_attn_profile_of(m, &b, bins, &pr, err);
    if (!st) st = profile_out(c, &pr, B, err);
    if (!st) st = rotary(c, &b, err);
    posemb_attn_profile_free(&pr);
    free(ids);
    return st;
}

/* A PE over image patches (2D RoPE, M-RoPE): its kernel by patch offset (dx, dy), kernel_grid.csv and a
 * heatmap, rows dy and columns dx from -(G - 1) to G - 1. */
static posemb_status patch_grid(ctx *c, posemb_pe *pe, posemb_error *err)
{
    posemb_pe_export ex;
    posemb_status st = posemb_pe_export_matrices(pe, c->src->n, &c->arena, &ex, err);
    for (int i = 0; !st && i < ex.n; i++) {
        const posemb_pe_named_matrix *g = &ex.items[i];
        if (strcmp(g->name, "kernel_grid")) continue;
        st = csv(c, "kernel_grid.csv", g->data, g->rows, g->cols, err);
        if (!st)
            st = heatmap(c, "kernel_grid", g->data, g->rows, g->cols, -(g->cols - 1) / 2.0, -(g->rows - 1) / 2.0,
                         "Kernel between two patches of one image, by their offset", "dx (patches)", "dy (patches)",
                         "q.k of constant unit pairs", err);
    }
    return st;
}

/* Attention-only PEs (ALiBi, RoPE, T5, ...): their bias or kernel, a
 * model's with its trained parameters and its RoPE's actual frequencies
 * and scaling at this length. */
static posemb_status bias(ctx *c, posemb_error *err)
{
    posemb_pe_matrix pm;
    posemb_pe *pe = c->src->own_pe ? c->src->own_pe : posemb_model_pe(c->src->model);
    posemb_error why = {0}; /* err may be NULL, and the reason goes to the JSON */
    posemb_status st = posemb_pe_matrix_of(pe, c->src->n, &c->arena, &pm, &why);
    if (st == POSEMB_ERANGE) { /* nothing fixed: the reason, for the reader of the JSON */
        cJSON_AddStringToObject(c->json, "nothing_fixed", why.msg);
        return POSEMB_OK;
    }
    if (st) {
        if (err) *err = why;
        return st;
    }
    c->res->has_bias = 1;
    st = matrix(c, "bias", pm.data, pm.size, 0, pm.what, &c->res->bias, err);
    return st ? st : patch_grid(c, pe, err);
}

static void indicator_row(const char *name, const posemb_indicators *in, const char **cells, char (*buf)[32], int *k)
{
    cells[*k] = name;
    (*k)++;
    double v[5] = {in->ti, in->mono, in->mono_fwd, in->mono_bwd, in->sym};
    for (int i = 0; i < 5; i++) {
        snprintf(buf[*k], 32, "%.3f", v[i]);
        cells[*k] = buf[*k];
        (*k)++;
    }
    snprintf(buf[*k], 32, "%d", in->window);
    cells[*k] = buf[*k];
    (*k)++;
}

static posemb_status write_report(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    const posemb_analysis *r = c->res;
    char title[700], text[2048], path[POSEMB_PATH_MAX];
    snprintf(title, sizeof title, "posemb analysis: %s", s->name);
    posemb_report *rep = posemb_report_new(title);
    if (!rep) return posemb_fail(err, POSEMB_ENOMEM, "report: out of memory");
    posemb_report_heading(rep, 1, title);
    snprintf(
        text, sizeof text,
        "Source: %s. PE: %s. Indicators over the band 1 <= |i - j| <= %d; higher = the property "
        "holds better (TI translation invariance, MONO monotonicity, SYM symmetry; formulas in docs/indicators.md).",
        s->provenance, s->spec, posemb_indicators_band(c->o->K, s->n));
    posemb_report_paragraph(rep, text);
    static const char *const head[] = {"matrix", "TI", "MONO", "MONO fwd", "MONO bwd", "SYM", "monotone window"};
    const char *cells[7 * 8];
    char buf[7 * 8][32];
    int k = 0, rows = 0;
    struct {
        int has;
        const char *name;
        const posemb_indicators *in;
    } m[] = {{r->has_similarity, "similarity (dot)", &r->similarity},
             {r->has_similarity, "similarity (cosine)", &r->similarity_cosine},
             {r->has_rel, "relative vectors", &r->rel_similarity},
             {r->has_identical, "identical words", &r->identical},
             {r->has_correlation, "correlation", &r->correlation},
             {r->has_bias, "bias / kernel", &r->bias}};
    for (int i = 0; i < 6; i++)
        if (m[i].has) {
            indicator_row(m[i].name, m[i].in, cells, buf, &k);
            rows++;
        }
    posemb_report_heading(rep, 2, "The three properties");
    posemb_report_table(rep, head, 7, cells, rows, "Indicators of each matrix");
    if (r->has_regress) {
        posemb_report_heading(rep, 2, "What the table encodes");
        snprintf(text, sizeof text,
                 "Linear regression of the position, fit on even positions: mean |error| %.3f over "
                 "all %d positions. 5-fold protocol: mean |round(prediction) - x| = %.3f. Order of two positions "
                 "(logistic regression on [P_i; P_j], %d pairs, 5-fold): error rate %.3f. %d of %d dimensions move by "
                 "more than %.0f%% of the widest range.",
                 r->regress.mae_all, s->n, r->regress_cv_mae, c->o->pairs, r->relative_error, r->dims_moving, s->dim,
                 100 * c->o->dims_frac);
        posemb_report_paragraph(rep, text);
    }
    if (r->has_psi) {
        snprintf(text, sizeof text, "psi(m) = sum_k cos(w_k m) over %d frequencies falls strictly up to m = %d.",
                 s->n_freqs, r->psi_until);
        posemb_report_paragraph(rep, text);
    }
    if (s->model) {
        posemb_report_heading(rep, 2, "Where attention goes");
        snprintf(text, sizeof text,
                 "On %d %s of %d tokens: per layer and head, the attention-weighted distance "
                 "sum_j p_ij |i - j| and the probability on the first token (attention sinks), averaged over "
                 "the queries (attention_profile.csv: one row per layer x head, the two in that order; "
                 "attention_histogram.csv: the distance histogram in bins of equal width). For a rotary PE, "
                 "rotary_q.csv and rotary_k.csv hold the mean norm of each rotation pair per layer and head, "
                 "fastest frequency first: the frequencies a head uses (Barbero et al. 2024).",
                 attn_sequences(c), c->o->text ? "windows of the text" : "seeded random sequences", s->n);
        posemb_report_paragraph(rep, text);
    }
    posemb_report_heading(rep, 2, "Figures");
    posemb_status st = POSEMB_OK;
    for (int i = 0; !st && i < c->n_figs; i++) {
        if (path_in(c, c->figs[i], path, sizeof path)) st = posemb_fail(err, POSEMB_EINVAL, "path too long");
        else st = posemb_report_image(rep, path, c->captions[i], err);
    }
    if (!st && path_in(c, "report.html", path, sizeof path)) st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st) st = posemb_report_write(rep, path, err);
    posemb_report_free(rep);
    return st;
}

static posemb_status run(ctx *c, posemb_error *err)
{
    const posemb_source *s = c->src;
    posemb_status st = POSEMB_OK;
    if (s->ape) st = similarity(c, err);
    if (!st && s->ape) st = probes(c, err);
    if (!st && s->freqs) st = psi(c, err);
    if (!st && s->rel) st = relative(c, err);
    if (!st && s->model) st = first_layer(c, err);
    if (!st && !s->ape && !s->rel && (s->own_pe || s->model)) st = bias(c, err);
    if (!st && s->model) st = attention(c, err);
    return st;
}

posemb_status posemb_analyze(posemb_source *src, const posemb_analyze_opts *o, const char *out_dir,
                             posemb_analysis *res, posemb_error *err)
{
    memset(res, 0, sizeof *res);
    if (mkdir(out_dir, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", out_dir, strerror(errno));
    double t0 = posemb_timer_now();
    ctx c = {src, o, out_dir, res, cJSON_CreateObject(), NULL, {0}, {{0}}, {{0}}, 0};
    posemb_arena_init(&c.arena, 0);
    cJSON_AddStringToObject(c.json, "source", src->name);
    cJSON_AddStringToObject(c.json, "spec", src->spec);
    cJSON_AddStringToObject(c.json, "provenance", src->provenance);
    cJSON_AddNumberToObject(c.json, "n", src->n);
    cJSON_AddNumberToObject(c.json, "dim", src->dim);
    cJSON_AddNumberToObject(c.json, "K", posemb_indicators_band(o->K, src->n)); /* the band the indicators used */
    posemb_status st = run(&c, err);
    res->seconds = posemb_timer_now() - t0;
    char path[POSEMB_PATH_MAX], *text = NULL;
    if (!st && path_in(&c, "indicators.json", path, sizeof path)) st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st && !(text = cJSON_Print(c.json))) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = posemb_write_text(path, text, err);
    if (!st && o->report) st = write_report(&c, err);
    cJSON_free(text);
    cJSON_Delete(c.json);
    posemb_arena_free(&c.arena);
    return st;
}

void posemb_analysis_free(posemb_analysis *res)
{
    free(res->regress.pred);
    res->regress.pred = NULL;
}

posemb_status posemb_analyze_table(const float *table, int rows, int dim, const char *name,
                                   const posemb_analyze_opts *o, const char *out_dir, posemb_analysis *res,
                                   posemb_error *err)
{
    posemb_source s;
    posemb_analysis own;
    posemb_analysis *r = res ? res : &own;
    posemb_status st = posemb_source_open_table(&s, name, table, rows, dim, err);
    if (st) return st;
    st = posemb_analyze(&s, o, out_dir, r, err);
    if (!res) posemb_analysis_free(&own);
    posemb_source_close(&s);
    return st;
}
