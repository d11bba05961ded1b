/*
 * collector.h - what the fault tests share beside the integration harness:
 * a collector that keeps every connection's bytes apart (so a test can
 * tell where a restart resumed), and a writer that appends numbered lines
 * to a log until told to stop, reopening it when asked (as a logger does
 * after a rotation).
 */
#ifndef WEIR_TEST_COLLECTOR_H
#define WEIR_TEST_COLLECTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FC_MAX_CONNS 64

struct fc_conn {
    uint8_t *p;
    size_t len, cap;
    bool ended; /* the peer closed */
};

struct fc_collector {
    int lfd;
    uint16_t port;
    pthread_t th;
    atomic_bool stop;
    pthread_mutex_t mu; /* guards conns and nconns */
    struct fc_conn conns[FC_MAX_CONNS];
    unsigned nconns;
};

/* Listens on 127.0.0.1 at a port the kernel chose and collects on a
 * thread, one connection after another. Asserts that it started. */
void fc_start(struct fc_collector *c);
/* Stops the thread, closes the sockets; the bytes stay. */
void fc_stop(struct fc_collector *c);
/* Frees the bytes. */
void fc_free(struct fc_collector *c);
/* Bytes received so far, over every connection. */
uint64_t fc_total(struct fc_collector *c);
/* Connections seen so far, and how many of them ended. */
unsigned fc_conns(struct fc_collector *c, unsigned *ended);
/* Waits until fn(c, arg) holds; false after timeout_ms. */
bool fc_wait(struct fc_collector *c, bool (*fn)(struct fc_collector *, void *),
             void *arg, unsigned timeout_ms);

/* A line of the writer: seven digits and a newline. 512 of them are a
 * page, so a writer of 512-line bursts to an O_APPEND file never shows a
 * reader half a burst (the size moves a page at a time). */
#define FC_LINE 8

/* Appends numbered lines, `burst` per write, pausing pause_us between
 * writes; `lock` is held around each write (a test takes it to keep the
 * file still). */
struct fc_writer {
    char path[512];
    unsigned burst, pause_us;
    atomic_bool stop;
    atomic_bool reopen;      /* set by the test: open path again */
    atomic_uint_fast64_t n;  /* lines written */
    atomic_uint_fast64_t at; /* reopens done */
    pthread_mutex_t lock;
    pthread_t th;
};

void fc_writer_start(struct fc_writer *w, const char *path, unsigned burst,
                     unsigned pause_us);
/* Asks for a reopen and waits until it was done. */
void fc_writer_reopen(struct fc_writer *w);
/* Stops it; the number of lines written. */
uint64_t fc_writer_stop(struct fc_writer *w);
/* Line i's text (FC_LINE bytes and a NUL); the number a line holds. */
void fc_line(uint64_t i, char out[FC_LINE + 1]);
uint64_t fc_line_number(const uint8_t *p);

/* A line of the tests' own followed logs: "line 00000000 of the log\n". */
#define FC_LOG_LINE 25

/* Lines first..first+n-1, FC_LOG_LINE bytes each, in a new buffer (caller
 * frees; asserts that it got the memory). */
uint8_t *fc_log_lines(unsigned first, unsigned n);
/* Appends n bytes at p to the file at path, creating it; asserts that all
 * of them went. */
void fc_append(const char *path, const uint8_t *p, size_t n);

/* A file's whole contents (NULL when it cannot be read); its length. */
uint8_t *fc_read_file(const char *path, size_t *len);

#endif
