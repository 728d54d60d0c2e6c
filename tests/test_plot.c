/* Figures and the HTML report: sizes, colours read back from the PNG at the
 * cells of known values, SVG that parses, PDF, errors that leave no file,
 * NaN cells, the time a 2048 x 2048 heatmap takes, and a report whose
 * embedded image decodes back to the PNG's bytes.
 *
 * POSEMB_PLOT_DIR=DIR keeps a gallery of figures (PNG, SVG, PDF and a
 * report) in DIR for looking at them. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cairo.h>

#include "plot/plot_impl.h"
#include "posemb/error.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "study/study_impl.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------- */

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static const char *path_in(const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc((size_t)len + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    d[len] = '\0';
    if (n) *n = (size_t)len;
    return d;
}

static int file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Entries of the test directory whose name starts with prefix (temporaries included). */
static int count_entries(const char *prefix)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

static void assert_ok(posemb_status st, const posemb_error *err)
{
    if (st) fail_msg("unexpected error: %s", err->msg);
}

typedef struct png_image {
    cairo_surface_t *s;
    int w, h, stride;
    const unsigned char *data;
} png_image;

static png_image png_load(const char *path)
{
    png_image im;
    im.s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(im.s), CAIRO_STATUS_SUCCESS);
    im.w = cairo_image_surface_get_width(im.s);
    im.h = cairo_image_surface_get_height(im.s);
    im.stride = cairo_image_surface_get_stride(im.s);
    im.data = cairo_image_surface_get_data(im.s);
    return im;
}

static void png_rgb(const png_image *im, double x, double y, unsigned char rgb[3])
{
    int ix = (int)floor(x), iy = (int)floor(y);
    assert_true(ix >= 0 && ix < im->w && iy >= 0 && iy < im->h);
    uint32_t v = *(const uint32_t *)(const void *)(im->data + (size_t)iy * (size_t)im->stride + (size_t)ix * 4);
    rgb[0] = (unsigned char)(v >> 16);
    rgb[1] = (unsigned char)(v >> 8);
    rgb[2] = (unsigned char)v;
}

/* Variance of the grey level over all pixels: a blank canvas has 0. */
static double png_variance(const png_image *im)
{
    double s = 0, s2 = 0, n = (double)im->w * im->h;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            unsigned char c[3];
            png_rgb(im, x, y, c);
            double g = (c[0] + c[1] + c[2]) / 3.0;
            s += g;
            s2 += g * g;
        }
    return s2 / n - (s / n) * (s / n);
}

/* Whether pixel (x, y) is within tol of colour rgb in each channel. */
static int png_is(const png_image *im, int x, int y, uint32_t rgb, int tol)
{
    unsigned char c[3];
    png_rgb(im, x, y, c);
    return abs(c[0] - (int)(rgb >> 16 & 255)) <= tol && abs(c[1] - (int)(rgb >> 8 & 255)) <= tol &&
           abs(c[2] - (int)(rgb & 255)) <= tol;
}

/* Pixels within tol of a colour. */
static long png_count(const png_image *im, uint32_t rgb, int tol)
{
    long n = 0;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) n += png_is(im, x, y, rgb, tol);
    return n;
}

/* The width in pixels from the leftmost to the rightmost pixel of colour rgb; -1 if none. */
static int png_span(const png_image *im, uint32_t rgb, int tol)
{
    int lo = im->w, hi = -1;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            if (png_is(im, x, y, rgb, tol)) {
                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
            }
    return hi < 0 ? -1 : hi - lo;
}

static void assert_rgb_near(const unsigned char got[3], const unsigned char want[3], int tol, const char *what)
{
    for (int c = 0; c < 3; c++)
        if (abs(got[c] - want[c]) > tol)
            fail_msg("%s: got (%d, %d, %d), want (%d, %d, %d)", what, got[0], got[1], got[2], want[0], want[1],
                     want[2]);
}

/* Centre of cell (i, j) in the plot area. */
static void cell_centre(const posemb_rect *r, int rows, int cols, int i, int j, double *x, double *y)
{
    *x = r->x + (j + 0.5) * r->w / cols;
    *y = r->y + (i + 0.5) * r->h / rows;
}

/* A small well-formedness check: every tag closed in order, one root. */
static int xml_balanced(const char *s)
{
    char stack[64][64];
    int depth = 0, roots = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p, '<')) {
        if (!strncmp(p, "<?", 2) || !strncmp(p, "<!--", 4) || !strncmp(p, "<!", 2)) {
            const char *e = strstr(p, p[1] == '?' ? "?>" : p[2] == '-' ? "-->" : ">");
            if (!e) return 0;
            p = e + 1;
            continue;
        }
        int closing = p[1] == '/';
        const char *n = p + 1 + closing;
        size_t len = strcspn(n, " \t\r\n/>");
        if (len == 0 || len >= 64) return 0;
        const char *q = n + len;
        char quote = 0;
        for (; *q && (quote || *q != '>'); q++)
            if (*q == '"' || *q == '\'') quote = quote == *q ? 0 : quote ? quote : *q;
        if (!*q) return 0;
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != len || strncmp(stack[depth - 1], n, len)) return 0;
            depth--;
        } else if (q[-1] != '/') {
            if (depth == 64) return 0;
            if (depth == 0) roots++;
            memcpy(stack[depth], n, len);
            stack[depth++][len] = '\0';
        } else if (depth == 0) {
            roots++;
        }
        p = q + 1;
    }
    return depth == 0 && roots == 1;
}

static int have_xmllint(void) { return tu_run("command -v xmllint", NULL, 0) == 0; }

static void assert_svg_valid(const char *path, const char *title_escaped)
{
    char *svg = slurp(path, NULL);
    assert_memory_equal(svg, "<?xml", 5);
    assert_non_null(strstr(svg, "<svg"));
    if (title_escaped) {
        char want[512];
        snprintf(want, sizeof want, "<title>%s</title>", title_escaped);
        if (!strstr(svg, want)) fail_msg("%s lacks %s", path, want);
    }
    assert_true(xml_balanced(svg));
    free(svg);
    if (have_xmllint()) {
        char cmd[1200], out[2048];
        snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
        if (tu_run(cmd, out, sizeof out) != 0) fail_msg("xmllint %s: %s", path, out);
    }
}

static void assert_pdf(const char *path)
{
    size_t n;
    char *d = slurp(path, &n);
    assert_true(n > 100);
    assert_memory_equal(d, "%PDF", 4);
    assert_non_null(strstr(d + n - 32, "%%EOF"));
    free(d);
}

/* An n x n matrix cos((i - j) / 20), the similarity of a sinusoidal PE. */
static float *similarity(int n)
{
    float *m = malloc(sizeof *m * (size_t)n * (size_t)n);
    assert_non_null(m);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) m[(size_t)i * n + j] = (float)cos((i - j) / 20.0);
    return m;
}

/* ---- colour maps and ticks ----------------------------------------------- */

static void test_cmap(void **state)
{
    (void)state;
    unsigned char c[3];
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 0, c);
    assert_rgb_near(c, (const unsigned char[3]){68, 1, 84}, 0, "viridis(0) = #440154");
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 1, c);
    assert_rgb_near(c, (const unsigned char[3]){253, 231, 37}, 0, "viridis(1) = #fde725");
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 128 / 255.0, c);
    assert_rgb_near(c, (const unsigned char[3]){33, 145, 140}, 0, "viridis entry 128 = #21918c");
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 2.0, c); /* clamped */
    assert_rgb_near(c, (const unsigned char[3]){253, 231, 37}, 0, "viridis(2) clamps");
    posemb_cmap_rgb(POSEMB_CMAP_DIVERGING, 0.5, c);
    assert_rgb_near(c, (const unsigned char[3]){247, 247, 247}, 0, "diverging(0.5) is near white");
    posemb_cmap_rgb(POSEMB_CMAP_DIVERGING, 0, c);
    assert_true(c[2] > c[0]); /* blue below */
    posemb_cmap_rgb(POSEMB_CMAP_DIVERGING, 1, c);
    assert_true(c[0] > c[2]); /* red above */
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, NAN, c);
    assert_true(c[0] == c[1] && c[1] == c[2] && c[0] > 100 && c[0] < 200); /* mid grey */
}

