/* safetensors read and write. See include/posemb/safetensors.h for the
 * format and the contract.
 *
 * Byte order: safetensors data is little-endian and this file copies tensor
 * bytes straight into host integers and floats, so it assumes a
 * little-endian host (x86-64, arm64). The header length prefix is decoded
 * byte by byte and does not depend on the host.
 *
 * Layout rule: the reference reader (huggingface/safetensors, Rust:
 * Metadata::validate and SafeTensors::read_metadata) sorts the tensors by
 * data_offsets and requires each to begin exactly where the previous one
 * ended, starting at 0, and the last to end exactly at the end of the file.
 * So it refuses gaps, overlaps and trailing bytes, and so do we: a file we
 * accept is one the reference accepts. One leniency: a zero-size tensor
 * (numel 0) occupies no bytes, so its offset [k, k] may sit anywhere inside
 * the data section without counting as an overlap. */
#include "posemb/safetensors.h"
#include "core/fileio.h"
#include "formats/safetensors_internal.h"
#include "core/tensor_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

/* The reference reader refuses headers above 100 MB; so do we, which also
 * bounds the memory a hostile file can make us allocate for the header. */
#define MAX_HEADER_LEN 100000000ull
/* Shapes and offsets arrive as JSON numbers (doubles in cJSON); every
 * integer up to 2^53 - 1 is exact, so larger values are refused rather than
 * silently rounded. */
#define MAX_JSON_INT 9007199254740991.0
#define METADATA_KEY "__metadata__"
/* Bytes converted per pread when a dtype needs converting. */
#define CHUNK_BYTES 32768

/* ---------------------------------------------------------------- dtypes */

typedef struct dtype_info {
    const char *name;
    size_t size;
    int is_float;
} dtype_info;

static const dtype_info DTYPES[] = {
    [POSEMB_F64] = {"F64", 8, 1},   [POSEMB_F32] = {"F32", 4, 1}, [POSEMB_F16] = {"F16", 2, 1},
    [POSEMB_BF16] = {"BF16", 2, 1}, [POSEMB_I64] = {"I64", 8, 0}, [POSEMB_I32] = {"I32", 4, 0},
    [POSEMB_I16] = {"I16", 2, 0},   [POSEMB_I8] = {"I8", 1, 0},   [POSEMB_U8] = {"U8", 1, 0},
    [POSEMB_BOOL] = {"BOOL", 1, 0},
};

#define N_DTYPES (int)(sizeof DTYPES / sizeof DTYPES[0])

static int dtype_valid(posemb_dtype dt) { return (int)dt >= 0 && (int)dt < N_DTYPES; }

const char *posemb_dtype_name(posemb_dtype dt) { return dtype_valid(dt) ? DTYPES[dt].name : "?"; }

size_t posemb_dtype_size(posemb_dtype dt) { return dtype_valid(dt) ? DTYPES[dt].size : 0; }

int posemb_dtype_is_float(posemb_dtype dt) { return dtype_valid(dt) && DTYPES[dt].is_float; }

int posemb_dtype_parse(const char *name, posemb_dtype *out)
{
    for (int i = 0; i < N_DTYPES; i++) {
        if (!strcmp(name, DTYPES[i].name)) {
            *out = (posemb_dtype)i;
            return 0;
        }
    }
    return -1;
}

/* ------------------------------------------------- float16 and bfloat16 */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float posemb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in float32 */
        float mag = (float)mant * 0x1p-24f;
        return sign ? -mag : mag;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13)); /* inf, NaN keeps its payload */
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));        /* rebias 15 -> 127 */
}

/* Rounds mant >> shift to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t mant, int shift)
{
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

uint16_t posemb_f32_to_f16(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((absx >> 13) & 0x3ffu)); /* NaN, kept quiet */
    if (absx >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);                          /* >= 65536 (or inf): inf */
    if (absx >= 0x38800000u) {                                                           /* normal in f16 (>= 2^-14) */
        uint32_t exp = (absx >> 23) - 112;
        /* Rounding may carry into the exponent; 65520 carries up to inf, as it should. */
        return (uint16_t)(sign | shift_round_even(exp << 23 | (absx & 0x7fffffu), 13));
    }
    if (absx <= 0x33000000u) return sign; /* <= 2^-25: rounds to (signed) zero */
    /* Subnormal in f16: value / 2^-24 = mant * 2^(e - 126), with e < 113. */
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23);
    return (uint16_t)(sign | shift_round_even(mant, shift));
}

float posemb_bf16_to_f32(uint16_t h) { return bits_float((uint32_t)h << 16); }

uint16_t posemb_f32_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* NaN stays NaN */
    /* Round to nearest even; a carry out of the mantissa correctly bumps the
     * exponent, up to inf for values past the largest bfloat16. */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ------------------------------------------------------- small helpers */

/* A copy of name fit for a one-line message: control characters become '?'
 * and long names are cut. */
