/* The general tokenizer.json pipeline: Hugging Face parity on the real
 * files of Llama 2, Llama 3 and Qwen3 (../shared/golden_llama/tokenizers:
 * ids, tokens and decode of every visible entry), hand-made files for the
 * pieces those do not use, malformed files, and the CLI. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/tokenizer.h"
#include "testutil.h"

static char *dir;
static char out[1 << 16];

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static const char *write_tmp(const char *name, const char *content)
{
    static char p[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    assert_int_equal(tu_write_file(p[k], content, strlen(content)), 0);
    return p[k];
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!root) fail_msg("%s: invalid JSON", path);
    return root;
}

/* --------------------------------------------------------------- parity */

/* Every entry of NAME/visible.json: ids, tokens and decode(ids, false). */
static void parity(const char *name)
{
    char what[128], path[1024];
    snprintf(what, sizeof what, "tokenizer.json parity (%s)", name);
    if (!tu_have_shared(what)) return;
    snprintf(path, sizeof path, "%s/golden_llama/tokenizers/%s/tokenizer.json", POSEMB_SHARED, name);
    posemb_tokenizer *t = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_json(path, &t, &err)) fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/golden_llama/tokenizers/%s/visible.json", POSEMB_SHARED, name);
    cJSON *root = read_json(path);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    assert_true(cJSON_GetArraySize(entries) >= 40);
    posemb_encoding e;
    posemb_encoding_init(&e);
    int i = 0, bad = 0;
    for (const cJSON *x = entries->child; x; x = x->next, i++) {
        const char *text = cJSON_GetObjectItemCaseSensitive(x, "text")->valuestring;
        int special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "add_special_tokens"));
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(x, "ids");
        const cJSON *toks = cJSON_GetObjectItemCaseSensitive(x, "tokens");
        const char *decoded = cJSON_GetObjectItemCaseSensitive(x, "decoded")->valuestring;
        unsigned flags = POSEMB_ENC_TOKENS | (special ? POSEMB_ENC_SPECIAL : 0);
        if (posemb_tokenizer_encode(t, text, strlen(text), flags, &e, &err)) fail_msg("%s", err.msg);
        int ok = e.n == cJSON_GetArraySize(ids);
        const cJSON *id = ids->child, *tok = toks->child;
        for (int k = 0; ok && k < e.n; k++, id = id->next, tok = tok->next)
            ok = e.ids[k] == (int32_t)id->valuedouble && !strcmp(e.tokens[k], tok->valuestring);
        char *dec = NULL;
        size_t dlen = 0;
        if (posemb_tokenizer_decode(t, e.ids, e.n, 0, &dec, &dlen, &err)) fail_msg("%s", err.msg);
        int dok = dlen == strlen(decoded) && !memcmp(dec, decoded, dlen);
        if (!ok || !dok) {
            print_error("%s entry %d (%s, special %d): ids/tokens %s, decode %s ('%s' vs '%s')\n", name, i, text,
                        special, ok ? "match" : "DIFFER", dok ? "matches" : "DIFFERS", dec, decoded);
            bad++;
        }
        free(dec);
    }
    print_message("%s: %d/%d entries match (ids, tokens, decode)\n", name, i - bad, i);
    posemb_encoding_free(&e);
    cJSON_Delete(root);
    posemb_tokenizer_free(t);
    assert_int_equal(bad, 0);
}

static void test_parity_llama2(void **state)
{
    (void)state;
    parity("llama2");
}

static void test_parity_llama3(void **state)
{
    (void)state;
    parity("llama3");
}

static void test_parity_qwen3(void **state)
{
    (void)state;
    parity("qwen3");
}

/* ------------------------------------------------------- hand-made files */

static posemb_tokenizer *load_text(const char *json)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_json(write_tmp("t.json", json), &t, &err)) fail_msg("%s", err.msg);
    return t;
}

