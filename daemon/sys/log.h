/*
 * log.h - the daemon's one logging family.
 *
 * Every line goes to stderr in one write(2), so lines from several threads
 * never interleave. Under systemd's journal (JOURNAL_STREAM names our
 * stderr) a line starts with the sd-daemon priority prefix <3>..<7>, which
 * journald turns into the entry's priority, so `journalctl -p warning`
 * works; elsewhere it starts with a timestamp and the level's name, or with
 * nothing at all when the caller asked for plain lines (weir --check prints
 * exactly FILE:LINE: message).
 *
 * log_err and log_warn append ": strerror(errno)"; the x variants do not.
 * No function here changes errno. fatal and fatalx log at error level and
 * exit(1).
 */
#ifndef WEIR_DAEMON_LOG_H
#define WEIR_DAEMON_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level {
    LOG_LEVEL_ERROR,
    LOG_LEVEL_WARNING,
    LOG_LEVEL_INFO,
    LOG_LEVEL_DEBUG,
};

/*
 * Chooses the line format: journald prefixes when stderr is the journal,
 * else timestamps when `timestamps` is true, else plain lines.
 */
void log_init(enum log_level level, bool timestamps);

/* log_format and log_target of [daemon]. */
enum log_style {
    LOG_STYLE_TEXT,
    LOG_STYLE_JSON, /* one JSON object per line */
};
enum log_target {
    LOG_TARGET_AUTO,   /* the journal when stderr is the journal */
    LOG_TARGET_STDERR, /* stderr, whatever it is */
    LOG_TARGET_JOURNAL /* journald's native protocol */
};

/*
 * After log_init, before any other thread logs. JSON lines carry time,
 * level, msg and, when the message names them ("pipeline NAME: ...",
 * "client PEER", "sink ADDRESS"), pipeline, peer and sink. The journal
 * target sends each line as one datagram of journald's native protocol
 * (PRIORITY=, MESSAGE=, SYSLOG_IDENTIFIER=weir, PIPELINE=, SINK=, PEER=)
 * to /run/systemd/journal/socket (WEIR_JOURNAL_SOCKET replaces the path,
 * for tests); a line the journal does not take goes to stderr. Returns
 * 0, or -errno when the journal was asked for and cannot be reached
 * (the lines then go to stderr).
 */
int log_setup(enum log_style style, enum log_target target);
int log_style_parse(const char *name, enum log_style *style);
int log_target_parse(const char *name, enum log_target *target);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "error", "warning", "info", "debug" -> 0; anything else -> -EINVAL. */
int log_level_parse(const char *name, enum log_level *level);
const char *log_level_name(enum log_level level);

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))

void log_err(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_errx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
_Noreturn void fatal(const char *fmt, ...) LOG_PRINTF(1, 2);
_Noreturn void fatalx(const char *fmt, ...) LOG_PRINTF(1, 2);

/* The common body, for callers that hold a va_list. */
void log_vmsg(enum log_level level, int errnum, const char *fmt, va_list ap)
    LOG_PRINTF(3, 0);

#endif
