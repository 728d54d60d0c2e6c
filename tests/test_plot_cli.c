/* posemb plot forest and lines, and the CSV reader under them: quoted
 * fields, CRLF, a BOM and line numbers read right; every malformed claims
 * or points table refused with exit 1, one line on stderr naming the file,
 * the line and the problem, and no figure (nor a temporary) left behind;
 * usage errors exit 2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include "formats/csv.h"
#include "testutil.h"

static char out[1 << 16];
static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static const char *in_dir(const char *name)
{
    static char buf[2][1024];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_text(const char *name, const char *text)
{
    assert_int_equal(tu_write_file(in_dir(name), text, strlen(text)), 0);
}

static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plot %s", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

/* Entries of the directory whose name starts with prefix (temporaries included). */
static int entries(const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

static const char HEADER[] = "claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect,verdict\n";

/* ---- the CSV reader ------------------------------------------------------ */

static void test_csv_reader(void **state)
{
    (void)state;
    write_text("t.csv", "\xef\xbb\xbf"
                        "a,b,c\r\n"
                        "1,\"x, y\",\"say \"\"hi\"\"\"\r\n"
                        "2,\"two\nlines\",\r\n"
                        ",,last\n\n\n");
    posemb_csv t;
    posemb_error err;
    if (posemb_csv_read(in_dir("t.csv"), 10, &t, &err)) fail_msg("%s", err.msg);
    assert_int_equal(t.n_cols, 3);
    assert_int_equal(t.n_rows, 3);
    assert_string_equal(t.header[0], "a");
    assert_string_equal(t.header[2], "c");
    assert_string_equal(t.cells[1], "x, y");
    assert_string_equal(t.cells[2], "say \"hi\"");
    assert_string_equal(t.cells[4], "two\nlines");
    assert_string_equal(t.cells[5], "");
    assert_string_equal(t.cells[6], "");
    assert_string_equal(t.cells[8], "last");
    assert_int_equal(t.line[0], 2);
    assert_int_equal(t.line[1], 3);
    assert_int_equal(t.line[2], 5); /* after a field of two lines */
    assert_int_equal(posemb_csv_column(&t, "b"), 1);
    assert_int_equal(posemb_csv_column(&t, "z"), -1);
    posemb_csv_free(&t);

    static const struct {
        const char *text, *want;
    } BAD[] = {
        {"", "empty"},
        {"a,b\n1,2\n3\n", "t.csv:3: 1 field where the header has 2"},
        {"a,b\n1,2,3\n", "t.csv:2: 3 fields"},
        {"a,b\n1,x\"y\n", "t.csv:2: a quote inside a field"},
        {"a,b\n1,\"xy\"z\n", "t.csv:2: text after a field's closing quote"},
        {"a,b\n1,\"xy\n", "t.csv:2: a quoted field that is never closed"},
        {"a,a\n1,2\n", "t.csv:1: column 'a' twice"},
        {"a,\n1,2\n", "t.csv:1: column 2 has no name"},
        {"a,b\n1,2\n\n3,4\n", "t.csv:3: an empty line"},
        {"a\n1\n2\n3\n", "t.csv:4: more than 2 rows"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        write_text("t.csv", BAD[i].text);
        assert_int_equal(posemb_csv_read(in_dir("t.csv"), 2, &t, &err), POSEMB_EFORMAT);
        if (!strstr(err.msg, BAD[i].want)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, BAD[i].want);
        assert_null(t.cells);
    }
    assert_int_equal(posemb_csv_read(in_dir("absent.csv"), 2, &t, &err), POSEMB_EIO);
}

/* ---- posemb plot forest -------------------------------------------------- */

static void test_forest_cli(void **state)
{
    (void)state;
    char csv[2048];
    snprintf(csv, sizeof csv,
             "claim_id,note,%s"
             "C1,,\"Relative PEs beat absolute PEs, on spans\",synthetic,difference of F1,0.04,0.01,0.07,0.03,"
             "reproduced\n"
             "C2,\"tokenizer \"\"differs\"\"\",APE length,GPT-2,log ratio,-0.3,-0.5,-0.1,,\"reproduced, confounded\"\n"
             "C3,,Untested,GLUE,Spearman rho,,,,0.7,untestable here\n",
             HEADER);
    /* claim_id and note: known columns, not drawn. */
    write_text("claims.csv", csv);
    assert_int_equal(run("forest claims.csv --out f.png --title 'Claims'"), 0);
    assert_non_null(strstr(out, "wrote f.png (3 rows)"));
    assert_int_equal(run("forest claims.csv --out f.svg"), 0);
    assert_int_equal(entries("f."), 2);
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "usage: posemb plot forest"));
}

