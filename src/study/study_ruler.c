/* RULER-style long-context tasks at tiny scale (Hsieh et al. 2024, "RULER:
 * What's the Real Context Size of Your Long-Context Language Models?";
 * lm-evaluation-harness tasks/ruler), and key-value retrieval with the gold
 * pair at a chosen depth (Liu et al. 2023, "Lost in the Middle"). The
 * templates are RULER's, shortened so that every task fits in the length
 * study's 128 byte tokens, where the decoders learn them:
 *
 *   niah_single      filler ... key 417 = 58213. ... filler ? key 417 = 58213
 *   niah_multikey    the same among three distractor keys
 *   niah_multivalue  one key with four values; the answer lists them in order
 *   niah_multiquery  two keys asked at once among two distractors
 *   vt               QX = 58213. ... RT = QX. ... MB = RT. (and a distractor
 *                    chain); ? = 58213: QX RT MB
 *   cwe              a list of words, three of them common: the answer lists
 *                    those three in the order they first appear
 *   fwe              words drawn from a Zipf law: the three most frequent,
 *                    most frequent first
 *   kv               nothing but key-value pairs, the gold one at the depth
 *
 * Drawn otherwise (study_ruler_keys), the keys and names come from a fixed
 * set, or are lower-case words: "key owl = 58213.", "owl = 58213. cat = owl.";
 * and the niah tasks' needles can say their value twice, as the passkey
 * says its key: "key 417 = 58213. Remember it. 58213 is key 417."
 *
 * The filler of the niah tasks and vt is RULER's "noise" haystack (the
 * passkey's sentences, repeated), and needles go between its sentences, as
 * RULER puts them. A prompt is scored as the passkey is: every answer token
 * predicted by argmax, teacher forced. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng_internal.h"
#include "posemb/rng.h"
#include "study_ruler.h"

static const char *const TASKS[STUDY_RULER_TASKS] = {
    "niah_single", "niah_multikey", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "kv"};
static const char *const NOISE[] = {"The grass is green. ", "The sky is blue. ", "The sun is yellow. ", "Here we go. ",
                                    "There and back again. "};
enum { NOISE_SENTENCES = 5 };
/* The fixed keys and names: numbers and names as RULER writes them, or
 * words, none a word of the noise. */
static const unsigned NUMBERS[STUDY_RULER_MAX_KEYS] = {417, 902, 365, 128, 759, 581, 234, 846, 673, 190, 528,
                                                       314, 987, 462, 705, 259, 831, 146, 690, 373, 924, 557,
                                                       208, 641, 789, 135, 476, 962, 313, 850, 597, 721};
static const char *const NAMES[STUDY_RULER_MAX_KEYS] = {
    "QX", "RT", "MB", "KD", "ZP", "WF", "HN", "LC", "VS", "JA", "GU", "YE", "OB", "TI", "CR", "XM",
    "PD", "NW", "FK", "SL", "BH", "EV", "UZ", "AG", "IQ", "DY", "MO", "RJ", "KT", "WX", "HP", "LN"};
static const char *const WORDS[STUDY_RULER_MAX_KEYS] = {"owl",  "cat",  "dog",  "elk",  "yak",  "bee",  "ant",  "cod",
                                                        "eel",  "emu",  "ram",  "hen",  "cow",  "pig",  "bat",  "fox",
                                                        "red",  "gold", "pink", "gray", "teal", "navy", "lime", "rose",
                                                        "plum", "jade", "ruby", "mint", "sand", "snow", "oak",  "elm"};
/* study_ruler_keys_needed's: the distinct keys or names a prompt must hold. */
static const int KEYS_NEEDED[STUDY_RULER_TASKS] = {1, 4, 1, 4, 6, 0, 0, 2};

enum { MAX_NEEDLES = 8, NEEDLE_CAP = 56 }; /* a needle said twice: up to 50 characters (four-letter keys) */

const char *study_ruler_task_name(int t) { return t >= 0 && t < STUDY_RULER_TASKS ? TASKS[t] : NULL; }

int study_ruler_keys_needed(int t) { return t >= 0 && t < STUDY_RULER_TASKS ? KEYS_NEEDED[t] : 0; }

