/* posemb probe order: the word-order cost of masked-LM models
 * (posemb_order_cost_dir), a line or a JSON object per model. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "probe_order.h"
#include "posemb/probes.h"
#include "posemb/threads.h"
#include "analysis/probes_internal.h"

static const char USAGE[] =
    "usage: posemb probe order MODEL_DIR... --cache CACHE.safetensors [--windows N] [--len N]\n"
    "                          [--seed S] [--threads N] [--json]\n\n"
    "The word-order cost of BERT or RoBERTa masked-LM models (pretrained folders or training\n"
    "checkpoints). N windows of LEN - 2 tokens are drawn from the I32 tensor 'tokens' of CACHE (a\n"
    "study's RUN/cache/wikitext-2.safetensors), each wrapped in [CLS] ... [SEP], and 15% of the\n"
    "inner tokens replaced by [MASK]. The masked-LM cross-entropy (nats per masked token) is read\n"
    "on them four ways: as they are; each window's inner tokens shuffled, each loss read at its\n"
    "token's new place; each window reversed whole; and, for a PE with a learned scale\n"
    "(ape:learned_scale=on), with that scale at 0. The word-order cost is shuffled - as is: 0 for\n"
    "a model blind to order, whose predictions move with their tokens. Windows, masks and\n"
    "shuffles depend on --seed alone, so every model reads the same ones. The ids of [CLS], [SEP]\n"
    "and [MASK] come from the folder's tokenizer.json or vocab.txt (RoBERTa: <s>, </s>, <mask>),\n"
    "else BERT's 101, 102, 103; each line says which.\n\n"
    "  --cache PATH    the token cache (required)\n"
    "  --windows N     windows (default 32)\n"
    "  --len N         tokens per window, [CLS] and [SEP] included (default 128)\n"
    "  --seed S        seed of the windows, masks and shuffles (default 3)\n"
    "  --threads N     threads (default: the CPUs not busy with other processes)\n"
    "  --json          one JSON object per model instead of a line: model, pe, as_is, shuffled,\n"
    "                  reversed, scale0 (null without a learned scale), order_cost, masked, ...\n";

typedef struct order_cmd {
    const char *cache;
    const char **dirs;
    int n_dirs, json, seed;
    posemb_order_opts o;
} order_cmd;

static int parse(int argc, char **argv, order_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "probe order", argc, argv);
    const char *arg;
    int rc = 0, threads = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        }
        if (!a.flag) {
            if (cli_positional(&a, arg)) return EXIT_USAGE;
            c->dirs[c->n_dirs++] = arg;
        } else if (cli_is(&a, "--cache")) rc = (c->cache = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--windows")) rc = cli_int(&a, 1, 1 << 20, &c->o.windows);
        else if (cli_is(&a, "--len")) rc = cli_int(&a, 3, 1 << 20, &c->o.len);
        else if (cli_is(&a, "--seed")) rc = cli_int(&a, 0, 1 << 30, &c->seed);
        else if (cli_is(&a, "--threads")) rc = cli_int(&a, 1, 1024, &threads);
        else if (cli_is(&a, "--json")) rc = cli_switch(&a, &c->json, 1);
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb probe order --help')", arg);
    }
    if (rc) return rc;
    if (!c->n_dirs) return cli_usage_error(&a, "give MODEL_DIR (see 'posemb probe order --help')");
    if (!c->cache) return cli_usage_error(&a, "give --cache CACHE.safetensors (see 'posemb probe order --help')");
    if (threads) posemb_threads_set(threads);
    c->o.seed = (uint64_t)c->seed;
    return 0;
}

static void print_line(const char *dir, const posemb_order_result *r)
{
    char scale0[32] = "-";
    int defaults = !strcmp(r->specials, "BERT's defaults");
    if (r->has_scale) snprintf(scale0, sizeof scale0, "%.4f", r->scale0);
    printf("%s: as is %.4f  shuffled %.4f  reversed %.4f  scale 0 %s  word-order cost %+.4f nats per masked "
           "token (%ld masked tokens; pe %s; [CLS] [SEP] [MASK] = %d %d %d, %s%s)\n",
           dir, r->as_is, r->shuffled, r->reversed, scale0, r->shuffled - r->as_is, r->masked, r->spec, r->cls, r->sep,
           r->mask, defaults ? "" : "from ", defaults ? "BERT's defaults: the folder has no tokenizer" : r->specials);
}

/* One JSON object on a line; EXIT 1 when cJSON runs out of memory. */
static int print_json(const char *dir, const order_cmd *c, const posemb_order_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", dir);
    cJSON_AddStringToObject(j, "pe", r->spec);
    cJSON_AddNumberToObject(j, "as_is", r->as_is);
    cJSON_AddNumberToObject(j, "shuffled", r->shuffled);
    cJSON_AddNumberToObject(j, "reversed", r->reversed);
    if (r->has_scale) cJSON_AddNumberToObject(j, "scale0", r->scale0);
    else cJSON_AddNullToObject(j, "scale0");
    cJSON_AddNumberToObject(j, "order_cost", r->shuffled - r->as_is);
    cJSON_AddNumberToObject(j, "masked", (double)r->masked);
    cJSON_AddNumberToObject(j, "windows", c->o.windows);
    cJSON_AddNumberToObject(j, "len", c->o.len);
    cJSON_AddNumberToObject(j, "seed", c->seed);
    cJSON_AddNumberToObject(j, "mask_rate", c->o.mask_rate);
    cJSON_AddNumberToObject(j, "cls", r->cls);
    cJSON_AddNumberToObject(j, "sep", r->sep);
    cJSON_AddNumberToObject(j, "mask", r->mask);
    cJSON_AddStringToObject(j, "specials", r->specials);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    if (s) puts(s);
    else fprintf(stderr, "posemb probe order: out of memory\n");
    cJSON_free(s);
    cJSON_Delete(j);
    return s ? 0 : 1;
}

int cmd_probe_order(int argc, char **argv)
{
    order_cmd c = {.o = posemb_order_defaults(), .seed = 3};
    if (!(c.dirs = malloc((size_t)argc * sizeof *c.dirs))) {
        fprintf(stderr, "posemb probe order: out of memory\n");
        return 1;
    }
    int rc = parse(argc, argv, &c);
    if (!rc) cli_say_threads();
    for (int i = 0; !rc && i < c.n_dirs; i++) {
        posemb_order_result r;
        posemb_error err;
        if (posemb_order_cost_dir(c.dirs[i], c.cache, &c.o, &r, &err)) rc = cli_report("probe order", &err);
        else if (c.json) rc = print_json(c.dirs[i], &c, &r);
        else print_line(c.dirs[i], &r);
        fflush(stdout);
    }
    free(c.dirs);
    return rc < 0 ? 0 : rc;
}
