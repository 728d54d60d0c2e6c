/* fuzz.h: per-process files for harnesses whose readers take paths. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "fuzz.h"

#include "posemb/tokenizer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[512];

static void remove_all(const char *d, int rm_self)
{
    DIR *dp = opendir(d);
    char p[1024];
    for (struct dirent *e; dp && (e = readdir(dp));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        struct stat sb;
        if (!lstat(p, &sb) && S_ISDIR(sb.st_mode)) remove_all(p, 1);
        else unlink(p);
    }
    if (dp) closedir(dp);
    if (rm_self) rmdir(d);
}

static void cleanup(void) { remove_all(dir, 1); }

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        /* In memory where there is a tmpfs: every input is written to a file. */
        snprintf(dir, sizeof dir, "%s/posemb-fuzz-XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
        if (!mkdtemp(dir)) abort();
        atexit(cleanup);
    }
    return dir;
}

const char *fuzz_write(const char *name, const uint8_t *data, size_t n)
{
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0755);
    *slash = '/';
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n)) abort();
    fclose(f);
    return path;
}

int fuzz_split(const uint8_t *data, size_t size, const uint8_t **part, size_t *len, int max)
{
    size_t sep = strlen(FUZZ_SEP);
    int n = 0;
    part[0] = data;
    for (size_t i = 0, start = 0;; i++) {
        int last = n == max - 1 || i + sep > size;
        if (last || !memcmp(data + i, FUZZ_SEP, sep)) {
            size_t end = last ? size : i;
            part[n] = data + start;
            len[n++] = end - start;
            if (last) return n;
            start = i + sep;
            i = start - 1;
        }
    }
}

void fuzz_clear(const char *sub)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", fuzz_dir(), sub);
    remove_all(p, 0);
}

const char *fuzz_shared(const char *rel)
{
#ifdef POSEMB_SHARED
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", POSEMB_SHARED, rel);
    return access(p, R_OK) ? NULL : p;
#else
    (void)rel;
    return NULL;
#endif
}

void fuzz_tokenize(const posemb_tokenizer *tok, const uint8_t *text, size_t n, int roundtrip)
{
    posemb_encoding enc;
    posemb_error err;
    posemb_encoding_init(&enc);
    const char *t = (const char *)text;
    if (!posemb_tokenizer_encode(tok, t, n, POSEMB_ENC_TOKENS, &enc, &err)) {
        char *back = NULL;
        size_t blen = 0;
        if (!posemb_tokenizer_decode(tok, enc.ids, enc.n, 0, &back, &blen, &err) && roundtrip &&
            (blen != n || memcmp(back, text, n)))
            abort(); /* byte-level BPE must give back exactly the bytes it encoded */
        free(back);
        if (!posemb_tokenizer_decode(tok, enc.ids, enc.n, POSEMB_DEC_SKIP_SPECIAL | POSEMB_DEC_CLEANUP, &back, &blen,
                                     &err))
            free(back);
    }
    posemb_tokenizer_encode(tok, t, n, POSEMB_ENC_SPECIAL, &enc, &err);
    posemb_tokenizer_encode_pair(tok, t, n / 2, t + n / 2, n - n / 2, POSEMB_ENC_SPECIAL | POSEMB_ENC_TOKENS, &enc,
                                 &err);
    posemb_encoding_free(&enc);
}
