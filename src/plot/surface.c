/* Output: the format named by the file extension, a white cairo canvas, and
 * the rendered bytes streamed into an atomic file (written whole or not at
 * all). SVG is held in memory first to add a <title> element: cairo draws
 * text as glyph outlines, so without it the file would not contain the
 * figure's title as text. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cairo-pdf.h>
#include <cairo-svg.h>

#include "plot/plot_impl.h"

/* Sanitizer builds (GCC's macro, clang's feature test). */
#if defined(__SANITIZE_ADDRESS__)
#define RELEASE_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELEASE_AT_EXIT 1
#endif
#endif

#ifdef RELEASE_AT_EXIT
#include <fontconfig/fontconfig.h>

/* Cairo and fontconfig keep font caches for the life of the process; under
 * a sanitizer they are released at exit, so that LeakSanitizer reports only
 * real leaks. (Not in normal builds: FcFini would break a program that
 * still uses fontconfig elsewhere, and the system reclaims it all anyway.) */
static void release_caches(void)
{
    cairo_debug_reset_static_data();
    FcFini();
}

static void register_release(void) { atexit(release_caches); }
#endif

static void once_per_process(void)
{
#ifdef RELEASE_AT_EXIT
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_release);
#endif
}

#define MAX_SIDE 16384

static posemb_status format_of(const char *path, plot_format *f, posemb_error *err)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        return posemb_fail(err, POSEMB_EINVAL, "%s: no figure format: name the file .png, .svg or .pdf", path);
    if (!strcasecmp(dot, ".png")) *f = PLOT_PNG;
    else if (!strcasecmp(dot, ".svg")) *f = PLOT_SVG;
    else if (!strcasecmp(dot, ".pdf")) *f = PLOT_PDF;
    else return posemb_fail(err, POSEMB_EINVAL, "%s: unknown figure format \"%s\": use .png, .svg or .pdf", path, dot);
    return POSEMB_OK;
}

static cairo_status_t file_write(void *closure, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

static int buf_append(plot_buf *b, const void *data, size_t len)
{
    if (b->failed) return -1;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + len) cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        if (!p) {
            b->failed = 1;
            return -1;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

static cairo_status_t buf_write(void *closure, const unsigned char *data, unsigned int len)
{
    return buf_append(closure, data, len) ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

void plot_context_setup(cairo_t *cr)
{
    once_per_process();
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
}

cairo_t *plot_measure_context(void)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(s);
    cairo_surface_destroy(s);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        return NULL;
    }
    plot_context_setup(cr);
    return cr;
}

static cairo_surface_t *create_surface(plot_canvas *c)
{
    switch (c->format) {
    case PLOT_PNG:
        return cairo_image_surface_create(CAIRO_FORMAT_RGB24, c->width, c->height);
    case PLOT_SVG: {
        cairo_surface_t *s = cairo_svg_surface_create_for_stream(buf_write, &c->svg, c->width, c->height);
        cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PT);
        return s;
    }
    case PLOT_PDF: {
        cairo_surface_t *s = cairo_pdf_surface_create_for_stream(file_write, c->af.f, c->width, c->height);
        if (c->title) cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_TITLE, c->title);
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "posemb");
        return s;
    }
    }
    return NULL;
}

posemb_status plot_canvas_open(plot_canvas *c, const char *path, int width, int height, const char *title,
                               posemb_error *err)
{
    memset(c, 0, sizeof *c);
    posemb_status st = format_of(path, &c->format, err);
    if (st) return st;
    if (width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE)
        return posemb_fail(err, POSEMB_EINVAL, "%s: figure size %d x %d out of range (1..%d)", path, width, height,
                           MAX_SIDE);
    c->width = width;
    c->height = height;
    c->title = title;
    st = posemb_atomic_open(&c->af, path, err);
    if (st) return st;
    c->surface = create_surface(c);
    c->cr = cairo_create(c->surface);
    if (cairo_status(c->cr) != CAIRO_STATUS_SUCCESS) {
        plot_canvas_abort(c);
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for a %d x %d figure", path, width, height);
    }
    plot_context_setup(c->cr);
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    return POSEMB_OK;
}

void plot_canvas_abort(plot_canvas *c)
{
    if (c->cr) cairo_destroy(c->cr);
    if (c->surface) {
        cairo_surface_finish(c->surface);
        cairo_surface_destroy(c->surface);
    }
    c->cr = NULL;
    c->surface = NULL;
    free(c->svg.data);
    c->svg = (plot_buf){0};
    posemb_atomic_abort(&c->af);
}

