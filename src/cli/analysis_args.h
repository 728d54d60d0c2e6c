/* Flags shared by analyze, probe and compare: how to read a source and the
 * analysis options. */
#ifndef POSEMB_CLI_ANALYSIS_ARGS_H
#define POSEMB_CLI_ANALYSIS_ARGS_H

#include "args.h"
#include "posemb/analyze.h"
#include "posemb/corpus.h"

#define ANALYSIS_FLAGS_HELP                                                                                            \
    "  --tensor NAME   the 2-D tensor of a .safetensors SOURCE to read as a table of positions\n"                      \
    "  --len N         positions to analyse (default: the table's rows, a model's max_position,\n"                     \
    "                  or 512 for a spec; a model whose PE has no table takes any N, beyond\n"                         \
    "                  its training length; one with a table stops at its table's end)\n"                              \
    "  --dim D, --heads H   model size for a built-in spec (default 768; H: 12, or the most below 12 dividing D)\n"    \
    "  --causal        a built-in spec as a decoder's (path, stickbreaking, cope, fox, xpos need it)\n"                \
    "  -K K, --K K     indicator band 1 <= |i-j| <= K (default 32)\n"                                                  \
    "  --words N       identical-word probing: words (default 300)\n"                                                  \
    "  --pairs N       relative-order probe: pairs (default 512)\n"                                                    \
    "  --seed S        seed of words, shuffles, pairs and a learned spec's initialisation (default 0)\n"               \
    "  --ridge X       regression ridge (default 0: minimum-norm least squares)\n"                                     \
    "  --threads N     threads (default: the CPUs not busy with other processes)\n"

/* 1 if the current flag was one of the shared ones (parsed into so/ao, *rc set), else 0. */
int analysis_flag(cli_args *a, posemb_source_opts *so, posemb_analyze_opts *ao, int *rc);

/* --text PATH of analyze and compare: the text at path tokenized by the model
 * folder dir's tokenizer into text, and ao's attention analyses pointed at
 * it. EINVAL when dir is no model folder or has no tokenizer, else as
 * posemb_corpus_load. */
posemb_status analysis_text_load(const char *dir, const char *path, posemb_corpus *text, posemb_analyze_opts *ao,
                                 posemb_error *err);

/* 1 when model folders a and b hold the same tokenizer files, byte for byte. */
int analysis_same_tokenizer(const char *a, const char *b);

#endif
