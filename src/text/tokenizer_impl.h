/* Internals shared by tokenizer.c (loading dispatch, tokenizer.json,
 * special tokens, encode/decode drivers), wordpiece.c and bpe.c. Not a
 * public header: see include/posemb/tokenizer.h for the contract. */
#ifndef POSEMB_TOKENIZER_IMPL_H
#define POSEMB_TOKENIZER_IMPL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "posemb/tokenizer.h"
#include "tokenizer_internal.h"

/* Ids are bounded so that a hostile file cannot make us allocate an id
 * table of 2^31 entries; real vocabularies have < 300k tokens. */
#define TOK_MAX_ID (1 << 22)
/* Files over 1 GiB are refused before they are read. */
#define TOK_MAX_FILE ((size_t)1 << 30)

/* ------------------------------------------------ string -> int32 map */

/* Open addressing, linear probing; keys are copied into one pool. */
typedef struct tok_map {
    uint32_t *slots; /* entry index + 1; 0 = empty */
    size_t cap;      /* slots, a power of two */
    size_t n, ecap;  /* entries */
    uint32_t *hash;
    size_t *off;
    uint32_t *len;
    int32_t *val;
    char *pool;
    size_t pool_len, pool_cap;
} tok_map;

/* Inserts key -> val. Returns 0 when inserted, 1 when the key was already
 * there (*entry = its entry; nothing changes), -1 when out of memory. */
int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, size_t *entry);
/* The entry index of key, or -1. */
long tok_map_find(const tok_map *m, const char *key, size_t len);
/* The value of key, or -1. */
int32_t tok_map_get(const tok_map *m, const char *key, size_t len);
const char *tok_map_key(const tok_map *m, size_t entry, size_t *len);
void tok_map_free(tok_map *m);

/* A growable byte string, NUL-terminated after each add (tok_str.c). The
 * functions return 0, or -1 when out of memory. */
typedef struct tok_str {
    char *p;
    size_t n, cap;
} tok_str;

int tok_str_reserve(tok_str *s, size_t extra);
int tok_str_add(tok_str *s, const char *b, size_t n);
void tok_str_free(tok_str *s);

/* A min-heap of 64-bit keys (tok_heap.c): the BPE merge queues. */
typedef struct tok_heap {
    uint64_t *v;
    size_t n, cap;
} tok_heap;

/* 0, or -1 when out of memory. */
int tok_heap_push(tok_heap *h, uint64_t v);
/* The smallest key; the heap must not be empty. */
uint64_t tok_heap_pop(tok_heap *h);
void tok_heap_free(tok_heap *h);

/* A BPE merge table (tok_merges.c): (left, right) symbol ids -> rank and result. */
typedef struct tok_merges {
    uint64_t *key; /* (left << 32 | right) + 1, 0 = empty */
    uint32_t *rank;
    int32_t *res;
    size_t cap, n;
} tok_merges;

/* The rank of the pair (a, b) and its result in *res, or -1. */
int64_t tok_merges_get(const tok_merges *t, int32_t a, int32_t b, int32_t *res);
/* Adds (a, b) -> (rank, res): 0 when added, -1 out of memory. A pair already
 * there gives its rank in *prev (if not NULL) and, with keep_first, stays
 * as it was (returns 1); otherwise the new rank replaces it. */
int tok_merges_put(tok_merges *t, int32_t a, int32_t b, int32_t res, uint32_t rank, int keep_first, uint32_t *prev);
void tok_merges_free(tok_merges *t);

/* ------------------------------------------------------------ tokenizer */

/* A token matched whole inside the text before any other processing. */
typedef struct tok_special {
    char *str;
    size_t len;
    int32_t id;
    int lstrip, rstrip; /* strip Python whitespace on its left / right */
} tok_special;

/* One item of a post-processing template: a special token or a text. */
typedef struct tok_item {
    int seq; /* -1: the special token id; 0: text A; 1: text B */
    int32_t id;
    int type_id;
} tok_item;

typedef struct tok_template {
    tok_item *items;
    int n;
} tok_template;

typedef struct tok_wordpiece {
    int lowercase, strip_accents, clean_text, chinese;
    int max_chars;   /* longer words are one unk */
    char prefix[16]; /* "##" */
    size_t prefix_len;
    size_t max_bytes, max_cont_bytes; /* longest token; longest after the prefix */
} tok_wordpiece;

typedef struct tok_bpe tok_bpe;
typedef struct tok_hf tok_hf; /* the general tokenizer.json pipeline (tokenizer_hf.h) */

struct posemb_tokenizer {
    posemb_tok_model model;
    tok_map vocab;       /* token -> id */
    int n_ids;           /* 1 + largest id */
    const char **id_str; /* id -> token (into vocab.pool or a special), NULL for a hole */
    uint32_t *id_len;
    int32_t special_ids[POSEMB_SPECIAL_COUNT];
    tok_special *specials; /* sorted by bytes (the order of HF's lower-casing regex) */
    int n_specials;
    uint8_t special_first[32]; /* bitmap of the specials' first bytes */
    tok_template single, pair; /* with POSEMB_ENC_SPECIAL */
    tok_wordpiece wp;
    tok_bpe *bpe;
    tok_hf *hf; /* set: encode and decode go through it (model is BPE) */
};

/* Allocates a tokenizer with no specials (all ids -1). */
posemb_tokenizer *tok_new(posemb_tok_model model);
/* Adds a special token (copied); the list is re-sorted. */
posemb_status tok_add_special(posemb_tokenizer *t, const char *str, size_t len, int32_t id, int lstrip, int rstrip,
                              posemb_error *err);
