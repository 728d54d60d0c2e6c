/* Hugging Face config.json, as posemb_config_load reads it for BERT,
 * RoBERTa and GPT-2 (and posemb's own keys: the PE spec). */
#include "fuzz.h"
#include "posemb/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    posemb_config c;
    posemb_error err;
    posemb_config_load(&c, fuzz_write("config.json", data, size), &err);
    return 0;
}
