/* The one clock of posemb: seconds on the monotonic clock, for durations
 * (training throughput, time left, how long an analysis took). Never goes
 * back when the wall clock is set. */
#ifndef POSEMB_TIMER_H
#define POSEMB_TIMER_H

#include "posemb/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double posemb_timer_now(void);

#ifdef __cplusplus
}
#endif

#endif
