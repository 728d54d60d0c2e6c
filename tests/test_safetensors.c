/* safetensors reader and writer, f16/bf16 conversions, and `posemb inspect`. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posemb/safetensors.h"
#include "formats/safetensors_internal.h"
#include "core/error_internal.h"

/* ------------------------------------------------------------ helpers */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Writes an 8-byte little-endian length, hdr_len header bytes, then
 * data_len zero bytes. */
static void write_st_bytes(const char *path, uint64_t len_prefix, const char *hdr, size_t hdr_len, size_t data_len)
{
    size_t n = 8 + hdr_len + data_len;
    unsigned char *buf = calloc(n, 1);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len_prefix >> (8 * i));
    memcpy(buf + 8, hdr, hdr_len);
    assert_int_equal(tu_write_file(path, buf, n), 0);
    free(buf);
}

static int dir_has_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) found |= strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return found;
}

/* -------------------------------------------------------- round trip */

typedef struct sample {
    const char *name;
    posemb_dtype dtype;
    int ndim;
    int64_t shape[3];
} sample;

static const double F64_DATA[4] = {1.5, -2.25, 1e300, -0.0};
static const float F32_DATA[3] = {1.0f, -2.5f, 3.25f};
static const float F16_VALUES[5] = {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f};
static const float BF16_VALUES[3] = {1.0f, -3.0f, 0.15625f};
static const int64_t I64_DATA[2] = {INT64_MIN, INT64_MAX};
static const int32_t I32_DATA[2] = {-7, 2147483647};
static const int16_t I16_DATA[2] = {-32768, 12345};
static const int8_t I8_DATA[3] = {-128, 0, 127};
static const uint8_t U8_DATA[2] = {0, 255};
static const uint8_t BOOL_DATA[3] = {1, 0, 1};
static const float SCALAR_DATA[1] = {42.0f};

/* The expected on-disk order: decreasing element size, then name. */
static const char *const DISK_ORDER[] = {"f64",  "i64", "f32", "i32",  "scalar", "zero_size",
                                         "bf16", "f16", "i16", "bool", "i8",     "u8"};
#define N_SAMPLES (int)(sizeof DISK_ORDER / sizeof DISK_ORDER[0])

