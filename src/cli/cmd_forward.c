/* posemb forward: run a model on given inputs and write what HF's
 * output_hidden_states / output_attentions give. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "formats/inputs.h"
#include "posemb/model.h"
#include "posemb/safetensors.h"
#include "posemb/threads.h"

static const char USAGE[] =
    "usage: posemb forward MODEL_DIR --inputs inputs.json --out out.safetensors [--threads N]\n\n"
    "Runs the encoder or decoder in MODEL_DIR (config.json + model.safetensors, Hugging Face\n"
    "layout) on input_ids / attention_mask / token_type_ids / position_ids from inputs.json\n"
    "(position_ids [B][T], or [3][B][T]: M-RoPE's temporal, height and width ids for Qwen2-VL's\n"
    "and Qwen3-VL's text decoders; any other key is an error; keys starting with '_' are comments)\n"
    "and writes last_hidden_state [B, T, D], hidden_states.N [B, T, D] (N = 0..layers),\n"
    "attentions.N [B, H, T, T], for BERT/RoBERTa pooler_output [B, D] and for a language-model head (GPT-2,\n"
    "Llama, *ForMaskedLM) logits [B, T, V], with Hugging Face's meaning.\n\n"
    "  --threads N     threads (default: the CPUs not busy with other processes)\n";

static posemb_status write_outputs(posemb_model *m, const posemb_inputs *in, const char *path, posemb_error *err)
{
    const posemb_config *c = posemb_model_config(m);
    int64_t hs[3] = {in->B, in->T, c->hidden}, as[4] = {in->B, c->heads, in->T, in->T}, ps[2] = {in->B, c->hidden};
    char names[2 * 1024 + 2][32];
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    posemb_status st = posemb_st_writer_add_f32(&w, "last_hidden_state", 3, hs, posemb_model_last_hidden(m), err);
    for (int i = 0; !st && i <= c->layers; i++) {
        snprintf(names[i], sizeof names[i], "hidden_states.%d", i);
        st = posemb_st_writer_add_f32(&w, names[i], 3, hs, posemb_model_hidden(m, i), err);
    }
    for (int l = 0; !st && l < c->layers; l++) {
        char *name = names[c->layers + 1 + l];
        snprintf(name, sizeof names[0], "attentions.%d", l);
        st = posemb_st_writer_add_f32(&w, name, 4, as, posemb_model_attention(m, l), err);
    }
    const float *pooled = st ? NULL : posemb_model_pooled(m);
    if (pooled) st = posemb_st_writer_add_f32(&w, "pooler_output", 2, ps, pooled, err);
    float *logits = NULL; /* a language-model head's: [B, T, V] */
    if (!st && (c->head == POSEMB_HEAD_CLM || c->head == POSEMB_HEAD_MLM)) {
        int64_t ls[3] = {in->B, in->T, c->vocab_size};
        if (!(logits = malloc((size_t)in->B * in->T * c->vocab_size * sizeof *logits)))
            st = posemb_fail(err, POSEMB_ENOMEM, "forward: no memory for the logits");
        if (!st) st = posemb_model_lm_logits(m, logits, err);
        if (!st) st = posemb_st_writer_add_f32(&w, "logits", 3, ls, logits, err);
    }
    if (!st) st = posemb_st_writer_meta(&w, "posemb_pe", posemb_pe_spec(posemb_model_pe(m)), err);
    if (!st) st = posemb_st_write(&w, path, err);
    posemb_st_writer_free(&w);
    free(logits);
    return st;
}

int cmd_forward(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "forward", argc, argv);
    const char *dir = NULL, *inputs = NULL, *out = NULL, *arg;
    int threads = 0, rc = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (cli_is(&a, "--help") || !strcmp(arg, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!a.flag && cli_positional(&a, arg)) return EXIT_USAGE;
        else if (!a.flag && !dir) dir = arg;
        else if (cli_is(&a, "--inputs")) rc = (inputs = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--out")) rc = (out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--threads")) rc = cli_int(&a, 1, 1024, &threads);
        else return cli_usage_error(&a, "unexpected argument '%s' (see 'posemb forward --help')", arg);
    }
    if (rc) return rc;
    if (!dir || !inputs || !out) return cli_usage_error(&a, "MODEL_DIR, --inputs and --out are required");
    cli_say_threads();
    if (threads) posemb_threads_set(threads); /* else main's default */
    posemb_error err;
    posemb_model *m = NULL;
    posemb_inputs in;
    memset(&in, 0, sizeof in);
    posemb_status st = posemb_model_load(&m, dir, &err);
    if (!st) st = posemb_inputs_load(&in, inputs, &err);
    if (!st && posemb_model_config(m)->layers > 1024) st = posemb_fail(&err, POSEMB_ERANGE, "more than 1024 layers");
    posemb_batch b = {.B = in.B,
                      .T = in.T,
                      .ids = in.ids,
                      .types = in.types,
                      .mask = in.mask,
                      .positions = in.positions,
                      .axes = in.axes};
    if (!st) st = posemb_model_forward(m, &b, &err);
    if (!st) st = write_outputs(m, &in, out, &err);
    posemb_inputs_free(&in);
    posemb_model_free(m);
    return st ? cli_report("forward", &err) : 0;
}
