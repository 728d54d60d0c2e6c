/* Hugging Face checkpoint folders: config.json + model.safetensors. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_impl.h"
#include "posemb/safetensors.h"
#include "core/fileio.h"
#include "model/model_internal.h"
#include "formats/safetensors_internal.h"
#include "core/tensor_internal.h"

/* The tensor whose name tells the base prefix. */
static const char *probe_tensor(const posemb_model *m)
{
    return m->cfg.arch == POSEMB_GPT2    ? "wte.weight"
           : m->cfg.arch == POSEMB_LLAMA ? "embed_tokens.weight"
           : m->cfg.arch == POSEMB_NEOX  ? "embed_in.weight"
                                         : "embeddings.word_embeddings.weight";
}

/* The prefix under which the base model's tensors sit: "" for BertModel,
 * "bert."/"roberta." for models with a head, "transformer." for GPT2LMHeadModel. */
static const char *base_prefix(const posemb_model *m, const posemb_st_file *f)
{
    static const char *const enc[] = {"", "bert.", "roberta.", "roberta_prelayernorm.", NULL},
                             *const dec[] = {"", "transformer.", NULL}, *const llama[] = {"", "model.", NULL},
                             *const neox[] = {"", "gpt_neox.", NULL};
    const char *const *cands = m->cfg.arch == POSEMB_GPT2    ? dec
                               : m->cfg.arch == POSEMB_LLAMA ? llama
                               : m->cfg.arch == POSEMB_NEOX  ? neox
                                                             : enc;
    const char *probe = probe_tensor(m);
    char name[160];
    for (int i = 0; cands[i]; i++) {
        snprintf(name, sizeof name, "%s%s", cands[i], probe);
        if (posemb_st_find(f, name)) return cands[i];
    }
    return NULL;
}

/* The base prefix of a sharded checkpoint, from its index's weight_map. */
static const char *index_prefix(const posemb_model *m, const cJSON *map)
{
    static const char *const cands[] = {"",       "bert.",     "roberta.", "roberta_prelayernorm.", "transformer.",
                                        "model.", "gpt_neox.", NULL};
    char name[160];
    for (int i = 0; cands[i]; i++) {
        snprintf(name, sizeof name, "%s%s", cands[i], probe_tensor(m));
        if (cJSON_GetObjectItemCaseSensitive(map, name)) return cands[i];
    }
    return NULL;
}

/* 1 if name matches fmt (one %d) exactly. */
static int matches(const char *name, const char *fmt)
{
    int layer, end = -1;
    return sscanf(name, fmt, &layer, &end) == 1 && end >= 0 && name[end] == '\0';
}

/* HF buffers that carry no parameters: BERT's position ids, GPT-2's causal
 * mask, older Llama files' RoPE frequencies (unscaled: RoPE comes from the
 * config), older Pythia files' causal mask, masked_bias and RoPE frequencies. */
static int is_buffer(const char *name)
{
    return !strcmp(name, "embeddings.position_ids") || matches(name, "h.%d.attn.bias%n") ||
           matches(name, "h.%d.attn.masked_bias%n") || matches(name, "layers.%d.self_attn.rotary_emb.inv_freq%n") ||
           matches(name, "layers.%d.attention.bias%n") || matches(name, "layers.%d.attention.masked_bias%n") ||
           matches(name, "layers.%d.attention.rotary_emb.inv_freq%n");
}

/* Loads one parameter; a missing tensor is an error unless lenient (then
 * the parameter keeps its value and *missing counts it). */