/* Adds every sample in a scrambled order so that the writer must sort. */
static void add_samples(posemb_st_writer *w, const uint16_t *f16, const uint16_t *bf16)
{
    posemb_error err;
    const int64_t s2[] = {2}, s3[] = {3}, s5[] = {5}, s22[] = {2, 2}, s03[] = {0, 3};
    assert_int_equal(posemb_st_writer_add(w, "u8", POSEMB_U8, 1, s2, U8_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "f16", POSEMB_F16, 1, s5, f16, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "i64", POSEMB_I64, 1, s2, I64_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "bool", POSEMB_BOOL, 1, s3, BOOL_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add_f32(w, "scalar", 0, NULL, SCALAR_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "i16", POSEMB_I16, 1, s2, I16_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "f64", POSEMB_F64, 2, s22, F64_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "i8", POSEMB_I8, 1, s3, I8_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add_f32(w, "zero_size", 2, s03, NULL, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "bf16", POSEMB_BF16, 1, s3, bf16, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add(w, "i32", POSEMB_I32, 1, s2, I32_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add_f32(w, "f32", 1, s3, F32_DATA, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_meta(w, "format", "pt", &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_meta(w, "note", "round trip", &err), POSEMB_OK);
}

/* Writes the samples to path. */
static void write_samples(const char *path)
{
    uint16_t f16[5], bf16[3];
    for (int i = 0; i < 5; i++) f16[i] = posemb_f32_to_f16(F16_VALUES[i]);
    for (int i = 0; i < 3; i++) bf16[i] = posemb_f32_to_bf16(BF16_VALUES[i]);
    posemb_st_writer w;
    posemb_error err;
    posemb_st_writer_init(&w);
    add_samples(&w, f16, bf16);
    posemb_status st = posemb_st_write(&w, path, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, POSEMB_OK);
    posemb_st_writer_free(&w);
}

static const posemb_st_entry *must_find(const posemb_st_file *f, const char *name)
{
    const posemb_st_entry *e = posemb_st_find(f, name);
    if (!e) fprintf(stderr, "no tensor %s\n", name);
    assert_non_null(e);
    return e;
}

static void check_floats(const posemb_st_file *f, const char *name, const float *want, int n)
{
    float got[8];
    posemb_error err;
    const posemb_st_entry *e = must_find(f, name);
    assert_int_equal(e->numel, n);
    assert_int_equal(posemb_st_read_f32(f, e, got, &err), POSEMB_OK);
    for (int i = 0; i < n; i++) {
        assert_true(got[i] == want[i] || (isinf(got[i]) && isinf(want[i]) && got[i] * want[i] > 0));
        assert_int_equal(signbit(got[i]) != 0, signbit(want[i]) != 0);
    }
}

static void check_ints(const posemb_st_file *f, const char *name, const int64_t *want, int n)
{
    int64_t got[8];
    posemb_error err;
    const posemb_st_entry *e = must_find(f, name);
    assert_int_equal(e->numel, n);
    assert_int_equal(posemb_st_read_i64(f, e, got, &err), POSEMB_OK);
    for (int i = 0; i < n; i++) assert_true(got[i] == want[i]);
}

static void check_values(const posemb_st_file *f)
{
    const float f64_as_f32[4] = {1.5f, -2.25f, INFINITY, -0.0f}; /* 1e300 is beyond float: inf */
    check_floats(f, "f64", f64_as_f32, 4);
    check_floats(f, "f32", F32_DATA, 3);
    check_floats(f, "f16", F16_VALUES, 5);
    check_floats(f, "bf16", BF16_VALUES, 3);
    check_floats(f, "scalar", SCALAR_DATA, 1);
    const int64_t i32[] = {-7, 2147483647}, i16[] = {-32768, 12345}, i8[] = {-128, 0, 127};
    const int64_t u8[] = {0, 255}, b[] = {1, 0, 1};
    check_ints(f, "i64", I64_DATA, 2);
    check_ints(f, "i32", i32, 2);
    check_ints(f, "i16", i16, 2);
    check_ints(f, "i8", i8, 3);
    check_ints(f, "u8", u8, 2);
    check_ints(f, "bool", b, 3);
    const posemb_st_entry *z = must_find(f, "zero_size");
    assert_int_equal(z->numel, 0);
    assert_int_equal(z->ndim, 2);
    assert_int_equal(z->shape[1], 3);
    const posemb_st_entry *s = must_find(f, "scalar");
    assert_int_equal(s->ndim, 0);
    assert_int_equal(s->end - s->begin, 4);
}

/* Each tensor starts where the previous one ended, in DISK_ORDER, aligned
 * to its element size, after a header padded to a multiple of 8. */
static void check_layout(const posemb_st_file *f)
{
    assert_int_equal(f->n_entries, N_SAMPLES);
    assert_int_equal(f->header_len % 8, 0);
    assert_int_equal(f->data_start, 8 + f->header_len);
    uint64_t at = 0;
    for (int i = 0; i < N_SAMPLES; i++) {
        const posemb_st_entry *e = must_find(f, DISK_ORDER[i]);
        assert_int_equal(e->begin, at);
        assert_int_equal((f->data_start + e->begin) % posemb_dtype_size(e->dtype), 0);
        at = e->end;
    }
    assert_int_equal(f->data_start + at, f->file_size);
}

static void test_round_trip(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = join(dir, "all.safetensors");
    write_samples(path);
    assert_false(dir_has_tmp(dir));

    posemb_st_file f;
    posemb_error err;
    posemb_status st = posemb_st_open(&f, path, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, POSEMB_OK);
    check_values(&f);
    check_layout(&f);
    assert_int_equal(f.n_meta, 2);
    assert_string_equal(posemb_st_meta(&f, "format"), "pt");
    assert_string_equal(posemb_st_meta(&f, "note"), "round trip");
    assert_null(posemb_st_meta(&f, "absent"));
    assert_null(posemb_st_find(&f, "absent"));
    posemb_st_close(&f);
    posemb_st_close(&f); /* closing twice is harmless */

    /* __metadata__ comes first in the header. */
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    assert_memory_equal(bytes + 8, "{\"__metadata__\":{\"format\":\"pt\"", 30);
    free(bytes);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* Known answers for values that do not fit exactly. */
static void test_rounding_known_answers(void **state)
{
    (void)state;
    assert_int_equal(posemb_f32_to_f16(0.1f), 0x2e66);                /* 0.0999755859375 */
    assert_int_equal(posemb_f32_to_bf16(0.1f), 0x3dcd);               /* 0.10009765625 */
    assert_int_equal(posemb_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);     /* tie: to even (down) */
    assert_int_equal(posemb_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie: to even (up) */
    assert_int_equal(posemb_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);     /* tie: to even (down) */
    assert_int_equal(posemb_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie: to even (up) */
    assert_true(posemb_f16_to_f32(0x2e66) == 0.0999755859375f);
    assert_true(posemb_bf16_to_f32(0x3dcd) == 0.10009765625f);

    /* And through a file: a rounded f16 value reads back as the rounded value. */
    char *dir = tu_tmpdir(), *path = join(dir, "r.safetensors");
    uint16_t h = posemb_f32_to_f16(0.1f);
    int64_t one[] = {1};
    posemb_st_writer w;
    posemb_error err;
    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_add(&w, "x", POSEMB_F16, 1, one, &h, &err), POSEMB_OK);
    assert_int_equal(posemb_st_write(&w, path, &err), POSEMB_OK);
    posemb_st_writer_free(&w);
    posemb_st_file f;
    float x;
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    assert_int_equal(posemb_st_load_f32(&f, "x", 1, one, &x, &err), POSEMB_OK);
    assert_true(x == 0.0999755859375f);
    posemb_st_close(&f);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* Writes w to path and compares the file with the 8-byte length, json
 * padded with spaces to padded_len, then data. */
static void expect_file_bytes(const posemb_st_writer *w, const char *path, const char *json, size_t padded_len,
                              const void *data, size_t data_len)
{
    posemb_error err;
    assert_int_equal(posemb_st_write(w, path, &err), POSEMB_OK);
    size_t size;
    unsigned char *got = slurp(path, &size);
    assert_int_equal(size, 8 + padded_len + data_len);
    for (int i = 0; i < 8; i++) assert_int_equal(got[i], (padded_len >> (8 * i)) & 0xff);
    size_t json_len = strlen(json);
    assert_memory_equal(got + 8, json, json_len);
    for (size_t i = json_len; i < padded_len; i++) assert_int_equal(got[8 + i], ' ');
    if (data_len) assert_memory_equal(got + 8 + padded_len, data, data_len);
    free(got);
}

/* The byte-exact outputs the reference implementation's own tests expect
 * (huggingface/safetensors tensor.rs: test_serialization, test_empty,
 * test_serialization_forced_alignement). */
static void test_reference_bytes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = join(dir, "ref.safetensors");
    const float data[6] = {0, 1, 2, 3, 4, 5};
    const int64_t s123[] = {1, 2, 3}, s1123[] = {1, 1, 2, 3};
    posemb_st_writer w;
    posemb_error err;

    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_add_f32(&w, "attn.0", 3, s123, data, &err), POSEMB_OK);
    expect_file_bytes(&w, path, "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}", 64, data,
                      sizeof data);
    posemb_st_writer_free(&w);

    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_add_f32(&w, "attn0", 4, s1123, data, &err), POSEMB_OK);
    expect_file_bytes(&w, path, "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}", 72, data,
                      sizeof data);
    posemb_st_writer_free(&w);

    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_meta(&w, "framework", "pt", &err), POSEMB_OK);
    expect_file_bytes(&w, path, "{\"__metadata__\":{\"framework\":\"pt\"}}", 40, NULL, 0);
    posemb_st_writer_free(&w);

    posemb_st_writer_init(&w);
    expect_file_bytes(&w, path, "{}", 8, NULL, 0);
    posemb_st_writer_free(&w);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* ------------------------------------------------------- conversions */

static void test_f16_edges(void **state)
{
    (void)state;
    assert_int_equal(posemb_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(posemb_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(posemb_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(posemb_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(posemb_f32_to_f16(65519.996f), 0x7bff);
    assert_int_equal(posemb_f32_to_f16(65520.0f), 0x7c00); /* halfway to 2^16: rounds to inf */
    assert_int_equal(posemb_f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(posemb_f32_to_f16(0x1p-24f), 0x0001); /* smallest subnormal */
    assert_int_equal(posemb_f32_to_f16(0x1p-25f), 0x0000); /* tie between 0 and 2^-24: even */
    assert_int_equal(posemb_f32_to_f16(0x1.8p-25f), 0x0001);
    assert_int_equal(posemb_f32_to_f16(0x1.8p-24f), 0x0002);   /* tie 1.5 units: to even */
    assert_int_equal(posemb_f32_to_f16(0x1p-14f), 0x0400);     /* smallest normal */
    assert_int_equal(posemb_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie at 1023.5 units: up into the normals */
    assert_int_equal(posemb_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(posemb_f32_to_f16(-INFINITY), 0xfc00);
    uint16_t nan = posemb_f32_to_f16(NAN);
    assert_int_equal(nan & 0x7c00, 0x7c00);
    assert_true((nan & 0x3ff) != 0);

    assert_true(posemb_f16_to_f32(0x0000) == 0.0f && !signbit(posemb_f16_to_f32(0x0000)));
    assert_true(posemb_f16_to_f32(0x8000) == 0.0f && signbit(posemb_f16_to_f32(0x8000)));
    assert_true(posemb_f16_to_f32(0x3c00) == 1.0f);
    assert_true(posemb_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(posemb_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(posemb_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    assert_true(posemb_f16_to_f32(0x8001) == -0x1p-24f);
    assert_true(isinf(posemb_f16_to_f32(0x7c00)) && posemb_f16_to_f32(0x7c00) > 0);
    assert_true(isinf(posemb_f16_to_f32(0xfc00)) && posemb_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(posemb_f16_to_f32(0x7e00)));
    assert_true(isnan(posemb_f16_to_f32(0x7c01))); /* signalling NaN stays NaN */

    /* Every non-NaN half survives f16 -> f32 -> f16 exactly. */
    for (uint32_t h = 0; h <= 0xffff; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        assert_int_equal(posemb_f32_to_f16(posemb_f16_to_f32((uint16_t)h)), h);
    }
}

static void test_bf16_edges(void **state)
{
    (void)state;
    assert_int_equal(posemb_f32_to_bf16(0.0f), 0x0000);
    assert_int_equal(posemb_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(posemb_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(posemb_f32_to_bf16(65504.0f), 0x4780); /* 65536 after rounding */
    assert_int_equal(posemb_f32_to_bf16(65520.0f), 0x4780);
    assert_int_equal(posemb_f32_to_bf16(FLT_MAX), 0x7f80); /* past the largest bf16: inf */
    assert_int_equal(posemb_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(posemb_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(posemb_f32_to_bf16(0x1p-133f), 0x0001); /* smallest bf16 subnormal */
    assert_int_equal(posemb_f32_to_bf16(0x1p-24f), 0x3380);
    uint32_t snan_bits = 0x7f800001u; /* a NaN whose payload would be truncated away */
    float snan;
    memcpy(&snan, &snan_bits, sizeof snan);
    assert_true(isnan(posemb_bf16_to_f32(posemb_f32_to_bf16(snan))));
    assert_true(isnan(posemb_bf16_to_f32(posemb_f32_to_bf16(NAN))));
    assert_true(isnan(posemb_bf16_to_f32(posemb_f32_to_bf16(-NAN))));

    assert_true(posemb_bf16_to_f32(0x8000) == 0.0f && signbit(posemb_bf16_to_f32(0x8000)));
    assert_true(posemb_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(posemb_bf16_to_f32(0x0001) == 0x1p-133f);
    assert_true(isinf(posemb_bf16_to_f32(0x7f80)));
    for (uint32_t h = 0; h <= 0xffff; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
        assert_int_equal(posemb_f32_to_bf16(posemb_bf16_to_f32((uint16_t)h)), h);
    }
}

/* ----------------------------------------------------- malformed files */

/* A malformed file: either raw bytes (raw set), or a header whose length
 * prefix is computed, followed by data_len zero bytes. */
typedef struct bad_case {
    const char *label;
    const char *bytes; /* the header, or the whole file when raw */
    size_t len;        /* of bytes; 0 means strlen (headers only) */
    int raw;
    size_t data_len;
    const char *keyword; /* expected in the message */
} bad_case;

#define HDR(label, json, data_len, kw)                                                                                 \
    {                                                                                                                  \
        label, json, 0, 0, data_len, kw                                                                                \
    }
/* String literals may hold NULs, so their length comes from sizeof. */
#define RAW(label, lit, kw)                                                                                            \
    {                                                                                                                  \
        label, lit, sizeof(lit) - 1, 1, 0, kw                                                                          \
    }
#define HDRN(label, lit, kw)                                                                                           \
    {                                                                                                                  \
        label, lit, sizeof(lit) - 1, 0, 0, kw                                                                          \
    }
#define F32_1 "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"

static const bad_case BAD_CASES[] = {
    RAW("empty file", "", "too short"),
    RAW("4 bytes", "\x08\0\0\0", "too short"),
    RAW("7 bytes", "\x02\0\0\0\0\0\0", "too short"),
    RAW("header length past the file", "\x10\0\0\0\0\0\0\0{}", "exceeds"),
    RAW("header length 2^63", "\0\0\0\0\0\0\0\x80{}", "exceeds"),
    RAW("header length 2^64-1", "\xff\xff\xff\xff\xff\xff\xff\xff{}", "exceeds"),
    RAW("zero header length", "\0\0\0\0\0\0\0\0{}", "header length is 0"),
    HDRN("NUL in header", "{\"a\0\":{}}", "NUL"),
    HDRN("non-UTF-8 header", "{\"\xff\":{}}", "UTF-8"),
    HDRN("overlong UTF-8", "{\"\xc0\xaf\":5}", "UTF-8"),
    HDRN("UTF-8 surrogate", "{\"\xed\xa0\x80\":5}", "UTF-8"),
    HDR("truncated data",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
        12, "past"),
    HDR("bad JSON", "{\"a\":", 0, "not valid JSON"),
    HDR("only spaces", "        ", 0, "not valid JSON"),
    HDR("JSON array", "[1, 2]", 0, "not a JSON object"),
    HDR("JSON string", "\"abc\"", 0, "not a JSON object"),
    HDR("byte-order mark", "\xef\xbb\xbf{}", 0, "not a JSON object"),
    HDR("trailing garbage", "{} x", 0, "trailing garbage"),
    HDR("two objects", "{}{}", 0, "trailing garbage"),
    HDR("unknown dtype", "{\"a\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "unknown dtype"),
    HDR("lower-case dtype", "{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype"),
    HDR("dtype not a string", "{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "not a string"),
    HDR("missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "missing \"dtype\""),
    HDR("missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "missing \"shape\""),
    HDR("missing data_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "missing \"data_offsets\""),
    HDR("shape not an array", "{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4, "not an array"),
    HDR("negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "negative"),
    HDR("non-integer dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "not an integer"),
    HDR("string dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, "not a number"),
    HDR("dim above 2^53", "{\"a\":{\"dtype\":\"F32\",\"shape\":[9007199254740994],\"data_offsets\":[0,4]}}", 4,
        "too large"),
    HDR("dim 1e300", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", 4, "too large"),
    HDR("9 dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "dimensions"),
    HDR("shape product overflow",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4, "overflow"),
    HDR("bytes overflow", "{\"a\":{\"dtype\":\"F64\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,8]}}", 8,
        "overflow"),
    HDR("byte span mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", 12, "needs 24"),
    HDR("begin > end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "begin > end"),
    HDR("end past data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "past"),
    HDR("zero-size tensor past data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[9,9]}}", 8, "past"),
    HDR("overlapping tensors",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
        12, "overlap"),
    HDR("identical ranges", "{\"a\":" F32_1 ",\"b\":" F32_1 "}", 4, "overlap"),
    HDR("gap between tensors", "{\"a\":" F32_1 ",\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
        "gap"),
    HDR("gap at the start", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap"),
    HDR("trailing data", "{\"a\":" F32_1 "}", 8, "trailing bytes"),
    HDR("duplicate names", "{\"a\":" F32_1 ",\"a\":" F32_1 "}", 4, "duplicate tensor name"),
    HDR("duplicate key in entry", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        4, "duplicate key"),
    HDR("offsets one number", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 4, "two integers"),
    HDR("offsets three numbers", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", 4,
        "two integers"),
    HDR("offsets an object", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{\"0\":4}}}", 4, "two integers"),
    HDR("offsets strings", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",\"4\"]}}", 4,
        "not a number"),
    HDR("negative offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "negative"),
    HDR("metadata value not a string", "{\"__metadata__\":{\"k\":1},\"a\":" F32_1 "}", 4, "not a string"),
    HDR("metadata not an object", "{\"__metadata__\":[\"k\"],\"a\":" F32_1 "}", 4, "__metadata__"),
    HDR("duplicate metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate"),
    HDR("duplicate metadata key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicate key"),
    HDR("entry not an object", "{\"a\":5}", 0, "not an object"),
    HDR("entry null", "{\"a\":null}", 0, "not an object"),
};

#define N_BAD_CASES (int)(sizeof BAD_CASES / sizeof BAD_CASES[0])

static void write_bad_case(const char *path, const bad_case *c)
{
    size_t len = c->len ? c->len : strlen(c->bytes);
    if (c->raw) assert_int_equal(tu_write_file(path, c->bytes, len), 0);
    else write_st_bytes(path, len, c->bytes, len, c->data_len);
}

/* Opens path, expecting EFORMAT with a one-line message naming path and
 * holding keyword. */
static void expect_rejected(const char *path, const char *label, const char *keyword)
{
    posemb_st_file f;
    posemb_error err;
    posemb_error_clear(&err);
    posemb_status st = posemb_st_open(&f, path, &err);
    if (st != POSEMB_EFORMAT || !strstr(err.msg, path) || !strstr(err.msg, keyword) || strchr(err.msg, '\n'))
        fprintf(stderr, "case '%s': status %d, message '%s' (want '%s')\n", label, (int)st, err.msg, keyword);
    assert_int_equal(st, POSEMB_EFORMAT);
    assert_int_equal(err.code, POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, keyword));
    assert_null(strchr(err.msg, '\n'));
    posemb_st_close(&f); /* harmless after a failed open */
}

static void test_malformed_corpus(void **state)
{
    (void)state;
    assert_true(N_BAD_CASES >= 24);
    char *dir = tu_tmpdir();
    for (int i = 0; i < N_BAD_CASES; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%02d.safetensors", i);
        char *path = join(dir, name);
        write_bad_case(path, &BAD_CASES[i]);
        expect_rejected(path, BAD_CASES[i].label, BAD_CASES[i].keyword);
        free(path);
    }
    tu_rmtree(dir);
    free(dir);
}

/* A header nested deeper than cJSON's limit is refused, not a stack overflow. */
static void test_deep_nesting(void **state)
{
    (void)state;
    enum { DEPTH = 5000 };
    char *json = malloc(2 * DEPTH + 16);
    assert_non_null(json);
    size_t n = 0;
    n += (size_t)sprintf(json, "{\"a\":");
    for (int i = 0; i < DEPTH; i++) json[n++] = '[';
    for (int i = 0; i < DEPTH; i++) json[n++] = ']';
    json[n++] = '}';
    char *dir = tu_tmpdir(), *path = join(dir, "deep.safetensors");
    write_st_bytes(path, n, json, n, 0);
    expect_rejected(path, "deep nesting", "not valid JSON");
    tu_rmtree(dir);
    free(path);
    free(dir);
    free(json);
}

/* A header above the reference's 100 MB cap is refused before it is read;
 * the file is sparse so the test costs no disk. */
static void test_header_limit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = join(dir, "huge.safetensors");
    uint64_t n = 100000001;
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)(n >> (8 * i));
    assert_int_equal(tu_write_file(path, prefix, 8), 0);
    assert_int_equal(truncate(path, (off_t)(8 + n)), 0);
    expect_rejected(path, "header over 100 MB", "limit");
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* Every truncation and many single-byte corruptions of a valid file must be
 * handled without a crash (the ASan build checks for stray reads). */
static void test_mutations(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *good = join(dir, "good.safetensors"), *bad = join(dir, "bad.safetensors");
    write_samples(good);
    size_t size;
    unsigned char *bytes = slurp(good, &size);
    posemb_st_file f;
    posemb_error err;
    for (size_t len = 0; len < size; len += 1 + len / 64) {
        assert_int_equal(tu_write_file(bad, bytes, len), 0);
        expect_rejected(bad, "truncated copy", "");
    }
    static const unsigned char PATTERNS[] = {0x00, 0xff, '"', '[', '9', '-', ' '};
    for (size_t at = 0; at < size; at += 3) {
        for (size_t p = 0; p < sizeof PATTERNS; p++) {
            unsigned char saved = bytes[at];
            bytes[at] = PATTERNS[p];
            assert_int_equal(tu_write_file(bad, bytes, size), 0);
            bytes[at] = saved;
            posemb_status st = posemb_st_open(&f, bad, &err);
            if (st != POSEMB_OK) {
                assert_int_equal(st, POSEMB_EFORMAT);
                assert_non_null(strstr(err.msg, bad));
                continue;
            }
            /* Still valid (a data byte changed): every tensor must read. */
            for (int i = 0; i < f.n_entries; i++) {
                const posemb_st_entry *e = &f.entries[i];
                void *buf = malloc((size_t)e->numel * 8 + 1);
                assert_non_null(buf);
                posemb_status r = posemb_dtype_is_float(e->dtype) ? posemb_st_read_f32(&f, e, buf, &err)
                                                                  : posemb_st_read_i64(&f, e, buf, &err);
                assert_int_equal(r, POSEMB_OK);
                free(buf);
            }
            posemb_st_close(&f);
        }
    }
    free(bytes);
    tu_rmtree(dir);
    free(good);
    free(bad);
    free(dir);
}

/* ------------------------------------------------ read-side refusals */

static void test_open_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *missing = join(dir, "missing.safetensors"), *fifo = join(dir, "fifo");
    posemb_st_file f;
    posemb_error err;
    assert_int_equal(posemb_st_open(&f, missing, &err), POSEMB_EIO);
    assert_non_null(strstr(err.msg, missing));
    assert_int_equal(posemb_st_open(&f, dir, &err), POSEMB_EIO); /* a directory */
    assert_non_null(strstr(err.msg, "regular file"));
    assert_int_equal(mkfifo(fifo, 0600), 0); /* must not block waiting for a writer */
    assert_int_equal(posemb_st_open(&f, fifo, &err), POSEMB_EIO);
    assert_non_null(strstr(err.msg, "regular file"));
    tu_rmtree(dir);
    free(missing);
    free(fifo);
    free(dir);
}

static void test_read_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = join(dir, "s.safetensors");
    write_samples(path);
    posemb_st_file f;
    posemb_error err;
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    float fbuf[8];
    int64_t ibuf[8];
    assert_int_equal(posemb_st_read_f32(&f, must_find(&f, "i32"), fbuf, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "i32"));
    assert_int_equal(posemb_st_read_i64(&f, must_find(&f, "f16"), ibuf, &err), POSEMB_EFORMAT);
    const int64_t wrong[] = {3, 1};
    assert_int_equal(posemb_st_load_f32(&f, "f32", 2, wrong, fbuf, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "[3]"));
    assert_non_null(strstr(err.msg, "[3, 1]"));
    assert_int_equal(posemb_st_load_f32(&f, "nope", 1, wrong, fbuf, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "nope"));
    const int64_t s3[] = {3};
    assert_int_equal(posemb_st_load_f32(&f, "f32", 1, s3, fbuf, &err), POSEMB_OK);
    assert_true(fbuf[2] == 3.25f);
    /* The file shrinks after open: the lazy read reports it, no stale data. */
    assert_int_equal(truncate(path, (off_t)f.data_start), 0);
    assert_int_equal(posemb_st_read_f32(&f, must_find(&f, "f32"), fbuf, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "end of file"));
    assert_int_equal(posemb_st_read_f32(&f, must_find(&f, "f16"), fbuf, &err), POSEMB_EFORMAT);
    posemb_st_close(&f);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* ------------------------------------------------------------- writer */

static void test_writer_refusals(void **state)
{
    (void)state;
    posemb_st_writer w;
    posemb_error err;
    float x[2] = {1, 2};
    const int64_t s2[] = {2}, neg[] = {-1};
    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_add_f32(&w, "a", 1, s2, x, &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_add_f32(&w, "a", 1, s2, x, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate"));
    assert_int_equal(posemb_st_writer_add_f32(&w, "__metadata__", 1, s2, x, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_st_writer_add_f32(&w, "b", 1, neg, x, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_st_writer_add_f32(&w, "c", 9, s2, x, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_st_writer_add_f32(&w, "d", 1, s2, NULL, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_st_writer_add_f32(&w, "\xff", 1, s2, x, &err), POSEMB_EINVAL);
    assert_int_equal(posemb_st_writer_meta(&w, "k", "v", &err), POSEMB_OK);
    assert_int_equal(posemb_st_writer_meta(&w, "k", "w", &err), POSEMB_EINVAL);
    assert_int_equal(w.n, 1);
    posemb_st_writer_free(&w);
}

static void test_writer_atomic(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *inside = join(dir, "no/such/dir/x.safetensors"), *path = join(dir, "x.safetensors");
    posemb_st_writer w;
    posemb_error err;
    float x[2] = {1, 2};
    const int64_t s2[] = {2};
    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_writer_add_f32(&w, "x", 1, s2, x, &err), POSEMB_OK);
    assert_int_equal(posemb_st_write(&w, inside, &err), POSEMB_EIO);
    assert_non_null(strstr(err.msg, inside));
    assert_int_equal(access(inside, F_OK), -1);
    assert_false(dir_has_tmp(dir));

    /* Overwriting an existing file replaces it whole, leaving no temp file. */
    assert_int_equal(tu_write_file(path, "old", 3), 0);
    assert_int_equal(posemb_st_write(&w, path, &err), POSEMB_OK);
    assert_false(dir_has_tmp(dir));
    posemb_st_file f;
    float back[2];
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    assert_int_equal(posemb_st_load_f32(&f, "x", 1, s2, back, &err), POSEMB_OK);
    assert_true(back[0] == 1 && back[1] == 2);
    posemb_st_close(&f);

    /* An empty writer makes a valid empty file, as the reference does: "{}" plus 6 spaces. */
    posemb_st_writer_free(&w);
    posemb_st_writer_init(&w);
    assert_int_equal(posemb_st_write(&w, path, &err), POSEMB_OK);
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    assert_int_equal(size, 16);
    assert_memory_equal(bytes, "\x08\0\0\0\0\0\0\0{}      ", 16);
    free(bytes);
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    assert_int_equal(f.n_entries, 0);
    posemb_st_close(&f);
    posemb_st_writer_free(&w);
    tu_rmtree(dir);
    free(inside);
    free(path);
    free(dir);
}

/* ---------------------------------------------------------------- CLI */

static void test_cli_inspect(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = join(dir, "cli.safetensors"), *bad = join(dir, "bad.safetensors");
    write_samples(path);
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, POSEMB_BIN " inspect '%s'", path);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    for (int i = 0; i < N_SAMPLES; i++) assert_non_null(strstr(out, DISK_ORDER[i]));
    const char *want[] = {"F64", "F32",  "F16",    "BF16",   "I64", "I32",        "I16",       "I8",
                          "U8",  "BOOL", "[2, 2]", "[0, 3]", "[]",  "12 tensors", "format: pt"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (!strstr(out, want[i])) fprintf(stderr, "missing '%s' in:\n%s\n", want[i], out);
        assert_non_null(strstr(out, want[i]));
    }

    snprintf(cmd, sizeof cmd, POSEMB_BIN " inspect --json '%s'", path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tensors")), N_SAMPLES);
    cJSON *total = cJSON_GetObjectItem(root, "total");
    assert_true(cJSON_GetObjectItem(total, "parameters")->valuedouble == 30); /* sum of numel */
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "metadata"), "format")->valuestring, "pt");
    cJSON_Delete(root);

    assert_int_equal(tu_run(POSEMB_BIN " inspect --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: posemb inspect"));
    assert_int_equal(tu_run(POSEMB_BIN " inspect", out, sizeof out), 2);
    assert_int_equal(tu_run(POSEMB_BIN " inspect --bogus x", out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, POSEMB_BIN " inspect '%s' '%s'", path, path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);

    write_st_bytes(bad, 6, "[1, 2]", 6, 0);
    snprintf(cmd, sizeof cmd, POSEMB_BIN " inspect '%s'", bad);
    assert_int_equal(tu_run(cmd, out, sizeof out), 1);
    assert_int_equal(strncmp(out, "posemb inspect: ", 16), 0);
    assert_non_null(strstr(out, bad));
    char *nl = strchr(out, '\n');
    assert_true(nl && nl[1] == '\0'); /* exactly one line */
    tu_rmtree(dir);
    free(path);
    free(bad);
    free(dir);
}

static void test_cli_inspect_gpt2(void **state)
{
    (void)state;
    if (!tu_have_shared("gpt2 inspect")) return;
    char out[16384];
    int rc = tu_run(POSEMB_BIN " inspect " POSEMB_SHARED "/models/gpt2/gpt2_pe.safetensors", out, sizeof out);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "wpe.weight"));
    assert_non_null(strstr(out, "F32"));
    assert_non_null(strstr(out, "[1024, 768]"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_rounding_known_answers),
        cmocka_unit_test(test_reference_bytes),  cmocka_unit_test(test_f16_edges),
        cmocka_unit_test(test_bf16_edges),       cmocka_unit_test(test_malformed_corpus),
        cmocka_unit_test(test_deep_nesting),     cmocka_unit_test(test_header_limit),
        cmocka_unit_test(test_mutations),        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_read_refusals),    cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_writer_atomic),    cmocka_unit_test(test_cli_inspect),
        cmocka_unit_test(test_cli_inspect_gpt2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
