/* posemb train: pretrain a BERT, RoBERTa or GPT-2 with any PE on text. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli_mpi.h"
#include "commands.h"
#include "tokfiles.h"
#include "outdir.h"
#include "posemb/corpus.h"
#include "core/fileio.h"
#include "model/model_internal.h"
#include "posemb/precision.h"
#include "posemb/threads.h"
#include "posemb/tokenizer.h"
#include "posemb/trainer.h"
#include "nn/precision_internal.h"
#include "train/trainer_internal.h"

static const char USAGE[] =
    "usage: posemb train --model bert|roberta|gpt2|llama|gpt_neox --data PATH --out DIR [--pe SPEC] [--task mlm|clm]\n"
    "                    [--init HF_DIR] [--vocab FILE [--merges FILE] | --tokenizer FILE]\n"
    "                    [--layers N] [--hidden N] [--heads N] [--kv-heads N] [--head-dim N]\n"
    "                    [--intermediate N] [--max-position N] [--pre-ln]\n"
    "                    [--seq-len N] [--batch-size N] [--accum N] [--steps N] [--lr X] [--warmup N]\n"
    "                    [--weight-decay X] [--dropout X] [--seed N] [--threads N] [--precision fp32|bf16]\n"
    "                    [--log-every N] [--eval-every N] [--eval-batches N] [--save-every N] [--keep N]\n"
    "       posemb train --resume --out DIR [--threads N]\n\n"
    "Pretrains with masked (BERT, RoBERTa) or causal (GPT-2, Llama, GPT-NeoX) language modelling on the text\n"
    "files at PATH (a file or a folder), tokenized once and cached in DIR. DIR receives\n"
    "checkpoints (checkpoint-STEP/, HF layout plus optimizer and trainer state), train_log.jsonl,\n"
    "the tokenizer files, and at the end the final model: a Hugging Face model folder.\n"
    "A killed run continues with --resume from its last checkpoint, with the same loss curve.\n"
    "Under mpirun or srun (posemb built with MPI) the ranks share each update's --accum\n"
    "micro-batches (a multiple of the ranks) and train what one process would (docs/mpi.md).\n\n"
    "  --pe SPEC         position embedding (default ape; Llama: rope; GPT-NeoX: rope:frac=0.25, Pythia's;\n"
    "                    with --init, the checkpoint's; see 'posemb pe --list')\n"
    "  --init HF_DIR     start from a checkpoint (config and weights; tensors it lacks are initialised)\n"
    "  --vocab, --merges, --tokenizer   the tokenizer (default: the one in --init's folder)\n"
    "  sizes             defaults: 4 layers, hidden 256, 4 heads, intermediate 4 x hidden,\n"
    "                    Llama: --kv-heads (grouped-query attention) = heads,\n"
    "                    --head-dim (attention heads x head-dim wide) = hidden / heads,\n"
    "                    --seq-len 128, --max-position = seq-len (+2 for RoBERTa)\n"
    "  --pre-ln          BERT, RoBERTa: LayerNorm before each sublayer and after the last layer\n"
    "                    (HF's roberta-prelayernorm; BERT's is posemb's own: transformers would read\n"
    "                    its folder as a post-LN BERT), not after each sublayer\n"
    "  training          defaults: --batch-size 32, --accum 1, --steps 1000, --lr 5e-4,\n"
    "                    --warmup steps/10, --weight-decay 0.01, --dropout 0.1, --seed 0\n"
    "  logging           defaults: --log-every steps/20, --eval-every steps/5, --eval-batches 8,\n"
    "                    --save-every steps/5, --keep 2 (checkpoints kept)\n"
    "  --threads N       threads (default: the CPUs not busy with other processes)\n"
    "  --precision P     fp32 (default) or bf16: the dense layers' products in bfloat16 with float32\n"
    "                    accumulation, weights and optimizer (needs a CPU with AVX512_BF16 or AMX and\n"
    "                    oneDNN; elsewhere the run says so and trains in fp32)\n"
    "  -h, --help        show this help\n";

typedef struct train_cmd {
    const char *model, *pe, *task, *data, *out, *init, *vocab, *merges, *tokenizer, *precision;
    int layers, hidden, heads, kv_heads, head_dim, intermediate, max_position, seq_len, batch, accum, threads, resume,
        eval_batches, keep, pre_ln;
    long steps, warmup, log_every, eval_every, save_every;
    double lr, weight_decay, dropout;
    long seed;
    cJSON *run_json;                /* a resumed run's run.json: its strings are the fields above */
    char found[2][POSEMB_PATH_MAX]; /* tokenizer files found in the --init folder */
} train_cmd;

