/* Loading the classic tokenizer files: BERT's vocab.txt, GPT-2's
 * encoder.json + vocab.bpe, with their special tokens. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

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

/* The line of the first \u0000 escape in a JSON text, or 0: cJSON keeps
 * strings NUL-terminated, so a string holding one would be silently cut
 * short (a vocabulary entry would become another). */
static long escaped_nul_line(const char *buf, size_t len)
{
    size_t run = 0; /* backslashes just before i: an even count means buf[i] starts an escape */
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\\') {
            run = 0;
            continue;
        }
        if (run % 2 == 0 && len - i >= 6 && !memcmp(buf + i, "\\u0000", 6)) return tok_line_of(buf, i);
        run++;
    }
    return 0;
}

posemb_status tok_parse_json_file(const char *path, cJSON **root, posemb_error *err)
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
    long nul = *root ? escaped_nul_line(buf, len) : 0;
    if (nul) {
        cJSON_Delete(*root);
        *root = NULL;
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: line %ld: a string holds \\u0000, which posemb cannot keep", path,
                         nul);
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
    t->special_ids[POSEMB_SPECIAL_UNK] = t->special_ids[POSEMB_SPECIAL_BOS] = t->special_ids[POSEMB_SPECIAL_EOS] = id;
    return tok_add_special(t, EOT, sizeof EOT - 1, id, 0, 0, err);
}

posemb_status posemb_tokenizer_load_bpe(const char *encoder_path, const char *merges_path, posemb_tokenizer **out,
                                        posemb_error *err)
{
    *out = NULL;
    posemb_tokenizer *t = tok_new(POSEMB_TOK_BPE);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    cJSON *root = NULL;
    posemb_status st = tok_parse_json_file(encoder_path, &root, err);
    if (!st) st = tok_vocab_from_json(t, root, encoder_path, err);
    cJSON_Delete(root);
    if (!st) st = tok_bpe_new(t, err);
    if (!st) st = tok_bpe_load_merges(t, merges_path, err);
    if (!st) st = gpt2_specials(t, err);
    if (!st) st = tok_bpe_finish(t, t->special_ids[POSEMB_SPECIAL_UNK], 0, err);
    if (!st) st = tok_finish(t, err);
    if (!st) st = tok_plain_templates(t, err);
    if (st) {
        posemb_tokenizer_free(t);
        return st;
    }
    *out = t;
    return POSEMB_OK;
}
