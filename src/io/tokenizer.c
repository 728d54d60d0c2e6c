/* The parts shared by both tokenizer models: the string map, UTF-8
 * helpers, loading (vocab.txt, encoder.json + vocab.bpe, tokenizer.json),
 * special tokens, the encode driver and decoding. The model-specific
 * halves are wordpiece.c and bpe.c. See include/posemb/tokenizer.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "tokenizer_impl.h"

/* ================================================================ map */

/* FNV-1a: simple, and good enough for short token strings. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static int map_grow_slots(tok_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t e = 0; e < m->n; e++) {
        size_t i = m->hash[e] & (cap - 1);
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

static int map_grow_entries(tok_map *m)
{
    size_t ecap = m->ecap ? m->ecap * 2 : 64;
    uint32_t *hash = realloc(m->hash, ecap * sizeof *hash);
    if (hash) m->hash = hash;
    size_t *off = realloc(m->off, ecap * sizeof *off);
    if (off) m->off = off;
    uint32_t *len = realloc(m->len, ecap * sizeof *len);
    if (len) m->len = len;
    int32_t *val = realloc(m->val, ecap * sizeof *val);
    if (val) m->val = val;
    if (!hash || !off || !len || !val) return -1;
    m->ecap = ecap;
    return 0;
}

static int map_reserve_pool(tok_map *m, size_t extra)
{
    if (m->pool_len + extra <= m->pool_cap) return 0;
    size_t cap = m->pool_cap ? m->pool_cap : 4096;
    while (cap < m->pool_len + extra) cap *= 2;
    char *pool = realloc(m->pool, cap);
    if (!pool) return -1;
    m->pool = pool;
    m->pool_cap = cap;
    return 0;
}

static long map_lookup(const tok_map *m, const char *key, size_t len, uint32_t h, size_t *slot)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = h & mask;
    while (m->slots[i]) {
        size_t e = m->slots[i] - 1;
        if (m->hash[e] == h && m->len[e] == len && !memcmp(m->pool + m->off[e], key, len)) return (long)e;
        i = (i + 1) & mask;
    }
    if (slot) *slot = i;
    return -1;
}

int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, size_t *entry)
{
    if (len >= UINT32_MAX || m->n >= UINT32_MAX - 1) return -1;
    if ((m->n + 1) * 2 > m->cap && map_grow_slots(m)) return -1;
    uint32_t h = hash_bytes(key, len);
    size_t slot = 0;
    long found = map_lookup(m, key, len, h, &slot);
    if (found >= 0) {
        if (entry) *entry = (size_t)found;
        return 1;
    }
    if (m->n == m->ecap && map_grow_entries(m)) return -1;
    if (map_reserve_pool(m, len + 1)) return -1;
    size_t e = m->n++;
    memcpy(m->pool + m->pool_len, key, len);
    m->pool[m->pool_len + len] = '\0';
    m->off[e] = m->pool_len;
    m->pool_len += len + 1;
    m->len[e] = (uint32_t)len;
    m->hash[e] = h;
    m->val[e] = val;
    m->slots[slot] = (uint32_t)(e + 1);
    if (entry) *entry = e;
    return 0;
}

long tok_map_find(const tok_map *m, const char *key, size_t len)
{
    return map_lookup(m, key, len, hash_bytes(key, len), NULL);
}

int32_t tok_map_get(const tok_map *m, const char *key, size_t len)
{
    long e = tok_map_find(m, key, len);
    return e < 0 ? -1 : m->val[e];
}

const char *tok_map_key(const tok_map *m, size_t entry, size_t *len)
{
    if (len) *len = m->len[entry];
    return m->pool + m->off[entry];
}

void tok_map_free(tok_map *m)
{
    free(m->slots);
    free(m->hash);
    free(m->off);
    free(m->len);
    free(m->val);
    free(m->pool);
    memset(m, 0, sizeof *m);
}

/* ============================================================ helpers */

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
            i++;
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

/* ========================================================== tokenizer */

posemb_tokenizer *tok_new(posemb_tok_model model)
{
    posemb_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->model = model;
    for (int i = 0; i < POSEMB_SPECIAL_COUNT; i++) t->special_ids[i] = -1;
    return t;
}

void posemb_tokenizer_free(posemb_tokenizer *t)
{
    if (!t) return;
    tok_map_free(&t->vocab);
    free(t->id_str);
    free(t->id_len);
    for (int i = 0; i < t->n_specials; i++) free(t->specials[i].str);
    free(t->specials);
    free(t->single.items);
    free(t->pair.items);
    tok_bpe_free(t->bpe);
    free(t);
}

static int special_cmp(const void *a, const void *b)
{
    const tok_special *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->str, y->str, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

posemb_status tok_add_special(posemb_tokenizer *t, const char *str, size_t len, int32_t id, int lstrip, int rstrip,
                              posemb_error *err)
{
    if (!len) return POSEMB_OK; /* an empty token can never be matched */
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].len == len && !memcmp(t->specials[i].str, str, len)) return POSEMB_OK;
    tok_special *sp = realloc(t->specials, (size_t)(t->n_specials + 1) * sizeof *sp);
    if (!sp) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    t->specials = sp;
    char *copy = malloc(len + 1);
    if (!copy) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    memcpy(copy, str, len);
    copy[len] = '\0';
    sp[t->n_specials++] = (tok_special){copy, len, id, lstrip, rstrip};
    /* HF lower-cases with the regex "(tok1|tok2|...)|(.+?)" over the sorted
     * token list, so the first listed token that matches wins there. */
    qsort(t->specials, (size_t)t->n_specials, sizeof *sp, special_cmp);
    uint8_t c = (uint8_t)str[0];
    t->special_first[c >> 3] |= (uint8_t)(1u << (c & 7));
    return POSEMB_OK;
}