static int parse_double(cli_args *a, double lo, double hi, double *out)
{
    const char *v = cli_value(a);
    if (!v) return EXIT_USAGE;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return cli_usage_error(a, "%s: '%s' is not a number in [%g, %g]", a->flag, v, lo, hi);
    *out = x;
    return 0;
}

static int parse_long(cli_args *a, long lo, long hi, long *out)
{
    int v, rc = cli_int(a, lo, hi > 2147483647L ? 2147483647L : hi, &v);
    if (!rc) *out = v;
    return rc;
}

static int parse_flag(cli_args *a, train_cmd *c)
{
    struct {
        const char *name;
        const char **dst;
    } strs[] = {{"--model", &c->model},        {"--pe", &c->pe},         {"--task", &c->task},
                {"--data", &c->data},          {"--out", &c->out},       {"--init", &c->init},
                {"--vocab", &c->vocab},        {"--merges", &c->merges}, {"--tokenizer", &c->tokenizer},
                {"--precision", &c->precision}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (cli_is(a, strs[i].name)) return (*strs[i].dst = cli_value(a)) ? 0 : EXIT_USAGE;
    struct {
        const char *name;
        int *dst;
        long lo, hi;
    } ints[] = {{"--layers", &c->layers, 1, 256},
                {"--hidden", &c->hidden, 1, 16384},
                {"--heads", &c->heads, 1, 256},
                {"--kv-heads", &c->kv_heads, 1, 256},
                {"--head-dim", &c->head_dim, 2, 1 << 12},
                {"--intermediate", &c->intermediate, 1, 65536},
                {"--max-position", &c->max_position, 2, 1 << 16},
                {"--seq-len", &c->seq_len, 3, 1 << 16},
                {"--batch-size", &c->batch, 1, 1 << 16},
                {"--accum", &c->accum, 1, 4096},
                {"--threads", &c->threads, 1, 1024},
                {"--eval-batches", &c->eval_batches, 0, 1 << 20},
                {"--keep", &c->keep, 1, 1000}};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (cli_is(a, ints[i].name)) return cli_int(a, ints[i].lo, ints[i].hi, ints[i].dst);
    struct {
        const char *name;
        long *dst;
    } longs[] = {{"--steps", &c->steps},         {"--warmup", &c->warmup},         {"--seed", &c->seed},
                 {"--log-every", &c->log_every}, {"--eval-every", &c->eval_every}, {"--save-every", &c->save_every}};
    for (size_t i = 0; i < sizeof longs / sizeof *longs; i++)
        if (cli_is(a, longs[i].name)) return parse_long(a, i == 0 ? 1 : 0, 2147483647L, longs[i].dst);
    if (cli_is(a, "--lr")) return parse_double(a, 1e-12, 10, &c->lr);
    if (cli_is(a, "--weight-decay")) return parse_double(a, 0, 10, &c->weight_decay);
    if (cli_is(a, "--dropout")) return parse_double(a, 0, 0.99, &c->dropout);
    if (cli_is(a, "--resume")) return cli_switch(a, &c->resume, 1);
    if (cli_is(a, "--pre-ln")) return cli_switch(a, &c->pre_ln, 1);
    return cli_usage_error(a, "unknown flag '%s' (see 'posemb train --help')", a->argv[a->i]);
}

static void defaults(train_cmd *c)
{
    memset(c, 0, sizeof *c);
    c->precision = "fp32";
    c->layers = 4;
    c->hidden = 256;
    c->heads = 4;
    c->seq_len = 128;
    c->batch = 32;
    c->accum = 1;
    c->steps = 1000;
    c->lr = 5e-4;
    c->warmup = -1;
    c->weight_decay = 0.01;
    c->dropout = 0.1;
    c->eval_batches = 8;
    c->keep = 2;
    c->log_every = -1;
    c->eval_every = -1;
    c->save_every = -1;
}

/* 0 to go on, -1 after --help, or the usage exit status. */
static int parse(int argc, char **argv, train_cmd *c)
{
    cli_args a;
    cli_args_init(&a, "train", argc, argv);
    defaults(c);
    const char *arg;
    int rc = 0, given = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        }
        if (!a.flag) return cli_usage_error(&a, "unexpected argument '%s' (see 'posemb train --help')", arg);
        given += !cli_is(&a, "--out") && !cli_is(&a, "--threads") && !cli_is(&a, "--resume");
        rc = parse_flag(&a, c);
    }
    if (rc) return rc;
    if (!c->out) return cli_usage_error(&a, "--out DIR is required");
    if (c->resume)
        return given ? cli_usage_error(&a, "--resume continues a run as it was started: give only --out "
                                           "(and --threads)")
                     : 0;
    if (!c->model || !c->data)
        return cli_usage_error(&a, "--model and --data are required (see 'posemb train --help')");
    if (strcmp(c->model, "bert") && strcmp(c->model, "roberta") && strcmp(c->model, "gpt2") &&
        strcmp(c->model, "llama") && strcmp(c->model, "gpt_neox"))
        return cli_usage_error(&a, "--model %s: one of bert, roberta, gpt2, llama, gpt_neox", c->model);
    int causal = !strcmp(c->model, "gpt2") || !strcmp(c->model, "llama") || !strcmp(c->model, "gpt_neox");
    if (!c->task) c->task = causal ? "clm" : "mlm";
    if (strcmp(c->task, causal ? "clm" : "mlm"))
        return cli_usage_error(&a, "--task %s does not fit --model %s (BERT and RoBERTa: mlm; the decoders: clm)",
                               c->task, c->model);
    /* With --init the PE is the checkpoint's (its config's posemb_pe, or HF's own: RoPE's scaling and all);
     * a default here would build another PE and drop the checkpoint's tensors of its own. */
    if (!c->pe && !c->init)
        c->pe = !strcmp(c->model, "llama") ? "rope" : !strcmp(c->model, "gpt_neox") ? "rope:frac=0.25" : "ape";
    if (c->kv_heads && (strcmp(c->model, "llama") || c->heads % c->kv_heads))
        return cli_usage_error(&a, "--kv-heads %d: Llama only, dividing --heads %d", c->kv_heads, c->heads);
    if (c->head_dim && strcmp(c->model, "llama")) return cli_usage_error(&a, "--head-dim %d: Llama only", c->head_dim);
    if (c->pre_ln && causal) return cli_usage_error(&a, "--pre-ln: BERT and RoBERTa only (the decoders are pre-LN)");
    posemb_precision prec;
    if (!posemb_precision_parse(c->precision, &prec))
        return cli_usage_error(&a, "--precision %s: one of fp32, bf16", c->precision);
    if (c->merges && !c->vocab) return cli_usage_error(&a, "--merges goes with --vocab encoder.json");
    if (!c->head_dim && c->hidden % c->heads)
        return cli_usage_error(&a, "--hidden %d is not a multiple of --heads %d", c->hidden, c->heads);
    return 0;
}

