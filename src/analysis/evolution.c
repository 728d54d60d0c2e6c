/* How a PE's properties develop during training: one matrix per saved checkpoint. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/analyze.h"
#include "core/fileio.h"
#include "posemb/model.h"
#include "plot/plot.h"
#include "plot/report.h"
#include "model/model_internal.h"

/* The matrix that describes a checkpoint's PE: APE similarity, else relative vectors'. */
static posemb_status step_matrix(const posemb_source *s, float **m, int *n, posemb_error *err)
{
    int rows = s->ape ? s->n : s->rel ? s->rel_rows : 0;
    if (!rows)
        return posemb_fail(err, POSEMB_EINVAL, "%s: its PE %s has no table of positions to follow", s->name, s->spec);
    *m = malloc((size_t)rows * rows * sizeof **m);
    if (!*m) return posemb_fail(err, POSEMB_ENOMEM, "evolution: out of memory");
    posemb_similarity(s->ape ? s->ape : s->rel, rows, s->ape ? s->dim : s->rel_dim, 0, *m);
    *n = rows;
    return POSEMB_OK;
}

static posemb_status write_outputs(const char *out, const long *steps, const posemb_indicators *ind, int n,
                                   const char *spec, int K, posemb_error *err)
{
    char path[POSEMB_PATH_MAX], line[256];
    size_t cap = (size_t)n * 160 + 256, len = 0;
    char *text = malloc(cap);
    if (!text) return posemb_fail(err, POSEMB_ENOMEM, "evolution: out of memory");
    len += (size_t)snprintf(text, cap, "step,ti,mono,mono_fwd,mono_bwd,window,sym");
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line, "\n%ld,%.6f,%.6f,%.6f,%.6f,%d,%.6f", steps[i], ind[i].ti, ind[i].mono,
                 ind[i].mono_fwd, ind[i].mono_bwd, ind[i].window, ind[i].sym);
        len += (size_t)snprintf(text + len, cap - len, "%s", line);
    }
    posemb_status st = posemb_path_join(path, sizeof path, out, "evolution.csv")
                           ? posemb_fail(err, POSEMB_EINVAL, "path too long")
                           : posemb_write_text(path, text, err);
    len = (size_t)snprintf(text, cap, "{\"spec\": \"%s\", \"K\": %d, \"steps\": [", spec, K);
    for (int i = 0; i < n && !st; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"step\": %ld, \"ti\": %.6f, \"mono\": %.6f, \"window\": %d, \"sym\": %.6f}",
                                i ? ", " : "", steps[i], ind[i].ti, ind[i].mono, ind[i].window, ind[i].sym);
    snprintf(text + len, cap - len, "]}");
    if (!st && posemb_path_join(path, sizeof path, out, "evolution.json"))
        st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st) st = posemb_write_text(path, text, err);
    free(text);
    return st;
}

static posemb_status indicator_plot(const char *out, const long *steps, const posemb_indicators *ind, int n,
                                    posemb_error *err)
{
    double *x = malloc((size_t)n * 4 * sizeof *x);
    if (!x) return posemb_fail(err, POSEMB_ENOMEM, "evolution: out of memory");
    double *ti = x + n, *mono = x + 2 * n, *sym = x + 3 * n;
    for (int i = 0; i < n; i++) {
        x[i] = (double)steps[i];
        ti[i] = ind[i].ti;
        mono[i] = ind[i].mono;
        sym[i] = ind[i].sym;
    }
    posemb_series s[3] = {{"TI", x, ti, n, 2}, {"MONO", x, mono, n, 2}, {"SYM", x, sym, n, 2}};
    posemb_lines_opts o = posemb_lines_defaults();
    o.title = "Indicators during training";
    o.xlabel = "training step";
    o.ylabel = "indicator";
    o.ymin = 0;
    o.ymax = 1.05;
    char path[POSEMB_PATH_MAX];
    posemb_status st = posemb_path_join(path, sizeof path, out, "evolution.png")
                           ? posemb_fail(err, POSEMB_EINVAL, "path too long")
                           : posemb_plot_lines(path, s, 3, &o, err);
    free(x);
    return st;
}

