/* inputs.json: the ids, token types and mask that `posemb forward` reads. */
#include "fuzz.h"
#include "formats/inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    posemb_inputs in;
    posemb_error err;
    if (!posemb_inputs_load(&in, fuzz_write("inputs.json", data, size), &err)) posemb_inputs_free(&in);
    return 0;
}
