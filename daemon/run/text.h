/*
 * text.h - a growing text buffer for the documents the run serves
 * (/metrics, the status board). Out of memory sticks: every later put
 * is a no-op and t->oom says so once at the end.
 */
#ifndef WEIR_DAEMON_TEXT_H
#define WEIR_DAEMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

struct text {
    char *p;
    size_t len, cap;
    bool oom;
};

__attribute__((format(printf, 2, 3))) void text_put(struct text *t,
                                                    const char *fmt, ...);
/* v bytes as a person reads them ("3.8 MiB"), then suffix ("/s"). */
void text_human_bytes(char *out, size_t len, double v, const char *suffix);
/* s as a Prometheus label's value, without its quotes. */
void text_prom_label(struct text *t, const char *s);
/* s as a JSON string, quotes included. */
void text_json_str(struct text *t, const char *s);

#endif
