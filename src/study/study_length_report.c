/* The length study's tables (tables.md, tables.csv) and report: per
 * decoder, held-out perplexity against context length for each PE (mean
 * +- std over seeds), RoPE under each scaling applied at evaluation, and
 * passkey retrieval, RULER's tasks with each one's effective length;
 * figures of bits per token against length, and passkey and RULER heatmaps
 * (depth x length) per PE. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "eval/stats.h"
#include "study_cell.h"
#include "study_claims.h"
#include "study_extend_report.h"
#include "study_data_impl.h"
#include "study_impl.h"
#include "study_store.h"
#include "study_length_impl.h"

#define MAX_MULTS 8
#define MAX_SCALINGS 8
/* The header's sentence for passkey_needle "once", in tables.md and report.html alike. */
static const char PASSKEY_ONCE[] = "The passkey's needle said its key once (\"The pass key is 48213. Remember it.\", "
                                   "passkey_needle): a departure from the passkey test.";

typedef struct pe_row {
    cell loss[MAX_MULTS];                     /* nats per token */
    cell passkey[MAX_MULTS];                  /* keys retrieved whole, mean over depths */
    cell digits[MAX_MULTS];                   /* keys' tokens predicted, mean over depths */
    cell depth[MAX_MULTS][PASSKEY_DEPTHS];    /* keys' tokens predicted, per depth */
    cell dist[MAX_MULTS], sink[MAX_MULTS];    /* attention.jsonl: mean over layers (and heads) per seed */
    cell ruler[MAX_MULTS][STUDY_RULER_TASKS]; /* answered whole, mean over depths */
    int ruler_context[MAX_MULTS];             /* the tokens read for RULER's prompts */
    /* RULER's answered whole per depth, summed over the seeds (rdepth_n of them): the heatmaps show means only */
    double rdepth[MAX_MULTS][STUDY_RULER_TASKS][STUDY_RULER_DEPTHS];
    int rdepth_n[MAX_MULTS][STUDY_RULER_TASKS];
    int windowed[MAX_MULTS], pk_context[MAX_MULTS], att_unreached[MAX_MULTS];
} pe_row;

typedef struct length_table {
    pe_row row[POSEMB_STUDY_MAX_TASKS][POSEMB_STUDY_MAX_PES];
    cell scaled[POSEMB_STUDY_MAX_TASKS][MAX_SCALINGS][MAX_MULTS];  /* the rope row's runs, nats per token */
    int rope[POSEMB_STUDY_MAX_TASKS], ape[POSEMB_STUDY_MAX_TASKS]; /* index of the rope and ape rows, -1 */
    double chance;                                                 /* the vocabulary: uniform perplexity */
    int has_att[POSEMB_STUDY_MAX_TASKS];                           /* attention.jsonl has lines of the decoder */
    study_extend_table *ext;                                       /* extend.jsonl's fine-tunes; NULL: none (free it) */
} length_table;

typedef struct length_load {
    length_table *tb;
    const posemb_study_config *c;
} length_load;

/* A line's ruler_depths (per task, STUDY_RULER_DEPTHS numbers) into row r at length i; a task without all of
 * them is skipped, as a missing number is no seed. */
static void add_ruler_depths(pe_row *r, int i, const cJSON *depths)
{
    for (int k = 0; cJSON_IsObject(depths) && k < STUDY_RULER_TASKS; k++) {
        const char *name = study_ruler_task_name(k);
        const cJSON *a = cJSON_GetObjectItem(depths, name);
        double v[STUDY_RULER_DEPTHS];
        int ok = cJSON_IsArray(a) && cJSON_GetArraySize(a) == STUDY_RULER_DEPTHS;
        for (int d = 0; ok && d < STUDY_RULER_DEPTHS; d++) {
            const cJSON *x = cJSON_GetArrayItem(a, d);
            ok = cJSON_IsNumber(x) && isfinite(x->valuedouble);
            v[d] = ok ? x->valuedouble : 0;
        }
        if (!ok) continue;
        for (int d = 0; d < STUDY_RULER_DEPTHS; d++) r->rdepth[i][k][d] += v[d];
        r->rdepth_n[i][k]++;
    }
}

