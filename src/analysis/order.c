/* The word-order cost of a masked-LM model, the read-out of issue 51's
 * pretrainings (the method of results/study-data/positions/order_ablation.py,
 * which this replaces): masked windows of a token stream scored as they are,
 * shuffled, reversed, and with the PE's learned scale at 0. The windows are
 * drawn once and only rearranged for each reading, so the four losses are
 * means over the same masked tokens with the same targets. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "order_impl.h"
#include "posemb/rng.h"
#include "posemb/safetensors.h"
#include "posemb/tokenizer.h"
#include "core/rng_internal.h"
#include "analysis/probes_internal.h"

/* The windows' RNG streams, (ORDER_STREAM << 32) + window: apart from the
 * small streams other probes draw from with the same seed. */
#define ORDER_STREAM 51u
/* Windows per forward pass: bounds the activations whatever --windows is
 * (BERT-base in inference passes: about 53 MB). */
#define ORDER_CHUNK 8
#define ORDER_MAX_WINDOWS (1 << 20)

typedef enum order_reading { ORDER_AS_IS, ORDER_SHUFFLED, ORDER_REVERSED } order_reading;

posemb_order_opts posemb_order_defaults(void)
{
    return (posemb_order_opts){
        .windows = 32, .len = 128, .mask_rate = 0.15, .seed = 3, .cls = -1, .sep = -1, .mask = -1};
}

void order_windows_free(order_windows *w)
{
    free(w->input);
    free(w->target);
    free(w->perm);
    memset(w, 0, sizeof *w);
}

/* Window b: its start, masks and shuffle from a stream of its own, so that
 * it does not depend on how many windows are drawn. */
static void draw_window(const int32_t *tokens, long n, const posemb_order_opts *o, int b, order_windows *w)
{
    int T = w->T;
    posemb_rng r;
    posemb_rng_seed(&r, o->seed, ((uint64_t)ORDER_STREAM << 32) + (uint64_t)b);
    long start = (long)posemb_rng_below(&r, (uint32_t)(n - (T - 2) + 1));
    int32_t *x = w->input + (size_t)b * T, *y = w->target + (size_t)b * T, *p = w->perm + (size_t)b * T;
    x[0] = o->cls;
    x[T - 1] = o->sep;
    y[0] = y[T - 1] = -100;
    for (int t = 1; t < T - 1; t++) {
        int32_t id = tokens[start + t - 1];
        int masked = posemb_rng_uniform(&r) < o->mask_rate;
        x[t] = masked ? o->mask : id;
        y[t] = masked ? id : -100;
        w->masked += masked;
    }
    for (int t = 0; t < T; t++) p[t] = t;
    for (int t = T - 2; t > 1; t--) { /* Fisher-Yates over the inner places 1..T-2 */
        int k = 1 + (int)posemb_rng_below(&r, (uint32_t)t);
        int32_t keep = p[t];
        p[t] = p[k];
        p[k] = keep;
    }
}

static posemb_status check_opts(long n, const posemb_order_opts *o, posemb_error *err)
{
    if (o->windows < 1 || o->windows > ORDER_MAX_WINDOWS)
        return posemb_fail(err, POSEMB_EINVAL, "order: %d windows (need 1 to %d)", o->windows, ORDER_MAX_WINDOWS);
    if (o->len < 3 || o->len > (1 << 20))
        return posemb_fail(err, POSEMB_EINVAL, "order: windows of %d tokens (need 3 to 2^20: [CLS], text, [SEP])",
                           o->len);
    if (!(o->mask_rate > 0 && o->mask_rate <= 1))
        return posemb_fail(err, POSEMB_EINVAL, "order: mask rate %g (need 0 < rate <= 1)", o->mask_rate);
    if (n < o->len - 2)
        return posemb_fail(err, POSEMB_EINVAL, "order: %ld tokens, fewer than one window of %d", n, o->len - 2);
    if (n - (o->len - 2) + 1 > (long)UINT32_MAX)
        return posemb_fail(err, POSEMB_ERANGE, "order: %ld tokens, more than the 2^32 it draws windows from", n);
    return POSEMB_OK;
}

posemb_status order_draw(const int32_t *tokens, long n, const posemb_order_opts *o, order_windows *w, posemb_error *err)
{
    memset(w, 0, sizeof *w);
    posemb_status st = check_opts(n, o, err);
    if (st) return st;
    size_t N = (size_t)o->windows * (size_t)o->len;
    w->B = o->windows;
    w->T = o->len;
    w->input = malloc(N * sizeof *w->input);
    w->target = malloc(N * sizeof *w->target);
    w->perm = malloc(N * sizeof *w->perm);
    if (!w->input || !w->target || !w->perm) {
        order_windows_free(w);
        return posemb_fail(err, POSEMB_ENOMEM, "order: out of memory for %d windows of %d tokens", o->windows, o->len);
    }
    for (int b = 0; b < w->B; b++) draw_window(tokens, n, o, b, w);
    return POSEMB_OK;
}

