/* What the other layers, the CLI and the tests call of posemb/error.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_CORE_ERROR_INTERNAL_H
#define POSEMB_CORE_ERROR_INTERNAL_H

#include "posemb/error.h"

/* Clears err to POSEMB_OK with an empty message. */
void posemb_error_clear(posemb_error *err);

#endif
