/* What the other layers, the CLI and the tests call of posemb/probes.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_ANALYSIS_PROBES_INTERNAL_H
#define POSEMB_ANALYSIS_PROBES_INTERNAL_H

#include "posemb/probes.h"

/* posemb_order_cost of the model folder dir (config.json + model.safetensors:
 * a pretrained model or a training checkpoint) on the I32 tensor "tokens" of
 * the safetensors file cache (a study's RUN/cache/wikitext-2.safetensors).
 * Special ids of -1 come from dir's tokenizer files (tokenizer.json,
 * vocab.txt, or RoBERTa's vocab.json + merges.txt), or are BERT's 101, 102,
 * 103 when a BERT folder has none. EIO for an unreadable file; EFORMAT
 * naming the file for a cache without "tokens" (or not I32), shorter than
 * one window or with an id outside the model's vocabulary, a model that is
 * no masked-LM model, a tokenizer without [CLS], [SEP] or [MASK] (or a
 * RoBERTa folder with no tokenizer); else as posemb_order_cost. */
posemb_status posemb_order_cost_dir(const char *dir, const char *cache, const posemb_order_opts *o,
                                    posemb_order_result *out, posemb_error *err);

#endif