posemb_status tok_finish(posemb_tokenizer *t, posemb_error *err)
{
    int32_t max_id = -1;
    for (size_t e = 0; e < t->vocab.n; e++)
        if (t->vocab.val[e] > max_id) max_id = t->vocab.val[e];
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].id > max_id) max_id = t->specials[i].id;
    t->n_ids = max_id + 1;
    t->id_str = calloc((size_t)t->n_ids + 1, sizeof *t->id_str);
    t->id_len = calloc((size_t)t->n_ids + 1, sizeof *t->id_len);
    if (!t->id_str || !t->id_len) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    for (size_t e = 0; e < t->vocab.n; e++) {
        size_t len;
        t->id_str[t->vocab.val[e]] = tok_map_key(&t->vocab, e, &len);
        t->id_len[t->vocab.val[e]] = (uint32_t)len;
    }
    /* Added tokens that are not in the vocabulary (HF's added_tokens_encoder). */
    for (int i = 0; i < t->n_specials; i++) {
        tok_special *sp = &t->specials[i];
        if (!t->id_str[sp->id]) {
            t->id_str[sp->id] = sp->str;
            t->id_len[sp->id] = (uint32_t)sp->len;
        }
    }
    return POSEMB_OK;
}

static posemb_status set_template(tok_template *tp, const tok_item *items, int n, posemb_error *err)
{
    free(tp->items);
    tp->items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!tp->items) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    memcpy(tp->items, items, (size_t)n * sizeof *items);
    tp->n = n;
    return POSEMB_OK;
}

/* GPT-2's: nothing added; a pair is A then B with types 0 and 1. */
static posemb_status plain_templates(posemb_tokenizer *t, posemb_error *err)
{
    tok_item a = {0, -1, 0}, b = {1, -1, 1};
    tok_item pair[2] = {a, b};
    posemb_status st = set_template(&t->single, &a, 1, err);
    return st ? st : set_template(&t->pair, pair, 2, err);
}

posemb_status tok_bert_templates(posemb_tokenizer *t, posemb_error *err)
{
    int32_t cls = t->special_ids[POSEMB_SPECIAL_CLS], sep = t->special_ids[POSEMB_SPECIAL_SEP];
    if (cls < 0 || sep < 0) return plain_templates(t, err);
    tok_item single[3] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}};
    tok_item pair[5] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}, {1, -1, 1}, {-1, sep, 1}};
    posemb_status st = set_template(&t->single, single, 3, err);
    return st ? st : set_template(&t->pair, pair, 5, err);
}

/* ============================================================ loading */

posemb_status tok_vocab_from_json(posemb_tokenizer *t, const cJSON *obj, const char *what, posemb_error *err)
{
    char q[96], q2[96];
    if (!cJSON_IsObject(obj)) return posemb_fail(err, POSEMB_EFORMAT, "%s: not a JSON object of token -> id", what);
    int32_t *seen = NULL; /* id -> entry + 1: to name both tokens of a duplicate id */
    size_t seen_cap = 0;
    posemb_status st = POSEMB_OK;
    for (const cJSON *c = obj->child; c && !st; c = c->next) {
        const char *key = c->string ? c->string : "";
        size_t klen = strlen(key);
        if (!tok_utf8_valid(key, klen)) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: key '%s' is not valid UTF-8", what,
                             tok_quote(key, klen, q, sizeof q));
            break;
        }
        double v = cJSON_IsNumber(c) ? c->valuedouble : -1;
        if (!cJSON_IsNumber(c) || v < 0 || v != floor(v)) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: the id of '%s' is not a non-negative integer", what,
                             tok_quote(key, klen, q, sizeof q));
            break;
        }
        if (v >= TOK_MAX_ID) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: the id %.0f of '%s' is over the limit %d", what, v,
                             tok_quote(key, klen, q, sizeof q), TOK_MAX_ID - 1);
            break;
        }
        int32_t id = (int32_t)v;
        if ((size_t)id >= seen_cap) {
            size_t cap = seen_cap ? seen_cap : 1024;
            while (cap <= (size_t)id) cap *= 2;
            int32_t *ns = realloc(seen, cap * sizeof *ns);
            if (!ns) {
                st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", what);
                break;
            }
            memset(ns + seen_cap, 0, (cap - seen_cap) * sizeof *ns);
            seen = ns;
            seen_cap = cap;
        }
        if (seen[id]) {
            size_t olen;
            const char *other = tok_map_key(&t->vocab, (size_t)seen[id] - 1, &olen);
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: id %d of '%s' is also the id of '%s'", what, id,
                             tok_quote(key, klen, q, sizeof q), tok_quote(other, olen, q2, sizeof q2));
            break;
        }
        size_t e;
        int r = tok_map_put(&t->vocab, key, klen, id, &e);
        if (r < 0) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", what);
        else if (r == 1)
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: duplicate key '%s'", what, tok_quote(key, klen, q, sizeof q));
        else seen[id] = (int32_t)e + 1;
    }
    free(seen);
    return st;
}

