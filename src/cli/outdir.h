/* An output folder that a command gives back as it found it when the
 * command fails before it has made anything worth keeping (a training run
 * that cannot start leaves no run.json or token cache behind). */
#ifndef POSEMB_CLI_OUTDIR_H
#define POSEMB_CLI_OUTDIR_H

#include "posemb/error.h"

typedef struct cli_outdir {
    const char *path; /* the caller's string, kept as given */
    int created;      /* the folder did not exist before */
    char **before;    /* names of the entries it held before, sorted */
    int n_before;
} cli_outdir;

/* Records what path holds and creates it when missing. On failure nothing
 * is created and err names the folder. */
posemb_status cli_outdir_open(cli_outdir *o, const char *path, posemb_error *err);
/* Removes every entry that was not there at open (whole trees), and the
 * folder itself when open created it; then frees o. */
void cli_outdir_restore(cli_outdir *o);
/* Keeps everything; frees o. */
void cli_outdir_keep(cli_outdir *o);

#endif
