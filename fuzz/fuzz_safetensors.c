/* safetensors: header and data. Every tensor a file declares is read as the
 * reader offers it (float or integer); the reader must have checked offsets,
 * shapes and dtypes against the file first. */
#include <stdlib.h>

#include "fuzz.h"
#include "posemb/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("model.safetensors", data, size);
    posemb_st_file f;
    posemb_error err;
    if (posemb_st_open(&f, path, &err)) return 0;
    for (int i = 0; i < f.n_entries; i++) {
        const posemb_st_entry *e = &f.entries[i];
        void *buf = malloc((size_t)e->numel * 8 + 8);
        if (!buf) continue;
        if (posemb_st_read_f32(&f, e, buf, &err)) posemb_st_read_i64(&f, e, buf, &err);
        free(buf);
    }
    posemb_st_find(&f, "x");
    posemb_st_meta(&f, "format");
    posemb_st_close(&f);
    return 0;
}
