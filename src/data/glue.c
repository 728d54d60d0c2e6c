/* GLUE TSV readers (see posemb/datasets.h for the format and the errors). */
#include "data/datasets.h"
#include "core/fileio.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GLUE files are a few MB (SST-2 train: 3.8 MB); anything past this is not one. */
#define GLUE_MAX_BYTES ((size_t)1 << 30)
/* STS-B has the most columns (10). */
#define GLUE_MAX_COLUMNS 64

static const char *const LABELS_01[] = {"0", "1"};
static const char *const LABELS_NLI[] = {"entailment", "not_entailment"};

/* One task: what posemb_glue_task_info shows, and where its columns are. */
typedef struct task_def {
    posemb_glue_info info;
    const char *col_a, *col_b, *col_label; /* header names (col_b NULL for one text) */
} task_def;

static const task_def TASKS[POSEMB_GLUE_TASK_COUNT] = {
    [POSEMB_GLUE_COLA] = {{"CoLA", 0, 2, LABELS_01, 1, {POSEMB_METRIC_MCC}}, "sentence", NULL, NULL},
    [POSEMB_GLUE_SST2] = {{"SST-2", 0, 2, LABELS_01, 1, {POSEMB_METRIC_ACCURACY}}, "sentence", NULL, "label"},
    [POSEMB_GLUE_MRPC] = {{"MRPC", 1, 2, LABELS_01, 2, {POSEMB_METRIC_F1, POSEMB_METRIC_ACCURACY}},
                          "#1 String",
                          "#2 String",
                          "Quality"},
    [POSEMB_GLUE_STSB] = {{"STS-B", 1, 0, NULL, 2, {POSEMB_METRIC_PEARSON, POSEMB_METRIC_SPEARMAN}},
                          "sentence1",
                          "sentence2",
                          "score"},
    [POSEMB_GLUE_RTE] = {{"RTE", 1, 2, LABELS_NLI, 1, {POSEMB_METRIC_ACCURACY}}, "sentence1", "sentence2", "label"},
    [POSEMB_GLUE_QNLI] = {{"QNLI", 1, 2, LABELS_NLI, 1, {POSEMB_METRIC_ACCURACY}}, "question", "sentence", "label"},
    [POSEMB_GLUE_WNLI] = {{"WNLI", 1, 2, LABELS_01, 1, {POSEMB_METRIC_ACCURACY}}, "sentence1", "sentence2", "label"},
};

/* CoLA's labeled files have no header: source, label, original mark, sentence. */
enum { COLA_COLUMNS = 4, COLA_LABEL = 1, COLA_SENTENCE = 3 };

const posemb_glue_info *posemb_glue_task_info(posemb_glue_task task)
{
    return (task >= 0 && task < POSEMB_GLUE_TASK_COUNT) ? &TASKS[task].info : NULL;
}

/* name lower-cased without hyphens, into out (cap bytes); "" when too long. */
static void fold_name(const char *name, char *out, size_t cap)
{
    size_t k = 0;
    for (; *name; name++) {
        if (*name == '-') continue;
        if (k + 1 >= cap) {
            k = 0;
            break;
        }
        out[k++] = (char)tolower((unsigned char)*name);
    }
    out[k] = '\0';
}

int posemb_glue_task_from_name(const char *name)
{
    char want[32], have[32];
    fold_name(name, want, sizeof want);
    for (int t = 0; t < POSEMB_GLUE_TASK_COUNT; t++) {
        fold_name(TASKS[t].info.name, have, sizeof have);
        if (want[0] && strcmp(want, have) == 0) return t;
    }
    return -1;
}

/* ============================================================ the file */

/* A field shown in an error message. */
static const char *quote_field(const char *s, char *out, size_t cap) { return posemb_snippet(s, strlen(s), out, cap); }

/* The file cut into lines in place: '\n' becomes NUL and a '\r' before it
 * too. A last line without '\n' counts; the empty piece after a final
 * '\n' does not. */
typedef struct lines {
    char **line;
    long n;
} lines;

static int split_lines(char *text, size_t len, lines *out)
{
    long n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    if (len && text[len - 1] != '\n') n++;
    out->n = 0;
    out->line = malloc((size_t)(n ? n : 1) * sizeof *out->line);
    if (!out->line) return -1;
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        *stop = '\0';
        if (stop > p && stop[-1] == '\r') stop[-1] = '\0';
        out->line[out->n++] = p;
        p = stop + 1;
    }
    return 0;
}

/* Splits a line on tabs in place; returns the column count (which may
 * exceed max; only the first max are stored). */