static const char *printable(const char *name, char *buf, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 4 < size; i++) {
        unsigned char c = (unsigned char)name[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (name[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

#define NAME_BUF 96
#define PRINTABLE(name, buf) printable((name), (buf), sizeof(buf))

/* a * b into *out; returns 0, or -1 if it overflows uint64. */
static int mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* Index of the first byte that is not valid UTF-8 (or is NUL), or n if all
 * are. Overlong forms, surrogates and code points above U+10FFFF are invalid. */
static size_t utf8_bad_byte(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c == 0) return i;
        if (c < 0x80) len = 1;
        else if (c >= 0xc2 && c <= 0xdf) len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            lo = (c == 0xe0) ? 0xa0 : 0x80;
            hi = (c == 0xed) ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            lo = (c == 0xf0) ? 0x90 : 0x80;
            hi = (c == 0xf4) ? 0x8f : 0xbf;
        } else return i;
        if (len > n - i) return i;
        for (size_t k = 1; k < len; k++) {
            unsigned b = s[i + k];
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return i;
        }
        i += len;
    }
    return n;
}

/* Reads exactly n bytes at off, retrying short reads and EINTR. Returns the
 * bytes read (< n only at end of file), or -1 with errno set. */
static int64_t pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (int64_t)got;
}

/* Reads n bytes at file offset off of f into buf; what names them. */
static posemb_status read_at(const posemb_st_file *f, void *buf, size_t n, uint64_t off, const char *what,
                             posemb_error *err)
{
    int64_t got = pread_full(f->fd, buf, n, off);
    if (got < 0) return posemb_fail(err, POSEMB_EIO, "%s: cannot read %s: %s", f->path, what, strerror(errno));
    if ((size_t)got < n)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: unexpected end of file reading %s (%zu of %zu bytes)", f->path,
                           what, (size_t)got, n);
    return POSEMB_OK;
}

/* --------------------------------------------------- header validation */

/* Reads a JSON number that must be an integer in [0, 2^53 - 1] into *v and
 * returns NULL, or returns why it is not one. cJSON keeps only the double,
 * so "1.0" and "1e3" pass as the integers 1 and 1000. */
static const char *json_uint(const cJSON *item, uint64_t *v)
{
    if (!cJSON_IsNumber(item) || item->valuedouble != item->valuedouble) return "is not a number";
    double d = item->valuedouble;
    if (d < 0) return "is negative";
    if (d > MAX_JSON_INT) return "is too large (above 2^53 - 1)";
    if (d != (double)(uint64_t)d) return "is not an integer";
    *v = (uint64_t)d;
    return NULL;
}

/* Refuses an entry that repeats one of the keys we read (cJSON would
 * silently use the first). Unknown keys are ignored, as in the reference. */
static posemb_status check_entry_keys(const char *path, const char *name, const cJSON *obj, posemb_error *err)
{
    static const char *const KEYS[] = {"dtype", "shape", "data_offsets"};
    char nb[NAME_BUF];
    for (int k = 0; k < 3; k++) {
        int count = 0;
        for (const cJSON *c = obj->child; c; c = c->next) count += c->string && !strcmp(c->string, KEYS[k]);
        if (count > 1)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': duplicate key \"%s\"", path, PRINTABLE(name, nb),
                               KEYS[k]);
    }
    return POSEMB_OK;
}

static posemb_status parse_dtype(const char *path, const char *name, const cJSON *obj, posemb_dtype *dt,
                                 posemb_error *err)
{
    char nb[NAME_BUF], vb[NAME_BUF];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
    if (!item) return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': missing \"dtype\"", path, PRINTABLE(name, nb));
    if (!cJSON_IsString(item))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': \"dtype\" is not a string", path,
                           PRINTABLE(name, nb));
    if (posemb_dtype_parse(item->valuestring, dt) != 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': unknown dtype '%s'", path, PRINTABLE(name, nb),
                           PRINTABLE(item->valuestring, vb));
    return POSEMB_OK;
}

static posemb_status parse_shape(const char *path, const char *name, const cJSON *obj, posemb_st_entry *e,
                                 posemb_error *err)
{
    char nb[NAME_BUF];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    if (!item) return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': missing \"shape\"", path, PRINTABLE(name, nb));
    if (!cJSON_IsArray(item))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': \"shape\" is not an array", path,
                           PRINTABLE(name, nb));
    int ndim = cJSON_GetArraySize(item);
    if (ndim > POSEMB_MAX_DIMS)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': shape has %d dimensions (at most %d)", path,
                           PRINTABLE(name, nb), ndim, POSEMB_MAX_DIMS);
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next, i++) {
        uint64_t v;
        const char *why = json_uint(c, &v);
        if (why) {
            char val[40] = "";
            if (cJSON_IsNumber(c)) snprintf(val, sizeof val, " (%.17g)", c->valuedouble);
            return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': shape[%d] %s%s", path, PRINTABLE(name, nb), i,
                               why, val);
        }
        e->shape[i] = (int64_t)v;
    }
    e->ndim = ndim;
    return POSEMB_OK;
}

static posemb_status parse_offsets(const char *path, const char *name, const cJSON *obj, posemb_st_entry *e,
                                   posemb_error *err)
{
    char nb[NAME_BUF];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, "data_offsets");
    if (!item)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': missing \"data_offsets\"", path, PRINTABLE(name, nb));
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': \"data_offsets\" is not an array of two integers",
                           path, PRINTABLE(name, nb));
    uint64_t v[2];
    const cJSON *c = item->child;
    for (int i = 0; i < 2; i++, c = c->next) {
        const char *why = json_uint(c, &v[i]);
        if (why)
            return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': data_offsets[%d] %s", path, PRINTABLE(name, nb),
                               i, why);
    }
    if (v[0] > v[1])
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] have begin > end", path,
                           PRINTABLE(name, nb), (unsigned long long)v[0], (unsigned long long)v[1]);
    e->begin = v[0];
    e->end = v[1];
    return POSEMB_OK;
}

