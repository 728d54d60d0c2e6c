/* Answer-token hits of a causal-LM evaluation by answer length and by
 * position in the answer. Pooled over tokens, a long answer weighs more than
 * a short one; Ruoss et al. 2023 score a model by its accuracy at each length,
 * averaged over the lengths. And where in an answer the errors are tells a
 * model that fails to extrapolate from one that never fitted. */
#include <stdlib.h>

#include "study_impl.h"

posemb_status study_tally_init(study_tally *t, int cap, posemb_error *err)
{
    *t = (study_tally){.cap = cap, .examples = calloc((size_t)cap * 5, sizeof(long))};
    if (!t->examples) return posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    t->right = t->examples + cap;
    t->whole = t->right + cap;
    t->pos_right = t->whole + cap;
    t->pos_total = t->pos_right + cap;
    return POSEMB_OK;
}

void study_tally_free(study_tally *t)
{
    free(t->examples);
    *t = (study_tally){0};
}

void study_tally_token(study_tally *t, int pos, int hit)
{
    if (pos < 0 || pos >= t->cap) return;
    t->pos_total[pos]++;
    t->pos_right[pos] += hit;
}

void study_tally_answer(study_tally *t, int len, int hits)
{
    if (len <= 0 || len >= t->cap) return;
    t->examples[len]++;
    t->right[len] += hits;
    t->whole[len] += hits == len;
}

double study_tally_length_mean(const study_tally *t)
{
    double sum = 0;
    int lengths = 0;
    for (int n = 1; n < t->cap; n++)
        if (t->examples[n]) {
            sum += (double)t->right[n] / ((double)n * t->examples[n]);
            lengths++;
        }
    return lengths ? sum / lengths : 0;
}

size_t study_tally_json_cap(const study_tally *t) { return 128 + (size_t)t->cap * 80; }

size_t study_tally_json(const study_tally *t, char *out, size_t cap)
{
    size_t n = 0;
    int first = 1;
#define PUT(...) (n += n < cap ? (size_t)snprintf(out + n, cap - n, __VA_ARGS__) : 0)
    PUT(", \"by_answer_length\": [");
    for (int len = 1; len < t->cap; len++)
        if (t->examples[len]) {
            PUT("%s[%d, %ld, %.4f, %.4f]", first ? "" : ", ", len, t->examples[len],
                (double)t->right[len] / ((double)len * t->examples[len]), (double)t->whole[len] / t->examples[len]);
            first = 0;
        }
    PUT("], \"by_answer_position\": [");
    first = 1;
    for (int pos = 0; pos < t->cap; pos++)
        if (t->pos_total[pos]) {
            PUT("%s[%d, %ld, %.4f]", first ? "" : ", ", pos + 1, t->pos_total[pos],
                (double)t->pos_right[pos] / t->pos_total[pos]);
            first = 0;
        }
    PUT("]");
#undef PUT
    return n;
}
