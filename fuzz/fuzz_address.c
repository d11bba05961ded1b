/*
 * fuzz_address.c - libFuzzer target: one source or sink address
 * (address_parse), the metrics HOST:PORT (address_parse_hostport), a
 * transform spec and the size, count and duration values, as the config
 * and `weir pipe` hand them over. The first byte picks the parser.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/address.h"
#include "conf/transforms.h"
#include "conf/value.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_init(LOG_LEVEL_ERROR, false);
    return 0;
}

/* An error must come with its sentence. */
static void check_err(int rc, const char *err)
{
    if (rc < 0 && rc != -ENOMEM && err[0] == '\0')
        abort();
}

static void parse_address(const char *s, unsigned pick)
{
    struct conf_loc loc = {"fuzz.conf", 1};
    enum addr_role role = pick & 1 ? ADDR_SINK : ADDR_SOURCE;
    const char *base = pick & 2 ? "/nonexistent/weir-fuzz" : NULL;
    struct weir_address *a = NULL;
    char err[512] = "";
    int rc = address_parse(s, role, base, &loc, &a, err, sizeof(err));

    check_err(rc, err);
    if (rc == 0) {
        if (a == NULL || a->text == NULL || a->role != role)
            abort();
        if ((a->kind == ADDR_FILE || a->kind == ADDR_UNIX ||
             a->kind == ADDR_UNIX_LISTEN) &&
            (a->path == NULL || (base != NULL && a->path[0] != '/')))
            abort();
        address_free(a);
    }
}

static void parse_value(const char *s, unsigned pick)
{
    char err[256] = "";
    uint64_t n = 0;
    int rc;

    switch (pick % 4) {
    case 0:
        rc = value_size(s, 1, UINT64_MAX, &n, err, sizeof(err));
        break;
    case 1:
        rc = value_uint(s, 0, 1000000, &n, err, sizeof(err));
        if (rc == 0 && n > 1000000)
            abort();
        break;
    case 2:
        rc = value_duration_ms(s, 0, UINT64_MAX, &n, err, sizeof(err));
        break;
    default:
        rc = transform_check(s, err, sizeof(err));
        break;
    }
    check_err(rc, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, err[256] = "", *host = NULL;
    unsigned pick;
    uint16_t port;
    bool ipv6;

    if (size == 0)
        return 0;
    pick = data[0];
    s = malloc(size);
    if (s == NULL)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    switch (pick % 4) {
    case 0:
    case 1:
        parse_address(s, pick >> 2);
        break;
    case 2:
        if (address_parse_hostport(s, &host, &ipv6, &port, err, sizeof(err)) ==
            0) {
            if (host == NULL)
                abort();
        } else if (err[0] == '\0') {
            abort();
        }
        free(host);
        break;
    default:
        parse_value(s, pick >> 2);
        break;
    }
    free(s);
    return 0;
}