static void expect_ids(const posemb_tokenizer *t, const char *text, size_t len, unsigned flags, const int32_t *want,
                       int n, int line)
{
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    if (posemb_tokenizer_encode(t, text, len, flags, &e, &err)) fail_msg("line %d: %s", line, err.msg);
    int ok = e.n == n;
    for (int i = 0; ok && i < n; i++) ok = e.ids[i] == want[i];
    if (!ok) {
        char got[512] = "";
        for (int i = 0; i < e.n && strlen(got) < 480; i++) snprintf(got + strlen(got), 16, " %d", e.ids[i]);
        fail_msg("line %d: '%s' gave%s (want %d ids)", line, text, got, n);
    }
    posemb_encoding_free(&e);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define EXPECT(t, lit, flags, ...) expect_ids(t, lit, sizeof lit - 1, flags, IDS(__VA_ARGS__), __LINE__)

static void expect_decode(const posemb_tokenizer *t, const int32_t *ids, int n, unsigned flags, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    posemb_error err;
    if (posemb_tokenizer_decode(t, ids, n, flags, &text, &len, &err)) fail_msg("%s", err.msg);
    if (len != strlen(want) || memcmp(text, want, len)) fail_msg("decoded '%s', want '%s'", text, want);
    free(text);
}

/* Llama 2's layout on a tiny vocabulary: Lowercase + right Strip,
 * Metaspace with prepend_scheme "first", byte_fallback, fuse_unk, an lstrip
 * added token, the template <s> $A and Llama 2's decoder chain. */
static const char METASPACE_JSON[] =
    "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"},"
    " {\"type\": \"Strip\", \"strip_left\": false, \"strip_right\": true}]},"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"first\","
    " \"split\": true},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, \"byte_fallback\": true,"
    " \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"\xe2\x96\x81\": 2, \"a\": 3, \"b\": 4, \"\xe2\x96\x81"
    "a\": 5,"
    " \"ab\": 6, \"\xe2\x96\x81"
    "ab\": 7, \"<0xC3>\": 8, \"<0xA9>\": 9, \"x\": 10, \"[M]\": 11},"
    " \"merges\": [\"\xe2\x96\x81 a\", \"a b\", [\"\xe2\x96\x81"
    "a\", \"b\"]]},"
    " \"added_tokens\": [{\"id\": 1, \"content\": \"<s>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 11, \"content\": \"[M]\", \"special\": true, \"normalized\": false, \"lstrip\": true}],"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\","
    " \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"Sequence\": {\"id\": \"A\","
    " \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], \"special_tokens\": {\"<s>\": {\"id\":"
    " \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]}}},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\":"
    " \"\xe2\x96\x81\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\":"
    " \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]}}";

static void test_metaspace_bytes(void **state)
{
    (void)state;
    posemb_tokenizer *t = load_text(METASPACE_JSON);
    /* "AB é " -> "ab é" -> "▁ab", "▁é"; ▁ a (0), then ▁a b (2); é as bytes */
    EXPECT(t, "AB \xc3\xa9 ", 0, 7, 2, 8, 9);
    EXPECT(t, "AB \xc3\xa9 ", POSEMB_ENC_SPECIAL, 1, 7, 2, 8, 9);
    EXPECT(t, "zz", 0, 2, 0);             /* two unknown characters, one fused <unk> */
    EXPECT(t, "x [M]y", 0, 2, 10, 11, 0); /* [M] takes the space before it; "y" is not first: no ▁ */
    EXPECT(t, "<s>a", 0, 1, 3);           /* the piece after <s> does not start the text */
    EXPECT(t, "", POSEMB_ENC_SPECIAL, 1); /* the template alone */
    expect_decode(t, IDS(1, 7, 2, 8, 9), 0, "<s> ab \xc3\xa9");
    expect_decode(t, IDS(7, 2, 8, 9), 0, "ab \xc3\xa9");
    expect_decode(t, IDS(1, 7, 8), POSEMB_DEC_SKIP_SPECIAL, "ab\xef\xbf\xbd"); /* a lone byte: U+FFFD */
    expect_decode(t, IDS(8, 8, 3), 0,
                  "\xef\xbf\xbd\xef\xbf\xbd"
                  "a"); /* one per byte */
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_UNK), 0);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_BOS), 1);
    posemb_tokenizer_free(t);
}

/* A Split or Digits pre-tokenizer in front of a BPE with ignore_merges and
 * no merges: a piece in the vocabulary is one token, others are spelled
 * out, so the ids show where the cuts fell. */