/* The place of the drawn window b that place j of its reading holds. */
static int source_place(const order_windows *w, order_reading how, int b, int j)
{
    if (how == ORDER_SHUFFLED) return w->perm[(size_t)b * w->T + j];
    return how == ORDER_REVERSED ? w->T - 1 - j : j;
}

/* Inputs x and targets y [B, T] of a reading: every target moves with its
 * token, so the loss is read at each token's new place. */
static void arrange(const order_windows *w, order_reading how, int32_t *x, int32_t *y)
{
    for (int b = 0; b < w->B; b++)
        for (int j = 0; j < w->T; j++) {
            size_t at = (size_t)b * w->T + (size_t)j, from = (size_t)b * w->T + (size_t)source_place(w, how, b, j);
            x[at] = w->input[from];
            y[at] = w->target[from];
        }
}

/* The mean loss of m over the masked places of x, y [B, T]. */
static posemb_status mean_loss(posemb_model *m, const int32_t *x, const int32_t *y, int B, int T, double *out,
                               posemb_error *err)
{
    double sum = 0;
    long count = 0;
    for (int b0 = 0; b0 < B; b0 += ORDER_CHUNK) {
        int nb = B - b0 < ORDER_CHUNK ? B - b0 : ORDER_CHUNK;
        posemb_batch batch = {.B = nb, .T = T, .ids = x + (size_t)b0 * T};
        posemb_targets tg = {.tokens = y + (size_t)b0 * T};
        posemb_loss l;
        posemb_status st = posemb_model_forward(m, &batch, err);
        if (!st) st = posemb_model_loss(m, &tg, 0.0f, &l, err);
        if (st) return st;
        sum += l.loss * (double)l.count; /* the chunk's sum: chunks hold different numbers of masked tokens */
        count += l.count;
    }
    *out = sum / (double)count;
    return POSEMB_OK;
}

/* The learned amplitude s of y = x + s P (ape:learned_scale=on, ...), inside m's weights, or NULL. */
static float *learned_scale(posemb_model *m)
{
    const posemb_pe_param *p = posemb_pe_find_param(posemb_model_pe(m), "position_scale", 0);
    return p ? p->data : NULL;
}

/* The four readings of w into out; x, y [B, T] scratch. */
static posemb_status read_four(posemb_model *m, const order_windows *w, int32_t *x, int32_t *y,
                               posemb_order_result *out, posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    const order_reading how[3] = {ORDER_AS_IS, ORDER_SHUFFLED, ORDER_REVERSED};
    double *into[3] = {&out->as_is, &out->shuffled, &out->reversed};
    for (int k = 0; !st && k < 3; k++) {
        arrange(w, how[k], x, y);
        st = mean_loss(m, x, y, w->B, w->T, into[k], err);
    }
    float *s = learned_scale(m);
    out->has_scale = s != NULL;
    out->scale0 = NAN;
    if (st || !s) return st;
    float keep = *s; /* the model is the caller's: its scale goes back */
    *s = 0.0f;
    arrange(w, ORDER_AS_IS, x, y);
    st = mean_loss(m, x, y, w->B, w->T, &out->scale0, err);
    *s = keep;
    return st;
}

