/* A training checkpoint folder, as --resume reads it: trainer_state.json,
 * FUZZ_SEP, optimizer.safetensors, FUZZ_SEP, model.safetensors, for a small
 * BERT (1 layer, width 16, 2 heads, 25 tokens, 16 positions; the corpus
 * comes from `posemb train` with the same sizes, fuzz/README.md). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/threads.h"
#include "train/train_impl.h"

static posemb_model *model;
static posemb_adamw opt;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    posemb_threads_set(1);
    posemb_config c;
    posemb_error err;
    posemb_config_defaults(&c, POSEMB_BERT);
    c.layers = 1;
    c.hidden = 16;
    c.heads = 2;
    c.intermediate = 64;
    c.vocab_size = 25;
    c.max_position = 16;
    snprintf(c.pe, sizeof c.pe, "lsin+lsrpe:k=4");
    if (posemb_config_set_head(&c, POSEMB_HEAD_MLM, 0, &err) || posemb_model_create(&model, &c, &err) ||
        posemb_adamw_init(&opt, model, &err)) {
        fprintf(stderr, "fuzz_checkpoint: %s\n", err.msg);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = {"ck/trainer_state.json", "ck/optimizer.safetensors", "ck/model.safetensors"};
    const uint8_t *part[3];
    size_t len[3];
    int n = fuzz_split(data, size, part, len, 3);
    fuzz_clear("ck");
    for (int i = 0; i < n; i++) fuzz_write(names[i], part[i], len[i]);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/ck", fuzz_dir());
    train_state s = {0};
    posemb_error err;
    train_checkpoint_load(dir, model, &opt, &s, &err);
    free(s.history);
    return 0;
}
