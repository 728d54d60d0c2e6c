/* The general tokenizer.json pipeline of Hugging Face's Rust `tokenizers`
 * (0.22): added tokens split out, normalizer, pre-tokenizer, BPE model,
 * post-processor (the templates of tokenizer_impl.h) and decoder, for the
 * files the classic readers do not take (Llama 2, Llama 3, Qwen3, ...).
 * Not a public header: posemb/tokenizer.h is the contract.
 *
 * The library works on NormalizedString with alignments; only ids, token
 * strings and decoded text are needed here, so every stage is a plain
 * string transformation. Each piece keeps one fact of its alignment:
 * whether it starts at byte 0 of the original text (Metaspace's
 * prepend_scheme "first" asks that). */
#ifndef POSEMB_TOKENIZER_HF_H
#define POSEMB_TOKENIZER_HF_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer_impl.h"

/* The most pre-tokenizers one file may chain (after flattening Sequences). */
#define HF_MAX_STAGES 16

/* A pattern of Replace / Split: a literal string or a PCRE2 regex. */
typedef struct hf_pattern {
    char *lit; /* literal (NULL for a regex) */
    size_t lit_len;
    pcre2_code *re;
    int jit; /* JIT-compiled: pcre2_jit_match, the fast entry, may run it */
} hf_pattern;

/* Compiles the "pattern" member ({"String": s} or {"Regex": r}) of obj;
 * what names the place in errors. */
posemb_status hf_pattern_load(hf_pattern *p, const cJSON *obj, const char *path, const char *what, posemb_error *err);
/* Compiles a regex as the library's (Oniguruma's) \s reads it. */
posemb_status hf_pattern_regex(hf_pattern *p, const char *regex, const char *path, const char *what, posemb_error *err);
void hf_pattern_free(hf_pattern *p);
/* The next match in s[from..n) ([*a, *b)); 0 when there is none, -1 when
 * out of memory or the regex failed. md: match data of the caller. */
int hf_pattern_next(const hf_pattern *p, const char *s, size_t n, size_t from, size_t *a, size_t *b,
                    pcre2_match_data *md);
/* s with every match of p replaced by rep, appended to out. -1 on failure. */
int hf_pattern_replace(const hf_pattern *p, const char *s, size_t n, const char *rep, size_t rep_len, tok_str *out);
/* Unicode White_Space (Rust's char::is_whitespace, the regex \s). */
int hf_is_ws(int32_t cp);

/* ------------------------------------------------------------ normalizers */

typedef enum hf_norm_kind {
    HF_NORM_NFC = 1,
    HF_NORM_NFD,
    HF_NORM_NFKC,
    HF_NORM_NFKD,
    HF_NORM_LOWERCASE,
    HF_NORM_PREPEND,
    HF_NORM_REPLACE,
    HF_NORM_STRIP,
    HF_NORM_STRIP_ACCENTS,
    HF_NORM_PRECOMPILED,
} hf_norm_kind;

typedef struct hf_norm {
    hf_norm_kind kind;
    char *str; /* Prepend's text, Replace's content */
    size_t str_len;
    hf_pattern pat;  /* Replace */
    int left, right; /* Strip */
    uint32_t *da;    /* Precompiled: SentencePiece's double-array trie */
    size_t da_n;
    char *blob; /* Precompiled: the replacements, each ended by NUL */
    size_t blob_n;
    int32_t ascii_at[128]; /* Precompiled: the replacement of each ASCII character (offset in blob), or -1 */
} hf_norm;

/* Reads Precompiled's precompiled_charsmap (base64) into nm. */
posemb_status hf_precompiled_load(hf_norm *nm, const char *b64, const char *path, const char *what, posemb_error *err);
/* SentencePiece's normalization by the charsmap, grapheme by grapheme as
 * the library does, appended to out. -1 when out of memory. */
int hf_precompiled_apply(const hf_norm *nm, const char *s, size_t n, tok_str *out);

/* Applies the normalizers in order to s[0..n) (valid UTF-8), giving out
 * (overwritten). -1 when out of memory. */
int hf_normalize(const hf_norm *norms, int n_norms, const char *s, size_t n, tok_str *out);

/* ---------------------------------------------------------- pre-tokenizers */

typedef enum hf_pre_kind {
    HF_PRE_BYTELEVEL = 1,
    HF_PRE_SPLIT,
    HF_PRE_METASPACE,
    HF_PRE_DIGITS,
    HF_PRE_WHITESPACE_SPLIT,
} hf_pre_kind;

typedef enum hf_behavior {
    HF_REMOVED = 1,
    HF_ISOLATED,
    HF_MERGED_PREV,
    HF_MERGED_NEXT,
    HF_CONTIGUOUS,
} hf_behavior;

typedef struct hf_pre {
    hf_pre_kind kind;
    int add_prefix_space, use_regex; /* ByteLevel */
    hf_pattern pat;                  /* Split */
    hf_behavior behavior;
    int invert;
    char repl[8]; /* Metaspace: the replacement character's bytes */
    size_t repl_len;
    int prepend; /* 0 never, 1 always, 2 first */
    int split;
    int individual; /* Digits */
} hf_pre;

/* ---------------------------------------------------------------- decoders */

typedef enum hf_dec_kind {
    HF_DEC_BYTELEVEL = 1,
    HF_DEC_METASPACE,
    HF_DEC_BYTEFALLBACK,
    HF_DEC_FUSE,
    HF_DEC_STRIP,
    HF_DEC_REPLACE,
    HF_DEC_WORDPIECE,
    HF_DEC_BPE,
} hf_dec_kind;

