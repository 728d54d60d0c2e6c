/* What the other layers, the CLI and the tests call of posemb/threads.h's
 * part of the library: not part of the public API, not installed. */
#ifndef POSEMB_CORE_THREADS_INTERNAL_H
#define POSEMB_CORE_THREADS_INTERNAL_H

#include "posemb/threads.h"

/* The calling thread's index inside a parallel region (0 outside). */
int posemb_thread_id(void);

#endif