/* The indicators, figures and report of the complete checkpoints steps[0..n). */
static posemb_status evolution_of(const char *run, const char *out_dir, const posemb_source_opts *so,
                                  const posemb_analyze_opts *o, const long *steps, int n, posemb_error *err)
{
    if (mkdir(out_dir, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", out_dir, strerror(errno));
    posemb_indicators *ind = calloc((size_t)n, sizeof *ind);
    posemb_report *rep = posemb_report_new("posemb: a PE during training");
    if (!ind || !rep) {
        free(ind);
        posemb_report_free(rep);
        return posemb_fail(err, POSEMB_ENOMEM, "evolution: out of memory");
    }
    posemb_status st = POSEMB_OK;
    char spec[400] = "", path[POSEMB_PATH_MAX], name[96], title[160];
    int shown = 0;
    for (int i = 0; !st && i < n; i++) {
        char dir[POSEMB_PATH_MAX];
        posemb_source s;
        float *m = NULL;
        int rows = 0;
        if (posemb_checkpoint_dir(dir, sizeof dir, run, steps[i])) {
            st = posemb_fail(err, POSEMB_EINVAL, "%s: path too long", run);
            break;
        }
        if ((st = posemb_source_open(&s, dir, so, err))) break;
        snprintf(spec, sizeof spec, "%s", s.spec);
        st = step_matrix(&s, &m, &rows, err);
        if (!st) st = posemb_indicators_compute(m, rows, o->K, &ind[i], err);
        int show = n <= 8 || i * 7 % (n - 1) < 7 || i == n - 1; /* about 8 evenly spread */
        if (!st && show && shown < 8) {
            posemb_heatmap_opts h = posemb_heatmap_defaults();
            snprintf(title, sizeof title, "Similarity at step %ld", steps[i]);
            h.title = title;
            h.xlabel = "position";
            h.ylabel = "position";
            h.vmin = h.vmax = NAN;
            h.x0 = h.y0 = s.ape ? 0 : s.rel_x0;
            snprintf(name, sizeof name, "similarity_step%ld.png", steps[i]);
            if (posemb_path_join(path, sizeof path, out_dir, name))
                st = posemb_fail(err, POSEMB_EINVAL, "path too long");
            if (!st) st = posemb_plot_heatmap(path, m, rows, rows, &h, err);
            if (!st) st = posemb_report_image(rep, path, title, err);
            shown++;
        }
        free(m);
        posemb_source_close(&s);
    }
    if (!st) st = write_outputs(out_dir, steps, ind, n, spec, o->K, err);
    if (!st) st = indicator_plot(out_dir, steps, ind, n, err);
    if (!st && !posemb_path_join(path, sizeof path, out_dir, "evolution.png"))
        st = posemb_report_image(rep, path, "TI, MONO and SYM over training", err);
    if (!st && posemb_path_join(path, sizeof path, out_dir, "report.html"))
        st = posemb_fail(err, POSEMB_EINVAL, "path too long");
    if (!st) st = posemb_report_write(rep, path, err);
    if (!st && !o->quiet)
        printf("%s: %d checkpoints of PE %s; step %ld: TI %.3f MONO %.3f SYM %.3f -> step %ld: TI %.3f MONO %.3f SYM "
               "%.3f\n",
               run, n, spec, steps[0], ind[0].ti, ind[0].mono, ind[0].sym, steps[n - 1], ind[n - 1].ti, ind[n - 1].mono,
               ind[n - 1].sym);
    free(ind);
    posemb_report_free(rep);
    return st;
}

posemb_status posemb_evolution(const char *run, const char *out_dir, const posemb_source_opts *so,
                               const posemb_analyze_opts *o, posemb_error *err)
{
    long *steps;
    int n = posemb_checkpoint_steps(run, 1, &steps);
    if (n < 0) return posemb_fail(err, POSEMB_EIO, "%s: cannot read folder: %s", run, strerror(errno));
    if (n == 0)
        return posemb_fail(err, POSEMB_EINVAL, "%s: no checkpoints (train with 'posemb train --keep N' to keep them)",
                           run);
    posemb_status st = evolution_of(run, out_dir, so, o, steps, n, err);
    free(steps);
    return st;
}