/* ---- run.json: the arguments a run was started with, for --resume ---- */

static cJSON *run_json(const train_cmd *c)
{
    cJSON *r = cJSON_CreateObject();
    const char *strs[][2] = {
        {"model", c->model},        {"pe", c->pe},       {"task", c->task},     {"data", c->data},
        {"init", c->init},          {"vocab", c->vocab}, {"merges", c->merges}, {"tokenizer", c->tokenizer},
        {"precision", c->precision}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (strs[i][1]) cJSON_AddStringToObject(r, strs[i][0], strs[i][1]);
    const struct {
        const char *k;
        double v;
    } nums[] = {{"layers", c->layers},
                {"hidden", c->hidden},
                {"heads", c->heads},
                {"kv_heads", c->kv_heads},
                {"head_dim", c->head_dim},
                {"intermediate", c->intermediate},
                {"max_position", c->max_position},
                {"seq_len", c->seq_len},
                {"batch", c->batch},
                {"accum", c->accum},
                {"steps", (double)c->steps},
                {"warmup", (double)c->warmup},
                {"lr", c->lr},
                {"weight_decay", c->weight_decay},
                {"dropout", c->dropout},
                {"seed", (double)c->seed},
                {"log_every", (double)c->log_every},
                {"eval_every", (double)c->eval_every},
                {"eval_batches", c->eval_batches},
                {"save_every", (double)c->save_every},
                {"keep", c->keep},
                {"pre_ln", c->pre_ln}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) cJSON_AddNumberToObject(r, nums[i].k, nums[i].v);
    return r;
}

static posemb_status save_run(const train_cmd *c, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, c->out, "run.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", c->out);
    cJSON *r = run_json(c);
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    posemb_status st = text ? posemb_write_text(path, text, err) : posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    cJSON_free(text);
    return st;
}