/* Builds id_str/id_len from the vocab and the specials; call once loaded. */
posemb_status tok_finish(posemb_tokenizer *t, posemb_error *err);
/* Sets the BERT templates [CLS] A [SEP] / [CLS] A [SEP] B [SEP]. */
posemb_status tok_bert_templates(posemb_tokenizer *t, posemb_error *err);
/* Sets a template from n items. */
posemb_status tok_set_template(tok_template *tp, const tok_item *items, int n, posemb_error *err);
/* Templates that add nothing: A, and A B. */
posemb_status tok_plain_templates(posemb_tokenizer *t, posemb_error *err);
/* The id of a token, looked up among the added tokens, then the vocab; -1 if absent. */
int32_t tok_id_of(const posemb_tokenizer *t, const char *s);
/* Parses a whole JSON file (size-limited), with a one-line error naming it. */
posemb_status tok_parse_json_file(const char *path, cJSON **root, posemb_error *err);

/* ------------------------------------------------------------ helpers */

/* Reads a whole file (NUL-terminated for convenience). EIO on failure. */
posemb_status tok_read_file(const char *path, char **buf, size_t *len, posemb_error *err);
/* Decodes one code point at s[*i] (n bytes in all) and advances *i; an
 * invalid or truncated sequence gives -1 and advances one byte. */
/* GPT-2's bytes_to_unicode, ByteLevel's alphabet: printable Latin-1 bytes
 * stand for themselves, the other 68 bytes for U+0100.. in byte order;
 * cp_byte maps back (-1 for characters outside it). */
void tok_byte_alphabet(uint32_t byte_cp[256], int16_t cp_byte[324]);
int32_t tok_utf8_next(const uint8_t *s, size_t n, size_t *i);
/* Writes cp as UTF-8 into out (4 bytes room); returns the byte count. */
int tok_utf8_put(int32_t cp, char *out);
/* 1 if the n bytes are valid UTF-8 (no surrogates, no overlongs). */
int tok_utf8_valid(const char *s, size_t n);
/* Python's str.isspace: bidirectional class WS, B or S, or category Zs. */
int tok_py_isspace(int32_t cp);
/* Lines as Python's universal newlines cut them (\n, \r\n and \r each end
 * one): the end of the line that starts at i (its newline, or len), and the
 * start of the line after one that ends at b. */
static inline size_t tok_line_end(const char *buf, size_t len, size_t i)
{
    while (i < len && buf[i] != '\n' && buf[i] != '\r') i++;
    return i;
}

static inline size_t tok_line_next(const char *buf, size_t len, size_t b)
{
    return b + (b < len && buf[b] == '\r' && b + 1 < len && buf[b + 1] == '\n' ? 2 : 1);
}

/* The 1-based line of byte offset off in buf. */
long tok_line_of(const char *buf, size_t off);
/* Prints s into out (cap bytes) for an error message: truncated, with
 * control bytes escaped. Returns out. */
const char *tok_quote(const char *s, size_t len, char *out, size_t cap);

/* ------------------------------------------------------------ encoding */

/* Where the model-specific encoders put their tokens. */
typedef struct tok_out {
    posemb_encoding *enc;
    int want_tokens;
    int type_id;
    posemb_error *err;
    /* Set only by posemb_tokenizer_words: WordPiece hands it each word
     * (before WordPiece) and each special token instead of ids; enc unused. */
    posemb_word_fn word;
    void *word_ctx;
} tok_out;

posemb_status tok_out_push(tok_out *o, int32_t id, const char *str, size_t len);

/* Encodes one chunk of text that holds no special token. */
posemb_status tok_wp_encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o);
posemb_status tok_bpe_encode_chunk(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o);

/* WordPiece: loads vocab.txt into t->vocab and sets t->wp's limits. */
posemb_status tok_wp_load_vocab_txt(posemb_tokenizer *t, const char *path, posemb_error *err);
/* Computes the longest-token limits from t->vocab (vocab.txt and tokenizer.json). */
void tok_wp_limits(posemb_tokenizer *t);
/* The text with Python's per-character str.lower applied everywhere but
 * on special tokens, as PreTrainedTokenizer.tokenize does for do_lower_case;
 * invalid UTF-8 becomes U+FFFD. A malloc'ed buffer. */
posemb_status tok_wp_prepare(const posemb_tokenizer *t, const char *s, size_t n, char **out, size_t *out_len,
                             posemb_error *err);

/* BPE: the byte alphabet, the merges and the pre-tokenizer. */
posemb_status tok_bpe_new(posemb_tokenizer *t, posemb_error *err);
/* Adds the merge LEFT RIGHT with the next rank. Returns 1 (and the earlier
 * rank in *prev) for a duplicate pair. */
int tok_bpe_add_merge(posemb_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, int *prev);
/* Loads a vocab.bpe / merges.txt file. */
posemb_status tok_bpe_load_merges(posemb_tokenizer *t, const char *path, posemb_error *err);
/* Loads an encoder.json / vocab.json object into t->vocab (what names it in messages). */
posemb_status tok_vocab_from_json(posemb_tokenizer *t, const cJSON *obj, const char *what, posemb_error *err);
/* Maps the symbols to ids once vocab and merges are complete. */
posemb_status tok_bpe_finish(posemb_tokenizer *t, int32_t unk_id, int add_prefix_space, posemb_error *err);
void tok_bpe_free(tok_bpe *b);
void tok_hf_free(tok_hf *h);
/* Appends the bytes that a BPE token stands for. */
posemb_status tok_bpe_token_bytes(const posemb_tokenizer *t, const char *tok, size_t len, char **buf, size_t *n,
                                  size_t *cap);
int tok_bpe_add_prefix_space(const posemb_tokenizer *t);

#endif
