/* SQuAD v1.1 JSON (the dev set's layout). */
#include "fuzz.h"
#include "data/datasets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    posemb_squad sq;
    posemb_error err;
    if (!posemb_squad_load(fuzz_write("dev-v1.1.json", data, size), &sq, &err)) posemb_squad_free(&sq);
    return 0;
}
