/*
 * transforms.c - the transforms a pipeline may name, as the library knows
 * them: the config and `weir pipe --transform` accept exactly what the run
 * path can build, so a spec is checked by the same code that parses it
 * when the stage is created.
 */
#include "conf/transforms.h"

#include "weir/xform.h"

int transform_check(const char *spec, char *err, size_t errlen)
{
    return weir_xform_check(spec, err, errlen);
}
