/* When a sink forms (docs/study.md, sink_every): the first-token attention
 * of the checkpoints a length-study run kept during its training, and the
 * attention profile both this and study_length_attention.c read. */
#include "study_length_impl.h"
#include "model/model_internal.h"

posemb_status study_length_profile(posemb_model *m, const posemb_corpus *held_out, int L, posemb_attn_profile *pr,
                                   posemb_error *err)
{
    const posemb_config *mc = posemb_model_config(m);
    int B = posemb_attn_windows(mc->layers, mc->heads, L);
    if ((long)B * L > held_out->n)
        return posemb_fail(err, POSEMB_EINVAL,
                           "study: attention: %d windows of %d need more than the %ld held-out tokens", B, L,
                           held_out->n);
    posemb_batch b = {.B = B, .T = L, .ids = held_out->tokens};
    posemb_model_set_train(m, 0, 0, 0);
    posemb_status st = posemb_model_forward(m, &b, err);
    return st ? st : posemb_attn_profile_of(m, &b, 1, pr, err);
}

/* Gu et al. (ICLR 2025, "When Attention Sink Emerges in Language Models")
 * count a head as a sink when its first-token mass passes 0.3. */
#define SINK_THRESHOLD 0.3

/* Model m's first-token mass at L tokens: out[0] the mean over layers and
 * heads, out[1] the largest head's, out[2] the share of heads past the threshold. */
static posemb_status sink_of(posemb_model *m, const posemb_corpus *held_out, int L, double out[3], posemb_error *err)
{
    posemb_attn_profile pr = {0};
    posemb_status st = study_length_profile(m, held_out, L, &pr, err);
    int n = pr.layers * pr.heads, over = 0;
    out[0] = out[1] = 0;
    for (int i = 0; !st && i < n; i++) {
        out[0] += pr.sink[i] / n;
        out[1] = pr.sink[i] > out[1] ? pr.sink[i] : out[1];
        over += pr.sink[i] > SINK_THRESHOLD;
    }
    out[2] = n ? (double)over / n : 0;
    posemb_attn_profile_free(&pr);
    return st;
}

posemb_status study_length_sinks(const posemb_study_config *c, const posemb_config *cfg, const posemb_corpus *held_out,
                                 const char *dir, double (*sink)[4], int *n, posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    *n = 0;
    for (long k = c->len.sink_every; !st && k <= c->steps && *n < POSEMB_STUDY_MAX_CURVE; k += c->len.sink_every) {
        char ck[POSEMB_PATH_MAX];
        posemb_model *m = NULL;
        int context;
        if (posemb_checkpoint_dir(ck, sizeof ck, dir, k))
            return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
        st = posemb_lm_load_at(ck, cfg, c->n_train, &m, &context, err);
        if (!st) st = sink_of(m, held_out, c->n_train, sink[*n] + 1, err);
        posemb_model_free(m);
        if (!st) sink[(*n)++][0] = (double)k;
    }
    return st;
}
