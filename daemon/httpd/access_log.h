/*
 * access_log.h - an http-listen sink's access log: one line per answer,
 * in the common log format (with the answer's time, Range and user agent
 * after it) or as JSON, appended to a file or written to standard output.
 *
 * A worker never waits for the disk: it copies its line into the log's
 * buffer under a mutex held for that copy only, and a thread of the
 * log's own writes the buffer out. A line that finds the buffer full is
 * dropped and counted. Every open log is reopened by
 * access_log_reopen_all (SIGHUP: logrotate's postrotate).
 */
#ifndef WEIR_DAEMON_ACCESS_LOG_H
#define WEIR_DAEMON_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct access_log;

enum access_log_format {
    ACCESS_LOG_CLF,
    ACCESS_LOG_JSON,
};

/* What one answer's line says. Strings need not end in NUL: each has
 * its length; NULL or 0 for none. */
struct access_entry {
    const char *client; /* "HOST:PORT" */
    const char *request;
    size_t request_len;
    int status;
    uint64_t bytes; /* of the body sent */
    uint64_t duration_us;
    const char *range;
    size_t range_len;
    const char *user_agent;
    size_t user_agent_len;
};

/* Main thread. Opens path for appending ("stdout": standard output) and
 * starts the writer; 0 or -errno. */
int access_log_open(struct access_log **out, const char *path,
                    enum access_log_format format);
/* Main thread. Writes what is buffered, stops the writer, closes. */
void access_log_close(struct access_log *l);

/* Any thread. Appends e's line; never waits for the disk. */
void access_log_put(struct access_log *l, const struct access_entry *e);

/* Main thread. Every open log reopens its path at its next write
 * (standard output is kept). */
void access_log_reopen_all(void);

/* Any thread. Lines dropped for a full buffer, by every log so far. */
uint64_t access_log_dropped(void);

#endif
