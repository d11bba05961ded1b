/*
 * config_parse.c - weir.conf, read with inih.
 *
 * inih splits key = value lines, strips comments and whitespace, and calls
 * us once per key. Debian's inih has no line number in that callback and no
 * callback for a section header, so we hand it the file ourselves, one
 * physical line at a time, through an ini_reader: the reader counts lines,
 * and it takes the section headers and the malformed lines for itself
 * (reporting each, where inih would report only the first) and hands inih a
 * blank line in their place. A key's callback therefore always comes while
 * the reader's count is the key's own line, whatever comments, blank lines
 * or overlong lines came before it. Continuation lines are turned off: an
 * indented line is a line of its own, never a hidden extra value.
 */
#include "conf/config_parser.h"
#include "conf/sockaddr.h"
#include "conf/suggest.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longer lines are an error; inih's buffer may grow to hold this much. */
#define MAX_LINE 8192

static bool valid_name(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    return n > 0 && n <= CONF_MAX_NAME && s[n] == '\0';
}

/* "[daemon]" or "[pipeline NAME]"; `inside` is the trimmed text between
 * the brackets. */
static void begin_section(struct parser *p, char *inside)
{
    char *word = inside, *rest = inside + strcspn(inside, " \t");
    struct conf_loc loc = here(p);

    if (*rest != '\0') {
        *rest++ = '\0';
        rest += strspn(rest, " \t");
    }
    p->section = SECTION_IGNORED;
    p->pipeline = NULL;
    if (strcmp(word, "daemon") == 0) {
        if (*rest != '\0') {
            PARSE_ERROR(p, "[daemon] takes no name");
        } else if (conf_loc_set(&p->conf->daemon.daemon_loc)) {
            PARSE_ERROR(p, "[daemon] is already defined at line %u",
                        p->conf->daemon.daemon_loc.line);
        } else {
            p->conf->daemon.daemon_loc = loc;
            p->section = SECTION_DAEMON;
        }
    } else if (strcmp(word, "pipeline") == 0) {
        if (*rest == '\0') {
            PARSE_ERROR(p, "a pipeline needs a name: [pipeline NAME]");
        } else if (!valid_name(rest)) {
            PARSE_ERROR(p,
                        "bad pipeline name '%s': use up to %d letters, "
                        "digits, '_', '.' or '-'",
                        rest, CONF_MAX_NAME);
        } else {
            p->pipeline = config_add_pipeline(p->conf, rest, &loc);
            if (p->pipeline == NULL)
                PARSE_ERROR(p, "out of memory");
            else
                p->section = SECTION_PIPELINE;
        }
    } else {
        static const char *const sections[] = {"daemon", "pipeline", NULL};
        const char *near = suggest_word(word, strlen(word), sections);

        if (near != NULL)
            PARSE_ERROR(p,
                        "unknown section '[%s%s%s]' (did you mean "
                        "'[%s%s%s]'?)",
                        word, *rest ? " " : "", rest, near, *rest ? " " : "",
                        rest);
        else
            PARSE_ERROR(p,
                        "unknown section '[%s%s%s]': expected [daemon] or "
                        "[pipeline NAME]",
                        word, *rest ? " " : "", rest);
    }
}

/* What a trimmed line holds, by inih's own rules (ini.c, ini_parse_stream):
 * a key ends at '=' or ':', and a ';' after whitespace starts a comment. */
static bool is_key_line(const char *s)
{
    for (const char *c = s; *c; c++) {
        if (*c == '=' || *c == ':')
            return true;
        if (*c == ';' && c > s && isspace((unsigned char)c[-1]))
            return false;
    }
    return false;
}

static void screen_header(struct parser *p, char *s)
{
    char *close = strchr(s, ']'), *after, *inside, *end;

    if (close == NULL) {
        PARSE_ERROR(p, "missing ']' in section header");
        p->section = SECTION_IGNORED;
        return;
    }
    after = close + 1 + strspn(close + 1, " \t");
    if (*after != '\0' && *after != ';' && *after != '#') {
        PARSE_ERROR(p, "unexpected text after ']': '%s'", after);
        p->section = SECTION_IGNORED;
        return;
    }
    *close = '\0';
    inside = s + 1 + strspn(s + 1, " \t");
    for (end = close; end > inside && isspace((unsigned char)end[-1]);)
        *--end = '\0';
    begin_section(p, inside);
}

