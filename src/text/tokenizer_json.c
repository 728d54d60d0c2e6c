/* Loading Hugging Face's tokenizer.json: model (WordPiece, BPE, Unigram),
 * added tokens and post-processor, each validated with a one-line error. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

#include "tokenizer_hf.h"
#include "tokenizer_impl.h"

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
        if (!cJSON_IsString(content) || !cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= TOK_MAX_ID ||
            id->valuedouble != floor(id->valuedouble) || lstrip < 0 || rstrip < 0) {
            char what[64];
            snprintf(what, sizeof what, "added_tokens[%d]", i);
            return json_bad(c, "%s needs a string content, an id in range and boolean lstrip/rstrip", what);
        }
        size_t len = strlen(content->valuestring);
        if (!tok_utf8_valid(content->valuestring, len)) return json_bad(c, "%s is not valid UTF-8", "added token");
        posemb_status st =
            tok_add_special(t, content->valuestring, len, (int32_t)id->valuedouble, lstrip, rstrip, c->err);
        if (st) return st;
    }
    return POSEMB_OK;
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
    char what[POSEMB_PATH_MAX];
    snprintf(what, sizeof what, "%s: model.vocab", c->path);
    posemb_status st = tok_vocab_from_json(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), what, c->err);
    if (st) return st;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (!cJSON_IsString(unk) || tok_map_get(&t->vocab, unk->valuestring, strlen(unk->valuestring)) < 0)
        return json_bad(c, "%s is missing or not in model.vocab", "model.unk_token");
    t->special_ids[POSEMB_SPECIAL_UNK] = tok_map_get(&t->vocab, unk->valuestring, strlen(unk->valuestring));
    st = json_added_tokens(t, root, c);
    if (st) return st;
    t->special_ids[POSEMB_SPECIAL_PAD] = tok_id_of(t, "[PAD]");
    t->special_ids[POSEMB_SPECIAL_CLS] = tok_id_of(t, "[CLS]");
    t->special_ids[POSEMB_SPECIAL_SEP] = tok_id_of(t, "[SEP]");
    t->special_ids[POSEMB_SPECIAL_MASK] = tok_id_of(t, "[MASK]");
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
        return json_bad(c,
                        "%s: dropout, continuing_subword_prefix, end_of_word_suffix and byte_fallback are not "
                        "supported",
                        "model");
    char what[POSEMB_PATH_MAX];
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
        unk_id = tok_id_of(t, unk->valuestring);
        if (unk_id < 0) return json_bad(c, "%s is not in model.vocab", "model.unk_token");
    }
    int32_t eot = tok_id_of(t, "<|endoftext|>");
    t->special_ids[POSEMB_SPECIAL_UNK] = unk_id;
    t->special_ids[POSEMB_SPECIAL_BOS] = eot >= 0 ? eot : tok_id_of(t, "<s>");
    t->special_ids[POSEMB_SPECIAL_EOS] = eot >= 0 ? eot : tok_id_of(t, "</s>");
    t->special_ids[POSEMB_SPECIAL_CLS] = tok_id_of(t, "<s>");
    t->special_ids[POSEMB_SPECIAL_SEP] = tok_id_of(t, "</s>");
    t->special_ids[POSEMB_SPECIAL_PAD] = tok_id_of(t, "<pad>");
    t->special_ids[POSEMB_SPECIAL_MASK] = tok_id_of(t, "<mask>");
    return tok_bpe_finish(t, unk_id, prefix_space, c->err);
}

/* GPT-2-style files (no normalizer, a ByteLevel pre-tokenizer with its
 * regex, a plain BPE, a ByteLevel decoder or none) keep the classic reader,
 * which gives the slow GPT2Tokenizer's answers as before; every other BPE
 * file goes through the general pipeline (tokenizer_hf.h). */
static int classic_bpe(const cJSON *root, const cJSON *model)
{
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const char *pty = pre ? json_type(pre) : NULL, *dty = dec && !cJSON_IsNull(dec) ? json_type(dec) : "ByteLevel";
    if ((norm && !cJSON_IsNull(norm)) || !pty || json_bool(pre, "use_regex", 1) != 1 || !dty) return 0;
    if (!strcmp(pty, "ByteLevel") && !strcmp(dty, "ByteLevel"))
        return json_bool(model, "byte_fallback", 0) == 0 && json_bool(model, "ignore_merges", 0) == 0 &&
               json_null_or_empty(model, "continuing_subword_prefix") &&
               json_null_or_empty(model, "end_of_word_suffix");
    return 0;
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
    return tok_set_template(out, items, n, c->err);
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
    if (!ty || !strcmp(ty, "ByteLevel")) return tok_plain_templates(t, c->err);
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
        posemb_status st = tok_set_template(&t->single, single, 3, c->err);
        return st ? st : tok_set_template(&t->pair, pair, 6, c->err);
    }
    return json_bad(c, "post_processor type '%s' is not supported", ty);
}

posemb_status posemb_tokenizer_load_json(const char *path, posemb_tokenizer **out, posemb_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    posemb_status st = tok_parse_json_file(path, &root, err);
    if (st) return st;
    json_ctx c = {path, err};
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char *ty = cJSON_IsObject(model) ? json_type(model) : NULL;
    posemb_tokenizer *t = NULL;
    if (!cJSON_IsObject(root) || !cJSON_IsObject(model)) {
        st = json_bad(&c, "%s: no \"model\" object (not a tokenizer.json?)", "tokenizer.json");
    } else if (!ty) {
        /* Old files leave out model.type; the members say which (the library's untagged fallback) */
        ty = cJSON_GetObjectItemCaseSensitive(model, "merges")                 ? "BPE"
             : cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(model, "vocab")) ? "Unigram"
                                                                               : "?";
    }
    if (!st && strcmp(ty, "WordPiece") && strcmp(ty, "BPE") && strcmp(ty, "Unigram"))
        st = json_bad(&c, "model type '%s' is not supported (WordPiece, BPE, Unigram)", ty);
    if (!st) {
        t = tok_new(!strcmp(ty, "BPE")       ? POSEMB_TOK_BPE
                    : !strcmp(ty, "Unigram") ? POSEMB_TOK_UNIGRAM
                                             : POSEMB_TOK_WORDPIECE);
        if (!t) st = posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    }
    if (!st && ((t->model == POSEMB_TOK_BPE && !classic_bpe(root, model)) || t->model == POSEMB_TOK_UNIGRAM)) {
        st = tok_hf_load(t, root, path, err);
    } else if (!st) {
        st = t->model == POSEMB_TOK_BPE ? json_bpe(t, root, model, &c) : json_wordpiece(t, root, model, &c);
        if (!st) st = tok_finish(t, err);
    }
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