/* numel = product of the shape; checks numel * element size against the
 * byte span and the span against the data section. */
static posemb_status check_extent(const char *path, posemb_st_entry *e, uint64_t data_len, posemb_error *err)
{
    char nb[NAME_BUF], sb[POSEMB_MAX_DIMS * 24];
    uint64_t numel = 1, nbytes;
    int has_zero = 0;
    for (int i = 0; i < e->ndim; i++) has_zero |= e->shape[i] == 0;
    /* A zero dimension makes the product 0 however large the others are. */
    for (int i = 0; i < e->ndim && !has_zero; i++) {
        if (mul_u64(numel, (uint64_t)e->shape[i], &numel) != 0 || numel > (uint64_t)INT64_MAX) {
            posemb_shape_str(e->ndim, e->shape, sb, (int)sizeof sb);
            return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': shape %s overflows 64 bits", path,
                               PRINTABLE(e->name, nb), sb);
        }
    }
    if (has_zero) numel = 0;
    posemb_shape_str(e->ndim, e->shape, sb, (int)sizeof sb);
    if (mul_u64(numel, posemb_dtype_size(e->dtype), &nbytes) != 0)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': shape %s of %s overflows 64 bits in bytes", path,
                           PRINTABLE(e->name, nb), sb, posemb_dtype_name(e->dtype));
    if (e->end - e->begin != nbytes)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes but shape %s of %s needs %llu",
                           path, PRINTABLE(e->name, nb), (unsigned long long)e->begin, (unsigned long long)e->end,
                           (unsigned long long)(e->end - e->begin), sb, posemb_dtype_name(e->dtype),
                           (unsigned long long)nbytes);
    if (e->end > data_len)
        return posemb_fail(err, POSEMB_EFORMAT,
                           "%s: tensor '%s': data_offsets [%llu, %llu] end past the data section (%llu bytes)", path,
                           PRINTABLE(e->name, nb), (unsigned long long)e->begin, (unsigned long long)e->end,
                           (unsigned long long)data_len);
    e->numel = (int64_t)numel;
    return POSEMB_OK;
}

static posemb_status parse_entry(const char *path, const cJSON *obj, posemb_st_entry *e, uint64_t data_len,
                                 posemb_error *err)
{
    char nb[NAME_BUF];
    e->name = strdup(obj->string);
    if (!e->name) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for a tensor name", path);
    if (!cJSON_IsObject(obj))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s': entry is not an object", path,
                           PRINTABLE(e->name, nb));
    posemb_status st = check_entry_keys(path, e->name, obj, err);
    if (!st) st = parse_dtype(path, e->name, obj, &e->dtype, err);
    if (!st) st = parse_shape(path, e->name, obj, e, err);
    if (!st) st = parse_offsets(path, e->name, obj, e, err);
    if (!st) st = check_extent(path, e, data_len, err);
    return st;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Sets *dup to a string that occurs twice in names[0..n), or NULL. Sorts a
 * copy, so a hostile header with millions of keys costs n log n, not n^2.
 * Returns -1 if the copy cannot be allocated. */
static int find_duplicate(const char *const *names, int n, const char **dup)
{
    const char **t = malloc(((size_t)n + 1) * sizeof *t);
    if (!t) return -1;
    memcpy(t, names, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_str);
    *dup = NULL;
    for (int i = 1; i < n && !*dup; i++)
        if (!strcmp(t[i - 1], t[i])) *dup = t[i];
    free(t);
    return 0;
}

static posemb_status parse_metadata(posemb_st_file *f, const cJSON *obj, posemb_error *err)
{
    char kb[NAME_BUF];
    if (f->meta_keys)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: duplicate \"%s\" entry in the header", f->path, METADATA_KEY);
    if (!cJSON_IsObject(obj))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: \"%s\" is not an object", f->path, METADATA_KEY);
    int n = cJSON_GetArraySize(obj);
    f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_values = calloc((size_t)n + 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for metadata", f->path);
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!cJSON_IsString(c))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: %s value for '%s' is not a string", f->path, METADATA_KEY,
                               PRINTABLE(c->string, kb));
        f->meta_keys[f->n_meta] = strdup(c->string);
        f->meta_values[f->n_meta] = strdup(c->valuestring);
        f->n_meta++; /* counted before the check so that close frees a half-made pair */
        if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1])
            return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for metadata", f->path);
    }
    const char *dup;
    if (find_duplicate((const char *const *)f->meta_keys, f->n_meta, &dup) != 0)
        return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory checking metadata keys", f->path);
    if (dup)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: %s has duplicate key '%s'", f->path, METADATA_KEY,
                           PRINTABLE(dup, kb));
    return POSEMB_OK;
}