static void assert_ticks_sane(const plot_ticks *t, double lo, double hi, int max_n)
{
    assert_true(t->n >= 1 && t->n <= max_n);
    for (int i = 0; i < t->n; i++) {
        assert_true(t->v[i] >= lo - 1e-9 * fabs(hi - lo) && t->v[i] <= hi + 1e-9 * fabs(hi - lo));
        double k = t->v[i] / t->step;
        assert_true(fabs(k - round(k)) < 1e-6);
        for (int j = 0; j < i; j++) assert_string_not_equal(t->label[i], t->label[j]);
    }
}

static void test_ticks(void **state)
{
    (void)state;
    plot_ticks t;
    plot_ticks_make(&t, 0, 511, 8, 1);
    assert_int_equal(t.n, 6);
    assert_string_equal(t.label[0], "0");
    assert_string_equal(t.label[5], "500");
    plot_ticks_make(&t, -1, 1, 9, 0);
    assert_int_equal(t.n, 5);
    assert_string_equal(t.label[0], "\xe2\x88\x92"
                                    "1.0"); /* a real minus sign */
    assert_string_equal(t.label[2], "0.0"); /* never "-0.0" */
    assert_string_equal(t.label[3], "0.5");
    plot_ticks_make(&t, 0, 7, 8, 1); /* a small matrix: every position */
    assert_int_equal(t.n, 8);
    plot_ticks_make(&t, 0, 0.3, 5, 0);
    assert_string_equal(t.label[1], "0.1");
    plot_ticks_make(&t, -64, 64, 8, 1);
    assert_ticks_sane(&t, -64, 64, 8);
    plot_ticks_make(&t, 3, 3, 8, 1);
    assert_int_equal(t.n, 1);
    /* Large and tiny numbers: scientific notation for the whole axis. */
    plot_ticks_make(&t, 0, 2e6, 5, 0);
    assert_int_equal(t.n, 5);
    assert_string_equal(t.label[0], "0");
    assert_string_equal(t.label[1], "5\xc3\x97"
                                    "10\xe2\x81\xb5"); /* 5x10^5 */
    assert_string_equal(t.label[3], "1.5\xc3\x97"
                                    "10\xe2\x81\xb6");
    plot_ticks_make(&t, -3e-6, 3e-6, 4, 0);
    assert_string_equal(t.label[0], "\xe2\x88\x92"
                                    "2\xc3\x97"
                                    "10\xe2\x81\xbb\xe2\x81\xb6"); /* -2x10^-6 */
    /* Random ranges of every magnitude: in range, multiples of the step, distinct labels. */
    srand(7);
    for (int k = 0; k < 2000; k++) {
        double e = pow(10, rand() % 16 - 8);
        double lo = (rand() / (double)RAND_MAX - 0.5) * 10 * e, hi = lo + (rand() / (double)RAND_MAX + 1e-3) * 10 * e;
        int max_n = 2 + rand() % 10;
        plot_ticks_make(&t, lo, hi, max_n, 0);
        assert_ticks_sane(&t, lo, hi, max_n);
    }
}

/* ---- heatmaps ------------------------------------------------------------ */

static void test_heatmap_png_size(void **state)
{
    (void)state;
    posemb_error err;
    float *m = similarity(64);
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.title = "Similarity";
    o.width = 500;
    o.height = 420;
    assert_ok(posemb_plot_heatmap(path_in("size.png"), m, 48, 64, &o, &err), &err);
    png_image im = png_load(path_in("size.png"));
    assert_int_equal(im.w, 500);
    assert_int_equal(im.h, 420);
    assert_true(png_variance(&im) > 500);
    cairo_surface_destroy(im.s);

    /* Default size: 560 high, at most 640 wide (a square matrix leaves no blank band). */
    assert_ok(posemb_plot_heatmap(path_in("default.png"), m, 64, 64, NULL, &err), &err);
    im = png_load(path_in("default.png"));
    assert_int_equal(im.h, 560);
    assert_true(im.w <= 640 && im.w > 400);
    cairo_surface_destroy(im.s);

    /* A wide table gets a short figure. */
    assert_ok(posemb_plot_heatmap(path_in("wide.png"), m, 12, 64, NULL, &err), &err);
    im = png_load(path_in("wide.png"));
    assert_true(im.h < 400);
    cairo_surface_destroy(im.s);
    free(m);
}

static void test_heatmap_viridis_extremes(void **state)
{
    (void)state;
    enum { R = 9, C = 11 };
    float m[R * C];
    for (int k = 0; k < R * C; k++) m[k] = 0.5f + 0.01f * (float)(k % 7);
    m[2 * C + 3] = -4.0f; /* minimum */
    m[6 * C + 8] = 7.0f;  /* maximum */
    m[4 * C + 5] = 1.5f;  /* (1.5 + 4) / 11 of the way */
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.title = "extremes";
    o.xlabel = "j";
    o.ylabel = "i";
    o.cbar_label = "value";
    posemb_error err;
    assert_ok(posemb_plot_heatmap(path_in("ext.png"), m, R, C, &o, &err), &err);
    posemb_rect plot, bar;
    assert_ok(posemb_heatmap_layout(m, R, C, &o, &plot, &bar, &err), &err);
    png_image im = png_load(path_in("ext.png"));
    unsigned char got[3], want[3];
    double x, y;
    cell_centre(&plot, R, C, 2, 3, &x, &y);
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 0, want);
    assert_rgb_near(got, want, 1, "minimum cell");
    cell_centre(&plot, R, C, 6, 8, &x, &y);
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 1, want);
    assert_rgb_near(got, want, 1, "maximum cell");
    cell_centre(&plot, R, C, 4, 5, &x, &y);
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, round(5.5 / 11 * 255) / 255, want);
    assert_rgb_near(got, want, 1, "middle cell");
    /* The colour bar: vmax's colour at its top, vmin's at its bottom, beside the plot and as tall. */
    assert_true(bar.x > plot.x + plot.w && bar.y == plot.y && bar.h == plot.h);
    png_rgb(&im, bar.x + bar.w / 2, bar.y + 3, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 1, want);
    assert_rgb_near(got, want, 8, "colour bar top"); /* 3 px down the 256-step gradient */
    png_rgb(&im, bar.x + bar.w / 2, bar.y + bar.h - 3, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 0, want);
    assert_rgb_near(got, want, 8, "colour bar bottom");
    cairo_surface_destroy(im.s);

    /* A fixed range: values beyond it take the end colours. */
    o.vmin = 0;
    o.vmax = 1;
    assert_ok(posemb_plot_heatmap(path_in("ext2.png"), m, R, C, &o, &err), &err);
    assert_ok(posemb_heatmap_layout(m, R, C, &o, &plot, NULL, &err), &err);
    im = png_load(path_in("ext2.png"));
    cell_centre(&plot, R, C, 6, 8, &x, &y);
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 1, want);
    assert_rgb_near(got, want, 1, "clipped maximum");
    cairo_surface_destroy(im.s);
}

static void test_heatmap_diverging(void **state)
{
    (void)state;
    enum { N = 6 };
    float m[N * N];
    for (int k = 0; k < N * N; k++) m[k] = (float)(k % N) - 2.0f + 0.1f * (float)(k / N); /* -2 .. 3.5 */
    m[2 * N + 2] = 0.0f;
    m[0] = -2.0f;
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.cmap = POSEMB_CMAP_DIVERGING;
    o.title = "signed";
    posemb_error err;
    assert_ok(posemb_plot_heatmap(path_in("div.png"), m, N, N, &o, &err), &err);
    posemb_rect plot, bar;
    assert_ok(posemb_heatmap_layout(m, N, N, &o, &plot, &bar, &err), &err);
    png_image im = png_load(path_in("div.png"));
    unsigned char got[3];
    double x, y;
    cell_centre(&plot, N, N, 2, 2, &x, &y);
    png_rgb(&im, x, y, got);
    assert_true(got[0] >= 240 && got[1] >= 240 && got[2] >= 240); /* 0 is (near) white */
    /* Symmetric range [-3.5, 3.5]: -2 is a clear blue, not the darkest. */
    cell_centre(&plot, N, N, 0, 0, &x, &y);
    png_rgb(&im, x, y, got);
    assert_true(got[2] > got[0] + 40);
    /* The middle of the colour bar is white too. */
    png_rgb(&im, bar.x + bar.w / 2, bar.y + bar.h / 2, got);
    assert_true(got[0] >= 240 && got[1] >= 240 && got[2] >= 240);
    cairo_surface_destroy(im.s);
}

