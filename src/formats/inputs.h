/* Model inputs from JSON, in the layout of Hugging Face's tokenizer output:
 * {"input_ids": [[...], ...], "attention_mask": [[...]], "token_type_ids": [[...]] | null,
 * "position_ids": [[...]] | null} (all but input_ids optional; keys starting with '_' are
 * comments, any other key is an error). Every row has the same length. */
#ifndef POSEMB_INPUTS_H
#define POSEMB_INPUTS_H

#include "posemb/api.h"

#include <stdint.h>

#include "posemb/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct posemb_inputs {
    int B, T;
    int32_t *ids;       /* [B, T] */
    int32_t *types;     /* [B, T] or NULL */
    float *mask;        /* [B, T] (all 1 when absent) */
    int32_t *positions; /* [B, T] HF's position_ids, or NULL (posemb_batch.positions) */
    int32_t *axes;      /* [3, B, T] HF's 3D position_ids (M-RoPE), or NULL (posemb_batch.axes) */
} posemb_inputs;

/* Reads an inputs.json ({"input_ids": [[...]], optional "token_type_ids",
 * "attention_mask", "position_ids" [B][T] or [3][B][T]}) into in, whose arrays the caller frees
 * with posemb_inputs_free; EIO, EFORMAT (ragged rows, non-integers, an
 * unknown key: named with the file), ENOMEM leave nothing to free. */
posemb_status posemb_inputs_load(posemb_inputs *in, const char *path, posemb_error *err);
void posemb_inputs_free(posemb_inputs *in);

#ifdef __cplusplus
}
#endif
#endif