static int cmp_entry_offsets(const void *a, const void *b)
{
    const posemb_st_entry *x = *(const posemb_st_entry *const *)a, *y = *(const posemb_st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* A table of pointers to f's entries, to sort without moving them. */
static posemb_st_entry **entry_table(const posemb_st_file *f)
{
    posemb_st_entry **t = malloc(((size_t)f->n_entries + 1) * sizeof *t);
    if (t)
        for (int i = 0; i < f->n_entries; i++) t[i] = &f->entries[i];
    return t;
}

/* cJSON keeps repeated keys; the format forbids them. */
static posemb_status check_unique_names(const posemb_st_file *f, posemb_error *err)
{
    char nb[NAME_BUF];
    const char **names = malloc(((size_t)f->n_entries + 1) * sizeof *names), *dup = NULL;
    int rc = -1;
    if (names) {
        for (int i = 0; i < f->n_entries; i++) names[i] = f->entries[i].name;
        rc = find_duplicate(names, f->n_entries, &dup);
        free(names);
    }
    if (rc != 0) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory checking tensor names", f->path);
    if (dup) return posemb_fail(err, POSEMB_EFORMAT, "%s: duplicate tensor name '%s'", f->path, PRINTABLE(dup, nb));
    return POSEMB_OK;
}

/* The tensors must tile the data section: see the layout rule at the top. */
static posemb_status check_tiling(const posemb_st_file *f, posemb_error *err)
{
    char ab[NAME_BUF], bb[NAME_BUF];
    uint64_t data_len = f->file_size - f->data_start;
    posemb_st_entry **t = entry_table(f);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory checking tensor offsets", f->path);
    qsort(t, (size_t)f->n_entries, sizeof *t, cmp_entry_offsets);
    posemb_status st = POSEMB_OK;
    const posemb_st_entry *prev = NULL; /* the last non-empty tensor */
    uint64_t covered = 0;
    for (int i = 0; i < f->n_entries && !st; i++) {
        const posemb_st_entry *e = t[i];
        if (e->begin == e->end) continue;
        if (e->begin < covered)
            st =
                posemb_fail(err, POSEMB_EFORMAT, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap", f->path,
                            PRINTABLE(prev->name, ab), (unsigned long long)prev->begin, (unsigned long long)prev->end,
                            PRINTABLE(e->name, bb), (unsigned long long)e->begin, (unsigned long long)e->end);
        else if (e->begin > covered)
            st =
                posemb_fail(err, POSEMB_EFORMAT,
                            "%s: gap in the data section: bytes [%llu, %llu) before tensor '%s' belong to no tensor",
                            f->path, (unsigned long long)covered, (unsigned long long)e->begin, PRINTABLE(e->name, bb));
        covered = e->end;
        prev = e;
    }
    if (!st && covered != data_len)
        st = posemb_fail(err, POSEMB_EFORMAT,
                         "%s: data section is %llu bytes but the tensors cover only %llu (trailing bytes)", f->path,
                         (unsigned long long)data_len, (unsigned long long)covered);
    free(t);
    return st;
}

/* Fills f's entries and metadata from the parsed header object. */
static posemb_status parse_root(posemb_st_file *f, const cJSON *root, posemb_error *err)
{
    uint64_t data_len = f->file_size - f->data_start;
    int n = 0;
    for (const cJSON *c = root->child; c; c = c->next) n += strcmp(c->string, METADATA_KEY) != 0;
    f->entries = calloc((size_t)n + 1, sizeof *f->entries);
    if (!f->entries) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for %d tensor entries", f->path, n);
    for (const cJSON *c = root->child; c; c = c->next) {
        posemb_status st;
        if (!strcmp(c->string, METADATA_KEY)) {
            st = parse_metadata(f, c, err);
        } else {
            st = parse_entry(f->path, c, &f->entries[f->n_entries], data_len, err);
            f->n_entries++; /* counted even on failure so that close frees its name */
        }
        if (st) return st;
    }
    posemb_status st = check_unique_names(f, err);
    if (!st) st = check_tiling(f, err);
    return st;
}

static int is_json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Parses and validates the n header bytes in text (not NUL-terminated). */
static posemb_status parse_header(posemb_st_file *f, const char *text, size_t n, posemb_error *err)
{
    size_t bad = utf8_bad_byte((const unsigned char *)text, n);
    if (bad < n)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: header is not valid UTF-8 text (%s byte 0x%02x at offset %zu)",
                           f->path, text[bad] ? "invalid" : "NUL", (unsigned)(unsigned char)text[bad], bad);
    /* Checked before parsing because cJSON also skips a UTF-8 byte-order
     * mark, which the reference (serde_json) refuses. */
    size_t first = 0;
    while (first < n && is_json_space(text[first])) first++;
    if (first < n && text[first] != '{')
        return posemb_fail(err, POSEMB_EFORMAT, "%s: header is not a JSON object (it starts with byte 0x%02x)", f->path,
                           (unsigned)(unsigned char)text[first]);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: header is not valid JSON (error near byte %zu of %zu)", f->path,
                           end ? (size_t)(end - text) : (size_t)0, n);
    /* The writer pads with spaces; the reference (serde_json) allows any JSON whitespace. */
    size_t at = (size_t)(end - text);
    while (at < n && is_json_space(text[at])) at++;
    posemb_status st = POSEMB_OK;
    if (at < n)
        st = posemb_fail(err, POSEMB_EFORMAT, "%s: trailing garbage after the JSON header at byte %zu", f->path, at);
    else if (!cJSON_IsObject(root)) st = posemb_fail(err, POSEMB_EFORMAT, "%s: header is not a JSON object", f->path);
    else st = parse_root(f, root, err);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------- reading */

/* Opens path read-only; refuses anything but a regular file. O_NONBLOCK so
 * that a FIFO cannot make open() wait for a writer. */
static posemb_status open_regular(posemb_st_file *f, const char *path, posemb_error *err)
{
    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f->fd < 0) return posemb_fail(err, POSEMB_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) return posemb_fail(err, POSEMB_EIO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return posemb_fail(err, POSEMB_EIO, "%s: not a regular file", path);
    int flags = fcntl(f->fd, F_GETFL);
    if (flags >= 0) (void)fcntl(f->fd, F_SETFL, flags & ~O_NONBLOCK);
    f->file_size = (uint64_t)sb.st_size;
    return POSEMB_OK;
}

/* Reads the 8-byte little-endian header length and checks it against the
 * file size and the 100 MB cap. */
static posemb_status read_header_len(posemb_st_file *f, posemb_error *err)
{
    if (f->file_size < 8)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: file is %llu bytes, too short for the 8-byte header length",
                           f->path, (unsigned long long)f->file_size);
    unsigned char b[8];
    posemb_status st = read_at(f, b, 8, 0, "the header length", err);
    if (st) return st;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    if (n == 0) return posemb_fail(err, POSEMB_EFORMAT, "%s: header length is 0", f->path);
    if (n > f->file_size - 8)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: header length %llu exceeds the %llu bytes after the length prefix",
                           f->path, (unsigned long long)n, (unsigned long long)(f->file_size - 8));
    if (n > MAX_HEADER_LEN)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: header length %llu exceeds the %llu-byte limit", f->path,
                           (unsigned long long)n, (unsigned long long)MAX_HEADER_LEN);
    f->header_len = n;
    f->data_start = 8 + n;
    return POSEMB_OK;
}

