/* Tokenizers: Hugging Face parity on the golden strings (when ../shared is
 * there), hand-made vocabularies whose answers follow from the algorithms
 * (always), malformed files, tokenizer.json, and the posemb tokenize CLI. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/tokenizer.h"
#include "text/tokenizer_internal.h"
#include "testutil.h"

static char *dir;
static char out[1 << 16];

static const char *path_in(const char *name)
{
    static char p[8][1024];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static const char *write_tmp(const char *name, const char *content, size_t len)
{
    const char *p = path_in(name);
    assert_int_equal(tu_write_file(p, content, len), 0);
    return p;
}

#define WRITE(name, lit) write_tmp(name, lit, sizeof lit - 1)

static int setup(void **state)
{
    dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    free(dir);
    return 0;
}

/* Asserts that text (len bytes) encodes to the n ids in want. */
static void expect_ids_at(const posemb_tokenizer *t, const char *text, size_t len, unsigned flags, const int32_t *want,
                          int n, const char *file, int line)
{
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    posemb_status st = posemb_tokenizer_encode(t, text, len, flags | POSEMB_ENC_TOKENS, &e, &err);
    if (st) {
        print_error("%s:%d: encode failed: %s\n", file, line, err.msg);
        _fail(file, line);
    }
    int ok = e.n == n;
    for (int i = 0; ok && i < n; i++) ok = e.ids[i] == want[i];
    if (!ok) {
        print_error("%s:%d: ids differ for a text of %zu bytes\n  got ", file, line, len);
        for (int i = 0; i < e.n; i++) print_error(" %d(%s)", e.ids[i], e.tokens[i]);
        print_error("\n  want");
        for (int i = 0; i < n; i++) print_error(" %d", want[i]);
        print_error("\n");
        posemb_encoding_free(&e);
        _fail(file, line);
    }
    posemb_encoding_free(&e);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define EXPECT(t, lit, flags, ...) expect_ids_at(t, lit, sizeof lit - 1, flags, IDS(__VA_ARGS__), __FILE__, __LINE__)
#define EXPECT_NONE(t, lit) expect_ids_at(t, lit, sizeof lit - 1, 0, NULL, 0, __FILE__, __LINE__)

/* Asserts that loading fails with code and a message holding each of the
 * given fragments (the file name is always one). */
static void expect_load_error(posemb_status got, posemb_status code, const posemb_error *err, const char *frag1,
                              const char *frag2, const char *file, int line)
{
    if (got != code || !strstr(err->msg, frag1) || (frag2 && !strstr(err->msg, frag2)) || strchr(err->msg, '\n')) {
        print_error("%s:%d: got status %d '%s', want %d with '%s' and '%s'\n", file, line, got, err->msg, code, frag1,
                    frag2 ? frag2 : "");
        _fail(file, line);
    }
}

#define EXPECT_ERR(call, code, frag1, frag2)                                                                           \
    do {                                                                                                               \
        posemb_tokenizer *tk_ = NULL;                                                                                  \
        posemb_error e_;                                                                                               \
        posemb_status s_ = (call);                                                                                     \
        expect_load_error(s_, code, &e_, frag1, frag2, __FILE__, __LINE__);                                            \
        assert_null(tk_);                                                                                              \
    } while (0)

/* ------------------------------------------------- hand-made WordPiece */

/* ids are line numbers - 1; line 24 is empty (HF makes "" a token too). */
static const char VOCAB[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n" /* 0-4 */
                            "un\n##aff\n##able\ncafe\n,\n"         /* 5-9 */
                            "!\n.\n日\n本\na\n"                    /* 10-14 */
                            "##b\nhello\nworld\n##c\n=\n"          /* 15-19 */
                            "σ\ni\nx\n'\n\n"                       /* 20-24 */
                            "ᄒ\n##ᅡ\n##ᆫ\n";                    /* 25-27 */

static posemb_tokenizer *wp_tok(int lowercase)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    const char *p = WRITE("vocab.txt", VOCAB);
    posemb_status st = posemb_tokenizer_load_wordpiece(p, lowercase, &t, &err);
    if (st) fail_msg("load: %s", err.msg);
    return t;
}

static void test_wordpiece_basics(void **state)
{
    posemb_tokenizer *t = wp_tok(1);
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_WORDPIECE);
    assert_int_equal(posemb_tokenizer_vocab_size(t), 28);
    assert_int_equal(posemb_tokenizer_token_id(t, "hello"), 16);
    assert_int_equal(posemb_tokenizer_token_id(t, ""), 24);
    assert_int_equal(posemb_tokenizer_token_id(t, "nope"), -1);
    assert_string_equal(posemb_tokenizer_id_token(t, 6), "##aff");
    assert_null(posemb_tokenizer_id_token(t, 28));
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_PAD), 0);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_UNK), 1);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_CLS), 2);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_SEP), 3);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_MASK), 4);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_EOS), -1);

    EXPECT(t, "unaffable", 0, 5, 6, 7);             /* greedy longest match with ## */
    EXPECT(t, "UnAffABLE", 0, 5, 6, 7);             /* lower-cased */
    EXPECT(t, "ab abc", 0, 14, 15, 14, 15, 18);     /* a ##b, a ##b ##c */
    EXPECT(t, "abx", 0, 1);                         /* ##x missing: the whole word is [UNK] */
    EXPECT(t, "Café!", 0, 8, 10);                   /* NFD, Mn dropped; punctuation split off */
    EXPECT(t, "CAFÉ,cafe.", 0, 8, 9, 8, 11);        /* É lower-cases to é, then loses its accent */
    EXPECT(t, "日本語", 0, 12, 13, 1);              /* each ideograph a word; 語 unknown */
    EXPECT(t, "a日b", 0, 14, 12, 1);                /* ideographs split words: "b" alone has no "b" */
    EXPECT(t, "a😀b", 0, 1);                         /* an emoji is neither space nor punctuation */
    EXPECT(t, "  hello \t\n\r world  ", 0, 16, 17); /* whitespace runs */
    EXPECT(t, "hello\xe2\x80\xa8world", 0, 16, 17); /* U+2028 splits (Python's str.split) */
    EXPECT(t, "hello\xe3\x80\x80world", 0, 16, 17); /* U+3000 is Zs */
    /* NUL, U+FEFF, U+200B, U+00AD, DEL, \x0b are deleted, not split on */
    EXPECT(t, "hel\0lo wor\xe2\x80\x8bld\xc2\xad\x7f\x0b", 0, 16, 17);
    EXPECT(t, "\0wor\xef\xbb\xbfld", 0, 17);
    EXPECT(t, "hello\xef\xbb\xbfworld", 0, 1); /* joined into "helloworld": no ##world */
    EXPECT(t, "\xe2\x89\xa0", 0, 19);          /* ≠ -> = + U+0338 -> = */
    EXPECT(t, "\xce\xa3", 0, 20);              /* Σ -> σ (one character at a time: never ς) */
    EXPECT(t, "x \xce\xa3", 0, 22, 20);
    EXPECT(t, "\xc4\xb0", 0, 21);             /* İ -> i + U+0307 -> i */
    EXPECT(t, "\xed\x95\x9c", 0, 25, 26, 27); /* Hangul decomposes into jamo */
    EXPECT(t, "x'", 0, 22, 23);
    EXPECT(t,
           "\xff"
           "hello\xc3",
           0, 16); /* invalid UTF-8 -> U+FFFD -> deleted */
    EXPECT_NONE(t, "");
    EXPECT_NONE(t, " \t\n ");
    EXPECT_NONE(t, "\xcc\x81\xcc\x88"); /* only combining marks: nothing left */
    posemb_tokenizer_free(t);
}

