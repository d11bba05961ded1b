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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
static enum log_style log_style = LOG_STYLE_TEXT;
static int journal_fd = -1; /* the native protocol's socket, or -1 */
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

int log_style_parse(const char *name, enum log_style *style)
{
    if (strcmp(name, "text") == 0)
        *style = LOG_STYLE_TEXT;
    else if (strcmp(name, "json") == 0)
        *style = LOG_STYLE_JSON;
    else
        return -EINVAL;
    return 0;
}

int log_target_parse(const char *name, enum log_target *target)
{
    if (strcmp(name, "auto") == 0)
        *target = LOG_TARGET_AUTO;
    else if (strcmp(name, "stderr") == 0)
        *target = LOG_TARGET_STDERR;
    else if (strcmp(name, "journal") == 0)
        *target = LOG_TARGET_JOURNAL;
    else
        return -EINVAL;
    return 0;
}

static int journal_open(void)
{
    const char *path = getenv("WEIR_JOURNAL_SOCKET");
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int fd, rc;

    if (!path || !*path)
        path = "/run/systemd/journal/socket";
    if (strlen(path) >= sizeof(un.sun_path))
        return -ENAMETOOLONG;
    memcpy(un.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&un, sizeof(un)) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int log_setup(enum log_style style, enum log_target target)
{
    bool journal =
        target == LOG_TARGET_JOURNAL ||
        (target == LOG_TARGET_AUTO && log_format == LOG_FORMAT_JOURNAL &&
         style == LOG_STYLE_TEXT);
    int fd;

    log_style = style;
    if (target == LOG_TARGET_STDERR && log_format == LOG_FORMAT_JOURNAL)
        log_format = LOG_FORMAT_TIMESTAMP;
    if (!journal)
        return 0;
    fd = journal_open();
    if (fd < 0)
        return target == LOG_TARGET_JOURNAL ? fd : 0;
    journal_fd = fd;
    return 0;
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

/* The fields a message names by weir's own wording: "pipeline NAME: ",
 * "client PEER" and "sink ADDRESS" (or "connect(ed) to ADDRESS"), each
 * up to a space (a trailing ':' dropped). */
struct fields {
    char pipeline[72], sink[160], peer[96];
};

static void field_after(const char *msg, const char *word, char *out,
                        size_t cap)
{
    const char *p = strstr(msg, word);
    size_t n = 0;

    out[0] = '\0';
    if (!p)
        return;
    p += strlen(word);
    while (p[n] && p[n] != ' ' && n + 1 < cap)
        n++;
    if (n > 0 && p[n - 1] == ':')
        n--;
    memcpy(out, p, n);
    out[n] = '\0';
}

static void fields_of(const char *msg, struct fields *f)
{
    f->pipeline[0] = '\0';
    if (strncmp(msg, "pipeline ", 9) == 0)
        field_after(msg, "pipeline ", f->pipeline, sizeof(f->pipeline));
    field_after(msg, " client ", f->peer, sizeof(f->peer));
    field_after(msg, " sink ", f->sink, sizeof(f->sink));
    if (!f->sink[0])
        field_after(msg, " connect to ", f->sink, sizeof(f->sink));
    if (!f->sink[0])
        field_after(msg, " connected to ", f->sink, sizeof(f->sink));
}

/* s as a JSON string into buf[*n..cap). */
static void json_str(char *buf, size_t *n, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    if (*n < cap)
        buf[(*n)++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*n + 7 >= cap)
            break;
        if (*c == '"' || *c == '\\') {
            buf[(*n)++] = '\\';
            buf[(*n)++] = (char)*c;
        } else if (*c < 0x20) {
            memcpy(buf + *n, "\\u00", 4);
            *n += 4;
            buf[(*n)++] = hex[*c >> 4];
            buf[(*n)++] = hex[*c & 15];
        } else {
            buf[(*n)++] = (char)*c;
        }
    }
    if (*n < cap)
        buf[(*n)++] = '"';
}

static void json_key(char *buf, size_t *n, size_t cap, const char *key,
                     const char *v)
{
    if (!v[0])
        return;
    *n += (size_t)snprintf(buf + *n, cap > *n ? cap - *n : 0, ",\"%s\":", key);
    if (*n < cap)
        json_str(buf, n, cap, v);
}

/* One JSON object: {"time":..,"level":..,"msg":..,"pipeline":..}. */
static size_t json_line(char *line, size_t cap, enum log_level level,
                        const char *msg)
{
    char ts[64];
    struct fields f;
    size_t n, tn = format_timestamp(ts, sizeof(ts));

    if (tn > 0 && ts[tn - 1] == ' ')
        ts[--tn] = '\0';
    fields_of(msg, &f);
    n = (size_t)snprintf(
        line, cap,
        "%s{\"time\":\"%s\",\"level\":\"%s\","
        "\"msg\":",
        log_format == LOG_FORMAT_JOURNAL ? journal_prefixes[level] : "", ts,
        level_names[level]);
    if (n >= cap)
        return cap - 1;
    json_str(line, &n, cap - 1, msg);
    json_key(line, &n, cap - 1, "pipeline", f.pipeline);
    json_key(line, &n, cap - 1, "sink", f.sink);
    json_key(line, &n, cap - 1, "peer", f.peer);
    if (n < cap - 1)
        line[n++] = '}';
    return n;
}

/* One datagram of journald's native protocol; false when it did not
 * go. A message is one line, so every field takes the simple form. */
static bool journal_send(enum log_level level, const char *msg)
{
    char buf[4096];
    struct fields f;
    size_t n;

    fields_of(msg, &f);
    n = (size_t)snprintf(buf, sizeof(buf),
                         "PRIORITY=%c\nSYSLOG_IDENTIFIER=weir\nMESSAGE=%s\n",
                         journal_prefixes[level][1], msg);
    if (n < sizeof(buf) && f.pipeline[0])
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "PIPELINE=%s\n",
                              f.pipeline);
    if (n < sizeof(buf) && f.sink[0])
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "SINK=%s\n", f.sink);
    if (n < sizeof(buf) && f.peer[0])
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "PEER=%s\n", f.peer);
    if (n >= sizeof(buf))
        return false;
    return send(journal_fd, buf, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/*
 * Builds the whole line in one buffer and writes it with one write(2): a
 * line of up to PIPE_BUF bytes then reaches a pipe or the journal whole,
 * whichever thread wrote it. Longer messages are cut and end in "...".
 */
/*
 * Copies msg into out as one printable line: a newline or carriage
 * return becomes a space and any other control byte \xNN, so that text
 * from a config or a peer (an escape sequence, a CR that rewinds the
 * line) can neither move the terminal's cursor nor forge a second line.
 * Bytes from 0x80 up pass, as UTF-8 does.
 */
static void printable(const char *msg, char *out, size_t cap)
{
    size_t n = 0;

    for (const unsigned char *c = (const unsigned char *)msg; *c && n + 5 < cap;
         c++) {
        if (*c == '\n' || *c == '\r')
            out[n++] = ' ';
        else if (*c < 0x20 && *c != '\t')
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *c);
        else if (*c == 0x7f)
            n += (size_t)snprintf(out + n, cap - n, "\\x7f");
        else
            out[n++] = (char)*c;
    }
    out[n] = '\0';
}

