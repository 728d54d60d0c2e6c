/* Text helpers of the tokenizers: whole-file reading, UTF-8, Python's
 * isspace, and quoting bytes for one-line error messages. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "tokenizer_impl.h"

posemb_status tok_read_file(const char *path, char **buf, size_t *len, posemb_error *err)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return posemb_fail(err, POSEMB_EIO, "%s: is a directory", path);
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) {
        fclose(f);
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= TOK_MAX_FILE) {
                free(b);
                fclose(f);
                return posemb_fail(err, POSEMB_EFORMAT, "%s: larger than %zu bytes", path, TOK_MAX_FILE);
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                fclose(f);
                return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return posemb_fail(err, POSEMB_EIO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return POSEMB_OK;
}

int32_t tok_utf8_next(const uint8_t *s, size_t n, size_t *i)
{
    utf8proc_int32_t cp;
    size_t left = n - *i;
    /* utf8proc_iterate refuses overlongs, surrogates and > U+10FFFF. */
    utf8proc_ssize_t k = utf8proc_iterate(s + *i, left > 4 ? 4 : (utf8proc_ssize_t)left, &cp);
    if (k <= 0) {
        (*i)++;
        return -1;
    }
    *i += (size_t)k;
    return cp;
}

int tok_utf8_put(int32_t cp, char *out) { return (int)utf8proc_encode_char(cp, (utf8proc_uint8_t *)out); }

int tok_utf8_valid(const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            while (i + 8 <= n) { /* ASCII eight bytes at a time: texts are mostly ASCII */
                uint64_t w;
                memcpy(&w, u + i, 8);
                if (w & 0x8080808080808080ull) break;
                i += 8;
            }
            while (i < n && u[i] < 0x80) i++;
            continue;
        }
        if (tok_utf8_next(u, n, &i) < 0) return 0;
    }
    return 1;
}

int tok_py_isspace(int32_t cp)
{
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20);
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
           p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

long tok_line_of(const char *buf, size_t off)
{
    long line = 1;
    for (size_t i = 0; i < off; i++)
        if (buf[i] == '\n') line++;
    return line;
}

const char *tok_quote(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    if (o + 8 >= cap && o >= 3) memcpy(out + o - 3, "...", 3);
    out[o] = '\0';
    return out;
}

void tok_byte_alphabet(uint32_t byte_cp[256], int16_t cp_byte[324])
{
    int n = 0;
    for (int i = 0; i < 324; i++) cp_byte[i] = -1;
    for (int c = 0; c < 256; c++) {
        int printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
        byte_cp[c] = printable ? (uint32_t)c : (uint32_t)(256 + n++);
        cp_byte[byte_cp[c]] = (int16_t)c;
    }
}