/* posemb_tokenizer_words: BasicTokenizer's words, joined by spaces here. */
typedef struct words_buf {
    char s[512];
    size_t n;
    int stop_after; /* 0: never stop */
} words_buf;

static int collect(void *ctx, const char *word, size_t len)
{
    words_buf *w = ctx;
    if (w->n + len + 2 > sizeof w->s) return 1;
    if (w->n) w->s[w->n++] = ' ';
    memcpy(w->s + w->n, word, len);
    w->s[w->n += len] = '\0';
    return w->stop_after && --w->stop_after == 0;
}

static void expect_words_at(const posemb_tokenizer *t, const char *text, size_t len, const char *want, int line)
{
    words_buf w = {.s = "", .n = 0, .stop_after = 0};
    posemb_error err;
    if (posemb_tokenizer_words(t, text, len, collect, &w, &err)) fail_msg("line %d: %s", line, err.msg);
    if (strcmp(w.s, want)) fail_msg("line %d: words '%s', want '%s'", line, w.s, want);
}
#define EXPECT_WORDS(t, lit, want) expect_words_at(t, lit, sizeof lit - 1, want, __LINE__)

/* The words are what WordPiece splits: each is its pieces joined, ## dropped
 * (where no piece is [UNK]), and the special tokens written in the text stay
 * whole. The tokenizer's settings apply (lower-casing, accents). */
static void test_wordpiece_words(void **state)
{
    posemb_tokenizer *t = wp_tok(1);
    EXPECT_WORDS(t, "UnAffABLE", "unaffable");
    EXPECT_WORDS(t, "ab abc", "ab abc");
    EXPECT_WORDS(t, "Café!", "cafe !");
    EXPECT_WORDS(t, "CAFÉ,cafe.", "cafe , cafe .");
    EXPECT_WORDS(t, "日本語", "日 本 語");
    EXPECT_WORDS(t, "a日b", "a 日 b");
    EXPECT_WORDS(t, "a😀b", "a😀b");
    EXPECT_WORDS(t, "  hello \t\n\r world  ", "hello world");
    EXPECT_WORDS(t, "hello\xe2\x80\xa8world", "hello world");
    EXPECT_WORDS(t, "hel\0lo wor\xe2\x80\x8bld\xc2\xad\x7f\x0b", "hello world");
    EXPECT_WORDS(t, "\xe2\x89\xa0 \xce\xa3 \xc4\xb0", "= σ i");
    EXPECT_WORDS(t, "don't", "don ' t");
    EXPECT_WORDS(t, "[CLS] Hello[SEP]x", "[CLS] hello [SEP] x");
    EXPECT_WORDS(t, " \t\n ", "");
    posemb_tokenizer_free(t);
    t = wp_tok(0); /* cased: case and accents kept */
    EXPECT_WORDS(t, "Café, WORLD", "Café , WORLD");
    posemb_tokenizer_free(t);

    t = wp_tok(1); /* the callback stops: EIO, after the words it took */
    words_buf w = {.s = "", .n = 0, .stop_after = 2};
    posemb_error err;
    assert_int_equal(posemb_tokenizer_words(t, "a b c d", 7, collect, &w, &err), POSEMB_EIO);
    assert_string_equal(w.s, "a b");
    posemb_tokenizer_free(t);
}

static void test_wordpiece_long_words(void **state)
{
    posemb_tokenizer *t = wp_tok(1);
    char word[128];
    int32_t want[100];
    /* 100 characters: a ##b x 99 */
    word[0] = 'a';
    memset(word + 1, 'b', 99);
    want[0] = 14;
    for (int i = 1; i < 100; i++) want[i] = 15;
    expect_ids_at(t, word, 100, 0, want, 100, __FILE__, __LINE__);
    /* 101 characters: over max_input_chars_per_word, one [UNK] */
    word[100] = 'b';
    expect_ids_at(t, word, 101, 0, IDS(1), __FILE__, __LINE__);
    /* the limit applies to each piece after punctuation splitting */
    word[50] = '!';
    int32_t want2[101];
    memcpy(want2, want, 50 * sizeof *want2);
    want2[50] = 10;
    want2[51] = 1; /* "bbb...": no "b" without ## */
    expect_ids_at(t, word, 101, 0, want2, 52, __FILE__, __LINE__);
    posemb_tokenizer_free(t);
}

