/*
 * serve.h - the file servers that the `serve` and `hostile` suites run
 * side by side (weir's send paths, socat, nginx), and the client's parts
 * both suites use (serve_util.c).
 */
#ifndef WEIR_BENCH_SERVE_H
#define WEIR_BENCH_SERVE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2e.h"

#define SERVE_SCRATCH (1u << 20) /* a client's receive buffer */
#define SERVE_DISCARD (1u << 24) /* most one discarding recv takes */

/* {file} is the file served, {port} the port it listens on. nginx and
 * weir-http serve it as /f and want serve_http_get first; the others
 * send at once. */
extern const struct e2e_sender serve_servers[];
extern const size_t serve_nservers;
extern const char serve_http_get[];
extern const size_t serve_http_get_len;
/* Whether the server of that name wants serve_http_get first. */
bool serve_speaks_http(const char *name);

struct sockaddr_in serve_loopback(int port);
/* A port on 127.0.0.1 free a moment ago, or -1. */
int serve_free_port(void);
/* A blocking connection, with the GET sent when http. -1 on failure. */
int serve_connect(int port, bool http);
/* Until a client gets a whole response (0), or pid exits or 5 s pass
 * (-1). scratch is SERVE_SCRATCH bytes. */
int serve_wait_ready(pid_t pid, int port, bool http, char *scratch);
/* How many of n received bytes are body: with http, those after the
 * header's "\r\n\r\n" (*hdr counts its bytes matched; 4 is in the body). */
size_t serve_body(unsigned *hdr, const char *buf, size_t n, bool http);
/* The RSS of pid and its children (socat's forks, nginx's workers), KiB. */
long serve_rss_kib(pid_t pid);
/* The CPU seconds (user + system) pid and its children have used: the
 * live ones, and those it has reaped. */
double serve_cpu_s(pid_t pid);
/* The usage line ("weir-bench SUITE [ARGS]") and the servers' names, on
 * stderr. */
void serve_usage(const char *usage);
/* What a suite does first: the fd limit raised to its hard limit,
 * SIGPIPE ignored, env found, and the file of `size` bytes made (or
 * found) at path, a name in /tmp that says the size. 0 or -1 (errno). */
int serve_setup(struct e2e_env *env, uint64_t size, char *path, size_t len);
/* Says which TCP congestion control the suite's connections use. With
 * cc, first moves the suite into a network namespace of its own, its
 * loopback up and cc its congestion control, leaving the machine's as it
 * was (root only). 0, or -1 with the reason on stderr. */
int serve_congestion(const char *cc);
/* One client of a wave, read from one epoll loop. */
struct serve_client {
    int fd;         /* -1 once done */
    uint64_t bytes; /* of the body */
    uint64_t start_ns, first_ns, end_ns;
    unsigned hdr; /* "\r\n\r\n" matched so far; 4 when in the body */
    int failed;
};

/* Opens n non-blocking connections into ep (with the GET sent when
 * http). Returns how many could not even start (failed, end_ns set). */
int serve_open_all(struct serve_client *cl, int n, int port, bool http, int ep);
/* Reads the `left` clients still open until each has its EOF or stall_ns
 * pass; those still open then are closed and marked failed. scratch is
 * SERVE_SCRATCH bytes. With discard, the body is counted, not copied out
 * (MSG_TRUNC); the header is still read and parsed. */
void serve_drain_all(struct serve_client *cl, int n, int left, int ep,
                     char *scratch, bool http, bool discard, uint64_t stall_ns);

/* Whether name is in the comma-separated list. */
bool serve_listed(const char *list, const char *name);

#endif /* WEIR_BENCH_SERVE_H */