static posemb_status parse_json_file(const char *path, cJSON **root, posemb_error *err)
{
    char *buf;
    size_t len;
    posemb_status st = tok_read_file(path, &buf, &len, err);
    if (st) return st;
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!*root) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: invalid JSON (line %ld)", path, tok_line_of(buf, off));
    }
    free(buf);
    return st;
}

/* The BERT special tokens of a vocab.txt, as BertTokenizer.from_pretrained
 * sets them up: each is kept whole and strips the whitespace around it (a
 * plain-string special token in HF); one missing from the file is added
 * after the vocabulary, in HF's order (unk, sep, pad, cls, mask). */
static posemb_status wordpiece_specials(posemb_tokenizer *t, const char *path, posemb_error *err)
{
    static const struct {
        const char *str;
        posemb_special which;
    } SPECIALS[] = {{"[UNK]", POSEMB_SPECIAL_UNK},
                    {"[SEP]", POSEMB_SPECIAL_SEP},
                    {"[PAD]", POSEMB_SPECIAL_PAD},
                    {"[CLS]", POSEMB_SPECIAL_CLS},
                    {"[MASK]", POSEMB_SPECIAL_MASK}};
    int32_t next = 0;
    for (size_t e = 0; e < t->vocab.n; e++)
        if (t->vocab.val[e] >= next) next = t->vocab.val[e] + 1;
    for (size_t i = 0; i < sizeof SPECIALS / sizeof SPECIALS[0]; i++) {
        const char *s = SPECIALS[i].str;
        int32_t id = tok_map_get(&t->vocab, s, strlen(s));
        if (id < 0 && SPECIALS[i].which == POSEMB_SPECIAL_UNK)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: no [UNK] line (WordPiece needs an unknown token)", path);
        if (id < 0) id = next++;
        t->special_ids[SPECIALS[i].which] = id;
        posemb_status st = tok_add_special(t, s, strlen(s), id, 1, 1, err);
        if (st) return st;
    }
    return POSEMB_OK;
}

posemb_status posemb_tokenizer_load_wordpiece(const char *vocab_path, int lowercase, posemb_tokenizer **out,
                                              posemb_error *err)
{
    *out = NULL;
    posemb_tokenizer *t = tok_new(POSEMB_TOK_WORDPIECE);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    t->wp = (tok_wordpiece){.lowercase = !!lowercase,
                            .strip_accents = !!lowercase,
                            .clean_text = 1,
                            .chinese = 1,
                            .max_chars = 100,
                            .prefix = "##",
                            .prefix_len = 2};
    posemb_status st = tok_wp_load_vocab_txt(t, vocab_path, err);
    if (!st) st = wordpiece_specials(t, vocab_path, err);
    if (!st) st = tok_finish(t, err);
    if (!st) st = tok_bert_templates(t, err);
    if (st) {
        posemb_tokenizer_free(t);
        return st;
    }
    tok_wp_limits(t);
    *out = t;
    return POSEMB_OK;
}

/* GPT2Tokenizer's unk, bos and eos are all <|endoftext|>, a special token
 * that keeps the whitespace around it (AddedToken lstrip=rstrip=False). */
static posemb_status gpt2_specials(posemb_tokenizer *t, posemb_error *err)
{
    static const char EOT[] = "<|endoftext|>";
    int32_t id = tok_map_get(&t->vocab, EOT, sizeof EOT - 1);
    if (id < 0) return POSEMB_OK;
    t->special_ids[POSEMB_SPECIAL_UNK] = t->special_ids[POSEMB_SPECIAL_BOS] = t->special_ids[POSEMB_SPECIAL_EOS] =
        id;
    return tok_add_special(t, EOT, sizeof EOT - 1, id, 0, 0, err);
}

posemb_status posemb_tokenizer_load_bpe(const char *encoder_path, const char *merges_path, posemb_tokenizer **out,
                                        posemb_error *err)
{
    *out = NULL;
    posemb_tokenizer *t = tok_new(POSEMB_TOK_BPE);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    cJSON *root = NULL;
    posemb_status st = parse_json_file(encoder_path, &root, err);
    if (!st) st = tok_vocab_from_json(t, root, encoder_path, err);
    cJSON_Delete(root);
    if (!st) st = tok_bpe_new(t, err);
    if (!st) st = tok_bpe_load_merges(t, merges_path, err);
    if (!st) st = gpt2_specials(t, err);
    if (!st) st = tok_bpe_finish(t, t->special_ids[POSEMB_SPECIAL_UNK], 0, err);
    if (!st) st = tok_finish(t, err);
    if (!st) st = plain_templates(t, err);
    if (st) {
        posemb_tokenizer_free(t);
        return st;
    }
    *out = t;
    return POSEMB_OK;
}

/* ------------------------------------------------------ tokenizer.json */

typedef struct json_ctx {
    const char *path;
    posemb_error *err;
} json_ctx;

static const char *json_type(const cJSON *o)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

