/* What report.html opens with: what the study is, its claims' verdicts as a
 * table and a forest plot, and the ranking of its PEs where they differ;
 * the verdicts also go to claims.csv (scripts/claims' columns and number
 * format, so that the two can be compared line by line) and claims.png. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "study_claims.h"

static posemb_status rows_of(const study_grid *g, const char *out, study_claims *cl, posemb_error *err)
{
    memset(cl, 0, sizeof *cl);
    if (g->c->length) {
        study_claims_length(g, cl);
        return POSEMB_OK;
    }
    return g->c->data[0] ? study_claims_real(g, out, cl, err) : study_claims_synthetic(g, out, cl, err);
}

/* A CSV field as Python's csv module writes it: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s, int last)
{
    if (!strpbrk(s, ",\"\r\n")) fputs(s, f);
    else {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f); /* a quote inside is doubled */
            fputc(*s, f);
        }
        fputc('"', f);
    }
    fputc(last ? '\n' : ',', f);
}

/* scripts/claims' fmt(): four significant digits, empty for none. */
static const char *num(double v, char *buf)
{
    if (isnan(v)) buf[0] = '\0';
    else snprintf(buf, 32, "%.4g", v);
    return buf;
}

static void csv_row(FILE *f, const study_claim *r)
{
    char b[7][32];
    snprintf(b[6], sizeof b[6], "%d", r->n_units);
    const char *fields[] = {r->id,
                            r->claim,
                            r->testbed,
                            r->unit,
                            num(r->ci.effect, b[0]),
                            num(r->ci.lo, b[1]),
                            num(r->ci.hi, b[2]),
                            num(r->paper, b[3]),
                            num(r->ci.mde, b[4]),
                            num(r->ci.p, b[5]),
                            b[6],
                            r->replication,
                            posemb_verdict_name(r->verdict),
                            r->note,
                            r->evidence};
    int n = (int)(sizeof fields / sizeof *fields);
    for (int i = 0; i < n; i++) csv_field(f, fields[i], i == n - 1);
}

static const char CSV_HEAD[] = "claim_id,claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect,mde,p,n_units,"
                               "unit_of_replication,verdict,note,evidence\n";

static posemb_status write_csv(const study_claims *cl, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    posemb_atomic_file af;
    if (posemb_path_join(path, sizeof path, out, "claims.csv"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    fputs(CSV_HEAD, af.f);
    for (int i = 0; i < cl->n; i++) csv_row(af.f, &cl->row[i]);
    return posemb_atomic_commit(&af, err);
}

/* The forest plot of the rows, labelled "claim (testbed)" as posemb plot forest labels a claims.csv; with no
 * row to draw, an older figure is removed so that it does not stand for this study. */
static posemb_status write_forest(const study_claims *cl, const char *out, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], (*labels)[256] = malloc(STUDY_MAX_CLAIMS * sizeof *labels);
    posemb_forest_row rows[STUDY_MAX_CLAIMS];
    if (!labels) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = posemb_path_join(path, sizeof path, out, "claims.png")
                           ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out)
                           : POSEMB_OK;
    for (int i = 0; !st && i < cl->n; i++) {
        const study_claim *r = &cl->row[i];
        snprintf(labels[i], sizeof labels[i], "%s (%s)", r->claim, r->testbed);
        rows[i] = (posemb_forest_row){.label = labels[i],
                                      .unit = r->unit,
                                      .effect = r->ci.effect,
                                      .lo = r->ci.lo,
                                      .hi = r->ci.hi,
                                      .paper = r->paper,
                                      .verdict = r->verdict};
    }
    if (!st && cl->n) st = posemb_plot_forest(path, rows, cl->n, NULL, err);
    else if (!st) remove(path);
    free(labels);
    return st;
}

static posemb_status write_claims(const study_claims *cl, const char *out, posemb_error *err)
{
    posemb_status st = write_csv(cl, out, err);
    return st ? st : write_forest(cl, out, err);
}

/* "32, 64, 128 and 256": the study's evaluation lengths. */
static void lengths(const posemb_study_config *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < c->n_mults && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%d",
                              i == 0                ? ""
                              : i + 1 == c->n_mults ? " and "
                                                    : ", ",
                              c->n_train * c->mults[i]);
}

static void tasks(const posemb_study_config *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < c->n_tasks && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", c->tasks[i]);
}

