/* A self-contained HTML report (the plot layer's, for posemb analyze, compare
 * and study; not installed): one file with inline CSS and PNG figures
 * embedded as base64 data: URIs, so that it can be mailed or archived alone.
 * Text is HTML-escaped; consecutive images share a responsive grid.
 *
 * Building functions never fail visibly: an allocation failure is recorded
 * and reported by posemb_report_write (POSEMB_ENOMEM). Every function accepts
 * a NULL report (what posemb_report_new returns when out of memory) and then
 * does nothing; posemb_report_write reports it. */
#ifndef POSEMB_REPORT_H
#define POSEMB_REPORT_H

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_report posemb_report;

/* A report whose page title (the browser tab) is title; NULL when out of
 * memory. The caller frees it with posemb_report_free. */
posemb_report *posemb_report_new(const char *title);
/* <h1>..<h6> (level clamped to 1..6); the page has no heading until one is added. */
void posemb_report_heading(posemb_report *r, int level, const char *text);
/* A paragraph of plain text (escaped; newlines kept as line breaks). */
void posemb_report_paragraph(posemb_report *r, const char *text);
/* A trusted HTML fragment, inserted as is. */
void posemb_report_html(posemb_report *r, const char *raw_html);
/* A table: header has ncols entries (NULL: no header row), cells holds nrows
 * rows of ncols entries, row-major (NULL entries are empty). Columns whose
 * cells are all numbers (or empty, "-", "nan") are right-aligned with
 * tabular digits. caption may be NULL. */
void posemb_report_table(posemb_report *r, const char *const *header, int ncols, const char *const *cells, int nrows,
                         const char *caption);
/* Embeds the PNG file at png_path as a figure with its caption (may be
 * NULL). POSEMB_EIO when unreadable, POSEMB_EFORMAT when not a PNG,
 * POSEMB_ENOMEM for a NULL report or when out of memory. */
posemb_status posemb_report_image(posemb_report *r, const char *png_path, const char *caption, posemb_error *err);
/* Preformatted text (escaped), e.g. a command line or a log excerpt. */
void posemb_report_pre(posemb_report *r, const char *text);
/* Writes the page to path, whole or not at all (EIO with the path, EINVAL
 * when it is too long); ENOMEM when building ran out of memory or r is NULL. */
posemb_status posemb_report_write(const posemb_report *r, const char *path, posemb_error *err);
void posemb_report_free(posemb_report *r);

#ifdef __cplusplus
}
#endif
#endif
