/* The HTML report: the body is built as one growing string; the page (head,
 * inline CSS, body, footer) is assembled when written. Nothing refers to
 * another file: figures are base64 data: URIs. */
#include "plot/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_impl.h"
#include "core/fileio.h"

struct posemb_report {
    char *title;
    char *body;
    size_t len, cap;
    int oom;     /* an append failed: the report is incomplete */
    int in_grid; /* the last element was a figure: the next one joins its grid */
};

/* A readable system sans-serif, ~1100 px measure, bordered tables with
 * right-aligned tabular numbers, figures in a responsive grid. */
static const char CSS[] =
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:#fff;color:#1f2328;font:16px/1.55 system-ui,-apple-system,\"Segoe UI\",Roboto,"
    "\"Helvetica Neue\",Arial,\"Noto Sans\",\"DejaVu Sans\",sans-serif}\n"
    "main,footer{max-width:1100px;margin:0 auto;padding:0 24px}\n"
    "main{padding-top:32px;padding-bottom:16px}\n"
    "h1,h2,h3,h4,h5,h6{line-height:1.25;margin:1.6em 0 .6em;font-weight:600}\n"
    "h1{font-size:2rem;margin-top:0;padding-bottom:.3em;border-bottom:1px solid #d8dee4}\n"
    "h2{font-size:1.5rem;padding-bottom:.25em;border-bottom:1px solid #eaeef2}\n"
    "h3{font-size:1.25rem}\n"
    "p{margin:0 0 1em;max-width:80ch}\n"
    ".table{overflow-x:auto;margin:1em 0 1.5em}\n"
    "table{border-collapse:collapse;font-size:.95rem}\n"
    "caption{caption-side:top;text-align:left;color:#57606a;padding:0 0 .5em;font-size:.92rem}\n"
    "th,td{border:1px solid #d0d7de;padding:6px 12px;text-align:left;vertical-align:top}\n"
    "th{background:#f6f8fa;font-weight:600}\n"
    "tbody tr:nth-child(even){background:#fafbfc}\n"
    ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    ".figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:24px;align-items:start;"
    "margin:1em 0 2em}\n"
    "figure{margin:0;text-align:center}\n"
    "figure.wide{grid-column:1/-1}\n"
    "figure img{max-width:100%;height:auto;border:1px solid #eaeef2;border-radius:4px}\n"
    "figcaption{margin-top:.5em;color:#57606a;font-size:.92rem}\n"
    "pre{background:#f6f8fa;border:1px solid #eaeef2;border-radius:6px;padding:12px 16px;overflow:auto;"
    "font:13.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,\"DejaVu Sans Mono\",monospace}\n"
    "footer{color:#8c959f;font-size:.85rem;padding-top:8px;padding-bottom:32px;border-top:1px solid #eaeef2}\n";

/* ---- the growing body ---------------------------------------------------- */

static int reserve(posemb_report *r, size_t more)
{
    if (r->oom) return -1;
    if (r->len + more + 1 <= r->cap) return 0;
    size_t cap = r->cap ? r->cap : 4096;
    while (cap < r->len + more + 1) cap *= 2;
    char *p = realloc(r->body, cap);
    if (!p) {
        r->oom = 1;
        return -1;
    }
    r->body = p;
    r->cap = cap;
    return 0;
}

static void put_n(posemb_report *r, const char *s, size_t n)
{
    if (reserve(r, n)) return;
    memcpy(r->body + r->len, s, n);
    r->len += n;
    r->body[r->len] = '\0';
}

static void put(posemb_report *r, const char *s) { put_n(r, s, strlen(s)); }

/* HTML-escapes text; newlines become <br> when br (paragraphs), stay in <pre>. */
static void put_escaped(posemb_report *r, const char *s, int br)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            put(r, "&amp;");
            break;
        case '<':
            put(r, "&lt;");
            break;
        case '>':
            put(r, "&gt;");
            break;
        case '"':
            put(r, "&quot;");
            break;
        case '\'':
            put(r, "&#39;");
            break;
        case '\n':
            put(r, br ? "<br>\n" : "\n");
            break;
        default:
            put_n(r, s, 1);
        }
    }
}