static posemb_status load_param(posemb_model *m, const posemb_st_file *f, const char *prefix, const posemb_param *p,
                                int lenient, int *missing, posemb_error *err)
{
    char name[192];
    snprintf(name, sizeof name, "%s%s", p->head ? "" : prefix, p->name);
    const posemb_st_entry *e = posemb_st_find(f, name);
    if (!e) {
        if (p->unused) return POSEMB_OK;
        if (lenient) {
            (*missing)++;
            return POSEMB_OK;
        }
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' is missing (model %s, PE %s)", f->path, name,
                           m->cfg.architecture, m->cfg.pe);
    }
    int64_t cols = p->ndim == 2 ? p->shape[1] : 1;
    int same = e->ndim == p->ndim && e->shape[0] == p->shape[0] && (p->ndim == 1 || e->shape[1] == cols);
    if (!same || !posemb_dtype_is_float(e->dtype)) {
        char got[64], want[64];
        posemb_shape_str(e->ndim, e->shape, got, sizeof got);
        posemb_shape_str(p->ndim, p->shape, want, sizeof want);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' is %s %s, config.json implies F32 %s", f->path, name,
                           posemb_dtype_name(e->dtype), got, want);
    }
    return posemb_st_read_f32(f, e, m->w + p->offset, err);
}

/* 1 when name is one of m's parameters (a head's by its full name, the
 * base model's under prefix) or a buffer that carries no parameters. */
static int is_read(const posemb_model *m, const char *prefix, const char *name)
{
    size_t plen = strlen(prefix);
    if (posemb_model_find(m, name)) return 1;
    return !strncmp(name, prefix, plen) && (posemb_model_find(m, name + plen) || is_buffer(name + plen));
}

/* Every tensor under the base prefix must be a parameter or a known buffer:
 * a 12-layer checkpoint under a 2-layer config is an error, not a truncation. */
static posemb_status check_name(const posemb_model *m, const char *file, const char *prefix, const char *name,
                                posemb_error *err)
{
    if (strncmp(name, prefix, strlen(prefix)) || is_read(m, prefix, name)) return POSEMB_OK; /* a head's tensor */
    return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' does not belong to a %d-layer %s with PE %s", file, name,
                       m->cfg.layers, m->cfg.architecture, m->cfg.pe);
}

static posemb_status check_leftovers(const posemb_model *m, const posemb_st_file *f, const char *prefix,
                                     posemb_error *err)
{
    posemb_status st = POSEMB_OK;
    for (int i = 0; !st && i < f->n_entries; i++) st = check_name(m, f->path, prefix, f->entries[i].name, err);
    return st;
}

/* A lenient read counts what check_leftovers would refuse, and more: every
 * tensor the model does not read, an HF head it lacks included. */
static void count_unread(const posemb_model *m, const posemb_st_file *f, const char *prefix, posemb_init_report *r)
{
    for (int i = 0; i < f->n_entries; i++) {
        const char *name = f->entries[i].name;
        if (is_read(m, prefix, name)) continue;
        if (!r->unread++) snprintf(r->first_unread, sizeof r->first_unread, "%s", name);
    }
}

/* Reads path into m; lenient (r not NULL): a tensor the file lacks keeps
 * its value and one the model does not read is skipped, both counted in r. */
static posemb_status load_file(posemb_model *m, const char *path, posemb_init_report *r, posemb_error *err)
{
    posemb_st_file f;
    posemb_status st = posemb_st_open(&f, path, err);
    if (st) return st;
    const char *prefix = base_prefix(m, &f);
    int missing = 0;
    if (!prefix)
        st = posemb_fail(err, POSEMB_EFORMAT,
                         "%s: no %s tensors (looked for %s with prefixes '', bert., roberta., "
                         "roberta_prelayernorm., transformer., model., gpt_neox.)",
                         path, m->cfg.architecture, probe_tensor(m));
    for (int i = 0; !st && i < m->n_params; i++)
        st = load_param(m, &f, prefix, &m->params[i], r != NULL, &missing, err);
    if (!st && r) {
        r->missing = missing;
        count_unread(m, &f, prefix, r);
    } else if (!st) {
        st = check_leftovers(m, &f, prefix, err);
    }
    posemb_st_close(&f);
    if (!st) posemb_pe_prepare(m->pe);
    return st;
}

/* dir/file into buf; EINVAL naming dir when it does not fit (never a cut path). */
static posemb_status join(char *buf, size_t cap, const char *dir, const char *file, posemb_error *err)
{
    return posemb_path_join(buf, cap, dir, file) ? posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir)
                                                 : POSEMB_OK;
}

