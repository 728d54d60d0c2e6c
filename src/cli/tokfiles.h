/* A tokenizer as files: what a model folder holds, or what flags name. */
#ifndef POSEMB_CLI_TOKFILES_H
#define POSEMB_CLI_TOKFILES_H

#include <stddef.h>

#include "core/fileio.h"
#include "posemb/tokenizer.h"

typedef struct cli_tok_files {
    const char *json;   /* a tokenizer.json, or NULL */
    const char *vocab;  /* WordPiece vocab.txt, or GPT-2's vocab.json (encoder.json) with merges */
    const char *merges; /* GPT-2's merges.txt (vocab.bpe), or NULL */
} cli_tok_files;

/* The tokenizer files of folder dir, in this order: tokenizer.json,
 * vocab.txt, vocab.json + merges.txt; their paths go into buf. 0 when dir
 * (or NULL) holds none. */
int cli_tok_files_find(const char *dir, char (*buf)[POSEMB_PATH_MAX], cli_tok_files *f);

/* Loads f (a vocab.txt lower-cases, as BERT's uncased models); desc names
 * the files, the key of a token cache. */
posemb_status cli_tok_files_load(const cli_tok_files *f, posemb_tokenizer **tok, char *desc, size_t cap,
                                 posemb_error *err);

/* The tokenizer of model folder dir (cli_tok_files_find, then load); EINVAL
 * naming dir when it holds none. */
posemb_status cli_tok_files_folder(const char *dir, posemb_tokenizer **tok, char *desc, size_t cap, posemb_error *err);

#endif
