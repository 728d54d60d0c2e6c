/* Shared pieces of the libFuzzer harnesses (fuzz/README.md): a private
 * temporary folder per process, files written into it, and inputs split into
 * several files at a separator line. */
#ifndef POSEMB_FUZZ_H
#define POSEMB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* A line that separates the files of one input: "FILE1\n=====\nFILE2". */
#define FUZZ_SEP "\n=====\n"

/* The process's temporary folder (made on first use, removed at exit). */
const char *fuzz_dir(void);
/* Writes n bytes to fuzz_dir()/name (a folder on the way is made) and
 * returns the path, valid until the next call. */
const char *fuzz_write(const char *name, const uint8_t *data, size_t n);
/* Splits data at FUZZ_SEP into at most max parts; returns how many (>= 1). */
int fuzz_split(const uint8_t *data, size_t size, const uint8_t **part, size_t *len, int max);
/* Removes every file in fuzz_dir()/sub (or fuzz_dir() itself when sub is ""). */
void fuzz_clear(const char *sub);
struct posemb_tokenizer;
/* Encodes text (any bytes) alone, with special tokens and as a pair split in
 * the middle, then decodes the ids; with roundtrip, aborts unless decoding
 * gives the text back (byte-level BPE's promise). */
void fuzz_tokenize(const struct posemb_tokenizer *tok, const uint8_t *text, size_t n, int roundtrip);
/* The path of a file of ../shared (POSEMB_SHARED), or NULL when absent. */
const char *fuzz_shared(const char *rel);

#endif