int study_ruler_can_say_twice(int t)
{
    return t == RULER_NIAH_SINGLE || t == RULER_NIAH_MULTIKEY || t == RULER_NIAH_MULTIQUERY;
}

int study_ruler_has_depth(int t)
{
    return t == RULER_NIAH_SINGLE || t == RULER_NIAH_MULTIKEY || t == RULER_NIAH_MULTIQUERY || t == RULER_KV;
}

int study_ruler_task_of(const char *name)
{
    for (int t = 0; name && t < STUDY_RULER_TASKS; t++)
        if (!strcmp(name, TASKS[t])) return t;
    return -1;
}

/* A prompt before it is tokenized: needles at depths (ascending) in a
 * haystack of pieces (the noise's sentences, kv's pairs, cwe's and fwe's
 * words), then the question and the answer. Pieces marked removable may be
 * dropped from the end to fit. */
typedef struct ruler_text {
    char needle[MAX_NEEDLES][NEEDLE_CAP];
    double depth[MAX_NEEDLES];
    int n_needles;
    char question[32], answer[64];
    char (*pieces)[NEEDLE_CAP];
    unsigned char *removable;
    int n_pieces;
    study_ruler_keys keys;
} ruler_text;

typedef struct ruler_pair {
    unsigned key, value;
    double depth;
} ruler_pair;

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int by_depth(const void *a, const void *b)
{
    double x = ((const ruler_pair *)a)->depth, y = ((const ruler_pair *)b)->depth;
    return (x > y) - (x < y);
}

/* Three random lower-case letters, as a number below 26^3. */
static unsigned draw_letters(posemb_rng *r)
{
    unsigned w = 0;
    for (int i = 0; i < 3; i++) w = w * 26 + posemb_rng_below(r, 26);
    return w;
}

/* A key as a number key_text writes: three digits, or the index of a fixed
 * word, or three letters. */
static unsigned draw_key(posemb_rng *r, study_ruler_keys keys)
{
    if (!keys.words)
        return keys.set ? NUMBERS[posemb_rng_below(r, (uint32_t)keys.set)] : 100 + posemb_rng_below(r, 900);
    return keys.set ? posemb_rng_below(r, (uint32_t)keys.set) : draw_letters(r);
}

/* Key k as text into buf [8]. */
static const char *key_text(unsigned k, study_ruler_keys keys, char *buf)
{
    if (keys.words && keys.set) return WORDS[k];
    if (keys.words) snprintf(buf, 8, "%c%c%c", 'a' + k / 676, 'a' + k / 26 % 26, 'a' + k % 26);
    else snprintf(buf, 8, "%u", k);
    return buf;
}

/* n distinct keys. */
static void draw_keys(posemb_rng *r, int n, study_ruler_keys keys, ruler_pair *p)
{
    for (int i = 0; i < n; i++) {
        int again = 1;
        while (again) {
            p[i].key = draw_key(r, keys);
            again = 0;
            for (int j = 0; j < i; j++) again |= p[j].key == p[i].key;
        }
    }
}

static unsigned draw_value(posemb_rng *r) { return 10000 + posemb_rng_below(r, 90000); }

/* The pairs as needles, ascending by depth; said twice, the second time
 * as the passkey's needle says its key. */
static void pairs_to_needles(ruler_text *x, ruler_pair *p, int n)
{
    char k[8];
    qsort(p, (size_t)n, sizeof *p, by_depth);
    for (int i = 0; i < n; i++) {
        const char *key = key_text(p[i].key, x->keys, k);
        if (x->keys.twice)
            snprintf(x->needle[i], NEEDLE_CAP, "key %s = %u. Remember it. %u is key %s. ", key, p[i].value, p[i].value,
                     key);
        else snprintf(x->needle[i], NEEDLE_CAP, "key %s = %u. ", key, p[i].value);
        x->depth[i] = p[i].depth;
    }
    x->n_needles = n;
}

/* niah_single (1 pair), niah_multikey (4, one asked), niah_multiquery (4,
 * two asked): the first asked pair at depth, the others drawn. */
