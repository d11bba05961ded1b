/*
 * weir/file_set.h - a source that follows every file a set of glob
 * patterns names, now and later, and delivers their records (whole lines,
 * weir/records.h) into one stream.
 *
 * Discovery. A pattern is an absolute path whose parts may hold * ? and
 * [...] (fnmatch, FNM_PATHNAME | FNM_PERIOD), and `**` as a whole part
 * for any number of directories (none included). Files named by an
 * exclude pattern (absolute, of the same syntax) are not read. The directories
 * the patterns can reach are watched with inotify; where inotify cannot be had
 * (no instances or watches left), the patterns are matched again every
 * rescan_ns instead, and the on_event callback says so once
 * (WEIR_FS_NO_INOTIFY).
 *
 * Identity. A file is known by its fingerprint: a 64-bit hash of its first
 * fingerprint_len bytes (a file shorter than that has none yet and is
 * read, but known by device and inode only until it has them), with device
 * and inode as a hint between files whose first bytes are the same. A
 * file renamed (app.log to app.log.1) is the same file: it keeps its
 * offset, is read to its end, and stays open until it has been quiet for
 * rotate_wait_ns, so a writer that reopens late loses nothing. A file that
 * is truncated (copytruncate) is first looked for as a copy: a file of
 * its directory with its fingerprint and another inode, read from the
 * offset reached to its end; then the truncated file is read from 0.
 * A file found with the fingerprint of a known file of its directory
 * (that copy, where the patterns name it too) is that file: not read
 * again. Files whose names end in .gz .zst .xz .bz2 are never read.
 *
 * Resources. At most max_open_files descriptors: a file quiet for
 * idle_close_ns is closed and reopened (and checked to be the same file
 * by its fingerprint) when inotify (or a rescan) says it grew. Files are
 * read oldest first: the file with unread bytes whose last read is oldest
 * is read next, one chunk at a time, so a busy file cannot starve the
 * others.
 *
 * Records. Each file has its own framer (weir/records.h); a chunk the
 * stream receives holds whole records of one file only (a record longer
 * than a pool buffer comes in consecutive chunks). A line without its
 * newline is held until it ends or the file is quiet for
 * line_timeout_ns, or the file is left; weir_endpoint_stop does not
 * emit it (it was not consumed: a resumption reads it whole).
 *
 * Acknowledgement. The owner says how many of the stream's bytes every
 * sink has acknowledged (weir_file_set_ack); the source maps them back to
 * each file's offset, which weir_file_set_foreach reports for a
 * checkpoint. Where a file resumes comes from the owner too (`resume`).
 */
#ifndef WEIR_FILE_SET_H
#define WEIR_FILE_SET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/endpoint.h"
#include "weir/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One file as a checkpoint and `weir status` see it. */
struct weir_file_set_file {
    const char *path; /* its name when last seen; valid during the call */
    uint64_t dev, ino;
    uint64_t fingerprint;     /* 0 while it has fewer bytes than ... */
    uint32_t fingerprint_len; /* ... these, hashed */
    uint64_t size;            /* when last looked at */
    uint64_t read;            /* offset read (and framed) to */
    uint64_t acked;           /* offset every sink acknowledged */
    bool open;                /* holds a descriptor now */
    bool rotated;             /* renamed away or deleted: being finished */
};

enum weir_file_set_event {
    WEIR_FS_FOUND,      /* a file first seen (path; offset: where read from) */
    WEIR_FS_ROTATED,    /* renamed away from the pattern (path: the old name) */
    WEIR_FS_TRUNCATED,  /* cut (offset: where reading was) */
    WEIR_FS_COPY_READ,  /* the copy of a truncated file read to its end */
    WEIR_FS_DONE,       /* a rotated or deleted file read to its end, closed */
    WEIR_FS_LOST,       /* bytes that could not be read (offset: how many):
                         * a file deleted or truncated before it was read,
                         * with no copy to be found, or grown past its
                         * copy before the truncation */
    WEIR_FS_NO_INOTIFY, /* err: why; rescans every rescan_ns from now on */
    WEIR_FS_OPEN_FAIL,  /* err: why (once per file until it succeeds) */
};

typedef void (*weir_file_set_event_fn)(void *arg, enum weir_file_set_event ev,
                                       const char *path, int err,
                                       uint64_t offset);

/*
 * Where a file first seen starts: the owner's checkpoint for it (matched
 * by fingerprint, with dev/ino as the hint) sets *offset and returns true;
 * false: not known, and read_from_end decides. Called on the loop's
 * thread.
 */