/* One paragraph: what was trained and tested, and how the verdicts below are reached. */
static void what_it_is(const posemb_study_config *c, char *buf, size_t cap)
{
    char len[160], names[512];
    lengths(c, len, sizeof len);
    tasks(c, names, sizeof names);
    int n = 0;
    if (c->length)
        n = snprintf(buf, cap,
                     "This study trains %d PEs in %d decoders (%s) as causal LMs at %d tokens with %d seeds "
                     "and reads held-out perplexity at %s tokens. ",
                     c->n_pes, c->n_tasks, names, c->n_train, c->n_seeds, len);
    else if (c->data[0])
        n = snprintf(buf, cap,
                     "This study pretrains one BERT per PE (%d PEs) with masked LM on the text under %.256s, "
                     "then fine-tunes each on %d tasks (%s) with %d seeds at %d tokens; SQuAD-locate is also "
                     "read in windows of %s tokens. ",
                     c->n_pes, c->data, c->n_tasks, names, c->n_seeds, c->n_train, len);
    else
        n = snprintf(buf, cap,
                     "This study trains %d PEs from scratch on %d synthetic tasks (%s) with %d seeds each, "
                     "at %d tokens, and scores every run at %s tokens. ",
                     c->n_pes, c->n_tasks, names, c->n_seeds, c->n_train, len);
    if (n < 0 || (size_t)n >= cap) return;
    snprintf(buf + n, cap - n,
             "Below: each published claim it can pose, as scripts/claims poses it on results/, with its effect and "
             "95%% interval over the units of replication, the paper's own effect where the paper gives one, and the "
             "verdict by one rule (docs/study.md, \"Verdicts\"): reproduced when the interval excludes 0 on the "
             "claim's side; not reproduced when it excludes 0 on the other side, or when the test could have seen the "
             "paper's effect (80%% power) and did not; untestable here otherwise. claims.csv holds the rows, "
             "claims.png draws them.");
}

static void verdict_table(posemb_report *rep, const study_claims *cl)
{
    static const char *const head[] = {"claim", "testbed", "effect [95% CI]", "paper", "verdict", "why"};
    char(*buf)[2][64] = calloc(STUDY_MAX_CLAIMS, sizeof *buf);
    const char *cells[STUDY_MAX_CLAIMS * 6];
    if (!buf) return posemb_report_paragraph(rep, "(out of memory: no verdict table)");
    for (int i = 0; i < cl->n; i++) {
        const study_claim *r = &cl->row[i];
        snprintf(buf[i][0], 64, "%+.3f [%+.3f, %+.3f]", r->ci.effect, r->ci.lo, r->ci.hi);
        snprintf(buf[i][1], 64, "%s", study_claims_paper_says(r->id));
        const char *row[6] = {
            r->claim, r->testbed, buf[i][0], buf[i][1], posemb_verdict_name(r->verdict), r->note[0] ? r->note : "-"};
        memcpy(cells + 6 * i, row, sizeof row);
    }
    posemb_report_table(rep, head, 6, cells, cl->n,
                        "The claims this study poses: score rows are differences of accuracy, F1 or exact match (as "
                        "fractions), perplexity rows log ratios, property rows Spearman's rho over PEs");
    free(buf);
}

static posemb_status answer(posemb_report *rep, const study_claims *cl, const posemb_study_config *c, const char *out,
                            posemb_error *err)
{
    char text[2048], path[POSEMB_PATH_MAX];
    posemb_report_heading(rep, 2, "The answer");
    what_it_is(c, text, sizeof text);
    posemb_report_paragraph(rep, text);
    if (cl->n) verdict_table(rep, cl);
    else posemb_report_paragraph(rep, "No claim can be posed on the runs so far.");
    if (cl->not_posed[0]) {
        snprintf(text, sizeof text, "Not posed here (the study lacks what the claim needs): %s.", cl->not_posed);
        posemb_report_paragraph(rep, text);
    }
    if (!cl->n) return POSEMB_OK;
    if (posemb_path_join(path, sizeof path, out, "claims.png"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", out);
    return posemb_report_image(rep, path,
                               "The claims: each effect with its 95% interval, coloured by the verdict; the paper's "
                               "own effect as an open diamond",
                               err);
}

posemb_status study_claims_report(posemb_report *rep, const posemb_study_config *c, const char *out, posemb_error *err)
{
    study_claims *cl = malloc(sizeof *cl);
    study_grid g = {0};
    posemb_status st = cl ? study_grid_load(&g, c, out, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    if (!st) st = rows_of(&g, out, cl, err);
    if (!st) st = write_claims(cl, out, err);
    if (!st) st = answer(rep, cl, c, out, err);
    if (!st) study_rank_report(rep, &g);
    study_grid_free(&g);
    free(cl);
    return st;
}