static void niah_keys(ruler_text *x, posemb_rng *r, int n, int asked, double depth)
{
    ruler_pair p[4];
    char k0[8], k1[8];
    draw_keys(r, n, x->keys, p);
    for (int i = 0; i < n; i++) {
        p[i].value = draw_value(r);
        p[i].depth = i ? posemb_rng_uniform(r) : depth;
    }
    if (asked == 1) {
        snprintf(x->question, sizeof x->question, "? key %s = ", key_text(p[0].key, x->keys, k0));
        snprintf(x->answer, sizeof x->answer, "%u", p[0].value);
    } else {
        snprintf(x->question, sizeof x->question, "? key %s %s = ", key_text(p[0].key, x->keys, k0),
                 key_text(p[1].key, x->keys, k1));
        snprintf(x->answer, sizeof x->answer, "%u %u", p[0].value, p[1].value);
    }
    pairs_to_needles(x, p, n);
}

/* niah_multivalue: one key, four values at depths drawn; the answer lists
 * the values in the order they appear. */
static void niah_values(ruler_text *x, posemb_rng *r)
{
    ruler_pair p[4];
    char k[8];
    draw_keys(r, 1, x->keys, p);
    for (int i = 0; i < 4; i++) {
        p[i].key = p[0].key;
        p[i].value = draw_value(r);
        p[i].depth = posemb_rng_uniform(r);
    }
    pairs_to_needles(x, p, 4);
    snprintf(x->question, sizeof x->question, "? key %s = ", key_text(p[0].key, x->keys, k));
    snprintf(x->answer, sizeof x->answer, "%u %u %u %u", p[0].value, p[1].value, p[2].value, p[3].value);
}

/* n distinct names: two upper-case letters (RULER's) or lower-case words,
 * each drawn or from the fixed set. */
static void draw_names(posemb_rng *r, int n, study_ruler_keys keys, char (*names)[8])
{
    char buf[8];
    for (int i = 0; i < n; i++) {
        int again = 1;
        while (again) {
            if (keys.set) {
                unsigned k = posemb_rng_below(r, (uint32_t)keys.set);
                snprintf(names[i], sizeof *names, "%s", keys.words ? WORDS[k] : NAMES[k]);
            } else if (keys.words) {
                snprintf(names[i], sizeof *names, "%s", key_text(draw_letters(r), keys, buf));
            } else {
                names[i][0] = (char)('A' + posemb_rng_below(r, 26));
                names[i][1] = (char)('A' + posemb_rng_below(r, 26));
                names[i][2] = 0;
            }
            again = 0;
            for (int j = 0; j < i; j++) again |= !strcmp(names[j], names[i]);
        }
    }
}

/* vt: two chains of three assignments, each chain's in order at depths
 * drawn; the question asks for every name bound to the first chain's value. */
static void variable_tracking(ruler_text *x, posemb_rng *r)
{
    char names[6][8];
    draw_names(r, 6, x->keys, names);
    unsigned value[2] = {draw_value(r), 0};
    do value[1] = draw_value(r);
    while (value[1] == value[0]);
    ruler_pair order[6]; /* key: which assignment (chain * 3 + hop), depth */
    for (int c = 0; c < 2; c++) {
        double d[3];
        for (int h = 0; h < 3; h++) d[h] = posemb_rng_uniform(r);
        qsort(d, 3, sizeof *d, by_double);
        for (int h = 0; h < 3; h++) order[c * 3 + h] = (ruler_pair){.key = (unsigned)(c * 3 + h), .depth = d[h]};
    }
    qsort(order, 6, sizeof *order, by_depth);
    for (int i = 0; i < 6; i++) {
        int c = (int)order[i].key / 3, h = (int)order[i].key % 3, v = c * 3 + h;
        if (h == 0) snprintf(x->needle[i], NEEDLE_CAP, "%s = %u. ", names[v], value[c]);
        else snprintf(x->needle[i], NEEDLE_CAP, "%s = %s. ", names[v], names[v - 1]);
        x->depth[i] = order[i].depth;
    }
    x->n_needles = 6;
    snprintf(x->question, sizeof x->question, "? = %u: ", value[0]);
    snprintf(x->answer, sizeof x->answer, "%s %s %s", names[0], names[1], names[2]);
}

