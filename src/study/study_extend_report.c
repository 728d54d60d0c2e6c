/* The tables and figures of the length study's fine-tunes at a longer
 * context (extend.jsonl, study_extend.c): per decoder and factor, held-out
 * perplexity at the target length at each curve step and at every length
 * at the end, per RoPE scaling, mean +- std over seeds, starred against
 * plain RoPE fine-tuned alike (Welch's t on the log-perplexity). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "eval/stats.h"
#include "plot/plot.h"
#include "study_extend_report.h"
#include "study_length_impl.h"
#include "study_store.h"

typedef struct extend_load {
    study_extend_table *tb;
    const posemb_study_config *c;
} extend_load;

/* One extend.jsonl line into the table (a study_line_fn): log-perplexities, one per seed. */
static posemb_status add_line(const cJSON *j, int n, void *ctx, posemb_error *err)
{
    (void)n, (void)err;
    study_extend_table *tb = ((extend_load *)ctx)->tb;
    const posemb_study_config *c = ((extend_load *)ctx)->c;
    int t =
        study_row_of(c->tasks[0], sizeof c->tasks[0], c->n_tasks, cJSON_GetStringValue(cJSON_GetObjectItem(j, "task")));
    int k = study_row_of(c->len.extend_scalings[0], sizeof c->len.extend_scalings[0], c->len.n_extend_scalings,
                         cJSON_GetStringValue(cJSON_GetObjectItem(j, "scaling")));
    int f = study_int_index(c->len.extend_factors, c->len.n_extend_factors, study_num(j, "factor"));
    int s = study_int_index(c->seeds, c->n_seeds,
                            study_num(j, "seed")); /* a seed the config does not ask for: not its line */
    if (t < 0 || k < 0 || f < 0 || s < 0 || strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "pe")) ?: "", "rope"))
        return POSEMB_OK;
    const cJSON *steps = cJSON_GetObjectItem(j, "curve_steps"), *ppl = cJSON_GetObjectItem(j, "curve_perplexity"),
                *end = cJSON_GetObjectItem(j, "perplexity");
    int points = cJSON_GetArraySize(steps);
    for (int i = 0; i < points && i < STUDY_EXTEND_POINTS; i++) {
        tb->steps[i] = (int)cJSON_GetArrayItem(steps, i)->valuedouble;
        cell_put(&tb->curve[t][k][f][i],
                 log(cJSON_GetArrayItem(ppl, i) ? cJSON_GetArrayItem(ppl, i)->valuedouble : NAN));
    }
    if (points > tb->n_steps && points <= STUDY_EXTEND_POINTS) tb->n_steps = points;
    const cJSON *digits = cJSON_GetObjectItem(j, "passkey_digits"), *beta = cJSON_GetObjectItem(j, "beta");
    for (int i = 0; i < c->n_mults && i < cJSON_GetArraySize(end); i++) {
        cell_put(&tb->end[t][k][f][i], log(cJSON_GetArrayItem(end, i)->valuedouble));
        const cJSON *d = cJSON_GetArrayItem(digits, i), *b = cJSON_GetArrayItem(beta, i);
        cell_put(&tb->digits[t][k][f][i], cJSON_IsNumber(d) ? d->valuedouble : NAN); /* null: no prompt fits */
        cell_put(&tb->beta[t][k][f][i], cJSON_IsNumber(b) ? b->valuedouble : NAN);
    }
    tb->any[t] = 1;
    return POSEMB_OK;
}