/* Strings from run.json live in c->run_json, which run() frees. */
static posemb_status load_run(train_cmd *c, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, c->out, "run.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", c->out);
    FILE *f = fopen(path, "rb");
    if (!f) return posemb_fail(err, POSEMB_EIO, "%s: no run to resume (cannot open %s)", c->out, path);
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *r = c->run_json = cJSON_Parse(text);
    if (!cJSON_IsObject(r)) return posemb_fail(err, POSEMB_EFORMAT, "%s: not a JSON object", path);
    const char **strs[] = {&c->model, &c->pe,     &c->task,      &c->data,     &c->init,
                           &c->vocab, &c->merges, &c->tokenizer, &c->precision};
    const char *skeys[] = {"model", "pe", "task", "data", "init", "vocab", "merges", "tokenizer", "precision"};
    for (size_t i = 0; i < sizeof skeys / sizeof *skeys; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, skeys[i]);
        *strs[i] = cJSON_IsString(v) ? v->valuestring : NULL;
    }
    int *ints[] = {&c->layers, &c->hidden,       &c->heads, &c->intermediate, &c->max_position, &c->seq_len, &c->batch,
                   &c->accum,  &c->eval_batches, &c->keep,  &c->kv_heads,     &c->head_dim,     &c->pre_ln};
    const char *ikeys[] = {"layers", "hidden",       "heads", "intermediate", "max_position", "seq_len", "batch",
                           "accum",  "eval_batches", "keep",  "kv_heads",     "head_dim",     "pre_ln"};
    /* kv_heads, head_dim, pre_ln: 0 if absent (runs started before they existed) */
    for (size_t i = 0; i < sizeof ikeys / sizeof *ikeys; i++)
        *ints[i] = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, ikeys[i]));
    long *longs[] = {&c->steps, &c->warmup, &c->seed, &c->log_every, &c->eval_every, &c->save_every};
    const char *lkeys[] = {"steps", "warmup", "seed", "log_every", "eval_every", "save_every"};
    for (int i = 0; i < 6; i++) *longs[i] = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, lkeys[i]));
    c->lr = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "lr"));
    c->weight_decay = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "weight_decay"));
    c->dropout = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "dropout"));
    if (!c->model || !c->data || c->steps < 1 || c->batch < 1 || c->seq_len < 3)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: incomplete run description", path);
    posemb_precision prec;
    if (!c->precision) c->precision = "fp32"; /* runs started before --precision existed */
    if (!posemb_precision_parse(c->precision, &prec))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: precision '%s' is not fp32 or bf16", path, c->precision);
    return POSEMB_OK;
}