static posemb_status load_header(posemb_st_file *f, posemb_error *err)
{
    size_t n = (size_t)f->header_len;
    char *text = malloc(n);
    if (!text) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory for a %zu-byte header", f->path, n);
    posemb_status st = read_at(f, text, n, 8, "the header", err);
    if (!st) st = parse_header(f, text, n, err);
    free(text);
    return st;
}

posemb_status posemb_st_open(posemb_st_file *f, const char *path, posemb_error *err)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = strdup(path);
    if (!f->path) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    posemb_status st = open_regular(f, path, err);
    if (!st) st = read_header_len(f, err);
    if (!st) st = load_header(f, err);
    if (st) posemb_st_close(f);
    return st;
}

void posemb_st_close(posemb_st_file *f)
{
    if (!f || !f->path) return; /* never opened, or already closed */
    if (f->fd >= 0) close(f->fd);
    for (int i = 0; i < f->n_entries; i++) free(f->entries[i].name);
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->entries);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

const posemb_st_entry *posemb_st_find(const posemb_st_file *f, const char *name)
{
    for (int i = 0; i < f->n_entries; i++)
        if (!strcmp(f->entries[i].name, name)) return &f->entries[i];
    return NULL;
}

const char *posemb_st_meta(const posemb_st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (f->meta_keys[i] && !strcmp(f->meta_keys[i], key)) return f->meta_values[i];
    return NULL;
}

static posemb_status read_bytes(const posemb_st_file *f, const posemb_st_entry *e, void *dst, size_t n, uint64_t off,
                                posemb_error *err)
{
    char what[NAME_BUF + 16], nb[NAME_BUF];
    snprintf(what, sizeof what, "tensor '%s'", PRINTABLE(e->name, nb));
    return read_at(f, dst, n, f->data_start + e->begin + off, what, err);
}

posemb_status posemb_st_read_raw(const posemb_st_file *f, const posemb_st_entry *e, void *dst, posemb_error *err)
{
    return read_bytes(f, e, dst, (size_t)(e->end - e->begin), 0, err);
}

/* Converts n elements from little-endian bytes src into dst. */
typedef void convert_fn(const unsigned char *src, size_t n, void *dst);

static void f64_to_f32(const unsigned char *src, size_t n, void *dst)
{
    float *out = dst;
    for (size_t i = 0; i < n; i++) {
        double d;
        memcpy(&d, src + 8 * i, 8);
        out[i] = (float)d; /* IEEE 754 rounding; beyond float range gives inf */
    }
}

static void f16_to_f32(const unsigned char *src, size_t n, void *dst)
{
    float *out = dst;
    for (size_t i = 0; i < n; i++) out[i] = posemb_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
}

static void bf16_to_f32(const unsigned char *src, size_t n, void *dst)
{
    float *out = dst;
    for (size_t i = 0; i < n; i++) out[i] = posemb_bf16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
}

static void i32_to_i64(const unsigned char *src, size_t n, void *dst)
{
    int64_t *out = dst;
    for (size_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, src + 4 * i, 4);
        out[i] = v;
    }
}