static void test_wordpiece_specials(void **state)
{
    posemb_tokenizer *t = wp_tok(1);
    /* kept whole and case-sensitive; [cls] is plain text: [ cls ] -> 3 x [UNK] */
    EXPECT(t, "[CLS] x[SEP]x [cls] [MASK]", 0, 2, 22, 3, 22, 1, 1, 1, 4);
    EXPECT(t, "[PAD][UNK]", 0, 0, 1);
    EXPECT(t, "hello", POSEMB_ENC_SPECIAL, 2, 16, 3);
    EXPECT(t, "", POSEMB_ENC_SPECIAL, 2, 3);

    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    assert_int_equal(
        posemb_tokenizer_encode_pair(t, "Hello", 5, "world!", 6, POSEMB_ENC_SPECIAL | POSEMB_ENC_TOKENS, &e, &err),
        POSEMB_OK);
    const int32_t ids[] = {2, 16, 3, 17, 10, 3}, types[] = {0, 0, 0, 1, 1, 1};
    const char *toks[] = {"[CLS]", "hello", "[SEP]", "world", "!", "[SEP]"};
    assert_int_equal(e.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(e.ids[i], ids[i]);
        assert_int_equal(e.type_ids[i], types[i]);
        assert_string_equal(e.tokens[i], toks[i]);
    }
    /* without special tokens a pair is a then b, all type 0 (HF) */
    assert_int_equal(posemb_tokenizer_encode_pair(t, "hello", 5, "world", 5, 0, &e, &err), POSEMB_OK);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.type_ids[1], 0);
    posemb_encoding_free(&e);
    posemb_tokenizer_free(t);
}

static void test_wordpiece_cased_and_decode(void **state)
{
    posemb_tokenizer *t = wp_tok(0);
    EXPECT(t, "hello HELLO", 0, 16, 1); /* no lower-casing */
    EXPECT(t, "café", 0, 1);            /* accents kept: "café" is not "cafe" */
    posemb_tokenizer_free(t);

    t = wp_tok(1);
    char *text;
    size_t len;
    posemb_error err;
    const int32_t ids[] = {2, 5, 6, 7, 9, 14, 15, 18, 3};
    assert_int_equal(posemb_tokenizer_decode(t, ids, 9, 0, &text, &len, &err), POSEMB_OK);
    assert_string_equal(text, "[CLS] unaffable , abc [SEP]");
    assert_int_equal(len, strlen(text));
    free(text);
    assert_int_equal(
        posemb_tokenizer_decode(t, ids, 9, POSEMB_DEC_SKIP_SPECIAL | POSEMB_DEC_CLEANUP, &text, &len, &err), POSEMB_OK);
    assert_string_equal(text, "unaffable, abc");
    free(text);
    const int32_t bad[] = {16, 99};
    assert_int_equal(posemb_tokenizer_decode(t, bad, 2, 0, &text, &len, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "id 99"));
    assert_null(text);
    posemb_tokenizer_free(t);
}

/* A vocab.txt without [MASK] and [PAD]: HF's from_pretrained adds them after
 * the vocabulary (in the order unk, sep, pad, cls, mask); CRLF line ends and
 * an empty line are read as HF reads them. */
static void test_wordpiece_file_forms(void **state)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    const char *p = WRITE("v2.txt", "[UNK]\r\n\r\n[CLS]\r\n[SEP]\r\nx\r\n");
    assert_int_equal(posemb_tokenizer_load_wordpiece(p, 1, &t, &err), POSEMB_OK);
    assert_int_equal(posemb_tokenizer_token_id(t, "x"), 4);
    assert_int_equal(posemb_tokenizer_token_id(t, ""), 1);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_PAD), 5);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_MASK), 6);
    assert_int_equal(posemb_tokenizer_vocab_size(t), 7);
    EXPECT(t, "X [MASK] x[PAD]", 0, 4, 6, 4, 5);
    posemb_tokenizer_free(t);
    /* no newline after the last line: still a token */
    p = WRITE("v3.txt", "[UNK]\ny");
    assert_int_equal(posemb_tokenizer_load_wordpiece(p, 1, &t, &err), POSEMB_OK);
    EXPECT(t, "y", 0, 1);
    posemb_tokenizer_free(t);
}

/* ------------------------------------------------------- hand-made BPE */

/* The byte alphabet: "Ġ" is byte 0x20, "Ċ" 0x0a, "Ã" 0xc3, "©" 0xa9. */
static const char ENCODER[] = "{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"abc\": 4, \"\\u0120\": 5, \"\\u0120a\": 6, "
                              "\"\\u0120ab\": 7, \"<|endoftext|>\": 8, \"!\": 9, \"\\u00c3\": 10, \"\\u00a9\": 11, "
                              "\"\\u00c3\\u00a9\": 12, \"\\u010a\": 13, \"aa\": 14, \"aaa\": 15, \"q\": 16, "
                              "\"\\u0120\\u00c2\": 17, \"'s\": 18, \"'\": 19, \"s\": 20}";
/* Rank 0 "aa a" is listed before "a a" (rank 6) on purpose: see "aaaa". */
static const char MERGES[] = "#version: 0.2\naa a\na b\nab c\n\xc4\xa0 a\n\xc4\xa0"
                             "a b\n\xc3\x83 \xc2\xa9\na a\n"
                             "\xc4\xa0 \xc3\x82\n' s\n";

static posemb_tokenizer *bpe_tok(void)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    const char *e = WRITE("encoder.json", ENCODER), *m = WRITE("vocab.bpe", MERGES);
    if (posemb_tokenizer_load_bpe(e, m, &t, &err)) fail_msg("load: %s", err.msg);
    return t;
}

