/* GPT-2's vocab.json, FUZZ_SEP, merges.txt, FUZZ_SEP, a text to encode. */
#include <stdio.h>

#include "fuzz.h"
#include "posemb/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[3];
    size_t len[3];
    int n = fuzz_split(data, size, part, len, 3);
    char vocab[600];
    snprintf(vocab, sizeof vocab, "%s", fuzz_write("vocab.json", part[0], len[0]));
    const char *merges = fuzz_write("merges.txt", n > 1 ? part[1] : part[0], n > 1 ? len[1] : 0);
    posemb_tokenizer *tok;
    posemb_error err;
    if (posemb_tokenizer_load_bpe(vocab, merges, &tok, &err)) return 0;
    if (n > 2) fuzz_tokenize(tok, part[2], len[2], 0); /* a vocabulary without all 256 bytes cannot give them back */
    posemb_tokenizer_free(tok);
    return 0;
}
