/* A study's JSON configuration: the default's values for absent keys. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/datasets.h"
#include "study/study.h"
#include "study/synthetic.h"
#include "study_ruler.h"
#include "study_store.h"

static posemb_status get_int(const cJSON *r, const char *key, int lo, int hi, int *out, const char *path,
                             posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!v) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, hi);
    *out = (int)v->valuedouble;
    return POSEMB_OK;
}

/* A list of strings into names (at most cap, each under width bytes). */
static posemb_status get_names(const cJSON *r, const char *key, char *names, int width, int cap, int *n,
                               const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key), *x;
    if (!v) return POSEMB_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > cap)
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" must be a list of 1 to %d strings", path, key, cap);
    *n = 0;
    cJSON_ArrayForEach(x, v)
    {
        if (!cJSON_IsString(x) || strlen(x->valuestring) >= (size_t)width)
            return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" holds a non-string or overlong entry", path, key);
        snprintf(names + (size_t)(*n)++ * width, (size_t)width, "%s", x->valuestring);
    }
    return POSEMB_OK;
}

static posemb_status get_ints(const cJSON *r, const char *key, int *out, int cap, int lo, int hi, int *n,
                              const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key), *x;
    if (!v) return POSEMB_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > cap)
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" must be a list of 1 to %d integers", path, key, cap);
    *n = 0;
    cJSON_ArrayForEach(x, v)
    {
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < lo || x->valuedouble > hi)
            return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" entries must be integers in [%d, %d]", path, key, lo,
                               hi);
        out[(*n)++] = (int)x->valuedouble;
    }
    return POSEMB_OK;
}

/* A number in (lo, hi), or [lo, hi) with closed_lo (dropout may be 0, a learning rate may not). */
static posemb_status get_float(const cJSON *r, const char *key, double lo, int closed_lo, double hi, float *out,
                               const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!v) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble > lo || (closed_lo && v->valuedouble == lo)) || !(v->valuedouble < hi))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" must be a number in %c%g, %g)", path, key,
                           closed_lo ? '[' : '(', lo, hi);
    *out = (float)v->valuedouble;
    return POSEMB_OK;
}

/* A list of names (each under 16 bytes, at most 8), each one of known (n_known of them, listed in words by say). */
static posemb_status get_choices(const cJSON *r, const char *key, char (*names)[16], int *n, const char *const *known,
                                 size_t n_known, const char *say, const char *path, posemb_error *err)
{
    posemb_status st = get_names(r, key, names[0], 16, 8, n, path, err);
    for (int i = 0; !st && cJSON_GetObjectItemCaseSensitive(r, key) && i < *n; i++) {
        int ok = 0;
        for (size_t k = 0; k < n_known; k++) ok |= !strcmp(names[i], known[k]);
        if (!ok) return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\": '%s' is not %s", path, key, names[i], say);
    }
    return st;
}

/* The length study's RoPE scalings applied at evaluation; [] for none. */
static posemb_status get_scalings(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    static const char *const known[] = {"linear", "ntk", "dynamic", "yarn", "llama3", "string"};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "rope_scalings");
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0) {
        c->len.n_scalings = 0;
        return POSEMB_OK;
    }
    return get_choices(r, "rope_scalings", c->len.scalings, &c->len.n_scalings, known, 6,
                       "linear, ntk, dynamic, yarn, llama3 or string", path, err);
}

/* "extend_scalings": RoPE scalings a length run is fine-tuned under ("none": plain RoPE). */
static posemb_status get_extend_scalings(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    static const char *const known[] = {"none", "linear", "ntk", "dynamic", "yarn", "llama3", "drope"};
    return get_choices(r, "extend_scalings", c->len.extend_scalings, &c->len.n_extend_scalings, known, 7,
                       "none, linear, ntk, dynamic, yarn, llama3 or drope", path, err);
}

/* EINVAL for an extend_scalings or extend_factors entry given twice: its second fine-tune would never count as
 * done. */
static posemb_status extend_distinct(posemb_study_config *c, const char *path, posemb_error *err)
{
    const posemb_study_length_settings *l = &c->len;
    for (int i = 0; i < l->n_extend_scalings; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(l->extend_scalings[i], l->extend_scalings[j]))
                return posemb_fail(err, POSEMB_EINVAL, "%s: \"extend_scalings\" has '%s' twice", path,
                                   l->extend_scalings[i]);
    for (int i = 0; i < l->n_extend_factors; i++)
        for (int j = 0; j < i; j++)
            if (l->extend_factors[i] == l->extend_factors[j])
                return posemb_fail(err, POSEMB_EINVAL, "%s: \"extend_factors\" has %d twice", path,
                                   l->extend_factors[i]);
    return POSEMB_OK;
}