static void test_bpe_merges(void **state)
{
    posemb_tokenizer *t = bpe_tok();
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_BPE);
    assert_int_equal(posemb_tokenizer_vocab_size(t), 21);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_EOS), 8);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_BOS), 8);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_UNK), 8);
    assert_int_equal(posemb_tokenizer_special_id(t, POSEMB_SPECIAL_PAD), -1);
    EXPECT(t, "abc", 0, 4);    /* a b -> ab, then ab c -> abc */
    EXPECT(t, " ab", 0, 5, 3); /* "a b" (rank 1) beats "Ġ a" (rank 3); then no "Ġ ab" */
    EXPECT(t, " a", 0, 6);
    EXPECT(t, "aaa", 0, 15); /* a a -> aa a, then aa a -> aaa */
    /* HF merges every "a a" of a round before looking at the "aa a" (rank 0)
     * the first merge created: aa aa, not aaa a */
    EXPECT(t, "aaaa", 0, 14, 14);
    EXPECT(t, "\xc3\xa9", 0, 12); /* é = bytes c3 a9 = "Ã©" */
    EXPECT(t, "ab!", 0, 3, 9);    /* pre-tokens "ab", "!" */
    EXPECT(t, "\n", 0, 13);
    EXPECT(t, "a<|endoftext|>b", 0, 0, 8, 1);
    EXPECT(t, "z", 0, 8);                   /* not in the vocabulary: the unknown token, <|endoftext|> */
    EXPECT(t, "ab", POSEMB_ENC_SPECIAL, 3); /* GPT-2 adds no special tokens */
    EXPECT_NONE(t, "");

    /* token strings are in the byte alphabet */
    posemb_encoding e;
    posemb_encoding_init(&e);
    posemb_error err;
    assert_int_equal(posemb_tokenizer_encode(t, "\0 \xad", 3, POSEMB_ENC_TOKENS, &e, &err), POSEMB_OK);
    assert_int_equal(e.n, 3); /* "\0", " " from the valid part; the invalid byte is a pre-token of its own */
    assert_string_equal(e.tokens[0], "\xc4\x80"); /* byte 0x00 -> U+0100 Ā */
    assert_string_equal(e.tokens[1], "\xc4\xa0"); /* 0x20 -> U+0120 Ġ */
    assert_string_equal(e.tokens[2], "\xc5\x83"); /* 0xad -> U+0143 Ń */
    posemb_encoding_free(&e);

    char *text;
    size_t len;
    const int32_t ids[] = {4, 8, 12, 5, 13};
    assert_int_equal(posemb_tokenizer_decode(t, ids, 5, 0, &text, &len, &err), POSEMB_OK);
    assert_int_equal(len, 20);
    assert_memory_equal(text, "abc<|endoftext|>\xc3\xa9 \n", 20);
    free(text);
    assert_int_equal(posemb_tokenizer_decode(t, ids, 5, POSEMB_DEC_SKIP_SPECIAL, &text, &len, &err), POSEMB_OK);
    assert_string_equal(text, "abc\xc3\xa9 \n");
    free(text);
    posemb_tokenizer_free(t);
}

/* Pre-tokenization: GPT-2's regex, with \s as Python's regex module has it.
 * The merge "Ġ Â" (byte 0xc2) shows where pre-tokens begin and end. */
static void test_bpe_pretokenizer(void **state)
{
    posemb_tokenizer *t = bpe_tok();
    EXPECT(t, "a  b", 0, 0, 5, 5, 1); /* "a", " " (\s+(?!\S) leaves one space), " b" */
    EXPECT(t, " \xc2\xb5", 0, 17, 8); /* " µ" is one pre-token (µ is a letter): ĠÂ then byte b5 */
    EXPECT(t,
           " \xc2\x85"
           "a",
           0, 5, 8, 8, 0); /* U+0085 is \s for Python (not for PCRE2): " ", "\x85", "a" */
    EXPECT(t,
           " \x1c"
           "a",
           0, 5, 8, 0);          /* U+001C is not: " \x1c" (then "a"), no Ġ + a merge */
    EXPECT(t, "'ss", 0, 18, 20); /* "'s" first, then "s" */
    EXPECT(t, "x's", 0, 8, 18);  /* x is unknown: <|endoftext|> */
    EXPECT(t, "'S", 0, 19, 8);   /* the contractions are case-sensitive */
    posemb_tokenizer_free(t);
}

/* ------------------------------------------------------- malformed files */

/* Words are BasicTokenizer's: a BPE tokenizer has none. */
static void test_words_need_wordpiece(void **state)
{
    (void)state;
    posemb_tokenizer *t = NULL;
    posemb_error err;
    words_buf w = {.s = "", .n = 0, .stop_after = 0};
    WRITE("encoder.json", ENCODER);
    WRITE("vocab.bpe", MERGES);
    assert_int_equal(posemb_tokenizer_load_bpe(path_in("encoder.json"), path_in("vocab.bpe"), &t, &err), POSEMB_OK);
    assert_int_equal(posemb_tokenizer_words(t, "ab", 2, collect, &w, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "WordPiece"));
    posemb_tokenizer_free(t);
}

static void test_malformed_vocab(void **state)
{
    const char *p = WRITE("dup.txt", "[UNK]\na\nb\na\n");
    EXPECT_ERR(posemb_tokenizer_load_wordpiece(p, 1, &tk_, &e_), POSEMB_EFORMAT, "dup.txt: line 4",
               "duplicate token 'a' (also on line 2)");
    p = WRITE("nounk.txt", "a\nb\n");
    EXPECT_ERR(posemb_tokenizer_load_wordpiece(p, 1, &tk_, &e_), POSEMB_EFORMAT, "nounk.txt", "[UNK]");
    p = WRITE("badutf.txt", "[UNK]\n\xff\xfe\n");
    EXPECT_ERR(posemb_tokenizer_load_wordpiece(p, 1, &tk_, &e_), POSEMB_EFORMAT, "badutf.txt: line 2", "UTF-8");
    EXPECT_ERR(posemb_tokenizer_load_wordpiece(path_in("absent.txt"), 1, &tk_, &e_), POSEMB_EIO, "absent.txt",
               "cannot open");
    EXPECT_ERR(posemb_tokenizer_load_wordpiece(dir, 1, &tk_, &e_), POSEMB_EIO, dir, "directory");
}

