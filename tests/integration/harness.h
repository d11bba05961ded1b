/*
 * harness.h - what the integration tests share, defined once in harness.c
 * and linked into every suite: SHA-256, the suite's temporary directory,
 * the weir binary as a child process with its log in a file, sockets on
 * loopback with ports the kernel chose, clients on threads, and bounded
 * waits everywhere (a test fails, it never hangs).
 *
 * Functions that wait take their bound in ms; the expect_ ones fail the
 * running cmocka test (showing weir's log) instead of returning false.
 */
#ifndef WEIR_TEST_HARNESS_H
#define WEIR_TEST_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- SHA-256 (FIPS 180-4), enough to compare streams ---- */

struct sha256 {
    uint32_t h[8];
    uint8_t buf[64];
    uint64_t len;
    size_t n;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes 64 hex digits and a NUL to out. */
void sha256_hex(struct sha256 *s, char out[65]);
/* The sha256 of len bytes at p, in hex. */
void h_sha_hex(const void *p, size_t len, char hex[65]);

/* ---- the suite's directory ---- */

/* /tmp/weir-TAG-XXXXXX once h_begin made it. */
extern char h_dir[64];

/*
 * Starts a suite: makes h_dir, ignores SIGPIPE (a peer that leaves must
 * fail a check, not kill the test) and applies TEST_FILTER. 0, or -1 with
 * a message on stderr.
 */
int h_begin(const char *tag);
/* Removes h_dir and everything in it. */
void h_end(void);
/* h_dir/name into out. */
void h_path(char *out, size_t len, const char *name);
/* Removes dir and everything in it. */
void h_rm_tree(const char *dir);

/* ---- time and files ---- */

int64_t h_now_ms(void);
void h_sleep_ms(unsigned ms);

/* A file of `size` pseudo-random bytes (seeded: reproducible); its
 * sha256 in hex. */
void h_make_file(const char *path, size_t size, uint64_t seed, char hex[65]);
/* The sha256 and size of a file; false when it cannot be read. */
bool h_file_sha(const char *path, char hex[65], uint64_t *size);
void h_write_text(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The whole text of a file (the log), NUL-terminated; caller frees. */
char *h_slurp(const char *path);
/* How often needle occurs in text. */
unsigned h_count(const char *text, const char *needle);
/* Waits until the file contains needle; false after timeout_ms. */
bool h_wait_log(const char *path, const char *needle, unsigned timeout_ms);

/* ---- deterministic bytes ---- */

/* The same seed gives the same bytes, so both ends of a connection can
 * hash a stream without sharing a buffer. */
void h_fill(uint8_t *p, size_t n, uint64_t *seed);
/* The sha256 of the first len bytes of seed's stream. */
void h_seeded_hex(size_t len, uint64_t seed, char hex[65]);

/* ---- the weir process ---- */

/* WEIR_BIN, the binary under test; exits the test when it is not set. */
const char *h_bin(void);

struct h_weir {
    pid_t pid;
    char log[512];
};

/* Notes a child (add) or its end, so h_reap_all can kill what is left. */
void h_track(pid_t pid, bool add);
/* Kills and reaps every child still running. */
void h_reap_all(void);
/* cmocka teardown shared by the suites: no child of a test outlives it. */
int h_teardown(void **state);

/* Starts WEIR_BIN with argv (argv[0] ignored), stdin from `in` (NULL:
 * /dev/null), stdout to `out` (NULL: the log), stderr appended to log. */
void h_spawn_io(struct h_weir *w, char *const argv[], const char *log,
                const char *in, const char *out);
void h_spawn(struct h_weir *w, char *const argv[], const char *log);
/* Waits for the child to exit; kills it and returns -1 after timeout_ms.
 * Otherwise its exit status, or 128 + the signal that killed it. */
int h_wait(struct h_weir *w, unsigned timeout_ms);
/* SIGTERM, then the exit status (bounded wait). */
int h_stop(struct h_weir *w, unsigned timeout_ms);

/* h_start_conf's flags: -v (debug lines) unless the body sets log_level;
 * remove NAME.log first (spawns append to it). */
#define H_CONF_VERBOSE   1u
#define H_CONF_FRESH_LOG 2u

/*
 * Writes h_dir/NAME.conf with the printf-style body, after a [daemon]
 * section with two workers unless the body starts with its own, and
 * starts weir -c on it, logging to h_dir/NAME.log, with h_dir/NAME.state
 * as its default state directory ($STATE_DIRECTORY; h_begin sets
 * h_dir/state for the other spawns).
 */
void h_start_conf(struct h_weir *w, const char *name, unsigned flags,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Prints w's log to stderr. */
void h_show_log(const struct h_weir *w);
/* Fails the test, showing the log, unless `needle` shows up in w's log
 * within timeout_ms. */
void h_expect_log(const struct h_weir *w, const char *needle,
                  unsigned timeout_ms);
/* Fails the test unless w's log holds at least n lines with `needle`
 * within timeout_ms. */
void h_expect_log_count(const struct h_weir *w, const char *needle, unsigned n,
                        unsigned timeout_ms);
/* Fails the test when w's log holds a sanitizer report. */
void h_expect_clean(const struct h_weir *w);
/* Waits for w to exit (after a SIGTERM when `stop`); fails the test unless
 * it exits with rc and its log holds no sanitizer report. */
void h_expect_exit(struct h_weir *w, int rc, bool stop, unsigned timeout_ms);

/* ---- a process's figures, from /proc ---- */

/* CPU seconds (user + system) pid has used so far; -1 when unreadable. */
double h_cpu_seconds(pid_t pid);
/* A field of /proc/PID/status in KiB ("VmRSS", "VmHWM"); -1 when the file
 * cannot be read or has no such field. */
long h_status_kib(pid_t pid, const char *key);

/* ---- sockets ---- */

/* A port free on loopback right now, below the ephemeral range so that no
 * outgoing connection of a test running alongside can take it. */
uint16_t h_free_port(bool v6);
/* loopback:port into ss; its length. */
socklen_t h_addr(struct sockaddr_storage *ss, bool v6, uint16_t port);
/* A listening socket on loopback:port, or -1. */
int h_listen(bool v6, uint16_t port);
/* A listening socket on 127.0.0.1 at a port the kernel chose; its port in
 * *port. Fails the test when it cannot. */
int h_listen_any(uint16_t *port);
/* A listening unix socket at path (a stale one is removed first), or -1. */
int h_listen_unix(const char *path);
/* A socket bound on 127.0.0.1 at a port the kernel chose, not listening:
 * connects to it are refused, and no other socket can take the port
 * meanwhile. Its port in *port; fails the test when it cannot. */
int h_hold_port(uint16_t *port);
/* Accepts one connection within timeout_ms, or -1. */
int h_accept(int lfd, unsigned timeout_ms);
/* Connects to loopback:port (or a unix path), retrying until timeout_ms:
 * weir may still be starting. */
int h_connect(bool v6, uint16_t port, const char *unix_path,
              unsigned timeout_ms);
/* Reads until EOF (or max bytes, or timeout_ms without data), hashing when
 * hex is not NULL. Returns the byte count; -1 on timeout or error. */
int64_t h_drain(int fd, char hex[65], uint64_t max, unsigned timeout_ms);
/* Writes all n bytes; false when a write fails. */
bool h_write_all(int fd, const void *p, size_t n);
/* Sends the file at path over fd; true when all of it went. */
bool h_send_file(int fd, const char *path);
/* Sends len bytes of seed's stream (fd < 0: sends nothing); their sha256
 * in hex when hex is not NULL. */
bool h_send_seeded(int fd, size_t len, uint64_t seed, char hex[65]);
/* Connects to loopback:port within connect_ms and fails the test (showing
 * w's log, when w is not NULL) unless exactly `size` bytes with sha256
 * `hex` arrive before EOF. */
void h_expect_fetch(const struct h_weir *w, uint16_t port, unsigned connect_ms,
                    uint64_t size, const char *hex, unsigned timeout_ms);

/* ---- a client: connect, (send,) drain, hash ---- */

struct h_client {
    /* set by the test */
    bool v6;
    uint16_t port;
    const char *unix_path; /* instead of loopback:port */
    bool send;             /* send send_len bytes of seed's stream, then
                              half-close, while reading */
    size_t send_len;
    uint64_t seed;
    /* results */
    bool sent; /* all of it went */
    char sent_hex[65];
    int64_t got; /* bytes read to EOF; -1: no connection, timeout, error */
    char hex[65];
    /* the harness's */
    pthread_t th, tx;
    int fd;
    unsigned wait_ms;
};

/* Runs c in the calling thread, each wait bounded by timeout_ms. */
void h_client_run(struct h_client *c, unsigned timeout_ms);
/* Runs c on a thread of its own (asserts that it started). */
void h_client_start(struct h_client *c, unsigned timeout_ms);
void h_client_join(struct h_client *c);

/* ---- a collector that comes up late ---- */

/* Takes one connection on a port h_hold_port held and drains it to EOF,
 * on a thread: a sink that was retrying connects and takes what it held
 * back, so that its stream ends at the stop (one whose sink never
 * connected would only be cut). */
struct h_collector {
    int lfd;
    unsigned wait_ms;
    pthread_t th;
    int64_t got; /* bytes read to EOF; -1: no connection, timeout, error */
};

/* Listens on held and starts the thread (asserts both), each wait bounded
 * by timeout_ms. */
void h_collector_up(struct h_collector *c, int held, unsigned timeout_ms);
/* After weir exited: joins the thread, closes the listener, and fails the
 * test unless the collector saw the end of a stream with bytes in it. */
void h_collector_join(struct h_collector *c);

#endif