/* Whether two task names name one task, as the studies look them up: case
 * aside, and GLUE's "SST2" for "SST-2". */
static int same_task(const char *a, const char *b)
{
    int ga = posemb_glue_task_from_name(a);
    return !strcasecmp(a, b) || (ga >= 0 && ga == posemb_glue_task_from_name(b));
}

/* One entry of "task_budgets", checked against the study's tasks (a misspelt name would
 * silently keep the study's budget) and the entries before it. */
static posemb_status get_budget(const cJSON *x, const posemb_study_config *c, posemb_study_budget *b, const char *path,
                                posemb_error *err)
{
    char where[1200];
    snprintf(where, sizeof where, "%.1000s: \"task_budgets\": '%.32s'", path, x->string);
    if (strlen(x->string) >= sizeof b->task)
        return posemb_fail(err, POSEMB_EINVAL, "%s: a task name is at most %d bytes", where, (int)sizeof b->task - 1);
    int known = 0;
    for (int t = 0; t < c->n_tasks; t++) known |= same_task(c->tasks[t], x->string);
    if (!known) return posemb_fail(err, POSEMB_EINVAL, "%s: not one of the study's tasks", where);
    for (int i = 0; i < c->n_budgets; i++)
        if (same_task(c->budgets[i].task, x->string))
            return posemb_fail(err, POSEMB_EINVAL, "%s: the task has a budget already", where);
    if (!cJSON_IsObject(x)) return posemb_fail(err, POSEMB_EINVAL, "%s: must be an object", where);
    for (const cJSON *k = x->child; k; k = k->next)
        if (strcmp(k->string, "steps") && strcmp(k->string, "epochs") && strcmp(k->string, "curve_every") &&
            strcmp(k->string, "lr"))
            return posemb_fail(err, POSEMB_EINVAL, "%s: unknown key \"%s\" (steps, epochs, curve_every, lr)", where,
                               k->string);
    *b = (posemb_study_budget){.steps = -1, .epochs = -1, .curve_every = -1, .lr = -1};
    snprintf(b->task, sizeof b->task, "%s", x->string);
    posemb_status st;
    if ((st = get_int(x, "steps", 1, 10000000, &b->steps, where, err)) ||
        (st = get_float(x, "epochs", 0, 1, 1e6, &b->epochs, where, err)) ||
        (st = get_int(x, "curve_every", 0, 1 << 20, &b->curve_every, where, err)) ||
        (st = get_float(x, "lr", 0, 0, 10, &b->lr, where, err)))
        return st;
    return POSEMB_OK;
}

/* "task_budgets": {"TASK": {"steps": N, "epochs": E, "curve_every": K, "lr": R}}
 * in place of c's budgets; keys absent from an entry are -1, the study's value.
 * A config that sets the study's steps, epochs, curve_every or lr without this
 * key drops c's budgets (the default's SQuAD-locate one): its budget is
 * meant for every task. */
static posemb_status get_budgets(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "task_budgets"), *x;
    if (v && !cJSON_IsObject(v))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"task_budgets\" must be an object of task names", path);
    if (v || cJSON_GetObjectItemCaseSensitive(r, "steps") || cJSON_GetObjectItemCaseSensitive(r, "epochs") ||
        cJSON_GetObjectItemCaseSensitive(r, "curve_every") || cJSON_GetObjectItemCaseSensitive(r, "lr"))
        c->n_budgets = 0;
    cJSON_ArrayForEach(x, v)
    {
        if (c->n_budgets == POSEMB_STUDY_MAX_TASKS)
            return posemb_fail(err, POSEMB_EINVAL, "%s: \"task_budgets\" names more than %d tasks", path,
                               POSEMB_STUDY_MAX_TASKS);
        posemb_status st = get_budget(x, c, &c->budgets[c->n_budgets], path, err);
        if (st) return st;
        c->n_budgets++;
    }
    return POSEMB_OK;
}

/* "model": config.json keys over each decoder's config, kept as their JSON
 * text; the length study checks them against each decoder before training. */