posemb_status study_extend_load(const posemb_study_config *c, const char *out, study_extend_table **tb,
                                posemb_error *err)
{
    *tb = NULL;
    if (!c->len.n_extend_factors) return POSEMB_OK;
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "extend.jsonl"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    FILE *f = fopen(path, "r");
    if (!f) return POSEMB_OK; /* no fine-tune done yet */
    *tb = calloc(1, sizeof **tb);
    extend_load ld = {*tb, c};
    posemb_status st = *tb ? study_each_line(f, add_line, &ld, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    fclose(f);
    if (st) {
        free(*tb);
        *tb = NULL;
    }
    return st;
}

/* The steps read in columns: the curve's, at most every point up to 6 (more: every other one, the last kept). */
static int columns(const study_extend_table *tb, int *col)
{
    int n = 0, every = tb->n_steps > 6 ? (tb->n_steps + 4) / 5 : 1;
    for (int i = 0; i < tb->n_steps; i += every) col[n++] = i;
    if (n && col[n - 1] != tb->n_steps - 1) col[n++] = tb->n_steps - 1;
    return n;
}

/* The header and cells of decoder t's table at factor f, as text (the caller frees cells' buffer). */
static int table_cells(const study_extend_table *tb, const posemb_study_config *c, int t, int f, char (*head)[48],
                       char (*cells)[48])
{
    int col[STUDY_EXTEND_POINTS], n = columns(tb, col),
                                  none = study_row_of(c->len.extend_scalings[0], sizeof c->len.extend_scalings[0],
                                                      c->len.n_extend_scalings, "none");
    int w = 1 + n + c->n_mults;
    snprintf(head[0], 48, "scaling");
    for (int i = 0; i < n; i++) snprintf(head[1 + i], 48, "step %d", tb->steps[col[i]]);
    for (int i = 0; i < c->n_mults; i++) snprintf(head[1 + n + i], 48, "end, at %d", c->n_train * c->mults[i]);
    for (int k = 0; k < c->len.n_extend_scalings; k++) {
        char(*row)[48] = cells + (size_t)k * w;
        snprintf(row[0], 48, "%s", c->len.extend_scalings[k]);
        for (int i = 0; i < n; i++)
            cell_ppl_text(&tb->curve[t][k][f][col[i]], none >= 0 ? &tb->curve[t][none][f][col[i]] : NULL, 0, row[1 + i],
                          48);
        for (int i = 0; i < c->n_mults; i++)
            cell_ppl_text(&tb->end[t][k][f][i], none >= 0 ? &tb->end[t][none][f][i] : NULL, 0, row[1 + n + i], 48);
    }
    return w;
}

static void title_of(const posemb_study_config *c, int t, int f, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "%s: RoPE fine-tuned at %d tokens (%dx), %d steps; perplexity at %d by step, then at every length",
             c->tasks[t], c->n_train * c->len.extend_factors[f], c->len.extend_factors[f], c->len.extend_steps,
             c->n_train * c->len.extend_factors[f]);
}

/* "0.93 +- 0.05" of a cell of fractions (or temperatures), "-" when empty. */
static void mean_text(const cell *a, char *buf, size_t cap)
{
    if (!a->n) snprintf(buf, cap, "-");
    else if (a->n == 1) snprintf(buf, cap, "%.2f", cell_mean(a));
    else snprintf(buf, cap, "%.2f +- %.2f", cell_mean(a), cell_std(a));
}

/* Decoder t's passkey digits at every length after the fine-tunes at factor f, and DroPE's temperatures. */
static void keys_md(FILE *out, const study_extend_table *tb, const posemb_study_config *c, int t, int f)
{
    char buf[48];
    int any = 0;
    for (int k = 0; k < c->len.n_extend_scalings; k++)
        for (int i = 0; i < c->n_mults; i++) any |= tb->digits[t][k][f][i].n > 0;
    if (!any) return;
    fprintf(
        out,
        "Passkey, fraction of the key's digits predicted after the fine-tune at %dx, mean over depths:\n\n| scaling |",
        c->len.extend_factors[f]);
    for (int i = 0; i < c->n_mults; i++) fprintf(out, " %d |", c->n_train * c->mults[i]);
    fprintf(out, "\n| --- |");
    for (int i = 0; i < c->n_mults; i++) fprintf(out, " --- |");
    for (int k = 0; k < c->len.n_extend_scalings; k++) {
        fprintf(out, "\n| %s |", c->len.extend_scalings[k]);
        for (int i = 0; i < c->n_mults; i++) {
            mean_text(&tb->digits[t][k][f][i], buf, sizeof buf);
            fprintf(out, " %s |", buf);
        }
        if (!strcmp(c->len.extend_scalings[k], "drope")) {
            fprintf(out, "\n| drope's temperature beta |");
            for (int i = 0; i < c->n_mults; i++) {
                mean_text(&tb->beta[t][k][f][i], buf, sizeof buf);
                fprintf(out, " %s |", buf);
            }
        }
    }
    fprintf(out, "\n\n");
}

void study_extend_md(FILE *out, const study_extend_table *tb, const posemb_study_config *c, int t)
{
    if (!tb || !tb->any[t]) return;
    enum { MAXW = 1 + STUDY_EXTEND_POINTS + 8 };
    static char head[MAXW][48], cells[8 * MAXW][48];
    char title[256];
    for (int f = 0; f < c->len.n_extend_factors; f++) {
        int w = table_cells(tb, c, t, f, head, cells);
        title_of(c, t, f, title, sizeof title);
        fprintf(out, "### %s\n\n|", title);
        for (int i = 0; i < w; i++) fprintf(out, " %s |", head[i]);
        fprintf(out, "\n|");
        for (int i = 0; i < w; i++) fprintf(out, " --- |");
        for (int k = 0; k < c->len.n_extend_scalings; k++) {
            fprintf(out, "\n|");
            for (int i = 0; i < w; i++) fprintf(out, " %s |", cells[(size_t)k * w + i]);
        }
        fprintf(out, "\n\n");
        keys_md(out, tb, c, t, f);
    }
}