/* A boolean member: def when absent or null; -1 when of another type. */
static int json_bool(const cJSON *o, const char *key, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return def;
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return -1;
}

static int json_null_or_empty(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return !v || cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]);
}

static posemb_status json_bad(json_ctx *c, const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    return posemb_fail(c->err, POSEMB_EFORMAT, "%s: %s", c->path, msg);
}

/* added_tokens: each is matched whole, as the tokenizers library does. */
static posemb_status json_added_tokens(posemb_tokenizer *t, const cJSON *root, json_ctx *c)
{
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!added || cJSON_IsNull(added)) return POSEMB_OK;
    if (!cJSON_IsArray(added)) return json_bad(c, "%s is not an array", "added_tokens");
    int i = 0;
    for (const cJSON *a = added->child; a; a = a->next, i++) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        int lstrip = json_bool(a, "lstrip", 0), rstrip = json_bool(a, "rstrip", 0);
        if (!cJSON_IsString(content) || !cJSON_IsNumber(id) || id->valuedouble < 0 ||
            id->valuedouble >= TOK_MAX_ID || id->valuedouble != floor(id->valuedouble) || lstrip < 0 || rstrip < 0) {
            char what[64];
            snprintf(what, sizeof what, "added_tokens[%d]", i);
            return json_bad(c, "%s needs a string content, an id in range and boolean lstrip/rstrip", what);
        }
        size_t len = strlen(content->valuestring);
        if (!tok_utf8_valid(content->valuestring, len)) return json_bad(c, "%s is not valid UTF-8", "added token");
        posemb_status st = tok_add_special(t, content->valuestring, len, (int32_t)id->valuedouble, lstrip, rstrip,
                                           c->err);
        if (st) return st;
    }
    return POSEMB_OK;
}

/* The id of a special token, looked up among the added tokens, then the vocab. */
static int32_t json_token_id(const posemb_tokenizer *t, const char *s)
{
    size_t len = strlen(s);
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].len == len && !memcmp(t->specials[i].str, s, len)) return t->specials[i].id;
    return tok_map_get(&t->vocab, s, len);
}

static posemb_status json_wordpiece(posemb_tokenizer *t, const cJSON *root, const cJSON *model, json_ctx *c)
{
    t->wp = (tok_wordpiece){.max_chars = 100, .prefix = "##", .prefix_len = 2};
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (norm && !cJSON_IsNull(norm)) {
        const char *ty = json_type(norm);
        if (!ty || strcmp(ty, "BertNormalizer"))
            return json_bad(c, "normalizer type '%s' is not supported with WordPiece (BertNormalizer or none)",
                            ty ? ty : "?");
        int lower = json_bool(norm, "lowercase", 1), strip = json_bool(norm, "strip_accents", -2);
        int clean = json_bool(norm, "clean_text", 1), cjk = json_bool(norm, "handle_chinese_chars", 1);
        if (lower < 0 || clean < 0 || cjk < 0 || strip == -1)
            return json_bad(c, "%s: lowercase, strip_accents, clean_text and handle_chinese_chars must be booleans",
                            "normalizer");
        t->wp.lowercase = lower;
        t->wp.strip_accents = strip == -2 ? lower : strip; /* null: as lowercase, as HF */
        t->wp.clean_text = clean;
        t->wp.chinese = cjk;
    }
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (pre && !cJSON_IsNull(pre)) {
        const char *ty = json_type(pre);
        if (!ty || strcmp(ty, "BertPreTokenizer"))
            return json_bad(c, "pre_tokenizer type '%s' is not supported with WordPiece (BertPreTokenizer or none)",
                            ty ? ty : "?");
    }
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix");
    if (prefix && !cJSON_IsNull(prefix)) {
        if (!cJSON_IsString(prefix) || strlen(prefix->valuestring) >= sizeof t->wp.prefix)
            return json_bad(c, "%s must be a string of at most 15 bytes", "model.continuing_subword_prefix");
        strcpy(t->wp.prefix, prefix->valuestring);
        t->wp.prefix_len = strlen(prefix->valuestring);
    }
    const cJSON *maxc = cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word");
    if (maxc && !cJSON_IsNull(maxc)) {
        if (!cJSON_IsNumber(maxc) || maxc->valuedouble < 0 || maxc->valuedouble > INT_MAX)
            return json_bad(c, "%s must be a non-negative integer", "model.max_input_chars_per_word");
        t->wp.max_chars = (int)maxc->valuedouble;
    }
    char what[4200];
    snprintf(what, sizeof what, "%s: model.vocab", c->path);
    posemb_status st = tok_vocab_from_json(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), what, c->err);
    if (st) return st;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (!cJSON_IsString(unk) || tok_map_get(&t->vocab, unk->valuestring, strlen(unk->valuestring)) < 0)
        return json_bad(c, "%s is missing or not in model.vocab", "model.unk_token");
    t->special_ids[POSEMB_SPECIAL_UNK] = tok_map_get(&t->vocab, unk->valuestring, strlen(unk->valuestring));
    st = json_added_tokens(t, root, c);
    if (st) return st;
    t->special_ids[POSEMB_SPECIAL_PAD] = json_token_id(t, "[PAD]");
    t->special_ids[POSEMB_SPECIAL_CLS] = json_token_id(t, "[CLS]");
    t->special_ids[POSEMB_SPECIAL_SEP] = json_token_id(t, "[SEP]");
    t->special_ids[POSEMB_SPECIAL_MASK] = json_token_id(t, "[MASK]");
    return POSEMB_OK;
}

