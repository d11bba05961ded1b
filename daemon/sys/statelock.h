/*
 * statelock.h - one daemon per state directory. Two that shared one
 * would overwrite each other's checkpoints, and the one whose file was
 * overwritten would resend everything after a clean stop. The lock is
 * flock(2) on DIR/lock, which the kernel lets go when the holder exits,
 * however it exits; the file holds the holder's pid, for the message of
 * the one refused.
 */
#ifndef WEIR_DAEMON_STATELOCK_H
#define WEIR_DAEMON_STATELOCK_H

#include <sys/types.h>

/* Takes the lock of dir, making dir first when it does not exist (one
 * level), and keeps it until the process exits; a dir this process holds
 * already is 0 at once. 0; or -EWOULDBLOCK with *holder the pid of the
 * process that holds it (0 when it cannot be read), or another -errno.
 * Main thread only. */
int statelock_take(const char *dir, pid_t *holder);

#endif