/*
 * Takes section headers and malformed lines away from inih (see the top of
 * the file). Returns true when inih may have the line as it is. Works on a
 * copy: the line itself must reach inih unchanged, newline included, or
 * inih would take the next line for the rest of this one.
 */
static bool screen_line(struct parser *p)
{
    char *copy, *s, *end;
    bool pass = false;

    if (strlen(p->line) != p->len) {
        PARSE_ERROR(p, "NUL byte in line");
        return false;
    }
    if (p->len > MAX_LINE) {
        PARSE_ERROR(p, "line longer than %d bytes", MAX_LINE);
        return false;
    }
    copy = strdup(p->line);
    if (copy == NULL) {
        PARSE_ERROR(p, "out of memory");
        return false;
    }
    s = copy;
    if (p->lineno == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
        s += 3; /* a UTF-8 byte-order mark, which inih skips too */
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    if (*s == '\0' || *s == ';' || *s == '#')
        pass = true;
    else if (*s == '[')
        screen_header(p, s);
    else if (is_key_line(s))
        pass = true;
    else
        PARSE_ERROR(p, "expected 'key = value' or '[section]', not '%s'", s);
    free(copy);
    return pass;
}

/* The ini_reader: serves the current physical line in pieces of at most
 * size-1 bytes, and reads the next one when it is used up. */
static char *read_line(char *buf, int size, void *stream)
{
    struct parser *p = stream;
    size_t n;
    ssize_t got;

    if (p->off >= p->len) {
        got = getline(&p->line, &p->cap, p->in);
        if (got < 0)
            return NULL;
        p->lineno++;
        p->len = (size_t)got;
        p->off = 0;
        if (!screen_line(p)) {
            strcpy(p->line, "\n");
            p->len = 1;
        }
    }
    n = p->len - p->off;
    if (n > (size_t)size - 1)
        n = (size_t)size - 1;
    memcpy(buf, p->line + p->off, n);
    buf[n] = '\0';
    p->off += n;
    return buf;
}

static const char *section_label(enum section s)
{
    return s == SECTION_DAEMON ? "[daemon]" : "[pipeline]";
}

/* The key of `section` nearest to a misspelt name, or NULL. */
static const char *near_key(enum section section, const char *name)
{
    const char *names[16];
    size_t n = 0;

    for (const struct key_def *k = config_keys; k->name != NULL; k++)
        if (k->section == section && n < sizeof(names) / sizeof(names[0]) - 1)
            names[n++] = k->name;
    names[n] = NULL;
    return suggest_word(name, strlen(name), names);
}

static int on_key(void *user, const char *section, const char *name,
                  const char *value)
{
    struct parser *p = user;
    const struct key_def *k, *other = NULL;

    (void)section; /* ours comes from the reader; see the top */
    if (p->section == SECTION_IGNORED)
        return 1;
    if (*name == '\0') {
        PARSE_ERROR(p, "missing key before '='");
        return 1;
    }
    if (p->section == SECTION_NONE) {
        PARSE_ERROR(p,
                    "'%s' is outside a section: put it under [daemon] or "
                    "[pipeline NAME]",
                    name);
        return 1;
    }
    for (k = config_keys; k->name != NULL; k++) {
        if (strcmp(k->name, name) == 0 && k->section == p->section)
            break;
        if (strcmp(k->name, name) == 0)
            other = k;
    }
    if (k->name == NULL) {
        const char *near = near_key(p->section, name);

        if (other != NULL)
            PARSE_ERROR(p, "'%s' belongs in %s, not in %s", name,
                        section_label(other->section),
                        section_label(p->section));
        else if (near != NULL)
            PARSE_ERROR(p, "unknown key '%s' in %s (did you mean '%s'?)", name,
                        section_label(p->section), near);
        else
            PARSE_ERROR(p, "unknown key '%s' in %s", name,
                        section_label(p->section));
        return 1;
    }
    if (*value == '\0' && !k->takes_empty) {
        PARSE_ERROR(p, "'%s' needs a value", name);
        return 1;
    }
    k->set(p, value);
    return 1;
}

static struct weir_config *parse_stream(FILE *in, const char *name,
                                        const char *base_dir, bool names,
                                        unsigned *errors)
{
    struct parser p = {.in = in};
    int r;

    p.conf = config_new(name, base_dir);
    if (p.conf == NULL) {
        log_errx("%s: out of memory", name);
        *errors = 1;
        return NULL;
    }
    /* inih's settings are process-wide; only this file parses INI. */
    ini_allow_multiline = false;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = MAX_LINE + 3;
    r = ini_parse_stream(read_line, &p, on_key, &p);
    free(p.line);
    if (r == -2) {
        struct conf_loc loc = here(&p);
        config_error(&p.diag, &loc, "out of memory");
    }
    if (ferror(in)) {
        log_errx("%s: read error", name);
        p.diag.errors++;
    }
    config_check(p.conf, &p.diag);
    /* Warnings among the errors, in line order: a name that does not
     * resolve may be the typo behind an error. */
    if (names)
        sockaddr_check_names(p.conf, &p.diag);
    config_diag_flush(&p.diag);
    if (p.diag.errors > CONF_ERRORS_SHOWN)
        log_errx("%s: and %u more errors", name,
                 p.diag.errors - CONF_ERRORS_SHOWN);
    *errors = p.diag.errors;
    if (p.diag.errors == 0)
        return p.conf;
    config_free(p.conf);
    return NULL;
}

/*
 * The config file, opened so that nothing waits: a path that became a
 * FIFO would block a start or a reload until some writer came. Only a
 * regular file of at most CONF_MAX_FILE_SIZE bytes is read. NULL, after
 * saying why, otherwise.
 */
static FILE *open_config(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    FILE *in;

    if (fd < 0) {
        log_errx("%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        log_errx("%s: %s", path, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        log_errx("%s: %s", path, strerror(EISDIR));
    } else if (!S_ISREG(st.st_mode)) {
        log_errx("%s: not a regular file (a config must be one)", path);
    } else if ((uint64_t)st.st_size > CONF_MAX_FILE_SIZE) {
        log_errx("%s: %llu bytes is larger than a config may be (%llu MiB)",
                 path, (unsigned long long)st.st_size,
                 (unsigned long long)(CONF_MAX_FILE_SIZE / MiB));
    } else if ((in = fdopen(fd, "r")) != NULL) {
        return in;
    } else {
        log_errx("%s: %s", path, strerror(errno));
    }
    close(fd);
    return NULL;
}

static struct weir_config *load_file(const char *path, bool names,
                                     unsigned *errors)
{
    char *copy = strdup(path), *dir, real[PATH_MAX];
    struct weir_config *conf = NULL;
    FILE *in;

    *errors = 1;
    if (copy == NULL) {
        log_errx("%s: out of memory", path);
        return NULL;
    }
    dir = dirname(copy);
    in = open_config(path);
    if (in == NULL) {
        /* open_config said why. */
    } else if (realpath(dir, real) == NULL) {
        log_errx("%s: %s", dir, strerror(errno));
        fclose(in);
    } else {
        conf = parse_stream(in, path, real, names, errors);
        fclose(in);
    }
    free(copy);
    return conf;
}

struct weir_config *config_load_file(const char *path, unsigned *errors)
{
    return load_file(path, false, errors);
}

struct weir_config *config_check_file(const char *path, unsigned *errors)
{
    return load_file(path, true, errors);
}

struct weir_config *config_load_string(const char *text, const char *name,
                                       const char *base_dir, unsigned *errors)
{
    struct weir_config *conf;
    FILE *in = fmemopen((void *)text, strlen(text), "r");

    if (in == NULL) {
        log_errx("%s: %s", name, strerror(errno));
        *errors = 1;
        return NULL;
    }
    conf = parse_stream(in, name, base_dir, false, errors);
    fclose(in);
    return conf;
}