static void test_malformed_bpe(void **state)
{
    char enc[1024];
    snprintf(enc, sizeof enc, "%s", WRITE("e.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}"));
    const char *m = WRITE("m1.bpe", "a b\n");
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, m, &tk_, &e_), POSEMB_EFORMAT, "m1.bpe: line 1", "#version");
    m = WRITE("m2.bpe", "#version: 0.2\na b\na b c\n");
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, m, &tk_, &e_), POSEMB_EFORMAT, "m2.bpe: line 3", "'a b c'");
    m = WRITE("m3.bpe", "#version: 0.2\na b\n\nab a\n");
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, m, &tk_, &e_), POSEMB_EFORMAT, "m3.bpe: line 3", "LEFT RIGHT");
    m = WRITE("m4.bpe", "#version: 0.2\na b\nab a\na b\n");
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, m, &tk_, &e_), POSEMB_EFORMAT, "m4.bpe: line 4", "also on line 2");
    m = WRITE("m5.bpe", "");
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, m, &tk_, &e_), POSEMB_EFORMAT, "m5.bpe", "empty");
    char ok[1024];
    snprintf(ok, sizeof ok, "%s", WRITE("ok.bpe", "#version: 0.2\na b\n"));
    m = ok;
    EXPECT_ERR(posemb_tokenizer_load_bpe(enc, path_in("none.bpe"), &tk_, &e_), POSEMB_EIO, "none.bpe", NULL);

    static const struct {
        const char *json, *frag;
    } BAD[] = {
        {"[1, 2]", "not a JSON object"},
        {"{\"a\": -1}", "'a' is not a non-negative integer"},
        {"{\"a\": 1.5}", "'a' is not a non-negative integer"},
        {"{\"a\": \"1\"}", "'a' is not a non-negative integer"},
        {"{\"a\": 0, \"b\": 0}", "id 0 of 'b' is also the id of 'a'"},
        {"{\"a\": 0, \"a\": 1}", "duplicate key 'a'"},
        {"{\"a\": 99999999}", "over the limit"},
        {"{\"a\": 0,", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const char *p = write_tmp("bad.json", BAD[i].json, strlen(BAD[i].json));
        EXPECT_ERR(posemb_tokenizer_load_bpe(p, m, &tk_, &e_), POSEMB_EFORMAT, "bad.json", BAD[i].frag);
    }
    EXPECT_ERR(posemb_tokenizer_load_bpe(path_in("none.json"), m, &tk_, &e_), POSEMB_EIO, "none.json", NULL);

    /* HF reads merges as read().split("\n")[1:-1]: a last line without a
     * newline is not a merge */
    posemb_tokenizer *t = NULL;
    posemb_error err;
    m = WRITE("m6.bpe", "#version: 0.2\na b");
    assert_int_equal(posemb_tokenizer_load_bpe(enc, m, &t, &err), POSEMB_OK);
    /* no <|endoftext|>, so no unknown token: "ab" stays a b, each in the vocab */
    EXPECT(t, "ab", 0, 0, 1);
    posemb_encoding e;
    posemb_encoding_init(&e);
    assert_int_equal(posemb_tokenizer_encode(t, "abz", 3, 0, &e, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "'z'"));
    posemb_encoding_free(&e);
    posemb_tokenizer_free(t);
}

/* --------------------------------------------------------- tokenizer.json */

