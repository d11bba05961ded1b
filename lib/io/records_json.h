/*
 * records_json.h - the JSON envelope of a record (records.c's helper):
 * {"message":"...","file":"...","host":"...","timestamp":"..."}\n.
 */
#ifndef WEIR_IO_RECORDS_JSON_H
#define WEIR_IO_RECORDS_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Escaping writes at most this many bytes per input byte (\u00XX). */
#define WEIR__JSON_PER_BYTE 6u

/* What weir__records_json writes around the message: the constant head
 * and tail, the suffix aside. */
#define WEIR__JSON_FIXED (sizeof("{\"message\":\"") - 1 + 24 + 3)

/* Escapes n bytes as the inside of a JSON string into out (room for
 * WEIR__JSON_PER_BYTE * n). Returns the bytes written. */
size_t weir__json_escape(uint8_t *out, const uint8_t *p, size_t n);

/* Room the suffix below takes at most. */
#define WEIR__JSON_SUFFIX_ROOM(path_len, host_len)                             \
    (35 + WEIR__JSON_PER_BYTE * ((path_len) + (host_len)))

/* Writes `","file":"PATH","host":"HOST","timestamp":"` into out (room
 * for WEIR__JSON_SUFFIX_ROOM). Returns its length. */
size_t weir__records_json_suffix(uint8_t *out, const char *path,
                                 const char *host);

/* The last second formatted: gmtime_r takes glibc's time zone lock
 * even for UTC, and workers would meet there once a record. */
struct weir__json_clock {
    uint64_t sec; /* UINT64_MAX: none yet */
    char text[20];
};

/* One record: the text (n bytes, its final '\n' left off by the caller)
 * in the envelope, the suffix made above, now_ns as the timestamp. out
 * has room for WEIR__JSON_FIXED + WEIR__JSON_PER_BYTE * n + suffix_len.
 * Returns the bytes written, '\n' included. */
size_t weir__records_json(uint8_t *out, const uint8_t *text, size_t n,
                          const uint8_t *suffix, size_t suffix_len,
                          struct weir__json_clock *clock, uint64_t now_ns);

#endif /* WEIR_IO_RECORDS_JSON_H */
