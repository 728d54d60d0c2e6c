/* Any bytes (invalid UTF-8 included) through real tokenizers: BERT's
 * WordPiece vocabulary lower-cased and cased, GPT-2's byte-level BPE (which
 * must decode back to the same bytes), and a WordPiece tokenizer.json. The
 * real files come from ../shared when it is there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "posemb/tokenizer.h"

enum { MAX_TOK = 4 };
static posemb_tokenizer *toks[MAX_TOK];
static int roundtrip[MAX_TOK], n_toks;

static const char WORDPIECE_JSON[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"special\": true},"
    "{\"id\": 1, \"content\": \"[UNK]\", \"special\": true}, {\"id\": 2, \"content\": \"[CLS]\", \"special\": true},"
    "{\"id\": 3, \"content\": \"[SEP]\", \"special\": true}, {\"id\": 4, \"content\": \"[MASK]\", \"special\": true}],"
    "\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
    " \"strip_accents\": null, \"lowercase\": true}, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    "\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3], \"cls\": [\"[CLS]\", 2]},"
    "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\","
    " \"max_input_chars_per_word\": 100, \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3,"
    " \"[MASK]\": 4, \"un\": 5, \"##aff\": 6, \"##able\": 7, \"cafe\": 8, \"!\": 9, \"a\": 10, \"##a\": 11}}}";

static void add(posemb_status st, posemb_tokenizer *t, int rt, const char *what, const posemb_error *err)
{
    if (st) {
        fprintf(stderr, "fuzz_tokenize: %s: %s\n", what, err->msg);
        abort();
    }
    toks[n_toks] = t;
    roundtrip[n_toks++] = rt;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    posemb_error err;
    posemb_tokenizer *t = NULL;
    const char *vocab = fuzz_shared("data/bert-base-uncased/vocab.txt");
    if (vocab) {
        add(posemb_tokenizer_load_wordpiece(vocab, 1, &t, &err), t, 0, vocab, &err);
        add(posemb_tokenizer_load_wordpiece(vocab, 0, &t, &err), t, 0, vocab, &err);
    }
    const char *enc = fuzz_shared("data/gpt2/encoder.json");
    char encoder[1024];
    if (enc) {
        snprintf(encoder, sizeof encoder, "%s", enc);
        const char *merges = fuzz_shared("data/gpt2/vocab.bpe");
        add(posemb_tokenizer_load_bpe(encoder, merges, &t, &err), t, 1, encoder, &err);
    }
    const char *json = fuzz_write("wordpiece.json", (const uint8_t *)WORDPIECE_JSON, strlen(WORDPIECE_JSON));
    add(posemb_tokenizer_load_json(json, &t, &err), t, 0, "wordpiece.json", &err);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int i = 0; i < n_toks; i++) fuzz_tokenize(toks[i], data, size, roundtrip[i]);
    return 0;
}
