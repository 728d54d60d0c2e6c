/* Training checkpoints: a folder per step, written under a temporary name
 * and renamed into place, so that a kill never leaves a partial one. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "posemb/safetensors.h"
#include "train_impl.h"
#include "model/model_internal.h"
#include "formats/safetensors_internal.h"
#include "train/trainer_internal.h"

long posemb_checkpoint_latest(const char *run, char *path, size_t cap)
{
    long *steps;
    int n = posemb_checkpoint_steps(run, 1, &steps);
    long best = n > 0 ? steps[n - 1] : 0;
    free(steps);
    if (best) posemb_checkpoint_dir(path, cap, run, best);
    return best;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[POSEMB_PATH_MAX];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !posemb_path_join(p, sizeof p, dir, e->d_name))
            unlink(p);
    closedir(d);
    rmdir(dir);
}

/* Removes checkpoints older than the newest keep ones, and stale temporaries. */
static void prune(const char *run, int keep)
{
    DIR *d = opendir(run);
    if (!d) return;
    struct dirent *e;
    char p[POSEMB_PATH_MAX];
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, ".checkpoint-", 12) && !posemb_path_join(p, sizeof p, run, e->d_name)) remove_tree(p);
    closedir(d);
    long *steps;
    int n = posemb_checkpoint_steps(run, 0, &steps);
    for (int i = 0; i < n - keep; i++)
        if (!posemb_checkpoint_dir(p, sizeof p, run, steps[i])) remove_tree(p);
    free(steps);
}

static posemb_status save_optimizer(const posemb_adamw *o, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "optimizer.safetensors"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    int64_t n[1] = {(int64_t)o->n}, one[1] = {1}, step = o->step;
    posemb_status st = posemb_st_writer_add_f32(&w, "exp_avg", 1, n, o->m, err);
    if (!st) st = posemb_st_writer_add_f32(&w, "exp_avg_sq", 1, n, o->v, err);
    if (!st) st = posemb_st_writer_add(&w, "step", POSEMB_I64, 1, one, &step, err);
    if (!st) st = posemb_st_write(&w, path, err);
    posemb_st_writer_free(&w);
    return st;
}

/* A double that reads back bit for bit: cJSON prints 15 digits whenever they
 * read back within an epsilon of the value, so a resumed run's history would
 * differ from the uninterrupted one in the last bit. */
static cJSON *exact_number(double x)
{
    char buf[32];
    if (!isfinite(x)) return cJSON_CreateNull();
    snprintf(buf, sizeof buf, "%.17g", x);
    return cJSON_CreateRaw(buf);
}

static posemb_status save_state(const train_state *s, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "trainer_state.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    cJSON *r = cJSON_CreateObject(), *h = cJSON_AddArrayToObject(r, "history");
    cJSON_AddNumberToObject(r, "step", (double)s->step);
    cJSON_AddNumberToObject(r, "seed", (double)s->seed);
    for (long i = 0; i < s->n_history; i++) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber((double)s->history[i].step));
        cJSON_AddItemToArray(p, exact_number(s->history[i].loss));
        cJSON_AddItemToArray(p, exact_number(s->history[i].lr));
        cJSON_AddItemToArray(p, exact_number(s->history[i].grad_norm));
        cJSON_AddItemToArray(h, p);
    }
    char *text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (!text) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    posemb_status st = posemb_write_text(path, text, err);
    cJSON_free(text);
    return st;
}

static posemb_status save_notes(const char *notes, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "notes.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    return posemb_write_text(path, notes, err);
}

posemb_status train_checkpoint_save(const char *run, const posemb_model *m, const posemb_adamw *o, const train_state *s,
                                    int keep, posemb_error *err)
{
    char tmp[POSEMB_PATH_MAX], dir[POSEMB_PATH_MAX];
    int a = snprintf(tmp, sizeof tmp, "%s/.checkpoint-%ld.tmp.%ld", run, s->step, (long)getpid());
    if (a < 0 || a >= (int)sizeof tmp || posemb_checkpoint_dir(dir, sizeof dir, run, s->step))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", run);
    remove_tree(tmp);
    posemb_status st = posemb_model_save(m, tmp, err);
    if (!st) st = save_optimizer(o, tmp, err);
    if (!st && s->notes) st = save_notes(s->notes, tmp, err);
    if (!st) st = save_state(s, tmp, err); /* last: its presence marks the checkpoint complete */
    if (!st) {
        remove_tree(dir); /* a checkpoint of the same step from an earlier try */
        if (rename(tmp, dir))
            st = posemb_fail(err, POSEMB_EIO, "%s: cannot rename into place: %s", dir, strerror(errno));
    }
    if (st) remove_tree(tmp);
    else prune(run, keep > 0 ? keep : 1);
    return st;
}

static posemb_status load_optimizer(posemb_adamw *o, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "optimizer.safetensors"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    posemb_st_file f;
    posemb_status st = posemb_st_open(&f, path, err);
    if (st) return st;
    int64_t n[1] = {(int64_t)o->n}, step = 0;
    const posemb_st_entry *e = posemb_st_find(&f, "step");
    st = posemb_st_load_f32(&f, "exp_avg", 1, n, o->m, err);
    if (!st) st = posemb_st_load_f32(&f, "exp_avg_sq", 1, n, o->v, err);
    if (!st && (!e || e->numel != 1)) st = posemb_fail(err, POSEMB_EFORMAT, "%s: no scalar 'step'", path);
    if (!st) st = posemb_st_read_i64(&f, e, &step, err);
    o->step = (long)step;
    posemb_st_close(&f);
    return st;
}

