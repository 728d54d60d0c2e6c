/* safetensors read and write (the Hugging Face checkpoint format).
 *
 * Layout: an 8-byte little-endian u64 N, N bytes of JSON header, then the
 * data section. Each header entry is {"dtype", "shape", "data_offsets":
 * [begin, end]} with offsets relative to the data section; the optional
 * "__metadata__" entry maps strings to strings.
 *
 * The reader validates everything before any tensor is read and never trusts
 * the file: header length against file size, well-formed JSON, known dtype,
 * shape product * element size == byte span without integer overflow,
 * offsets inside the data section, no two tensors overlapping. Tensors are
 * read lazily with pread, so a large checkpoint is never held twice. */
#ifndef POSEMB_SAFETENSORS_H
#define POSEMB_SAFETENSORS_H

#include "posemb/api.h"

#include <stddef.h>
#include <stdint.h>

#include "posemb/error.h"
#include "posemb/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posemb_dtype {
    POSEMB_F64,
    POSEMB_F32,
    POSEMB_F16,
    POSEMB_BF16,
    POSEMB_I64,
    POSEMB_I32,
    POSEMB_I16,
    POSEMB_I8,
    POSEMB_U8,
    POSEMB_BOOL,
} posemb_dtype;

/* "F32", "BF16", ... as spelled in safetensors headers (static strings; "?"
 * for a value outside the enum). */
POSEMB_API const char *posemb_dtype_name(posemb_dtype dt);

typedef struct posemb_st_entry {
    char *name;
    posemb_dtype dtype;
    int ndim; /* 0 for a scalar (shape []) */
    int64_t shape[POSEMB_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end; /* byte offsets within the data section */
} posemb_st_entry;

typedef struct posemb_st_file {
    char *path;
    int fd;
    uint64_t file_size;
    uint64_t header_len; /* N */
    uint64_t data_start; /* 8 + N */
    int n_entries;
    posemb_st_entry *entries; /* in header order */
    int n_meta;
    char **meta_keys, **meta_values;
} posemb_st_file;

/* Opens and validates path; close it with posemb_st_close. On failure (EIO,
 * EFORMAT, ENOMEM) f holds nothing to close and err says "PATH: problem". */
POSEMB_API posemb_status posemb_st_open(posemb_st_file *f, const char *path, posemb_error *err);
POSEMB_API void posemb_st_close(posemb_st_file *f);

/* The entry called name, or NULL. */
POSEMB_API const posemb_st_entry *posemb_st_find(const posemb_st_file *f, const char *name);
/* The metadata value for key, or NULL. Both point into f, valid until
 * posemb_st_close. */
POSEMB_API const char *posemb_st_meta(const posemb_st_file *f, const char *key);

/* Reads a floating-point entry (F64, F32, F16, BF16) into dst as float32,
 * numel values. Integer and bool entries are refused with EFORMAT; read
 * failures as posemb_st_read_raw. */
POSEMB_API posemb_status posemb_st_read_f32(const posemb_st_file *f, const posemb_st_entry *e, float *dst,
                                            posemb_error *err);
/* Reads an integer or bool entry into dst as int64, numel values. Float
 * entries are refused with EFORMAT; read failures as posemb_st_read_raw. */
POSEMB_API posemb_status posemb_st_read_i64(const posemb_st_file *f, const posemb_st_entry *e, int64_t *dst,
                                            posemb_error *err);
/* Reads the raw little-endian bytes (end - begin of them) into dst; EIO when
 * they cannot be read, EFORMAT when the file ends first. */
POSEMB_API posemb_status posemb_st_read_raw(const posemb_st_file *f, const posemb_st_entry *e, void *dst,
                                            posemb_error *err);

/* Writer: collect tensors (the data is referenced, not copied, and must stay
 * valid until posemb_st_write returns), then write. Tensors are stored in
 * order of decreasing element size, then name, so each is aligned to its
 * element size; the header is padded with spaces to a multiple of 8. The file
 * is written to "PATH.tmp.PID" and renamed into place when complete. */
typedef struct posemb_st_writer {
    int n, cap;
    struct posemb_st_wtensor *tensors;
    int n_meta, cap_meta;
    char **meta_keys, **meta_values;
} posemb_st_writer;

/* An empty writer; posemb_st_writer_free releases what it copied (names,
 * metadata), whether or not the file was written. */
POSEMB_API void posemb_st_writer_init(posemb_st_writer *w);
/* Adds a tensor of dtype with the given shape; data holds numel elements in
 * that dtype, little-endian. Duplicate names are refused. EINVAL for that, a
 * name that is reserved or not UTF-8, a bad dtype or shape, or NULL data;
 * ERANGE for a tensor too large; ENOMEM. The name is copied; on failure w is
 * unchanged. */
POSEMB_API posemb_status posemb_st_writer_add(posemb_st_writer *w, const char *name, posemb_dtype dtype, int ndim,
                                              const int64_t *shape, const void *data, posemb_error *err);
/* Adds a float32 tensor (fails as posemb_st_writer_add). A metadata pair
 * (EINVAL for a duplicate key). posemb_st_write writes the file whole or not
 * at all (EIO with the path, ENOMEM). */
POSEMB_API posemb_status posemb_st_writer_add_f32(posemb_st_writer *w, const char *name, int ndim, const int64_t *shape,
                                                  const float *data, posemb_error *err);
POSEMB_API posemb_status posemb_st_writer_meta(posemb_st_writer *w, const char *key, const char *value,
                                               posemb_error *err);
POSEMB_API posemb_status posemb_st_write(const posemb_st_writer *w, const char *path, posemb_error *err);
POSEMB_API void posemb_st_writer_free(posemb_st_writer *w);

#ifdef __cplusplus
}
#endif
#endif