/* Every id of ids[0..n) in [0, V); what names them in the message. */
static posemb_status check_ids(const int32_t *ids, long n, int V, const char *what, posemb_status code,
                               posemb_error *err)
{
    for (long i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return posemb_fail(err, code, "%s: token %ld is id %d, outside the model's vocabulary of %d", what, i,
                               ids[i], V);
    return POSEMB_OK;
}

/* The special ids of o, each -1 taken as BERT's, checked against the vocabulary. */
static posemb_status resolve_specials(const posemb_config *c, posemb_order_opts *o, posemb_order_result *out,
                                      posemb_error *err)
{
    int32_t *ids[3] = {&o->cls, &o->sep, &o->mask}, *into[3] = {&out->cls, &out->sep, &out->mask};
    const char *names[3] = {"[CLS]", "[SEP]", "[MASK]"};
    int defaults = 0;
    for (int i = 0; i < 3; i++)
        if (*ids[i] < 0) {
            *ids[i] = 101 + i; /* BERT's [CLS] 101, [SEP] 102, [MASK] 103 */
            defaults = 1;
        }
    snprintf(out->specials, sizeof out->specials, "%s", defaults ? "BERT's defaults" : "given");
    for (int i = 0; i < 3; i++) {
        if (*ids[i] >= c->vocab_size)
            return posemb_fail(err, POSEMB_ERANGE, "order: %s is id %d (%s), outside the model's vocabulary of %d",
                               names[i], *ids[i], out->specials, c->vocab_size);
        *into[i] = *ids[i];
    }
    return POSEMB_OK;
}

/* The readings once the windows are drawn: scratch, eval mode, inference passes. */
static posemb_status run(posemb_model *m, const order_windows *w, posemb_order_result *out, posemb_error *err)
{
    size_t N = (size_t)w->B * (size_t)w->T;
    int32_t *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    posemb_status st = x && y ? POSEMB_OK : posemb_fail(err, POSEMB_ENOMEM, "order: out of memory");
    posemb_model_set_train(m, 0, 0, 0);
    posemb_model_set_inference(m, 1); /* one layer's activations at a time: no backward follows */
    if (!st) st = read_four(m, w, x, y, out, err);
    posemb_model_set_inference(m, 0);
    free(x);
    free(y);
    return st;
}

posemb_status posemb_order_cost(posemb_model *m, const int32_t *tokens, long n, const posemb_order_opts *o,
                                posemb_order_result *out, posemb_error *err)
{
    memset(out, 0, sizeof *out);
    const posemb_config *c = posemb_model_config(m);
    if (c->head != POSEMB_HEAD_MLM || (c->arch != POSEMB_BERT && c->arch != POSEMB_ROBERTA))
        return posemb_fail(err, POSEMB_EINVAL, "order: a %s is no BERT or RoBERTa masked-LM model", c->architecture);
    posemb_order_opts use = *o;
    order_windows w = {0};
    posemb_status st = resolve_specials(c, &use, out, err);
    if (!st) st = check_ids(tokens, n, c->vocab_size, "order", POSEMB_ERANGE, err);
    if (!st) st = order_draw(tokens, n, &use, &w, err);
    if (!st && !w.masked)
        st = posemb_fail(err, POSEMB_EINVAL, "order: no token masked in %d windows at rate %g (draw more)", w.B,
                         use.mask_rate);
    if (!st) st = run(m, &w, out, err);
    out->masked = w.masked;
    snprintf(out->spec, sizeof out->spec, "%s", posemb_pe_spec(posemb_model_pe(m)));
    order_windows_free(&w);
    if (st) memset(out, 0, sizeof *out);
    return st;
}

/* ---- from files ---- */

static int file_in(const char *dir, const char *name, char *path)
{
    struct stat sb;
    return !posemb_path_join(path, POSEMB_PATH_MAX, dir, name) && stat(path, &sb) == 0;
}

/* The I32 tensor "tokens" of the token cache at path: at least need ids,
 * each in [0, V). The caller frees *out. */
static posemb_status read_cache(const char *path, int V, int need, int32_t **out, long *n, posemb_error *err)
{
    posemb_st_file f;
    *out = NULL;
    posemb_status st = posemb_st_open(&f, path, err);
    if (st) return st;
    const posemb_st_entry *e = posemb_st_find(&f, "tokens");
    if (!e || e->dtype != POSEMB_I32 || e->ndim != 1)
        st = posemb_fail(err, POSEMB_EFORMAT,
                         "%s: no 1-D I32 tensor 'tokens' (a token cache, as a study's "
                         "RUN/cache/wikitext-2.safetensors)",
                         path);
    else if (e->numel < need)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: %lld tokens, fewer than one window of %d", path, (long long)e->numel,
                         need);
    else if (!(*out = malloc((size_t)e->numel * sizeof **out)))
        st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for %lld tokens", path, (long long)e->numel);
    if (!st) st = posemb_st_read_raw(&f, e, *out, err);
    if (!st) st = check_ids(*out, (long)e->numel, V, path, POSEMB_EFORMAT, err);
    if (!st) *n = (long)e->numel;
    posemb_st_close(&f);
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* A special token of tok: its own, or RoBERTa's (<s>, </s>, <mask>) in a vocab.json that names none. */
static int32_t special_of(const posemb_tokenizer *tok, posemb_special which, const char *roberta)
{
    int32_t id = posemb_tokenizer_special_id(tok, which);
    return id >= 0 ? id : posemb_tokenizer_token_id(tok, roberta);
}

/* [CLS], [SEP], [MASK] of the tokenizer read from path into those of o that are -1. */
static posemb_status specials_of(const posemb_tokenizer *tok, const char *path, int V, posemb_order_opts *o,
                                 posemb_error *err)
{
    static const posemb_special WHICH[3] = {POSEMB_SPECIAL_CLS, POSEMB_SPECIAL_SEP, POSEMB_SPECIAL_MASK};
    static const char *const BERT[3] = {"[CLS]", "[SEP]", "[MASK]"}, *const ROBERTA[3] = {"<s>", "</s>", "<mask>"};
    int32_t *into[3] = {&o->cls, &o->sep, &o->mask};
    for (int i = 0; i < 3; i++) {
        if (*into[i] >= 0) continue;
        int32_t id = special_of(tok, WHICH[i], ROBERTA[i]);
        if (id < 0) return posemb_fail(err, POSEMB_EFORMAT, "%s: no %s token (nor %s)", path, BERT[i], ROBERTA[i]);
        if (id >= V)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: %s is id %d, outside the model's vocabulary of %d", path,
                               BERT[i], id, V);
        *into[i] = id;
    }
    return POSEMB_OK;
}