static posemb_tokenizer *split_tok(const char *pre)
{
    static char json[2048];
    snprintf(json, sizeof json,
             "{\"pre_tokenizer\": %s, \"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"merges\": [],"
             " \"vocab\": {\"a\": 0, \"b\": 1, \"-\": 2, \"a-\": 3, \"-b\": 4, \"a-b\": 5, \"1\": 6, \"2\": 7,"
             " \"12\": 8, \"--\": 9, \" \": 10}}}",
             pre);
    return load_text(json);
}

static void test_split_behaviours(void **state)
{
    (void)state;
    static const struct {
        const char *pre, *text;
        int32_t want[6];
        int n;
    } CASES[] = {
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Removed\"}", "a-b", {0, 1}, 2},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Isolated\"}", "a-b", {0, 2, 1}, 3},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"MergedWithPrevious\"}",
         "a-b",
         {3, 1},
         2},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"MergedWithNext\"}", "a-b", {0, 4}, 2},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Contiguous\"}", "a--b", {0, 9, 1}, 3},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Isolated\"}",
         "a--b",
         {0, 2, 2, 1},
         4},
        {"{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"Removed\", \"invert\": true}",
         "a-b",
         {2},
         1},
        {"{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"behavior\": \"Removed\"}",
         "a \xc2\x85 b",
         {0, 1},
         2}, /* \s as Oniguruma's: U+0085 is a space */
        {"{\"type\": \"Split\", \"pattern\": {\"Regex\": \"[ab]\"}, \"behavior\": \"MergedWithNext\", \"invert\": "
         "true}",
         "a-b",
         {0, 4},
         2}, /* the gap "-" is the match now: merged into "b" */
        {"{\"type\": \"Digits\", \"individual_digits\": true}", "a12", {0, 6, 7}, 3},
        {"{\"type\": \"Digits\", \"individual_digits\": false}", "a12", {0, 8}, 2},
        {"{\"type\": \"WhitespaceSplit\"}", " a-b  12 ", {5, 8}, 2},
        {"{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"WhitespaceSplit\"}, {\"type\": \"Digits\","
         " \"individual_digits\": true}]}",
         "a12 b",
         {0, 6, 7, 1},
         4},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        posemb_tokenizer *t = split_tok(CASES[i].pre);
        expect_ids(t, CASES[i].text, strlen(CASES[i].text), 0, CASES[i].want, CASES[i].n, (int)i);
        posemb_tokenizer_free(t);
    }
}

/* Byte-level BPE through the general pipeline (a NFKC normalizer keeps it
 * off the classic reader): prefix space, GPT-2's regex, merges, decode. */
static void test_byte_level(void **state)
{
    (void)state;
    posemb_tokenizer *t = load_text(
        "{\"normalizer\": {\"type\": \"NFKC\"}, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\":"
        " true}, \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"\xc4\xa0\": 0,"
        " \"a\": 1, \"b\": 2, \"\xc4\xa0"
        "a\": 3, \"\xc4\xa0"
        "ab\": 4, \"f\": 5, \"i\": 6, \"fi\": 7, \"\xc4\x8a\": 8},"
        " \"merges\": [\"\xc4\xa0 a\", \"\xc4\xa0"
        "a b\", \"f i\"]},"
        " \"added_tokens\": [{\"id\": 9, \"content\": \"<eot>\", \"special\": true, \"normalized\": false}]}");
    EXPECT(t, "ab \xef\xac\x81", 0, 4, 0, 7); /* " ab", " fi" (U+FB01 -> "fi" by NFKC) */
    EXPECT(t, "ab<eot>\n", 0, 4, 9, 0, 8);    /* each piece gets its prefix space */
    expect_decode(t, IDS(4, 0, 7, 9), 0, " ab fi<eot>");
    expect_decode(t, IDS(4, 0, 7, 9), POSEMB_DEC_SKIP_SPECIAL, " ab fi");
    assert_int_equal(posemb_tokenizer_vocab_size(t), 10);
    posemb_tokenizer_free(t);
}

/* Added tokens: a normalized one is matched on the lower-cased text (as
 * its lower-cased form), single_word skips a match inside a word; a raw
 * one with rstrip takes the spaces after it. */