static posemb_status get_model(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    /* set by the study's own keys (sizes, dropout, pes, n_train) or by the tokenizer; the PE's amplitude rule and
     * the scaled RoPE rows read them from there. The PE is the spec in pes: the Llama 4 and SmolLM3 keys that would
     * make another one (the NoPE layers, the temperature) are refused, not silently obeyed */
    static const char *const OWN[] = {"model_type",
                                      "architectures",
                                      "vocab_size",
                                      "n_embd",
                                      "hidden_size",
                                      "n_layer",
                                      "num_hidden_layers",
                                      "n_head",
                                      "num_attention_heads",
                                      "num_key_value_heads",
                                      "head_dim",
                                      "n_inner",
                                      "intermediate_size",
                                      "n_positions",
                                      "max_position_embeddings",
                                      "resid_pdrop",
                                      "embd_pdrop",
                                      "attn_pdrop",
                                      "attention_dropout",
                                      "initializer_range",
                                      "posemb_pe",
                                      "rope_theta",
                                      "rope_scaling",
                                      "rope_parameters",
                                      "no_rope_layers",
                                      "no_rope_layer_interval",
                                      "attn_temperature_tuning",
                                      "attn_scale",
                                      "floor_scale",
                                      NULL};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "model"), *k;
    if (!v) return POSEMB_OK;
    char *text = cJSON_IsObject(v) ? cJSON_PrintUnformatted(v) : NULL;
    for (k = text ? v->child : NULL; k; k = k->next)
        for (int i = 0; OWN[i]; i++)
            if (!strcmp(k->string, OWN[i])) {
                cJSON_free(text);
                return posemb_fail(err, POSEMB_EINVAL,
                                   "%s: \"model\": \"%s\" is the study's to set (its sizes, dropout, pes, n_train)",
                                   path, k->string);
            }
    posemb_status st = POSEMB_OK;
    if (!text || strlen(text) >= sizeof c->len.model)
        st = posemb_fail(err, POSEMB_EINVAL, "%s: \"model\" must be an object of config.json keys, under %zu bytes",
                         path, sizeof c->len.model);
    else snprintf(c->len.model, sizeof c->len.model, "%s", !strcmp(text, "{}") ? "" : text);
    cJSON_free(text);
    return st;
}

const posemb_study_config *posemb_study_for_task(const posemb_study_config *c, const char *task,
                                                 posemb_study_config *out)
{
    *out = *c;
    for (int i = 0; i < c->n_budgets; i++) {
        const posemb_study_budget *b = &c->budgets[i];
        if (!same_task(b->task, task)) continue;
        if (b->steps >= 0) out->steps = b->steps;
        if (b->epochs >= 0) out->epochs = b->epochs;
        if (b->curve_every >= 0) out->curve_every = b->curve_every;
        if (b->lr >= 0) out->lr = b->lr;
    }
    return out;
}

/* "ruler_tasks": names of study_ruler.c's tasks, into a bit set. */
static posemb_status get_ruler_tasks(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    char names[STUDY_RULER_TASKS][32];
    int n = 0;
    if (!cJSON_GetObjectItemCaseSensitive(r, "ruler_tasks")) return POSEMB_OK;
    posemb_status st = get_names(r, "ruler_tasks", names[0], sizeof names[0], STUDY_RULER_TASKS, &n, path, err);
    c->len.ruler_tasks = 0;
    for (int i = 0; !st && i < n; i++) {
        int t = study_ruler_task_of(names[i]);
        if (t < 0)
            return posemb_fail(err, POSEMB_EINVAL,
                               "%s: \"ruler_tasks\": no task \"%s\" (niah_single, niah_multikey, niah_multivalue, "
                               "niah_multiquery, vt, cwe, fwe, kv)",
                               path, names[i]);
        c->len.ruler_tasks |= 1u << t;
    }
    return st;
}

/* Key name of r, when present, is the string a (*v = 0, as when absent) or
 * b (*v = 1); anything else is EINVAL. */
static posemb_status get_choice(const cJSON *r, const char *name, const char *a, const char *b, int *v,
                                const char *path, posemb_error *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, name);
    if (!x) return POSEMB_OK;
    if (!cJSON_IsString(x) || (strcmp(x->valuestring, a) && strcmp(x->valuestring, b)))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"%s\" must be \"%s\" or \"%s\"", path, name, a, b);
    *v = !strcmp(x->valuestring, b);
    return POSEMB_OK;
}

