/*
 * ctlreq.h - the control socket's request: one line of words.
 *
 *   status [json] [worst] [width N]\n
 *
 * `status` asks for the status board (run/board.c) as a table, `json`
 * for the JSON document instead, `worst` for the sinks in trouble first
 * (the table's order for `weir top`), `width N` for a table that fits N
 * columns (the client's terminal; CTLREQ_MIN_WIDTH to CTLREQ_MAX_WIDTH). Words
 * are separated by spaces or tabs; the line ends in "\n" (a "\r" before it is
 * ignored) and is at most CTLREQ_MAX bytes, the newline included. Nothing after
 * the newline is read.
 *
 * ctlreq_parse takes bytes as they arrived and touches nothing else, so
 * it can be fed anything (tests/fuzz).
 */
#ifndef WEIR_DAEMON_CTLREQ_H
#define WEIR_DAEMON_CTLREQ_H

#include <stdbool.h>
#include <stddef.h>

#define CTLREQ_MAX       256
#define CTLREQ_MIN_WIDTH 20
#define CTLREQ_MAX_WIDTH 10000

enum ctlreq_verb {
    CTLREQ_STATUS,
};

struct ctlreq {
    enum ctlreq_verb verb;
    bool json;    /* the JSON document, not the table */
    bool worst;   /* sinks in trouble first */
    size_t width; /* columns the table fits in; 0: no bound */
    /* On -EINVAL: what was wrong, for the reply. */
    char err[96];
};

/*
 * Parses the request at the start of buf[0..len). Returns the length of
 * the line (the newline included) when it is whole and valid, filling
 * *req; -EAGAIN when no newline came yet and len < CTLREQ_MAX; -E2BIG
 * when CTLREQ_MAX bytes came without one; -EINVAL when the line is not a
 * request (req->err says why).
 */
int ctlreq_parse(const char *buf, size_t len, struct ctlreq *req);

#endif
