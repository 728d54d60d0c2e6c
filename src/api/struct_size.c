/* The sizes of the public structs a binding mirrors (posemb_struct_size in
 * posemb/posemb.h): in the api layer, the top of the library and the only one that sees every public header. */
#include <string.h>

#include "posemb/posemb.h"

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
