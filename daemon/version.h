/*
 * version.h - `weir --version`: the version, then what this build has.
 */
#ifndef WEIR_DAEMON_VERSION_H
#define WEIR_DAEMON_VERSION_H

#include <stdio.h>

/*
 *   weir 0.1.0
 *   engine: io_uring (liburing 2.3)
 *   transforms: uppercase, gzip (libdeflate 1.14), gunzip (zlib 1.2.13),
 *     zstd and unzstd (libzstd 1.5.4)
 *   config: inih 55; systemd: libsystemd 252; allocator: jemalloc 5.3.0
 *
 * The versions are those built against; a library loaded at run time
 * whose own version differs says so.
 */
void version_print(FILE *f);

#endif