void study_extend_csv(FILE *out, const study_extend_table *tb, const posemb_study_config *c, int t)
{
    if (!tb || !tb->any[t]) return;
    int none =
        study_row_of(c->len.extend_scalings[0], sizeof c->len.extend_scalings[0], c->len.n_extend_scalings, "none");
    for (int f = 0; f < c->len.n_extend_factors; f++)
        for (int k = 0; k < c->len.n_extend_scalings; k++) {
            for (int i = 0; i < tb->n_steps + c->n_mults; i++) {
                int curve = i < tb->n_steps;
                const cell *a = curve ? &tb->curve[t][k][f][i] : &tb->end[t][k][f][i - tb->n_steps];
                const cell *ref = none < 0 ? NULL
                                  : curve  ? &tb->curve[t][none][f][i]
                                           : &tb->end[t][none][f][i - tb->n_steps];
                if (!a->n) continue;
                double p =
                    ref && ref != a && a->n > 1 && ref->n > 1 ? posemb_welch_ttest(a->v, a->n, ref->v, ref->n).p : NAN;
                fprintf(out, "%s,rope,%s,%d,", c->tasks[t], c->len.extend_scalings[k],
                        curve ? c->n_train * c->len.extend_factors[f] : c->n_train * c->mults[i - tb->n_steps]);
                if (curve) fprintf(out, "extend_x%d_loss_step_%d", c->len.extend_factors[f], tb->steps[i]);
                else fprintf(out, "extend_x%d_loss_end", c->len.extend_factors[f]);
                fprintf(out, ",%.6f,%.6f,%d,0,", cell_mean(a), cell_std(a), a->n); /* never windowed */
                if (isfinite(p)) fprintf(out, "%.6g", p);
                fprintf(out, "\n");
            }
            for (int i = 0; i < c->n_mults; i++)
                for (int m = 0; m < 2; m++) {
                    const cell *a = m ? &tb->beta[t][k][f][i] : &tb->digits[t][k][f][i];
                    if (a->n)
                        fprintf(out, "%s,rope,%s,%d,extend_x%d_%s_end,%.6f,%.6f,%d,0,\n", c->tasks[t],
                                c->len.extend_scalings[k], c->n_train * c->mults[i], c->len.extend_factors[f],
                                m ? "beta" : "passkey_digits", cell_mean(a), cell_std(a), a->n);
                }
        }
}

/* Perplexity at the target length against the fine-tune's step, one series per scaling. */
static posemb_status curve_figure(const study_extend_table *tb, const posemb_study_config *c, int t, int f,
                                  const char *path, posemb_error *err)
{
    double x[STUDY_EXTEND_POINTS], y[8][STUDY_EXTEND_POINTS];
    posemb_series s[8];
    for (int i = 0; i < tb->n_steps; i++) x[i] = tb->steps[i];
    for (int k = 0; k < c->len.n_extend_scalings; k++) {
        for (int i = 0; i < tb->n_steps; i++) y[k][i] = exp(cell_mean(&tb->curve[t][k][f][i]));
        s[k] = (posemb_series){.label = c->len.extend_scalings[k], .x = x, .y = y[k], .n = tb->n_steps, .points = 2};
    }
    char title[160];
    snprintf(title, sizeof title, "%s: RoPE fine-tuned at %d tokens (%dx the trained length)", c->tasks[t],
             c->n_train * c->len.extend_factors[f], c->len.extend_factors[f]);
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = title;
    o.xlabel = "fine-tuning steps";
    o.ylabel = "perplexity at the target length, mean over seeds";
    o.width = 640;
    o.height = 440;
    return posemb_plot_lines(path, s, c->len.n_extend_scalings, &o, err);
}

posemb_status study_extend_html(posemb_report *rep, const study_extend_table *tb, const posemb_study_config *c,
                                const char *out, int t, posemb_error *err)
{
    if (!tb || !tb->any[t]) return POSEMB_OK;
    enum { MAXW = 1 + STUDY_EXTEND_POINTS + 8 };
    static char head[MAXW][48], cells[8 * MAXW][48];
    const char *hp[MAXW], *cp[8 * MAXW];
    char title[256], path[POSEMB_PATH_MAX];
    posemb_status st = POSEMB_OK;
    for (int f = 0; !st && f < c->len.n_extend_factors; f++) {
        int w = table_cells(tb, c, t, f, head, cells);
        for (int i = 0; i < w; i++) hp[i] = head[i];
        for (int i = 0; i < w * c->len.n_extend_scalings; i++) cp[i] = cells[i];
        title_of(c, t, f, title, sizeof title);
        posemb_report_heading(rep, 3, title);
        posemb_report_table(rep, hp, w, cp, c->len.n_extend_scalings, NULL);
        snprintf(path, sizeof path, "%s/extend_%s_x%d.png", out, c->tasks[t], c->len.extend_factors[f]);
        st = curve_figure(tb, c, t, f, path, err);
        if (!st)
            st = posemb_report_image(rep, path,
                                     "Held-out perplexity at the target length against fine-tuning steps, per RoPE "
                                     "scaling (none: plain RoPE, extrapolation then fine-tuning; linear: PI)",
                                     err);
    }
    return st;
}
