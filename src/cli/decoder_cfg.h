/* A decoder's model folder read for evaluation (perplexity, passkey). */
#ifndef POSEMB_CLI_DECODER_CFG_H
#define POSEMB_CLI_DECODER_CFG_H

#include "posemb/model.h"

/* dir/config.json of a GPT-2 or Llama, with its causal-LM head and, when pe
 * is not NULL, that PE in place of its own (applied at evaluation; the
 * loader refuses one whose tensors the checkpoint lacks). EINVAL naming dir
 * for a path too long or a model that is not a decoder; posemb_config_load's
 * errors. */
posemb_status cli_decoder_config(const char *dir, const char *pe, posemb_config *cfg, posemb_error *err);

#endif