static posemb_status json_bpe(posemb_tokenizer *t, const cJSON *root, const cJSON *model, json_ctx *c)
{
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (norm && !cJSON_IsNull(norm))
        return json_bad(c, "a normalizer ('%s') is not supported with BPE", json_type(norm) ? json_type(norm) : "?");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const char *pty = pre ? json_type(pre) : NULL;
    if (!pty || strcmp(pty, "ByteLevel"))
        return json_bad(c, "BPE is supported only with a ByteLevel pre_tokenizer (got '%s')", pty ? pty : "none");
    int prefix_space = json_bool(pre, "add_prefix_space", 1), use_regex = json_bool(pre, "use_regex", 1);
    if (prefix_space < 0 || use_regex != 1)
        return json_bad(c, "%s: add_prefix_space must be a boolean and use_regex true", "pre_tokenizer");
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if ((dropout && !cJSON_IsNull(dropout)) || !json_null_or_empty(model, "continuing_subword_prefix") ||
        !json_null_or_empty(model, "end_of_word_suffix") || json_bool(model, "byte_fallback", 0) != 0)
        return json_bad(c, "%s: dropout, continuing_subword_prefix, end_of_word_suffix and byte_fallback are not "
                           "supported",
                        "model");
    char what[4200];
    snprintf(what, sizeof what, "%s: model.vocab", c->path);
    posemb_status st = tok_vocab_from_json(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), what, c->err);
    if (!st) st = tok_bpe_new(t, c->err);
    if (st) return st;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return json_bad(c, "%s is missing or not an array", "model.merges");
    int i = 0;
    for (const cJSON *m = merges->child; m; m = m->next, i++) {
        const char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        if (cJSON_IsString(m)) { /* "LEFT RIGHT" */
            const char *sp = strchr(m->valuestring, ' ');
            if (sp && sp != m->valuestring && sp[1] && !strchr(sp + 1, ' ')) {
                a = m->valuestring;
                alen = (size_t)(sp - a);
                b = sp + 1;
                blen = strlen(b);
            }
        } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
            a = m->child->valuestring; /* ["LEFT", "RIGHT"] */
            b = m->child->next->valuestring;
            alen = strlen(a);
            blen = strlen(b);
        }
        char idx[64];
        snprintf(idx, sizeof idx, "model.merges[%d]", i);
        if (!a || !alen || !blen) return json_bad(c, "%s is not a pair 'LEFT RIGHT'", idx);
        if (!tok_utf8_valid(a, alen) || !tok_utf8_valid(b, blen)) return json_bad(c, "%s is not valid UTF-8", idx);
        int prev;
        int r = tok_bpe_add_merge(t, a, alen, b, blen, &prev);
        if (r < 0) return posemb_fail(c->err, POSEMB_ENOMEM, "out of memory");
        if (r == 1) return json_bad(c, "%s repeats an earlier merge", idx);
    }
    st = json_added_tokens(t, root, c);
    if (st) return st;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    int32_t unk_id = -1;
    if (cJSON_IsString(unk)) {
        unk_id = json_token_id(t, unk->valuestring);
        if (unk_id < 0) return json_bad(c, "%s is not in model.vocab", "model.unk_token");
    }
    int32_t eot = json_token_id(t, "<|endoftext|>");
    t->special_ids[POSEMB_SPECIAL_UNK] = unk_id;
    t->special_ids[POSEMB_SPECIAL_BOS] = eot >= 0 ? eot : json_token_id(t, "<s>");
    t->special_ids[POSEMB_SPECIAL_EOS] = eot >= 0 ? eot : json_token_id(t, "</s>");
    t->special_ids[POSEMB_SPECIAL_CLS] = json_token_id(t, "<s>");
    t->special_ids[POSEMB_SPECIAL_SEP] = json_token_id(t, "</s>");
    t->special_ids[POSEMB_SPECIAL_PAD] = json_token_id(t, "<pad>");
    t->special_ids[POSEMB_SPECIAL_MASK] = json_token_id(t, "<mask>");
    return tok_bpe_finish(t, unk_id, prefix_space, c->err);
}

/* A [TOKEN, ID] member of BertProcessing / RobertaProcessing. */
static int32_t json_pair_id(const cJSON *pp, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pp, key);
    if (cJSON_GetArraySize(v) != 2 || !cJSON_IsNumber(v->child->next)) return -1;
    double id = v->child->next->valuedouble;
    return id >= 0 && id < TOK_MAX_ID && id == floor(id) ? (int32_t)id : -1;
}