/* ---- haystacks of pieces: kv, cwe, fwe ---- */

static int pieces_alloc(ruler_text *x, int n)
{
    x->pieces = calloc((size_t)n, sizeof *x->pieces);
    x->removable = calloc((size_t)n, 1);
    x->n_pieces = n;
    return x->pieces && x->removable ? 0 : -1;
}

/* kv: n distractor pairs (removable), the gold pair a needle at depth. */
static int key_values(ruler_text *x, posemb_rng *r, int n, double depth)
{
    ruler_pair *p = malloc((size_t)(n + 1) * sizeof *p);
    if (!p || pieces_alloc(x, n)) {
        free(p);
        return -1;
    }
    char k[8];
    for (int i = 0; i <= n; i++) { /* keys distinct from the gold one (p[0]) and mostly from each other */
        p[i].key = draw_key(r, x->keys);
        while (i && p[i].key == p[0].key) p[i].key = draw_key(r, x->keys);
        p[i].value = draw_value(r);
    }
    for (int i = 0; i < n; i++) {
        snprintf(x->pieces[i], NEEDLE_CAP, "key %s = %u. ", key_text(p[i + 1].key, x->keys, k), p[i + 1].value);
        x->removable[i] = 1;
    }
    snprintf(x->needle[0], NEEDLE_CAP, "key %s = %u. ", key_text(p[0].key, x->keys, k), p[0].value);
    x->depth[0] = depth;
    x->n_needles = 1;
    snprintf(x->question, sizeof x->question, "? key %s = ", key_text(p[0].key, x->keys, k));
    snprintf(x->answer, sizeof x->answer, "%u", p[0].value);
    free(p);
    return 0;
}

static void draw_word(posemb_rng *r, char *w)
{
    for (int i = 0; i < 3; i++) w[i] = (char)('a' + posemb_rng_below(r, 26));
    w[3] = 0;
}

/* The index of word w among n (their first 3 letters), or -1. */
static int word_index(char (*words)[4], int n, const char *w)
{
    for (int i = 0; i < n; i++)
        if (!memcmp(words[i], w, 3)) return i;
    return -1;
}

/* cwe: n words, three common ones repeated max(2, n / 8) times each, the
 * others once each and removable; the answer lists the common ones in the
 * order they first appear. 1 when n is too few for that, -1 out of memory. */
static int common_words(ruler_text *x, posemb_rng *r, int n)
{
    int c = n / 8 > 2 ? n / 8 : 2;
    if (n < 3 * c + 1 || n - 3 * c + 3 > 26 * 26 * 26 / 2) return 1; /* distinct three-letter words run out */
    char(*seen)[4] = calloc((size_t)n, sizeof *seen);
    if (!seen || pieces_alloc(x, n)) {
        free(seen);
        return -1;
    }
    int n_seen = 0;
    for (int i = 0; i < n; i++) { /* distinct words: 3 common, n - 3c rare */
        do draw_word(r, seen[n_seen]);
        while (word_index(seen, n_seen, seen[n_seen]) >= 0);
        n_seen++;
        if (n_seen == 3 + (n - 3 * c)) break;
    }
    int *slot = malloc((size_t)n * sizeof *slot); /* word of each place: common ones c times, then rare */
    if (!slot) {
        free(seen);
        return -1;
    }
    for (int i = 0; i < n; i++) slot[i] = i < 3 * c ? i / c : 3 + (i - 3 * c);
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)posemb_rng_below(r, (uint32_t)i + 1), t = slot[i];
        slot[i] = slot[j];
        slot[j] = t;
    }
    int first[3] = {-1, -1, -1}, order = 0;
    for (int i = 0; i < n; i++) {
        snprintf(x->pieces[i], NEEDLE_CAP, "%s ", seen[slot[i]]);
        x->removable[i] = slot[i] >= 3;
        if (slot[i] < 3 && first[slot[i]] < 0) first[slot[i]] = order++;
    }
    int by_first[3];
    for (int k = 0; k < 3; k++) by_first[first[k]] = k;
    snprintf(x->answer, sizeof x->answer, "%s %s %s", seen[by_first[0]], seen[by_first[1]], seen[by_first[2]]);
    snprintf(x->question, sizeof x->question, "? common: ");
    free(slot);
    free(seen);
    return 0;
}