typedef struct hf_dec {
    hf_dec_kind kind;
    char repl[8]; /* Metaspace */
    size_t repl_len;
    int prepend;
    int32_t content; /* Strip's character */
    size_t start, stop;
    hf_pattern pat; /* Replace */
    char *str;      /* Replace's content; WordPiece's prefix; BPEDecoder's suffix */
    size_t str_len;
    int cleanup; /* WordPiece */
} hf_dec;

/* ---------------------------------------------------------- added tokens */

typedef struct hf_added {
    char *str; /* what is matched: the content, normalized when `normalized` */
    size_t len;
    int32_t id;
    int special, normalized, lstrip, rstrip, single_word;
} hf_added;

/* One set of added tokens matched leftmost-longest (aho-corasick's
 * LeftmostLongest in the library), by first byte. */
typedef struct hf_trie {
    int *idx; /* indices into tok_hf.added, grouped by first byte */
    int start[257];
    uint8_t pair[8192]; /* bit (first << 8 | second) for the first two bytes of each */
    uint8_t single[32]; /* bit of the first byte of each one-byte token */
    int n;              /* tokens in the set */
    int only;           /* the first byte they all share (memchr finds it), or -1 */
} hf_trie;

/* ----------------------------------------------------------------- model */

typedef struct tok_hf {
    hf_norm *norms;
    int n_norms;
    hf_pre *pres;
    int n_pres;
    hf_dec *decs;
    int n_decs;
    hf_added *added;
    int n_added;
    hf_trie raw, normed; /* normalized = false / true */
    uint8_t *is_special; /* id -> 1 for special added tokens (skip_special_tokens) */
    /* BPE and Unigram */
    int32_t unk_id; /* -1: none */
    int byte_fallback, fuse_unk, ignore_merges;
    int first_sensitive;   /* a Metaspace with prepend_scheme "first" after the first stage */
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix, or NULL */
    size_t prefix_len, suffix_len;
    tok_merges merges;
    /* Unigram (tokenizer_hf_unigram.c) */
    double *scores; /* id -> score */
    double min_score;
    tok_merges trie; /* (node, byte) -> child; rank 1 + the id of the piece ending there, or 0 */
    int32_t n_nodes;
    int32_t *dup_id; /* earlier ids of repeated pieces, and their vocab entries */
    size_t *dup_entry;
    int n_dups;
    int32_t byte_id[256];  /* <0xNN> token ids for byte_fallback, -1 when absent */
    uint32_t byte_cp[256]; /* ByteLevel's alphabet */
    int16_t cp_byte[324];
} tok_hf;

/* Loads the general pipeline from a parsed tokenizer.json into t (vocab,
 * added tokens, normalizer, pre-tokenizer, BPE, decoder). */
posemb_status tok_hf_load(posemb_tokenizer *t, const cJSON *root, const char *path, posemb_error *err);
void tok_hf_free(tok_hf *h);
/* Encodes one text (no template) as the library's encode without the
 * post-processor. */
posemb_status tok_hf_encode_text(const posemb_tokenizer *t, const char *s, size_t n, tok_out *o);
/* decode(ids) with the decoder chain; skip: leave out the special tokens. */
posemb_status tok_hf_decode(const posemb_tokenizer *t, const int32_t *ids, int n, int skip, char **text, size_t *len,
                            posemb_error *err);

/* Internals shared by the pipeline's files. */
int hf_merge_add(tok_hf *h, int32_t a, int32_t b, int32_t res, uint32_t rank);
/* Runs the BPE model on one pre-token; cache: per-call memo (opaque). */
typedef struct hf_bpe_scratch hf_bpe_scratch;
hf_bpe_scratch *hf_bpe_scratch_new(void);
void hf_bpe_scratch_free(hf_bpe_scratch *s);
posemb_status hf_bpe_word(const posemb_tokenizer *t, const char *w, size_t n, hf_bpe_scratch *s, tok_out *o);
/* The Unigram model: loads model (vocab, unk_id, byte_fallback); runs on
 * one pre-token. */
posemb_status hf_unigram_load(posemb_tokenizer *t, const cJSON *model, const char *path, posemb_error *err);
/* Gives the earlier id of each repeated piece its text, once t is finished. */
void hf_unigram_finish(posemb_tokenizer *t);
posemb_status hf_unigram_word(const posemb_tokenizer *t, const char *w, size_t n, hf_bpe_scratch *s, tok_out *o);
/* The Viterbi lattice of one pre-token, per byte position: best score,
 * where its last piece starts (-1: not reached), that piece; cut: the
 * pieces' ends. */
typedef struct hf_lattice {
    double *score;
    int64_t *from;
    int32_t *id;
    size_t *cut;
    size_t cap;
} hf_lattice;
/* The scratch's lattice with room for n positions; NULL when out of memory. */
hf_lattice *hf_scratch_lattice(hf_bpe_scratch *s, size_t n);
/* The pre-token memo (pieces up to HF_MEMO_BYTES bytes seen by the second
 * pre-tokenizer stage, and the ids they gave): 1 and the ids when known. */
#define HF_MEMO_BYTES 64
int hf_memo_find(const hf_bpe_scratch *s, const char *w, size_t n, const int32_t **ids, int32_t *count);
/* Remembers them; silently skipped when full or out of memory. */
void hf_memo_store(hf_bpe_scratch *s, const char *w, size_t n, const int32_t *ids, int32_t count);
/* Pre-tokenizes s[0..n) and runs the model on every pre-token. */
posemb_status hf_pretokenize(const posemb_tokenizer *t, const char *s, size_t n, int at_start, hf_bpe_scratch *bs,
                             tok_out *o);
/* from_utf8_lossy: s[0..n) appended with each maximal invalid sequence as
 * one U+FFFD. -1 when out of memory. */
int hf_utf8_lossy(const char *s, size_t n, tok_str *out);

#endif
