/*
 * fuzz_ctlreq.c - libFuzzer target: bytes as a client of the control
 * socket sends them (ctlreq_parse), whole and in every prefix, as the
 * daemon sees a request that arrives in pieces.
 *
 * Each answer must be one the header allows: a length inside the bytes
 * given and ending at a newline, -EAGAIN only without a newline and under
 * CTLREQ_MAX bytes, -E2BIG only at CTLREQ_MAX without one, -EINVAL with
 * its reason. The input is copied to a buffer of its own size, so ASan
 * sees a read past the bytes given.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sys/ctlreq.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void check(const char *buf, size_t len)
{
    const char *nl = memchr(buf, '\n', len < CTLREQ_MAX ? len : CTLREQ_MAX);
    struct ctlreq req;
    int rc;

    memset(&req, 0, sizeof(req));
    rc = ctlreq_parse(buf, len, &req);
    if (rc > 0) {
        /* A whole line: up to and with its first newline. */
        if (!nl || (size_t)rc != (size_t)(nl - buf) + 1)
            abort();
        if (req.verb != CTLREQ_STATUS)
            abort();
    } else if (rc == -EAGAIN) {
        if (nl || len >= CTLREQ_MAX)
            abort();
    } else if (rc == -E2BIG) {
        if (nl || len < CTLREQ_MAX)
            abort();
    } else if (rc == -EINVAL) {
        if (req.err[0] == '\0' || !memchr(req.err, '\0', sizeof(req.err)))
            abort();
    } else {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf;

    if (size > 4 * CTLREQ_MAX)
        return 0;
    buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    for (size_t n = 0; n <= size; n++)
        check(buf + size - n, n); /* the last n bytes: ends at the edge */
    for (size_t n = 0; n <= size; n++)
        check(buf, n);
    free(buf);
    return 0;
}