enum { FWE_VOCAB = 32, FWE_TRIES = 64 };

/* fwe: n words drawn from a Zipf law (exponent 2) over 32 words, redrawn
 * until the three most frequent have strictly falling counts above every
 * other's; the answer lists them most frequent first, and only the others
 * are removable (dropping them keeps the answer). -1 when no draw of 64
 * gives such counts (1), or out of memory (-1). */
static int frequent_words(ruler_text *x, posemb_rng *r, int n)
{
    char vocab[FWE_VOCAB][4];
    double cdf[FWE_VOCAB], z = 0;
    for (int i = 0; i < FWE_VOCAB; i++) {
        do draw_word(r, vocab[i]);
        while (word_index(vocab, i, vocab[i]) >= 0);
        z += 1.0 / ((i + 1.0) * (i + 1.0));
        cdf[i] = z;
    }
    int *w = malloc((size_t)n * sizeof *w);
    if (!w || pieces_alloc(x, n)) {
        free(w);
        return -1;
    }
    for (int tries = 0; tries < FWE_TRIES; tries++) {
        int count[FWE_VOCAB] = {0}, top[4] = {-1, -1, -1, -1};
        for (int i = 0; i < n; i++) {
            double u = posemb_rng_uniform(r) * z;
            int k = 0;
            while (k < FWE_VOCAB - 1 && cdf[k] < u) k++;
            w[i] = k;
            count[k]++;
        }
        for (int j = 0; j < 4; j++) /* the four largest counts, in order */
            for (int k = 0; k < FWE_VOCAB; k++) {
                int taken = 0;
                for (int q = 0; q < j; q++) taken |= top[q] == k;
                if (!taken && (top[j] < 0 || count[k] > count[top[j]])) top[j] = k;
            }
        if (!(count[top[0]] > count[top[1]] && count[top[1]] > count[top[2]] && count[top[2]] > count[top[3]]))
            continue;
        for (int i = 0; i < n; i++) {
            snprintf(x->pieces[i], NEEDLE_CAP, "%s ", vocab[w[i]]);
            x->removable[i] = w[i] != top[0] && w[i] != top[1] && w[i] != top[2];
        }
        snprintf(x->answer, sizeof x->answer, "%s %s %s", vocab[top[0]], vocab[top[1]], vocab[top[2]]);
        snprintf(x->question, sizeof x->question, "? frequent: ");
        free(w);
        return 0;
    }
    free(w);
    return 1;
}

static void text_free(ruler_text *x)
{
    free(x->pieces);
    free(x->removable);
}

/* The plan of task t for a haystack of about n pieces (kv, cwe, fwe): 0,
 * 1 when it cannot be made at that size, -1 out of memory. */
static int plan(ruler_text *x, int t, study_ruler_keys keys, posemb_rng *r, double depth, int n)
{
    memset(x, 0, sizeof *x);
    x->keys = keys;
    if (t < RULER_CWE) { /* the noise haystack */
        if (pieces_alloc(x, n)) return -1;
        for (int i = 0; i < n; i++) {
            snprintf(x->pieces[i], NEEDLE_CAP, "%s", NOISE[i % NOISE_SENTENCES]);
            x->removable[i] = 1;
        }
    }
    switch (t) {
    case RULER_NIAH_SINGLE:
        niah_keys(x, r, 1, 1, depth);
        return 0;
    case RULER_NIAH_MULTIKEY:
        niah_keys(x, r, 4, 1, depth);
        return 0;
    case RULER_NIAH_MULTIVALUE:
        niah_values(x, r);
        return 0;
    case RULER_NIAH_MULTIQUERY:
        niah_keys(x, r, 4, 2, depth);
        return 0;
    case RULER_VT:
        variable_tracking(x, r);
        return 0;
    case RULER_CWE:
        return common_words(x, r, n);
    case RULER_FWE:
        return frequent_words(x, r, n);
    default:
        return key_values(x, r, n, depth);
    }
}

/* ---- tokens ---- */

