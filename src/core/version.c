/* The version of the library a program runs with (posemb/version.h), and the
 * sizes of the structs bindings mirror. */
#include "posemb/version.h"

#include <string.h>

#include "posemb/analyze.h"
#include "posemb/error.h"
#include "posemb/model.h"
#include "posemb/pe.h"

const char *posemb_version(void) { return POSEMB_VERSION; }

size_t posemb_struct_size(const char *type)
{
    static const struct {
        const char *name;
        size_t size;
    } SIZES[] = {
        {"posemb_error", sizeof(posemb_error)},
        {"posemb_pe_dims", sizeof(posemb_pe_dims)},
        {"posemb_pe_named_matrix", sizeof(posemb_pe_named_matrix)},
        {"posemb_pe_export", sizeof(posemb_pe_export)},
        {"posemb_pe_family_doc", sizeof(posemb_pe_family_doc)},
        {"posemb_analyze_opts", sizeof(posemb_analyze_opts)},
        {"posemb_config", sizeof(posemb_config)},
        {"posemb_batch", sizeof(posemb_batch)},
    };
    for (size_t i = 0; type && i < sizeof SIZES / sizeof SIZES[0]; i++)
        if (!strcmp(SIZES[i].name, type)) return SIZES[i].size;
    return 0;
}