/* One results line into the length_load's table (a study_line_fn). */
static posemb_status add_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n, (void)err;
    length_table *tb = ((length_load *)ctx)->tb;
    const posemb_study_config *c = ((length_load *)ctx)->c;
    const cJSON *pe = cJSON_GetObjectItem(j, "pe"), *task = cJSON_GetObjectItem(j, "task"),
                *m = cJSON_GetObjectItem(j, "metrics"), *depths = cJSON_GetObjectItem(j, "passkey_digit_depths"),
                *scaled = cJSON_GetObjectItem(j, "scaled");
    int p = cJSON_IsString(pe) ? study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, pe->valuestring) : -1;
    int t = cJSON_IsString(task) ? study_row_of(c->tasks[0], sizeof c->tasks[0], c->n_tasks, task->valuestring) : -1;
    int i = -1;
    for (int k = 0; k < c->n_mults && k < MAX_MULTS; k++)
        if (study_num(j, "eval_len") == (double)c->n_train * c->mults[k]) i = k;
    if (p < 0 || t < 0 || i < 0 || !cJSON_IsObject(m)) return POSEMB_OK;
    pe_row *r = &tb->row[t][p];
    cell_put(&r->loss[i], study_num(m, "loss"));
    cell_put(&r->passkey[i], study_num(m, "passkey"));
    cell_put(&r->digits[i], study_num(m, "passkey_digits"));
    r->windowed[i] |= study_num(j, "context") < study_num(j, "eval_len");
    if (isfinite(study_num(j, "passkey_context"))) r->pk_context[i] = (int)study_num(j, "passkey_context");
    if (isfinite(study_num(j, "ruler_context"))) r->ruler_context[i] = (int)study_num(j, "ruler_context");
    for (int d = 0; cJSON_IsArray(depths) && d < PASSKEY_DEPTHS; d++) {
        const cJSON *x = cJSON_GetArrayItem(depths, d);
        cell_put(&r->depth[i][d], cJSON_IsNumber(x) ? x->valuedouble : NAN);
    }
    const cJSON *ruler = cJSON_GetObjectItem(j, "ruler");
    for (int k = 0; cJSON_IsObject(ruler) && k < STUDY_RULER_TASKS; k++)
        if (study_ruler_task_name(k)) cell_put(&r->ruler[i][k], study_num(ruler, study_ruler_task_name(k)));
    add_ruler_depths(r, i, cJSON_GetObjectItem(j, "ruler_depths"));
    for (int s = 0; cJSON_IsObject(scaled) && s < c->len.n_scalings && s < MAX_SCALINGS; s++)
        cell_put(&tb->scaled[t][s][i], log(study_num(scaled, c->len.scalings[s])));
    if (isfinite(study_num(j, "chance"))) tb->chance = study_num(j, "chance");
    return POSEMB_OK;
}

/* attention.jsonl's cells into the rows, one value per seed. */
static posemb_status load_attention(length_table *tb, const posemb_study_config *c, const char *out, posemb_error *err)
{
    study_att_cell *cells = malloc(study_att_index(c, c->n_tasks, 0, 0, 0) * sizeof *cells);
    posemb_status st =
        cells ? study_length_attention_read(c, out, cells, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (int t = 0; !st && t < c->n_tasks; t++)
        for (int p = 0; p < c->n_pes; p++)
            for (int s = 0; s < c->n_seeds; s++)
                for (int m = 0; m < c->n_mults && m < MAX_MULTS; m++) {
                    const study_att_cell *cl = &cells[study_att_index(c, t, p, s, m)];
                    pe_row *r = &tb->row[t][p];
                    tb->has_att[t] |= cl->in;
                    r->att_unreached[m] |= cl->unreached;
                    cell_put(&r->dist[m], cl->dist);
                    cell_put(&r->sink[m], cl->sink);
                }
    free(cells);
    return st;
}

static posemb_status load(length_table *tb, const posemb_study_config *c, const char *out, posemb_error *err)
{
    memset(tb, 0, sizeof *tb);
    for (int t = 0; t < POSEMB_STUDY_MAX_TASKS; t++) {
        tb->rope[t] = t < c->n_tasks ? study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, "rope") : -1;
        tb->ape[t] = t < c->n_tasks ? study_row_of(c->pes[0], sizeof c->pes[0], c->n_pes, "ape") : -1;
    }
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot read", path);
    length_load ld = {tb, c};
    posemb_status st = study_each_line(f, add_line, &ld, err);
    fclose(f);
    if (!st) st = load_attention(tb, c, out, err);
    return st ? st : study_extend_load(c, out, &tb->ext, err);
}

/* The four tables of a decoder, each a view: its rows' labels and cells,
 * written as markdown (tables.md) and as HTML (the report). */
enum { VIEW_PPL, VIEW_SCALED, VIEW_PASSKEY, VIEW_ATTN, VIEW_RULER, N_VIEWS = VIEW_RULER + STUDY_RULER_TASKS };

