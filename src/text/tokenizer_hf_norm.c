/* tokenizer.json's string tools: growable strings, the patterns of Replace
 * and Split (literal or PCRE2 regex), and the normalizers, as the Rust
 * `tokenizers` library applies them (the normalizers folder). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_hf.h"

/* White_Space: what Rust's char::is_whitespace and the regex \s accept. */
int hf_is_ws(int32_t cp)
{
    if (cp < 0x80) return cp == ' ' || (cp >= 9 && cp <= 13);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* --------------------------------------------------------------- patterns */

/* Oniguruma (the library's regex engine) reads \s as White_Space, which
 * has U+0085; PCRE2's \s with PCRE2_UCP has not. So \s and \S are written
 * out as classes before compiling (inside a class, \s becomes its members;
 * \S there stays PCRE2's, a difference only at U+0085). */
#define WS_CLASS "\\t-\\r\\x{85}\\p{Z}"

static char *rewrite_space(const char *re, size_t n)
{
    tok_str out = {0};
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = re[i];
        int bad = 0;
        if (c == '\\' && i + 1 < n) {
            char d = re[i + 1];
            const char *rep = d == 's' ? (in_class ? WS_CLASS : "[" WS_CLASS "]") : "[^" WS_CLASS "]";
            if (d == 's' || (d == 'S' && !in_class)) bad = tok_str_add(&out, rep, strlen(rep));
            else bad = tok_str_add(&out, re + i, 2);
            i++;
        } else {
            if (c == '[' && !in_class) {
                in_class = 1;
                bad = tok_str_add(&out, re + i, 1);
                /* a ']' or '^]' right after '[' is a member, not the end */
                if (!bad && i + 1 < n && re[i + 1] == '^') bad = tok_str_add(&out, re + ++i, 1);
                if (!bad && i + 1 < n && re[i + 1] == ']') bad = tok_str_add(&out, re + ++i, 1);
            } else {
                if (c == ']' && in_class) in_class = 0;
                bad = tok_str_add(&out, re + i, 1);
            }
        }
        if (bad) {
            tok_str_free(&out);
            return NULL;
        }
    }
    if (!out.p && tok_str_add(&out, "", 0)) return NULL;
    return out.p;
}

posemb_status hf_pattern_load(hf_pattern *p, const cJSON *obj, const char *path, const char *what, posemb_error *err)
{
    memset(p, 0, sizeof *p);
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(obj, "pattern");
    const cJSON *lit = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    if (cJSON_IsString(lit)) {
        p->lit_len = strlen(lit->valuestring);
        p->lit = malloc(p->lit_len + 1);
        if (!p->lit) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        memcpy(p->lit, lit->valuestring, p->lit_len + 1);
        if (!tok_utf8_valid(p->lit, p->lit_len))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.pattern is not valid UTF-8", path, what);
        return POSEMB_OK;
    }
    if (!cJSON_IsString(re))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.pattern must be {\"String\": ...} or {\"Regex\": ...}", path,
                           what);
    return hf_pattern_regex(p, re->valuestring, path, what, err);
}

posemb_status hf_pattern_regex(hf_pattern *p, const char *regex, const char *path, const char *what, posemb_error *err)
{
    char *src = rewrite_space(regex, strlen(regex));
    if (!src) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int code;
    PCRE2_SIZE at;
    p->re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    free(src);
    if (!p->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        char q[96];
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s.pattern: bad regex '%s': %s", path, what,
                           tok_quote(regex, strlen(regex), q, sizeof q), (const char *)msg);
    }
    p->jit = pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE) == 0; /* optional: the interpreter runs without it */
    return POSEMB_OK;
}

void hf_pattern_free(hf_pattern *p)
{
    free(p->lit);
    pcre2_code_free(p->re);
    memset(p, 0, sizeof *p);
}

int hf_pattern_next(const hf_pattern *p, const char *s, size_t n, size_t from, size_t *a, size_t *b,
                    pcre2_match_data *md)
{
    if (from > n) return 0;
    if (p->lit) { /* the library: an empty literal matches nothing */
        if (!p->lit_len || p->lit_len > n - from) return 0;
        const char *end = s + n - p->lit_len;
        for (const char *q = s + from; q <= end; q++) {
            q = memchr(q, p->lit[0], (size_t)(end - q) + 1);
            if (!q) return 0;
            if (!memcmp(q, p->lit, p->lit_len)) {
                *a = (size_t)(q - s);
                *b = *a + p->lit_len;
                return 1;
            }
        }
        return 0;
    }
    int rc = p->jit ? pcre2_jit_match(p->re, (PCRE2_SPTR)s, n, from, 0, md, NULL) : PCRE2_ERROR_JIT_STACKLIMIT;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* no JIT, or its small stack ran out: the interpreter (heap) */
        rc = pcre2_match(p->re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) return -1;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *a = ov[0];
    *b = ov[1];
    return 1;
}

