/*
 * logs.h - the parts of the log-shipper suites (`logs-glob`, `logs-idle`):
 * numbered log lines, a collector that keeps what each connection sent,
 * the shippers (weir, rsyslog, syslog-ng) started from configs of the
 * suite's, and a process's figures from /proc.
 *
 * Every line is LG_LINE bytes: "f00003 0000000042 " (the file it was
 * written to and its number in that file), filler, '\n'. The file's name
 * in each line lets the collector split one TCP stream back into files
 * and check each one alone.
 */
#ifndef WEIR_BENCH_LOGS_H
#define WEIR_BENCH_LOGS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2e.h"

#define LG_LINE      200u
#define LG_PREFIX    18u /* "f00003 0000000042 " */
#define LG_MAX_FILES 100000u
#define LG_MAX_CONNS 8u

/* Line `seq` of file `id`: LG_LINE bytes, the last one '\n'. */
void lg_line(uint8_t *out, unsigned id, uint64_t seq);
/* The file and number a line names; false when it is not one of ours. */
bool lg_parse(const uint8_t *line, size_t len, unsigned *id, uint64_t *seq);

/* ---- the collector ---- */

struct lg_conn {
    uint8_t *p; /* mmap'd, `cap` bytes, touched as it fills */
    size_t len;
};

struct lg_collector {
    int lfd, port;
    size_t cap; /* bytes one connection may bring */
    pthread_t th;
    atomic_bool stop;
    atomic_uint_fast64_t total;   /* bytes, every connection */
    atomic_uint_fast64_t last_ns; /* when the last of them came */
    atomic_uint nconns;
    atomic_bool overflow; /* a connection brought more than cap */
    double cpu_s;         /* the collector thread's, once stopped */
    struct lg_conn conns[LG_MAX_CONNS];
};

/* Listens on 127.0.0.1 and collects on a thread. 0 or -1. */
int lg_collector_start(struct lg_collector *c, size_t cap);
void lg_collector_stop(struct lg_collector *c);
void lg_collector_free(struct lg_collector *c);

/*
 * What arrived, checked line by line: each file's lines must come in
 * order from 0 with none missing, none twice (seq counts) and none
 * mangled (bad).
 */
struct lg_check {
    uint64_t lines, bad, dup, gap;
    uint64_t *next; /* per file: the number of the next line expected */
};

/* next[] must hold nfiles zeroes; also feeds one SHA-256 per file with
 * its lines when sha is not NULL (an array of nfiles EVP_MD_CTX *). */
void lg_check_conns(struct lg_collector *c, unsigned nfiles, struct lg_check *k,
                    void **sha);

/* ---- shippers ---- */

struct lg_ship {
    const char *name;   /* weir, rsyslog, syslog-ng */
    const char *dir;    /* the directory whose *.log it follows */
    const char *work;   /* its own directory: config, state, log */
    int port;           /* the collector's */
    unsigned max_files; /* files it may expect (rsyslog, syslog-ng) */
    const char *extra;  /* weir: more keys for its pipeline, or NULL */
    const struct e2e_env *env;
};

/* Writes the shipper's config into work and starts it. Its pid; 0 when
 * the shipper is not installed here (a message says so); -1 on error. */
pid_t lg_ship_start(const struct lg_ship *s);
/* SIGTERM, then SIGKILL after 10 s; reaps it. */
void lg_ship_stop(pid_t pid);

/* ---- /proc ---- */

double lg_cpu_s(pid_t pid);                   /* utime + stime, -1 */
long lg_status_kib(pid_t pid, const char *k); /* "VmHWM", "VmRSS", -1 */
int lg_fds(pid_t pid);                        /* entries of /proc/PID/fd */

/* ---- the work directory ---- */

/* $WEIR_BENCH_DIR (or /tmp)/weir-TAG-XXXXXX into out. 0 or -1. */
int lg_mkdtemp(char *out, size_t len, const char *tag);
void lg_rm_tree(const char *dir);

#endif /* WEIR_BENCH_LOGS_H */