static void end_grid(posemb_report *r)
{
    if (!r->in_grid) return;
    put(r, "</div>\n");
    r->in_grid = 0;
}

/* ---- elements ------------------------------------------------------------ */

posemb_report *posemb_report_new(const char *title)
{
    posemb_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->title = strdup(title ? title : "posemb report");
    if (!r->title) {
        free(r);
        return NULL;
    }
    return r;
}

void posemb_report_free(posemb_report *r)
{
    if (!r) return;
    free(r->title);
    free(r->body);
    free(r);
}

void posemb_report_heading(posemb_report *r, int level, const char *text)
{
    if (!r) return;
    char tag[8];
    snprintf(tag, sizeof tag, "h%d", level < 1 ? 1 : level > 6 ? 6 : level);
    end_grid(r);
    put(r, "<");
    put(r, tag);
    put(r, ">");
    put_escaped(r, text, 0);
    put(r, "</");
    put(r, tag);
    put(r, ">\n");
}

void posemb_report_paragraph(posemb_report *r, const char *text)
{
    if (!r) return;
    end_grid(r);
    put(r, "<p>");
    put_escaped(r, text, 1);
    put(r, "</p>\n");
}

void posemb_report_html(posemb_report *r, const char *raw_html)
{
    if (!r || !raw_html) return;
    end_grid(r);
    put(r, raw_html);
    put(r, "\n");
}

void posemb_report_pre(posemb_report *r, const char *text)
{
    if (!r) return;
    end_grid(r);
    put(r, "<pre>");
    put_escaped(r, text, 0);
    put(r, "</pre>\n");
}

/* ---- tables -------------------------------------------------------------- */

/* Cells such as "-" or "n/a" that count neither for nor against a column being numeric. */
static int is_empty_cell(const char *s)
{
    static const char *const P[] = {"", "-", "\xe2\x80\x94", "\xe2\x80\x93", "nan", "NaN", "n/a", "none"};
    if (!s) return 1;
    for (size_t i = 0; i < sizeof P / sizeof *P; i++)
        if (!strcmp(s, P[i])) return 1;
    return 0;
}

/* A number, possibly signed (also with U+2212), with a unit suffix such as
 * "%" or "x" ("1.07x"). */
static int is_number(const char *s)
{
    while (*s == ' ') s++;
    if (!strncmp(s, "\xe2\x88\x92", 3)) s += 3;
    char *end;
    errno = 0;
    strtod(s, &end);
    if (end == s) return 0;
    while (*end == ' ') end++;
    if (*end == '%' || *end == 'x') end++;
    while (*end == ' ') end++;
    return *end == '\0';
}

static int numeric_column(const char *const *cells, int ncols, int nrows, int c)
{
    int numbers = 0;
    for (int i = 0; i < nrows; i++) {
        const char *s = cells[(size_t)i * ncols + c];
        if (is_empty_cell(s)) continue;
        if (!is_number(s)) return 0;
        numbers++;
    }
    return numbers > 0;
}

static void put_cell(posemb_report *r, const char *tag, int num, const char *text)
{
    put(r, "<");
    put(r, tag);
    put(r, num ? " class=\"num\">" : ">");
    put_escaped(r, text, 0);
    put(r, "</");
    put(r, tag);
    put(r, ">");
}

void posemb_report_table(posemb_report *r, const char *const *header, int ncols, const char *const *cells, int nrows,
                         const char *caption)
{
    if (!r || ncols < 1 || nrows < 0 || (nrows > 0 && !cells)) return;
    char *num = calloc((size_t)ncols, 1);
    if (!num) {
        r->oom = 1;
        return;
    }
    for (int c = 0; c < ncols; c++) num[c] = (char)numeric_column(cells, ncols, nrows, c);
    end_grid(r);
    put(r, "<div class=\"table\"><table>\n");
    if (caption) {
        put(r, "<caption>");
        put_escaped(r, caption, 0);
        put(r, "</caption>\n");
    }
    if (header) {
        put(r, "<thead><tr>");
        for (int c = 0; c < ncols; c++) put_cell(r, "th", num[c], header[c]);
        put(r, "</tr></thead>\n");
    }
    put(r, "<tbody>\n");
    for (int i = 0; i < nrows; i++) {
        put(r, "<tr>");
        for (int c = 0; c < ncols; c++) put_cell(r, "td", num[c], cells[(size_t)i * ncols + c]);
        put(r, "</tr>\n");
    }
    put(r, "</tbody>\n</table></div>\n");
    free(num);
}