void log_vmsg(enum log_level level, int errnum, const char *fmt, va_list ap)
{
    char line[2048];
    size_t n = 0, cap = sizeof(line) - 1; /* room for the newline */
    int saved = errno;
    int r;

    if (level > log_get_level())
        return;
    {
        char raw[1536], msg[1536];

        r = vsnprintf(raw, sizeof(raw), fmt, ap);
        if (r >= 0 && errnum != 0 && (size_t)r < sizeof(raw))
            snprintf(raw + r, sizeof(raw) - (size_t)r, ": %s",
                     strerror(errnum));
        printable(raw, msg, sizeof(msg));
        if (journal_fd >= 0 && journal_send(level, msg)) {
            errno = saved;
            return;
        }
        if (log_style == LOG_STYLE_JSON) {
            n = json_line(line, cap, level, msg);
        } else {
            n = log_format == LOG_FORMAT_JOURNAL
                    ? (size_t)snprintf(line, cap, "%s", journal_prefixes[level])
                : log_format == LOG_FORMAT_TIMESTAMP
                    ? format_timestamp(line, cap)
                    : 0;
            if (log_format == LOG_FORMAT_TIMESTAMP)
                n += (size_t)snprintf(line + n, cap - n,
                                      "%s: ", level_names[level]);
            n += (size_t)snprintf(line + n, cap - n, "%s", msg);
            if (n >= cap) {
                n = cap - 1;
                memcpy(line + n - 3, "...", 3);
            }
        }
        line[n++] = '\n';
        /* Nothing useful can be done when stderr itself fails. */
        if (write(STDERR_FILENO, line, n) < 0) {
        }
        errno = saved;
    }
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