static int view_rows(const length_table *tb, const posemb_study_config *c, int t, int v)
{
    if (v == VIEW_SCALED) return tb->rope[t] >= 0 && c->len.n_scalings ? c->len.n_scalings + 1 : 0;
    if (v == VIEW_PASSKEY) return c->len.passkey_trials ? c->n_pes : 0;
    if (v == VIEW_ATTN) return tb->has_att[t] ? c->n_pes : 0;
    if (v >= VIEW_RULER) return c->len.ruler_trials && (c->len.ruler_tasks >> (v - VIEW_RULER) & 1u) ? c->n_pes : 0;
    return c->n_pes;
}

/* A view's columns after its label: one per length, and for a RULER task its effective length. */
static int view_cols(const posemb_study_config *c, int v) { return c->n_mults + (v >= VIEW_RULER); }

/* Column i's header (i < view_cols): a length, or a RULER task's effective length with its threshold. */
static void view_header(const posemb_study_config *c, int i, char *buf, size_t cap)
{
    if (i < c->n_mults) snprintf(buf, cap, "%d", c->n_train * c->mults[i]);
    else snprintf(buf, cap, "effective length (>= %g)", c->len.ruler_threshold);
}

/* RULER task k's effective length in row r: the longest length up to which every length's mean over seeds is
 * at least ruler_threshold; "below N" when the first fails, "-" when a length up to the answer has no run. */
static void effective_text(const pe_row *r, const posemb_study_config *c, int k, char *buf, size_t cap)
{
    int last = -1;
    for (int i = 0; i < c->n_mults; i++) {
        if (!r->ruler[i][k].n) {
            snprintf(buf, cap, "-");
            return;
        }
        if (cell_mean(&r->ruler[i][k]) < c->len.ruler_threshold - 1e-6) break; /* a float's 0.8 is 0.800000012 */
        last = i;
    }
    if (last < 0) snprintf(buf, cap, "below %d", c->n_train * c->mults[0]);
    else snprintf(buf, cap, "%d%s", c->n_train * c->mults[last], last == c->n_mults - 1 ? " (every length)" : "");
}

static const char *view_label(const posemb_study_config *c, int v, int row)
{
    if (v == VIEW_SCALED) return row == 0 ? "none (rope)" : c->len.scalings[row - 1];
    return c->pes[row];
}

static void view_title(const posemb_study_config *c, int t, int v, char *buf, size_t cap)
{
    if (v == VIEW_PPL) snprintf(buf, cap, "%s: held-out perplexity against context length", c->tasks[t]);
    else if (v == VIEW_SCALED)
        snprintf(buf, cap, "%s: RoPE scaled at evaluation (no retraining; factor = length / %d)", c->tasks[t],
                 c->n_train);
    else if (v == VIEW_PASSKEY)
        snprintf(buf, cap,
                 "%s: passkey retrieval (keys retrieved whole / their digits predicted; %d prompts per depth, mean "
                 "over %d depths; a model that does not copy predicts about 0.1 of the digits)",
                 c->tasks[t], c->len.passkey_trials, PASSKEY_DEPTHS);
    else if (v >= VIEW_RULER)
        snprintf(buf, cap,
                 "%s: RULER's %s (prompts answered whole, every answer token predicted; %d prompts per depth, mean "
                 "over %d depths)",
                 c->tasks[t], study_ruler_task_name(v - VIEW_RULER), c->len.ruler_trials, STUDY_RULER_DEPTHS);
    else
        snprintf(
            buf, cap,
            "%s: where attention goes on the held-out text (mean attention distance sum_j p_ij |i - j| in tokens "
            "/ mass on the first token, means over query rows, heads, layers and seeds; attention spread evenly "
            "over the causal prefix gives (L - 1) / 4 and H_L / L, 0.042 at 128 and 0.004 at 2048; attention.jsonl has "
            "each layer)",
            c->tasks[t]);
}