/* One template of TemplateProcessing into items. */
static posemb_status json_template(const cJSON *pp, const char *which, tok_template *out, json_ctx *c)
{
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(pp, which);
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
    if (!cJSON_IsArray(tpl)) return json_bad(c, "post_processor.%s is not an array", which);
    tok_item items[256];
    int n = 0;
    for (const cJSON *it = tpl->child; it; it = it->next) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
        const cJSON *body = sp ? sp : seq;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(body, "id");
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(body, "type_id");
        int type_id = cJSON_IsNumber(ty) ? (int)ty->valuedouble : 0;
        if (!body || !cJSON_IsString(id)) return json_bad(c, "post_processor.%s has an item of unknown form", which);
        if (seq) {
            if (n >= 256) return json_bad(c, "post_processor.%s is too long", which);
            items[n++] = (tok_item){strcmp(id->valuestring, "B") ? 0 : 1, -1, type_id};
            continue;
        }
        const cJSON *entry = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
        if (!cJSON_IsArray(ids)) return json_bad(c, "post_processor: special token '%s' has no ids", id->valuestring);
        for (const cJSON *x = ids->child; x; x = x->next) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= TOK_MAX_ID || n >= 256)
                return json_bad(c, "post_processor: special token '%s' has a bad id", id->valuestring);
            items[n++] = (tok_item){-1, (int32_t)x->valuedouble, type_id};
        }
    }
    return set_template(out, items, n, c->err);
}

static posemb_status json_post_processor(posemb_tokenizer *t, const cJSON *root, json_ctx *c)
{
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
    const char *ty = pp && !cJSON_IsNull(pp) ? json_type(pp) : NULL;
    if (ty && !strcmp(ty, "Sequence")) { /* e.g. [ByteLevel, TemplateProcessing]: the template decides */
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pp, "processors");
        const cJSON *found = NULL;
        for (const cJSON *p = list ? list->child : NULL; p; p = p->next) {
            const char *pty = json_type(p);
            if (pty && strcmp(pty, "ByteLevel")) found = p;
        }
        pp = found;
        ty = found ? json_type(found) : NULL;
    }
    if (!ty || !strcmp(ty, "ByteLevel")) return plain_templates(t, c->err);
    if (!strcmp(ty, "TemplateProcessing")) {
        posemb_status st = json_template(pp, "single", &t->single, c);
        return st ? st : json_template(pp, "pair", &t->pair, c);
    }
    int32_t cls = json_pair_id(pp, "cls"), sep = json_pair_id(pp, "sep");
    if ((!strcmp(ty, "BertProcessing") || !strcmp(ty, "RobertaProcessing")) && (cls < 0 || sep < 0))
        return json_bad(c, "post_processor %s needs cls and sep as [TOKEN, ID]", ty);
    if (!strcmp(ty, "BertProcessing")) {
        t->special_ids[POSEMB_SPECIAL_CLS] = cls;
        t->special_ids[POSEMB_SPECIAL_SEP] = sep;
        return tok_bert_templates(t, c->err);
    }
    if (!strcmp(ty, "RobertaProcessing")) { /* <s> A </s> and <s> A </s></s> B </s>, all type 0 */
        tok_item single[3] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}};
        tok_item pair[6] = {{-1, cls, 0}, {0, -1, 0}, {-1, sep, 0}, {-1, sep, 0}, {1, -1, 0}, {-1, sep, 0}};
        posemb_status st = set_template(&t->single, single, 3, c->err);
        return st ? st : set_template(&t->pair, pair, 6, c->err);
    }
    return json_bad(c, "post_processor type '%s' is not supported", ty);
}

posemb_status posemb_tokenizer_load_json(const char *path, posemb_tokenizer **out, posemb_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    posemb_status st = parse_json_file(path, &root, err);
    if (st) return st;
    json_ctx c = {path, err};
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char *ty = cJSON_IsObject(model) ? json_type(model) : NULL;
    posemb_tokenizer *t = NULL;
    if (!cJSON_IsObject(root) || !cJSON_IsObject(model)) {
        st = json_bad(&c, "%s: no \"model\" object (not a tokenizer.json?)", "tokenizer.json");
    } else if (!ty) {
        /* Old files leave out model.type for BPE; vocab + merges says which. */
        ty = cJSON_GetObjectItemCaseSensitive(model, "merges") ? "BPE" : "?";
    }
    if (!st && strcmp(ty, "WordPiece") && strcmp(ty, "BPE"))
        st = json_bad(&c, "model type '%s' is not supported (WordPiece, or BPE with a ByteLevel pre-tokenizer)", ty);
    if (!st) {
        t = tok_new(!strcmp(ty, "BPE") ? POSEMB_TOK_BPE : POSEMB_TOK_WORDPIECE);
        if (!t) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    if (!st) st = t->model == POSEMB_TOK_BPE ? json_bpe(t, root, model, &c) : json_wordpiece(t, root, model, &c);
    if (!st) st = tok_finish(t, err);
    if (!st) st = json_post_processor(t, root, &c);
    for (int k = 0; !st && k < 2; k++) { /* every template id must exist */
        const tok_template *tp = k ? &t->pair : &t->single;
        for (int i = 0; i < tp->n && !st; i++)
            if (tp->items[i].seq < 0 && (tp->items[i].id >= t->n_ids || !t->id_str[tp->items[i].id]))
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: post_processor uses id %d, which has no token", path,
                                 tp->items[i].id);
    }
    cJSON_Delete(root);
    if (st) {
        posemb_tokenizer_free(t);
        return st;
    }
    if (t->model == POSEMB_TOK_WORDPIECE) tok_wp_limits(t);
    *out = t;
    return POSEMB_OK;
}

/* ========================================================== accessors */

