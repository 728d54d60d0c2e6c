/* Answer-token hits of a causal-LM evaluation by input length and by
 * position in the answer. Pooled over tokens, a long answer weighs more than
 * a short one; Ruoss et al. 2023 score a model by its accuracy at each input
 * length, averaged over the lengths. And where in an answer the errors are
 * tells a model that fails to extrapolate from one that never fitted. */
#include <math.h>
#include <stdlib.h>

#include "study_impl.h"

enum { TALLY_ARRAYS = 6 };

posemb_status study_tally_init(study_tally *t, int cap, posemb_error *err)
{
    *t = (study_tally){.cap = cap, .examples = calloc((size_t)cap * TALLY_ARRAYS, sizeof(long))};
    if (!t->examples) return posemb_fail(err, POSEMB_ENOMEM, "study: out of memory");
    t->tokens = t->examples + cap;
    t->right = t->tokens + cap;
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

void study_tally_example(study_tally *t, int input_len, int scored, int hits)
{
    if (input_len < 0 || input_len >= t->cap) return;
    t->examples[input_len]++;
    t->tokens[input_len] += scored;
    t->right[input_len] += hits;
    t->whole[input_len] += hits == scored;
}

void study_tally_error(study_tally *t, int cls, const double chance[3])
{
    t->err[cls & 3]++;
    for (int i = 0; i < 3; i++) t->err_chance[i] += chance[i];
}

double study_tally_length_mean(const study_tally *t)
{
    double sum = 0;
    int lengths = 0;
    for (int n = 0; n < t->cap; n++)
        if (t->tokens[n]) {
            sum += (double)t->right[n] / (double)t->tokens[n];
            lengths++;
        }
    return lengths ? sum / lengths : NAN;
}

/* An entry is at most 1 + 11 + 2 + 20 + 2 + 6 + 2 + 6 + 1 = 51 characters (an
 * int, a long and two %.4f of values in [0, 1]) plus ", ": 80 is room; 128 for
 * the keys and brackets. */
size_t study_tally_json_cap(const study_tally *t) { return 384 + (size_t)t->cap * 2 * 80; }

/* Appends s to out[*n .. cap), cut at cap - 1; *n never passes cap - 1. */
static void append(char *out, size_t cap, size_t *n, const char *s)
{
    while (*s && *n + 1 < cap) out[(*n)++] = *s++;
    if (*n < cap) out[*n] = '\0';
}

size_t study_tally_json(const study_tally *t, char *out, size_t cap)
{
    size_t n = 0;
    char e[128];
    append(out, cap, &n, ", \"by_input_length\": [");
    for (int len = 0, first = 1; len < t->cap; len++)
        if (t->tokens[len]) {
            snprintf(e, sizeof e, "%s[%d, %ld, %.4f, %.4f]", first ? "" : ", ", len, t->examples[len],
                     (double)t->right[len] / (double)t->tokens[len], (double)t->whole[len] / (double)t->examples[len]);
            append(out, cap, &n, e);
            first = 0;
        }
    append(out, cap, &n, "], \"by_answer_position\": [");
    for (int pos = 0, first = 1; pos < t->cap; pos++)
        if (t->pos_total[pos]) {
            snprintf(e, sizeof e, "%s[%d, %ld, %.4f]", first ? "" : ", ", pos + 1, t->pos_total[pos],
                     (double)t->pos_right[pos] / (double)t->pos_total[pos]);
            append(out, cap, &n, e);
            first = 0;
        }
    append(out, cap, &n, "]");
    long wrong = t->err[0] + t->err[1] + t->err[2] + t->err[3];
    if (wrong) { /* the errors' classes against what uniformly wrong guesses would give */
        snprintf(e, sizeof e, ", \"errors\": [%ld, %ld, %ld, %ld, %ld], ", wrong, t->err[SEQ_ERR_POSITION],
                 t->err[SEQ_ERR_CONTENT], t->err[3], t->err[0]);
        append(out, cap, &n, e);
        snprintf(e, sizeof e, "\"errors_chance\": [%.4f, %.4f, %.4f]", t->err_chance[0] / wrong,
                 t->err_chance[1] / wrong, t->err_chance[2] / wrong);
        append(out, cap, &n, e);
    }
    return n;
}