static void test_heatmap_nan(void **state)
{
    (void)state;
    enum { N = 5 };
    float m[N * N];
    for (int k = 0; k < N * N; k++) m[k] = (float)k;
    m[7] = NAN;
    m[8] = INFINITY;
    m[9] = -INFINITY;
    posemb_error err;
    assert_ok(posemb_plot_heatmap(path_in("nan.png"), m, N, N, NULL, &err), &err);
    posemb_rect plot;
    assert_ok(posemb_heatmap_layout(m, N, N, NULL, &plot, NULL, &err), &err);
    png_image im = png_load(path_in("nan.png"));
    unsigned char got[3], want[3];
    double x, y;
    cell_centre(&plot, N, N, 1, 2, &x, &y);
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, NAN, want);
    assert_rgb_near(got, want, 0, "NaN cell is grey");
    cell_centre(&plot, N, N, 1, 3, &x, &y); /* +inf: the top colour */
    png_rgb(&im, x, y, got);
    posemb_cmap_rgb(POSEMB_CMAP_VIRIDIS, 1, want);
    assert_rgb_near(got, want, 1, "+inf cell");
    cairo_surface_destroy(im.s);

    /* Nothing finite at all, and a constant matrix: still a figure. */
    for (int k = 0; k < N * N; k++) m[k] = NAN;
    assert_ok(posemb_plot_heatmap(path_in("allnan.png"), m, N, N, NULL, &err), &err);
    for (int k = 0; k < N * N; k++) m[k] = 3.0f;
    assert_ok(posemb_plot_heatmap(path_in("const.png"), m, N, N, NULL, &err), &err);
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.cmap = POSEMB_CMAP_DIVERGING;
    assert_ok(posemb_plot_heatmap(path_in("const_div.svg"), m, N, N, &o, &err), &err);
    assert_ok(posemb_plot_heatmap(path_in("one.png"), m, 1, 1, NULL, &err), &err);
}

static void test_heatmap_formats(void **state)
{
    (void)state;
    float *m = similarity(32);
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.title = "Attention <&> \"heads\"";
    o.xlabel = "key position";
    o.ylabel = "query position";
    o.cbar_label = "weight";
    posemb_error err;
    assert_ok(posemb_plot_heatmap(path_in("fig.svg"), m, 32, 32, &o, &err), &err);
    assert_svg_valid(path_in("fig.svg"), "Attention &lt;&amp;&gt; &quot;heads&quot;");
    assert_ok(posemb_plot_heatmap(path_in("fig.pdf"), m, 32, 32, &o, &err), &err);
    assert_pdf(path_in("fig.pdf"));
    assert_ok(posemb_plot_heatmap(path_in("FIG.PNG"), m, 32, 32, &o, &err), &err); /* case-insensitive */
    png_image im = png_load(path_in("FIG.PNG"));
    cairo_surface_destroy(im.s);
    free(m);
}

