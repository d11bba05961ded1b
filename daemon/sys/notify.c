/*
 * notify.c - see notify.h. A thin layer over libsystemd's sd_notify, so
 * that the message formats live in one place.
 */
#include "sys/notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

/* 0 keeps NOTIFY_SOCKET set: every later call must still find it. */
#define KEEP_ENV 0

int notify_ready(void)
{
    return sd_notify(KEEP_ENV, "READY=1");
}

int notify_reloading(void)
{
    struct timespec ts;
    unsigned long long usec;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    usec = (unsigned long long)ts.tv_sec * 1000000ULL +
           (unsigned long long)ts.tv_nsec / 1000ULL;
    return sd_notifyf(KEEP_ENV, "RELOADING=1\nMONOTONIC_USEC=%llu", usec);
}

int notify_stopping(void)
{
    return sd_notify(KEEP_ENV, "STOPPING=1");
}

int notify_status(const char *fmt, ...)
{
    char line[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* A newline would start a new NAME=VALUE assignment. */
    for (char *p = line; *p != '\0'; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return sd_notifyf(KEEP_ENV, "STATUS=%s", line);
}

int notify_watchdog(void)
{
    return sd_notify(KEEP_ENV, "WATCHDOG=1");
}

uint64_t notify_watchdog_usec(void)
{
    uint64_t usec = 0;

    /* > 0 only when WATCHDOG_USEC is valid and WATCHDOG_PID is unset or
     * ours; a malformed variable (< 0) counts as no watchdog. */
    if (sd_watchdog_enabled(KEEP_ENV, &usec) <= 0)
        return 0;
    return usec / 2;
}