static void test_added_tokens(void **state)
{
    (void)state;
    posemb_tokenizer *t = load_text(
        "{\"normalizer\": {\"type\": \"Lowercase\"}, \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},"
        " \"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"merges\": [], \"vocab\": {\"a\": 0, \"b\": 1,"
        " \"c\": 2}}, \"added_tokens\": [{\"id\": 10, \"content\": \"AB\", \"normalized\": true, \"single_word\":"
        " true, \"special\": false}, {\"id\": 11, \"content\": \"<T>\", \"normalized\": false, \"rstrip\": true,"
        " \"special\": true}, {\"id\": 12, \"content\": \"[L]\", \"normalized\": false, \"lstrip\": true}]}");
    EXPECT(t, "AB cAb aB", 0, 10, 2, 0, 1, 10); /* "ab cab ab": the middle "ab" is inside a word */
    EXPECT(t, "a<T>  b", 0, 0, 11, 1);
    EXPECT(t, "a  [L]b", 0, 0, 12, 1);
    EXPECT(t, "c<t>", 0, 2); /* no "<T>" (matched before lower-casing); unknown characters are dropped */
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    if (posemb_tokenizer_encode(t, "AB", 2, POSEMB_ENC_TOKENS, &e, &err)) fail_msg("%s", err.msg);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.tokens[0], "ab"); /* the text it matched, as the library shows it */
    posemb_encoding_free(&e);
    expect_decode(t, IDS(10, 11, 0), POSEMB_DEC_SKIP_SPECIAL, "AB a"); /* no decoder: joined by spaces */
    posemb_tokenizer_free(t);
}

/* ----------------------------------------------------------- bad files */

/* ------------------------------------------------------------- Unigram */

/* A Unigram file with pieces "P": S, ... (an array body) and unk_id. */
static posemb_tokenizer *unigram_tok(const char *vocab, const char *extra)
{
    static char json[8192];
    snprintf(json, sizeof json, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [%s]%s}}", vocab, extra);
    return load_text(json);
}

/* The cases of the library's own tests (models/unigram/model.rs:
 * test_encode, test_encode2, test_unigram_bytefallback), as ids. */
static void test_unigram(void **state)
{
    (void)state;
    posemb_tokenizer *t = unigram_tok("[\"<unk>\", 0], [\"a\", 0], [\"b\", 0], [\"c\", 0], [\"d\", 0], [\"cd\", 1],"
                                      " [\"ab\", 2], [\"abc\", 5], [\"abcd\", 10]",
                                      "");
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_UNIGRAM);
    EXPECT(t, "abcd", 0, 8);
    EXPECT(t, "abcdacdxx", 0, 8, 1, 5, 0); /* abcd a cd, then the two unknowns fused */
    posemb_tokenizer_free(t);
    /* 0 <unk>, 1 ab, 2 cd, 3 abc, 4 a, 5 b, 6 c, 7 ABC, 8 abcdabcd, 9 q, 10 r, 11 qr */
    t = unigram_tok("[\"<unk>\", 0], [\"ab\", 0], [\"cd\", -0.1], [\"abc\", -0.2], [\"a\", -0.3], [\"b\", -0.4],"
                    " [\"c\", -0.5], [\"ABC\", -0.5], [\"abcdabcd\", 20], [\"q\", 20.5], [\"r\", 20.5], [\"qr\", -0.5]",
                    "");
    EXPECT(t, "abc", 0, 3);
    EXPECT(t, "AB", 0, 0);
    EXPECT(t, "abcd", 0, 1, 2);
    EXPECT(t, "abcc", 0, 3, 6);
    EXPECT(t, "xabcabaabcdd", 0, 0, 3, 1, 4, 1, 2, 0);
    EXPECT(t, "xyz\xe6\x9d\xb1\xe4\xba\xac", 0, 0); /* xyz東京: one fused unknown */
    EXPECT(t, "ABC", 0, 7);
    EXPECT(t, "abABCcd", 0, 1, 7, 2);
    EXPECT(t, "ababcdabcdcd", 0, 1, 8, 2);
    EXPECT(t, "abqrcd", 0, 1, 9, 10, 2);
    expect_decode(t, IDS(1, 7, 2), 0, "ab ABC cd"); /* no decoder: the tokens joined by spaces, as the library */
    posemb_tokenizer_free(t);
    /* byte_fallback: é is <0xC3><0xA9>; "?é" has no <0x3F>, so it stays one unknown */
    t = unigram_tok("[\"<unk>\", 0], [\"<0xC3>\", -0.01], [\"<0xA9>\", -0.03]", ", \"byte_fallback\": true");
    EXPECT(t, "\xc3\xa9", 0, 1, 2);
    EXPECT(t, "?\xc3\xa9", 0, 0);
    posemb_tokenizer_free(t);
    /* no unk_id: a character no piece covers is an error (the library's MissingUnkId) only
     * where the unknown would be on the best path: "b" of "ab" is covered by "ab" */
    t = load_text("{\"model\": {\"vocab\": [[\"a\", -1], [\"ab\", 0], [\"c\", 0]]}}"); /* no type: Unigram */
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_UNIGRAM);
    EXPECT(t, "aa", 0, 0, 0);
    EXPECT(t, "abc", 0, 1, 2);
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    assert_int_equal(posemb_tokenizer_encode(t, "ac b", 4, 0, &e, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "no unk_id"));
    posemb_encoding_free(&e);
    posemb_tokenizer_free(t);
    /* a repeated piece encodes as its later id and both ids decode to it; an empty piece
     * is never matched but its score sets the unknown's (-7 - 10 = -17 < "a" + "a") */
    t = unigram_tok("[\"<unk>\", 0], [\"a\", -1], [\"<unk>\", -2], [\"b\", -1], [\"\", -7], [\"aa\", -30]", "");
    EXPECT(t, "axb<unk>", 0, 1, 0, 3, 2);
    EXPECT(t, "aa", 0, 1, 1);
    expect_decode(t, IDS(0, 1, 2), 0, "<unk> a <unk>");
    posemb_tokenizer_free(t);
}

