/* Plain-text corpora: files or folders, tokenized once, cached. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "posemb/corpus.h"
#include "posemb/safetensors.h"
#include "core/fileio.h"

typedef struct file_list {
    int n, cap;
    char **paths;
} file_list;

static int add_path(file_list *l, const char *path)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **p = realloc(l->paths, (size_t)cap * sizeof *p);
        if (!p) return -1;
        l->paths = p;
        l->cap = cap;
    }
    l->paths[l->n] = strdup(path);
    if (!l->paths[l->n]) return -1;
    l->n++;
    return 0;
}

static void free_list(file_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every regular, non-hidden file below dir (depth-first, each folder sorted). */
static posemb_status walk(const char *dir, file_list *l, int depth, posemb_error *err)
{
    if (depth > 16) return posemb_fail(err, POSEMB_EINVAL, "%s: folders nested more than 16 deep", dir);
    DIR *d = opendir(dir);
    if (!d) return posemb_fail(err, POSEMB_EIO, "%s: cannot read folder: %s", dir, strerror(errno));
    file_list here = {0, 0, NULL};
    struct dirent *e;
    char path[POSEMB_PATH_MAX];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (add_path(&here, path)) break;
    }
    closedir(d);
    if (here.n > 1) qsort(here.paths, (size_t)here.n, sizeof *here.paths, cmp_str); /* NULL when empty */
    posemb_status st = POSEMB_OK;
    for (int i = 0; !st && i < here.n; i++) {
        struct stat sb;
        if (stat(here.paths[i], &sb)) continue;
        if (S_ISDIR(sb.st_mode)) st = walk(here.paths[i], l, depth + 1, err);
        else if (S_ISREG(sb.st_mode) && add_path(l, here.paths[i]))
            st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    free_list(&here);
    return st;
}

/* What the cache must match: each file's path, size and modification time, and the tokenizer. */
static char *sources_key(const file_list *l, const char *tok_desc)
{
    size_t cap = 256 + strlen(tok_desc), len = 0;
    for (int i = 0; i < l->n; i++) cap += strlen(l->paths[i]) + 64;
    char *key = malloc(cap);
    if (!key) return NULL;
    len += (size_t)snprintf(key, cap, "tokenizer=%s", tok_desc);
    for (int i = 0; i < l->n; i++) {
        struct stat sb;
        long long size = 0, mtime = 0;
        if (!stat(l->paths[i], &sb)) {
            size = (long long)sb.st_size;
            mtime = (long long)sb.st_mtime;
        }
        len += (size_t)snprintf(key + len, cap - len, "\n%s %lld %lld", l->paths[i], size, mtime);
    }
    return key;
}

static int read_cache(posemb_corpus *c, const char *cache, const char *key)
{
    posemb_st_file f;
    if (!cache || posemb_st_open(&f, cache, NULL)) return 0;
    const char *k = posemb_st_meta(&f, "sources");
    const posemb_st_entry *e = posemb_st_find(&f, "tokens");
    int ok = k && !strcmp(k, key) && e && e->dtype == POSEMB_I32 && e->ndim == 1 && e->numel > 0;
    if (ok) ok = (c->tokens = malloc((size_t)e->numel * sizeof(int32_t))) != NULL;
    if (ok) ok = !posemb_st_read_raw(&f, e, c->tokens, NULL);
    if (ok) c->n = (long)e->numel;
    posemb_st_close(&f);
    return ok;
}

static posemb_status write_cache(const posemb_corpus *c, const char *cache, const char *key, posemb_error *err)
{
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    int64_t shape[1] = {c->n};
    posemb_status st = posemb_st_writer_meta(&w, "sources", key, err);
    if (!st) st = posemb_st_writer_add(&w, "tokens", POSEMB_I32, 1, shape, c->tokens, err);
    if (!st) st = posemb_st_write(&w, cache, err);
    posemb_st_writer_free(&w);
    return st;
}

static char *read_file(const char *path, size_t *len, posemb_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        posemb_fail(err, buf ? POSEMB_EIO : POSEMB_ENOMEM, "%s: cannot read", path);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Appends the tokens of one file to c. */
static posemb_status tokenize_file(posemb_corpus *c, long *cap, const char *path, const posemb_tokenizer *tok,
                                   posemb_encoding *enc, posemb_error *err)
{
    size_t len;
    char *text = read_file(path, &len, err);
    if (!text) return err ? err->code : POSEMB_EIO;
    posemb_status st = memchr(text, '\0', len)
                           ? posemb_fail(err, POSEMB_EFORMAT, "%s: not a text file (NUL byte)", path)
                           : posemb_tokenizer_encode(tok, text, len, 0, enc, err);
    free(text);
    if (st) return st;
    if (c->n + enc->n > *cap) {
        long want = (c->n + enc->n) * 2;
        int32_t *t = realloc(c->tokens, (size_t)want * sizeof *t);
        if (!t) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
        c->tokens = t;
        *cap = want;
    }
    if (enc->n) memcpy(c->tokens + c->n, enc->ids, (size_t)enc->n * sizeof *enc->ids); /* an empty file has no ids */
    c->n += enc->n;
    return POSEMB_OK;
}

posemb_status posemb_corpus_load(posemb_corpus *c, const char *path, const posemb_tokenizer *tok, const char *tok_desc,
                                 const char *cache_path, posemb_error *err)
{
    memset(c, 0, sizeof *c);
    struct stat sb;
    if (stat(path, &sb)) return posemb_fail(err, POSEMB_EIO, "%s: %s", path, strerror(errno));
    file_list files = {0, 0, NULL};
    posemb_status st = S_ISDIR(sb.st_mode)      ? walk(path, &files, 0, err)
                       : add_path(&files, path) ? posemb_fail(err, POSEMB_ENOMEM, "out of memory")
                                                : POSEMB_OK;
    char *key = st ? NULL : sources_key(&files, tok_desc);
    if (!st && !key) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    c->n_files = files.n;
    if (!st && read_cache(c, cache_path, key)) c->from_cache = 1;
    else if (!st) {
        posemb_encoding enc;
        posemb_encoding_init(&enc);
        long cap = 0;
        for (int i = 0; !st && i < files.n; i++) st = tokenize_file(c, &cap, files.paths[i], tok, &enc, err);
        posemb_encoding_free(&enc);
        if (!st && c->n == 0)
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: the corpus has no tokens (%d files)", path, files.n);
        if (!st && cache_path) st = write_cache(c, cache_path, key, err);
    }
    free(key);
    free_list(&files);
    if (st) posemb_corpus_free(c);
    return st;
}

void posemb_corpus_free(posemb_corpus *c)
{
    free(c->tokens);
    memset(c, 0, sizeof *c);
}