/* Each malformed table: exit 1, one line naming the file, its line and the problem, no figure. */
static void test_forest_cli_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } BAD[] = {
        {"claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect\nc,t,u,1,0,2,1\n", "bad.csv:1: no column 'verdict'"},
        {"claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect,verdict,colour\nc,t,u,1,0,2,1,reproduced,red\n",
         "bad.csv:1: unknown column 'colour'"},
        {"H|c,t,u,1,0,2,1\n", "bad.csv:2: 7 fields where the header has 8"},
        {"H|c,t,u,one,0,2,1,reproduced\n", "bad.csv:2: effect 'one' is not a number"},
        {"H|c,t,u,1,0,2,1,reproduced\nc,t,u,1,0,2,nan,reproduced\n", "bad.csv:3: paper_effect 'nan' is not a number"},
        {"H|c,t,u,1,0,2,1,maybe\n", "bad.csv:2: verdict 'maybe' is not one of"},
        {"H|c,t,u,1,2,0,1,reproduced\n", "bad.csv:2: ci_lo 2 > ci_hi 0"},
        {"H|c,t,u,1,0,,1,reproduced\n", "bad.csv:2: ci_lo and ci_hi"},
        {"H|,t,u,1,0,2,1,reproduced\n", "bad.csv:2: empty claim"},
        {"H|\"c,t,u,1,0,2,1,reproduced\n", "bad.csv:2: a quoted field that is never closed"},
        {"H|", "bad.csv: no claims"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char text[1024]; /* "H|": the claims header, then the rest */
        const char *t = BAD[i].text;
        snprintf(text, sizeof text, "%s%s", strncmp(t, "H|", 2) ? "" : HEADER, strncmp(t, "H|", 2) ? t : t + 2);
        write_text("bad.csv", text);
        int rc = run("forest bad.csv --out bad.png ");
        if (rc != 1) fail_msg("case %zu: exit %d, want 1: %s", i, rc, out);
        if (!strstr(out, BAD[i].want)) fail_msg("case %zu: '%s' lacks '%s'", i, out, BAD[i].want);
        assert_non_null(strstr(out, "posemb plot: "));
        if (strchr(out, '\n') != out + strlen(out) - 1) fail_msg("case %zu: more than one line: %s", i, out);
        assert_int_equal(entries("bad.png"), 0);
    }
    /* More rows than a figure holds. */
    FILE *f = fopen(in_dir("bad.csv"), "w");
    assert_non_null(f);
    fputs(HEADER, f);
    for (int i = 0; i < 401; i++) fprintf(f, "claim %d,t,u,1,0,2,,reproduced\n", i);
    fclose(f);
    assert_int_equal(run("forest bad.csv --out bad.png"), 1);
    assert_non_null(strstr(out, "bad.csv:402: more than 400 rows"));
    assert_int_equal(entries("bad.png"), 0);
    /* Usage errors: exit 2. */
    write_text("ok.csv", "claim,testbed,unit,effect,ci_lo,ci_hi,paper_effect,verdict\nc,t,u,1,0,2,,reproduced\n");
    assert_int_equal(run("forest ok.csv"), 2);
    assert_non_null(strstr(out, "--out"));
    assert_int_equal(run("forest ok.csv --out x.gif"), 2);
    assert_int_equal(run("violin ok.csv --out x.png"), 2);
    assert_int_equal(run("forest ok.csv --out x.png --colour red"), 2);
    assert_int_equal(run("forest absent.csv --out x.png"), 1);
    assert_non_null(strstr(out, "absent.csv"));
    assert_int_equal(entries("x."), 0);
}

/* ---- posemb plot lines --------------------------------------------------- */

static const char POINTS[] = "series,panel,x,y\n" /* columns in any order */
                             "s1,a,1,2\n"
                             "s2,a,1,1\n"
                             "s1,a,2,3\n"
                             "\"s3, quoted\",b,1,0\n"
                             "\"s3, quoted\",b,2,\n" /* y empty: the line breaks */
                             "\"s3, quoted\",b,3,1e-1\n"
                             "ref,,1,1\n"
                             "ref,,3,2\n";

static void test_lines_cli(void **state)
{
    (void)state;
    write_text("p.csv", POINTS);
    assert_int_equal(run("lines p.csv --out l.png --reference ref --xlabel step --ylabel cost --title T --cols 2 "
                         "--markers"),
                     0);
    assert_non_null(strstr(out, "wrote l.png (2 panels, 3 series and the reference, 8 points)"));
    /* The series are a panel's (label, panel): the same label in two panels is two series. */
    write_text("q.csv", "panel,series,x,y\na,s,1,1\nb,s,1,2\nb,s,2,2\na,s,2,0\n");
    assert_int_equal(run("lines q.csv --out l.svg"), 0);
    assert_non_null(strstr(out, "wrote l.svg (2 panels, 2 series, 4 points)"));
    assert_int_equal(run("lines q.csv --out free.png --free-x"), 0); /* each panel its own x axis (test_plot) */
    assert_non_null(strstr(out, "wrote free.png (2 panels, 2 series, 4 points)"));
    write_text("one.csv", "panel,series,x,y\na,s,1,1\n");
    assert_int_equal(run("lines one.csv --out l.pdf"), 0);
    assert_non_null(strstr(out, "wrote l.pdf (1 panel, 1 series, 1 point)"));
    assert_int_equal(entries("l."), 3);
    assert_int_equal(entries("free."), 1);
}

