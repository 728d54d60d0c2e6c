/* A byte-level tokenizer written as Hugging Face's tokenizer.json: BPE
 * without merges over ByteLevel's alphabet, no pre-tokenizer regex, so the
 * ids are the text's bytes (0..255) and any text round-trips. Written as a
 * file rather than built in, so that a model trained on bytes carries its
 * tokenizer like any other and `tokenizers` loads it as posemb does. */
#include <stdio.h>
#include <stdlib.h>

#include "core/fileio.h"
#include "posemb/tokenizer.h"

#include "tokenizer_impl.h"
#include "text/tokenizer_internal.h"

/* ByteLevel with its flags off, as the pre-tokenizer and the decoder. */
static cJSON *byte_level(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddFalseToObject(o, "add_prefix_space");
    cJSON_AddFalseToObject(o, "trim_offsets");
    cJSON_AddFalseToObject(o, "use_regex");
    return o;
}

static cJSON *bytes_model(void)
{
    uint32_t byte_cp[256];
    int16_t cp_byte[324];
    tok_byte_alphabet(byte_cp, cp_byte);
    cJSON *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddFalseToObject(model, "fuse_unk");
    cJSON_AddFalseToObject(model, "byte_fallback");
    cJSON_AddFalseToObject(model, "ignore_merges");
    for (int b = 0; b < 256; b++) {
        char u[8] = {0};
        tok_utf8_put((int32_t)byte_cp[b], u);
        cJSON_AddNumberToObject(vocab, u, b);
    }
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", cJSON_CreateArray());
    return model;
}

posemb_status posemb_tokenizer_write_bytes(const char *path, posemb_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON_AddItemToObject(root, "added_tokens", cJSON_CreateArray());
    cJSON_AddNullToObject(root, "normalizer");
    cJSON_AddItemToObject(root, "pre_tokenizer", byte_level());
    cJSON_AddNullToObject(root, "post_processor");
    cJSON_AddItemToObject(root, "decoder", byte_level());
    cJSON_AddItemToObject(root, "model", bytes_model());
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    posemb_status st = posemb_write_text(path, text, err);
    free(text);
    return st;
}