/* The run's product context (NULL: fp32); bf16 where it cannot run says why
 * and trains in fp32. */
static posemb_matmul *open_matmul(const train_cmd *c)
{
    posemb_precision want = POSEMB_PRECISION_FP32;
    posemb_matmul *mm = NULL;
    posemb_error err;
    posemb_precision_parse(c->precision, &want);
    if (want != POSEMB_PRECISION_FP32 && posemb_matmul_new(&mm, want, &err))
        fprintf(stderr, "posemb train: --precision %s: %s; training in fp32\n", c->precision, err.msg);
    return mm;
}

/* ---- tokenizer ---- */

/* From the flags, else from the --init folder (cli_tok_files_find). */
static posemb_status load_tokenizer(train_cmd *c, posemb_tokenizer **tok, char *desc, size_t cap, posemb_error *err)
{
    cli_tok_files f = {c->tokenizer, c->vocab, c->merges};
    if (!c->vocab && !c->tokenizer) {
        if (!cli_tok_files_find(c->init, c->found, &f))
            return posemb_fail(err, POSEMB_EINVAL, "no tokenizer: give --vocab (and --merges) or --tokenizer");
        c->tokenizer = f.json;
        c->vocab = f.vocab;
        c->merges = f.merges;
    }
    return cli_tok_files_load(&f, tok, desc, cap, err);
}

/* Masked LM wraps sequences in the model's own [CLS]/[SEP] (RoBERTa's <s>,
 * </s>) and masks with [MASK] (<mask>): checked before the corpus is read. */
static posemb_status check_mlm_tokens(const train_cmd *c, const posemb_tokenizer *tok, posemb_error *err)
{
    static const posemb_special need[3] = {POSEMB_SPECIAL_CLS, POSEMB_SPECIAL_SEP, POSEMB_SPECIAL_MASK};
    static const char *const wordpiece[3] = {"[CLS]", "[SEP]", "[MASK]"}, *const bpe[3] = {"<s>", "</s>", "<mask>"};
    const char *const *names = posemb_tokenizer_model(tok) == POSEMB_TOK_BPE ? bpe : wordpiece;
    if (strcmp(c->task, "mlm")) return POSEMB_OK;
    for (int i = 0; i < 3; i++)
        if (posemb_tokenizer_special_id(tok, need[i]) < 0)
            return posemb_fail(
                err, POSEMB_EINVAL, "--model %s: masked LM needs the tokenizer's %s, %s and %s tokens; %s has no %s",
                c->model, names[0], names[1], names[2], c->tokenizer ? c->tokenizer : c->vocab, names[i]);
    return POSEMB_OK;
}

static posemb_status copy_file(const char *from, const char *dir, const char *name, posemb_error *err)
{
    char to[POSEMB_PATH_MAX];
    if (posemb_path_join(to, sizeof to, dir, name)) return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    FILE *in = fopen(from, "rb");
    if (!in) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", from, strerror(errno));
    posemb_atomic_file af;
    posemb_status st = posemb_atomic_open(&af, to, err);
    char buf[1 << 16];
    size_t n;
    while (!st && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, af.f) != n) st = posemb_fail(err, POSEMB_EIO, "%s: write failed", to);
    fclose(in);
    if (!st) st = posemb_atomic_commit(&af, err);
    else posemb_atomic_abort(&af);
    return st;
}