static int split_tabs(char *line, char **field, int max)
{
    int n = 0;
    for (char *p = line;;) {
        if (n < max) field[n] = p;
        n++;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

/* ============================================================== parsing */

/* What one file looks like: where each column is and how many there are. */
typedef struct layout {
    int columns;
    int a, b, label; /* column indices; -1 when absent */
    long first_line; /* index of the first example line */
} layout;

static int find_column(char **header, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0) return i;
    return -1;
}

static posemb_status read_header(const task_def *def, int labeled, char *header_line, const char *path, layout *lay,
                                 posemb_error *err)
{
    char *header[GLUE_MAX_COLUMNS];
    int n = split_tabs(header_line, header, GLUE_MAX_COLUMNS);
    if (n > GLUE_MAX_COLUMNS)
        return posemb_fail(err, POSEMB_EFORMAT, "%s:1: header has %d columns, more than %d", path, n, GLUE_MAX_COLUMNS);
    const char *need[3] = {def->col_a, def->info.pair ? def->col_b : NULL, labeled ? def->col_label : NULL};
    int *where[3] = {&lay->a, &lay->b, &lay->label};
    for (int k = 0; k < 3; k++) {
        *where[k] = -1;
        if (!need[k]) continue;
        *where[k] = find_column(header, n, need[k]);
        if (*where[k] < 0)
            return posemb_fail(err, POSEMB_EFORMAT, "%s:1: header has no column \"%s\" (a %s file%s)", path, need[k],
                               def->info.name, labeled ? " with labels" : "");
    }
    lay->columns = n;
    lay->first_line = 1;
    return POSEMB_OK;
}

static posemb_status find_layout(const task_def *def, int labeled, lines *ls, const char *path, layout *lay,
                                 posemb_error *err)
{
    if (def == &TASKS[POSEMB_GLUE_COLA] && labeled) {
        *lay = (layout){COLA_COLUMNS, COLA_SENTENCE, -1, COLA_LABEL, 0};
        return POSEMB_OK;
    }
    posemb_status st = read_header(def, labeled, ls->line[0], path, lay, err);
    if (!st && ls->n < 2) st = posemb_fail(err, POSEMB_EFORMAT, "%s: a header but no examples", path);
    return st;
}

static posemb_status parse_label(const task_def *def, const char *field, const char *path, long line_no, int32_t *label,
                                 posemb_error *err)
{
    for (int c = 0; c < def->info.n_classes; c++)
        if (strcmp(field, def->info.label_names[c]) == 0) {
            *label = c;
            return POSEMB_OK;
        }
    char shown[128];
    return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: label \"%s\" is not one of \"%s\", \"%s\"", path, line_no,
                       quote_field(field, shown, sizeof shown), def->info.label_names[0], def->info.label_names[1]);
}

/* A plain decimal number (digits, '.', exponent; no "nan", "inf", hex or
 * spaces, which strtod would take) in [0, 5]. */
static posemb_status parse_score(const char *field, const char *path, long line_no, float *score, posemb_error *err)
{
    char shown[128];
    int plain = field[0] != '\0';
    for (const char *p = field; *p; p++)
        plain &= (*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-';
    char *end = NULL;
    double v = plain ? strtod(field, &end) : NAN;
    if (!plain || !end || *end || !isfinite(v))
        return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: score \"%s\" is not a number", path, line_no,
                           quote_field(field, shown, sizeof shown));
    if (v < 0 || v > 5)
        return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: score %s is outside [0, 5]", path, line_no,
                           quote_field(field, shown, sizeof shown));
    *score = (float)v;
    return POSEMB_OK;
}

static posemb_status alloc_examples(posemb_glue_data *d, const task_def *def, int labeled, long n, const char *path,
                                    posemb_error *err)
{
    size_t count = (size_t)n;
    d->text_a = malloc(count * sizeof *d->text_a);
    int ok = d->text_a != NULL;
    if (def->info.pair) ok &= (d->text_b = malloc(count * sizeof *d->text_b)) != NULL;
    if (labeled && def->info.n_classes) ok &= (d->label = malloc(count * sizeof *d->label)) != NULL;
    if (labeled && !def->info.n_classes) ok &= (d->score = malloc(count * sizeof *d->score)) != NULL;
    return ok ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
}

static posemb_status parse_examples(const task_def *def, lines *ls, const layout *lay, const char *path,
                                    posemb_glue_data *d, posemb_error *err)
{
    char *field[GLUE_MAX_COLUMNS];
    for (long i = lay->first_line; i < ls->n; i++) {
        long line_no = i + 1;
        int n = split_tabs(ls->line[i], field, GLUE_MAX_COLUMNS);
        if (n != lay->columns)
            return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: expected %d tab-separated columns, found %d", path,
                               line_no, lay->columns, n);
        int k = d->n;
        d->text_a[k] = field[lay->a];
        if (d->text_b) d->text_b[k] = field[lay->b];
        posemb_status st = POSEMB_OK;
        if (d->label) st = parse_label(def, field[lay->label], path, line_no, &d->label[k], err);
        if (d->score) st = parse_score(field[lay->label], path, line_no, &d->score[k], err);
        if (st) return st;
        d->n++;
    }
    return POSEMB_OK;
}

