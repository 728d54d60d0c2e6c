/* What the other layers, the CLI and the tests call of posemb/safetensors.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_IO_SAFETENSORS_INTERNAL_H
#define POSEMB_IO_SAFETENSORS_INTERNAL_H

#include "posemb/safetensors.h"

/* Bytes per element. */
size_t posemb_dtype_size(posemb_dtype dt);
/* Parses a dtype name; returns 0 on success, -1 if unknown. */
int posemb_dtype_parse(const char *name, posemb_dtype *out);
/* 1 for F64/F32/F16/BF16. */
int posemb_dtype_is_float(posemb_dtype dt);
/* Convenience: finds name, checks it is a float entry of the expected shape
 * (ndim, shape), and reads it. A missing tensor or a mismatch is EFORMAT
 * (naming the tensor, the shape found and the shape expected); read failures
 * as posemb_st_read_raw. */
posemb_status posemb_st_load_f32(const posemb_st_file *f, const char *name, int ndim, const int64_t *shape, float *dst,
                                 posemb_error *err);
/* float16 / bfloat16 conversions (round to nearest even on the way down). */
float posemb_f16_to_f32(uint16_t h);
uint16_t posemb_f32_to_f16(float f);
float posemb_bf16_to_f32(uint16_t h);
uint16_t posemb_f32_to_bf16(float f);

#endif
