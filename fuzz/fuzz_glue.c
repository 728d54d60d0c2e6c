/* A GLUE TSV file, read as the task its first byte picks (single sentences,
 * pairs, regression), with and without labels. */
#include "fuzz.h"
#include "data/datasets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    posemb_glue_task task = (posemb_glue_task)(data[0] % POSEMB_GLUE_TASK_COUNT);
    const char *path = fuzz_write("train.tsv", data + 1, size - 1);
    for (int labeled = 0; labeled < 2; labeled++) {
        posemb_glue_data d;
        posemb_error err;
        if (!posemb_glue_read(task, path, labeled, &d, &err)) posemb_glue_free(&d);
    }
    return 0;
}