typedef bool (*weir_file_set_resume_fn)(void *arg,
                                        const struct weir_file_set_file *f,
                                        uint64_t *offset);

struct weir_file_set_options {
    const char *const *include; /* patterns (copied), ninclude >= 1 */
    size_t ninclude;
    const char *const *exclude; /* may be NULL */
    size_t nexclude;
    /* A file found by the first scan with no checkpoint starts at its
     * end; files that appear later are read from their start. */
    bool read_from_end;
    /* Read the files that match at the first pull to their ends, then
     * end the stream (no watching, no rotation): a one-off import. */
    bool once;
    /* A file not modified for this long when first seen starts at its
     * end: only what it gets from then on is read (0: every file). */
    uint64_t ignore_older_ns;
    uint64_t rotate_wait_ns;  /* 0: 5 s */
    uint64_t line_timeout_ns; /* 0: 1 s */
    uint64_t idle_close_ns;   /* 0: 30 s */
    uint64_t rescan_ns;       /* 0: 10 s */
    /* A file with fewer new bytes than 16 KiB is read this long after
     * they appeared, with what it gets meanwhile: a writer's lines of the
     * period are one read and one chunk. inotify's write events are read
     * once per period too (names as they come). 0: 50 ms; UINT64_MAX: at
     * once. */
    uint64_t settle_ns;
    uint32_t max_open_files;  /* 0: 64 */
    uint32_t fingerprint_len; /* 0: 256 */
    uint32_t chunk_size;      /* bytes per read; 0: the pool's buffer size */
    struct weir_records_options records; /* path is set per file */
    weir_file_set_resume_fn resume;      /* may be NULL */
    /*
     * The files the owner's checkpoint lists (path, dev, ino, fingerprint,
     * fingerprint_len, and acked: where it resumes), copied. At the first
     * scan each that no file the patterns name claims is looked for in
     * the directory it was in: renamed away or copied and truncated while
     * no one watched, it is found by its fingerprint (by device and inode
     * when it had none), asked of resume like any file, and read from
     * there to its end as a rotated file (WEIR_FS_ROTATED). May be NULL.
     */
    const struct weir_file_set_file *known;
    size_t nknown;
    void *resume_arg;
    weir_file_set_event_fn on_event; /* may be NULL */
    void *event_arg;
    _Atomic uint64_t *counter; /* bytes emitted, as other sources */
};

/* Counters for `weir status` and /metrics. Read on the loop's thread. */
struct weir_file_set_stats {
    uint64_t watched;   /* files known now */
    uint64_t open;      /* descriptors held now */
    uint64_t behind;    /* bytes read but not acknowledged, all files */
    uint64_t unread;    /* bytes in files not read yet, as last seen */
    uint64_t rotations; /* renames and truncations seen */
    uint64_t lost;      /* bytes that could not be read (WEIR_FS_LOST) */
    struct weir_records_stats records; /* summed over the files */
};

/* Counters that move when what weir_file_set_foreach reports changes:
 * `files` when a file is found or forgotten, or takes another name or
 * fingerprint; `offsets` when acknowledged offsets move. An owner that
 * finds both where they were need not walk the files again. */
struct weir_file_set_changes {
    uint64_t files, offsets;
};

/*
 * Owner of `loop`. Creates the source; discovery starts with its stream's
 * first pull. Returns 0, -EINVAL (bad options, a pattern that is not
 * absolute, a multiline pattern that does not compile), -ENOMEM.
 */
int weir_endpoint_file_set(struct weir_endpoint **out, struct weir_loop *loop,
                           struct weir_pool *pool,
                           const struct weir_file_set_options *o);

/* Owner. Every sink has the stream's bytes [0, acked): files move their
 * acknowledged offsets accordingly. -EINVAL for another endpoint. */
int weir_file_set_ack(struct weir_endpoint *ep, uint64_t acked);

/* Owner. Calls fn for each file known (also those rotated and still
 * being finished, and those finished until every byte of theirs is
 * acknowledged; not the copies named above); stops early when fn
 * returns non-zero. */
int weir_file_set_foreach(struct weir_endpoint *ep,
                          int (*fn)(void *arg,
                                    const struct weir_file_set_file *f),
                          void *arg);

int weir_file_set_stats(const struct weir_endpoint *ep,
                        struct weir_file_set_stats *st);

/* Owner. -EINVAL for another endpoint. */
int weir_file_set_changes(const struct weir_endpoint *ep,
                          struct weir_file_set_changes *c);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_FILE_SET_H */
