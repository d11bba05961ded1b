/*
 * weir/internal/pool.h - what the inline functions of weir/pool.h call out
 * of line. Not API: included by weir/pool.h, never by a program.
 */
#ifndef WEIR_INTERNAL_POOL_H
#define WEIR_INTERNAL_POOL_H

#ifdef __cplusplus
extern "C" {
#endif

struct weir_buf;

/* Implementation of the last-reference path of weir_buf_unref. */
void weir_pool_free_(struct weir_buf *b, unsigned self);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_INTERNAL_POOL_H */