/* The charsmap of SentencePiece's nmt_nfkc rule, as spm_precompiled's own
 * tests use it (tests/data/README.md). */
static char *nmt_nfkc_normalizer(void)
{
    cJSON *j = read_json(POSEMB_TESTDATA "/precompiled_nmt_nfkc.json");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* A Unigram with only <unk> and the 256 byte tokens: every pre-token is one
 * fused unknown spelled as bytes, so the ids are the normalized bytes + 1. */
static void expect_normalized(const posemb_tokenizer *t, const char *in, const char *want)
{
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    if (posemb_tokenizer_encode(t, in, strlen(in), 0, &e, &err)) fail_msg("%s", err.msg);
    char got[256];
    int n = 0;
    for (int i = 0; i < e.n && n < 255; i++) got[n++] = (char)(e.ids[i] - 1);
    got[n] = '\0';
    if (strcmp(got, want)) fail_msg("'%s' normalized to '%s', want '%s'", in, got, want);
    posemb_encoding_free(&e);
}

static void test_precompiled(void **state)
{
    (void)state;
    char *norm = nmt_nfkc_normalizer();
    size_t cap = strlen(norm) + 8192;
    char *json = malloc(cap);
    assert_non_null(json);
    int n = snprintf(json, cap,
                     "{\"normalizer\": %s, \"model\": {\"type\": \"Unigram\", \"unk_id\": 0, "
                     "\"byte_fallback\": true, \"vocab\": [[\"<unk>\", 0]",
                     norm);
    for (int b = 0; b < 256; b++) n += snprintf(json + n, cap - (size_t)n, ", [\"<0x%02X>\", -1]", b);
    snprintf(json + n, cap - (size_t)n, "]}}");
    posemb_tokenizer *t = load_text(json);
    /* spm_precompiled's tests */
    expect_normalized(t, "\xf0\x9d\x94\xbe", "G");        /* U+1D53E 𝔾 */
    expect_normalized(t, "\xf0\x9d\x95\xa0", "o");        /* U+1D560 𝕠 */
    expect_normalized(t, "\xe2\x80\x8d", " ");            /* U+200D zero-width joiner */
    expect_normalized(t, "\xef\xac\x81", "fi");           /* U+FB01 ﬁ */
    expect_normalized(t, "\xd8\xa7\xd9\x93", "\xd8\xa2"); /* alef + maddah above, one grapheme: آ */
    expect_normalized(t, "\u0908\u093c", "\u0908\u093c"); /* kept */
    expect_normalized(t, "\u0921\u093c\u0940 \u0926\u0941\u0916", "\u0921\u093c\u0940 \u0926\u0941\u0916");
    expect_normalized(t,
                      "\u0e40\u0e02\u0e32\u0e44\u0e21\u0e48\u0e44\u0e14\u0e49\u0e1e\u0e39\u0e14\u0e2a\u0e31\u0e01"
                      "\u0e04\u0e33",
                      "\u0e40\u0e02\u0e32\u0e44\u0e21\u0e48\u0e44\u0e14\u0e49\u0e1e\u0e39\u0e14\u0e2a\u0e31\u0e01"
                      "\u0e04\u0e4d\u0e32");                  /* sara am decomposed */
    expect_normalized(t, "a\xef\xbd\x82\xe2\x91\xa0", "ab1"); /* fullwidth b, circled 1 */
    posemb_tokenizer_free(t);
    /* T5's layout: Precompiled, WhitespaceSplit + Metaspace, "$A </s>", the
     * Metaspace decoder; ▁G + o (-9) beats ▁Go (-10), ▁Hello (-6) beats ▁He + llo (-7) */
    snprintf(json, cap,
             "{\"normalizer\": %s, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\":"
             " \"WhitespaceSplit\"}, {\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\":"
             " \"always\", \"split\": true}]}, \"model\": {\"type\": \"Unigram\", \"unk_id\": 2, \"vocab\":"
             " [[\"<pad>\", 0], [\"</s>\", 0], [\"<unk>\", 0], [\"\u2581\", -2], [\"\u2581He\", -3],"
             " [\"llo\", -4], [\"\u2581Hello\", -6], [\"o\", -5], [\"\u2581G\", -4], [\"\u2581Go\", -10]]},"
             " \"added_tokens\": [{\"id\": 1, \"content\": \"</s>\", \"special\": true}],"
             " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\":"
             " \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}], \"pair\": [],"
             " \"special_tokens\": {\"</s>\": {\"id\": \"</s>\", \"ids\": [1], \"tokens\": [\"</s>\"]}}},"
             " \"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\":"
             " \"always\", \"split\": true}}",
             norm);
    t = load_text(json);
    EXPECT(t, "Hello  \xf0\x9d\x94\xbeo", POSEMB_ENC_SPECIAL, 6, 8, 7, 1); /* 𝔾 is G */
    EXPECT(t, "Hello x", 0, 6, 3, 2);                                      /* ▁ then x unknown */
    expect_decode(t, IDS(6, 8, 7, 1), POSEMB_DEC_SKIP_SPECIAL, "Hello Go");
    posemb_tokenizer_free(t);
    /* malformed charsmaps */
    static const char *const BAD[] = {"\"not base64!\"", "\"AAAA\"", "\"/////w==\""};
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
        snprintf(json, cap,
                 "{\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": %s}, \"model\": {\"type\": "
                 "\"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0]]}}",
                 BAD[k]);
        posemb_error err;
        posemb_tokenizer *bad = NULL;
        assert_int_not_equal(posemb_tokenizer_load_json(write_tmp("b.json", json), &bad, &err), POSEMB_OK);
        assert_non_null(strstr(err.msg, "precompiled_charsmap"));
        assert_null(bad);
    }
    free(json);
    free(norm);
}

