/* A strict reader of CSV tables with a header row (RFC 4180): fields
 * separated by commas, records by LF or CRLF, a field in double quotes may
 * hold commas, line breaks and "" for a quote. Anything else is an error
 * naming the file and line: a table posemb reads is one a person wrote or
 * a script generated, and a silently misread cell would move a number. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/csv.h"

#define MAX_BYTES (64u << 20)

typedef struct csv_parser {
    char *p, *end; /* the text, unescaped in place as it is read */
    long line;     /* of p */
    const char *path;
} csv_parser;

typedef struct csv_row {
    char **field;
    int n, cap;
    long line;
} csv_row;

/* A quoted field from the opening quote at ps->p, its text written at w. */
static posemb_status quoted(csv_parser *ps, char **w, posemb_error *err)
{
    long start = ps->line;
    char *r = ps->p + 1;
    for (;;) {
        if (r >= ps->end)
            return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: a quoted field that is never closed", ps->path, start);
        if (*r == '"' && (r + 1 >= ps->end || r[1] != '"')) break;
        if (*r == '"') r++; /* "" is one quote */
        if (*r == '\n') ps->line++;
        *(*w)++ = *r++;
    }
    r++;
    if (r + 1 < ps->end && r[0] == '\r' && r[1] == '\n') r++;
    if (r < ps->end && *r != ',' && *r != '\n')
        return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: text after a field's closing quote", ps->path, ps->line);
    ps->p = r;
    return POSEMB_OK;
}

static posemb_status unquoted(csv_parser *ps, char **w, posemb_error *err)
{
    char *r = ps->p;
    for (; r < ps->end && *r != ',' && *r != '\n'; r++) {
        if (*r == '"')
            return posemb_fail(err, POSEMB_EFORMAT,
                               "%s:%ld: a quote inside a field (quote the whole field, \"\" for a quote)", ps->path,
                               ps->line);
        *(*w)++ = *r;
    }
    if (*w > ps->p && (*w)[-1] == '\r' && (r >= ps->end || *r == '\n')) (*w)--; /* CRLF */
    ps->p = r;
    return POSEMB_OK;
}

/* One field, NUL-terminated where it began; *sep: the ',' or '\n' after it, 0 at the end. */
static posemb_status read_field(csv_parser *ps, char **field, int *sep, posemb_error *err)
{
    char *w = ps->p;
    *field = w;
    posemb_status st = ps->p < ps->end && *ps->p == '"' ? quoted(ps, &w, err) : unquoted(ps, &w, err);
    if (st) return st;
    *sep = ps->p < ps->end ? *ps->p : 0;
    if (*sep == '\n') ps->line++;
    if (ps->p < ps->end) ps->p++;
    *w = '\0'; /* at or before the separator, already read */
    return POSEMB_OK;
}

static posemb_status read_row(csv_parser *ps, csv_row *row, posemb_error *err)
{
    row->n = 0;
    row->line = ps->line;
    for (int sep = ','; sep == ',';) {
        if (row->n == row->cap) {
            int cap = row->cap ? 2 * row->cap : 16;
            char **f = cap <= POSEMB_CSV_MAX_COLS ? realloc(row->field, (size_t)cap * sizeof *f) : NULL;
            if (!f)
                return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: more than %d fields", ps->path, row->line,
                                   POSEMB_CSV_MAX_COLS);
            row->field = f;
            row->cap = cap;
        }
        posemb_status st = read_field(ps, &row->field[row->n++], &sep, err);
        if (st) return st;
    }
    return POSEMB_OK;
}

/* ---- the table ----------------------------------------------------------- */

static int blank_rest(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != '\n' && *p != '\r') return 0;
    return 1;
}

