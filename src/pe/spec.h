/* Splitting a spec string into components and options (spec.c). */
#ifndef POSEMB_PE_SPEC_H
#define POSEMB_PE_SPEC_H

#include "family.h"

typedef struct pe_spec_comp {
    char family[32];
    pe_opts opts;
} pe_spec_comp;

posemb_status pe_spec_parse(const char *spec, pe_spec_comp *comps, int max_comps, int *n_comps, posemb_error *err);

#endif