/* Each malformed points table: exit 1, one line naming the file, its line and the problem, no figure. */
static void test_lines_cli_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } BAD[] = {
        {"panel,series,x\na,s,1\n", "bad.csv:1: no column 'y'"},
        {"panel,series,x,y,colour\na,s,1,1,red\n", "bad.csv:1: unknown column 'colour'"},
        {"panel,series,x,y\n", "bad.csv:1: no points"},
        {"panel,series,x,y\na,s,1,1\na,s,,1\n", "bad.csv:3: empty x"},
        {"panel,series,x,y\na,s,one,1\n", "bad.csv:2: x 'one' is not a number"},
        {"panel,series,x,y\na,s,1,inf\n", "bad.csv:2: y 'inf' is not a number"},
        {"panel,series,x,y\na,,1,1\n", "bad.csv:2: empty series"},
        {"panel,series,x,y\na,s,1,1\n,s,2,1\n", "bad.csv:3: empty panel"},
        {"panel,series,x,y\na,s,2,1\nb,s,1,1\na,s,2,5\n", "bad.csv:4: x 2 does not follow 2"},
        {"panel,series,x,y\na,ref,1,1\n", "bad.csv:2: the reference series 'ref' has panel 'a'"},
        {"panel,series,x,y\na,s,1,1\n", "bad.csv:1: no row of the reference series 'ref'"},
        {"panel,series,x,y\n,ref,1,1\n", "bad.csv:1: no series but the reference"},
        {"panel,series,x,y\na,s,1,\n,ref,1,\n", "bad.csv: every y is empty"},
        {"panel,series,x,y\na,s,0x10,1\n", "bad.csv:2: x '0x10' is not a number"},
        {"panel,series,x,y\na,s,\" 1\",1\n", "bad.csv:2: x ' 1' is not a number"},
        {"panel,series,x,y\na,s,1234566.5,1\na,s,1234566.4,1\n", "bad.csv:3: x 1234566.4 does not follow 1234566.5"},
        {"panel,series,x,y\na,s,1,1e308\na,s,2,-1e308\n,ref,1,1\n", "too wide to draw (from bad.csv)"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        write_text("bad.csv", BAD[i].text);
        int rc = run("lines bad.csv --out bad.png --reference ref");
        if (rc != 1) fail_msg("case %zu: exit %d, want 1: %s", i, rc, out);
        if (!strstr(out, BAD[i].want)) fail_msg("case %zu: '%s' lacks '%s'", i, out, BAD[i].want);
        if (strchr(out, '\n') != out + strlen(out) - 1) fail_msg("case %zu: more than one line: %s", i, out);
        assert_int_equal(entries("bad.png"), 0);
    }
    /* One panel and one series too many, each reported at the row that brings it. */
    FILE *f = fopen(in_dir("bad.csv"), "w");
    assert_non_null(f);
    fputs("panel,series,x,y\n", f);
    for (int i = 0; i < 25; i++) fprintf(f, "p%d,s,1,1\n", i);
    fclose(f);
    assert_int_equal(run("lines bad.csv --out bad.png"), 1);
    assert_non_null(strstr(out, "bad.csv:26: panel 'p24' is one more than the 24 panels"));
    f = fopen(in_dir("bad.csv"), "w");
    assert_non_null(f);
    fputs("panel,series,x,y\n", f);
    for (int i = 0; i < 41; i++) fprintf(f, "p,s%d,1,1\n", i);
    fclose(f);
    assert_int_equal(run("lines bad.csv --out bad.png"), 1);
    assert_non_null(strstr(out, "bad.csv:42: series 's40' is one more than the 40 series"));
    assert_int_equal(entries("bad.png"), 0);
    /* Usage errors: exit 2. */
    write_text("ok.csv", "panel,series,x,y\na,s,1,1\n");
    assert_int_equal(run("lines ok.csv --out x.png --cols 0"), 2);
    assert_int_equal(run("lines ok.csv --out x.png --reference"), 2);
    assert_int_equal(run("lines ok.csv --out x.png --reference ''"), 2);
    assert_int_equal(run("forest ok.csv --out x.png --xlabel step"), 2);
    assert_non_null(strstr(out, "are for 'lines', not 'forest'"));
    assert_int_equal(run("forest ok.csv --out x.png --free-x"), 2);
    assert_non_null(strstr(out, "--markers and --free-x are for 'lines', not 'forest'"));
    assert_int_equal(run("lines --out x.png"), 2);
    assert_non_null(strstr(out, "missing POINTS.csv"));
    assert_int_equal(entries("x."), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_reader),        cmocka_unit_test(test_forest_cli),
        cmocka_unit_test(test_forest_cli_errors), cmocka_unit_test(test_lines_cli),
        cmocka_unit_test(test_lines_cli_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