static void i16_to_i64(const unsigned char *src, size_t n, void *dst)
{
    int64_t *out = dst;
    for (size_t i = 0; i < n; i++) {
        int16_t v;
        memcpy(&v, src + 2 * i, 2);
        out[i] = v;
    }
}

static void i8_to_i64(const unsigned char *src, size_t n, void *dst)
{
    int64_t *out = dst;
    for (size_t i = 0; i < n; i++) out[i] = (int8_t)src[i];
}

static void u8_to_i64(const unsigned char *src, size_t n, void *dst)
{
    int64_t *out = dst;
    for (size_t i = 0; i < n; i++) out[i] = src[i];
}

/* Any non-zero byte is true (torch writes 0 and 1). */
static void bool_to_i64(const unsigned char *src, size_t n, void *dst)
{
    int64_t *out = dst;
    for (size_t i = 0; i < n; i++) out[i] = src[i] != 0;
}

/* Reads e chunk by chunk through a bounce buffer, converting each chunk into
 * dst (out_size bytes per element). */
static posemb_status read_converted(const posemb_st_file *f, const posemb_st_entry *e, void *dst, size_t out_size,
                                    convert_fn *convert, posemb_error *err)
{
    unsigned char chunk[CHUNK_BYTES];
    size_t in_size = posemb_dtype_size(e->dtype);
    size_t per_chunk = CHUNK_BYTES / in_size;
    size_t numel = (size_t)e->numel;
    for (size_t i = 0; i < numel; i += per_chunk) {
        size_t k = numel - i < per_chunk ? numel - i : per_chunk;
        posemb_status st = read_bytes(f, e, chunk, k * in_size, (uint64_t)i * in_size, err);
        if (st) return st;
        convert(chunk, k, (char *)dst + i * out_size);
    }
    return POSEMB_OK;
}

static posemb_status refuse_dtype(const posemb_st_file *f, const posemb_st_entry *e, const char *want,
                                  posemb_error *err)
{
    char nb[NAME_BUF];
    return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' is %s, not %s", f->path, PRINTABLE(e->name, nb),
                       posemb_dtype_name(e->dtype), want);
}

posemb_status posemb_st_read_f32(const posemb_st_file *f, const posemb_st_entry *e, float *dst, posemb_error *err)
{
    switch (e->dtype) {
    case POSEMB_F32:
        return posemb_st_read_raw(f, e, dst, err);
    case POSEMB_F64:
        return read_converted(f, e, dst, sizeof *dst, f64_to_f32, err);
    case POSEMB_F16:
        return read_converted(f, e, dst, sizeof *dst, f16_to_f32, err);
    case POSEMB_BF16:
        return read_converted(f, e, dst, sizeof *dst, bf16_to_f32, err);
    default:
        return refuse_dtype(f, e, "a floating-point type", err);
    }
}

posemb_status posemb_st_read_i64(const posemb_st_file *f, const posemb_st_entry *e, int64_t *dst, posemb_error *err)
{
    switch (e->dtype) {
    case POSEMB_I64:
        return posemb_st_read_raw(f, e, dst, err);
    case POSEMB_I32:
        return read_converted(f, e, dst, sizeof *dst, i32_to_i64, err);
    case POSEMB_I16:
        return read_converted(f, e, dst, sizeof *dst, i16_to_i64, err);
    case POSEMB_I8:
        return read_converted(f, e, dst, sizeof *dst, i8_to_i64, err);
    case POSEMB_U8:
        return read_converted(f, e, dst, sizeof *dst, u8_to_i64, err);
    case POSEMB_BOOL:
        return read_converted(f, e, dst, sizeof *dst, bool_to_i64, err);
    default:
        return refuse_dtype(f, e, "an integer or bool type", err);
    }
}

posemb_status posemb_st_load_f32(const posemb_st_file *f, const char *name, int ndim, const int64_t *shape, float *dst,
                                 posemb_error *err)
{
    char nb[NAME_BUF], got[POSEMB_MAX_DIMS * 24], want[POSEMB_MAX_DIMS * 24];
    const posemb_st_entry *e = posemb_st_find(f, name);
    if (!e) return posemb_fail(err, POSEMB_EFORMAT, "%s: no tensor '%s'", f->path, PRINTABLE(name, nb));
    if (!posemb_dtype_is_float(e->dtype)) return refuse_dtype(f, e, "a floating-point type", err);
    int same = e->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = e->shape[i] == shape[i];
    if (!same) {
        posemb_shape_str(e->ndim, e->shape, got, (int)sizeof got);
        posemb_shape_str(ndim < 0 ? 0 : ndim > POSEMB_MAX_DIMS ? POSEMB_MAX_DIMS : ndim, shape, want, (int)sizeof want);
        return posemb_fail(err, POSEMB_EFORMAT, "%s: tensor '%s' has shape %s, expected %s", f->path,
                           PRINTABLE(name, nb), got, want);
    }
    return posemb_st_read_f32(f, e, dst, err);
}

/* ------------------------------------------------------------- writing */