posemb_tok_model posemb_tokenizer_model(const posemb_tokenizer *t) { return t->model; }

int posemb_tokenizer_vocab_size(const posemb_tokenizer *t) { return t->n_ids; }

int32_t posemb_tokenizer_token_id(const posemb_tokenizer *t, const char *token)
{
    return json_token_id(t, token);
}

const char *posemb_tokenizer_id_token(const posemb_tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_ids ? t->id_str[id] : NULL;
}

int32_t posemb_tokenizer_special_id(const posemb_tokenizer *t, posemb_special which)
{
    return (int)which >= 0 && which < POSEMB_SPECIAL_COUNT ? t->special_ids[which] : -1;
}

/* =========================================================== encoding */

void posemb_encoding_init(posemb_encoding *enc) { memset(enc, 0, sizeof *enc); }

void posemb_encoding_free(posemb_encoding *enc)
{
    free(enc->ids);
    free(enc->type_ids);
    free(enc->tokens);
    memset(enc, 0, sizeof *enc);
}

static posemb_status enc_grow(tok_out *o)
{
    posemb_encoding *e = o->enc;
    if (e->cap >= INT_MAX / 2) return posemb_fail(o->err, POSEMB_ERANGE, "more than %d tokens", INT_MAX / 2);
    int cap = e->cap ? e->cap * 2 : 256;
    int32_t *ids = realloc(e->ids, (size_t)cap * sizeof *ids);
    if (ids) e->ids = ids;
    int32_t *types = realloc(e->type_ids, (size_t)cap * sizeof *types);
    if (types) e->type_ids = types;
    if (!ids || !types) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    if (e->tokens || o->want_tokens) {
        const char **toks = realloc(e->tokens, (size_t)cap * sizeof *toks);
        if (!toks) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        e->tokens = toks;
    }
    e->cap = cap;
    return POSEMB_OK;
}

posemb_status tok_out_push(tok_out *o, int32_t id, const char *str, size_t len)
{
    posemb_encoding *e = o->enc;
    (void)len;
    if (e->n == e->cap || (o->want_tokens && !e->tokens)) {
        posemb_status st = enc_grow(o);
        if (st) return st;
    }
    e->ids[e->n] = id;
    e->type_ids[e->n] = o->type_id;
    if (e->tokens) e->tokens[e->n] = str;
    e->n++;
    return POSEMB_OK;
}

/* The leftmost special token in s[from..n), the longest one there (what
 * HF's Trie.split finds); NULL if none. */
static const tok_special *find_special(const posemb_tokenizer *t, const char *s, size_t n, size_t from, size_t *at)
{
    for (size_t i = from; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (!(t->special_first[c >> 3] & (1u << (c & 7)))) continue;
        const tok_special *best = NULL;
        for (int k = 0; k < t->n_specials; k++) {
            const tok_special *sp = &t->specials[k];
            if (sp->len <= n - i && (!best || sp->len > best->len) && !memcmp(s + i, sp->str, sp->len)) best = sp;
        }
        if (best) {
            *at = i;
            return best;
        }
    }
    return NULL;
}

/* Python's str.lstrip / rstrip on s[a..b): the new bounds. */
static size_t skip_space_left(const char *s, size_t a, size_t b)
{
    while (a < b) {
        size_t i = a;
        int32_t cp = tok_utf8_next((const uint8_t *)s, b, &i);
        if (cp < 0 || !tok_py_isspace(cp)) break;
        a = i;
    }
    return a;
}

static size_t skip_space_right(const char *s, size_t a, size_t b)
{
    size_t end = a, i = a;
    while (i < b) {
        int32_t cp = tok_utf8_next((const uint8_t *)s, b, &i);
        if (cp < 0 || !tok_py_isspace(cp)) end = i;
    }
    return end;
}

static posemb_status encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o)
{
    return t->model == POSEMB_TOK_BPE ? tok_bpe_encode_chunk(t, s, n, o) : tok_wp_encode_chunk(t, s, n, o);
}

/* One text: special tokens split out (with the whitespace stripping each
 * asks for), the rest encoded by the model, as HF's tokenize. */
static posemb_status encode_text(const posemb_tokenizer *t, const char *text, size_t len, tok_out *o)
{
    char *own = NULL;
    const char *s = text ? text : "";
    size_t n = text ? len : 0;
    posemb_status st = POSEMB_OK;
    if (t->model == POSEMB_TOK_WORDPIECE) {
        st = tok_wp_prepare(t, s, n, &own, &n, o->err);
        if (st) return st;
        if (own) s = own;
    } else if (tok_bpe_add_prefix_space(t)) { /* GPT2Tokenizer.prepare_for_tokenization */
        own = malloc(n + 1);
        if (!own) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
        own[0] = ' ';
        if (n) memcpy(own + 1, s, n);
        s = own;
        n++;
    }
    size_t pos = 0;
    int prev_rstrip = 0;
    while (!st) {
        size_t at = n;
        const tok_special *sp = t->n_specials ? find_special(t, s, n, pos, &at) : NULL;
        size_t a = pos, b = sp ? at : n;
        if (prev_rstrip) a = skip_space_left(s, a, b);
        if (sp && sp->lstrip) b = skip_space_right(s, a, b);
        if (b > a) st = encode_chunk(t, s + a, b - a, o);
        if (!sp || st) break;
        st = tok_out_push(o, sp->id, t->id_str[sp->id], t->id_len[sp->id]);
        pos = at + sp->len;
        prev_rstrip = sp->rstrip;
    }
    free(own);
    return st;
}

