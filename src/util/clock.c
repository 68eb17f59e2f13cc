/* clock.c - the monotonic clock (see clock.h). */
#include "config.h"

#include "logferry/clock.h"

#include <time.h>

int64_t lf_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void lf_clock_read(struct lf_clock *c)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->wall_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    c->mono_ms = lf_mono_ms();
}
