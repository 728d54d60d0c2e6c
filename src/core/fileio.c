#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

posemb_status posemb_atomic_open(posemb_atomic_file *af, const char *path, posemb_error *err)
{
    memset(af, 0, sizeof *af);
    if (strlen(path) >= sizeof af->path) return posemb_fail(err, POSEMB_EINVAL, "%.64s...: path too long", path);
    snprintf(af->path, sizeof af->path, "%s", path);
    if (!strcmp(path, "-")) {
        af->f = stdout;
        return POSEMB_OK;
    }
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", path, (long)getpid());
    af->f = fopen(af->tmp, "wb");
    if (!af->f) return posemb_fail(err, POSEMB_EIO, "%s: cannot write: %s", path, strerror(errno));
    return POSEMB_OK;
}

posemb_status posemb_atomic_commit(posemb_atomic_file *af, posemb_error *err)
{
    if (af->f == stdout)
        return fflush(stdout) ? posemb_fail(err, POSEMB_EIO, "stdout: %s", strerror(errno)) : POSEMB_OK;
    int bad = ferror(af->f) || fflush(af->f) || fsync(fileno(af->f));
    int saved = errno;
    bad |= fclose(af->f) != 0;
    af->f = NULL;
    if (!bad && rename(af->tmp, af->path) == 0) return POSEMB_OK;
    if (!bad) saved = errno;
    unlink(af->tmp);
    return posemb_fail(err, POSEMB_EIO, "%s: write failed: %s", af->path, strerror(saved));
}

void posemb_atomic_abort(posemb_atomic_file *af)
{
    if (!af->f || af->f == stdout) return;
    fclose(af->f);
    af->f = NULL;
    unlink(af->tmp);
}

posemb_status posemb_csv_write(const char *path, const float *data, int rows, int cols, posemb_error *err)
{
    posemb_atomic_file af;
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) fprintf(af.f, "%.9g%c", data[(size_t)i * cols + j], j + 1 < cols ? ',' : '\n');
    return posemb_atomic_commit(&af, err);
}

int posemb_path_join(char *dst, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(dst, cap, "%s/%s", dir, name);
    if (n >= 0 && (size_t)n < cap) return 0;
    if (cap) dst[0] = '\0';
    return -1;
}

posemb_status posemb_write_text(const char *path, const char *text, posemb_error *err)
{
    posemb_atomic_file af;
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    fprintf(af.f, "%s\n", text);
    return posemb_atomic_commit(&af, err);
}

posemb_status posemb_copy_file(const char *src, const char *dst, size_t max_bytes, posemb_error *err)
{
    char *text;
    size_t n;
    posemb_atomic_file af;
    posemb_status st = posemb_read_data_file(src, max_bytes, &text, &n, err);
    if (st) return st;
    st = posemb_atomic_open(&af, dst, err);
    if (!st && fwrite(text, 1, n, af.f) != n) {
        posemb_atomic_abort(&af);
        st = posemb_fail(err, POSEMB_EIO, "%s: write failed", dst);
    } else if (!st) st = posemb_atomic_commit(&af, err);
    free(text);
    return st;
}

const char *posemb_snippet(const char *s, size_t len, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            memcpy(out + k, "...", 3);
            k += 3;
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            int w = snprintf(out + k, cap - k, "\\x%02x", c);
            if (w < 0 || (size_t)w >= cap - k) break;
            k += (size_t)w;
        } else {
            out[k++] = (char)c;
        }
    }
    if (cap) out[k] = '\0';
    return out;
}

posemb_status posemb_read_data_file(const char *path, size_t max_bytes, char **buf, size_t *len, posemb_error *err)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *data = malloc(cap + 1);
    posemb_status st = data ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    while (!st) {
        if (n == cap) {
            if (cap > max_bytes) {
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: larger than %zu bytes", path, max_bytes);
                break;
            }
            char *bigger = realloc(data, 2 * cap + 1);
            if (!bigger) {
                st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
                break;
            }
            data = bigger;
            cap *= 2;
        }
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!st && ferror(f)) st = posemb_fail(err, POSEMB_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (!st && n > max_bytes) st = posemb_fail(err, POSEMB_EFORMAT, "%s: larger than %zu bytes", path, max_bytes);
    fclose(f);
    if (st) {
        free(data);
        return st;
    }
    data[n] = '\0';
    *buf = data;
    *len = n;
    return POSEMB_OK;
}