/* "ruler_keys": 0, or at least the fixed keys every task asked for needs;
 * "ruler_key_form": "ruler" (digits, upper-case names) or "words". Either
 * set apart from RULER's needs a task with keys. */
static posemb_status get_ruler_keys(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    posemb_status st = get_choice(r, "ruler_key_form", "ruler", "words", &c->len.ruler_key_words, path, err);
    if (!st) st = get_int(r, "ruler_keys", 0, STUDY_RULER_MAX_KEYS, &c->len.ruler_keys, path, err);
    int keyed = 0;
    for (int t = 0; !st && t < STUDY_RULER_TASKS; t++) {
        if (!(c->len.ruler_tasks >> t & 1u)) continue;
        keyed |= study_ruler_keys_needed(t) > 0;
        if (c->len.ruler_keys && c->len.ruler_keys < study_ruler_keys_needed(t))
            return posemb_fail(err, POSEMB_EINVAL, "%s: \"ruler_keys\" %d: %s needs at least %d fixed keys", path,
                               c->len.ruler_keys, study_ruler_task_name(t), study_ruler_keys_needed(t));
    }
    if (!st && c->len.ruler_tasks && !keyed && (c->len.ruler_keys || c->len.ruler_key_words))
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: \"ruler_keys\" and \"ruler_key_form\": no task of \"ruler_tasks\" has keys", path);
    return st;
}

/* "ruler_threshold": the effective length's bar, in (0, 1]; only with "ruler_tasks" (nothing else reads it). */
static posemb_status get_threshold(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "ruler_threshold");
    if (!v) return POSEMB_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 1))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"ruler_threshold\" must be a number in (0, 1]", path);
    if (!cJSON_GetObjectItemCaseSensitive(r, "ruler_tasks"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"ruler_threshold\" without \"ruler_tasks\"", path);
    c->len.ruler_threshold = (float)v->valuedouble;
    return POSEMB_OK;
}

/* "passkey_needle": "twice" (the passkey's) or "once"; "ruler_needle":
 * "once" (RULER's) or "twice", for the niah tasks with "key K = V."
 * needles only (study_ruler_can_say_twice). */
static posemb_status get_needles(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    posemb_status st = get_choice(r, "passkey_needle", "twice", "once", &c->len.passkey_once, path, err);
    if (!st) st = get_choice(r, "ruler_needle", "once", "twice", &c->len.ruler_twice, path, err);
    for (int t = 0; !st && c->len.ruler_twice && t < STUDY_RULER_TASKS; t++)
        if (c->len.ruler_tasks >> t & 1u && !study_ruler_can_say_twice(t))
            return posemb_fail(err, POSEMB_EINVAL,
                               "%s: \"ruler_needle\" \"twice\": %s has no \"key K = V.\" needle to say twice (only "
                               "niah_single, niah_multikey, niah_multiquery)",
                               path, study_ruler_task_name(t));
    return st;
}

/* The keys that are one number each: an integer in [lo, hi], or a number in (lo, hi), [lo, hi) with closed_lo, into
 * the field at off. The keys with a reader of their own (lists, choices, objects, paths) are OWN_KEYS. */
