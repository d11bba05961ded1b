/*
 * file_set_stub.c - REMOVE WHEN MERGING: a placeholder for the glob
 * source (weir/file_set.h) and the framer (weir/records.h), written in
 * parallel on their own branches, so that the daemon's side links and its
 * config checks run meanwhile. It reads nothing: weir_endpoint_file_set
 * fails with -ENOSYS. Delete this file and its lines in lib/io/meson.build
 * when the real ones are merged.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>

#include "weir/file_set.h"
#include "weir/records.h"

struct weir_records {
    struct weir_records_stats st;
};

int weir_records_new(struct weir_records **out,
                     const struct weir_records_options *o, char *errbuf,
                     size_t errlen)
{
    if (o->multiline_start) {
        int code;
        PCRE2_SIZE at;
        pcre2_code *re =
            pcre2_compile((PCRE2_SPTR)o->multiline_start, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF, &code, &at, NULL);

        if (!re) {
            PCRE2_UCHAR msg[160];

            pcre2_get_error_message(code, msg, sizeof(msg));
            if (errbuf)
                snprintf(errbuf, errlen, "at offset %zu: %s", (size_t)at,
                         (char *)msg);
            return -EINVAL;
        }
        pcre2_code_free(re);
    }
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void weir_records_free(struct weir_records *r)
{
    free(r);
}

int weir_endpoint_file_set(struct weir_endpoint **out, struct weir_loop *loop,
                           struct weir_pool *pool,
                           const struct weir_file_set_options *o)
{
    (void)loop;
    (void)pool;
    (void)o;
    *out = NULL;
    return -ENOSYS;
}

int weir_file_set_ack(struct weir_endpoint *ep, uint64_t acked)
{
    (void)ep;
    (void)acked;
    return -EINVAL;
}

int weir_file_set_foreach(struct weir_endpoint *ep,
                          int (*fn)(void *arg,
                                    const struct weir_file_set_file *f),
                          void *arg)
{
    (void)ep;
    (void)fn;
    (void)arg;
    return -EINVAL;
}

int weir_file_set_stats(const struct weir_endpoint *ep,
                        struct weir_file_set_stats *st)
{
    (void)ep;
    (void)st;
    return -EINVAL;
}