static posemb_status check_header(const char *path, const csv_row *h, posemb_error *err)
{
    for (int i = 0; i < h->n; i++) {
        if (!h->field[i][0]) return posemb_fail(err, POSEMB_EFORMAT, "%s:1: column %d has no name", path, i + 1);
        for (int j = 0; j < i; j++)
            if (!strcmp(h->field[i], h->field[j]))
                return posemb_fail(err, POSEMB_EFORMAT, "%s:1: column '%s' twice", path, h->field[i]);
    }
    return POSEMB_OK;
}

/* Appends a data row's fields to t (cells grow geometrically). */
static posemb_status add_row(posemb_csv *t, const csv_row *row, int *cap, const char *path, posemb_error *err)
{
    if (row->n != t->n_cols)
        return posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: %d field%s where the header has %d", path, row->line, row->n,
                           row->n == 1 ? "" : "s", t->n_cols);
    if (t->n_rows == *cap) {
        int c = *cap ? 2 * *cap : 64;
        const char **cells = realloc((void *)t->cells, (size_t)c * t->n_cols * sizeof *cells);
        long *lines = cells ? realloc(t->line, (size_t)c * sizeof *lines) : NULL;
        if (cells) t->cells = cells;
        if (!cells || !lines) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
        t->line = lines;
        *cap = c;
    }
    memcpy((void *)(t->cells + (size_t)t->n_rows * t->n_cols), row->field, (size_t)t->n_cols * sizeof *t->cells);
    t->line[t->n_rows++] = row->line;
    return POSEMB_OK;
}

static posemb_status read_rows(csv_parser *ps, posemb_csv *t, int max_rows, posemb_error *err)
{
    csv_row row = {0};
    int cap = 0;
    posemb_status st = read_row(ps, &row, err);
    if (!st) st = check_header(ps->path, &row, err);
    if (!st) {
        t->n_cols = row.n;
        t->header = malloc((size_t)row.n * sizeof *t->header);
        if (t->header) memcpy((void *)t->header, row.field, (size_t)row.n * sizeof *t->header);
        else st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", ps->path);
    }
    while (!st && !blank_rest(ps->p, ps->end)) {
        if (*ps->p == '\n' || *ps->p == '\r')
            st = posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: an empty line inside the table", ps->path, ps->line);
        else if (t->n_rows == max_rows)
            st = posemb_fail(err, POSEMB_EFORMAT, "%s:%ld: more than %d rows", ps->path, ps->line, max_rows);
        else if (!(st = read_row(ps, &row, err))) st = add_row(t, &row, &cap, ps->path, err);
    }
    free(row.field);
    return st;
}

posemb_status posemb_csv_read(const char *path, int max_rows, posemb_csv *out, posemb_error *err)
{
    memset(out, 0, sizeof *out);
    if (max_rows < 0) return posemb_fail(err, POSEMB_EINVAL, "%s: max_rows %d < 0", path, max_rows);
    size_t n;
    posemb_status st = posemb_read_data_file(path, MAX_BYTES, &out->text_, &n, err);
    if (st) return st;
    csv_parser ps = {out->text_, out->text_ + n, 1, path};
    if (n >= 3 && !memcmp(ps.p, "\xef\xbb\xbf", 3)) ps.p += 3; /* a UTF-8 byte order mark, as spreadsheets write */
    if (memchr(out->text_, '\0', n)) st = posemb_fail(err, POSEMB_EFORMAT, "%s: a NUL byte: not a text file", path);
    else if (blank_rest(ps.p, ps.end)) st = posemb_fail(err, POSEMB_EFORMAT, "%s: empty: no header row", path);
    else st = read_rows(&ps, out, max_rows, err);
    if (st) posemb_csv_free(out);
    return st;
}

void posemb_csv_free(posemb_csv *t)
{
    free((void *)t->header);
    free((void *)t->cells);
    free(t->line);
    free(t->text_);
    memset(t, 0, sizeof *t);
}

int posemb_csv_column(const posemb_csv *t, const char *name)
{
    for (int i = 0; i < t->n_cols; i++)
        if (!strcmp(t->header[i], name)) return i;
    return -1;
}