typedef struct {
    const char *key;
    int lo, hi;
    size_t off;
} int_key;
typedef struct {
    const char *key;
    double lo;
    int closed_lo;
    double hi;
    size_t off;
} float_key;
#define AT(field) offsetof(posemb_study_config, field)
static const int_key INT_KEYS[] = {
    {"layers", 1, 64, AT(layers)},
    {"hidden", 2, 4096, AT(hidden)},
    {"heads", 1, 64, AT(heads)},
    {"intermediate", 1, 16384, AT(intermediate)},
    {"n_train", 16, 4096, AT(n_train)},
    {"steps", 1, 10000000, AT(steps)},
    {"batch", 1, 4096, AT(batch)},
    {"eval_examples", 1, 1 << 20, AT(eval_examples)},
    {"curve_every", 0, 1 << 20, AT(curve_every)},
    {"jobs", 1, 64, AT(jobs)},
    {"analyze", 0, 1, AT(analyze)},
    {"ranks_per_run", 1, 64, AT(ranks_per_run)},
    {"pretrain_steps", 1, 10000000, AT(real.pretrain_steps)},
    {"pretrain_batch", 1, 4096, AT(real.pretrain_batch)},
    {"pretrain_keep", 1, 1000, AT(real.pretrain_keep)},
    {"pretrain_seed", 1, 1000000, AT(real.pretrain_seed)},
    {"pretrain_warmup", 0, 10000000, AT(real.pretrain_warmup)},
    {"pre_ln", 0, 1, AT(real.pre_ln)},
    {"squad_stride", 0, 4096, AT(real.squad_stride)},
    {"squad_max_query", 1, 4096, AT(real.squad_max_query)},
    {"max_answer", 1, 4096, AT(real.max_answer)},
    {"corpus_tokens", 0, 1 << 30, AT(real.corpus_tokens)},
    {"eval_tokens", 2, 1 << 30, AT(len.eval_tokens)},
    {"passkey_trials", 0, 100000, AT(len.passkey_trials)},
    {"ruler_trials", 0, 100000, AT(len.ruler_trials)},
    {"extend_steps", 1, 10000000, AT(len.extend_steps)},
    {"extend_every", 1, 10000000, AT(len.extend_every)},
    {"extend_batch", 0, 4096, AT(len.extend_batch)},
    {"sink_every", 0, 10000000, AT(len.sink_every)},
};
static const float_key FLOAT_KEYS[] = {
    {"lr", 0, 0, 10, AT(lr)},
    {"dropout", 0, 1, 1, AT(dropout)}, /* may be 0; a learning rate may not */
    {"epochs", 0, 1, 1e6, AT(epochs)},
    {"pretrain_lr", 0, 0, 10, AT(real.pretrain_lr)},
    {"passkey_train", 0, 1, 1, AT(len.passkey_train)},
    {"ruler_train", 0, 1, 1, AT(len.ruler_train)},
    {"extend_lr", 0, 1, 10, AT(len.extend_lr)},
};
#undef AT
static const char *const OWN_KEYS[] = {
    "pes",           "tasks",           "seeds",          "lengths",        "corpora",
    "rope_scalings", "task_budgets",    "ruler_tasks",    "ruler_keys",     "ruler_key_form",
    "ruler_needle",  "ruler_threshold", "passkey_needle", "extend_factors", "extend_scalings",
    "model",         "tokenizer",       "pe_amplitude",   "vocab",          "data",
};
#define COUNT(a) (sizeof(a) / sizeof *(a))

/* EINVAL for a key posemb does not read: a misspelt key would silently keep a default. Counts the extend_* keys. */
static posemb_status check_keys(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    for (const cJSON *x = r->child; x; x = x->next) {
        int ok = 0;
        for (size_t i = 0; i < COUNT(INT_KEYS); i++) ok |= !strcmp(INT_KEYS[i].key, x->string);
        for (size_t i = 0; i < COUNT(FLOAT_KEYS); i++) ok |= !strcmp(FLOAT_KEYS[i].key, x->string);
        for (size_t i = 0; i < COUNT(OWN_KEYS); i++) ok |= !strcmp(OWN_KEYS[i], x->string);
        if (!ok) return posemb_fail(err, POSEMB_EINVAL, "%s: unknown key \"%s\"", path, x->string);
        c->len.extend_keys += !strncmp(x->string, "extend_", 7);
    }
    return POSEMB_OK;
}

static posemb_status get_numbers(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    for (size_t i = 0; !st && i < COUNT(INT_KEYS); i++)
        st = get_int(r, INT_KEYS[i].key, INT_KEYS[i].lo, INT_KEYS[i].hi, (int *)((char *)c + INT_KEYS[i].off), path,
                     err);
    for (size_t i = 0; !st && i < COUNT(FLOAT_KEYS); i++)
        st = get_float(r, FLOAT_KEYS[i].key, FLOAT_KEYS[i].lo, FLOAT_KEYS[i].closed_lo, FLOAT_KEYS[i].hi,
                       (float *)((char *)c + FLOAT_KEYS[i].off), path, err);
    return st;
}