struct posemb_st_wtensor {
    char *name;
    posemb_dtype dtype;
    int ndim;
    int64_t shape[POSEMB_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
};

void posemb_st_writer_init(posemb_st_writer *w) { memset(w, 0, sizeof *w); }

void posemb_st_writer_free(posemb_st_writer *w)
{
    for (int i = 0; i < w->n; i++) free(w->tensors[i].name);
    for (int i = 0; i < w->n_meta; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->tensors);
    free(w->meta_keys);
    free(w->meta_values);
    memset(w, 0, sizeof *w);
}

/* Refuses names the reader would refuse or mangle: not UTF-8, or holding
 * the metadata key. what says whose name it is. */
static posemb_status check_name(const char *what, const char *name, posemb_error *err)
{
    char nb[NAME_BUF];
    if (!name) return posemb_fail(err, POSEMB_EINVAL, "%s: name is NULL", what);
    size_t n = strlen(name);
    if (utf8_bad_byte((const unsigned char *)name, n) != n)
        return posemb_fail(err, POSEMB_EINVAL, "%s '%s': not valid UTF-8", what, PRINTABLE(name, nb));
    return POSEMB_OK;
}

/* Bytes of a tensor of dtype and shape, refusing what the reader refuses. */
static posemb_status tensor_nbytes(const char *name, posemb_dtype dtype, int ndim, const int64_t *shape, uint64_t *out,
                                   posemb_error *err)
{
    char nb[NAME_BUF];
    if (!dtype_valid(dtype))
        return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': invalid dtype %d", PRINTABLE(name, nb), (int)dtype);
    if (ndim < 0 || ndim > POSEMB_MAX_DIMS || (ndim > 0 && !shape))
        return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': %d dimensions (0 to %d)", PRINTABLE(name, nb), ndim,
                           POSEMB_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || (double)shape[i] > MAX_JSON_INT)
            return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': dimension %d is %lld (0 to 2^53 - 1)",
                               PRINTABLE(name, nb), i, (long long)shape[i]);
    int64_t numel = posemb_shape_numel(ndim, shape);
    uint64_t nbytes;
    if (numel < 0 || mul_u64((uint64_t)numel, posemb_dtype_size(dtype), &nbytes) != 0 || (double)nbytes > MAX_JSON_INT)
        return posemb_fail(err, POSEMB_ERANGE, "tensor '%s': too large", PRINTABLE(name, nb));
    *out = nbytes;
    return POSEMB_OK;
}

static posemb_status writer_grow(posemb_st_writer *w, posemb_error *err)
{
    if (w->n < w->cap) return POSEMB_OK;
    int cap = w->cap ? 2 * w->cap : 16;
    struct posemb_st_wtensor *t = realloc(w->tensors, (size_t)cap * sizeof *t);
    if (!t) return posemb_fail(err, POSEMB_ENOMEM, "safetensors writer: out of memory for %d tensors", cap);
    w->tensors = t;
    w->cap = cap;
    return POSEMB_OK;
}

posemb_status posemb_st_writer_add(posemb_st_writer *w, const char *name, posemb_dtype dtype, int ndim,
                                   const int64_t *shape, const void *data, posemb_error *err)
{
    char nb[NAME_BUF];
    uint64_t nbytes = 0;
    posemb_status st = check_name("tensor", name, err);
    if (st) return st;
    if (!strcmp(name, METADATA_KEY))
        return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': name is reserved for metadata", METADATA_KEY);
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->tensors[i].name, name))
            return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': duplicate name", PRINTABLE(name, nb));
    st = tensor_nbytes(name, dtype, ndim, shape, &nbytes, err);
    if (st) return st;
    if (!data && nbytes > 0) return posemb_fail(err, POSEMB_EINVAL, "tensor '%s': data is NULL", PRINTABLE(name, nb));
    st = writer_grow(w, err);
    if (st) return st;
    struct posemb_st_wtensor *t = &w->tensors[w->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) return posemb_fail(err, POSEMB_ENOMEM, "tensor '%s': out of memory", PRINTABLE(name, nb));
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->data = data;
    t->nbytes = nbytes;
    w->n++;
    return POSEMB_OK;
}

posemb_status posemb_st_writer_add_f32(posemb_st_writer *w, const char *name, int ndim, const int64_t *shape,
                                       const float *data, posemb_error *err)
{
    return posemb_st_writer_add(w, name, POSEMB_F32, ndim, shape, data, err);
}

/* Duplicate keys are refused rather than overwritten, like tensor names. */
posemb_status posemb_st_writer_meta(posemb_st_writer *w, const char *key, const char *value, posemb_error *err)
{
    char kb[NAME_BUF];
    posemb_status st = check_name("metadata key", key, err);
    if (!st) st = check_name("metadata value", value, err);
    if (st) return st;
    for (int i = 0; i < w->n_meta; i++)
        if (!strcmp(w->meta_keys[i], key))
            return posemb_fail(err, POSEMB_EINVAL, "metadata key '%s': duplicate", PRINTABLE(key, kb));
    if (w->n_meta == w->cap_meta) {
        int cap = w->cap_meta ? 2 * w->cap_meta : 8;
        char **k = realloc(w->meta_keys, (size_t)cap * sizeof *k);
        if (k) w->meta_keys = k;
        char **v = k ? realloc(w->meta_values, (size_t)cap * sizeof *v) : NULL;
        if (v) w->meta_values = v;
        if (!k || !v) return posemb_fail(err, POSEMB_ENOMEM, "safetensors writer: out of memory for metadata");
        w->cap_meta = cap;
    }
    char *kc = strdup(key), *vc = strdup(value);
    if (!kc || !vc) {
        free(kc);
        free(vc);
        return posemb_fail(err, POSEMB_ENOMEM, "safetensors writer: out of memory for metadata");
    }
    w->meta_keys[w->n_meta] = kc;
    w->meta_values[w->n_meta] = vc;
    w->n_meta++;
    return POSEMB_OK;
}

