/* SQuAD v1.1's answer normalisation, exact match and token F1, as the
 * official evaluate-v1.1.py computes them: see posemb/squad_eval.h. */
#include "eval/squad_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Python's str.isspace: bidirectional class WS, B or S, or category Zs. */
static int py_isspace(int32_t cp)
{
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20);
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
           p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

/* Python's regex \w on str: str.isalnum() or "_". isalnum is exactly the
 * categories L* and N* (checked over all code points with Python 3.11). */
static int py_isword(int32_t cp)
{
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}

/* string.punctuation: the 32 printable ASCII characters that are neither
 * letters, digits nor space. */
static int py_punctuation(int32_t cp)
{
    return cp < 0x80 && cp > 0x20 && cp < 0x7f && !(cp >= '0' && cp <= '9') && !(cp >= 'a' && cp <= 'z') &&
           !(cp >= 'A' && cp <= 'Z');
}

/* Unicode's Case_Ignorable (for the Final_Sigma rule): categories Mn, Me,
 * Cf, Lm, Sk, and Word_Break MidLetter, MidNumLet and Single_Quote. */
static int case_ignorable(int32_t cp)
{
    switch (cp) {
    case 0x27:
    case 0x2e:
    case 0x3a:
    case 0xb7:
    case 0x387:
    case 0x55f:
    case 0x5f4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xfe13:
    case 0xfe52:
    case 0xfe55:
    case 0xff07:
    case 0xff0e:
    case 0xff1a:
        return 1;
    default:
        break;
    }
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return 1;
    default:
        return 0;
    }
}

/* Unicode's Cased: Lu, Ll, Lt, and the Other_Lowercase/Other_Uppercase
 * characters that have a case mapping (utf8proc knows no Other_* property). */
static int cased(int32_t cp)
{
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
           utf8proc_islower(cp) || utf8proc_isupper(cp);
}

/* CPython's handle_capital_sigma: U+03A3 at index i lowers to final sigma
 * U+03C2 when a cased letter precedes it (skipping case-ignorables) and
 * none follows it (skipping case-ignorables); otherwise to U+03C3. */
static int32_t lower_sigma(const int32_t *cp, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && case_ignorable(cp[j - 1])) j--;
    if (j == 0 || !cased(cp[j - 1])) return 0x3c3;
    size_t k = i + 1;
    while (k < n && case_ignorable(cp[k])) k++;
    return (k == n || !cased(cp[k])) ? 0x3c2 : 0x3c3;
}

/* UTF-8 to code points (invalid bytes become U+FFFD, one per byte). */
static int32_t *decode(const char *text, size_t *n)
{
    size_t len = strlen(text);
    int32_t *cp = malloc((len + 1) * sizeof *cp);
    if (!cp) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t used = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (used <= 0) {
            c = 0xfffd;
            used = 1;
        }
        cp[k++] = c;
        i += (size_t)used;
    }
    *n = k;
    return cp;
}

/* Step 1, str.lower, into a new array (U+0130 grows to two code points). */
static int32_t *py_lower(const int32_t *src, size_t n, size_t *out_n)
{
    int32_t *out = malloc((2 * n + 1) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = src[i];
        if (c < 0x80) {
            out[k++] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        } else if (c == 0x130) {
            out[k++] = 'i';
            out[k++] = 0x307;
        } else if (c == 0x3a3) {
            out[k++] = lower_sigma(src, n, i);
        } else {
            out[k++] = utf8proc_tolower(c);
        }
    }
    *out_n = k;
    return out;
}

/* Step 2, remove_punc, in place. */
static size_t remove_punctuation(int32_t *cp, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!py_punctuation(cp[i])) cp[k++] = cp[i];
    return k;
}

static int is_article(const int32_t *w, size_t len)
{
    if (len == 1) return w[0] == 'a';
    if (len == 2) return w[0] == 'a' && w[1] == 'n';
    return len == 3 && w[0] == 't' && w[1] == 'h' && w[2] == 'e';
}

/* Step 3, re.sub(r"\b(a|an|the)\b", " ", text): \b on both sides makes a
 * match exactly a whole maximal run of word characters; in place. */
