/*
 * spec.c - naming a transform: NAME or NAME:LEVEL, checked against the
 * table of kinds so the config can refuse a bad one with a sentence.
 */
#include <stdio.h>
#include <string.h>

#include "xform_spec.h"

static const struct xf_kind *const kinds[] = {
    &weir__xf_uppercase, &weir__xf_gzip,   &weir__xf_gunzip,
    &weir__xf_zstd,      &weir__xf_unzstd,
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Decimal digits only, at most 3 of them (no sign, no spaces). */
static int parse_level(const char *s, int *level)
{
    int v = 0;
    size_t i;

    for (i = 0; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9' || i == 3)
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    if (i == 0)
        return -EINVAL;
    *level = v;
    return 0;
}

int weir__xf_spec_parse(const char *spec, const struct xf_kind **kind,
                        int *level, char *why, size_t n)
{
    const char *colon;
    size_t len;
    const struct xf_kind *k = NULL;

    if (!spec) {
        if (n)
            snprintf(why, n, "no transform named");
        return -EINVAL;
    }
    colon = strchr(spec, ':');
    len = colon ? (size_t)(colon - spec) : strlen(spec);
    for (size_t i = 0; i < NKINDS; i++)
        if (strlen(kinds[i]->name) == len &&
            strncmp(kinds[i]->name, spec, len) == 0)
            k = kinds[i];
    if (!k) {
        if (n)
            snprintf(why, n,
                     "unknown transform '%.*s' (known: uppercase, gzip, "
                     "gunzip, zstd, unzstd)",
                     (int)(len > 64 ? 64 : len), spec);
        return -EINVAL;
    }
    *kind = k;
    *level = k->def_level;
    if (!colon)
        return 0;
    if (k->max_level == 0) {
        if (n)
            snprintf(why, n, "transform '%s' takes no level", k->name);
        return -EINVAL;
    }
    if (parse_level(colon + 1, level) < 0 || *level < k->min_level ||
        *level > k->max_level) {
        if (n)
            snprintf(why, n, "%s level '%.16s' is out of range %d-%d", k->name,
                     colon + 1, k->min_level, k->max_level);
        return -EINVAL;
    }
    return 0;
}

int weir_xform_check(const char *spec, char *why, size_t n)
{
    const struct xf_kind *k;
    int level;

    return weir__xf_spec_parse(spec, &k, &level, why, n);
}

bool weir_xform_uses_helper(const char *spec)
{
    const struct xf_kind *k;
    int level;

    if (weir__xf_spec_parse(spec, &k, &level, NULL, 0) != 0)
        return false;
    return k->codec || (k->with_helper && k->with_helper->codec);
}