typedef struct enc_set {
    posemb_encoding needle[MAX_NEEDLES], question, answer, pad, *piece;
    int n_pieces;
} enc_set;

static posemb_status enc(const posemb_tokenizer *tok, const char *s, posemb_encoding *e, posemb_error *err)
{
    return posemb_tokenizer_encode(tok, s, strlen(s), 0, e, err);
}

static void encs_free(enc_set *e)
{
    for (int i = 0; i < MAX_NEEDLES; i++) posemb_encoding_free(&e->needle[i]);
    posemb_encoding_free(&e->question);
    posemb_encoding_free(&e->answer);
    posemb_encoding_free(&e->pad);
    for (int i = 0; e->piece && i < e->n_pieces; i++) posemb_encoding_free(&e->piece[i]);
    free(e->piece);
}

static posemb_status encode_text(const posemb_tokenizer *tok, const ruler_text *x, enc_set *e, posemb_error *err)
{
    memset(e, 0, sizeof *e);
    for (int i = 0; i < MAX_NEEDLES; i++) posemb_encoding_init(&e->needle[i]);
    posemb_encoding_init(&e->question);
    posemb_encoding_init(&e->answer);
    posemb_encoding_init(&e->pad);
    posemb_status st = enc(tok, x->question, &e->question, err);
    if (!st) st = enc(tok, x->answer, &e->answer, err);
    if (!st) st = enc(tok, " ", &e->pad, err);
    for (int i = 0; !st && i < x->n_needles; i++) st = enc(tok, x->needle[i], &e->needle[i], err);
    if (!st && x->n_pieces) {
        e->piece = calloc((size_t)x->n_pieces, sizeof *e->piece);
        if (!e->piece) return posemb_fail(err, POSEMB_ENOMEM, "ruler: out of memory");
        e->n_pieces = x->n_pieces;
        for (int i = 0; !st && i < x->n_pieces; i++) {
            posemb_encoding_init(&e->piece[i]);
            st = enc(tok, x->pieces[i], &e->piece[i], err);
        }
    }
    if (!st && e->pad.n < 1) return posemb_fail(err, POSEMB_EINVAL, "ruler: the tokenizer gives no token for a space");
    return st;
}

static int needle_tokens(const enc_set *e, int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++) sum += e->needle[i].n;
    return sum;
}

/* Appends tokens [n] at *at. */
static void put(int32_t *ids, int *at, const int32_t *tok, int n)
{
    memcpy(ids + *at, tok, (size_t)n * sizeof *ids);
    *at += n;
}

/* The haystack in n_fill tokens: removable pieces dropped from the
 * end until the rest fits, the needles between pieces at their depths, the
 * pad token after. -1 when even the kept pieces do not fit, -2 out of memory. */
static int fill_pieces(const ruler_text *x, const enc_set *e, int n_fill, int32_t *ids, int *at)
{
    int total = 0, keep = x->n_pieces;
    for (int i = 0; i < x->n_pieces; i++) total += e->piece[i].n;
    unsigned char *drop = calloc((size_t)x->n_pieces + 1, 1);
    if (!drop) return -2;
    for (int i = x->n_pieces - 1; i >= 0 && total > n_fill; i--)
        if (x->removable[i]) {
            drop[i] = 1;
            total -= e->piece[i].n;
            keep--;
        }
    if (total > n_fill) {
        free(drop);
        return -1;
    }
    int start = *at, kept = 0, next = 0;
    for (int i = 0; i <= x->n_pieces; i++) {
        while (next < x->n_needles && (int)lround(x->depth[next] * keep) <= kept) {
            put(ids, at, e->needle[next].ids, e->needle[next].n);
            next++;
        }
        if (i == x->n_pieces) break;
        if (drop[i]) continue;
        put(ids, at, e->piece[i].ids, e->piece[i].n);
        kept++;
    }
    int used = *at - start - needle_tokens(e, x->n_needles);
    for (int i = used; i < n_fill; i++) ids[(*at)++] = e->pad.ids[0];
    free(drop);
    return 0;
}