posemb_status posemb_glue_read(posemb_glue_task task, const char *path, int labeled, posemb_glue_data *out,
                               posemb_error *err)
{
    memset(out, 0, sizeof *out);
    if (task < 0 || task >= POSEMB_GLUE_TASK_COUNT)
        return posemb_fail(err, POSEMB_EINVAL, "%s: unknown GLUE task %d", path, (int)task);
    const task_def *def = &TASKS[task];
    char *text = NULL;
    size_t len = 0;
    posemb_status st = posemb_read_data_file(path, GLUE_MAX_BYTES, &text, &len, err);
    if (st) return st;
    out->text_ = text;
    out->task = task;
    out->labeled = labeled != 0;
    out->n_classes = def->info.n_classes;
    out->n_metrics = def->info.n_metrics;
    memcpy(out->metrics, def->info.metrics, sizeof out->metrics);
    /* HF opens the files as utf-8-sig: a BOM (MRPC's headers) is not text. */
    size_t skip = (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) ? 3 : 0;
    if (len == skip) {
        posemb_glue_free(out);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: empty file", path);
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        long line_no = 1;
        for (const char *p = text; p < nul; p++) line_no += *p == '\n';
        posemb_glue_free(out);
        return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: a NUL byte (not a text file)", path, line_no);
    }
    lines ls;
    layout lay;
    if (split_lines(text + skip, len - skip, &ls)) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    if (!st) st = find_layout(def, out->labeled, &ls, path, &lay, err);
    if (!st) st = alloc_examples(out, def, out->labeled, ls.n - lay.first_line, path, err);
    if (!st) st = parse_examples(def, &ls, &lay, path, out, err);
    free(ls.line);
    if (st) posemb_glue_free(out);
    return st;
}

posemb_status posemb_glue_load(const char *glue_dir, posemb_glue_task task, const char *split, posemb_glue_data *out,
                               posemb_error *err)
{
    memset(out, 0, sizeof *out);
    const posemb_glue_info *info = posemb_glue_task_info(task);
    if (!info) return posemb_fail(err, POSEMB_EINVAL, "unknown GLUE task %d", (int)task);
    int labeled = strcmp(split, "train") == 0 || strcmp(split, "dev") == 0;
    if (!labeled && strcmp(split, "test") != 0)
        return posemb_fail(err, POSEMB_EINVAL, "GLUE split \"%s\": expected train, dev or test", split);
    char path[POSEMB_PATH_MAX];
    int w = snprintf(path, sizeof path, "%s/%s/%s.tsv", glue_dir, info->name, split);
    if (w < 0 || (size_t)w >= sizeof path) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", glue_dir);
    return posemb_glue_read(task, path, labeled, out, err);
}

void posemb_glue_free(posemb_glue_data *d)
{
    free(d->text_a);
    free(d->text_b);
    free(d->label);
    free(d->score);
    free(d->text_);
    memset(d, 0, sizeof *d);
}

posemb_status posemb_glue_evaluate(const posemb_glue_data *d, const int32_t *pred_label, const float *pred_score,
                                   double *values, posemb_error *err)
{
    const char *name = TASKS[d->task].info.name;
    if (!d->labeled) return posemb_fail(err, POSEMB_EINVAL, "%s: cannot evaluate on an unlabeled set", name);
    if (d->n_classes ? !pred_label : !pred_score)
        return posemb_fail(err, POSEMB_EINVAL, "%s: no predicted %s given", name, d->n_classes ? "labels" : "scores");
    for (int k = 0; k < d->n_metrics; k++) {
        switch (d->metrics[k]) {
        case POSEMB_METRIC_ACCURACY:
            values[k] = posemb_accuracy(pred_label, d->label, d->n);
            break;
        case POSEMB_METRIC_F1:
            values[k] = posemb_f1_binary(pred_label, d->label, d->n);
            break;
        case POSEMB_METRIC_MCC:
            values[k] = posemb_matthews(pred_label, d->label, d->n, d->n_classes);
            break;
        case POSEMB_METRIC_PEARSON:
            values[k] = posemb_pearson(pred_score, d->score, d->n);
            break;
        case POSEMB_METRIC_SPEARMAN:
            values[k] = posemb_spearman(pred_score, d->score, d->n);
            break;
        default:
            return posemb_fail(err, POSEMB_EINVAL, "%s: unknown metric %d", name, (int)d->metrics[k]);
        }
    }
    return POSEMB_OK;
}
