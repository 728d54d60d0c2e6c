/* The engine's layer conventions that models expose: weight layouts and the
 * GELU kinds. The kernels themselves (forward/backward pairs, llm.c style)
 * are internal: src/nn/nn_internal.h. */
#ifndef POSEMB_NN_H
#define POSEMB_NN_H

#include "posemb/api.h"
#include "posemb/precision.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Weight layouts: Hugging Face nn.Linear stores W [out, in] (y = x W^T + b);
 * GPT-2's Conv1D stores W [in, out] (y = x W + b). */
typedef enum posemb_nn_wlayout { POSEMB_NN_W_OUT_IN = 0, POSEMB_NN_W_IN_OUT = 1 } posemb_nn_wlayout;

/* GELU, exact erf form (BERT "gelu") or tanh approximation (GPT-2 "gelu_new"). y, x: [n]. */
typedef enum posemb_nn_gelu_kind { POSEMB_NN_GELU_ERF = 0, POSEMB_NN_GELU_TANH = 1 } posemb_nn_gelu_kind;

#ifdef __cplusplus
}
#endif
#endif
