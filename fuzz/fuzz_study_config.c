/* The study's JSON config, read over the synthetic and the real-data
 * defaults. */
#include "fuzz.h"
#include "study/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("study.json", data, size);
    posemb_error err;
    posemb_study_config c = posemb_study_default();
    posemb_study_config_load(&c, path, &err);
    c = posemb_study_data_default("/nonexistent");
    posemb_study_config_load(&c, path, &err);
    return 0;
}
