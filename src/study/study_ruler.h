/* RULER-style long-context tasks at tiny scale for the length study
 * (study_ruler.c): prompts of exactly L tokens whose answer closes them,
 * the training mix that teaches them at the training length, and their
 * evaluation at longer lengths. */
#ifndef POSEMB_STUDY_RULER_H
#define POSEMB_STUDY_RULER_H

#include <stdint.h>

#include "posemb/model.h"
#include "posemb/tokenizer.h"

enum study_ruler_task {
    RULER_NIAH_SINGLE,
    RULER_NIAH_MULTIKEY,
    RULER_NIAH_MULTIVALUE,
    RULER_NIAH_MULTIQUERY,
    RULER_VT,
    RULER_CWE,
    RULER_FWE,
    RULER_KV,
    STUDY_RULER_TASKS
};
#define STUDY_RULER_DEPTHS 5 /* the gold needle at 0, 1/4, 1/2, 3/4 and all of the way into the haystack */

/* How the keys of the niah tasks and kv and the names of vt are drawn.
 * RULER's way is {0, 0}: each prompt its own, three-digit keys ("key 417 =
 * 58213.") and two-letter upper-case names ("QX = RT."). The other three
 * combinations depart from RULER, to find what a small decoder cannot
 * learn (results/length/ruler): set > 0 draws them from that many fixed
 * keys (and names), which a model can learn one by one as it learns the
 * passkey's constant phrase; words 1 writes them as lower-case words
 * ("key owl = 58213.", drawn per prompt: three random letters), so that the
 * value is the prompt's only number, as the passkey's key is. */
#define STUDY_RULER_MAX_KEYS 32
typedef struct study_ruler_keys {
    int set;   /* 0: each prompt its own; 1..STUDY_RULER_MAX_KEYS: from that many fixed ones */
    int words; /* 0: digits and upper-case letters; 1: lower-case words */
    /* 0: RULER's needle, "key 417 = 58213. "; 1 (niah_single, _multikey,
     * _multiquery only): the value said twice as the passkey says its key,
     * "key 417 = 58213. Remember it. 58213 is key 417. " (control 5 of
     * results/length/ruler). */
    int twice;
} study_ruler_keys;

/* Task t's name (NULL outside 0..STUDY_RULER_TASKS-1), and the task of a name (-1: none). */
const char *study_ruler_task_name(int t);
int study_ruler_task_of(const char *name);

/* The fewest fixed keys task t can draw from: the distinct keys or names one
 * of its prompts must hold (kv: the asked key and another for the rest):
 * 1 to 6, 0 for the tasks without keys (cwe, fwe). */
int study_ruler_keys_needed(int t);

/* Whether task t's needles can say their value twice (keys.twice):
 * niah_single, niah_multikey and niah_multiquery, whose needles are
 * "key K = V." pairs. */
int study_ruler_can_say_twice(int t);

/* Whether task t puts its gold needle at the depth it is asked for
 * (niah_single, _multikey, _multiquery and kv), so that its accuracy by
 * depth means something; the others place everything at random. */
int study_ruler_has_depth(int t);

/* Task t's prompt of exactly L tokens for draw (every random choice is a
 * function of it), its keys drawn as keys says (above), the gold needle at
 * depth (0..1): ids [L], targets [L] (the answer's tokens at the end, -100
 * elsewhere). *fits = 0 when L cannot hold the task's needles, question and
 * answer. EINVAL for t out of range, keys.set outside 0 and
 * study_ruler_keys_needed(t)..STUDY_RULER_MAX_KEYS, keys.words not 0 or 1,
 * or keys.twice not 0 or 1 or 1 for a task study_ruler_can_say_twice
 * refuses; the tokenizer's errors; ENOMEM. */
posemb_status study_ruler_prompt(const posemb_tokenizer *tok, int t, study_ruler_keys keys, uint64_t draw, int L,
                                 double depth, int32_t *ids, int32_t *targets, int *fits, posemb_error *err);

/* posemb_lm_data's mix: a share of the training sequences become prompts of
 * the training length, of a task drawn among those set in tasks (bit t for
 * task t), with a depth drawn uniformly; the model is trained on the whole
 * prompt, as on text. A prompt that does not fit leaves the text as it was. */
typedef struct study_ruler_train {
    const posemb_tokenizer *tok;
    uint64_t seed;
    double share;
    unsigned tasks;
    study_ruler_keys keys;
} study_ruler_train;
void study_ruler_mix(void *ctx, long g, int T, int32_t *ids, int32_t *targets);

/* Whether m answers the prompt ids [L] whole from its last context tokens
 * (*hit: argmax predicts every target, teacher forced), and the fraction of
 * the targets it predicts; the errors of posemb_model_forward and _loss.
 * The passkey's scoring too. */
posemb_status study_answered(posemb_model *m, const int32_t *ids, const int32_t *targets, int L, int context, int *hit,
                             double *part, posemb_error *err);

/* Task t (keys as study_ruler_prompt's) at length L through m (in eval mode), reading the prompt's last
 * context tokens: trials prompts at each depth, acc[d] the fraction
 * answered whole, part[d] the fraction of answer tokens predicted (NaN at a
 * depth no prompt fits). EINVAL when some but not all prompts fit (an
 * average over those that happened to fit would read as a result). */
posemb_status study_ruler_eval(posemb_model *m, int context, const posemb_tokenizer *tok, int t, study_ruler_keys keys,
                               int L, int seed, int trials, double acc[STUDY_RULER_DEPTHS],
                               double part[STUDY_RULER_DEPTHS], posemb_error *err);

#endif