/* ---- images -------------------------------------------------------------- */

static void put_base64(posemb_report *r, const unsigned char *d, size_t n)
{
    static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (reserve(r, (n + 2) / 3 * 4)) return;
    char *o = r->body + r->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned long v = (unsigned long)d[i] << 16 | (unsigned long)d[i + 1] << 8 | d[i + 2];
        *o++ = B64[v >> 18 & 63];
        *o++ = B64[v >> 12 & 63];
        *o++ = B64[v >> 6 & 63];
        *o++ = B64[v & 63];
    }
    if (i < n) { /* 1 or 2 bytes left: pad to 4 characters with '=' */
        unsigned long v = (unsigned long)d[i] << 16 | (i + 1 < n ? (unsigned long)d[i + 1] << 8 : 0);
        *o++ = B64[v >> 18 & 63];
        *o++ = B64[v >> 12 & 63];
        *o++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    r->len = (size_t)(o - r->body);
    r->body[r->len] = '\0';
}

static posemb_status read_file(const char *path, unsigned char **data, size_t *n, posemb_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot read: %s", path, strerror(errno));
    size_t cap = 65536, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        unsigned char *p = realloc(buf, cap *= 2);
        if (!p) free(buf);
        buf = p;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return posemb_fail(err, POSEMB_EIO, "%s: read error", path);
    }
    *data = buf;
    *n = len;
    return POSEMB_OK;
}

#define WIDE_PX 720 /* two figures this wide no longer fit side by side at the page's 1100 px */

static unsigned long be32(const unsigned char *p)
{
    return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

posemb_status posemb_report_image(posemb_report *r, const char *png_path, const char *caption, posemb_error *err)
{
    static const unsigned char SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!r) return posemb_fail(err, POSEMB_ENOMEM, "report: out of memory");
    unsigned char *d = NULL;
    size_t n = 0;
    posemb_status st = read_file(png_path, &d, &n, err);
    if (st) return st;
    /* The signature, then the IHDR chunk: width and height at bytes 16..23. */
    if (n < 24 || memcmp(d, SIG, 8) || memcmp(d + 12, "IHDR", 4)) {
        free(d);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: not a PNG file", png_path);
    }
    char size[64];
    snprintf(size, sizeof size, "\" width=\"%lu\" height=\"%lu\" alt=\"", be32(d + 16), be32(d + 20));
    if (!r->in_grid) put(r, "<div class=\"figures\">\n");
    r->in_grid = 1;
    /* A wide figure (small multiples, a forest plot) takes a row of the grid, or its text would shrink to unread. */
    put(r, be32(d + 16) > WIDE_PX ? "<figure class=\"wide\">" : "<figure>");
    put(r, "<img src=\"data:image/png;base64,");
    put_base64(r, d, n);
    free(d);
    put(r, size);
    put_escaped(r, caption ? caption : png_path, 0);
    put(r, "\">");
    if (caption) {
        put(r, "<figcaption>");
        put_escaped(r, caption, 0);
        put(r, "</figcaption>");
    }
    put(r, "</figure>\n");
    return POSEMB_OK;
}

/* ---- the page ------------------------------------------------------------ */

posemb_status posemb_report_write(const posemb_report *r, const char *path, posemb_error *err)
{
    if (!r) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory while building the report", path);
    if (r->oom) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory while building the report", path);
    posemb_atomic_file af;
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    FILE *f = af.f;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    plot_write_escaped(f, r->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", CSS);
    if (r->body) fputs(r->body, f);
    if (r->in_grid) fputs("</div>\n", f);
    fputs("</main>\n<footer>Generated by posemb.</footer>\n</body>\n</html>\n", f);
    return posemb_atomic_commit(&af, err);
}
