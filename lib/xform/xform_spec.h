/*
 * xform_spec.h - parsing a transform's spec into its kind and level.
 */
#ifndef WEIR_XFORM_SPEC_H
#define WEIR_XFORM_SPEC_H

#include <stddef.h>

#include "xform_impl.h"

/* 0 with *kind and *level (the kind's default when none is given), or
 * -EINVAL and a sentence in why (n bytes, may be 0). */
int weir__xf_spec_parse(const char *spec, const struct xf_kind **kind,
                        int *level, char *why, size_t n);

#endif /* WEIR_XFORM_SPEC_H */