/* The lists and the keys whose check reads another's value (after the keys it reads). */
static posemb_status get_lists(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    if ((st = get_names(r, "pes", &c->pes[0][0], 128, POSEMB_STUDY_MAX_PES, &c->n_pes, path, err)) ||
        (st = get_names(r, "tasks", &c->tasks[0][0], 32, POSEMB_STUDY_MAX_TASKS, &c->n_tasks, path, err)) ||
        (st = get_ints(r, "seeds", c->seeds, 16, 0, 1 << 30, &c->n_seeds, path, err)) ||
        (st = get_ints(r, "lengths", c->mults, 8, 1, 64, &c->n_mults, path, err)) ||
        (st = get_names(r, "corpora", &c->real.corpora[0][0], 128, 8, &c->real.n_corpora, path, err)) ||
        (st = get_scalings(r, c, path, err)) || (st = get_budgets(r, c, path, err)) ||
        (st = get_threshold(r, c, path, err)) || (st = get_ruler_tasks(r, c, path, err)) ||
        (st = get_ruler_keys(r, c, path, err)) || (st = get_needles(r, c, path, err)) ||
        (st = get_ints(r, "extend_factors", c->len.extend_factors, 4, 2, 64, &c->len.n_extend_factors, path, err)) ||
        (st = get_extend_scalings(r, c, path, err)) || (st = extend_distinct(c, path, err)))
        return st;
    for (int i = 0; i < c->real.n_corpora; i++) /* a path inside the data folder, as the default corpora are */
        if (c->real.corpora[i][0] == '/' || strstr(c->real.corpora[i], ".."))
            return posemb_fail(err, POSEMB_EINVAL, "%s: corpus \"%s\" must be a path inside the data folder", path,
                               c->real.corpora[i]);
    return POSEMB_OK;
}

/* "tokenizer", "pe_amplitude", "vocab" and "data": strings of a few forms. */
static posemb_status get_strings(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(r, "tokenizer");
    if (tok && !(cJSON_IsString(tok) && (!strcmp(tok->valuestring, "bytes") || !strcmp(tok->valuestring, "gpt2"))))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"tokenizer\" must be \"bytes\" or \"gpt2\"", path);
    if (tok) snprintf(c->len.tokenizer, sizeof c->len.tokenizer, "%s", tok->valuestring);
    const cJSON *amp = cJSON_GetObjectItemCaseSensitive(r, "pe_amplitude");
    if (amp && !(cJSON_IsString(amp) && (!strcmp(amp->valuestring, "rule") || !strcmp(amp->valuestring, "defined"))))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"pe_amplitude\" must be \"rule\" or \"defined\"", path);
    if (amp) c->pe_defined = !strcmp(amp->valuestring, "defined");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(r, "vocab");
    int plain = 1; /* the path is written into results.jsonl's lines as it is */
    for (const char *q = cJSON_IsString(vocab) ? vocab->valuestring : ""; *q; q++)
        plain &= (unsigned char)*q >= 0x20 && *q != '"' && *q != '\\';
    if (vocab && (!cJSON_IsString(vocab) || !vocab->valuestring[0] || !plain ||
                  strlen(vocab->valuestring) >= sizeof c->real.vocab || vocab->valuestring[0] == '/' ||
                  strstr(vocab->valuestring, "..")))
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s: \"vocab\" must be a vocab.txt path inside the data folder (no quotes, backslashes "
                           "or control characters)",
                           path);
    if (vocab && strcmp(vocab->valuestring, STUDY_DEFAULT_VOCAB)) /* the default is said by "" */
        snprintf(c->real.vocab, sizeof c->real.vocab, "%s", vocab->valuestring);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(r, "data");
    if (data && (!cJSON_IsString(data) || strlen(data->valuestring) >= sizeof c->data))
        return posemb_fail(err, POSEMB_EINVAL, "%s: \"data\" must be a folder path", path);
    if (data) snprintf(c->data, sizeof c->data, "%s", data->valuestring);
    return POSEMB_OK;
}

static posemb_status parse(const cJSON *r, posemb_study_config *c, const char *path, posemb_error *err)
{
    posemb_status st;
    if ((st = check_keys(r, c, path, err)) || (st = get_numbers(r, c, path, err)) ||
        (st = get_lists(r, c, path, err)) || (st = get_model(r, c, path, err)) || (st = get_strings(r, c, path, err)))
        return st;
    if (c->hidden % c->heads)
        return posemb_fail(err, POSEMB_EINVAL, "%s: hidden %d is not a multiple of heads %d", path, c->hidden,
                           c->heads);
    return POSEMB_OK;
}