/* A shard's file name from the index: a plain name in the folder, never a path. */
static int shard_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 12 && n < 200 && !strchr(s, '/') && !strchr(s, '\\') && s[0] != '.' &&
           !strcmp(s + n - 12, ".safetensors");
}

/* Loads the shards of weight_map (tensor -> file in dir), each opened once. */
static posemb_status load_shards(posemb_model *m, const char *dir, const char *index, const cJSON *map,
                                 posemb_error *err)
{
    const char *prefix = index_prefix(m, map);
    if (!prefix) return posemb_fail(err, POSEMB_EFORMAT, "%s: no %s in weight_map", index, probe_tensor(m));
    posemb_status st = POSEMB_OK;
    for (const cJSON *e = map->child; !st && e; e = e->next) {
        if (!cJSON_IsString(e) || !shard_name_ok(e->valuestring))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: weight_map[\"%s\"] is not a .safetensors file name", index,
                               e->string);
        st = check_name(m, index, prefix, e->string, err);
    }
    char *done = calloc((size_t)m->n_params + 1, 1), name[192], path[POSEMB_PATH_MAX];
    if (!done) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", index);
    for (int i = 0; !st && i < m->n_params; i++) {
        if (done[i]) continue;
        const posemb_param *p = &m->params[i];
        snprintf(name, sizeof name, "%s%s", p->head ? "" : prefix, p->name);
        const cJSON *file = cJSON_GetObjectItemCaseSensitive(map, name);
        if (!file) {
            if (!p->unused)
                st = posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' is missing (model %s, PE %s)", index, name,
                                 m->cfg.architecture, m->cfg.pe);
            continue;
        }
        posemb_st_file f;
        if ((st = join(path, sizeof path, dir, file->valuestring, err)) || (st = posemb_st_open(&f, path, err))) break;
        for (int j = i; !st && j < m->n_params; j++) { /* every parameter this shard holds */
            const posemb_param *q = &m->params[j];
            snprintf(name, sizeof name, "%s%s", q->head ? "" : prefix, q->name);
            const cJSON *fj = cJSON_GetObjectItemCaseSensitive(map, name);
            if (done[j] || !fj || strcmp(fj->valuestring, file->valuestring)) continue;
            int missing = 0;
            st = load_param(m, &f, prefix, q, 0, &missing, err);
            done[j] = 1;
        }
        posemb_st_close(&f);
    }
    free(done);
    if (!st) posemb_pe_prepare(m->pe);
    return st;
}

/* model.safetensors.index.json: {"weight_map": {tensor: shard file}}. */
static posemb_status load_sharded(posemb_model *m, const char *dir, const char *index, posemb_error *err)
{
    cJSON *root;
    posemb_status st = config_read_json(index, 64u << 20, &root, err);
    if (st) return st;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    st = cJSON_IsObject(map) ? load_shards(m, dir, index, map, err)
                             : posemb_fail(err, POSEMB_EFORMAT, "%s: no \"weight_map\" object", index);
    cJSON_Delete(root);
    return st;
}

posemb_status posemb_model_load_weights(posemb_model *m, const char *path, posemb_error *err)
{
    return load_file(m, path, NULL, err);
}

posemb_status posemb_model_init_report(posemb_model *m, const char *dir, posemb_init_report *r, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    memset(r, 0, sizeof *r);
    posemb_status st = join(path, sizeof path, dir, "model.safetensors", err);
    return st ? st : load_file(m, path, r, err);
}

posemb_status posemb_model_init_from(posemb_model *m, const char *dir, int *missing, posemb_error *err)
{
    posemb_init_report r;
    posemb_status st = posemb_model_init_report(m, dir, &r, err);
    *missing = r.missing;
    return st;
}

