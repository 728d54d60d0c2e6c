/* The version of the library a program runs with (posemb/version.h). */
#include "posemb/version.h"

const char *posemb_version(void) { return POSEMB_VERSION; }
