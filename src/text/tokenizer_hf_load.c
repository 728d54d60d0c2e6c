/* Reading the general tokenizer.json pipeline: the BPE model (Unigram's is
 * in tokenizer_hf_unigram.c), added
 * tokens, normalizer, pre-tokenizer and decoder, each member checked with a
 * one-line error that names the file and the member (the post-processor is
 * read by tokenizer_json.c, as for the classic files). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

#include "tokenizer_hf.h"

#define MAX_DEPTH 8

typedef struct lctx {
    posemb_tokenizer *t;
    tok_hf *h;
    const char *path;
    posemb_error *err;
} lctx;

static posemb_status bad(lctx *c, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return posemb_fail(c->err, POSEMB_EFORMAT, "%s: %s", c->path, msg);
}

static posemb_status oom(lctx *c) { return posemb_fail(c->err, POSEMB_ENOMEM, "out of memory"); }

/* A boolean member into *v (def when absent or null); -1 for another type. */
static int get_bool(const cJSON *o, const char *key, int def, int *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *v = def;
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsBool(x)) return -1;
    *v = cJSON_IsTrue(x);
    return 0;
}

/* A string member: *v NULL when absent or null; -1 for another type or
 * invalid UTF-8. */
static int get_str(const cJSON *o, const char *key, const char **v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *v = NULL;
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsString(x) || !tok_utf8_valid(x->valuestring, strlen(x->valuestring))) return -1;
    *v = x->valuestring;
    return 0;
}

/* A non-negative integer member below lim (def when absent); -1 otherwise. */
static int get_uint(const cJSON *o, const char *key, double def, double lim, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *v = def;
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= lim || x->valuedouble != floor(x->valuedouble))
        return -1;
    *v = x->valuedouble;
    return 0;
}

