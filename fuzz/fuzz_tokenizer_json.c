/* Hugging Face tokenizer.json, then FUZZ_SEP and a text to encode. */
#include "fuzz.h"
#include "posemb/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    int n = fuzz_split(data, size, part, len, 2);
    posemb_tokenizer *tok;
    posemb_error err;
    if (posemb_tokenizer_load_json(fuzz_write("tokenizer.json", part[0], len[0]), &tok, &err)) return 0;
    if (n > 1) fuzz_tokenize(tok, part[1], len[1], 0);
    posemb_tokenizer_free(tok);
    return 0;
}