void plot_write_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* First occurrence of the NUL-terminated needle in n bytes (memmem is not POSIX). */
static const unsigned char *find_bytes(const unsigned char *d, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(d + i, needle, k)) return d + i;
    return NULL;
}

/* The SVG with <title> and a <style> right after the opening <svg ...> tag. */
static void write_svg(const plot_canvas *c)
{
    const unsigned char *d = c->svg.data;
    size_t n = c->svg.len, at = 0;
    const unsigned char *svg = find_bytes(d, n, "<svg");
    const unsigned char *end = svg ? memchr(svg, '>', n - (size_t)(svg - d)) : NULL;
    if (end) at = (size_t)(end - d) + 1;
    fwrite(d, 1, at, c->af.f);
    if (at) {
        if (c->title) {
            fputs("\n<title>", c->af.f);
            plot_write_escaped(c->af.f, c->title);
            fputs("</title>", c->af.f);
        }
        /* Embedded images are matrices: cells, not photographs, so no smoothing. */
        fputs("\n<style>image{image-rendering:optimizeSpeed;image-rendering:pixelated}</style>", c->af.f);
    }
    fwrite(d + at, 1, n - at, c->af.f);
}

/* Cairo's end of a drawing: PNG encodes the image, SVG and PDF finish their stream. */
static cairo_status_t render(plot_canvas *c)
{
    if (c->format == PLOT_PNG) return cairo_surface_write_to_png_stream(c->surface, file_write, c->af.f);
    cairo_surface_finish(c->surface);
    cairo_status_t cs = cairo_surface_status(c->surface);
    if (cs == CAIRO_STATUS_SUCCESS && c->svg.failed) cs = CAIRO_STATUS_NO_MEMORY;
    if (cs == CAIRO_STATUS_SUCCESS && c->format == PLOT_SVG) write_svg(c);
    return cs;
}

posemb_status plot_canvas_close(plot_canvas *c, posemb_error *err)
{
    cairo_status_t cs = cairo_status(c->cr);
    cairo_destroy(c->cr);
    c->cr = NULL;
    if (cs == CAIRO_STATUS_SUCCESS) cs = render(c);
    cairo_surface_destroy(c->surface);
    c->surface = NULL;
    free(c->svg.data);
    c->svg = (plot_buf){0};
    if (cs != CAIRO_STATUS_SUCCESS) {
        posemb_atomic_abort(&c->af);
        return posemb_fail(err, cs == CAIRO_STATUS_NO_MEMORY ? POSEMB_ENOMEM : POSEMB_EIO,
                           "%s: cannot render the figure: %s", c->af.path, cairo_status_to_string(cs));
    }
    return posemb_atomic_commit(&c->af, err);
}

/* The image k times larger, each pixel a k x k block. */
static cairo_surface_t *blocks(cairo_surface_t *img, int k)
{
    int iw = cairo_image_surface_get_width(img), ih = cairo_image_surface_get_height(img);
    cairo_surface_t *big = cairo_image_surface_create(CAIRO_FORMAT_RGB24, iw * k, ih * k);
    cairo_t *cr = cairo_create(big);
    cairo_scale(cr, k, k);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_paint(cr);
    cairo_destroy(cr);
    return big;
}

/* Smallest enlargement that gives an embedded image this many pixels a side. */
#define VECTOR_MIN_SIDE 512

void plot_paint_cells(cairo_t *cr, cairo_surface_t *img, const posemb_rect *r)
{
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_set_source_surface(cr, img, 0, 0); /* puts cr in the error state, reported when the file is written */
        return;
    }
    int iw = cairo_image_surface_get_width(img), ih = cairo_image_surface_get_height(img);
    int side = iw > ih ? iw : ih;
    /* SVG and PDF viewers may smooth an enlarged image whatever the file
     * asks: a small matrix goes in as blocks of pixels, so that its cells
     * stay sharp (but for a blurred 1/k-cell rim) in any viewer. */
    if (cairo_surface_get_type(cairo_get_target(cr)) != CAIRO_SURFACE_TYPE_IMAGE && side < VECTOR_MIN_SIDE / 2) {
        cairo_surface_t *big = blocks(img, VECTOR_MIN_SIDE / side);
        posemb_rect same = *r;
        plot_paint_cells(cr, big, &same);
        cairo_surface_destroy(big);
        return;
    }
    cairo_save(cr);
    cairo_rectangle(cr, r->x, r->y, r->w, r->h);
    cairo_clip(cr);
    cairo_translate(cr, r->x, r->y);
    cairo_scale(cr, r->w / iw, r->h / ih);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    /* PAD: the edge cells keep their colour up to the clip, not fading into transparency. */
    cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
    cairo_paint(cr);
    cairo_restore(cr);
}