static void test_tokenizer_json_wordpiece(void **state)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    const char *p = WRITE(
        "wp.json",
        "{\"version\": \"1.0\", \"added_tokens\": ["
        "{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, \"lstrip\": false, \"rstrip\": false},"
        "{\"id\": 1, \"content\": \"[UNK]\", \"special\": true},"
        "{\"id\": 2, \"content\": \"[CLS]\", \"special\": true},"
        "{\"id\": 3, \"content\": \"[SEP]\", \"special\": true},"
        "{\"id\": 4, \"content\": \"[MASK]\", \"special\": true}],"
        "\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
        " \"strip_accents\": null, \"lowercase\": true},"
        "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
        "\"post_processor\": {\"type\": \"TemplateProcessing\","
        " \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", "
        "\"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}],"
        " \"pair\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", "
        "\"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", "
        "\"type_id\": 1}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 1}}],"
        " \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": [\"[CLS]\"]},"
        " \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [3], \"tokens\": [\"[SEP]\"]}}},"
        "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\","
        " \"max_input_chars_per_word\": 100, \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3,"
        " \"[MASK]\": 4, \"un\": 5, \"##aff\": 6, \"##able\": 7, \"cafe\": 8, \"!\": 9}}}");
    if (posemb_tokenizer_load_json(p, &t, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_WORDPIECE);
    EXPECT(t, "Unaffable CAFÉ!", POSEMB_ENC_SPECIAL, 2, 5, 6, 7, 8, 9, 3);
    EXPECT(t, "[MASK] x", 0, 4, 1);
    posemb_encoding e;
    posemb_encoding_init(&e);
    assert_int_equal(posemb_tokenizer_encode_pair(t, "un", 2, "cafe", 4, POSEMB_ENC_SPECIAL, &e, &err), POSEMB_OK);
    assert_int_equal(e.n, 5);
    assert_int_equal(e.ids[3], 8);
    assert_int_equal(e.type_ids[3], 1);
    assert_int_equal(e.type_ids[2], 0);
    posemb_encoding_free(&e);
    posemb_tokenizer_free(t);
}

static void test_tokenizer_json_bpe(void **state)
{
    posemb_tokenizer *t = NULL;
    posemb_error err;
    const char *p = WRITE(
        "bpe.json",
        "{\"added_tokens\": [{\"id\": 8, \"content\": \"<|endoftext|>\", \"special\": true, \"lstrip\": false, "
        "\"rstrip\": false}], \"normalizer\": null,"
        "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true},"
        "\"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"b\", 1], \"cls\": [\"a\", 0]},"
        "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\","
        " \"end_of_word_suffix\": \"\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"abc\": 4,"
        " \"\\u0120\": 5, \"\\u0120a\": 6, \"\\u0120ab\": 7, \"<|endoftext|>\": 8},"
        " \"merges\": [\"a b\", [\"ab\", \"c\"], \"\\u0120 a\", \"\\u0120a b\"]}}");
    if (posemb_tokenizer_load_json(p, &t, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_tokenizer_model(t), POSEMB_TOK_BPE);
    EXPECT(t, "abc", 0, 5, 4);                       /* add_prefix_space: " abc" -> Ġ, abc */
    EXPECT(t, "ab", POSEMB_ENC_SPECIAL, 0, 5, 3, 1); /* RobertaProcessing: <s> A </s> */
    posemb_encoding e;
    posemb_encoding_init(&e);
    assert_int_equal(posemb_tokenizer_encode_pair(t, "a", 1, "c", 1, POSEMB_ENC_SPECIAL, &e, &err), POSEMB_OK);
    assert_int_equal(e.n, 7); /* <s> Ġa </s> </s> Ġ c </s> */
    assert_int_equal(e.ids[1], 6);
    assert_int_equal(e.ids[5], 2);
    posemb_encoding_free(&e);
    posemb_tokenizer_free(t);

    static const struct {
        const char *json, *frag;
    } BAD[] = {
        {"{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", "model type 'WordLevel' is not supported"},
        {"{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", "model type 'WordLevel'"},
        {"{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, "
         "\"merges\": []}}",
         "ByteLevel"},
        {"{\"normalizer\": {\"type\": \"NFKC\"}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
         "\"vocab\": {\"[UNK]\": 0}}}",
         "normalizer type 'NFKC'"},
        {"{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {\"a\": 0}}}", "unk_token"},
        {"{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
         "\"merges\": [\"a\"]}}",
         "model.merges[0]"},
        {"{\"vocab\": {}}", "no \"model\" object"},
        {"[]", "no \"model\" object"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        p = write_tmp("bad-tok.json", BAD[i].json, strlen(BAD[i].json));
        EXPECT_ERR(posemb_tokenizer_load_json(p, &tk_, &e_), POSEMB_EFORMAT, "bad-tok.json", BAD[i].frag);
    }
    EXPECT_ERR(posemb_tokenizer_load_json(path_in("gone.json"), &tk_, &e_), POSEMB_EIO, "gone.json", NULL);
}

/* ----------------------------------------------------------- golden (HF) */

/* The golden strings hold one \u0000, which cJSON would end the string at:
 * it is read as U+E000 (absent from the file) and turned back into a NUL. */
static cJSON *load_golden(void)
{
    FILE *f = fopen(POSEMB_SHARED "/golden/tokenizers/visible.json", "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_null(strstr(buf, "\xee\x80\x80"));
    for (char *q = buf; (q = strstr(q, "\\u0000"));) memcpy(q, "\\ue000", 6);
    cJSON *root = cJSON_Parse(buf);
    assert_non_null(root);
    return root;
}

/* The exact text of a golden string (NUL restored); its length in *len. */
static char *golden_text(const cJSON *s, size_t *len)
{
    const char *v = s->valuestring;
    char *t = malloc(strlen(v) + 1);
    size_t w = 0;
    for (size_t r = 0; v[r];) {
        if (!memcmp(v + r, "\xee\x80\x80", 3)) {
            t[w++] = '\0';
            r += 3;
        } else {
            t[w++] = v[r++];
        }
    }
    t[w] = '\0';
    *len = w;
    return t;
}

/* 1 if enc's ids (and tokens, when given) equal the JSON arrays. */
static int same(const posemb_encoding *e, const cJSON *ids, const cJSON *tokens, const cJSON *types)
{
    if (cJSON_GetArraySize(ids) != e->n) return 0;
    int i = 0;
    for (const cJSON *x = ids->child; x; x = x->next, i++)
        if ((int)x->valuedouble != e->ids[i]) return 0;
    i = 0;
    for (const cJSON *x = tokens ? tokens->child : NULL; x; x = x->next, i++)
        if (strcmp(x->valuestring, e->tokens[i])) return 0;
    i = 0;
    for (const cJSON *x = types ? types->child : NULL; x; x = x->next, i++)
        if ((int)x->valuedouble != e->type_ids[i]) return 0;
    return 1;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

static void test_golden(void **state)
{
    if (!tu_have_shared("golden tokenizers")) return;
    posemb_tokenizer *bert = NULL, *gpt2 = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_wordpiece(POSEMB_SHARED "/data/bert-base-uncased/vocab.txt", 1, &bert, &err) ||
        posemb_tokenizer_load_bpe(POSEMB_SHARED "/data/gpt2/encoder.json", POSEMB_SHARED "/data/gpt2/vocab.bpe", &gpt2,
                                  &err))
        fail_msg("%s", err.msg);
    assert_int_equal(posemb_tokenizer_vocab_size(bert), 30522);
    assert_int_equal(posemb_tokenizer_vocab_size(gpt2), 50257);
    assert_int_equal(posemb_tokenizer_special_id(bert, POSEMB_SPECIAL_CLS), 101);
    assert_int_equal(posemb_tokenizer_special_id(gpt2, POSEMB_SPECIAL_EOS), 50256);
    cJSON *root = load_golden();
    posemb_encoding e;
    posemb_encoding_init(&e);
    int total = 0, matched = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases"))
    {
        size_t len;
        char *text = golden_text(at(c, "text", NULL), &len);
        const char *name = at(c, "name", NULL)->valuestring;
        int ok = !posemb_tokenizer_encode(bert, text, len, POSEMB_ENC_TOKENS, &e, &err) &&
                 same(&e, at(c, "bert", "ids"), at(c, "bert", "tokens"), NULL);
        ok = ok && !posemb_tokenizer_encode(bert, text, len, POSEMB_ENC_SPECIAL, &e, &err) &&
             same(&e, at(c, "bert", "ids_with_special"), NULL, NULL);
        ok = ok && !posemb_tokenizer_encode(gpt2, text, len, POSEMB_ENC_TOKENS, &e, &err) &&
             same(&e, at(c, "gpt2", "ids"), at(c, "gpt2", "tokens"), NULL);
        char *back = NULL;
        size_t blen = 0;
        ok = ok && !posemb_tokenizer_decode(gpt2, e.ids, e.n, 0, &back, &blen, &err) && blen == len &&
             !memcmp(back, text, len);
        if (!ok) print_error("golden case '%s' differs\n", name);
        matched += ok;
        total++;
        free(back);
        free(text);
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "pairs"))
    {
        const char *a = at(c, "text", NULL)->valuestring, *b = at(c, "text_pair", NULL)->valuestring;
        int ok = !posemb_tokenizer_encode_pair(bert, a, strlen(a), b, strlen(b), POSEMB_ENC_SPECIAL | POSEMB_ENC_TOKENS,
                                               &e, &err) &&
                 same(&e, at(c, "bert", "ids_with_special"), at(c, "bert", "tokens_with_special"),
                      at(c, "bert", "token_type_ids"));
        if (!ok) print_error("golden pair '%s' differs\n", at(c, "name", NULL)->valuestring);
        matched += ok;
        total++;
    }
    printf("golden cases matched: %d/%d\n", matched, total);
    assert_int_equal(total, 44);
    assert_int_equal(matched, total);

    /* decode(encode(x)) == x for any bytes, invalid UTF-8 included */
    unsigned char bytes[4096];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof bytes; i++) {
        s = s * 1103515245u + 12345u;
        bytes[i] = (unsigned char)(s >> 16);
    }
    char *back;
    size_t blen;
    assert_int_equal(posemb_tokenizer_encode(gpt2, (const char *)bytes, sizeof bytes, 0, &e, &err), POSEMB_OK);
    assert_int_equal(posemb_tokenizer_decode(gpt2, e.ids, e.n, 0, &back, &blen, &err), POSEMB_OK);
    assert_int_equal(blen, sizeof bytes);
    assert_memory_equal(back, bytes, sizeof bytes);
    free(back);
    /* and WordPiece never fails on them */
    assert_int_equal(posemb_tokenizer_encode(bert, (const char *)bytes, sizeof bytes, 0, &e, &err), POSEMB_OK);

    posemb_encoding_free(&e);
    cJSON_Delete(root);
    posemb_tokenizer_free(bert);
    posemb_tokenizer_free(gpt2);
}

/* tokenizer.json made from the shared files gives the same ids. */
static void test_golden_tokenizer_json(void **state)
{
    if (!tu_have_shared("golden tokenizers via tokenizer.json")) return;
    /* WordPiece: vocab.txt lines -> model.vocab */
    FILE *f = fopen(POSEMB_SHARED "/data/bert-base-uncased/vocab.txt", "rb");
    assert_non_null(f);
    cJSON *vocab = cJSON_CreateObject();
    char line[512];
    int id = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        cJSON_AddItemToObject(vocab, line, cJSON_CreateNumber(id++));
    }
    fclose(f);
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "WordPiece");
    cJSON_AddStringToObject(model, "unk_token", "[UNK]");
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "BertNormalizer");
    cJSON_AddBoolToObject(norm, "lowercase", 1);
    cJSON *pp = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(pp, "type", "BertProcessing");
    cJSON *sep = cJSON_AddArrayToObject(pp, "sep"), *cls = cJSON_AddArrayToObject(pp, "cls");
    cJSON_AddItemToArray(sep, cJSON_CreateString("[SEP]"));
    cJSON_AddItemToArray(sep, cJSON_CreateNumber(102));
    cJSON_AddItemToArray(cls, cJSON_CreateString("[CLS]"));
    cJSON_AddItemToArray(cls, cJSON_CreateNumber(101));
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    const char *specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    const int special_ids[] = {0, 100, 101, 102, 103};
    for (int i = 0; i < 5; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", special_ids[i]);
        cJSON_AddStringToObject(a, "content", specials[i]);
        cJSON_AddBoolToObject(a, "lstrip", 1);
        cJSON_AddBoolToObject(a, "rstrip", 1);
        cJSON_AddItemToArray(added, a);
    }
    char *s = cJSON_PrintUnformatted(root);
    const char *p = write_tmp("bert-tokenizer.json", s, strlen(s));
    free(s);
    cJSON_Delete(root);
    posemb_tokenizer *a = NULL;
    posemb_error err;
    if (posemb_tokenizer_load_json(p, &a, &err)) fail_msg("%s", err.msg);

    cJSON *golden = load_golden();
    posemb_encoding ea;
    posemb_encoding_init(&ea);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(golden, "cases"))
    {
        size_t len;
        char *text = golden_text(at(c, "text", NULL), &len);
        assert_int_equal(posemb_tokenizer_encode(a, text, len, POSEMB_ENC_SPECIAL, &ea, &err), POSEMB_OK);
        assert_true(same(&ea, at(c, "bert", "ids_with_special"), NULL, NULL));
        free(text);
    }
    posemb_encoding_free(&ea);
    cJSON_Delete(golden);
    posemb_tokenizer_free(a);
}

