/* What the other layers, the CLI and the tests call of posemb/tokenizer.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_IO_TOKENIZER_INTERNAL_H
#define POSEMB_IO_TOKENIZER_INTERNAL_H

#include "posemb/tokenizer.h"

/* Writes path (atomically): the tokenizer.json of a byte-level tokenizer,
 * whose ids are the text's bytes 0..255 (a BPE without merges over
 * ByteLevel's alphabet). EIO, ENOMEM. */
posemb_status posemb_tokenizer_write_bytes(const char *path, posemb_error *err);

/* Receives one word of posemb_tokenizer_words: len bytes of UTF-8, not
 * NUL-terminated, valid during the call. Returns 0, or nonzero to stop. */
typedef int (*posemb_word_fn)(void *ctx, const char *word, size_t len);

/* BERT's BasicTokenizer alone, as the WordPiece tokenizer tok runs it before
 * WordPiece: the text cleaned, lower-cased and stripped of accents as tok
 * is set up, split at whitespace, punctuation and CJK ideographs; each word
 * and each special token written in the text ([CLS], ...) passed to fn in
 * order. What a WordPiece vocabulary is trained on (scripts/corpus-vocab).
 * Errors: EINVAL when tok is not WordPiece from vocab.txt, ENOMEM, EIO when
 * fn returns nonzero. */
posemb_status posemb_tokenizer_words(const posemb_tokenizer *tok, const char *text, size_t len, posemb_word_fn fn,
                                     void *ctx, posemb_error *err);

#endif
