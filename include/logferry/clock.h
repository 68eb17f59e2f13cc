/* clock.h - the monotonic clock timers and stage timeouts run on. */
#ifndef LF_CLOCK_H
#define LF_CLOCK_H

#include <stdint.h>

/* Both clocks, read together once per chunk of input: events of one chunk share them, so a
 * line costs no clock read (a vDSO clock_gettime is ~30 ns on some VMs: 10% of a line). */
struct lf_clock {
    int64_t wall_ns; /* CLOCK_REALTIME, for @timestamp */
    int64_t mono_ms; /* CLOCK_MONOTONIC, for stage timers */
};

void lf_clock_read(struct lf_clock *c);

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and idle times, never for @timestamp
 * (that is lf_now_ns(), wall clock). Any thread. */
int64_t lf_mono_ms(void);

#endif
