/* What the other layers, the CLI and the tests call of posemb/precision.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_NN_PRECISION_INTERNAL_H
#define POSEMB_NN_PRECISION_INTERNAL_H

#include "posemb/precision.h"

/* The context's precision; fp32 for NULL. */
posemb_precision posemb_matmul_precision(const posemb_matmul *mm);
/* 1 when bf16 products can run here; else 0 with the reason in why. */
int posemb_bf16_available(char *why, size_t cap);

#endif