posemb_status posemb_study_config_load(posemb_study_config *c, const char *path, posemb_error *err)
{
    char *text;
    size_t n;
    posemb_status st = posemb_read_data_file(path, 1u << 20, &text, &n, err);
    if (st) return st;
    cJSON *r = cJSON_ParseWithLength(text, n);
    free(text);
    st = cJSON_IsObject(r) ? parse(r, c, path, err) : posemb_fail(err, POSEMB_EINVAL, "%s: not a JSON object", path);
    cJSON_Delete(r);
    return st;
}

static const char *const DEFAULT_PES[] = {"none",       "ape",     "sin",      "lsin",      "rpe",      "srpe",
                                          "lsrpe",      "ape+rpe", "ape+srpe", "ape+lsrpe", "lsin+rpe", "lsin+srpe",
                                          "lsin+lsrpe", "rope",    "alibi",    "t5"};

/* "copy" is left out of the default: no PE of the default's size learns it in 250 steps. */
static const char *const DEFAULT_TASKS[] = {"absolute", "order", "offset", "retrieve", "between", "reverse"};

posemb_study_config posemb_study_default(void)
{
    posemb_study_config c = {
        .n_seeds = 3,
        .seeds = {1, 2, 3},
        .n_mults = 4,
        .mults = {1, 2, 4, 8},
        .layers = 2,
        .hidden = 64,
        .heads = 4,
        .intermediate = 128,
        .n_train = 32,
        .steps = 350,
        .batch = 32,
        .lr = 3e-3f,
        .eval_examples = 128,
        .curve_every = 50,
        .jobs = 2,
        .analyze = 1,
        /* the real-data study's own settings (posemb_study_data_default) */
        .real.pretrain_steps = 4000,
        .real.pretrain_batch = 32,
        .real.pretrain_lr = 5e-4f,
        .dropout = 0.1f,
        .real.squad_stride = 32,
        .real.squad_max_query = 32,
        .real.max_answer = 30,
        .ranks_per_run = 1,
    };
    study_set_names(c.pes[0], sizeof c.pes[0], &c.n_pes, DEFAULT_PES, (int)(sizeof DEFAULT_PES / sizeof *DEFAULT_PES));
    study_set_names(c.tasks[0], sizeof c.tasks[0], &c.n_tasks, DEFAULT_TASKS,
                    (int)(sizeof DEFAULT_TASKS / sizeof *DEFAULT_TASKS));
    /* Classification read from [CLS] at 3e-3 can settle early in a state it
     * never leaves (t5's [CLS] attends to A alone, so A's distance no longer
     * changes the answer): 18 of 48 collapse-prone runs collapse, 13 at 1000
     * steps; at 1e-3, 5. The span and LM tasks learn less at 1e-3 in 350
     * steps (ape's retrieve 0.74 to 0.21), so they keep 3e-3 (docs/study.md,
     * "The classification tasks' learning rate"). */
    c.n_budgets = 2;
    c.budgets[0] = (posemb_study_budget){"absolute", -1, -1, -1, 1e-3f};
    c.budgets[1] = (posemb_study_budget){"order", -1, -1, -1, 1e-3f};
    return c;
}

/* The tasks trained to their own budget (task_budgets), a sentence each, into buf ("" for none). */
void study_budgets_text(const posemb_study_config *c, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < c->n_tasks && n < cap; t++) {
        posemb_study_config b;
        const posemb_study_config *ct = posemb_study_for_task(c, c->tasks[t], &b);
        if (ct->steps == c->steps && ct->epochs == c->epochs && ct->curve_every == c->curve_every && ct->lr == c->lr)
            continue;
        n += (size_t)snprintf(buf + n, cap - n, "%s%s has its own budget: %s%d steps", n ? " " : "", c->tasks[t],
                              study_glue(c) ? "at most " : "", ct->steps);
        if (n < cap && study_glue(c) && ct->epochs != c->epochs)
            n += ct->epochs > 0 ? (size_t)snprintf(buf + n, cap - n, " (fewer where %g epochs take fewer)", ct->epochs)
                                : (size_t)snprintf(buf + n, cap - n, " (whatever the epochs)");
        if (n < cap && ct->lr != c->lr) n += (size_t)snprintf(buf + n, cap - n, " at learning rate %g", ct->lr);
        if (n < cap)
            n += ct->curve_every ? (size_t)snprintf(buf + n, cap - n, ", evaluated every %d.", ct->curve_every)
                                 : (size_t)snprintf(buf + n, cap - n, ", evaluated at the end.");
    }
}