/* A step count: JSON numbers are doubles, and a cast of one outside long's
 * range (or of NaN) is undefined behaviour, so only whole numbers in
 * [0, 2^53] are steps. */
static int read_step(const cJSON *v, long *out)
{
    double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(x >= 0 && x <= 9007199254740992.0) || x != floor(x)) return 0;
    *out = (long)x;
    return 1;
}

/* A history entry [step, loss, lr, grad_norm]. */
static int read_point(const cJSON *p, posemb_train_point *pt)
{
    if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 4 || !read_step(cJSON_GetArrayItem(p, 0), &pt->step)) return 0;
    double *vals[3] = {&pt->loss, &pt->lr, &pt->grad_norm};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetArrayItem(p, i + 1);
        if (!cJSON_IsNumber(v)) return 0;
        *vals[i] = v->valuedouble;
    }
    return 1;
}

static posemb_status load_state(train_state *s, const char *dir, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "trainer_state.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = len > 0 ? malloc((size_t)len + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)len, f) : 0;
    fclose(f);
    cJSON *r = text ? cJSON_ParseWithLength(text, got) : NULL;
    free(text);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(r, "step"),
                *h = cJSON_GetObjectItemCaseSensitive(r, "history");
    posemb_status st = POSEMB_OK;
    s->step = 0;
    if (!read_step(step, &s->step) || !cJSON_IsArray(h))
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: not a trainer state (a whole step count and a history)", path);
    s->n_history = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, h)
    {
        posemb_train_point pt;
        if (st) break;
        if (!read_point(p, &pt)) {
            st = posemb_fail(err, POSEMB_EFORMAT, "%s: a malformed history entry (want [step, loss, lr, grad_norm])",
                             path);
            break;
        }
        if (train_history_add(s, pt)) st = posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    }
    cJSON_Delete(r);
    return st;
}

posemb_status train_checkpoint_load(const char *dir, posemb_model *m, posemb_adamw *o, train_state *s,
                                    posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "model.safetensors"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    posemb_status st = posemb_model_load_weights(m, path, err);
    if (!st) st = load_optimizer(o, dir, err);
    if (!st) st = load_state(s, dir, err);
    return st;
}

posemb_status train_share_weights(const posemb_comm *c, posemb_model *m, posemb_adamw *o, posemb_error *err)
{
    long step = o->step;
    posemb_status st = c->bcast(c->ctx, &step, sizeof step, err);
    if (!st) st = c->bcast(c->ctx, posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float), err);
    if (!st) st = c->bcast(c->ctx, o->m, o->n * sizeof *o->m, err);
    if (!st) st = c->bcast(c->ctx, o->v, o->n * sizeof *o->v, err);
    if (!st) posemb_pe_prepare(posemb_model_pe(m)); /* tables derived from learned frequencies follow the weights */
    o->step = step;
    return st;
}

/* ---- checkpoints for other training loops ---- */

posemb_status posemb_checkpoint_save(const char *run, const posemb_model *m, const posemb_adamw *o, const char *notes,
                                     int keep, posemb_error *err)
{
    if (mkdir(run, 0755) && errno != EEXIST)
        return posemb_fail(err, POSEMB_EIO, "%s: cannot create: %s", run, strerror(errno));
    train_state s = {.step = o->step, .notes = notes};
    return train_checkpoint_save(run, m, o, &s, keep, err);
}

/* The leader's newest checkpoint of run into m and o, with its notes. */
static posemb_status load_latest(const char *run, posemb_model *m, posemb_adamw *o, char **notes, posemb_error *err)
{
    char dir[POSEMB_PATH_MAX], path[POSEMB_PATH_MAX];
    if (!posemb_checkpoint_latest(run, dir, sizeof dir)) return POSEMB_OK;
    train_state s = {0};
    posemb_status st = train_checkpoint_load(dir, m, o, &s, err);
    free(s.history);
    if (!st && o->step != s.step)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: optimizer step %ld and checkpoint step %ld differ", dir, o->step,
                         s.step);
    if (!st && !posemb_path_join(path, sizeof path, dir, "notes.json") && access(path, F_OK) == 0) {
        size_t len;
        st = posemb_read_data_file(path, 1u << 24, notes, &len, err);
    }
    return st;
}

posemb_status posemb_checkpoint_resume(const char *run, const posemb_comm *group, posemb_model *m, posemb_adamw *o,
                                       char **notes, posemb_error *err)
{
    *notes = NULL;
    posemb_status st = posemb_comm_leader(group) ? load_latest(run, m, o, notes, err) : POSEMB_OK;
    if (!st && posemb_comm_active(group)) st = train_share_weights(group, m, o, err);
    if (st) {
        free(*notes);
        *notes = NULL;
    }
    return st;
}

void posemb_checkpoint_remove(const char *run)
{
    prune(run, 0);
    rmdir(run);
}

/* Appends p to s's history (-1 when out of memory): the trainer's after each
 * update, a checkpoint's when it is read back. */
int train_history_add(train_state *s, posemb_train_point p)
{
    if (s->n_history == s->cap_history) {
        long cap = s->cap_history ? 2 * s->cap_history : 256;
        posemb_train_point *h = realloc(s->history, (size_t)cap * sizeof *h);
        if (!h) return -1;
        s->history = h;
        s->cap_history = cap;
    }
    s->history[s->n_history++] = p;
    return 0;
}
