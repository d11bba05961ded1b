/*
 * clock.h - the daemon's one clock: CLOCK_MONOTONIC in nanoseconds, for
 * rates, timeouts and the watches. Never wall time, so a clock step does
 * not fire or stall them.
 */
#ifndef WEIR_DAEMON_CLOCK_H
#define WEIR_DAEMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