static char *dup_str(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    if (len) *len = n;
    return p;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

/* One character (its UTF-8 bytes) from a string member. */
static posemb_status one_char(lctx *c, const cJSON *o, const char *key, const char *def, char out[8], size_t *len,
                              const char *what)
{
    const char *s;
    if (get_str(o, key, &s)) return bad(c, "%s.%s must be a string", what, key);
    if (!s) s = def;
    size_t n = strlen(s), i = 0;
    if (!n || tok_utf8_next((const uint8_t *)s, n, &i) < 0 || i != n)
        return bad(c, "%s.%s must be exactly one character", what, key);
    memcpy(out, s, n);
    *len = n;
    return POSEMB_OK;
}

/* Metaspace's prepend_scheme, or the older add_prefix_space. */
static posemb_status prepend_scheme(lctx *c, const cJSON *o, int *scheme, const char *what)
{
    const char *s;
    if (get_str(o, "prepend_scheme", &s)) return bad(c, "%s.prepend_scheme must be a string", what);
    if (s) {
        if (!strcmp(s, "always")) *scheme = 1;
        else if (!strcmp(s, "first")) *scheme = 2;
        else if (!strcmp(s, "never")) *scheme = 0;
        else return bad(c, "%s.prepend_scheme '%s' is not always, first or never", what, s);
        return POSEMB_OK;
    }
    int add;
    if (get_bool(o, "add_prefix_space", 1, &add)) return bad(c, "%s.add_prefix_space must be a boolean", what);
    *scheme = add;
    return POSEMB_OK;
}

/* ------------------------------------------------------------ normalizer */

static posemb_status load_norm(lctx *c, const cJSON *o, const char *what, int depth)
{
    tok_hf *h = c->h;
    if (!cJSON_IsObject(o)) return bad(c, "%s is not an object", what);
    const char *ty = type_of(o);
    if (!ty) return bad(c, "%s has no string \"type\"", what);
    if (!strcmp(ty, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "normalizers");
        if (!cJSON_IsArray(list)) return bad(c, "%s.normalizers is not an array", what);
        if (depth >= MAX_DEPTH) return bad(c, "%s: Sequence nested too deep", what);
        int i = 0;
        for (const cJSON *x = list->child; x; x = x->next, i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", what, i);
            posemb_status st = load_norm(c, x, sub, depth + 1);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    static const struct {
        const char *name;
        hf_norm_kind kind;
    } KINDS[] = {{"NFC", HF_NORM_NFC},
                 {"NFD", HF_NORM_NFD},
                 {"NFKC", HF_NORM_NFKC},
                 {"NFKD", HF_NORM_NFKD},
                 {"Lowercase", HF_NORM_LOWERCASE},
                 {"Prepend", HF_NORM_PREPEND},
                 {"Replace", HF_NORM_REPLACE},
                 {"Strip", HF_NORM_STRIP},
                 {"StripAccents", HF_NORM_STRIP_ACCENTS},
                 {"Precompiled", HF_NORM_PRECOMPILED}};
    hf_norm_kind kind = 0;
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
        if (!strcmp(ty, KINDS[k].name)) kind = KINDS[k].kind;
    if (!kind)
        return bad(c,
                   "%s type '%s' is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, "
                   "StripAccents, Precompiled, Sequence)",
                   what, ty);
    hf_norm *p = realloc(h->norms, (size_t)(h->n_norms + 1) * sizeof *p);
    if (!p) return oom(c);
    h->norms = p;
    hf_norm *nm = &h->norms[h->n_norms++];
    memset(nm, 0, sizeof *nm);
    nm->kind = kind;
    const char *s;
    if (kind == HF_NORM_PREPEND || kind == HF_NORM_REPLACE) {
        const char *key = kind == HF_NORM_PREPEND ? "prepend" : "content";
        if (get_str(o, key, &s) || !s) return bad(c, "%s.%s must be a string", what, key);
        if (!(nm->str = dup_str(s, &nm->str_len))) return oom(c);
    }
    if (kind == HF_NORM_REPLACE) return hf_pattern_load(&nm->pat, o, c->path, what, c->err);
    if (kind == HF_NORM_PRECOMPILED) {
        if (get_str(o, "precompiled_charsmap", &s) || !s)
            return bad(c, "%s.precompiled_charsmap must be a base64 string", what);
        return hf_precompiled_load(nm, s, c->path, what, c->err);
    }
    if (kind == HF_NORM_STRIP && (get_bool(o, "strip_left", 1, &nm->left) || get_bool(o, "strip_right", 1, &nm->right)))
        return bad(c, "%s: strip_left and strip_right must be booleans", what);
    return POSEMB_OK;
}

/* ---------------------------------------------------------- pre-tokenizer */

/* GPT-2's pattern, which ByteLevel's use_regex applies. */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static posemb_status load_pre(lctx *c, const cJSON *o, const char *what, int depth)
{
    tok_hf *h = c->h;
    if (!cJSON_IsObject(o)) return bad(c, "%s is not an object", what);
    const char *ty = type_of(o);
    if (!ty) return bad(c, "%s has no string \"type\"", what);
    if (!strcmp(ty, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "pretokenizers");
        if (!cJSON_IsArray(list)) return bad(c, "%s.pretokenizers is not an array", what);
        if (depth >= MAX_DEPTH) return bad(c, "%s: Sequence nested too deep", what);
        int i = 0;
        for (const cJSON *x = list->child; x; x = x->next, i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", what, i);
            posemb_status st = load_pre(c, x, sub, depth + 1);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    hf_pre_kind kind = !strcmp(ty, "ByteLevel")         ? HF_PRE_BYTELEVEL
                       : !strcmp(ty, "Split")           ? HF_PRE_SPLIT
                       : !strcmp(ty, "Metaspace")       ? HF_PRE_METASPACE
                       : !strcmp(ty, "Digits")          ? HF_PRE_DIGITS
                       : !strcmp(ty, "WhitespaceSplit") ? HF_PRE_WHITESPACE_SPLIT
                                                        : 0;
    if (!kind)
        return bad(c, "%s type '%s' is not supported (ByteLevel, Split, Metaspace, Digits, WhitespaceSplit, Sequence)",
                   what, ty);
    if (h->n_pres >= HF_MAX_STAGES) return bad(c, "%s: more than %d pre-tokenizers", what, HF_MAX_STAGES);
    hf_pre *p = realloc(h->pres, (size_t)(h->n_pres + 1) * sizeof *p);
    if (!p) return oom(c);
    h->pres = p;
    hf_pre *pre = &h->pres[h->n_pres++];
    memset(pre, 0, sizeof *pre);
    pre->kind = kind;
    switch (kind) {
    case HF_PRE_BYTELEVEL:
        if (get_bool(o, "add_prefix_space", 1, &pre->add_prefix_space) || get_bool(o, "use_regex", 1, &pre->use_regex))
            return bad(c, "%s: add_prefix_space and use_regex must be booleans", what);
        return pre->use_regex ? hf_pattern_regex(&pre->pat, GPT2_PATTERN, c->path, what, c->err) : POSEMB_OK;
    case HF_PRE_SPLIT: {
        const char *b;
        if (get_bool(o, "invert", 0, &pre->invert)) return bad(c, "%s.invert must be a boolean", what);
        if (get_str(o, "behavior", &b) || !b) return bad(c, "%s.behavior must be a string", what);
        pre->behavior = !strcmp(b, "Removed")              ? HF_REMOVED
                        : !strcmp(b, "Isolated")           ? HF_ISOLATED
                        : !strcmp(b, "MergedWithPrevious") ? HF_MERGED_PREV
                        : !strcmp(b, "MergedWithNext")     ? HF_MERGED_NEXT
                        : !strcmp(b, "Contiguous")         ? HF_CONTIGUOUS
                                                           : 0;
        if (!pre->behavior)
            return bad(c, "%s.behavior '%s' is not Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous",
                       what, b);
        return hf_pattern_load(&pre->pat, o, c->path, what, c->err);
    }
    case HF_PRE_METASPACE: {
        posemb_status st = one_char(c, o, "replacement", "\xe2\x96\x81", pre->repl, &pre->repl_len, what);
        if (!st) st = prepend_scheme(c, o, &pre->prepend, what);
        if (!st && get_bool(o, "split", 1, &pre->split)) st = bad(c, "%s.split must be a boolean", what);
        return st;
    }
    case HF_PRE_DIGITS:
        if (get_bool(o, "individual_digits", 0, &pre->individual))
            return bad(c, "%s.individual_digits must be a boolean", what);
        return POSEMB_OK;
    case HF_PRE_WHITESPACE_SPLIT:
        return POSEMB_OK;
    }
    return POSEMB_OK;
}

/* ---------------------------------------------------------------- decoder */

static posemb_status load_dec(lctx *c, const cJSON *o, const char *what, int depth)
{
    tok_hf *h = c->h;
    if (!cJSON_IsObject(o)) return bad(c, "%s is not an object", what);
    const char *ty = type_of(o);
    if (!ty) return bad(c, "%s has no string \"type\"", what);
    if (!strcmp(ty, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "decoders");
        if (!cJSON_IsArray(list)) return bad(c, "%s.decoders is not an array", what);
        if (depth >= MAX_DEPTH) return bad(c, "%s: Sequence nested too deep", what);
        int i = 0;
        for (const cJSON *x = list->child; x; x = x->next, i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.decoders[%d]", what, i);
            posemb_status st = load_dec(c, x, sub, depth + 1);
            if (st) return st;
        }
        return POSEMB_OK;
    }
    hf_dec_kind kind = !strcmp(ty, "ByteLevel")      ? HF_DEC_BYTELEVEL
                       : !strcmp(ty, "Metaspace")    ? HF_DEC_METASPACE
                       : !strcmp(ty, "ByteFallback") ? HF_DEC_BYTEFALLBACK
                       : !strcmp(ty, "Fuse")         ? HF_DEC_FUSE
                       : !strcmp(ty, "Strip")        ? HF_DEC_STRIP
                       : !strcmp(ty, "Replace")      ? HF_DEC_REPLACE
                       : !strcmp(ty, "WordPiece")    ? HF_DEC_WORDPIECE
                       : !strcmp(ty, "BPEDecoder")   ? HF_DEC_BPE
                                                     : 0;
    if (!kind)
        return bad(c,
                   "%s type '%s' is not supported (ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, "
                   "WordPiece, BPEDecoder, Sequence)",
                   what, ty);
    hf_dec *p = realloc(h->decs, (size_t)(h->n_decs + 1) * sizeof *p);
    if (!p) return oom(c);
    h->decs = p;
    hf_dec *d = &h->decs[h->n_decs++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    const char *s;
    double v1, v2;
    switch (kind) {
    case HF_DEC_METASPACE: {
        posemb_status st = one_char(c, o, "replacement", "\xe2\x96\x81", d->repl, &d->repl_len, what);
        return st ? st : prepend_scheme(c, o, &d->prepend, what);
    }
    case HF_DEC_STRIP: {
        char ch[8];
        size_t cl;
        posemb_status st = one_char(c, o, "content", " ", ch, &cl, what);
        if (st) return st;
        size_t i = 0;
        d->content = tok_utf8_next((const uint8_t *)ch, cl, &i);
        if (get_uint(o, "start", 0, 1e9, &v1) || get_uint(o, "stop", 0, 1e9, &v2))
            return bad(c, "%s: start and stop must be non-negative integers", what);
        d->start = (size_t)v1;
        d->stop = (size_t)v2;
        return POSEMB_OK;
    }
    case HF_DEC_REPLACE:
        if (get_str(o, "content", &s) || !s) return bad(c, "%s.content must be a string", what);
        if (!(d->str = dup_str(s, &d->str_len))) return oom(c);
        return hf_pattern_load(&d->pat, o, c->path, what, c->err);
    case HF_DEC_WORDPIECE:
        if (get_str(o, "prefix", &s)) return bad(c, "%s.prefix must be a string", what);
        if (!(d->str = dup_str(s ? s : "##", &d->str_len))) return oom(c);
        if (get_bool(o, "cleanup", 1, &d->cleanup)) return bad(c, "%s.cleanup must be a boolean", what);
        return POSEMB_OK;
    case HF_DEC_BPE:
        if (get_str(o, "suffix", &s)) return bad(c, "%s.suffix must be a string", what);
        if (!(d->str = dup_str(s ? s : "</w>", &d->str_len))) return oom(c);
        return POSEMB_OK;
    default:
        return POSEMB_OK;
    }
}

/* ------------------------------------------------------------------ model */

static posemb_status load_merges(lctx *c, const cJSON *model)
{
    posemb_tokenizer *t = c->t;
    tok_hf *h = c->h;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!merges || cJSON_IsNull(merges)) return POSEMB_OK;
    if (!cJSON_IsArray(merges)) return bad(c, "model.merges is not an array");
    tok_str cat = {0};
    posemb_status st = POSEMB_OK;
    uint32_t rank = 0;
    char q[96];
    for (const cJSON *m = merges->child; m && !st; m = m->next, rank++) {
        const char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        if (cJSON_IsString(m)) { /* "LEFT RIGHT": exactly one space */
            const char *sp = strchr(m->valuestring, ' ');
            if (sp && !strchr(sp + 1, ' ')) {
                a = m->valuestring;
                alen = (size_t)(sp - a);
                b = sp + 1;
                blen = strlen(b);
            }
        } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
            a = m->child->valuestring;
            b = m->child->next->valuestring;
            alen = strlen(a);
            blen = strlen(b);
        }
        if (!a || !alen || !blen) {
            st = bad(c, "model.merges[%u] is not \"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]", rank);
            break;
        }
        int32_t ia = tok_map_get(&t->vocab, a, alen), ib = tok_map_get(&t->vocab, b, blen);
        if (ia < 0 || ib < 0) {
            st = bad(c, "model.merges[%u]: '%s' is not in model.vocab", rank,
                     ia < 0 ? tok_quote(a, alen, q, sizeof q) : tok_quote(b, blen, q, sizeof q));
            break;
        }
        /* the result drops the right part's continuing_subword_prefix */
        size_t skip = h->prefix && blen >= h->prefix_len ? h->prefix_len : 0;
        cat.n = 0;
        if (tok_str_add(&cat, a, alen) || tok_str_add(&cat, b + skip, blen - skip)) {
            st = oom(c);
            break;
        }
        int32_t ir = tok_map_get(&t->vocab, cat.p, cat.n);
        if (ir < 0) {
            st = bad(c, "model.merges[%u]: the merged token '%s' is not in model.vocab", rank,
                     tok_quote(cat.p, cat.n, q, sizeof q));
            break;
        }
        if (hf_merge_add(h, ia, ib, ir, rank)) st = oom(c);
    }
    tok_str_free(&cat);
    return st;
}

static posemb_status load_model(lctx *c, const cJSON *model)
{
    posemb_tokenizer *t = c->t;
    tok_hf *h = c->h;
    char what[POSEMB_PATH_MAX + 16];
    snprintf(what, sizeof what, "%s: model.vocab", c->path);
    posemb_status st = tok_vocab_from_json(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), what, c->err);
    if (st) return st;
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return bad(c, "model.dropout is not supported (null or 0 only)");
    if (get_bool(model, "byte_fallback", 0, &h->byte_fallback) || get_bool(model, "fuse_unk", 0, &h->fuse_unk) ||
        get_bool(model, "ignore_merges", 0, &h->ignore_merges))
        return bad(c, "model: byte_fallback, fuse_unk and ignore_merges must be booleans");
    const char *s;
    if (get_str(model, "continuing_subword_prefix", &s))
        return bad(c, "model.continuing_subword_prefix must be a string");
    if (s && *s && !(h->prefix = dup_str(s, &h->prefix_len))) return oom(c);
    if (get_str(model, "end_of_word_suffix", &s)) return bad(c, "model.end_of_word_suffix must be a string");
    if (s && *s && !(h->suffix = dup_str(s, &h->suffix_len))) return oom(c);
    h->unk_id = -1;
    if (get_str(model, "unk_token", &s)) return bad(c, "model.unk_token must be a string");
    if (s && (h->unk_id = tok_map_get(&t->vocab, s, strlen(s))) < 0) {
        char q[96];
        return bad(c, "model.unk_token '%s' is not in model.vocab", tok_quote(s, strlen(s), q, sizeof q));
    }
    return load_merges(c, model);
}

/* ----------------------------------------------------------- added tokens */

static posemb_status load_added(lctx *c, const cJSON *root)
{
    tok_hf *h = c->h;
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!added || cJSON_IsNull(added)) return POSEMB_OK;
    if (!cJSON_IsArray(added)) return bad(c, "added_tokens is not an array");
    int n = cJSON_GetArraySize(added), i = 0;
    h->added = calloc((size_t)(n ? n : 1), sizeof *h->added);
    if (!h->added) return oom(c);
    tok_str norm = {0};
    posemb_status st = POSEMB_OK;
    for (const cJSON *a = added->child; a && !st; a = a->next, i++) {
        const char *content;
        double id;
        hf_added *ad = &h->added[h->n_added];
        if (get_str(a, "content", &content) || !content || !*content) {
            st = bad(c, "added_tokens[%d].content must be a non-empty string", i);
        } else if (get_uint(a, "id", -1, TOK_MAX_ID, &id) || id < 0) {
            st = bad(c, "added_tokens[%d].id must be an integer in 0..%d", i, TOK_MAX_ID - 1);
        } else if (get_bool(a, "special", 0, &ad->special) || get_bool(a, "lstrip", 0, &ad->lstrip) ||
                   get_bool(a, "rstrip", 0, &ad->rstrip) || get_bool(a, "single_word", 0, &ad->single_word) ||
                   get_bool(a, "normalized", !ad->special, &ad->normalized)) {
            st = bad(c, "added_tokens[%d]: special, normalized, lstrip, rstrip and single_word must be booleans", i);
        } else {
            ad->id = (int32_t)id;
            const char *key = content;
            size_t klen = strlen(content);
            if (ad->normalized && h->n_norms) { /* matched on normalized text: its normalized form */
                if (hf_normalize(h->norms, h->n_norms, content, klen, &norm)) st = oom(c);
                key = norm.p;
                klen = norm.n;
            }
            if (!st && klen && !(ad->str = malloc(klen + 1))) st = oom(c);
            if (!st && klen) {
                memcpy(ad->str, key, klen);
                ad->str[klen] = '\0';
                ad->len = klen;
                h->n_added++;
            }
            if (!st) st = tok_add_special(c->t, content, strlen(content), ad->id, ad->lstrip, ad->rstrip, c->err);
        }
    }
    tok_str_free(&norm);
    if (st) return st;
    /* the two tries, grouped by first byte */
    for (int pass = 0; pass < 2; pass++) {
        hf_trie *tr = pass ? &h->normed : &h->raw;
        tr->idx = malloc((size_t)(h->n_added ? h->n_added : 1) * sizeof *tr->idx);
        if (!tr->idx) return oom(c);
        int count[256] = {0};
        for (int k = 0; k < h->n_added; k++) {
            const hf_added *ad = &h->added[k];
            if (ad->normalized != pass) continue;
            unsigned b0 = (uint8_t)ad->str[0], key = b0 << 8 | (ad->len > 1 ? (uint8_t)ad->str[1] : 0);
            count[b0]++;
            if (ad->len == 1) tr->single[b0 >> 3] |= (uint8_t)(1u << (b0 & 7));
            else tr->pair[key >> 3] |= (uint8_t)(1u << (key & 7));
        }
        tr->start[0] = 0;
        for (int b = 0; b < 256; b++) tr->start[b + 1] = tr->start[b] + count[b];
        tr->n = tr->start[256];
        tr->only = -1;
        for (int b = 0; b < 256; b++)
            if (count[b]) tr->only = count[b] == tr->n ? b : -2;
        if (tr->only < 0) tr->only = -1;
        int fill[256];
        memcpy(fill, tr->start, sizeof fill);
        for (int k = 0; k < h->n_added; k++)
            if (h->added[k].normalized == pass) tr->idx[fill[(uint8_t)h->added[k].str[0]]++] = k;
    }
    return POSEMB_OK;
}

/* ------------------------------------------------------------------- all */

void tok_hf_free(tok_hf *h)
{
    if (!h) return;
    for (int i = 0; i < h->n_norms; i++) {
        free(h->norms[i].str);
        free(h->norms[i].da);
        free(h->norms[i].blob);
        hf_pattern_free(&h->norms[i].pat);
    }
    free(h->norms);
    for (int i = 0; i < h->n_pres; i++) hf_pattern_free(&h->pres[i].pat);
    free(h->pres);
    for (int i = 0; i < h->n_decs; i++) {
        free(h->decs[i].str);
        hf_pattern_free(&h->decs[i].pat);
    }
    free(h->decs);
    for (int i = 0; i < h->n_added; i++) free(h->added[i].str);
    free(h->added);
    free(h->raw.idx);
    free(h->normed.idx);
    free(h->is_special);
    free(h->prefix);
    free(h->suffix);
    tok_merges_free(&h->merges);
    free(h->scores);
    tok_merges_free(&h->trie);
    free(h->dup_id);
    free(h->dup_entry);
    free(h);
}

static int32_t first_of(const posemb_tokenizer *t, const char *const *names)
{
    for (; *names; names++) {
        int32_t id = tok_id_of(t, *names);
        if (id >= 0) return id;
    }
    return -1;
}

posemb_status tok_hf_load(posemb_tokenizer *t, const cJSON *root, const char *path, posemb_error *err)
{
    tok_hf *h = calloc(1, sizeof *h);
    if (!h) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    t->hf = h;
    tok_byte_alphabet(h->byte_cp, h->cp_byte);
    lctx c = {t, h, path, err};
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    posemb_status st = t->model == POSEMB_TOK_UNIGRAM ? hf_unigram_load(t, model, path, err) : load_model(&c, model);
    for (int b = 0; !st && b < 256; b++) { /* the <0xNN> tokens of byte_fallback, for either model */
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        h->byte_id[b] = h->byte_fallback ? tok_map_get(&t->vocab, name, 6) : -1;
    }
    if (!st && norm && !cJSON_IsNull(norm)) st = load_norm(&c, norm, "normalizer", 0);
    if (!st && pre && !cJSON_IsNull(pre)) st = load_pre(&c, pre, "pre_tokenizer", 0);
    if (!st && dec && !cJSON_IsNull(dec)) st = load_dec(&c, dec, "decoder", 0);
    if (!st) st = load_added(&c, root);
    if (!st) st = tok_finish(t, err);
    if (st) return st;
    if (t->model == POSEMB_TOK_UNIGRAM) hf_unigram_finish(t);
    for (int k = 1; k < h->n_pres; k++)
        if (h->pres[k].kind == HF_PRE_METASPACE && h->pres[k].prepend == 2) h->first_sensitive = 1;
    h->is_special = calloc((size_t)t->n_ids + 1, 1);
    if (!h->is_special) return oom(&c);
    for (int i = 0; i < h->n_added; i++)
        if (h->added[i].special) h->is_special[h->added[i].id] = 1;
    static const char *const BOS[] = {"<|begin_of_text|>", "<s>", "<|endoftext|>", NULL};
    static const char *const EOS[] = {"<|end_of_text|>", "</s>", "<|endoftext|>", NULL};
    static const char *const PAD[] = {"<pad>", "<|pad|>", "[PAD]", NULL};
    t->special_ids[POSEMB_SPECIAL_UNK] = h->unk_id;
    t->special_ids[POSEMB_SPECIAL_BOS] = first_of(t, BOS);
    t->special_ids[POSEMB_SPECIAL_EOS] = first_of(t, EOS);
    t->special_ids[POSEMB_SPECIAL_PAD] = first_of(t, PAD);
    return POSEMB_OK;
}
