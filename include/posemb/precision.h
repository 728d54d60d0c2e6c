/* Matrix-product precision: fp32, or bf16 products for the dense layers
 * and, where that is faster, the attention's (inputs rounded to bfloat16,
 * float32 accumulation and results) through oneDNN on CPUs with AVX512_BF16
 * (or AMX). Weights, gradients, activations
 * and the optimizer stay float32 in either mode: bf16 is a property of the
 * products only. The precision lives in a posemb_matmul context the caller
 * owns and hands to the model (posemb_model_set_matmul) or to the products
 * (posemb_nn_gemm); no context (NULL) means fp32 through OpenBLAS. */
#ifndef POSEMB_PRECISION_H
#define POSEMB_PRECISION_H

#include "posemb/api.h"
#include "posemb/error.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posemb_precision { POSEMB_PRECISION_FP32 = 0, POSEMB_PRECISION_BF16 = 1 } posemb_precision;

/* A product context: its precision and, for bf16, oneDNN's engines (one
 * for the dense layers, one per attention thread), their primitives cached
 * per shape and the bf16 conversion buffers. */
typedef struct posemb_matmul posemb_matmul;

/* Creates a context of precision p in *out, which the caller owns and frees
 * with posemb_matmul_free; it serves one thread at a time. Asking for bf16
 * where it cannot run fast (a CPU without bf16 instructions, a build without
 * oneDNN) fails with POSEMB_ERANGE and the reason, *out NULL; out of memory,
 * POSEMB_ENOMEM. */
POSEMB_API posemb_status posemb_matmul_new(posemb_matmul **out, posemb_precision p, posemb_error *err);
POSEMB_API void posemb_matmul_free(posemb_matmul *mm);

/* "fp32" / "bf16" (static strings). Parse returns 1 and sets *out, or 0
 * (*out untouched) on an unknown name. */
POSEMB_API const char *posemb_precision_name(posemb_precision p);
POSEMB_API int posemb_precision_parse(const char *name, posemb_precision *out);

#ifdef __cplusplus
}
#endif
#endif
