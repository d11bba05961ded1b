/*
 * value.c - see value.h.
 */
#include "conf/value.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *name;
    uint64_t factor;
};

static const struct unit size_units[] = {
    {"", 1},      {"B", 1},     {"KiB", KiB},
    {"MiB", MiB}, {"GiB", GiB}, {"TiB", GiB * 1024},
    {NULL, 0},
};

/* Spellings we refuse to guess at, with what to write instead. */
static const struct unit ambiguous_units[] = {
    {"K", KiB},  {"KB", KiB},       {"M", MiB},         {"MB", MiB}, {"G", GiB},
    {"GB", GiB}, {"T", GiB * 1024}, {"TB", GiB * 1024}, {NULL, 0},
};

static const struct unit duration_units[] = {
    {"", 1000},     {"ms", 1},      {"s", 1000},
    {"min", 60000}, {"h", 3600000}, {NULL, 0},
};

/*
 * Reads the leading digits of s into *n and points *rest at what follows,
 * spaces skipped. strtoull is not used: it accepts signs, leading spaces
 * and hex, none of which belong in a config value.
 */
static int leading_number(const char *s, uint64_t *n, const char **rest)
{
    uint64_t v = 0;
    const char *p = s;

    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    *n = v;
    *rest = p;
    return 0;
}

static const struct unit *find_unit(const struct unit *units, const char *name)
{
    for (; units->name != NULL; units++)
        if (strcasecmp(units->name, name) == 0)
            return units;
    return NULL;
}

static int scaled(const char *s, const struct unit *units, uint64_t *out,
                  const struct unit **unit)
{
    const char *rest;
    uint64_t n;
    int r = leading_number(s, &n, &rest);

    if (r < 0)
        return r;
    *unit = find_unit(units, rest);
    if (*unit == NULL)
        return -ENOENT;
    if (n > UINT64_MAX / (*unit)->factor)
        return -ERANGE;
    *out = n * (*unit)->factor;
    return 0;
}

void value_size_format(uint64_t bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t i = 0;

    while (i < 4 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, len, "%" PRIu64 " %s", bytes, names[i]);
}

int value_size(const char *s, uint64_t min, uint64_t max, uint64_t *out,
               char *err, size_t errlen)
{
    const struct unit *unit;
    char lo[32], hi[32];
    uint64_t v;
    int r = scaled(s, size_units, &v, &unit);

    if (r == -ENOENT && s[strspn(s, "0123456789")] == '.') {
        snprintf(err, errlen,
                 "'%s': fractions are not accepted, use a "
                 "smaller unit",
                 s);
        return -EINVAL;
    }
    if (r == -ENOENT) {
        const char *rest = s + strspn(s, "0123456789 \t");
        const struct unit *amb = find_unit(ambiguous_units, rest);
        if (amb != NULL) {
            char iec[8];
            value_size_format(amb->factor, iec, sizeof(iec));
            snprintf(err, errlen,
                     "ambiguous unit '%s' in '%s': sizes are 1024-based, "
                     "write %.*s%s",
                     rest, s, (int)(rest - s), s, iec + 2);
        } else {
            snprintf(err, errlen,
                     "unknown size unit '%s' in '%s': use B, KiB, MiB or GiB",
                     rest, s);
        }
        return -EINVAL;
    }
    if (r == -EINVAL) {
        snprintf(err, errlen, "'%s' is not a size (like 64KiB or 1 MiB)", s);
        return -EINVAL;
    }
    value_size_format(min, lo, sizeof(lo));
    value_size_format(max, hi, sizeof(hi));
    if (r == -ERANGE || v < min || v > max) {
        snprintf(err, errlen, "size '%s' is out of range: %s to %s", s, lo, hi);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int value_bool(const char *s, bool *out, char *err, size_t errlen)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};

    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    snprintf(err, errlen, "'%s' is not a boolean: use yes or no", s);
    return -EINVAL;
}

int value_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out,
               char *err, size_t errlen)
{
    const char *rest;
    uint64_t v;
    int r = leading_number(s, &v, &rest);

    if (r == -EINVAL || (r == 0 && *rest != '\0')) {
        snprintf(err, errlen, "'%s' is not a whole number", s);
        return -EINVAL;
    }
    if (r == -ERANGE || v < min || v > max) {
        snprintf(err, errlen, "'%s' is out of range: %" PRIu64 " to %" PRIu64,
                 s, min, max);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int value_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
                      uint64_t *out, char *err, size_t errlen)
{
    const struct unit *unit;
    uint64_t v;
    int r = scaled(s, duration_units, &v, &unit);

    if (r == -EINVAL || r == -ENOENT) {
        snprintf(err, errlen, "'%s' is not a duration (like 5s, 500ms or 2min)",
                 s);
        return -EINVAL;
    }
    if (r == -ERANGE || v < min_ms || v > max_ms) {
        snprintf(err, errlen,
                 "duration '%s' is out of range: %" PRIu64 "ms to %" PRIu64 "s",
                 s, min_ms, max_ms / 1000);
        return -EINVAL;
    }
    *out = v;
    return 0;
}
