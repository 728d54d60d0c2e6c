/* cli_outdir: the names in a folder before a command writes to it, so that a
 * failed start can remove exactly what it added. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int was_there(const cli_outdir *o, const char *name)
{
    return o->n_before && bsearch(&name, o->before, (size_t)o->n_before, sizeof *o->before, by_name) != NULL;
}

static posemb_status list_names(cli_outdir *o, DIR *d, posemb_error *err)
{
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (o->n_before == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(o->before, (size_t)cap * sizeof *grown);
            if (!grown) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", o->path);
            o->before = grown;
        }
        if (!(o->before[o->n_before] = strdup(e->d_name)))
            return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", o->path);
        o->n_before++;
    }
    /* An empty folder leaves before NULL, which qsort may not be given. */
    if (o->n_before > 1) qsort(o->before, (size_t)o->n_before, sizeof *o->before, by_name);
    return POSEMB_OK;
}

posemb_status cli_outdir_open(cli_outdir *o, const char *path, posemb_error *err)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    DIR *d = opendir(path);
    if (d) {
        posemb_status st = list_names(o, d, err);
        closedir(d);
        if (st) cli_outdir_keep(o);
        return st;
    }
    if (errno != ENOENT) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (mkdir(path, 0755)) return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", path, strerror(errno));
    o->created = 1;
    return POSEMB_OK;
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    remove(p);
    return 0;
}

void cli_outdir_restore(cli_outdir *o)
{
    if (!o->path) return; /* never opened */
    /* The names now, read in full before removing any (readdir is unspecified
     * for entries removed while it runs). */
    cli_outdir now = {.path = o->path};
    DIR *d = opendir(o->path);
    posemb_status st = d ? list_names(&now, d, NULL) : POSEMB_OK;
    if (d) closedir(d);
    char p[POSEMB_PATH_MAX];
    for (int i = 0; !st && i < now.n_before; i++) {
        if (was_there(o, now.before[i])) continue;
        int len = snprintf(p, sizeof p, "%s/%s", o->path, now.before[i]);
        if (len > 0 && len < (int)sizeof p) nftw(p, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    cli_outdir_keep(&now);
    if (o->created) rmdir(o->path);
    cli_outdir_keep(o);
}

void cli_outdir_keep(cli_outdir *o)
{
    for (int i = 0; i < o->n_before; i++) free(o->before[i]);
    free(o->before);
    memset(o, 0, sizeof *o);
}