/* Pieces to draw for a prompt of L tokens: as many as fill it in bytes
 * (the noise: its shortest sentence; the fill drops the removable pieces
 * that do not fit, and pads what a tokenizer that packs more leaves). */
static int pieces_for(int t, int L)
{
    if (t < RULER_CWE) return L / 12 + 1;        /* "Here we go. " */
    if (t == RULER_KV) return (L - 34) / 17 + 1; /* "key 100 = 10000. ": the gold one, question, answer: 34 */
    return L > 24 ? (L - 24) / 4 : 0;            /* "abc ": question and answer, 24 at most */
}

/* Tokens of the pieces that may fill the haystack (all of them). */
static int piece_tokens(const enc_set *e)
{
    int sum = 0;
    for (int i = 0; i < e->n_pieces; i++) sum += e->piece[i].n;
    return sum;
}

/* Task t's prompt planned and encoded for L tokens: the pieces drawn for L
 * bytes first; a tokenizer that packs more leaves room, so the plan is
 * drawn again (the same draw) with as many more pieces as fill it, up to
 * four times. */
static posemb_status plan_encoded(const posemb_tokenizer *tok, int t, study_ruler_keys keys, uint64_t draw, int L,
                                  double depth, ruler_text *x, enc_set *e, int *made, posemb_error *err)
{
    int n = pieces_for(t, L);
    for (int round = 0;; round++) {
        posemb_rng r;
        posemb_rng_seed(&r, 0x52554c4552ull ^ draw, (uint64_t)t);
        *made = plan(x, t, keys, &r, depth, n);
        if (*made) return *made > 0 ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "ruler: out of memory");
        posemb_status st = encode_text(tok, x, e, err);
        int n_fill = L - needle_tokens(e, x->n_needles) - e->question.n - e->answer.n, have = piece_tokens(e);
        if (st || round == 3 || n_fill <= 0 || have <= 0 || have >= n_fill - have / n) return st;
        n = (int)((long)n * n_fill / have) + 1;
        encs_free(e);
        text_free(x);
    }
}

posemb_status study_ruler_prompt(const posemb_tokenizer *tok, int t, study_ruler_keys keys, uint64_t draw, int L,
                                 double depth, int32_t *ids, int32_t *targets, int *fits, posemb_error *err)
{
    *fits = 0;
    if (t < 0 || t >= STUDY_RULER_TASKS) return posemb_fail(err, POSEMB_EINVAL, "ruler: no task %d", t);
    if (keys.set && (keys.set < KEYS_NEEDED[t] || keys.set > STUDY_RULER_MAX_KEYS))
        return posemb_fail(err, POSEMB_EINVAL, "ruler: %s needs %d to %d fixed keys, not %d", TASKS[t],
                           KEYS_NEEDED[t] ? KEYS_NEEDED[t] : 1, STUDY_RULER_MAX_KEYS, keys.set);
    if (keys.words != 0 && keys.words != 1)
        return posemb_fail(err, POSEMB_EINVAL, "ruler: keys as words is 0 or 1, not %d", keys.words);
    if (keys.twice != 0 && (keys.twice != 1 || !study_ruler_can_say_twice(t)))
        return posemb_fail(err, POSEMB_EINVAL, "ruler: %s cannot say its value %d times", TASKS[t], keys.twice + 1);
    if (L < 1) return posemb_fail(err, POSEMB_EINVAL, "ruler: length %d", L);
    ruler_text x;
    enc_set e;
    int made = 0;
    memset(&e, 0, sizeof e);
    posemb_status st = plan_encoded(tok, t, keys, draw, L, depth, &x, &e, &made, err);
    if (made) {
        text_free(&x);
        return st;
    }
    int n_fill = L - needle_tokens(&e, x.n_needles) - e.question.n - e.answer.n, at = 0, filled = -1;
    if (!st && n_fill >= 0) filled = fill_pieces(&x, &e, n_fill, ids, &at);
    if (filled == -2) st = posemb_fail(err, POSEMB_ENOMEM, "ruler: out of memory");
    *fits = !st && filled == 0;
    if (*fits) {
        put(ids, &at, e.question.ids, e.question.n);
        for (int i = 0; i < L; i++) targets[i] = -100;
        for (int i = 0; i < e.answer.n; i++, at++) targets[at] = ids[at] = e.answer.ids[i];
    }
    encs_free(&e);
    text_free(&x);
    return st;
}