/* The run folder holds the tokenizer under HF's names, so that it is a complete model folder. */
static posemb_status copy_tokenizer(const train_cmd *c, posemb_error *err)
{
    if (c->tokenizer) return copy_file(c->tokenizer, c->out, "tokenizer.json", err);
    if (!c->merges) return copy_file(c->vocab, c->out, "vocab.txt", err);
    posemb_status st = copy_file(c->vocab, c->out, "vocab.json", err);
    return st ? st : copy_file(c->merges, c->out, "merges.txt", err);
}

/* ---- model ---- */

static posemb_status build_model(const train_cmd *c, const posemb_tokenizer *tok, posemb_model **m, posemb_error *err)
{
    posemb_config cfg;
    posemb_arch arch = !strcmp(c->model, "gpt2")       ? POSEMB_GPT2
                       : !strcmp(c->model, "llama")    ? POSEMB_LLAMA
                       : !strcmp(c->model, "gpt_neox") ? POSEMB_NEOX
                       : !strcmp(c->model, "roberta")  ? POSEMB_ROBERTA
                                                       : POSEMB_BERT;
    char path[POSEMB_PATH_MAX];
    posemb_status st = POSEMB_OK;
    if (c->init) {
        if (posemb_path_join(path, sizeof path, c->init, "config.json"))
            return posemb_fail(err, POSEMB_EINVAL, "--init: path too long");
        if ((st = posemb_config_load(&cfg, path, err))) return st;
        if (cfg.arch != arch)
            return posemb_fail(err, POSEMB_EINVAL, "--init %s holds a %s, not --model %s", c->init, cfg.architecture,
                               c->model);
        if (c->pre_ln && !cfg.pre_ln)
            return posemb_fail(err, POSEMB_EINVAL, "--pre-ln: --init %s holds a post-LN %s", c->init, cfg.architecture);
    } else {
        posemb_config_defaults(&cfg, arch);
        cfg.pre_ln = c->pre_ln;
        cfg.layers = c->layers;
        cfg.hidden = c->hidden;
        cfg.heads = c->heads;
        if (arch == POSEMB_LLAMA) cfg.kv_heads = c->kv_heads ? c->kv_heads : c->heads;
        cfg.head_dim = c->head_dim;
        cfg.intermediate = c->intermediate ? c->intermediate : 4 * c->hidden;
        cfg.vocab_size = posemb_tokenizer_vocab_size(tok);
        cfg.type_vocab = arch == POSEMB_BERT ? 2 : arch == POSEMB_ROBERTA ? 1 : 0;
        int32_t pad = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_PAD);
        if (arch != POSEMB_GPT2 && pad >= 0) cfg.pad_token_id = pad;
        cfg.max_position =
            c->max_position ? c->max_position : c->seq_len + (arch == POSEMB_ROBERTA ? cfg.pad_token_id + 1 : 0);
    }
    if (c->pe) snprintf(cfg.pe, sizeof cfg.pe, "%s", c->pe);
    cfg.hidden_dropout = cfg.attn_dropout = (float)c->dropout;
    if (c->seq_len > cfg.max_position)
        return posemb_fail(err, POSEMB_EINVAL, "--seq-len %d exceeds the model's %d positions", c->seq_len,
                           cfg.max_position);
    if (posemb_tokenizer_vocab_size(tok) > cfg.vocab_size)
        return posemb_fail(err, POSEMB_EINVAL, "the tokenizer has %d tokens, the model's vocabulary %d",
                           posemb_tokenizer_vocab_size(tok), cfg.vocab_size);
    int clm = arch == POSEMB_GPT2 || arch == POSEMB_LLAMA || arch == POSEMB_NEOX;
    if ((st = posemb_config_set_head(&cfg, clm ? POSEMB_HEAD_CLM : POSEMB_HEAD_MLM, 0, err))) return st;
    if ((st = posemb_model_create(m, &cfg, err))) return st;
    posemb_model_init(*m, (uint64_t)c->seed);
    if (!c->init) return POSEMB_OK;
    posemb_init_report r;
    if ((st = posemb_model_init_report(*m, c->init, &r, err))) return st;
    fprintf(stderr,
            "posemb train: %s: %d tensors not in the checkpoint were initialised; %d of its tensors not read%s%s%s\n",
            c->init, r.missing, r.unread, r.unread ? " (the first: " : "", r.first_unread, r.unread ? ")" : "");
    return POSEMB_OK;
}

