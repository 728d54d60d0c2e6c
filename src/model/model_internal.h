/* What the other layers, the CLI and the tests call of posemb/model.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_MODEL_MODEL_INTERNAL_H
#define POSEMB_MODEL_MODEL_INTERNAL_H

#include "posemb/model.h"

/* Layer l's sliding window: sliding_window where its bit is set, else 0 (full attention). */
int posemb_config_window(const posemb_config *c, int l);
/* Layer l's attention chunk: attention_chunk where its bit is set, else 0 (Llama 4). */
int posemb_config_chunk(const posemb_config *c, int l);
/* Width of one attention head: head_dim, or hidden / heads. Attention is heads x this wide. */
int posemb_config_head_dim(const posemb_config *c);
posemb_matmul *posemb_model_matmul(const posemb_model *m);
/* Reads the tensors of an open model from a safetensors file; EIO or
 * EFORMAT (a missing or misshapen tensor, named) leave the weights partly
 * read. */
posemb_status posemb_model_load_weights(posemb_model *m, const char *path, posemb_error *err);
/* What a lenient read of a checkpoint (posemb_model_init_from) left out. */
typedef struct {
    int missing;            /* the model's parameters the file lacks: they keep their values */
    int unread;             /* the file's tensors the model does not read (buffers without parameters aside) */
    char first_unread[192]; /* the first of them in the file's order, "" when none */
} posemb_init_report;
/* posemb_model_init_from, and what it left out in *r (zeroed first); fails as it does. */
posemb_status posemb_model_init_report(posemb_model *m, const char *dir, posemb_init_report *r, posemb_error *err);
/* A training run keeps its checkpoints as RUN/checkpoint-STEP folders, and a
 * checkpoint is complete once its trainer_state.json exists (written last).
 * Sets *steps to a malloc'ed array (the caller frees it) of the steps of
 * run's checkpoints, complete ones only when complete_only, ascending, and
 * returns how many; returns -1 (errno set, *steps NULL) when run cannot be
 * read or memory runs out. */
int posemb_checkpoint_steps(const char *run, int complete_only, long **steps);
/* Writes "RUN/checkpoint-STEP" into dst; 0, or -1 when it does not fit in cap. */
int posemb_checkpoint_dir(char *dst, size_t cap, const char *run, long step);
/* Layer l's query, key and value rows of the last forward pass, [B, T, *ld]:
 * H query heads of width d (posemb_config_head_dim), then the key heads
 * (kv_heads for a Llama, else H), then the value heads; q and k as a q/k
 * hook left them (RoPE: rotated, which keeps each rotation pair's norm).
 * NULL as posemb_model_attention. */
const float *posemb_model_qkv(const posemb_model *m, int l, int *ld);
/* Layer 0's attention logits before masks and softmax, with every
 * positional term (APE through q and k, the q/k rotation, relative terms,
 * biases): s = q.k / sqrt(d) + ..., out [B, H, T, T]. Runs the embeddings
 * (and their LayerNorm: BERT's, or GPT-2's ln_1) and layer 0's projections
 * only, in eval mode. Fails as posemb_model_forward. */
posemb_status posemb_model_layer0_logits(posemb_model *m, const posemb_batch *b, float *out, posemb_error *err);
/* The parameters of layer l (q, k, v adjacent in qkv_w), and the layout of
 * its weights: views into the model's parameter block; NULL for l out of
 * range. */
const posemb_layer_params *posemb_model_layer(const posemb_model *m, int l, posemb_nn_wlayout *layout);
/* The checkpoint in dir (every tensor of the model from it) built with cfg
 * to take context L: max_position raised to L when the PE has no table of
 * positions (then *context = L), else as cfg says (*context = the lesser of
 * L and max_position). EINVAL when the checkpoint lacks tensors the model
 * needs, the errors of posemb_model_create and posemb_model_init_from. */
posemb_status posemb_lm_load_at(const char *dir, const posemb_config *cfg, int L, posemb_model **m, int *context,
                                posemb_error *err);

/* Sets Hugging Face config.json keys over c, as if c were saved, the keys
 * written into its config.json and the file loaded again (json: the text of
 * a JSON object, e.g. {"tie_word_embeddings": true}); what config.json does
 * not hold (Llama's hidden dropout) is kept. EINVAL naming `what` when the
 * text is not an object, a value is refused, a key does not read back as
 * written (one c's architecture does not take, or a value in another form
 * than posemb writes it), or c's PE has factors= (ENOMEM); c is
 * unchanged then. */
posemb_status posemb_config_override(posemb_config *c, const char *json, const char *what, posemb_error *err);

/* Checks sizes are positive and consistent and the PE spec (by building the
 * PE for these sizes: an option its family does not have, a value out of
 * range); EINVAL naming the bad field or the PE and its option (a factors
 * file: EIO, EFORMAT; ENOMEM). posemb_config_load checks what it reads. */
posemb_status posemb_config_check(const posemb_config *c, posemb_error *err);

#endif