static void view_cell(const length_table *tb, const posemb_study_config *c, int t, int v, int row, int i, char *buf,
                      size_t cap)
{
    const pe_row *r = &tb->row[t][row], *ape = tb->ape[t] >= 0 ? &tb->row[t][tb->ape[t]] : NULL;
    if (v == VIEW_PPL) {
        cell_ppl_text(&r->loss[i], ape ? &ape->loss[i] : NULL, r->windowed[i], buf, cap);
        return;
    }
    if (v == VIEW_SCALED) { /* against rope unscaled */
        const cell *rope = &tb->row[t][tb->rope[t]].loss[i];
        if (row > 0 && c->mults[i] == 1 && !tb->scaled[t][row - 1][i].n) /* factor 1: rope itself (not STRING) */
            snprintf(buf, cap, "(= rope)");
        else cell_ppl_text(row == 0 ? rope : &tb->scaled[t][row - 1][i], rope, 0, buf, cap);
        return;
    }
    if (v >= VIEW_RULER && i == c->n_mults) {
        effective_text(r, c, v - VIEW_RULER, buf, cap);
        return;
    }
    if (v >= VIEW_RULER) {
        const cell *x = &r->ruler[i][v - VIEW_RULER];
        if (x->n)
            snprintf(buf, cap, "%.2f%s%s", cell_mean(x), cell_star(x, ape ? &ape->ruler[i][v - VIEW_RULER] : NULL),
                     r->ruler_context[i] && r->ruler_context[i] < c->n_train * c->mults[i] ? " w" : "");
        else snprintf(buf, cap, "-");
        return;
    }
    if (v == VIEW_ATTN) {
        if (r->dist[i].n)
            snprintf(buf, cap, "%.1f%s / %.3f", cell_mean(&r->dist[i]),
                     cell_star(&r->dist[i], ape ? &ape->dist[i] : NULL), cell_mean(&r->sink[i]));
        else snprintf(buf, cap, "%s", r->att_unreached[i] ? "(table ends)" : "-");
        return;
    }
    if (!r->passkey[i].n) snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.2f / %.2f%s%s", cell_mean(&r->passkey[i]), cell_mean(&r->digits[i]),
                 cell_star(&r->digits[i], ape ? &ape->digits[i] : NULL),
                 r->pk_context[i] && r->pk_context[i] < c->n_train * c->mults[i] ? " w" : "");
}

static void md_task(FILE *f, const length_table *tb, const posemb_study_config *c, int t)
{
    char buf[512];
    for (int v = 0; v < N_VIEWS; v++) {
        if (!view_rows(tb, c, t, v)) continue;
        view_title(c, t, v, buf, sizeof buf);
        fprintf(f, "%s %s\n\n| %s |", v == VIEW_PPL ? "##" : "\n###", buf, v == VIEW_SCALED ? "scaling" : "PE");
        for (int i = 0; i < view_cols(c, v); i++) {
            view_header(c, i, buf, sizeof buf);
            fprintf(f, " %s |", buf);
        }
        fprintf(f, "\n|---|");
        for (int i = 0; i < view_cols(c, v); i++) fprintf(f, "---:|");
        for (int row = 0; row < view_rows(tb, c, t, v); row++) {
            fprintf(f, "\n| %s |", view_label(c, v, row));
            for (int i = 0; i < view_cols(c, v); i++) {
                view_cell(tb, c, t, v, row, i, buf, sizeof buf);
                fprintf(f, " %s |", buf);
            }
        }
        fprintf(f, "\n");
    }
}

/* View v of decoder t as an HTML table. */
static void html_view(posemb_report *rep, const length_table *tb, const posemb_study_config *c, int t, int v)
{
    enum { W = 64 };
    int rows = view_rows(tb, c, t, v), cols = view_cols(c, v) + 1;
    char *buf = malloc((size_t)(rows + 1) * cols * W), title[512];
    const char **cells = malloc((size_t)(rows + 1) * cols * sizeof *cells);
    if (!rows || !buf || !cells) {
        free(buf);
        free(cells);
        return;
    }
    for (int row = -1; row < rows; row++)
        for (int k = 0; k < cols; k++) {
            char *text = buf + ((size_t)(row + 1) * cols + k) * W;
            if (row < 0 && !k) text[0] = 0; /* the label column's header: cells[0] below */
            else if (row < 0) view_header(c, k - 1, text, W);
            else if (!k) snprintf(text, W, "%s", view_label(c, v, row));
            else view_cell(tb, c, t, v, row, k - 1, text, W);
            cells[(row + 1) * cols + k] = text;
        }
    cells[0] = v == VIEW_SCALED ? "scaling" : "PE";
    view_title(c, t, v, title, sizeof title);
    posemb_report_table(rep, cells, cols, cells + cols, rows, title);
    free(buf);
    free(cells);
}

