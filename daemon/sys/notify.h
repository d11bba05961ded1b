/*
 * notify.h - telling systemd how the service is doing (sd_notify).
 *
 * Each call sends one datagram to $NOTIFY_SOCKET. Without NOTIFY_SOCKET
 * (weir not started by systemd with Type=notify) every call does nothing
 * and returns 0, so the run path calls them unconditionally. The variable
 * is left in the environment: a reload notifies again later.
 *
 * Each returns what sd_notify returns: > 0 when the message was sent, 0
 * when there is no NOTIFY_SOCKET, -errno when sending failed. A failure
 * never stops the daemon; the caller may log it.
 *
 * Any thread may call these; each call opens and closes its own socket.
 */
#ifndef WEIR_DAEMON_NOTIFY_H
#define WEIR_DAEMON_NOTIFY_H

#include <stdint.h>

/* READY=1: every pipeline is set up and listening (also after a reload). */
int notify_ready(void);

/* RELOADING=1 with MONOTONIC_USEC=now (CLOCK_MONOTONIC), which systemd 253+
 * uses to tell this reload from an earlier one; follow with notify_ready(). */
int notify_reloading(void);

/* STOPPING=1: the drain has begun. */
int notify_stopping(void);

/* STATUS=...: one line for `systemctl status`; newlines become spaces and
 * the text is cut at 255 bytes. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* WATCHDOG=1: the main loop is alive. */
int notify_watchdog(void);

/*
 * How often to send WATCHDOG=1, in microseconds: half of $WATCHDOG_USEC
 * when it is set and $WATCHDOG_PID is unset or names this process, else 0
 * (no watchdog: send nothing).
 */
uint64_t notify_watchdog_usec(void);

#endif