static void test_bad_files(void **state)
{
    (void)state;
    static const char OK_MODEL[] = "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
                                   "\"merges\": [\"a b\"]}";
    static const struct {
        const char *parts, *frag;
    } BAD[] = {
        {"\"normalizer\": {\"type\": \"Foo\"}", "normalizer type 'Foo' is not supported"},
        {"\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, 3]}",
         "normalizer.normalizers[1] is not an object"},
        {"\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}, {\"type\": "
         "\"Bar\"}]}",
         "pre_tokenizer.pretokenizers[1] type 'Bar' is not supported"},
        {"\"decoder\": {\"type\": \"Baz\"}, \"normalizer\": {\"type\": \"NFC\"}",
         "decoder type 'Baz' is not supported"},
        {"\"post_processor\": {\"type\": \"Qux\"}, \"normalizer\": {\"type\": \"NFC\"}",
         "post_processor type 'Qux' is not supported"},
        {"\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, \"behavior\": \"Isolated\"}",
         "missing closing parenthesis"},
        {"\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"a\"}, \"behavior\": \"Sideways\"}",
         "behavior 'Sideways'"},
        {"\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Glob\": \"a\"}, \"behavior\": \"Isolated\"}",
         "pre_tokenizer.pattern must be"},
        {"\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"ab\"}", "exactly one character"},
        {"\"pre_tokenizer\": {\"type\": \"Metaspace\", \"prepend_scheme\": \"sometimes\"}",
         "prepend_scheme 'sometimes'"},
        {"\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": 5}",
         "normalizer.content must be a string"},
        {"\"decoder\": {\"type\": \"Strip\", \"content\": \" \", \"start\": -1}, \"normalizer\": {\"type\": \"NFC\"}",
         "start and stop"},
        {"\"added_tokens\": [{\"id\": -1, \"content\": \"<x>\"}], \"normalizer\": {\"type\": \"NFC\"}",
         "added_tokens[0].id"},
        {"\"added_tokens\": [{\"id\": 3, \"content\": \"<x>\", \"special\": \"yes\"}], \"normalizer\": {\"type\": "
         "\"NFC\"}",
         "added_tokens[0]: special"},
        {"\"added_tokens\": [{\"id\": 3, \"content\": \"\"}], \"normalizer\": {\"type\": \"NFC\"}",
         "added_tokens[0].content"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char json[2048];
        snprintf(json, sizeof json, "{%s, %s}", BAD[i].parts, OK_MODEL);
        posemb_tokenizer *t = NULL;
        posemb_error err;
        posemb_status st = posemb_tokenizer_load_json(write_tmp("bad.json", json), &t, &err);
        if (st != POSEMB_EFORMAT || !strstr(err.msg, "bad.json: ") || !strstr(err.msg, BAD[i].frag) ||
            strchr(err.msg, '\n') || t)
            fail_msg("case %zu: status %d '%s', want '%s'", i, st, err.msg, BAD[i].frag);
    }
#define BPE "\"type\": \"BPE\", "
#define UNI "\"type\": \"Unigram\", "
    static const struct {
        const char *model, *frag;
    } MODELS[] = {
        {BPE "\"vocab\": {\"a\": 0}, \"merges\": [\"a q\"]", "model.merges[0]: 'q' is not in model.vocab"},
        {BPE "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]", "the merged token 'ab' is not in model.vocab"},
        {BPE "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b c\"]", "model.merges[0] is not"},
        {BPE "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\"]]", "model.merges[0] is not"},
        {BPE "\"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"zz\"",
         "model.unk_token 'zz' is not in model.vocab"},
        {BPE "\"vocab\": {\"a\": 0}, \"merges\": [], \"byte_fallback\": 1", "must be booleans"},
        {BPE "\"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1", "model.dropout is not supported"},
        {BPE "\"vocab\": {\"a\": -3}, \"merges\": []", "model.vocab"},
        {BPE "\"vocab\": {\"a\": 0}, \"merges\": {}", "model.merges is not an array"},
        {UNI "\"vocab\": {\"a\": -1}", "model.vocab is not an array"},
        {UNI "\"vocab\": [[\"a\", -1], [\"b\"]]", "model.vocab[1] is not [\"PIECE\", SCORE]"},
        {UNI "\"vocab\": [[\"a\", -1], [\"\\u0000b\", -2]]", "a string holds \\u0000"},
        {UNI "\"vocab\": [[\"a\", -1]], \"unk_id\": 1", "model.unk_id must be an index"},
        {UNI "\"vocab\": [[\"a\", -1]], \"byte_fallback\": 0", "model.byte_fallback must be a boolean"},
    };
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
        char json[2048];
        snprintf(json, sizeof json, "{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {%s}}", MODELS[i].model);
        posemb_tokenizer *t = NULL;
        posemb_error err;
        posemb_status st = posemb_tokenizer_load_json(write_tmp("bad.json", json), &t, &err);
        if (st != POSEMB_EFORMAT || !strstr(err.msg, "bad.json: ") || !strstr(err.msg, MODELS[i].frag) ||
            strchr(err.msg, '\n') || t)
            fail_msg("model case %zu: status %d '%s', want '%s'", i, st, err.msg, MODELS[i].frag);
    }
    /* a template naming an id no token has */
    char json[2048];
    snprintf(json, sizeof json,
             "{\"normalizer\": {\"type\": \"NFC\"}, %s, \"post_processor\": {\"type\": \"TemplateProcessing\","
             " \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\":"
             " {\"<s>\": {\"id\": \"<s>\", \"ids\": [77], \"tokens\": [\"<s>\"]}}}}",
             OK_MODEL);
    posemb_tokenizer *t = NULL;
    posemb_error err;
    assert_int_equal(posemb_tokenizer_load_json(write_tmp("bad.json", json), &t, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "id 77"));
}