/* Loads the tokenizer files of folder dir (tokenizer.json, vocab.txt, or
 * vocab.json + merges.txt) into *tok, their path into from; *found is 0
 * (and nothing loaded) when dir has none. */
static posemb_status load_tokenizer(const char *dir, char *from, posemb_tokenizer **tok, int *found, posemb_error *err)
{
    char merges[POSEMB_PATH_MAX];
    *found = 1;
    if (file_in(dir, "tokenizer.json", from)) return posemb_tokenizer_load_json(from, tok, err);
    if (file_in(dir, "vocab.txt", from)) return posemb_tokenizer_load_wordpiece(from, 1, tok, err);
    if (file_in(dir, "vocab.json", from) && file_in(dir, "merges.txt", merges))
        return posemb_tokenizer_load_bpe(from, merges, tok, err);
    *found = 0;
    return POSEMB_OK;
}

/* A training checkpoint: a folder named checkpoint-N (trailing slashes
 * allowed) that holds trainer_state.json. */
static int is_checkpoint(const char *dir)
{
    char state[POSEMB_PATH_MAX];
    size_t end = strlen(dir), a;
    while (end > 1 && dir[end - 1] == '/') end--;
    for (a = end; a > 0 && dir[a - 1] != '/'; a--) {}
    size_t digits = end - a > 11 ? strspn(dir + a + 11, "0123456789") : 0;
    if (end - a <= 11 || strncmp(dir + a, "checkpoint-", 11) || a + 11 + digits != end) return 0;
    return file_in(dir, "trainer_state.json", state);
}

/* The special ids of folder dir's tokenizer files into o and the file's path
 * into from; from stays empty (BERT's defaults) when a BERT folder has none.
 * A training checkpoint without them reads its training folder's, as the
 * checkpoints of `posemb train` and the study share it, provided its
 * vocabulary is the model's size (else it is another model's). */
static posemb_status folder_specials(const char *dir, const posemb_config *c, posemb_order_opts *o, char *from,
                                     posemb_error *err)
{
    char parent[POSEMB_PATH_MAX];
    posemb_tokenizer *tok = NULL;
    int found, up = 0;
    posemb_status st = load_tokenizer(dir, from, &tok, &found, err);
    if (!st && !found && is_checkpoint(dir) && !posemb_path_join(parent, sizeof parent, dir, "..")) {
        st = load_tokenizer(parent, from, &tok, &found, err);
        up = found;
    }
    if (!st && !found) {
        from[0] = '\0';
        if (c->arch != POSEMB_ROBERTA) return POSEMB_OK;
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: no tokenizer.json or vocab.json + merges.txt to read <s>, </s>, <mask> from", dir);
    }
    if (!st && up && posemb_tokenizer_vocab_size(tok) != c->vocab_size)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: its training folder's %s has %d tokens, the model %d", dir, from,
                         posemb_tokenizer_vocab_size(tok), c->vocab_size);
    if (!st) st = specials_of(tok, from, c->vocab_size, o, err);
    posemb_tokenizer_free(tok);
    return st;
}

posemb_status posemb_order_cost_dir(const char *dir, const char *cache, const posemb_order_opts *o,
                                    posemb_order_result *out, posemb_error *err)
{
    memset(out, 0, sizeof *out);
    posemb_model *m = NULL;
    int32_t *tokens = NULL;
    long n = 0;
    posemb_order_opts use = *o;
    char from[POSEMB_PATH_MAX] = "";
    posemb_status st = posemb_model_load(&m, dir, err);
    const posemb_config *c = m ? posemb_model_config(m) : NULL;
    if (!st && c->head != POSEMB_HEAD_MLM)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: a %s, not a masked-LM model (BertForMaskedLM, RobertaForMaskedLM)",
                         dir, c->architecture);
    if (!st) st = read_cache(cache, c->vocab_size, o->len - 2, &tokens, &n, err);
    if (!st && (o->cls < 0 || o->sep < 0 || o->mask < 0)) st = folder_specials(dir, c, &use, from, err);
    if (!st) st = posemb_order_cost(m, tokens, n, &use, out, err);
    if (!st && from[0]) snprintf(out->specials, sizeof out->specials, "%s", from);
    free(tokens);
    posemb_model_free(m);
    return st;
}