/* Decreasing element size, then name: every tensor then starts at a
 * multiple of its element size (the data section starts at a multiple of 8). */
static int cmp_wtensor(const void *a, const void *b)
{
    const struct posemb_st_wtensor *x = *(const struct posemb_st_wtensor *const *)a;
    const struct posemb_st_wtensor *y = *(const struct posemb_st_wtensor *const *)b;
    size_t sx = posemb_dtype_size(x->dtype), sy = posemb_dtype_size(y->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A JSON integer printed exactly: cJSON's number printer switches to
 * exponent form ("1e+15") for large integral doubles, which the reference
 * reader refuses, so integers go in as raw text. */
static cJSON *json_int(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_int_array(const uint64_t *v, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        cJSON *item = json_int(v[i]);
        if (!item || !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

/* Adds item to obj under key; on failure deletes item. Returns 0 or -1. */
static int json_put(cJSON *obj, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, key, item)) return 0;
    cJSON_Delete(item);
    return -1;
}

static cJSON *tensor_json(const struct posemb_st_wtensor *t, uint64_t begin)
{
    uint64_t dims[POSEMB_MAX_DIMS], offsets[2] = {begin, begin + t->nbytes};
    for (int i = 0; i < t->ndim; i++) dims[i] = (uint64_t)t->shape[i];
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return NULL;
    if (json_put(obj, "dtype", cJSON_CreateString(posemb_dtype_name(t->dtype))) ||
        json_put(obj, "shape", json_int_array(dims, t->ndim)) ||
        json_put(obj, "data_offsets", json_int_array(offsets, 2))) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

static cJSON *metadata_json(const posemb_st_writer *w)
{
    cJSON *obj = cJSON_CreateObject();
    for (int i = 0; obj && i < w->n_meta; i++) {
        if (json_put(obj, w->meta_keys[i], cJSON_CreateString(w->meta_values[i]))) {
            cJSON_Delete(obj);
            return NULL;
        }
    }
    return obj;
}

/* The header JSON for the tensors in order, __metadata__ first. */
static cJSON *header_json(const posemb_st_writer *w, struct posemb_st_wtensor *const *order)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    if (w->n_meta > 0 && json_put(root, METADATA_KEY, metadata_json(w))) goto fail;
    uint64_t offset = 0;
    for (int i = 0; i < w->n; i++) {
        if (json_put(root, order[i]->name, tensor_json(order[i], offset))) goto fail;
        offset += order[i]->nbytes;
    }
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

/* The 8-byte length, then the JSON padded with spaces so that the data
 * section starts at a multiple of 8. Returns a malloc'd buffer. */
static unsigned char *header_bytes(const posemb_st_writer *w, struct posemb_st_wtensor *const *order, size_t *size)
{
    cJSON *root = header_json(w, order);
    char *json = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return NULL;
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    unsigned char *buf = malloc(8 + padded);
    if (buf) {
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)padded >> (8 * i));
        memcpy(buf + 8, json, len);
        memset(buf + 8 + len, ' ', padded - len);
        *size = 8 + padded;
    }
    cJSON_free(json);
    return buf;
}

/* Header then tensor data, through the shared whole-or-nothing writer. */
static posemb_status write_file(const char *path, const unsigned char *header, size_t header_size,
                                struct posemb_st_wtensor *const *order, int n, posemb_error *err)
{
    posemb_atomic_file af;
    posemb_status st = posemb_atomic_open(&af, path, err);
    if (st) return st;
    int ok = fwrite(header, 1, header_size, af.f) == header_size;
    for (int i = 0; ok && i < n; i++)
        if (order[i]->nbytes)
            ok = fwrite(order[i]->data, 1, (size_t)order[i]->nbytes, af.f) == (size_t)order[i]->nbytes;
    if (ok) return posemb_atomic_commit(&af, err);
    int saved = errno;
    posemb_atomic_abort(&af);
    return posemb_fail(err, POSEMB_EIO, "%s: cannot write: %s", path, strerror(saved));
}

posemb_status posemb_st_write(const posemb_st_writer *w, const char *path, posemb_error *err)
{
    struct posemb_st_wtensor **order = malloc(((size_t)w->n + 1) * sizeof *order);
    if (!order) return posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < w->n; i++) order[i] = &w->tensors[i];
    qsort(order, (size_t)w->n, sizeof *order, cmp_wtensor);
    size_t header_size = 0;
    unsigned char *header = header_bytes(w, order, &header_size);
    posemb_status st = header ? write_file(path, header, header_size, order, w->n, err)
                              : posemb_fail(err, POSEMB_ENOMEM, "%s: out of memory building the header", path);
    free(header);
    free(order);
    return st;
}