/* ------------------------------------------------------------------ CLI */

static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' tokenize %s", dir, POSEMB_BIN, args);
    return tu_run(cmd, out, sizeof out);
}

static int one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == '\0';
}

static void test_cli(void **state)
{
    WRITE("vocab.txt", VOCAB);
    WRITE("encoder.json", ENCODER);
    WRITE("vocab.bpe", MERGES);
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "usage: posemb tokenize"));
    assert_int_equal(run("--vocab vocab.txt 'Unaffable, hello!'"), 0);
    assert_string_equal(out, "un ##aff ##able , hello !\n5 6 7 9 16 10\n");
    assert_int_equal(run("--vocab vocab.txt --special --json 'hello \"x\"'"), 0);
    assert_string_equal(out, "{\"tokens\": [\"[CLS]\", \"hello\", \"[UNK]\", \"x\", \"[UNK]\", \"[SEP]\"], "
                             "\"ids\": [2, 16, 1, 22, 1, 3]}\n");
    assert_int_equal(run("--vocab vocab.txt --json --pair world hello"), 0);
    assert_string_equal(out, "{\"tokens\": [\"[CLS]\", \"hello\", \"[SEP]\", \"world\", \"[SEP]\"], "
                             "\"ids\": [2, 16, 3, 17, 3], \"token_type_ids\": [0, 0, 0, 1, 1]}\n");
    assert_int_equal(run("--vocab vocab.txt -- --hello"), 0); /* after --, text */
    assert_string_equal(out, "[UNK] [UNK] hello\n1 1 16\n");
    assert_int_equal(run("--vocab encoder.json --merges vocab.bpe < vocab.bpe"), 0); /* standard input */
    assert_non_null(strstr(out, "\n"));
    assert_int_equal(run("--vocab=encoder.json --merges=vocab.bpe --json ' ab'"), 0);
    assert_string_equal(out, "{\"tokens\": [\"\xc4\xa0\", \"ab\"], \"ids\": [5, 3]}\n");
    assert_int_equal(run("--vocab vocab.txt --cased 'Hello hello'"), 0);
    assert_string_equal(out, "[UNK] hello\n1 16\n");
    assert_int_equal(run("--vocab vocab.txt ''"), 0);
    assert_string_equal(out, "\n\n");
    /* --words: a line of words per line of the text that has any */
    assert_int_equal(run("--vocab vocab.txt --words 'Unaffable, hello!\n\n  SECOND  line\n \n'"), 0);
    assert_string_equal(out, "unaffable , hello !\nsecond line\n");
    assert_int_equal(run("--vocab vocab.txt --words --cased 'Hello'"), 0);
    assert_string_equal(out, "Hello\n");
    assert_int_equal(run("--vocab vocab.txt --words < vocab.txt"), 0); /* standard input */
    assert_non_null(strstr(out, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n# # aff\n"));
    /* a full disk: one line, exit 1, whether the write fails at the end or on the way */
    for (int n = 1; n <= 20000; n *= 20000) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && { yes hello | head -n %d | '%s' tokenize --vocab vocab.txt --words >/dev/full; }", dir, n,
                 POSEMB_BIN);
        assert_int_equal(tu_run(cmd, out, sizeof out), 1);
        assert_string_equal(out, "posemb tokenize: cannot write standard output\n");
    }

    /* usage errors: 2, one line */
    const char *usage[] = {"--vocab vocab.txt --frobnicate x",
                           "hello",
                           "--vocab vocab.txt a b",
                           "--merges vocab.bpe x",
                           "--vocab encoder.json x",
                           "--vocab vocab.txt --tokenizer t.json x",
                           "--vocab",
                           "--vocab encoder.json --merges vocab.bpe --cased x",
                           "--vocab vocab.txt --words --json x",
                           "--vocab vocab.txt --words --pair y x",
                           "--vocab encoder.json --merges vocab.bpe --words x"};
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        int rc = run(usage[i]);
        if (rc != 2 || !one_line(out) || strncmp(out, "posemb tokenize: ", 17))
            fail_msg("'%s': exit %d, output '%s'", usage[i], rc, out);
    }
    /* file errors: 1, one line naming the file */
    WRITE("dup.txt", "[UNK]\na\na\n");
    const struct {
        const char *args, *frag;
    } files[] = {{"--vocab missing.txt x", "missing.txt"},
                 {"--vocab dup.txt x", "dup.txt: line 3"},
                 {"--vocab encoder.json --merges missing.bpe x", "missing.bpe"},
                 {"--vocab vocab.txt --merges vocab.bpe x", "vocab.txt: invalid JSON"},
                 {"--tokenizer vocab.bpe x", "vocab.bpe: invalid JSON"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int rc = run(files[i].args);
        if (rc != 1 || !one_line(out) || !strstr(out, files[i].frag))
            fail_msg("'%s': exit %d, output '%s'", files[i].args, rc, out);
    }
}