/* ---- the run ---- */

static posemb_train_args train_args(const train_cmd *c)
{
    posemb_train_args a = posemb_train_defaults(c->out, c->steps);
    a.batch = c->batch;
    a.accum = c->accum;
    a.lr = (float)c->lr;
    a.weight_decay = (float)c->weight_decay;
    a.seed = (uint64_t)c->seed;
    a.eval_batches = c->eval_batches;
    a.keep = c->keep;
    if (c->warmup >= 0) a.warmup = c->warmup;
    if (c->log_every >= 0) a.log_every = c->log_every;
    if (c->eval_every >= 0) a.eval_every = c->eval_every;
    if (c->save_every >= 0) a.save_every = c->save_every;
    a.progress = isatty(2);
    return a;
}

/* A fresh run records what --out held, so that a start that fails gives the
 * folder back as it was (od); a resumed one reads its run.json. */
static posemb_status start_or_resume(train_cmd *c, cli_outdir *od, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (c->resume) return load_run(c, err);
    if (posemb_checkpoint_latest(c->out, path, sizeof path))
        return posemb_fail(err, POSEMB_EINVAL,
                           "%s already holds a run; continue it with --resume or choose another --out", c->out);
    posemb_status st = cli_outdir_open(od, c->out, err);
    return st ? st : save_run(c, err);
}

/* The corpus, tokenized once: the leader reads it (or its cache) first,
 * writing the cache when there is none; the other ranks then read the cache,
 * and the leader waits until they have: a run that fails after this (an
 * accum the ranks cannot share) gives its folder back, cache included, and
 * a rank still reading would find it gone. */
static posemb_status load_corpus(const train_cmd *c, const posemb_comm *g, const posemb_tokenizer *tok,
                                 const char *desc, posemb_corpus *corpus, posemb_error *err)
{
    char cache[POSEMB_PATH_MAX];
    if (posemb_path_join(cache, sizeof cache, c->out, "tokens.safetensors"))
        return posemb_fail(err, POSEMB_EINVAL, "path too long");
    posemb_status st = posemb_comm_leader(g) ? posemb_corpus_load(corpus, c->data, tok, desc, cache, err) : POSEMB_OK;
    int ready = 1;
    if (!st && g) st = g->bcast(g->ctx, &ready, sizeof ready, err); /* the others wait for the cache */
    if (!st && !posemb_comm_leader(g)) st = posemb_corpus_load(corpus, c->data, tok, desc, cache, err);
    if (!st && !posemb_comm_leader(g) && !corpus->from_cache) /* the data changed since rank 0 read it */
        st = posemb_fail(err, POSEMB_EIO, "rank %d: %s differs from the cache rank 0 wrote in %s", g->rank, c->data,
                         cache);
    float done = 1.0f; /* a sum, not a bcast: bcast does not hold rank 0 until the others have called it */
    if (!st && g) st = g->sum_f32(g->ctx, &done, 1, err);
    return st;
}

/* Rank 0 starts or resumes the run folder; the others read a resumed run's settings. */
static posemb_status open_run(train_cmd *c, const posemb_comm *g, cli_outdir *od, posemb_error *err)
{
    if (posemb_comm_leader(g)) return start_or_resume(c, od, err);
    return c->resume ? load_run(c, err) : POSEMB_OK;
}