/* ------------------------------------------------------------------ CLI */

static int run(const char *args, const char *input)
{
    char cmd[4096];
    if (input) snprintf(cmd, sizeof cmd, "cd '%s' && printf '%s' | '%s' tokenize %s", dir, input, POSEMB_BIN, args);
    else snprintf(cmd, sizeof cmd, "cd '%s' && '%s' tokenize %s", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

static void test_cli(void **state)
{
    (void)state;
    write_tmp("m.json", METASPACE_JSON);
    assert_int_equal(run("--help", NULL), 0);
    assert_non_null(strstr(out, "--decode"));
    assert_int_equal(run("--tokenizer m.json --special --json 'AB \xc3\xa9'", NULL), 0);
    assert_string_equal(out, "{\"tokens\": [\"<s>\", \"\xe2\x96\x81"
                             "ab\", \"\xe2\x96\x81\", \"<0xC3>\", "
                             "\"<0xA9>\"], \"ids\": [1, 7, 2, 8, 9]}\n");
    /* standard input is bytes: a NUL is a character (no token: byte_fallback has none, so <unk>) */
    assert_int_equal(run("--tokenizer m.json --json", "a\\000b"), 0);
    assert_string_equal(out, "{\"tokens\": [\"\xe2\x96\x81"
                             "a\", \"<unk>\", \"b\"], \"ids\": [5, 0, 4]}\n");
    assert_int_equal(run("--tokenizer m.json --decode 1 7,2 8 9", NULL), 0);
    assert_string_equal(out, "<s> ab \xc3\xa9\n");
    assert_int_equal(run("--tokenizer m.json --decode --skip-special --json", "[1, 7, 2, 8, 9]\\n"), 0);
    assert_string_equal(out, "{\"text\": \"ab \xc3\xa9\"}\n");
    /* the output of --json decodes back */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' tokenize --tokenizer m.json --json 'ab x' | '%s' tokenize --tokenizer "
             "m.json --decode",
             dir, POSEMB_BIN, POSEMB_BIN);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_string_equal(out, "ab x\n");
    const char *usage[] = {"--tokenizer m.json --decode x1", "--tokenizer m.json --decode --pair a 1",
                           "--tokenizer m.json --skip-special a"};
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        int rc = run(usage[i], NULL);
        if (rc != 2 || strncmp(out, "posemb tokenize: ", 17) || strchr(out, '\n') != out + strlen(out) - 1)
            fail_msg("'%s': exit %d, output '%s'", usage[i], rc, out);
    }
    assert_int_equal(run("--tokenizer m.json --decode", "1 2 x"), 2);
    assert_int_equal(run("--tokenizer m.json --decode 99", NULL), 1);
    assert_non_null(strstr(out, "id 99"));
    write_tmp("bad.json", "{\"normalizer\": {\"type\": \"Foo\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {},"
                          " \"merges\": []}}");
    assert_int_equal(run("--tokenizer bad.json x", NULL), 1);
    assert_non_null(strstr(out, "bad.json: normalizer type 'Foo'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity_llama2),
        cmocka_unit_test(test_parity_llama3),
        cmocka_unit_test(test_parity_qwen3),
        cmocka_unit_test(test_metaspace_bytes),
        cmocka_unit_test(test_split_behaviours),
        cmocka_unit_test(test_byte_level),
        cmocka_unit_test(test_added_tokens),
        cmocka_unit_test(test_unigram),
        cmocka_unit_test(test_precompiled),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