static posemb_status write_md(const length_table *tb, const posemb_study_config *c, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    posemb_atomic_file af;
    snprintf(path, sizeof path, "%s/tables.md", out);
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    fprintf(
        af.f,
        "# posemb length study: trained at %d tokens (%s), tested longer\n\n"
        "Causal LMs trained at %d tokens, %d steps of %d sequences; held-out perplexity per token on the first %d "
        "tokens of WikiText-2's test set at each context length, mean +- std over %d seed(s) (a cell without +- has "
        "one seed's run so far). \"w\": the PE's "
        "table ends at the training length, so the length is read in sliding windows of it (the last %d tokens "
        "of context at most). *: a two-sided Welch t-test over seeds against the ape row of the same decoder and "
        "length gives p < 0.05 (on the loss per token; the keys' digits for passkey; the distance for attention; "
        "against rope unscaled for the scalings).\n\n",
        c->n_train, c->len.tokenizer, c->n_train, c->steps, c->batch, c->len.eval_tokens, c->n_seeds, c->n_train);
    if (c->len.passkey_train > 0)
        fprintf(af.f,
                "A share %g of the training sequences were passkey prompts of %d tokens (passkey_train), each with "
                "its own key and depth; the held-out text and the validation loss are text only.\n\n",
                c->len.passkey_train, c->n_train);
    if (c->len.ruler_train > 0)
        fprintf(af.f,
                "A share %g of the training sequences the passkey left were prompts of RULER's tasks below "
                "(ruler_train), each with its own draw.\n\n",
                c->len.ruler_train);
    if (c->len.ruler_tasks && (c->len.ruler_keys || c->len.ruler_key_words)) {
        char set[64] = "drawn per prompt";
        if (c->len.ruler_keys) snprintf(set, sizeof set, "drawn from %d fixed ones (ruler_keys)", c->len.ruler_keys);
        fprintf(af.f, "RULER's keys and names were %s and written as %s (ruler_key_form): a departure from RULER.\n\n",
                set, c->len.ruler_key_words ? "lower-case words" : "RULER writes them");
    }
    if (c->len.passkey_once) fprintf(af.f, "%s\n\n", PASSKEY_ONCE);
    if (c->len.ruler_twice)
        fprintf(af.f, "The niah tasks' needles said their value twice (\"key 417 = 58213. Remember it. 58213 is key "
                      "417.\", ruler_needle): a departure from RULER.\n\n");
    if (c->len.model[0])
        fprintf(af.f, "Every decoder's config.json has %s set over the default (model).\n\n", c->len.model);
    char budgets[2048];
    study_budgets_text(c, budgets, sizeof budgets);
    if (budgets[0]) fprintf(af.f, "%s\n\n", budgets);
    for (int t = 0; t < c->n_tasks; t++) {
        md_task(af.f, tb, c, t);
        fprintf(af.f, "\n");
        study_extend_md(af.f, tb->ext, c, t);
    }
    return posemb_atomic_commit(&af, err);
}

typedef struct csv_row {
    FILE *f;
    const char *task, *pe, *scaling;
    int L;
} csv_row;

/* One tables.csv line of metric when its cell has seeds: p_welch against ref's (empty below 2 seeds a side). */
static void csv_cell(const csv_row *r, const char *metric, const cell *a, const cell *ref, int windowed)
{
    if (!a->n) return;
    double p = ref && ref != a && a->n >= 2 && ref->n >= 2 ? posemb_welch_ttest(a->v, a->n, ref->v, ref->n).p : NAN;
    fprintf(r->f, "%s,%s,%s,%d,%s,%.6f,%.6f,%d,%d,", r->task, r->pe, r->scaling, r->L, metric, cell_mean(a),
            cell_std(a), a->n, windowed);
    if (isnan(p)) fprintf(r->f, "\n");
    else fprintf(r->f, "%.6g\n", p);
}

static posemb_status write_csv(const length_table *tb, const posemb_study_config *c, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    posemb_atomic_file af;
    snprintf(path, sizeof path, "%s/tables.csv", out);
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    fprintf(af.f, "task,pe,scaling,eval_len,metric,mean,std,n,windowed,p_welch\n");
    for (int t = 0; t < c->n_tasks; t++)
        for (int p = 0; p < c->n_pes; p++)
            for (int i = 0; i < c->n_mults; i++) {
                const pe_row *r = &tb->row[t][p], *ape = tb->ape[t] >= 0 ? &tb->row[t][tb->ape[t]] : NULL;
                csv_row row = {af.f, c->tasks[t], c->pes[p], "", c->n_train * c->mults[i]};
                int pk_windowed = r->pk_context[i] && r->pk_context[i] < row.L;
                csv_cell(&row, "loss", &r->loss[i], ape ? &ape->loss[i] : NULL, r->windowed[i]);
                csv_cell(&row, "passkey", &r->passkey[i], ape ? &ape->passkey[i] : NULL, pk_windowed);
                csv_cell(&row, "passkey_digits", &r->digits[i], ape ? &ape->digits[i] : NULL, pk_windowed);
                csv_cell(&row, "attention_distance", &r->dist[i], ape ? &ape->dist[i] : NULL, 0);
                csv_cell(&row, "first_token_mass", &r->sink[i], ape ? &ape->sink[i] : NULL, 0);
                for (int k = 0; k < STUDY_RULER_TASKS; k++) {
                    char metric[48];
                    snprintf(metric, sizeof metric, "ruler_%s", study_ruler_task_name(k));
                    csv_cell(&row, metric, &r->ruler[i][k], ape ? &ape->ruler[i][k] : NULL,
                             r->ruler_context[i] && r->ruler_context[i] < row.L);
                }
                for (int s = 0; p == tb->rope[t] && s < c->len.n_scalings; s++) {
                    row.scaling = c->len.scalings[s];
                    csv_cell(&row, "loss", &tb->scaled[t][s][i], &r->loss[i], 0);
                }
            }
    for (int t = 0; t < c->n_tasks; t++) study_extend_csv(af.f, tb->ext, c, t);
    return posemb_atomic_commit(&af, err);
}

