/* A growable byte string, for the tokenizers' normalizers and decoders. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

int tok_str_reserve(tok_str *s, size_t extra)
{
    if (s->n + extra + 1 <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < s->n + extra + 1) cap *= 2;
    char *p = realloc(s->p, cap);
    if (!p) return -1;
    s->p = p;
    s->cap = cap;
    return 0;
}

int tok_str_add(tok_str *s, const char *b, size_t n)
{
    if (tok_str_reserve(s, n)) return -1;
    if (n) memcpy(s->p + s->n, b, n);
    s->n += n;
    s->p[s->n] = '\0';
    return 0;
}

void tok_str_free(tok_str *s)
{
    free(s->p);
    memset(s, 0, sizeof *s);
}