static posemb_status run(train_cmd *c, posemb_error *err)
{
    const posemb_comm *g = cli_mpi_comm();
    int leader = posemb_comm_leader(g);
    posemb_tokenizer *tok = NULL;
    posemb_model *m = NULL;
    posemb_matmul *mm = NULL;
    posemb_corpus corpus = {0};
    posemb_lm_data d = {0};
    posemb_train_result res = {0};
    char desc[2 * POSEMB_PATH_MAX + 2]; /* one or two tokenizer paths */
    cli_outdir od = {0};
    posemb_train_args a = train_args(c);
    a.comm = g;
    /* a fresh run the ranks cannot share is refused before its folder exists; a resumed one by posemb_train */
    posemb_status st = c->resume ? POSEMB_OK : posemb_train_check_group(&a, err);
    if (!st) st = open_run(c, g, &od, err);
    if (!st) mm = open_matmul(c);
    if (!st) st = load_tokenizer(c, &tok, desc, sizeof desc, err);
    if (!st) st = check_mlm_tokens(c, tok, err);
    if (!st && leader) st = copy_tokenizer(c, err); /* on --resume too: a kill may have come before the copy */
    if (!st) st = build_model(c, tok, &m, err);
    if (!st) posemb_model_set_matmul(m, mm);
    if (!st) st = load_corpus(c, g, tok, desc, &corpus, err);
    if (!st) {
        int mlm = !strcmp(c->task, "mlm");
        char ranks[32] = "";
        if (g) snprintf(ranks, sizeof ranks, " on each of %d ranks", g->size);
        if (leader)
            fprintf(stderr,
                    "posemb train: %s, %ld tokens from %d files%s; %s with %s, %zu parameters, %s products, %d "
                    "threads%s\n",
                    c->data, corpus.n, corpus.n_files, corpus.from_cache ? " (cached)" : "",
                    posemb_model_config(m)->architecture, posemb_pe_spec(posemb_model_pe(m)), posemb_model_n_floats(m),
                    posemb_precision_name(posemb_matmul_precision(mm)), posemb_threads_max(), ranks);
        posemb_lm_data_opts o = {.T = c->seq_len,
                                 .mlm = mlm,
                                 .cls = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_CLS),
                                 .sep = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_SEP),
                                 .mask_id = posemb_tokenizer_special_id(tok, POSEMB_SPECIAL_MASK),
                                 .vocab = posemb_model_config(m)->vocab_size,
                                 .valid_frac = 0.05,
                                 .seed = (uint64_t)c->seed};
        st = posemb_lm_data_init(&d, corpus.tokens, corpus.n, &o, err);
    }
    a = train_args(c); /* again: a resumed run's settings come from its run.json */
    a.comm = g;
    a.progress &= leader;
    if (!st) st = posemb_train(m, &d, &a, c->resume, &res, err);
    if (!st && leader && res.resumed_from && res.resumed_from == res.step)
        fprintf(stderr, "posemb train: the run in %s finished at step %ld; nothing to do\n", c->out, res.step);
    else if (!st && leader)
        fprintf(stderr, "posemb train: %ld steps%s; eval loss %.4f, accuracy %.4f; %.0f tokens/s; model in %s\n",
                res.step, res.resumed_from ? " (resumed)" : "", res.eval_loss, res.eval_accuracy, res.tokens_per_s,
                c->out);
    if (st && !c->resume && res.step == 0 && leader) cli_outdir_restore(&od); /* nothing trained: nothing to keep */
    else cli_outdir_keep(&od);
    posemb_train_result_free(&res);
    posemb_lm_data_free(&d);
    posemb_corpus_free(&corpus);
    posemb_model_free(m);
    posemb_matmul_free(mm);
    posemb_tokenizer_free(tok);
    cJSON_Delete(c->run_json);
    c->run_json = NULL;
    return st;
}

int cmd_train(int argc, char **argv)
{
    train_cmd c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? 0 : rc;
    cli_say_threads();
    if (c.threads) posemb_threads_set(c.threads); /* else main's default */
    posemb_error err;
    return run(&c, &err) ? cli_report("train", &err) : 0;
}