posemb_status study_length_tables(const posemb_study_config *c, const char *out, posemb_error *err)
{
    length_table *tb = calloc(1, sizeof *tb);
    if (!tb) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_error aerr; /* the tables stand without it: say so and go on */
    if (study_length_attention(c, out, &aerr))
        fprintf(stderr, "posemb study: attention not measured for every run: %s\n", aerr.msg);
    posemb_status st = load(tb, c, out, err);
    if (!st) st = write_md(tb, c, out, err);
    if (!st) st = write_csv(tb, c, out, err);
    free(tb->ext);
    free(tb);
    return st;
}

/* ---- figures ---- */

/* What a length figure plots against the context length. */
enum { FIG_BITS, FIG_SCALED, FIG_ATTN };

/* Figure kind's value for row k (a PE, or for FIG_SCALED rope then each
 * scaling) at length i: bits per token capped at chance, or the mean
 * attention distance over uniform causal attention's (L - 1) / 4. */
static double figure_value(const length_table *tb, const posemb_study_config *c, int t, int kind, int k, int i)
{
    double L = (double)c->n_train * c->mults[i];
    if (kind == FIG_ATTN) return cell_mean(&tb->row[t][k].dist[i]) / ((L - 1) / 4);
    if (kind == FIG_SCALED && k > 0 && c->mults[i] == 1 && !tb->scaled[t][k - 1][i].n) k = 0; /* factor 1: rope */
    const cell *cl = kind == FIG_BITS ? &tb->row[t][k].loss[i]
                     : k == 0         ? &tb->row[t][tb->rope[t]].loss[i]
                                      : &tb->scaled[t][k - 1][i];
    double b = cell_mean(cl) / log(2.0), cap = log2(tb->chance > 1 ? tb->chance : 2);
    return b > cap ? cap : b;
}

/* Each PE (or scaling) against the context length on a log axis. A study
 * in progress (--report) has rows with no run yet: they are left out, and
 * *drawn says whether any row had a point. */
