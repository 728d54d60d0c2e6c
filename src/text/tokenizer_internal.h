/* What the other layers, the CLI and the tests call of posemb/tokenizer.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_IO_TOKENIZER_INTERNAL_H
#define POSEMB_IO_TOKENIZER_INTERNAL_H

#include "posemb/tokenizer.h"

/* Writes path (atomically): the tokenizer.json of a byte-level tokenizer,
 * whose ids are the text's bytes 0..255 (a BPE without merges over
 * ByteLevel's alphabet). EIO, ENOMEM. */
posemb_status posemb_tokenizer_write_bytes(const char *path, posemb_error *err);

#endif