static size_t remove_articles(int32_t *cp, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (!py_isword(cp[i])) {
            cp[k++] = cp[i++];
            continue;
        }
        size_t j = i;
        while (j < n && py_isword(cp[j])) j++;
        if (is_article(cp + i, j - i)) {
            cp[k++] = ' ';
        } else {
            memmove(cp + k, cp + i, (j - i) * sizeof *cp);
            k += j - i;
        }
        i = j;
    }
    return k;
}

/* Step 4, " ".join(text.split()), encoded back to UTF-8. */
static char *join_words(const int32_t *cp, size_t n)
{
    char *out = malloc(4 * n + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (py_isspace(cp[i])) {
            i++;
            continue;
        }
        if (k) out[k++] = ' ';
        for (; i < n && !py_isspace(cp[i]); i++) k += (size_t)utf8proc_encode_char(cp[i], (utf8proc_uint8_t *)out + k);
    }
    out[k] = '\0';
    return out;
}

char *posemb_squad_normalize(const char *text)
{
    size_t n = 0, m = 0;
    int32_t *cp = decode(text, &n);
    if (!cp) return NULL;
    int32_t *lower = py_lower(cp, n, &m);
    free(cp);
    if (!lower) return NULL;
    m = remove_punctuation(lower, m);
    m = remove_articles(lower, m);
    char *out = join_words(lower, m);
    free(lower);
    return out;
}

double posemb_squad_exact_match(const char *prediction, const char *const *golds, int n_golds)
{
    char *pred = posemb_squad_normalize(prediction);
    if (!pred) return NAN;
    double best = 0;
    for (int g = 0; g < n_golds && best < 1; g++) {
        char *gold = posemb_squad_normalize(golds[g]);
        if (!gold) {
            best = NAN;
            break;
        }
        if (strcmp(pred, gold) == 0) best = 1;
        free(gold);
    }
    free(pred);
    return best;
}

/* A normalised answer cut into its tokens, sorted (for the bag overlap). */
typedef struct bag {
    char *text;
    char **tok;
    int n;
} bag;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int bag_of(const char *answer, bag *b)
{
    memset(b, 0, sizeof *b);
    b->text = posemb_squad_normalize(answer);
    if (!b->text) return -1;
    size_t len = strlen(b->text);
    b->tok = malloc((len / 2 + 1) * sizeof *b->tok); /* tokens are separated by single spaces */
    if (!b->tok) return -1;
    for (char *s = b->text; *s;) {
        b->tok[b->n++] = s;
        char *sp = strchr(s, ' ');
        if (!sp) break;
        *sp = '\0';
        s = sp + 1;
    }
    qsort(b->tok, (size_t)b->n, sizeof *b->tok, cmp_str);
    return 0;
}

static void bag_free(bag *b)
{
    free(b->text);
    free(b->tok);
}

/* sum over tokens of min(count in a, count in b): a merge of sorted lists. */
static int bag_overlap(const bag *a, const bag *b)
{
    int i = 0, j = 0, same = 0;
    while (i < a->n && j < b->n) {
        int c = strcmp(a->tok[i], b->tok[j]);
        if (c == 0) {
            same++;
            i++;
            j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    return same;
}

static double token_f1(const bag *pred, const bag *gold)
{
    int same = bag_overlap(pred, gold);
    if (same == 0) return 0;
    double precision = (double)same / pred->n, recall = (double)same / gold->n;
    return 2 * precision * recall / (precision + recall);
}

double posemb_squad_f1(const char *prediction, const char *const *golds, int n_golds)
{
    bag pred;
    double best = 0;
    if (bag_of(prediction, &pred)) {
        best = NAN;
        n_golds = 0;
    }
    for (int g = 0; g < n_golds; g++) {
        bag gold;
        if (bag_of(golds[g], &gold)) {
            bag_free(&gold);
            best = NAN;
            break;
        }
        double f1 = token_f1(&pred, &gold);
        if (f1 > best) best = f1;
        bag_free(&gold);
    }
    bag_free(&pred);
    return best;
}
