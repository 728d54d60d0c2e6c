/* Tokenizers that give Hugging Face's answers id for id: WordPiece (BERT)
 * and GPT-2's byte-level BPE, as the slow (pure-Python) BertTokenizer and
 * GPT2Tokenizer of transformers 4.26.1 compute them after from_pretrained.
 *
 * Three ways to load one:
 *   - WordPiece from vocab.txt (one token per line, its id = line number - 1;
 *     every line is a token, an empty one too, as HF's load_vocab reads it);
 *   - byte-level BPE from encoder.json (HF: vocab.json) and vocab.bpe
 *     (HF: merges.txt, whose first line is a "#version" header);
 *   - tokenizer.json of the `tokenizers` library: "WordPiece" (with a
 *     BertNormalizer or none) and GPT-2-style "BPE" (no normalizer, GPT-2's
 *     ByteLevel pre-tokenizer) as the slow tokenizers above; every other
 *     "BPE" file (Llama 2, Llama 3, Qwen, ...: normalizers, Split / Metaspace
 *     / Digits pre-tokenizers, byte_fallback, ignore_merges, added tokens
 *     with their flags, decoders) as the Rust `tokenizers` library 0.22
 *     encodes and decodes it (docs/models.md lists what is read). Anything
 *     else is refused.
 *
 * What encoding does, as HF does it:
 *   - special tokens ([CLS] [SEP] [PAD] [MASK] [UNK] for BERT, <|endoftext|>
 *     for GPT-2, the added tokens of a tokenizer.json) written inside the
 *     text are kept whole and matched case-sensitively, leftmost-longest;
 *     around BERT's the whitespace is stripped, around GPT-2's it is kept;
 *   - WordPiece: lower-case (if set; Python's str.lower, so U+0130 becomes
 *     "i" + U+0307), delete NUL, U+FFFD and every category C* character
 *     except \t \n \r, map whitespace to spaces, put spaces around CJK
 *     ideographs, split on Python whitespace (which includes U+2028/U+2029),
 *     strip accents (NFD, drop Mn) if set, split off punctuation (Unicode P*
 *     and all ASCII symbols), then greedy longest-match-first WordPiece with
 *     "##"; a word over 100 characters, or one that cannot be built from the
 *     vocabulary, is one [UNK];
 *   - BPE: GPT-2's pre-tokenizer regex, bytes mapped to GPT-2's printable
 *     alphabet ("Ġ" is a space), merges applied lowest rank first, every
 *     occurrence of that pair left to right, as the slow tokenizer does.
 *
 * Invalid UTF-8 (which HF never sees: Python refuses to make such a str):
 * WordPiece replaces each invalid byte by U+FFFD, which its cleaning then
 * deletes; BPE works on bytes, so each run of invalid bytes becomes one
 * pre-token of its own, and decoding gives the input bytes back exactly.
 *
 * Known limits: utf8proc knows Unicode 15.0 and HF's reference ran with
 * Python's Unicode 14.0, so characters new in 15.0 (unassigned, hence
 * deleted, for HF) are kept here. Decoding never applies HF's
 * clean_up_tokenization_spaces unless POSEMB_DEC_CLEANUP asks for it.
 *
 * A loaded tokenizer is read-only: encode and decode may run on it from
 * several threads at once. */
#ifndef POSEMB_TOKENIZER_H
#define POSEMB_TOKENIZER_H

#include "posemb/api.h"

#include <stddef.h>
#include <stdint.h>

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_tokenizer posemb_tokenizer;

typedef enum posemb_tok_model {
    POSEMB_TOK_WORDPIECE = 1,
    POSEMB_TOK_BPE = 2,
    POSEMB_TOK_UNIGRAM = 3, /* tokenizer.json's Unigram (T5, ALBERT, XLM-R) */
} posemb_tok_model;

/* The special tokens a model may have (posemb_tokenizer_special_id). */
typedef enum posemb_special {
    POSEMB_SPECIAL_PAD = 0,
    POSEMB_SPECIAL_UNK,
    POSEMB_SPECIAL_CLS,
    POSEMB_SPECIAL_SEP,
    POSEMB_SPECIAL_MASK,
    POSEMB_SPECIAL_BOS,
    POSEMB_SPECIAL_EOS,
    POSEMB_SPECIAL_COUNT
} posemb_special;

/* WordPiece from vocab.txt. lowercase: lower-case and strip accents (HF's
 * do_lower_case=True with strip_accents=None; 0 keeps case and accents).
 * Errors: EIO (unreadable), EFORMAT (a duplicate token, invalid UTF-8, no
 * [UNK] line), each naming the file and line; ENOMEM. The caller owns *out
 * (posemb_tokenizer_free); on failure it is NULL. */
POSEMB_API posemb_status posemb_tokenizer_load_wordpiece(const char *vocab_path, int lowercase, posemb_tokenizer **out,
                                                         posemb_error *err);

/* GPT-2 byte-level BPE from encoder.json (an object of token -> unique
 * non-negative integer id) and vocab.bpe (a "#version" first line, then one
 * "LEFT RIGHT" merge per line, rank = order). As HF's reader, a last line
 * without a final newline is not read. Errors: EIO, EFORMAT naming the file
 * and the key or line; ENOMEM. *out as for posemb_tokenizer_load_wordpiece. */
