/*
 * transforms.c - the transforms a pipeline may name, as the library knows
 * them: the config and `weir pipe --transform` accept exactly what the run
 * path can build, so a spec is checked by the same code that parses it
 * when the stage is created.
 */
#include "conf/transforms.h"

#include <stdio.h>
#include <string.h>

#include "conf/suggest.h"
#include "weir/xform.h"

/* Names to suggest for a misspelt one. Only those the library accepts are
 * offered, so a name it drops is never suggested. */
static const char *const known[] = {
    "uppercase", "gzip", "gunzip", "zstd", "unzstd", NULL,
};

int transform_check(const char *spec, char *err, size_t errlen)
{
    size_t len = strcspn(spec, ":");
    const char *offer[sizeof(known) / sizeof(known[0])], *near;
    char name[64], why[8];
    size_t n = 0;
    int r = weir_xform_check(spec, err, errlen);

    if (r == 0 || len >= sizeof(name))
        return r;
    memcpy(name, spec, len);
    name[len] = '\0';
    /* Every transform takes its bare name, so a bare name refused is an
     * unknown name, not a bad argument. */
    if (weir_xform_check(name, why, sizeof(why)) == 0)
        return r;
    for (const char *const *k = known; *k != NULL; k++)
        if (weir_xform_check(*k, why, sizeof(why)) == 0)
            offer[n++] = *k;
    offer[n] = NULL;
    near = suggest_word(name, len, offer);
    if (near != NULL)
        snprintf(err, errlen, "unknown transform '%s' (did you mean '%s%s'?)",
                 name, near, spec + len);
    return r;
}
