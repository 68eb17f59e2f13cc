/* clock.h - the monotonic clock timers and stage timeouts run on. */
#ifndef LF_CLOCK_H
#define LF_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and idle times, never for @timestamp
 * (that is lf_now_ns(), wall clock). Any thread. */
int64_t lf_mono_ms(void);

#endif
