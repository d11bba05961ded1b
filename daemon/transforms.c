/*
 * transforms.c - the table of known transforms.
 *
 * No transform is built yet, so the table holds only its end marker and
 * every name is refused. The transforms work adds one row per transform;
 * nothing else here needs to change.
 */
#include "transforms.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "value.h"

struct transform_def {
    const char *name;
    /* An integer argument (a compression level) in [min, max], or none
     * when max is 0. The argument is always optional. */
    unsigned min_arg, max_arg;
};

static const struct transform_def transforms[] = {
    {NULL, 0, 0},
};

int transform_check(const char *spec, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    const struct transform_def *t;
    uint64_t level;
    char inner[128];

    for (t = transforms; t->name != NULL; t++)
        if (strlen(t->name) == len && strncmp(t->name, spec, len) == 0)
            break;
    if (t->name == NULL) {
        snprintf(err, errlen, "unknown transform '%.*s'", (int)len, spec);
        return -EINVAL;
    }
    if (colon == NULL)
        return 0;
    if (t->max_arg == 0) {
        snprintf(err, errlen, "transform '%s' takes no argument", t->name);
        return -EINVAL;
    }
    if (value_uint(colon + 1, t->min_arg, t->max_arg, &level, inner,
                   sizeof(inner)) < 0) {
        snprintf(err, errlen, "transform '%s': level %s", t->name, inner);
        return -EINVAL;
    }
    return 0;
}