static void test_heatmap_errors(void **state)
{
    (void)state;
    float m[4] = {1, 2, 3, 4};
    posemb_error err;
    assert_int_equal(posemb_plot_heatmap(path_in("bad.jpg"), m, 2, 2, NULL, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "bad.jpg"));
    assert_non_null(strstr(err.msg, ".png"));
    assert_int_equal(posemb_plot_heatmap(path_in("noext"), m, 2, 2, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(count_entries("bad"), 0);
    assert_int_equal(count_entries("noext"), 0);

    assert_int_equal(posemb_plot_heatmap(path_in("missing/dir/fig.png"), m, 2, 2, NULL, &err), POSEMB_EIO);
    assert_non_null(strstr(err.msg, "missing/dir/fig.png"));
    assert_int_equal(posemb_plot_heatmap(path_in("missing/dir/fig.svg"), m, 2, 2, NULL, &err), POSEMB_EIO);
    assert_int_equal(count_entries("missing"), 0);

    assert_int_equal(posemb_plot_heatmap(path_in("z.png"), m, 0, 2, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_heatmap(path_in("z.png"), NULL, 2, 2, NULL, &err), POSEMB_EINVAL);
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.vmin = 2;
    o.vmax = 1;
    assert_int_equal(posemb_plot_heatmap(path_in("z.png"), m, 2, 2, &o, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "vmin"));
    o = posemb_heatmap_defaults();
    o.width = 30;
    o.height = 30;
    assert_int_equal(posemb_plot_heatmap(path_in("z.png"), m, 2, 2, &o, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "too small"));
    o.width = 100000;
    o.height = 500;
    assert_int_equal(posemb_plot_heatmap(path_in("z.png"), m, 2, 2, &o, &err), POSEMB_EINVAL);
    assert_int_equal(count_entries("z."), 0);

    /* A zeroed options struct works: equal vmin = vmax = 0 mean "from the data". */
    posemb_heatmap_opts zero = {0};
    assert_ok(posemb_plot_heatmap(path_in("zero.png"), m, 2, 2, &zero, &err), &err);
}

/* Named ticks: every name where the cells leave room, every k-th where they
 * crowd, the rows' margin as wide as the widest name; bad names refused. */
static void test_heatmap_names(void **state)
{
    (void)state;
    static const char *const NAMES[12] = {"128",  "256",   "512",   "1024",  "2048",   "4096",
                                          "8192", "16384", "32768", "65536", "131072", "262144"};
    plot_style st = plot_style_at(1);
    cairo_t *cr = plot_measure_context();
    plot_ticks t;
    plot_map wide = {-0.5, 4.5, 0, 500}, narrow = {-0.5, 11.5, 0, 120};
    plot_ticks_named(cr, &st, &t, 0, NAMES, 5, &wide, 0);
    assert_int_equal(t.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_true(t.v[i] == i);
        assert_string_equal(t.label[i], NAMES[i]);
    }
    plot_ticks_named(cr, &st, &t, 0, NAMES, 12, &narrow, 0); /* 10 units a cell: names crowd */
    assert_true(t.n >= 2 && t.n < 12);
    int k = (int)(t.v[1] - t.v[0]);
    assert_true(k > 1);
    for (int i = 0; i < t.n; i++) assert_string_equal(t.label[i], NAMES[i * k]);
    assert_true(k * 10.0 >= plot_ticks_width(cr, &st, &t) + 1.6 * st.tick);
    /* A log2 axis: whole numbers named 2^v. */
    plot_map len = {6.8, 11.2, 0, 600}, small = {-2.2, 1.2, 0, 600}, huge = {-500, 500, 0, 600},
             frac = {0.2, 0.8, 0, 600};
    plot_ticks_log2(cr, &st, &t, 6.8, 11.2, &len);
    assert_int_equal(t.n, 5);
    assert_string_equal(t.label[0], "128");
    assert_string_equal(t.label[4], "2048");
    assert_true(t.v[0] == 7 && t.v[4] == 11);
    plot_ticks_log2(cr, &st, &t, -2.2, 1.2, &small);
    assert_int_equal(t.n, 4);
    assert_string_equal(t.label[0], "0.25");
    assert_string_equal(t.label[1], "0.5");
    assert_string_equal(t.label[2], "1");
    assert_string_equal(t.label[3], "2");
    plot_ticks_log2(cr, &st, &t, -500, 500, &huge); /* thinned to multiples of a round step, powers as 2^v */
    assert_true(t.n >= 2 && t.n <= PLOT_MAX_TICKS);
    int step = (int)(t.v[1] - t.v[0]);
    assert_true(step == 50 || step == 100 || step == 200 || step == 500);
    for (int i = 0; i < t.n; i++) assert_true(fmod(t.v[i], step) == 0);
    char buf[64];
    plot_format_pow2(buf, sizeof buf, 19);
    assert_string_equal(buf, "524288");
    plot_format_pow2(buf, sizeof buf, -5);
    assert_string_equal(buf, "0.03125");
    plot_format_pow2(buf, sizeof buf, 20);
    assert_string_equal(buf, "2\xc2\xb2\xe2\x81\xb0"); /* 2^20 */
    plot_format_pow2(buf, sizeof buf, -10);
    assert_string_equal(buf, "2\xe2\x81\xbb\xc2\xb9\xe2\x81\xb0"); /* 2^-10 */
    plot_ticks_log2(cr, &st, &t, 0.2, 0.8, &frac);                 /* no whole number: numeric ticks labelled 2^v */
    assert_true(t.n >= 2 && t.v[0] >= 0.2 && t.v[t.n - 1] <= 0.8);
    snprintf(buf, sizeof buf, "%.3g", pow(2, t.v[0]));
    assert_string_equal(t.label[0], buf);
    cairo_destroy(cr);

    float m[2 * 5] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const char *rows_short[2] = {"0", "1"}, *rows_long[2] = {"0", "a rather long row name"};
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.xnames = NAMES;
    o.ynames = rows_short;
    posemb_rect a, b;
    posemb_error err;
    assert_ok(posemb_heatmap_layout(m, 2, 5, &o, &a, NULL, &err), &err);
    o.ynames = rows_long;
    assert_ok(posemb_heatmap_layout(m, 2, 5, &o, &b, NULL, &err), &err);
    assert_true(b.x > a.x + 50); /* the long name's room */
    assert_ok(posemb_plot_heatmap(path_in("names.png"), m, 2, 5, &o, &err), &err);

    const char *missing[2] = {"0", NULL}, *too_long[2] = {"0", "a name of thirty-two bytes, 1234"};
    o.ynames = missing;
    assert_int_equal(posemb_plot_heatmap(path_in("names_bad.png"), m, 2, 5, &o, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "row name 1 is missing"));
    o.ynames = too_long;
    assert_int_equal(posemb_plot_heatmap(path_in("names_bad.png"), m, 2, 5, &o, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "row name 1 is 32 bytes or longer"));
    assert_int_equal(count_entries("names_bad"), 0);
}

static void test_heatmap_speed(void **state)
{
    (void)state;
    posemb_error err;
    const int sizes[2] = {512, 2048};
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        float *m = similarity(n);
        const char *exts[3] = {"png", "svg", "pdf"};
        for (int e = 0; e < 3; e++) {
            char name[64];
            snprintf(name, sizeof name, "big%d.%s", n, exts[e]);
            double t0 = seconds();
            assert_ok(posemb_plot_heatmap(path_in(name), m, n, n, NULL, &err), &err);
            printf("heatmap %4d x %-4d %s: %.3f s\n", n, n, exts[e], seconds() - t0);
        }
        free(m);
    }
    png_image im = png_load(path_in("big2048.png"));
    assert_true(png_variance(&im) > 500);
    cairo_surface_destroy(im.s);
}

/* ---- lines --------------------------------------------------------------- */

static void test_lines(void **state)
{
    (void)state;
    enum { N = 120 };
    double x[N], a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        x[i] = i * 10.0;
        a[i] = exp(-i / 30.0);
        b[i] = 0.5 + 0.4 * sin(i / 10.0);
        c[i] = i == 50 ? NAN : 0.002 * i; /* a gap */
    }
    posemb_series s[3] = {{"TI", x, a, N, 0}, {"MONO", x, b, N, 2}, {"SYM", NULL, c, N, 1}};
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = "Indicators over training";
    o.xlabel = "step";
    o.ylabel = "value";
    posemb_error err;
    assert_ok(posemb_plot_lines(path_in("lines.png"), s, 3, &o, &err), &err);
    png_image im = png_load(path_in("lines.png"));
    assert_int_equal(im.w, 640);
    assert_int_equal(im.h, 440);
    assert_true(png_variance(&im) > 100);
    /* Each series in its tab10 colour. */
    assert_true(png_count(&im, 0x1f77b4, 12) > 100);
    assert_true(png_count(&im, 0xff7f0e, 12) > 100);
    assert_true(png_count(&im, 0x2ca02c, 12) > 100);
    cairo_surface_destroy(im.s);
    assert_ok(posemb_plot_lines(path_in("lines.svg"), s, 3, &o, &err), &err);
    assert_svg_valid(path_in("lines.svg"), "Indicators over training");
    assert_ok(posemb_plot_lines(path_in("lines.pdf"), s, 3, &o, &err), &err);
    assert_pdf(path_in("lines.pdf"));

    /* One point, zeroed options, fixed limits, a larger figure. */
    double one = 2.0;
    posemb_series single = {.y = &one, .n = 1, .points = 1};
    posemb_lines_opts zero = {0};
    assert_ok(posemb_plot_lines(path_in("one.png"), &single, 1, &zero, &err), &err);
    o.ymin = 0;
    o.ymax = 1;
    o.width = 1280;
    o.height = 880;
    assert_ok(posemb_plot_lines(path_in("lines2x.png"), s, 3, &o, &err), &err);
    im = png_load(path_in("lines2x.png"));
    assert_int_equal(im.w, 1280);
    cairo_surface_destroy(im.s);

    /* Errors. */
    double nan = NAN;
    posemb_series none = {.label = "x", .y = &nan, .n = 1};
    assert_int_equal(posemb_plot_lines(path_in("e.png"), &none, 1, NULL, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "finite"));
    assert_int_equal(posemb_plot_lines(path_in("e.png"), s, 0, NULL, &err), POSEMB_EINVAL);
    posemb_series bad = s[0];
    bad.points = 3;
    assert_int_equal(posemb_plot_lines(path_in("e.png"), &bad, 1, NULL, &err), POSEMB_EINVAL);
    o = posemb_lines_defaults();
    o.xmin = 5;
    o.xmax = 1;
    assert_int_equal(posemb_plot_lines(path_in("e.png"), s, 3, &o, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_lines(path_in("e.gif"), s, 3, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_lines(path_in("nodir/e.png"), s, 3, NULL, &err), POSEMB_EIO);
    assert_int_equal(count_entries("e."), 0);
}

/* ---- series looks, panel grids ------------------------------------------ */

/* For every figure of n = 1..40 series, no two share (colour, dash); two
 * that share a colour are at least ten apart in the order. */
static void test_series_looks(void **state)
{
    (void)state;
    for (int n = 1; n <= POSEMB_PLOT_MAX_SERIES; n++)
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                plot_look la = plot_look_at(a), lb = plot_look_at(b);
                if (la.rgb == lb.rgb && la.dash == lb.dash) fail_msg("n = %d: series %d and %d look alike", n, a, b);
                if (la.rgb == lb.rgb) assert_true(b - a >= PLOT_N_COLOURS && la.dash != lb.dash);
            }
    /* The reference's grey is no series' colour. */
    for (int k = 0; k < POSEMB_PLOT_MAX_SERIES; k++)
        assert_true(plot_look_at(k).rgb != plot_look_at(PLOT_REFERENCE).rgb);
    /* A figure of more series than looks is refused. */
    double y[2] = {1, 2};
    posemb_series many[POSEMB_PLOT_MAX_SERIES + 1];
    for (int k = 0; k <= POSEMB_PLOT_MAX_SERIES; k++) many[k] = (posemb_series){.y = y, .n = 2};
    posemb_error err;
    assert_int_equal(posemb_plot_lines(path_in("many.png"), many, POSEMB_PLOT_MAX_SERIES + 1, NULL, &err),
                     POSEMB_EINVAL);
    assert_ok(posemb_plot_lines(path_in("many.png"), many, POSEMB_PLOT_MAX_SERIES, NULL, &err), &err);
}

static void test_grid(void **state)
{
    (void)state;
    double x[5] = {7, 8, 9, 10, 11}, y[7][5];
    for (int k = 0; k < 7; k++)
        for (int i = 0; i < 5; i++) y[k][i] = 2 + 0.3 * k + 0.1 * i * (k % 3);
    posemb_series s[6], ref = {"none", x, y[6], 5, 2};
    const char *names[6] = {"ape", "sin", "rope", "xpos", "alibi", "t5"};
    for (int k = 0; k < 6; k++) s[k] = (posemb_series){names[k], x, y[k], 5, 2};
    posemb_panel p[3] = {{"absolute", s, 2}, {"rotary", s + 2, 2}, {"biases", s + 4, 2}};
    posemb_grid_opts o = posemb_grid_defaults();
    o.title = "Small multiples";
    o.xlabel = "context length";
    o.ylabel = "bits per token";
    o.xlog2 = 1;
    o.reference = &ref;
    posemb_error err;
    assert_ok(posemb_plot_lines_grid(path_in("grid.png"), p, 3, &o, &err), &err);
    png_image im = png_load(path_in("grid.png"));
    assert_true(im.w > 3 * 330 && im.h > 230); /* three panels in a row */
    for (int k = 0; k < 6; k++)                /* each series in its own colour: the looks run over the whole figure */
        if (png_count(&im, plot_look_at(k).rgb, 10) < 40) fail_msg("series %d's colour is missing", k);
    assert_true(png_count(&im, plot_look_at(PLOT_REFERENCE).rgb, 10) > 3 * 100); /* the reference in every panel */
    cairo_surface_destroy(im.s);
    assert_ok(posemb_plot_lines_grid(path_in("grid.svg"), p, 3, &o, &err), &err);
    assert_svg_valid(path_in("grid.svg"), "Small multiples");
    o.cols = 2; /* 2 x 2, a given size */
    o.width = 900;
    o.height = 700;
    assert_ok(posemb_plot_lines_grid(path_in("grid2.png"), p, 3, &o, &err), &err);
    im = png_load(path_in("grid2.png"));
    assert_int_equal(im.w, 900);
    assert_int_equal(im.h, 700);
    cairo_surface_destroy(im.s);
    /* Errors leave no file. */
    assert_int_equal(posemb_plot_lines_grid(path_in("e.png"), p, 0, &o, &err), POSEMB_EINVAL);
    posemb_series many[POSEMB_PLOT_MAX_SERIES];
    for (int k = 0; k < POSEMB_PLOT_MAX_SERIES; k++) many[k] = s[0];
    posemb_panel over[2] = {{"a", many, POSEMB_PLOT_MAX_SERIES}, {"b", s, 1}};
    assert_int_equal(posemb_plot_lines_grid(path_in("e.png"), over, 2, NULL, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "tells apart"));
    o.width = 60;
    assert_int_equal(posemb_plot_lines_grid(path_in("e.png"), p, 3, &o, &err), POSEMB_EINVAL);
    assert_int_equal(count_entries("e."), 0);
}

/* Whether two images of one height have the same pixels in every column left of x1. */
static int png_same_left_of(const png_image *a, const png_image *b, int x1)
{
    if (a->h != b->h || x1 > a->w || x1 > b->w) return 0;
    for (int y = 0; y < a->h; y++)
        if (memcmp(a->data + (size_t)y * a->stride, b->data + (size_t)y * b->stride, (size_t)x1 * 4)) return 0;
    return 1;
}

/* free_x: a panel of 2000 steps beside one of 32,000 fills its own width, where a shared axis squeezes it to a
 * sixteenth, and gets its own ticks (unlabelled series: no legend swatch in the series' colour). */
static void test_grid_free_x(void **state)
{
    (void)state;
    double xa[2] = {0, 2000}, xb[2] = {0, 32000}, ya[2] = {1, 1}, yb[2] = {2, 2};
    posemb_series a = {NULL, xa, ya, 2, 0}, b = {NULL, xb, yb, 2, 0};
    posemb_panel p[2] = {{"short", &a, 1}, {"long", &b, 1}};
    posemb_grid_opts o = posemb_grid_defaults();
    o.ymin = 0.96; /* the limits from the data, given: the short panel alone (below) gets them too */
    o.ymax = 2.04;
    posemb_error err;
    int span[2][2];
    for (int free_x = 0; free_x <= 1; free_x++) {
        o.free_x = free_x;
        assert_ok(posemb_plot_lines_grid(path_in("free.png"), p, 2, &o, &err), &err);
        png_image im = png_load(path_in("free.png"));
        for (int k = 0; k < 2; k++) span[free_x][k] = png_span(&im, plot_look_at(k).rgb, 10);
        cairo_surface_destroy(im.s);
    }
    /* Free, the short panel is drawn as it is alone, ticks and grid lines too (the figure's right margin and the
     * next panel's left edge, 30 pixels, not compared). */
    assert_ok(posemb_plot_lines_grid(path_in("alone.png"), p, 1, &o, &err), &err);
    png_image free = png_load(path_in("free.png")), alone = png_load(path_in("alone.png"));
    assert_true(png_same_left_of(&free, &alone, alone.w - 30));
    cairo_surface_destroy(free.s);
    cairo_surface_destroy(alone.s);
    /* Each line spans the data range of its axis: 1 / (1 + 2 x 4%) of the plot area. */
    assert_true(span[0][1] > 250);
    assert_true(abs(span[0][0] - span[0][1] / 16) <= 3); /* shared: 2000 of 32,000 */
    assert_true(abs(span[1][0] - span[1][1]) <= 2);      /* free: both fill their panel */
    assert_int_equal(span[1][1], span[0][1]);            /* the long panel is drawn as before */
    /* Given limits still bound every panel (both then span 0-4000, free or not): the short line fills half the
     * width. Given one end only, a panel whose points all lie past it keeps the shared limits. */
    o.xmin = 0;
    o.xmax = 4000;
    assert_ok(posemb_plot_lines_grid(path_in("free.png"), p, 2, &o, &err), &err);
    png_image im = png_load(path_in("free.png"));
    assert_true(abs(png_span(&im, plot_look_at(0).rgb, 10) - png_span(&im, plot_look_at(1).rgb, 10) / 2) <= 3);
    cairo_surface_destroy(im.s);
    double xc[2] = {5000, 6000};
    posemb_series c = {NULL, xc, ya, 2, 0};
    posemb_panel q[2] = {{"past", &c, 1}, {"long", &b, 1}};
    o.xmin = NAN;
    o.xmax = 4000; /* the "past" panel's points lie beyond it: not drawn, and its axis ends at 4000 as the other's */
    assert_ok(posemb_plot_lines_grid(path_in("free.png"), q, 2, &o, &err), &err);
    im = png_load(path_in("free.png"));
    assert_int_equal(png_span(&im, plot_look_at(0).rgb, 10), -1);
    cairo_surface_destroy(im.s);
}

/* With looks_by_label a label keeps its look in every panel; without, every series has its own. Data too wide
 * for an axis is refused, not drawn blank. */
static void test_grid_looks_by_label(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3}, y[3][3] = {{1, 2, 3}, {3, 2, 1}, {2, 2.5, 2}};
    posemb_series one[2] = {{"a", x, y[0], 3, 0}, {"b", x, y[1], 3, 0}},
                  two[2] = {{"a", x, y[2], 3, 0}, {"c", x, y[1], 3, 0}};
    posemb_panel p[2] = {{"one", one, 2}, {"two", two, 2}};
    posemb_grid_opts o = posemb_grid_defaults();
    posemb_error err;
    for (int by_label = 0; by_label <= 1; by_label++) {
        o.looks_by_label = by_label;
        assert_ok(posemb_plot_lines_grid(path_in("looks.png"), p, 2, &o, &err), &err);
        png_image im = png_load(path_in("looks.png"));
        for (int k = 0; k < 3; k++)
            if (png_count(&im, plot_look_at(k).rgb, 10) < 40) fail_msg("by_label %d: look %d missing", by_label, k);
        /* Four series: the fourth look only when "a" of panel two gets its own. */
        int fourth = png_count(&im, plot_look_at(3).rgb, 10);
        if (by_label ? fourth != 0 : fourth < 40) fail_msg("by_label %d: the fourth look counts %d", by_label, fourth);
        cairo_surface_destroy(im.s);
    }
    double wide[2] = {1e308, -1e308};
    posemb_series w = {"w", x, wide, 2, 0};
    posemb_panel pw = {"wide", &w, 1};
    assert_int_equal(posemb_plot_lines_grid(path_in("e.png"), &pw, 1, &o, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "too wide to draw"));
    assert_int_equal(posemb_plot_lines(path_in("e.png"), &w, 1, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(count_entries("e."), 0);
}

/* The length study's PEs fall into the panels of their families, read off the PEs themselves. */
static void test_family_panels(void **state)
{
    (void)state;
    static const char *const SPECS[] = {"none",
                                        "ape",
                                        "sin",
                                        "lsin",
                                        "ape+random:max=2048",
                                        "rope",
                                        "rope:p=0.75",
                                        "xpos",
                                        "rope+random:max=2048",
                                        "alibi",
                                        "kerple",
                                        "sandwich",
                                        "fire",
                                        "t5",
                                        "cope",
                                        "fox"};
    enum { N = sizeof SPECS / sizeof SPECS[0] };
    double y[2] = {1, 2};
    posemb_series s[N], sorted[N];
    for (int k = 0; k < N; k++) s[k] = (posemb_series){.label = SPECS[k], .y = y, .n = 2};
    posemb_panel panels[STUDY_FAMILIES];
    const posemb_series *ref;
    assert_int_equal(study_panels_by_family(s, N, sorted, panels, &ref), 4);
    assert_ptr_equal(ref, &s[0]);
    const study_family want[4] = {STUDY_FAMILY_ABSOLUTE, STUDY_FAMILY_ROTARY, STUDY_FAMILY_BIAS, STUDY_FAMILY_DATA};
    const int count[4] = {4, 4, 5, 2};
    for (int p = 0; p < 4; p++) {
        assert_string_equal(panels[p].title, study_family_title(want[p]));
        assert_int_equal(panels[p].n_series, count[p]);
    }
    assert_string_equal(panels[3].series[0].label, "cope");
    assert_int_equal(study_pe_family("rpe"), STUDY_FAMILY_RELATIVE);
    assert_int_equal(study_pe_family("lsin+lsrpe"), STUDY_FAMILY_BOTH);
    assert_int_equal(study_pe_family("not-a-pe"), STUDY_FAMILY_OTHER);
    assert_int_equal(study_pe_family("tupe"), STUDY_FAMILY_BIAS); /* a logit term; its q/k hook only scales */
    assert_int_equal(study_pe_family("xpos"), STUDY_FAMILY_ROTARY);
    /* a rotary sub-head from the layer input; PoPE's polar turn in the scores hook; PaTH's data-dependent maps */
    assert_int_equal(study_pe_family("decoupled"), STUDY_FAMILY_ROTARY);
    assert_int_equal(study_pe_family("pope"), STUDY_FAMILY_ROTARY);
    assert_int_equal(study_pe_family("path"), STUDY_FAMILY_DATA);
    /* Six series stay on one axis; sixteen become the grid of four panels. */
    posemb_lines_opts o = posemb_lines_defaults();
    posemb_error err;
    assert_ok(study_lines_figure(path_in("six.png"), s, 6, &o, &err), &err);
    png_image im = png_load(path_in("six.png"));
    assert_int_equal(im.w, 640);
    cairo_surface_destroy(im.s);
    assert_ok(study_lines_figure(path_in("sixteen.png"), s, N, &o, &err), &err);
    im = png_load(path_in("sixteen.png"));
    assert_true(im.w > 2 * 330 && im.w < 3 * 330 && im.h > 2 * 230); /* 2 x 2 */
    cairo_surface_destroy(im.s);
}

/* ---- forest plots -------------------------------------------------------- */

static const posemb_forest_row FOREST[] = {
    {"A claim that holds (synthetic)", "difference of F1", 0.5, 0.1, 0.9, NAN, POSEMB_VERDICT_REPRODUCED},
    {"A confounded one (GLUE)", "difference of F1", -0.3, -0.6, -0.1, 0.4, POSEMB_VERDICT_CONFOUNDED},
    {"A claim on another scale, whose label is long enough to need a wide label column (length)",
     "log ratio of perplexities", 2, 1, 3, NAN, POSEMB_VERDICT_NOT_REPRODUCED},
    {"A point without an interval", "log ratio of perplexities", -1, NAN, NAN, NAN, POSEMB_VERDICT_REPRODUCED},
    {"Untestable here", "Spearman rho", NAN, NAN, NAN, 0.7, POSEMB_VERDICT_UNTESTABLE},
};
enum { N_FOREST = sizeof FOREST / sizeof FOREST[0] };
static const posemb_forest_opts FOREST_OPTS = {.title = "Claims & verdicts"};

/* Where row i's value v is drawn (with FOREST_OPTS). */
static void forest_at(int i, double v, double *x, double *y)
{
    plot_map m;
    posemb_error err;
    assert_ok(plot_forest_geometry(FOREST, N_FOREST, &FOREST_OPTS, i, y, &m, &err), &err);
    *x = plot_map_at(&m, v);
}

static void assert_pixel(const png_image *im, double x, double y, uint32_t rgb, int tol, const char *what)
{
    unsigned char got[3], want[3] = {rgb >> 16 & 255, rgb >> 8 & 255, rgb & 255};
    png_rgb(im, x, y, got);
    assert_rgb_near(got, want, tol, what);
}

static void test_forest(void **state)
{
    (void)state;
    posemb_error err;
    assert_ok(posemb_plot_forest(path_in("forest.png"), FOREST, N_FOREST, &FOREST_OPTS, &err), &err);
    png_image im = png_load(path_in("forest.png"));
    double x, y;
    /* Each interval in its verdict's colour, away from the markers. */
    forest_at(0, 0.2, &x, &y);
    assert_pixel(&im, x, y, plot_verdict_rgb(POSEMB_VERDICT_REPRODUCED), 6, "row 0's interval");
    forest_at(1, -0.5, &x, &y);
    assert_pixel(&im, x, y, plot_verdict_rgb(POSEMB_VERDICT_CONFOUNDED), 6, "row 1's interval");
    forest_at(2, 1.3, &x, &y);
    assert_pixel(&im, x, y, plot_verdict_rgb(POSEMB_VERDICT_NOT_REPRODUCED), 6, "row 2's interval");
    forest_at(2, 2, &x, &y); /* the estimate's marker */
    assert_pixel(&im, x, y, plot_verdict_rgb(POSEMB_VERDICT_NOT_REPRODUCED), 6, "row 2's estimate");
    /* The line at 0: one crisp pixel column in each panel, here through rows 0 and 3. */
    forest_at(0, 0, &x, &y);
    assert_pixel(&im, floor(x), y, 0x555555, 4, "the zero line, panel 1");
    assert_pixel(&im, floor(x) + 3, y, 0xf3f5f7, 4, "beside the zero line");
    forest_at(3, 0, &x, &y);
    assert_pixel(&im, floor(x), y, 0x555555, 4, "the zero line, panel 2");
    /* A point without an interval: nothing coloured halfway to 0. */
    forest_at(3, -0.5, &x, &y);
    unsigned char c[3];
    png_rgb(&im, x, y, c);
    assert_true(c[0] > 200 && c[1] > 200 && c[2] > 200);
    /* The paper's effect: an open diamond, dark edge, light inside. */
    forest_at(1, 0.4, &x, &y);
    png_rgb(&im, x, y, c);
    assert_true(c[0] > 200 && c[1] > 200);
    long dark = 0;
    for (int dy = -7; dy <= 7; dy++)
        for (int dx = -7; dx <= 7; dx++) {
            png_rgb(&im, x + dx, y + dy, c);
            dark += c[0] < 90 && c[1] < 90 && c[2] < 90;
        }
    assert_true(dark >= 12);
    cairo_surface_destroy(im.s);
    assert_ok(posemb_plot_forest(path_in("forest.svg"), FOREST, N_FOREST, &FOREST_OPTS, &err), &err);
    assert_svg_valid(path_in("forest.svg"), "Claims &amp; verdicts");

    /* Verdict names both ways. */
    for (int v = 0; v < POSEMB_VERDICT_COUNT; v++)
        assert_int_equal(posemb_verdict_from_name(posemb_verdict_name((posemb_verdict)v)), v);
    assert_int_equal(posemb_verdict_from_name("Reproduced"), -1);
    assert_null(posemb_verdict_name((posemb_verdict)4));
}

static void test_forest_errors(void **state)
{
    (void)state;
    posemb_forest_row bad[2] = {FOREST[0], FOREST[1]};
    posemb_error err;
    bad[1].lo = 1;
    bad[1].hi = 0;
    assert_int_equal(posemb_plot_forest(path_in("e.png"), bad, 2, NULL, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "lo > hi"));
    bad[1] = FOREST[1];
    bad[1].verdict = (posemb_verdict)7;
    assert_int_equal(posemb_plot_forest(path_in("e.png"), bad, 2, NULL, &err), POSEMB_EINVAL);
    bad[1] = FOREST[1];
    bad[1].effect = INFINITY;
    assert_int_equal(posemb_plot_forest(path_in("e.png"), bad, 2, NULL, &err), POSEMB_EINVAL);
    bad[1] = FOREST[1];
    bad[1].unit = NULL;
    assert_int_equal(posemb_plot_forest(path_in("e.png"), bad, 2, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_forest(path_in("e.png"), FOREST, 0, NULL, &err), POSEMB_EINVAL);
    static posemb_forest_row many[POSEMB_FOREST_MAX_ROWS + 1];
    static char units[POSEMB_FOREST_MAX_PANELS + 1][16]; /* "u" and any int */
    for (int i = 0; i <= POSEMB_FOREST_MAX_ROWS; i++) many[i] = FOREST[0];
    assert_int_equal(posemb_plot_forest(path_in("e.png"), many, POSEMB_FOREST_MAX_ROWS + 1, NULL, &err), POSEMB_EINVAL);
    for (int i = 0; i <= POSEMB_FOREST_MAX_PANELS; i++) {
        snprintf(units[i], sizeof units[i], "u%d", i);
        many[i].unit = units[i];
    }
    assert_int_equal(posemb_plot_forest(path_in("e.png"), many, POSEMB_FOREST_MAX_PANELS + 1, NULL, &err),
                     POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "units"));
    assert_int_equal(posemb_plot_forest(path_in("e.gif"), FOREST, N_FOREST, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_forest(path_in("nodir/e.png"), FOREST, N_FOREST, NULL, &err), POSEMB_EIO);
    assert_int_equal(count_entries("e."), 0);
}

/* ---- clock --------------------------------------------------------------- */

static void sin_freqs(float *f, int n, int dim)
{
    for (int k = 0; k < n; k++) f[k] = powf(10000.0f, -(float)(2 * k * (dim / 2 / n)) / (float)dim);
}

static void test_clock(void **state)
{
    (void)state;
    float f[8];
    sin_freqs(f, 8, 768);
    posemb_error err;
    assert_ok(posemb_plot_clock(path_in("clock.png"), f, 8, 512, "Clock <8>", &err), &err);
    png_image im = png_load(path_in("clock.png"));
    assert_true(im.w > 600 && im.h > 300);
    assert_true(png_variance(&im) > 100);
    /* Positions from the first (viridis' purple) to the last (yellow). */
    assert_true(png_count(&im, 0xfde725, 10) > 50);
    assert_true(png_count(&im, 0x440154, 10) > 50);
    cairo_surface_destroy(im.s);
    assert_ok(posemb_plot_clock(path_in("clock.svg"), f, 8, 512, "Clock <8>", &err), &err);
    assert_svg_valid(path_in("clock.svg"), "Clock &lt;8&gt;");
    assert_ok(posemb_plot_clock(path_in("clock.pdf"), f, 8, 512, NULL, &err), &err);
    assert_pdf(path_in("clock.pdf"));
    float one = 0.0f;
    assert_ok(posemb_plot_clock(path_in("clock1.png"), &one, 1, 1, NULL, &err), &err);
    float many[64];
    sin_freqs(many, 64, 512);
    double t0 = seconds();
    assert_ok(posemb_plot_clock(path_in("clock64.png"), many, 64, 100000, NULL, &err), &err);
    printf("clock 64 panels x 100000 positions: %.3f s\n", seconds() - t0);

    assert_int_equal(posemb_plot_clock(path_in("c.png"), f, 0, 10, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_clock(path_in("c.png"), f, 8, 0, NULL, &err), POSEMB_EINVAL);
    f[3] = NAN;
    assert_int_equal(posemb_plot_clock(path_in("c.png"), f, 8, 10, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_plot_clock(path_in("c.bmp"), many, 8, 10, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(count_entries("c."), 0);
}

/* ---- report -------------------------------------------------------------- */

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes n base64 characters (padded); returns the byte count or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *out)
{
    if (n % 4) return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if ((v[k] = b64_value(s[i + k])) < 0 || pad) {
                return -1;
            }
        }
        unsigned long w = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 | (unsigned long)v[2] << 6 | v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2) out[o++] = (unsigned char)(w >> 8);
        if (pad < 1) out[o++] = (unsigned char)w;
    }
    return o;
}

static void test_report(void **state)
{
    (void)state;
    posemb_error err;
    float *m = similarity(40);
    assert_ok(posemb_plot_heatmap(path_in("r.png"), m, 40, 40, NULL, &err), &err);
    free(m);

    posemb_report *r = posemb_report_new("Report <1>");
    assert_non_null(r);
    posemb_report_heading(r, 1, "Results & <discussion>");
    posemb_report_paragraph(r, "a < b and c > \"d\"\nsecond line");
    const char *head[3] = {"PE", "TI", "note"};
    const char *cells[6] = {"sin",
                            "1.000",
                            "<exact>",
                            "ape",
                            "\xe2\x88\x92"
                            "0.002",
                            NULL};
    posemb_report_table(r, head, 3, cells, 2, "Indicators");
    posemb_report_html(r, "<p class=\"raw\">trusted</p>");
    assert_ok(posemb_report_image(r, path_in("r.png"), "Similarity <sin>", &err), &err);
    assert_ok(posemb_report_image(r, path_in("r.png"), NULL, &err), &err);
    posemb_report_pre(r, "posemb analyze --pe sin <x>");
    assert_int_equal(posemb_report_image(r, path_in("absent.png"), "x", &err), POSEMB_EIO);
    assert_int_equal(tu_write_file(path_in("fake.png"), "GIF89a not a png at all", 23), 0);
    assert_int_equal(posemb_report_image(r, path_in("fake.png"), "x", &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "fake.png"));
    assert_ok(posemb_report_write(r, path_in("report.html"), &err), &err);
    assert_int_equal(posemb_report_write(r, path_in("nodir/report.html"), &err), POSEMB_EIO);
    posemb_report_free(r);

    char *html = slurp(path_in("report.html"), NULL);
    assert_memory_equal(html, "<!DOCTYPE html>", 15);
    assert_non_null(strstr(html, "<title>Report &lt;1&gt;</title>"));
    assert_non_null(strstr(html, "<h1>Results &amp; &lt;discussion&gt;</h1>"));
    assert_non_null(strstr(html, "a &lt; b and c &gt; &quot;d&quot;<br>"));
    assert_non_null(strstr(html, "<td>&lt;exact&gt;</td>"));
    assert_non_null(strstr(html, "<td class=\"num\">1.000</td>")); /* numbers right-aligned */
    assert_non_null(strstr(html, "<th class=\"num\">TI</th>"));
    assert_non_null(strstr(html, "<caption>Indicators</caption>"));
    assert_non_null(strstr(html, "<p class=\"raw\">trusted</p>"));
    assert_non_null(strstr(html, "<figcaption>Similarity &lt;sin&gt;</figcaption>"));
    assert_non_null(strstr(html, "<pre>posemb analyze --pe sin &lt;x&gt;</pre>"));
    assert_non_null(strstr(html, "<style>"));
    assert_null(strstr(html, "<link")); /* self-contained */
    assert_null(strstr(html, "src=\"http"));

    /* The embedded image decodes back to the PNG's bytes. */
    const char *uri = "data:image/png;base64,";
    const char *b = strstr(html, uri);
    assert_non_null(b);
    b += strlen(uri);
    size_t n = strcspn(b, "\"");
    size_t png_n;
    char *png = slurp(path_in("r.png"), &png_n);
    unsigned char *dec = malloc(n);
    assert_non_null(dec);
    long got = b64_decode(b, n, dec);
    assert_int_equal(got, (long)png_n);
    assert_memory_equal(dec, png, png_n);
    /* Both figures in one grid. */
    const char *grid = strstr(html, "<div class=\"figures\">");
    assert_non_null(grid);
    assert_null(strstr(grid + 1, "<div class=\"figures\">"));
    free(dec);
    free(png);
    free(html);

    /* A NULL report (out of memory in posemb_report_new) is ignored, then reported. */
    posemb_report_heading(NULL, 1, "x");
    posemb_report_table(NULL, head, 3, cells, 2, NULL);
    assert_int_equal(posemb_report_write(NULL, path_in("null.html"), &err), POSEMB_ENOMEM);
    assert_false(file_exists(path_in("null.html")));
    posemb_report_free(NULL);
}

static void test_base64_lengths(void **state)
{
    (void)state;
    /* Files of 1..5 bytes after the PNG header exercise every padding case. */
    static const unsigned char head[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                                           'I',  'H', 'D', 'R', 0,    0,    0,    1,    0, 0, 0, 1};
    for (int extra = 0; extra < 6; extra++) {
        unsigned char d[32];
        memcpy(d, head, 24);
        for (int k = 0; k < extra; k++) d[24 + k] = (unsigned char)(0xf0 + 37 * k);
        size_t len = 24 + (size_t)extra;
        assert_int_equal(tu_write_file(path_in("b.png"), d, len), 0);
        posemb_report *r = posemb_report_new("b");
        posemb_error err;
        assert_ok(posemb_report_image(r, path_in("b.png"), "b", &err), &err);
        assert_ok(posemb_report_write(r, path_in("b.html"), &err), &err);
        posemb_report_free(r);
        char *html = slurp(path_in("b.html"), NULL);
        const char *b = strstr(html, "base64,") + 7;
        size_t n = strcspn(b, "\"");
        assert_int_equal(n, (len + 2) / 3 * 4);
        unsigned char dec[64];
        assert_int_equal(b64_decode(b, n, dec), (long)len);
        assert_memory_equal(dec, d, len);
        assert_non_null(strstr(html, "width=\"1\" height=\"1\""));
        free(html);
    }
}

/* ---- a gallery to look at ------------------------------------------------ */

static void test_gallery(void **state)
{
    (void)state;
    const char *keep = getenv("POSEMB_PLOT_DIR");
    const char *dir = keep && *keep ? keep : g_dir;
    char p[1024];
    posemb_error err;
    posemb_report *r = posemb_report_new("posemb figures");
    posemb_report_heading(r, 1, "posemb figures");
    posemb_report_paragraph(r, "Heatmaps, line plots, the clock of sinusoidal PEs and a forest plot.");
    const char *exts[3] = {"png", "svg", "pdf"};

    float *m = similarity(512);
    posemb_heatmap_opts o = posemb_heatmap_defaults();
    o.title = "Position similarity cos((i \xe2\x88\x92 j) / 20)";
    o.xlabel = "position j";
    o.ylabel = "position i";
    o.cbar_label = "similarity";
    for (int e = 0; e < 3; e++) {
        snprintf(p, sizeof p, "%s/similarity.%s", dir, exts[e]);
        assert_ok(posemb_plot_heatmap(p, m, 512, 512, &o, &err), &err);
    }
    free(m);
    snprintf(p, sizeof p, "%s/similarity.png", dir);
    assert_ok(posemb_report_image(r, p, "Similarity of a sinusoidal PE", &err), &err);

    enum { H = 12, K = 32 };
    float d[H * (2 * K + 1)];
    for (int h = 0; h < H; h++)
        for (int j = 0; j <= 2 * K; j++)
            d[h * (2 * K + 1) + j] = (float)(-(h + 1) * 0.08 * abs(j - K) + 0.6 * sin(j * 0.3 + h));
    o = posemb_heatmap_defaults();
    o.cmap = POSEMB_CMAP_DIVERGING;
    o.title = "Relative position bias per head";
    o.xlabel = "offset j \xe2\x88\x92 i";
    o.ylabel = "head";
    o.cbar_label = "bias";
    o.x0 = -K;
    for (int e = 0; e < 3; e++) {
        snprintf(p, sizeof p, "%s/bias.%s", dir, exts[e]);
        assert_ok(posemb_plot_heatmap(p, d, H, 2 * K + 1, &o, &err), &err);
    }
    snprintf(p, sizeof p, "%s/bias.png", dir);
    assert_ok(posemb_report_image(r, p, "A signed table on the diverging map", &err), &err);

    enum { N = 300 };
    double x[N], y1[N], y2[N], y3[N];
    for (int i = 0; i < N; i++) {
        x[i] = i * 20;
        y1[i] = 1 - exp(-i / 40.0);
        y2[i] = 0.5 + 0.35 * cos(i / 25.0) * exp(-i / 200.0);
        y3[i] = 0.3 + 0.5 * i / N + 0.05 * sin(i * 1.7);
    }
    posemb_series s[3] = {{"TI", x, y1, N, 0}, {"MONO", x, y2, N, 2}, {"SYM", x, y3, N, 1}};
    posemb_lines_opts lo = posemb_lines_defaults();
    lo.title = "Indicators over training";
    lo.xlabel = "step";
    lo.ylabel = "indicator";
    for (int e = 0; e < 3; e++) {
        snprintf(p, sizeof p, "%s/lines.%s", dir, exts[e]);
        assert_ok(posemb_plot_lines(p, s, 3, &lo, &err), &err);
    }
    snprintf(p, sizeof p, "%s/lines.png", dir);
    assert_ok(posemb_report_image(r, p, "Three series with a legend", &err), &err);

    float f[8];
    sin_freqs(f, 8, 768);
    for (int e = 0; e < 3; e++) {
        snprintf(p, sizeof p, "%s/clock.%s", dir, exts[e]);
        assert_ok(posemb_plot_clock(p, f, 8, 512, "Sinusoidal PE: 8 of its 384 frequencies", &err), &err);
    }
    snprintf(p, sizeof p, "%s/clock.png", dir);
    assert_ok(posemb_report_image(r, p, "The clock", &err), &err);

    for (int e = 0; e < 3; e++) {
        snprintf(p, sizeof p, "%s/forest.%s", dir, exts[e]);
        assert_ok(posemb_plot_forest(p, FOREST, N_FOREST, &FOREST_OPTS, &err), &err);
    }
    snprintf(p, sizeof p, "%s/forest.png", dir);
    assert_ok(posemb_report_image(r, p, "A forest plot of claims (a wide figure: a row of its own)", &err), &err);

    const char *head[3] = {"figure", "format", "size"};
    const char *cells[6] = {"similarity", "png", "512 x 512", "clock", "png", "8 panels"};
    posemb_report_table(r, head, 3, cells, 2, "Figures");
    snprintf(p, sizeof p, "%s/report.html", dir);
    assert_ok(posemb_report_write(r, p, &err), &err);
    posemb_report_free(r);
    char *html = slurp(p, NULL);
    assert_non_null(strstr(html, "<figure class=\"wide\">")); /* the forest plot, 1000+ wide */
    free(html);
    if (keep && *keep) printf("gallery in %s\n", keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmap),
        cmocka_unit_test(test_ticks),
        cmocka_unit_test(test_heatmap_png_size),
        cmocka_unit_test(test_heatmap_viridis_extremes),
        cmocka_unit_test(test_heatmap_diverging),
        cmocka_unit_test(test_heatmap_nan),
        cmocka_unit_test(test_heatmap_formats),
        cmocka_unit_test(test_heatmap_errors),
        cmocka_unit_test(test_heatmap_names),
        cmocka_unit_test(test_heatmap_speed),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_series_looks),
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_grid_looks_by_label),
        cmocka_unit_test(test_grid_free_x),
        cmocka_unit_test(test_family_panels),
        cmocka_unit_test(test_forest),
        cmocka_unit_test(test_forest_errors),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_base64_lengths),
        cmocka_unit_test(test_gallery),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