static void test_cli_golden(void **state)
{
    if (!tu_have_shared("tokenize CLI on the golden vocabularies")) return;
    char args[2048];
    snprintf(args, sizeof args, "--vocab '%s/data/bert-base-uncased/vocab.txt' --json 'Hello, world!'", POSEMB_SHARED);
    assert_int_equal(run(args), 0);
    assert_string_equal(out, "{\"tokens\": [\"hello\", \",\", \"world\", \"!\"], \"ids\": [7592, 1010, 2088, 999]}\n");
    snprintf(args, sizeof args,
             "--vocab '%s/data/gpt2/encoder.json' --merges '%s/data/gpt2/vocab.bpe' --json "
             "'Document one.<|endoftext|>Document two.'",
             POSEMB_SHARED, POSEMB_SHARED);
    assert_int_equal(run(args), 0);
    assert_string_equal(out, "{\"tokens\": [\"Document\", \"\xc4\xa0one\", \".\", \"<|endoftext|>\", \"Document\", "
                             "\"\xc4\xa0two\", \".\"], \"ids\": [24941, 530, 13, 50256, 24941, 734, 13]}\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wordpiece_basics),
        cmocka_unit_test(test_wordpiece_long_words),
        cmocka_unit_test(test_wordpiece_words),
        cmocka_unit_test(test_wordpiece_specials),
        cmocka_unit_test(test_wordpiece_cased_and_decode),
        cmocka_unit_test(test_wordpiece_file_forms),
        cmocka_unit_test(test_bpe_merges),
        cmocka_unit_test(test_bpe_pretokenizer),
        cmocka_unit_test(test_words_need_wordpiece),
        cmocka_unit_test(test_malformed_vocab),
        cmocka_unit_test(test_malformed_bpe),
        cmocka_unit_test(test_tokenizer_json_wordpiece),
        cmocka_unit_test(test_tokenizer_json_bpe),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_golden_tokenizer_json),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_cli_golden),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
