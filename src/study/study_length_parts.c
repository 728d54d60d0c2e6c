/* The length study's pieces that its runs and their fine-tunes
 * (study_extend.c) share: the training mix, RoPE's spec under a scaling,
 * the tokenizer's files in a model folder. Declared in
 * study_length_impl.h. */
#include <stdio.h>
#include <string.h>

#include "core/fileio.h"
#include "study_length_impl.h"
#include "text/tokenizer_internal.h"

study_length_mix study_length_mix_of(const posemb_study_config *c, const posemb_tokenizer *tok, int seed)
{
    return (study_length_mix){
        {.tok = tok, .seed = (uint64_t)seed, .share = c->len.passkey_train, .once = c->len.passkey_once},
        {.tok = tok,
         .seed = (uint64_t)seed,
         .share = c->len.ruler_train,
         .tasks = c->len.ruler_tasks,
         .keys = study_ruler_keys_of(c)}};
}

study_ruler_keys study_ruler_keys_of(const posemb_study_config *c)
{
    return (study_ruler_keys){.set = c->len.ruler_keys, .words = c->len.ruler_key_words, .twice = c->len.ruler_twice};
}

void study_length_mix_apply(void *ctx, long g, int T, int32_t *ids, int32_t *targets)
{
    study_length_mix *m = ctx;
    if (m->passkey.share > 0 && study_passkey_apply(&m->passkey, g, T, ids, targets)) return;
    if (m->ruler.share > 0) study_ruler_mix(&m->ruler, g, T, ids, targets);
}

/* STRING's shift S and window W for a training length L: the authors' S = L/3 (0.33 L), and W = L/16 (their
 * W = 128 at L = 128k is a thousandth of L, below one token here; W must stay below S). */
static int string_shift(int L) { return L / 3 > 1 ? L / 3 : 2; }
static int string_window(int L) { return L / 16 < string_shift(L) ? L / 16 : string_shift(L) - 1; }

void study_rope_spec(const char *scaling, int n_train, int factor, char *out, size_t cap)
{
    if (!strcmp(scaling, "none")) snprintf(out, cap, "rope");
    else if (!strcmp(scaling, "string")) /* shifts distances, whatever the length */
        snprintf(out, cap, "rope:string=%d,string_window=%d", string_shift(n_train), string_window(n_train));
    else if (!strcmp(scaling, "linear") || !strcmp(scaling, "ntk")) /* no original length */
        snprintf(out, cap, "rope:scaling=%s,factor=%d", scaling, factor);
    else snprintf(out, cap, "rope:scaling=%s,factor=%d,original=%d", scaling, factor, n_train);
}

/* The tokenizer's files into model folder dir: tokenizer.json, or GPT-2's vocab.json and merges.txt. */
posemb_status study_length_tokenizer_into(const posemb_study_config *c, const char *dir, posemb_error *err)
{
    char src[POSEMB_PATH_MAX], dst[POSEMB_PATH_MAX];
    int bytes = !strcmp(c->len.tokenizer, "bytes");
    if (posemb_path_join(dst, sizeof dst, dir, bytes ? "tokenizer.json" : "vocab.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    if (bytes) return posemb_tokenizer_write_bytes(dst, err);
    snprintf(src, sizeof src, "%s/gpt2/encoder.json", c->data);
    posemb_status st = posemb_copy_file(src, dst, 64u << 20, err);
    snprintf(src, sizeof src, "%s/gpt2/vocab.bpe", c->data);
    if (!st && posemb_path_join(dst, sizeof dst, dir, "merges.txt"))
        st = posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    return st ? st : posemb_copy_file(src, dst, 64u << 20, err);
}
