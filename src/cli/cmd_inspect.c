/* posemb inspect: lists the tensors and metadata of a .safetensors file,
 * as a table or (--json) as one JSON object. Reads only the header. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "posemb/safetensors.h"
#include "core/tensor_internal.h"
#include "core/error_internal.h"

#define SHAPE_BUF (POSEMB_MAX_DIMS * 24)

static void usage(FILE *out)
{
    fprintf(out, "usage: posemb inspect [--json] FILE.safetensors\n\n"
                 "Lists each tensor (name, dtype, shape, bytes), the totals and the metadata.\n\n"
                 "options:\n"
                 "  --json     print one JSON object instead of a table\n"
                 "  -h, --help show this help\n");
}

typedef struct inspect_args {
    int json;
    const char *path;
} inspect_args;

/* Returns 0, or the exit status when the command line says to stop. */
static int parse_args(int argc, char **argv, inspect_args *a)
{
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!only_files && (!strcmp(s, "-h") || !strcmp(s, "--help"))) {
            usage(stdout);
            return -1;
        } else if (!only_files && !strcmp(s, "--json")) {
            a->json = 1;
        } else if (!only_files && !strcmp(s, "--")) {
            only_files = 1;
        } else if (!only_files && s[0] == '-' && s[1]) {
            fprintf(stderr, "posemb inspect: unknown option '%s' (see 'posemb inspect --help')\n", s);
            return EXIT_USAGE;
        } else if (a->path) {
            fprintf(stderr, "posemb inspect: one file expected, got '%s' and '%s'\n", a->path, s);
            return EXIT_USAGE;
        } else {
            a->path = s;
        }
    }
    if (!a->path) {
        fprintf(stderr, "posemb inspect: missing FILE.safetensors (see 'posemb inspect --help')\n");
        return EXIT_USAGE;
    }
    return 0;
}

static unsigned long long entry_bytes(const posemb_st_entry *e) { return (unsigned long long)(e->end - e->begin); }

static void print_table(const posemb_st_file *f)
{
    int name_w = 4, shape_w = 5;
    char shape[SHAPE_BUF];
    for (int i = 0; i < f->n_entries; i++) {
        const posemb_st_entry *e = &f->entries[i];
        posemb_shape_str(e->ndim, e->shape, shape, (int)sizeof shape);
        int n = (int)strlen(e->name), s = (int)strlen(shape);
        if (n > name_w) name_w = n < 64 ? n : 64; /* a longer name overflows its column */
        if (s > shape_w) shape_w = s;
    }
    printf("%-*s  %-5s  %-*s  %s\n", name_w, "name", "dtype", shape_w, "shape", "bytes");
    unsigned long long params = 0, bytes = 0;
    for (int i = 0; i < f->n_entries; i++) {
        const posemb_st_entry *e = &f->entries[i];
        posemb_shape_str(e->ndim, e->shape, shape, (int)sizeof shape);
        printf("%-*s  %-5s  %-*s  %llu\n", name_w, e->name, posemb_dtype_name(e->dtype), shape_w, shape,
               entry_bytes(e));
        params += (unsigned long long)e->numel;
        bytes += entry_bytes(e);
    }
    printf("total: %d tensor%s, %llu parameters, %llu bytes\n", f->n_entries, f->n_entries == 1 ? "" : "s", params,
           bytes);
    if (f->n_meta > 0) printf("metadata:\n");
    for (int i = 0; i < f->n_meta; i++) printf("  %s: %s\n", f->meta_keys[i], f->meta_values[i]);
}

/* An integer as exact JSON text (cJSON would print large ones as 1e+15). */
static cJSON *json_uint(unsigned long long v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", v);
    return cJSON_CreateRaw(buf);
}

/* cJSON's Add functions skip a NULL item, so a failed allocation shows up as
 * a missing member: the builders below count members instead of checking
 * every call. */
static cJSON *entry_json(const posemb_st_entry *e)
{
    cJSON *obj = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    if (!obj || !shape) {
        cJSON_Delete(obj);
        cJSON_Delete(shape);
        return NULL;
    }
    for (int i = 0; i < e->ndim; i++) cJSON_AddItemToArray(shape, json_uint((unsigned long long)e->shape[i]));
    cJSON_AddItemToObject(obj, "name", cJSON_CreateString(e->name));
    cJSON_AddItemToObject(obj, "dtype", cJSON_CreateString(posemb_dtype_name(e->dtype)));
    cJSON_AddItemToObject(obj, "shape", shape);
    cJSON_AddItemToObject(obj, "numel", json_uint((unsigned long long)e->numel));
    cJSON_AddItemToObject(obj, "bytes", json_uint(entry_bytes(e)));
    if (cJSON_GetArraySize(obj) != 5 || cJSON_GetArraySize(shape) != e->ndim) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

/* The whole report; NULL if memory ran out somewhere. */
static cJSON *report_json(const posemb_st_file *f)
{
    cJSON *root = cJSON_CreateObject(), *tensors = cJSON_CreateArray(), *meta = cJSON_CreateObject();
    cJSON *total = cJSON_CreateObject();
    if (!root || !tensors || !meta || !total) {
        cJSON_Delete(root);
        cJSON_Delete(tensors);
        cJSON_Delete(meta);
        cJSON_Delete(total);
        return NULL;
    }
    unsigned long long params = 0, bytes = 0;
    for (int i = 0; i < f->n_entries; i++) {
        cJSON_AddItemToArray(tensors, entry_json(&f->entries[i]));
        params += (unsigned long long)f->entries[i].numel;
        bytes += entry_bytes(&f->entries[i]);
    }
    cJSON_AddItemToObject(total, "tensors", json_uint((unsigned long long)f->n_entries));
    cJSON_AddItemToObject(total, "parameters", json_uint(params));
    cJSON_AddItemToObject(total, "bytes", json_uint(bytes));
    for (int i = 0; i < f->n_meta; i++)
        cJSON_AddItemToObject(meta, f->meta_keys[i], cJSON_CreateString(f->meta_values[i]));
    cJSON_AddItemToObject(root, "file", cJSON_CreateString(f->path));
    cJSON_AddItemToObject(root, "tensors", tensors);
    cJSON_AddItemToObject(root, "total", total);
    cJSON_AddItemToObject(root, "metadata", meta);
    int complete = cJSON_GetArraySize(tensors) == f->n_entries && cJSON_GetArraySize(meta) == f->n_meta &&
                   cJSON_GetArraySize(total) == 3 && cJSON_GetArraySize(root) == 4;
    if (!complete) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int print_json(const posemb_st_file *f)
{
    cJSON *root = report_json(f);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        posemb_error err;
        posemb_fail(&err, POSEMB_ENOMEM, "%s: out of memory printing JSON", f->path);
        return cli_report("inspect", &err);
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    inspect_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    posemb_st_file f;
    posemb_error err;
    posemb_error_clear(&err);
    if (posemb_st_open(&f, a.path, &err) != POSEMB_OK) return cli_report("inspect", &err);
    rc = 0;
    if (a.json) rc = print_json(&f);
    else print_table(&f);
    posemb_st_close(&f);
    return rc;
}
