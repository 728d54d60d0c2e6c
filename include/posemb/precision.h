/* Matrix-product precision, process-wide (as PyTorch's
 * torch.set_float32_matmul_precision): fp32, or bf16 products for the dense
 * layers (inputs rounded to bfloat16, float32 accumulation and results)
 * through oneDNN on CPUs with AVX512_BF16 (or AMX). Weights, gradients,
 * activations and the optimizer stay float32 in either mode: bf16 is a
 * property of the products only. */
#ifndef POSEMB_PRECISION_H
#define POSEMB_PRECISION_H

#include "posemb/api.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posemb_precision { POSEMB_PRECISION_FP32 = 0, POSEMB_PRECISION_BF16 = 1 } posemb_precision;

/* Sets the precision and returns the one now in force. Asking for bf16 where
 * it cannot run fast (a CPU without bf16 instructions, a build without
 * oneDNN) keeps fp32 and writes the reason into why (cap bytes; may be NULL). */
POSEMB_API posemb_precision posemb_set_matmul_precision(posemb_precision p, char *why, size_t cap);
POSEMB_API posemb_precision posemb_get_matmul_precision(void);

/* 1 when bf16 products can run here; else 0 with the reason in why. */
POSEMB_API int posemb_bf16_available(char *why, size_t cap);

/* "fp32" / "bf16". Parse returns 0 on an unknown name. */
POSEMB_API const char *posemb_precision_name(posemb_precision p);
POSEMB_API int posemb_precision_parse(const char *name, posemb_precision *out);

#ifdef __cplusplus
}
#endif
#endif
