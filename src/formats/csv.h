/* A strict reader of CSV tables with a header row (csv.c), for tables a
 * person wrote or a script generated (claims for a forest plot). */
#ifndef POSEMB_FORMATS_CSV_H
#define POSEMB_FORMATS_CSV_H

#include "posemb/api.h"

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A table read from a CSV file with a header row (RFC 4180): fields
 * separated by commas, records by LF or CRLF; a field in double quotes may
 * hold commas, line breaks and "" for a quote; a leading UTF-8 BOM is
 * dropped; blank lines may end the file. Strings are NUL-terminated and
 * belong to the table. */
typedef struct posemb_csv {
    int n_cols, n_rows;
    const char **header; /* [n_cols] column names */
    const char **cells;  /* [n_rows * n_cols], row-major: row r, column c at r * n_cols + c */
    long *line;          /* [n_rows] the file line each row starts on (the header is line 1) */
    char *text_;         /* internal: the file's bytes, which the strings point into */
} posemb_csv;

#define POSEMB_CSV_MAX_COLS 256

/* Reads path into out, at most max_rows rows under the header. The caller
 * frees out with posemb_csv_free; on failure out holds nothing to free.
 * EIO when the file cannot be read; EFORMAT naming the file and line for an
 * empty file, a header with an empty or repeated name, a quote inside an
 * unquoted field, text after a closing quote, a quote never closed, a row
 * whose field count differs from the header's, an empty line inside the
 * table, more than max_rows rows or POSEMB_CSV_MAX_COLS columns, a NUL
 * byte; EINVAL for max_rows < 0; ENOMEM. */
posemb_status posemb_csv_read(const char *path, int max_rows, posemb_csv *out, posemb_error *err);
void posemb_csv_free(posemb_csv *t);
/* The index of the column named name, -1 when there is none. */
int posemb_csv_column(const posemb_csv *t, const char *name);

#ifdef __cplusplus
}
#endif
#endif
