/*
 * version.c - see version.h.
 */
#include "version.h"

#include <libdeflate.h>
#include <liburing.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include <curl/curlver.h>
#include <openssl/crypto.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "weir/endpoint.h"
#include "weir/tls.h"

void version_print(FILE *f)
{
    const char *zlib_run = zlibVersion(), *zstd_run = ZSTD_versionString();

    fprintf(f, "weir %s\n", WEIR_VERSION);
    /* liburing has version macros from 2.4 on; Debian 12's 2.3 has none. */
#ifdef IO_URING_VERSION_MAJOR
    fprintf(f, "engines: io_uring (liburing %d.%d), epoll; ",
            IO_URING_VERSION_MAJOR, IO_URING_VERSION_MINOR);
#else
    fprintf(f, "engines: io_uring (liburing %s), epoll; ",
            WEIR_LIBURING_VERSION);
#endif
    fprintf(f, "engine = auto runs io_uring where the kernel allows it\n");
    fprintf(f, "transforms: uppercase, gzip (libdeflate %s), gunzip (zlib %s",
            LIBDEFLATE_VERSION_STRING, ZLIB_VERSION);
    if (strcmp(zlib_run, ZLIB_VERSION) != 0)
        fprintf(f, ", running %s", zlib_run);
    fprintf(f, "), zstd and unzstd (libzstd %s", ZSTD_VERSION_STRING);
    if (strcmp(zstd_run, ZSTD_VERSION_STRING) != 0)
        fprintf(f, ", running %s", zstd_run);
    fprintf(f, ")\n");
    fprintf(f, "tls: openssl %s", OPENSSL_VERSION_STR);
    if (strcmp(OpenSSL_version(OPENSSL_VERSION_STRING), OPENSSL_VERSION_STR))
        fprintf(f, ", running %s", OpenSSL_version(OPENSSL_VERSION_STRING));
    fprintf(f, "; kernel TLS %s\n",
            weir_tls_kernel_available() ? "offered by this kernel"
                                        : "not offered by this kernel");
    fprintf(f, "sinks: http, https (libcurl %s", LIBCURL_VERSION);
    if (strcmp(weir_http_curl_version(), LIBCURL_VERSION) != 0)
        fprintf(f, ", running %s", weir_http_curl_version());
    fprintf(f, ")\n");
    fprintf(f, "records: multiline_start (pcre2 %d.%02d)\n", PCRE2_MAJOR,
            PCRE2_MINOR);
    fprintf(f, "config: inih %s\n", WEIR_INIH_VERSION);
    fprintf(f, "systemd: libsystemd %s\n", WEIR_LIBSYSTEMD_VERSION);
    fprintf(f, "allocator: %s\n", WEIR_ALLOCATOR);
}