posemb_status posemb_model_load(posemb_model **out, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    posemb_config cfg;
    *out = NULL;
    posemb_status st = join(path, sizeof path, dir, "config.json", err);
    if (!st) st = posemb_config_load(&cfg, path, err);
    if (st) return st;
    posemb_model *m;
    if ((st = posemb_model_create(&m, &cfg, err))) {
        char msg[POSEMB_ERROR_MSG];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return posemb_fail(err, st, "%s: %s", path, msg);
    }
    struct stat sb;
    if ((st = join(path, sizeof path, dir, "model.safetensors", err))) {
        posemb_model_free(m);
        return st;
    }
    if (stat(path, &sb) != 0) { /* a sharded folder? */
        char index[POSEMB_PATH_MAX];
        if ((st = join(index, sizeof index, dir, "model.safetensors.index.json", err)) || stat(index, &sb) != 0) {
            posemb_model_free(m);
            return st ? st
                      : posemb_fail(err, POSEMB_EIO,
                                    "%s: missing, and no model.safetensors.index.json (only safetensors checkpoints "
                                    "are read)",
                                    path);
        }
        if ((st = load_sharded(m, dir, index, err))) {
            posemb_model_free(m);
            return st;
        }
        *out = m;
        return POSEMB_OK;
    }
    if ((st = posemb_model_load_weights(m, path, err))) {
        posemb_model_free(m);
        return st;
    }
    *out = m;
    return POSEMB_OK;
}

posemb_status posemb_model_save(const posemb_model *m, const char *dir, posemb_error *err)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", dir, strerror(errno));
    char path[POSEMB_PATH_MAX];
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    posemb_status st = posemb_st_writer_meta(&w, "format", "pt", err);
    if (!st) st = posemb_st_writer_meta(&w, "posemb_pe", posemb_pe_spec(m->pe), err);
    /* HF's names: the base model's tensors carry the head class's prefix. */
    const char *prefix = model_base_prefix(m);
    char(*names)[192] = calloc((size_t)m->n_params, sizeof *names);
    if (!names) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", dir);
    for (int i = 0; !st && i < m->n_params; i++) {
        const posemb_param *p = &m->params[i];
        snprintf(names[i], sizeof names[i], "%s%s", p->head ? "" : prefix, p->name);
        st = posemb_st_writer_add_f32(&w, names[i], p->ndim, p->shape, m->w + p->offset, err);
    }
    if (!st) st = join(path, sizeof path, dir, "model.safetensors", err);
    if (!st) st = posemb_st_write(&w, path, err);
    posemb_st_writer_free(&w);
    free(names);
    if (!st) st = join(path, sizeof path, dir, "config.json", err);
    if (!st) st = posemb_config_save(&m->cfg, path, err);
    return st;
}

static int cmp_step(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* "checkpoint-STEP" exactly, STEP a decimal number >= 0. */
static int checkpoint_name(const char *name, long *step)
{
    int end = 0;
    return sscanf(name, "checkpoint-%ld%n", step, &end) == 1 && !name[end] && *step >= 0;
}

int posemb_checkpoint_dir(char *dst, size_t cap, const char *run, long step)
{
    int n = snprintf(dst, cap, "%s/checkpoint-%ld", run, step);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int is_complete(const char *run, const char *name)
{
    char p[POSEMB_PATH_MAX];
    struct stat sb;
    int n = snprintf(p, sizeof p, "%s/%s/trainer_state.json", run, name);
    return n > 0 && n < (int)sizeof p && stat(p, &sb) == 0;
}

int posemb_checkpoint_steps(const char *run, int complete_only, long **steps)
{
    *steps = NULL;
    DIR *d = opendir(run);
    if (!d) return -1;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long step;
        if (!checkpoint_name(e->d_name, &step) || (complete_only && !is_complete(run, e->d_name))) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            long *grown = realloc(*steps, (size_t)cap * sizeof *grown);
            if (!grown) {
                free(*steps);
                *steps = NULL;
                closedir(d);
                errno = ENOMEM;
                return -1;
            }
            *steps = grown;
        }
        (*steps)[n++] = step;
    }
    closedir(d);
    if (n) qsort(*steps, (size_t)n, sizeof **steps, cmp_step);
    return n;
}
