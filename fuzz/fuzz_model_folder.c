/* A model folder: config.json, then model.safetensors, after FUZZ_SEP. The
 * model a config asks for is built and the weights must match it tensor by
 * tensor. Configs of more than 2^22 weights are read but not built: a larger
 * model runs the same code and only costs the fuzzer time (zeroing weights
 * and gradients), which would leave it a hundred executions a second. */
#include <stdio.h>

#include "fuzz.h"
#include "posemb/model.h"
#include "posemb/threads.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    posemb_threads_set(1);
    return 0;
}

/* About the weights of a config: embeddings and per layer attention and FFN. */
static double weights(const posemb_config *c)
{
    double h = c->hidden;
    return h * ((double)c->vocab_size + c->max_position + c->type_vocab) +
           (double)c->layers * (4 * h * h + 2 * h * (double)c->intermediate);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    int n = fuzz_split(data, size, part, len, 2);
    fuzz_clear("m");
    fuzz_write("m/config.json", part[0], len[0]);
    if (n > 1) fuzz_write("m/model.safetensors", part[1], len[1]);
    char dir[600], config[700];
    snprintf(dir, sizeof dir, "%s/m", fuzz_dir());
    snprintf(config, sizeof config, "%s/config.json", dir);
    posemb_config c;
    posemb_error err;
    if (posemb_config_load(&c, config, &err) || weights(&c) > (1 << 22)) return 0;
    posemb_model *m = NULL;
    if (!posemb_model_load(&m, dir, &err)) posemb_model_free(m);
    return 0;
}
