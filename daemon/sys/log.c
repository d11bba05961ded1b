/*
 * log.c - see log.h.
 */
#include "sys/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum log_format {
    LOG_FORMAT_PLAIN,
    LOG_FORMAT_TIMESTAMP,
    LOG_FORMAT_JOURNAL,
};

/*
 * The format is chosen once by log_init, before any other thread exists,
 * so it needs no synchronisation. The level may change on reload while
 * workers log; it is only a filter and publishes nothing, hence relaxed.
 */
static enum log_format log_format = LOG_FORMAT_TIMESTAMP;
static _Atomic int log_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {
    [LOG_LEVEL_ERROR] = "error",
    [LOG_LEVEL_WARNING] = "warning",
    [LOG_LEVEL_INFO] = "info",
    [LOG_LEVEL_DEBUG] = "debug",
};

/* sd-daemon(3) prefixes: SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG. */
static const char *const journal_prefixes[] = {
    [LOG_LEVEL_ERROR] = "<3>",
    [LOG_LEVEL_WARNING] = "<4>",
    [LOG_LEVEL_INFO] = "<6>",
    [LOG_LEVEL_DEBUG] = "<7>",
};

/*
 * systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected to
 * stderr; a child that inherited the variable but not the stream (stderr
 * redirected to a file) must not use the prefixes, hence the comparison.
 */
static bool stderr_is_journal(void)
{
    const char *env = getenv("JOURNAL_STREAM");
    unsigned long dev, ino;
    struct stat st;

    if (env == NULL || sscanf(env, "%lu:%lu", &dev, &ino) != 2)
        return false;
    if (fstat(STDERR_FILENO, &st) != 0)
        return false;
    return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_init(enum log_level level, bool timestamps)
{
    int saved = errno;

    if (stderr_is_journal())
        log_format = LOG_FORMAT_JOURNAL;
    else if (timestamps)
        log_format = LOG_FORMAT_TIMESTAMP;
    else
        log_format = LOG_FORMAT_PLAIN;
    log_set_level(level);
    errno = saved;
}

void log_set_level(enum log_level level)
{
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
    return atomic_load_explicit(&log_level, memory_order_relaxed);
}

int log_level_parse(const char *name, enum log_level *level)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
    return level_names[level];
}

/* "2026-11-29T18:55:49.123+0000 " in local time. */
static size_t format_timestamp(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(buf + n, size - n, ".%03ld", ts.tv_nsec / 1000000);
    n += strftime(buf + n, size - n, "%z ", &tm);
    return n;
}

/*
 * Builds the whole line in one buffer and writes it with one write(2): a
 * line of up to PIPE_BUF bytes then reaches a pipe or the journal whole,
 * whichever thread wrote it. Longer messages are cut and end in "...".
 */
void log_vmsg(enum log_level level, int errnum, const char *fmt, va_list ap)
{
    char line[2048];
    size_t n = 0, cap = sizeof(line) - 1; /* room for the newline */
    int saved = errno;
    int r;

    if (level > log_get_level())
        return;
    if (log_format == LOG_FORMAT_JOURNAL) {
        n = (size_t)snprintf(line, cap, "%s", journal_prefixes[level]);
    } else if (log_format == LOG_FORMAT_TIMESTAMP) {
        n = format_timestamp(line, cap);
        n += (size_t)snprintf(line + n, cap - n, "%s: ", level_names[level]);
    }
    r = vsnprintf(line + n, cap - n, fmt, ap);
    n = r < 0 ? n : n + (size_t)r;
    if (errnum != 0 && n < cap)
        n += (size_t)snprintf(line + n, cap - n, ": %s", strerror(errnum));
    if (n >= cap) {
        n = cap - 1;
        memcpy(line + n - 3, "...", 3);
    }
    line[n++] = '\n';
    /* Nothing useful can be done when stderr itself fails. */
    if (write(STDERR_FILENO, line, n) < 0) {
    }
    errno = saved;
}

#define LOG_BODY(level, errnum)                                                \
    do {                                                                       \
        va_list ap;                                                            \
        va_start(ap, fmt);                                                     \
        log_vmsg(level, errnum, fmt, ap);                                      \
        va_end(ap);                                                            \
    } while (0)

void log_err(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_ERROR, errno);
}

void log_errx(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_ERROR, 0);
}

void log_warn(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_WARNING, errno);
}

void log_warnx(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_WARNING, 0);
}

void log_info(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_INFO, 0);
}

void log_debug(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_DEBUG, 0);
}

void fatal(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_ERROR, errno);
    exit(1);
}

void fatalx(const char *fmt, ...)
{
    LOG_BODY(LOG_LEVEL_ERROR, 0);
    exit(1);
}