static posemb_status encode_any(const posemb_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                                int is_pair, unsigned flags, posemb_encoding *enc, posemb_error *err)
{
    tok_out o = {enc, !!(flags & POSEMB_ENC_TOKENS), 0, err};
    enc->n = 0;
    if (!(flags & POSEMB_ENC_SPECIAL)) { /* HF: ids + pair_ids, all type 0 */
        posemb_status st = encode_text(t, a, alen, &o);
        return st || !is_pair ? st : encode_text(t, b, blen, &o);
    }
    const tok_template *tp = is_pair ? &t->pair : &t->single;
    for (int i = 0; i < tp->n; i++) {
        const tok_item *it = &tp->items[i];
        o.type_id = it->type_id;
        posemb_status st = it->seq < 0 ? tok_out_push(&o, it->id, t->id_str[it->id], t->id_len[it->id])
                           : it->seq == 0 ? encode_text(t, a, alen, &o)
                                          : encode_text(t, b, blen, &o);
        if (st) return st;
    }
    return POSEMB_OK;
}

posemb_status posemb_tokenizer_encode(const posemb_tokenizer *t, const char *text, size_t len, unsigned flags,
                                      posemb_encoding *enc, posemb_error *err)
{
    return encode_any(t, text, len, NULL, 0, 0, flags, enc, err);
}

posemb_status posemb_tokenizer_encode_pair(const posemb_tokenizer *t, const char *a, size_t alen, const char *b,
                                           size_t blen, unsigned flags, posemb_encoding *enc, posemb_error *err)
{
    return encode_any(t, a, alen, b, blen, 1, flags, enc, err);
}

/* =========================================================== decoding */

typedef struct dbuf {
    char *p;
    size_t n, cap;
} dbuf;

static int dbuf_add(dbuf *d, const char *s, size_t n)
{
    if (d->n + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 256;
        while (cap < d->n + n + 1) cap *= 2;
        char *p = realloc(d->p, cap);
        if (!p) return -1;
        d->p = p;
        d->cap = cap;
    }
    memcpy(d->p + d->n, s, n);
    d->n += n;
    d->p[d->n] = '\0';
    return 0;
}

/* Python's s.replace(from, to) for len(to) <= len(from), in place. */
static void replace_all(char *s, size_t *n, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), r = 0, w = 0;
    while (r < *n) {
        if (r + fl <= *n && !memcmp(s + r, from, fl)) {
            memmove(s + w, to, tl);
            w += tl;
            r += fl;
        } else {
            s[w++] = s[r++];
        }
    }
    *n = w;
    s[w] = '\0';
}

static int is_special_id(const posemb_tokenizer *t, int32_t id)
{
    for (int i = 0; i < t->n_specials; i++)
        if (t->specials[i].id == id) return 1;
    for (int i = 0; i < POSEMB_SPECIAL_COUNT; i++)
        if (t->special_ids[i] == id) return 1;
    return 0;
}

posemb_status posemb_tokenizer_decode(const posemb_tokenizer *t, const int32_t *ids, int n, unsigned flags,
                                      char **text, size_t *len, posemb_error *err)
{
    *text = NULL;
    *len = 0;
    dbuf d = {0};
    if (dbuf_add(&d, "", 0)) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int first = 1;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_ids || !t->id_str[id]) {
            free(d.p);
            return posemb_fail(err, POSEMB_ERANGE, "id %d (position %d) is not in the vocabulary", id, i);
        }
        if ((flags & POSEMB_DEC_SKIP_SPECIAL) && is_special_id(t, id)) continue;
        int bad;
        if (t->model == POSEMB_TOK_BPE) {
            bad = tok_bpe_token_bytes(t, t->id_str[id], t->id_len[id], &d.p, &d.n, &d.cap) != POSEMB_OK;
        } else { /* HF: " ".join(tokens), then " ##" removed */
            bad = (!first && dbuf_add(&d, " ", 1)) || dbuf_add(&d, t->id_str[id], t->id_len[id]);
        }
        first = 0;
        if (bad) {
            free(d.p);
            return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        }
    }
    if (t->model == POSEMB_TOK_WORDPIECE) {
        char from[20] = " ";
        memcpy(from + 1, t->wp.prefix, t->wp.prefix_len + 1);
        if (t->wp.prefix_len) replace_all(d.p, &d.n, from, "");
        size_t a = skip_space_left(d.p, 0, d.n), b = skip_space_right(d.p, a, d.n);
        memmove(d.p, d.p + a, b - a);
        d.n = b - a;
        d.p[d.n] = '\0';
    }
    if (flags & POSEMB_DEC_CLEANUP) { /* HF's clean_up_tokenization, in its order */
        static const char *const FROM[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
        static const char *const TO[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
        for (size_t k = 0; k < sizeof FROM / sizeof FROM[0]; k++) replace_all(d.p, &d.n, FROM[k], TO[k]);
    }
    *text = d.p;
    *len = d.n;
    return POSEMB_OK;
}
