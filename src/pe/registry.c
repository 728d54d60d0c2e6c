/* Every PE family, by spec name. Adding a PE: one file, one line here. */
#include <string.h>

#include "family.h"

extern const pe_family pe_family_ape, pe_family_sin, pe_family_lsin, pe_family_rpe, pe_family_srpe, pe_family_lsrpe,
    pe_family_relative_key, pe_family_relative_key_query, pe_family_rope, pe_family_alibi, pe_family_t5,
    pe_family_kerple, pe_family_sandwich, pe_family_xpos, pe_family_fire, pe_family_cope, pe_family_fox, pe_family_tupe,
    pe_family_lrope, pe_family_ssmax, pe_family_temperature, pe_family_drope, pe_family_random, pe_family_stickbreaking,
    pe_family_pope, pe_family_path, pe_family_rope2d, pe_family_decoupled;

const pe_family *const PE_FAMILIES[] = {
    &pe_family_ape,         &pe_family_sin,   &pe_family_lsin,         &pe_family_rpe,
    &pe_family_srpe,        &pe_family_lsrpe, &pe_family_relative_key, &pe_family_relative_key_query,
    &pe_family_rope,        &pe_family_alibi, &pe_family_t5,           &pe_family_kerple,
    &pe_family_sandwich,    &pe_family_xpos,  &pe_family_fire,         &pe_family_cope,
    &pe_family_fox,         &pe_family_tupe,  &pe_family_lrope,        &pe_family_ssmax,
    &pe_family_temperature, &pe_family_drope, &pe_family_random,       &pe_family_stickbreaking,
    &pe_family_pope,        &pe_family_path,  &pe_family_rope2d,       &pe_family_decoupled,
};
const int PE_N_FAMILIES = (int)(sizeof PE_FAMILIES / sizeof PE_FAMILIES[0]);

const pe_family *pe_family_find(const char *name)
{
    for (int i = 0; i < PE_N_FAMILIES; i++)
        if (!strcmp(PE_FAMILIES[i]->name, name)) return PE_FAMILIES[i];
    return NULL;
}