int hf_pattern_replace(const hf_pattern *p, const char *s, size_t n, const char *rep, size_t rep_len, tok_str *out)
{
    pcre2_match_data *md = p->re ? pcre2_match_data_create_from_pattern(p->re, NULL) : NULL;
    if (p->re && !md) return -1;
    size_t pos = 0, a, b;
    int r, bad = 0;
    while (!bad && (r = hf_pattern_next(p, s, n, pos, &a, &b, md)) > 0) {
        bad = tok_str_add(out, s + pos, a - pos) || tok_str_add(out, rep, rep_len);
        if (b == a) { /* an empty match: keep the next character and go on after it */
            size_t i = a;
            if (i >= n) {
                pos = n;
                break;
            }
            tok_utf8_next((const uint8_t *)s, n, &i);
            bad = bad || tok_str_add(out, s + a, i - a);
            b = i;
        }
        pos = b;
    }
    if (!bad && pos < n) bad = tok_str_add(out, s + pos, n - pos);
    if (!bad && !out->p) bad = tok_str_add(out, "", 0);
    pcre2_match_data_free(md);
    return bad || r < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ normalizers */

static int all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

/* NFC, NFD, NFKC, NFKD with utf8proc. ASCII is its own form in all four,
 * and an ASCII character never reorders or composes with what precedes it
 * (it has combining class 0 and is never the second of a composition), so
 * a text is cut before each ASCII character that follows ASCII and only
 * the runs with other characters (with the ASCII character before them, a
 * base a mark may compose with) go through utf8proc. */
static int unicode_form(hf_norm_kind k, const char *s, size_t n, tok_str *out)
{
    if (all_ascii(s, n)) return tok_str_add(out, s, n);
    int opt = UTF8PROC_STABLE;
    if (k == HF_NORM_NFC || k == HF_NORM_NFKC) opt |= UTF8PROC_COMPOSE;
    else opt |= UTF8PROC_DECOMPOSE;
    if (k == HF_NORM_NFKC || k == HF_NORM_NFKD) opt |= UTF8PROC_COMPAT;
    if (tok_str_reserve(out, n)) return -1;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && (unsigned char)s[j] < 0x80) j++;
        if (j == n) return tok_str_add(out, s + i, n - i);
        size_t a = j > i ? j - 1 : j, b = j; /* a run of non-ASCII with its ASCII base */
        while (b < n && (unsigned char)s[b] >= 0x80) b++;
        if (tok_str_add(out, s + i, a - i)) return -1;
        if (b > a) {
            utf8proc_uint8_t *dst = NULL;
            utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s + a, (utf8proc_ssize_t)(b - a), &dst, opt);
            if (m < 0) return -1;
            int r = tok_str_add(out, (const char *)dst, (size_t)m);
            free(dst);
            if (r) return -1;
        }
        i = b;
    }
    return 0;
}

/* Rust's char::to_lowercase, character by character (no final-sigma rule,
 * as NormalizedString::lowercase); U+0130 is the one multi-character case. */
static int lowercase(const char *s, size_t n, tok_str *out)
{
    size_t i = 0;
    if (tok_str_reserve(out, n)) return -1;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            char l = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            if (tok_str_add(out, &l, 1)) return -1;
            i++;
            continue;
        }
        int32_t cp = tok_utf8_next((const uint8_t *)s, n, &i);
        char u[8];
        int k;
        if (cp == 0x130) {
            memcpy(u, "i\xcc\x87", 3);
            k = 3;
        } else {
            k = tok_utf8_put(utf8proc_tolower(cp), u);
        }
        if (tok_str_add(out, u, (size_t)k)) return -1;
    }
    return 0;
}

static int strip(const char *s, size_t n, int left, int right, tok_str *out)
{
    size_t a = 0, b = n;
    while (left && a < b) {
        size_t i = a;
        if (!hf_is_ws(tok_utf8_next((const uint8_t *)s, b, &i))) break;
        a = i;
    }
    if (right) {
        size_t end = a, i = a;
        while (i < b)
            if (!hf_is_ws(tok_utf8_next((const uint8_t *)s, b, &i))) end = i;
        b = end;
    }
    return tok_str_add(out, s + a, b - a);
}

/* StripAccents: drops the combining marks (Mn, Mc, Me). */
static int strip_accents(const char *s, size_t n, tok_str *out)
{
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        int32_t cp = tok_utf8_next((const uint8_t *)s, n, &i);
        utf8proc_category_t c = cp < 0 ? UTF8PROC_CATEGORY_CN : utf8proc_category(cp);
        if (c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME) continue;
        if (tok_str_add(out, s + a, i - a)) return -1;
    }
    return tok_str_add(out, "", 0);
}

static int one(const hf_norm *nm, const char *s, size_t n, tok_str *out)
{
    switch (nm->kind) {
    case HF_NORM_NFC:
    case HF_NORM_NFD:
    case HF_NORM_NFKC:
    case HF_NORM_NFKD:
        return unicode_form(nm->kind, s, n, out);
    case HF_NORM_LOWERCASE:
        return lowercase(s, n, out);
    case HF_NORM_PREPEND: /* only a non-empty text */
        return (n && tok_str_add(out, nm->str, nm->str_len)) || tok_str_add(out, s, n);
    case HF_NORM_REPLACE:
        return hf_pattern_replace(&nm->pat, s, n, nm->str, nm->str_len, out);
    case HF_NORM_STRIP:
        return strip(s, n, nm->left, nm->right, out);
    case HF_NORM_STRIP_ACCENTS:
        return strip_accents(s, n, out);
    case HF_NORM_PRECOMPILED:
        return hf_precompiled_apply(nm, s, n, out);
    }
    return -1;
}

int hf_normalize(const hf_norm *norms, int n_norms, const char *s, size_t n, tok_str *out)
{
    tok_str tmp = {0};
    out->n = 0;
    if (tok_str_add(out, s, n)) return -1;
    for (int k = 0; k < n_norms; k++) {
        tmp.n = 0;
        if (one(&norms[k], out->p, out->n, &tmp)) {
            tok_str_free(&tmp);
            return -1;
        }
        tok_str swap = *out;
        *out = tmp;
        tmp = swap;
    }
    tok_str_free(&tmp);
    return 0;
}