static posemb_status length_figure(const length_table *tb, const posemb_study_config *c, int t, int kind,
                                   const char *path, int *drawn, posemb_error *err)
{
    int n = kind == FIG_SCALED ? c->len.n_scalings + 1 : c->n_pes;
    double x[MAX_MULTS], *y = calloc((size_t)n * MAX_MULTS, sizeof *y);
    posemb_series *s = calloc((size_t)n, sizeof *s);
    if (!y || !s) {
        free(y);
        free(s);
        return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    for (int i = 0; i < c->n_mults; i++) x[i] = log2((double)c->n_train * c->mults[i]);
    int used = 0;
    for (int k = 0; k < n; k++) {
        int finite = 0;
        for (int i = 0; i < c->n_mults; i++)
            finite |= isfinite(y[k * MAX_MULTS + i] = figure_value(tb, c, t, kind, k, i));
        if (finite)
            s[used++] = (posemb_series){.label = kind != FIG_SCALED ? c->pes[k]
                                                 : k == 0           ? "rope"
                                                                    : c->len.scalings[k - 1],
                                        .x = x,
                                        .y = y + k * MAX_MULTS,
                                        .n = c->n_mults,
                                        .points = 2};
    }
    char title[160];
    snprintf(title, sizeof title, "%s trained at %d tokens%s", c->tasks[t], c->n_train,
             kind == FIG_SCALED ? ": RoPE scaled at evaluation"
             : kind == FIG_ATTN ? ": where attention goes"
                                : "");
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = title;
    o.xlabel = "context length (tokens, log scale)";
    o.xlog2 = 1;
    o.ylabel = kind == FIG_ATTN ? "mean attention distance / ((L - 1) / 4): 1 = spread evenly"
                                : "held-out bits per token (capped at chance)";
    if (kind == FIG_ATTN) o.ymin = 0;
    o.width = 760;
    o.height = 500;
    *drawn = used > 0;
    posemb_status st = !used ? POSEMB_OK
                       : kind == FIG_SCALED
                           ? posemb_plot_lines(path, s, used, &o, err) /* one family: rope's scalings */
                           : study_lines_figure(path, s, used, &o, err);
    free(y);
    free(s);
    return st;
}

_Static_assert(PASSKEY_DEPTHS == STUDY_RULER_DEPTHS, "the passkey and RULER share the depths' axis");

/* A heatmap of m [PASSKEY_DEPTHS x n_mults] (depth x length, 0 to 1) titled title. */
static posemb_status depth_figure(const float *m, const posemb_study_config *c, const char *title, const char *path,
                                  posemb_error *err)
{
    char names[MAX_MULTS][24], depths[PASSKEY_DEPTHS][24];
    const char *xnames[MAX_MULTS], *ynames[PASSKEY_DEPTHS];
    for (int d = 0; d < PASSKEY_DEPTHS; d++) {
        snprintf(depths[d], sizeof depths[d], "%g", (double)d / (PASSKEY_DEPTHS - 1));
        ynames[d] = depths[d];
    }
    for (int i = 0; i < c->n_mults; i++) {
        snprintf(names[i], sizeof names[i], "%ld", (long)c->n_train * c->mults[i]);
        xnames[i] = names[i];
    }
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.title = title;
    o.xlabel = "context length (tokens)";
    o.ylabel = "needle depth (1: by the question)";
    o.xnames = xnames;
    o.ynames = ynames;
    o.vmin = 0;
    o.vmax = 1;
    o.width = 480;
    o.height = 380;
    return posemb_plot_heatmap(path, m, PASSKEY_DEPTHS, c->n_mults, &o, err);
}

/* Passkey accuracy of PE p, depth x length. */
static posemb_status passkey_figure(const length_table *tb, const posemb_study_config *c, int t, int p,
                                    const char *path, posemb_error *err)
{
    float m[PASSKEY_DEPTHS * MAX_MULTS];
    char title[200];
    for (int i = 0; i < c->n_mults; i++)
        for (int d = 0; d < PASSKEY_DEPTHS; d++) m[d * c->n_mults + i] = (float)cell_mean(&tb->row[t][p].depth[i][d]);
    snprintf(title, sizeof title, "%s, %s: passkey digits predicted", c->tasks[t], c->pes[p]);
    return depth_figure(m, c, title, path, err);
}

/* RULER task k's prompts answered whole by PE p, depth x length, mean over seeds (NAN: no seed). */
static posemb_status ruler_figure(const length_table *tb, const posemb_study_config *c, int t, int p, int k,
                                  const char *path, posemb_error *err)
{
    float m[PASSKEY_DEPTHS * MAX_MULTS];
    char title[200];
    const pe_row *r = &tb->row[t][p];
    for (int i = 0; i < c->n_mults; i++)
        for (int d = 0; d < PASSKEY_DEPTHS; d++)
            m[d * c->n_mults + i] = r->rdepth_n[i][k] ? (float)(r->rdepth[i][k][d] / r->rdepth_n[i][k]) : NAN;
    snprintf(title, sizeof title, "%s, %s: %s answered whole", c->tasks[t], c->pes[p], study_ruler_task_name(k));
    return depth_figure(m, c, title, path, err);
}

static int row_has_run(const pe_row *r, const posemb_study_config *c)
{
    int n = 0;
    for (int i = 0; i < c->n_mults; i++) n += r->loss[i].n + r->digits[i].n;
    return n > 0;
}

/* Decoder t's RULER heatmaps: one per task that places its needle at a depth, and PE with a run. */
static posemb_status ruler_figures(posemb_report *rep, const length_table *tb, const posemb_study_config *c,
                                   const char *out, int t, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], caption[512], name[160];
    posemb_status st = POSEMB_OK;
    for (int k = 0; !st && c->len.ruler_trials && k < STUDY_RULER_TASKS; k++)
        for (int p = 0; !st && (c->len.ruler_tasks >> k & 1u) && study_ruler_has_depth(k) && p < c->n_pes; p++) {
            int runs = 0;
            for (int i = 0; i < c->n_mults; i++) runs += tb->row[t][p].rdepth_n[i][k];
            if (!runs) continue; /* no run of this PE yet (--report) */
            study_folder_of(c->pes[p], name, sizeof name);
            snprintf(path, sizeof path, "%s/ruler_%s_%s_%s.png", out, study_ruler_task_name(k), c->tasks[t], name);
            st = ruler_figure(tb, c, t, p, k, path, err);
            snprintf(caption, sizeof caption,
                     "%s, %s: RULER's %s, the fraction of prompts answered whole, by the gold needle's depth in the "
                     "haystack (0: its start, 1: next to the question) and the context length, mean over seeds",
                     c->tasks[t], c->pes[p], study_ruler_task_name(k));
            if (!st) st = posemb_report_image(rep, path, caption, err);
        }
    return st;
}