POSEMB_API posemb_status posemb_tokenizer_load_bpe(const char *encoder_path, const char *merges_path,
                                                   posemb_tokenizer **out, posemb_error *err);

/* A tokenizer.json (see the top of this file). The caller owns *out
 * (posemb_tokenizer_free); on failure (EIO, EFORMAT naming the file and the
 * member it cannot read or does not support, ENOMEM) *out is NULL. */
POSEMB_API posemb_status posemb_tokenizer_load_json(const char *path, posemb_tokenizer **out, posemb_error *err);

POSEMB_API void posemb_tokenizer_free(posemb_tokenizer *tok);

POSEMB_API posemb_tok_model posemb_tokenizer_model(const posemb_tokenizer *tok);
/* 1 + the largest id: the rows an embedding table needs (HF's len(tokenizer)
 * for the usual files). */
POSEMB_API int posemb_tokenizer_vocab_size(const posemb_tokenizer *tok);
/* The id of a token string (exact bytes, no normalisation), or -1. */
POSEMB_API int32_t posemb_tokenizer_token_id(const posemb_tokenizer *tok, const char *token);
/* The token string of an id, or NULL when no token has it; it belongs to
 * the tokenizer. */
POSEMB_API const char *posemb_tokenizer_id_token(const posemb_tokenizer *tok, int32_t id);
/* The id of a special token, or -1 when the tokenizer has none. For GPT-2
 * <|endoftext|> is BOS, EOS and UNK (HF's defaults); it has no PAD. */
POSEMB_API int32_t posemb_tokenizer_special_id(const posemb_tokenizer *tok, posemb_special which);

/* An encoded text. ids and type_ids have n entries; tokens too when asked
 * for (POSEMB_ENC_TOKENS): NUL-terminated strings that belong to the
 * tokenizer (valid while it lives), for BPE in GPT-2's byte alphabet as
 * HF's tokenize shows them. Reuse one across calls: encoding overwrites it
 * and keeps its buffers. */
typedef struct posemb_encoding {
    int n;
    int32_t *ids;
    int32_t *type_ids;   /* 0 for the first text, 1 for the second of a pair */
    const char **tokens; /* NULL unless POSEMB_ENC_TOKENS was ever asked for */
    int cap;             /* capacity of the arrays (internal) */
} posemb_encoding;

/* An empty encoding; posemb_encoding_free releases its buffers and empties
 * it again. */
POSEMB_API void posemb_encoding_init(posemb_encoding *enc);
POSEMB_API void posemb_encoding_free(posemb_encoding *enc);

/* Flags of posemb_tokenizer_encode(_pair). */
enum {
    /* Add the model's special tokens, as HF's encode(add_special_tokens=True):
     * [CLS] A [SEP] for BERT, nothing for GPT-2, the post-processor's
     * template for a tokenizer.json. */
    POSEMB_ENC_SPECIAL = 1,
    /* Also give the token strings. */
    POSEMB_ENC_TOKENS = 2,
};

/* Encodes len bytes of UTF-8 text (NUL bytes are text too). Errors: ERANGE
 * past INT_MAX tokens, ENOMEM, EFORMAT when a token has no id and the
 * tokenizer no unknown token; enc then holds a partial result (its buffers
 * still to free). */
POSEMB_API posemb_status posemb_tokenizer_encode(const posemb_tokenizer *tok, const char *text, size_t len,
                                                 unsigned flags, posemb_encoding *enc, posemb_error *err);

/* Encodes a pair as HF's encode_plus(a, b): with POSEMB_ENC_SPECIAL,
 * [CLS] a [SEP] b [SEP] for BERT with type ids 0 up to the first [SEP] and 1
 * after it; a then b for GPT-2 (types 0 then 1). Without it, a then b, all
 * type 0. Fails as posemb_tokenizer_encode. */
POSEMB_API posemb_status posemb_tokenizer_encode_pair(const posemb_tokenizer *tok, const char *a, size_t alen,
                                                      const char *b, size_t blen, unsigned flags, posemb_encoding *enc,
                                                      posemb_error *err);

/* Flags of posemb_tokenizer_decode. */
enum {
    POSEMB_DEC_SKIP_SPECIAL = 1, /* leave out the special tokens */
    POSEMB_DEC_CLEANUP = 2,      /* HF's clean_up_tokenization (" ." -> "." ...) */
};

/* Ids back to text, in a malloc'ed NUL-terminated buffer (*len bytes, NUL
 * bytes possible for BPE). BPE: the exact bytes, so decode(encode(x)) == x
 * for any x. WordPiece: tokens joined by spaces with " ##" removed, as HF's
 * convert_tokens_to_string. A general tokenizer.json: its decoder chain, as
 * the library's decode(ids, skip_special_tokens). The caller frees *text
 * with free(). Errors:
 * ERANGE for an id that has no token, ENOMEM; *text is NULL on failure. */
POSEMB_API posemb_status posemb_tokenizer_decode(const posemb_tokenizer *tok, const int32_t *ids, int n, unsigned flags,
                                                 char **text, size_t *len, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif
