/* Writing files whole or not at all: output goes to "PATH.tmp.PID" and is
 * renamed onto PATH only when complete, so a crash or a kill never leaves a
 * partial file under the real name. */
#ifndef POSEMB_FILEIO_H
#define POSEMB_FILEIO_H

#include "posemb/api.h"

#include <stdio.h>

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* POSEMB_PATH_MAX: posemb/api.h. */

typedef struct posemb_atomic_file {
    FILE *f;
    char path[POSEMB_PATH_MAX], tmp[POSEMB_PATH_MAX];
} posemb_atomic_file;

/* Opens the temporary file for writing ("-" means standard output, written
 * directly); EINVAL when path is too long, EIO with the path when it cannot
 * be created (nothing to abort then). Finish with posemb_atomic_commit (the
 * rename) or posemb_atomic_abort. */
posemb_status posemb_atomic_open(posemb_atomic_file *af, const char *path, posemb_error *err);
/* Flushes, syncs and renames into place; on any failure (EIO with the path)
 * removes the temporary file. */
posemb_status posemb_atomic_commit(posemb_atomic_file *af, posemb_error *err);
/* Abandons the file: closes and removes the temporary. */
void posemb_atomic_abort(posemb_atomic_file *af);

/* Reads a whole file into a malloc'ed, NUL-terminated buffer (*len bytes
 * before the NUL) that the caller frees; every reader of a text or JSON
 * file uses it. EIO when it cannot be opened or read, EFORMAT when it is
 * larger than max_bytes, ENOMEM; *buf is NULL on failure. */
posemb_status posemb_read_data_file(const char *path, size_t max_bytes, char **buf, size_t *len, posemb_error *err);

/* Writes text and a newline to path, whole or not at all (EIO with the path;
 * EINVAL when path is too long). */
posemb_status posemb_write_text(const char *path, const char *text, posemb_error *err);

/* Copies file src (at most max_bytes: EFORMAT above) to dst byte for byte,
 * whole or not at all; the errors of posemb_read_data_file and
 * posemb_atomic_open, EIO with dst when it cannot be written. */
posemb_status posemb_copy_file(const char *src, const char *dst, size_t max_bytes, posemb_error *err);

/* Up to 40 bytes of s[0..len) for an error message, control bytes escaped
 * as \xNN and "..." after a cut; returns out. */
const char *posemb_snippet(const char *s, size_t len, char *out, size_t cap);

/* dst = "dir/name"; -1 (dst empty) when it does not fit in cap bytes. */
int posemb_path_join(char *dst, size_t cap, const char *dir, const char *name);

/* Writes a rows x cols float matrix as CSV (one row per line, no header,
 * %.9g so float32 values round-trip) to path, atomically ("-": stdout);
 * EIO with the path, EINVAL when it is too long. */
posemb_status posemb_csv_write(const char *path, const float *data, int rows, int cols, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