void study_ruler_mix(void *ctx, long g, int T, int32_t *ids, int32_t *targets)
{
    const study_ruler_train *m = ctx;
    posemb_rng r; /* sequence g's draw: whether it is a prompt, its task, depth and draw */
    posemb_rng_seed(&r, 0x5255c0de + m->seed, (uint64_t)g);
    if (!m->tasks || posemb_rng_uniform(&r) >= m->share) return;
    int on[STUDY_RULER_TASKS], n = 0;
    for (int t = 0; t < STUDY_RULER_TASKS; t++)
        if (m->tasks >> t & 1u) on[n++] = t;
    int t = on[posemb_rng_below(&r, (uint32_t)n)];
    double depth = posemb_rng_uniform(&r);
    uint64_t draw = (uint64_t)posemb_rng_below(&r, 0xffffffffu) << 1 | 1u; /* odd: never an evaluation's draw */
    int fits = 0;
    posemb_error err;
    if (study_ruler_prompt(m->tok, t, m->keys, draw, T, depth, ids, targets, &fits, &err) || !fits) return;
    memcpy(targets, ids, (size_t)T * sizeof *targets); /* language modelling on the whole prompt, as on text */
}

posemb_status study_answered(posemb_model *m, const int32_t *ids, const int32_t *targets, int L, int context, int *hit,
                             double *part, posemb_error *err)
{
    posemb_batch b = {.B = 1, .T = context, .ids = ids + (L - context)};
    posemb_targets tg = {.tokens = targets + (L - context)};
    posemb_loss l;
    posemb_status st = posemb_model_forward(m, &b, err);
    if (!st) st = posemb_model_loss(m, &tg, 0.0f, &l, err);
    *hit = !st && l.count > 0 && l.correct == l.count;
    *part = !st && l.count > 0 ? (double)l.correct / (double)l.count : 0;
    return st;
}

posemb_status study_ruler_eval(posemb_model *m, int context, const posemb_tokenizer *tok, int t, study_ruler_keys keys,
                               int L, int seed, int trials, double acc[STUDY_RULER_DEPTHS],
                               double part[STUDY_RULER_DEPTHS], posemb_error *err)
{
    for (int d = 0; d < STUDY_RULER_DEPTHS; d++) acc[d] = part[d] = NAN;
    if (L < 1 || trials < 1 || context < 1 || context > L)
        return posemb_fail(err, POSEMB_EINVAL, "ruler: length %d, context %d and trials %d", L, context, trials);
    int32_t *ids = malloc((size_t)L * sizeof *ids), *targets = malloc((size_t)L * sizeof *targets);
    posemb_status st = ids && targets ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "ruler: out of memory");
    int built = 0, misfits = 0;
    for (int d = 0; !st && d < STUDY_RULER_DEPTHS; d++) {
        int hits = 0, n = 0;
        double right = 0;
        for (int k = 0; !st && k < trials; k++) {
            /* even draws, a function of (seed, length, depth, trial); training draws are odd */
            uint64_t draw = ((((uint64_t)seed * 65537u + (uint64_t)L) * STUDY_RULER_DEPTHS + d) * 1000003u + k) << 1;
            int fits = 0, hit = 0;
            double got = 0;
            st = study_ruler_prompt(tok, t, keys, draw, L, (double)d / (STUDY_RULER_DEPTHS - 1), ids, targets, &fits,
                                    err);
            if (!st && !fits) misfits++;
            if (!st && fits) {
                n++;
                st = study_answered(m, ids, targets, L, context, &hit, &got, err);
            }
            hits += hit;
            right += got;
        }
        acc[d] = n ? (double)hits / n : NAN;
        part[d] = n ? right / n : NAN;
        built += n;
    }
    if (!st && built && misfits)
        st = posemb_fail(err, POSEMB_EINVAL, "ruler: %s: %d of %d prompts do not fit in %d tokens: a longer length",
                         study_ruler_task_name(t), misfits, built + misfits, L);
    free(ids);
    free(targets);
    return st;
}