static posemb_status report_task(posemb_report *rep, const length_table *tb, const posemb_study_config *c,
                                 const char *out, int t, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], caption[512], name[160];
    posemb_report_heading(rep, 2, c->tasks[t]);
    for (int v = 0; v < N_VIEWS; v++) html_view(rep, tb, c, t, v);
    int drawn = 0;
    snprintf(path, sizeof path, "%s/length_%s.png", out, c->tasks[t]);
    posemb_status st = length_figure(tb, c, t, FIG_BITS, path, &drawn, err);
    snprintf(caption, sizeof caption, "%s: held-out bits per token against context length, mean over seeds",
             c->tasks[t]);
    if (!st && drawn) st = posemb_report_image(rep, path, caption, err);
    if (!st && tb->rope[t] >= 0 && c->len.n_scalings) {
        snprintf(path, sizeof path, "%s/length_%s_rope.png", out, c->tasks[t]);
        st = length_figure(tb, c, t, FIG_SCALED, path, &drawn, err);
        if (!st && drawn) st = posemb_report_image(rep, path, "RoPE with each scaling applied at evaluation", err);
    }
    if (!st && tb->has_att[t]) {
        snprintf(path, sizeof path, "%s/attention_%s.png", out, c->tasks[t]);
        st = length_figure(tb, c, t, FIG_ATTN, path, &drawn, err);
        if (!st && drawn)
            st = posemb_report_image(rep, path,
                                     "Mean attention distance on the held-out text over that of attention spread "
                                     "evenly over the causal prefix, (L - 1) / 4: near 0, local; 1, uniform; mean "
                                     "over layers, heads and seeds",
                                     err);
    }
    for (int p = 0; !st && c->len.passkey_trials && p < c->n_pes; p++) {
        if (!row_has_run(&tb->row[t][p], c)) continue; /* no run of this PE yet (--report) */
        study_folder_of(c->pes[p], name, sizeof name);
        snprintf(path, sizeof path, "%s/passkey_%s_%s.png", out, c->tasks[t], name);
        st = passkey_figure(tb, c, t, p, path, err);
        snprintf(caption, sizeof caption,
                 "%s, %s: passkey, fraction of the key's digits predicted, by the needle's depth in the filler "
                 "(0: its start, 1: next to the question) and the context length",
                 c->tasks[t], c->pes[p]);
        if (!st) st = posemb_report_image(rep, path, caption, err);
    }
    if (!st) st = ruler_figures(rep, tb, c, out, t, err);
    return st ? st : study_extend_html(rep, tb->ext, c, out, t, err);
}

posemb_status study_length_report(const posemb_study_config *c, const char *out, posemb_error *err)
{
    length_table *tb = calloc(1, sizeof *tb);
    posemb_report *rep = posemb_report_new("posemb length study");
    char path[POSEMB_PATH_MAX];
    posemb_status st = tb && rep ? load(tb, c, out, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) {
        posemb_report_heading(rep, 1, "posemb length study: train short, test long");
        st = study_claims_report(rep, c, out, err); /* the answer first: verdicts and ranking */
    }
    if (!st) {
        posemb_report_heading(rep, 2, "How the study ran");
        snprintf(path, sizeof path,
                 "Causal LMs trained at %d tokens (%s), %d steps of %d sequences; held-out perplexity per token on the "
                 "first %d tokens of WikiText-2's test set, mean +- std over %d seed(s); w: read in sliding windows "
                 "of the training length (the PE's table ends there); *: Welch's p < 0.05 against ape (the scalings: "
                 "against rope). Tables: tables.md, tables.csv.",
                 c->n_train, c->len.tokenizer, c->steps, c->batch, c->len.eval_tokens, c->n_seeds);
        posemb_report_paragraph(rep, path);
        if (c->len.passkey_train > 0) {
            snprintf(path, sizeof path,
                     "A share %g of the training sequences were passkey prompts of %d tokens (passkey_train).",
                     c->len.passkey_train, c->n_train);
            posemb_report_paragraph(rep, path);
        }
        if (c->len.passkey_once) posemb_report_paragraph(rep, PASSKEY_ONCE);
        if (c->len.model[0]) {
            snprintf(path, sizeof path, "Every decoder's config.json has %s set over the default (model).",
                     c->len.model);
            posemb_report_paragraph(rep, path);
        }
        study_budgets_text(c, path, sizeof path);
        if (path[0]) posemb_report_paragraph(rep, path);
    }
    for (int t = 0; !st && t < c->n_tasks; t++) st = report_task(rep, tb, c, out, t, err);
    snprintf(path, sizeof path, "%s/report.html", out);
    if (!st) st = posemb_report_write(rep, path, err);
    posemb_report_free(rep);
    if (tb) free(tb->ext);
    free(tb);
    return st;
}
