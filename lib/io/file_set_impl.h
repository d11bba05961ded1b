/*
 * file_set_impl.h - the file-set source's parts (weir/file_set.h), shared
 * by its files. Private to lib/io.
 *
 *   file_set_ident.c     fingerprints, and the tables that find a known
 *                        file by path, by device and inode, by fingerprint
 *   file_set_ack.c       the ledger from stream bytes to file offsets
 *   file_set_watch.c     inotify: watches per directory, events read
 *                        through the loop
 *   file_set_scan.c      patterns, matching, walking the directories
 *   endpoint_file_set.c  the kind: files, reading, records, rotation
 *
 * Each file uses only those above it in this list; what a lower one has
 * to tell the kind goes through the hooks in struct fs_hooks.
 */
#ifndef WEIR_IO_FILE_SET_IMPL_H
#define WEIR_IO_FILE_SET_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "endpoint_base.h"
#include "weir/file_set.h"

struct fs_set;

/* One link of an intrusive hash chain; the key is the chain's. */
struct fs_link {
    struct fs_link *next;
    uint64_t key;
};

/* A chained hash table of links (power-of-two buckets, grown at 1.0). */
struct fs_map {
    struct fs_link **b;
    size_t nb, n;
};

/* A file known to the set. */
struct fs_file {
    struct fs_file *prev, *next;   /* every file known (fs_set.files) */
    struct fs_file *rprev, *rnext; /* the ready queue, oldest read first */
    struct fs_file *oprev, *onext; /* open files, least recently read first */
    struct fs_link by_path, by_ino, by_fp, by_cut;
    char *path;
    uint64_t dev, ino;
    uint64_t fp; /* 0: fewer than fp_len bytes seen yet */
    uint64_t size, read, acked;
    uint64_t consumed;        /* behind the last record emitted */
    uint64_t last_read;       /* ns, monotonic: fairness */
    uint64_t last_change;     /* ns: size last grew (or the file appeared) */
    uint64_t last_data;       /* ns: bytes last fed to the framer */
    uint64_t lost_mark;       /* the size seen when it went: LOST's count */
    struct weir_records *rec; /* only while open or holding bytes */
    int fd;
    uint32_t refs; /* ledger entries naming it */
    bool in_ready, in_path, in_ino, in_fp, in_cut;
    bool rotated;    /* renamed away from the patterns, or deleted */
    bool deleted;    /* no name left: it cannot be opened again */
    bool done;       /* finished: closed, never read again */
    bool alias;      /* a copy of another known file: not read */
    bool open_fail;  /* OPEN_FAIL said, until an open succeeds */
    bool check;      /* look at its size (an event or a short read) */
    bool restart;    /* truncated: read from 0 once what is held is out */
    bool gone_check; /* moved or deleted: does its name still lead to it? */
    struct fs_file *gone_next;
    bool written; /* written to: looked at once the batch of events is read */
    struct fs_file *written_next;
    struct fs_file *sprev, *snext; /* the settle list (fs_set.settle_head) */
    uint64_t settle_at;            /* ns: read from then */
    bool settling;
    /* A truncated file's copy, read from `read` to its end first. */
    int copy_fd;
    uint64_t copy_size;
    /* Cut again while its copy was read (rotations before the last one
     * was followed): the copies of what it held in between, oldest first,
     * each read from 0 once the one before is done. cut_fp: the head of
     * what it has held since it was cut last, to find the next copy by
     * and to see the next cut. */
    struct fs_copy *waiting;
    unsigned nwaiting;
    uint64_t cut_fp;
    /* When its last cut was seen (ns, CLOCK_REALTIME): a copy made after
     * the one read and before this is of a cut not seen. */
    uint64_t cut_seen_rt;
};

/* A copy of a cut file, waiting to be read after the one before it. */
struct fs_copy {
    struct fs_copy *next;
    struct fs_file *of;
    struct fs_link by_fp; /* fs_set.next_map: a copy the patterns name too
                           * is known as of's by its head */
    bool in_map;
    int fd;
    uint64_t size, fp;
    uint64_t lost_mark; /* of's size when it was cut: LOST's count */
};

/* The ledger (file_set_ack.c): per chunk, where it ends in the stream, the
 * file it came from, and that file's offset behind its records. */
struct fs_entry {
    uint64_t end;
    struct fs_file *f;
    uint64_t consumed;
};

struct fs_ledger {
    struct fs_entry *e;
    size_t head, tail, cap;
};

/* A directory the patterns reach (file_set_watch.c). */
/* The two inotify instances of a set (file_set_watch.c): names (created,
 * moved, deleted), read as soon as they come, and writes, read a settle
 * period after the last batch. */
enum fs_inotify_kind { FS_NAMES, FS_WRITES, FS_INOTIFY_KINDS };

struct fs_dir {
    struct fs_link by_path;
    char *path;
    int wd[FS_INOTIFY_KINDS]; /* -1: not watched */
    int64_t mtime_ns;         /* when last read: the safety rescan skips it
                               * while it stays the same */
    uint64_t dev, ino;
    bool gone;
};

/* A pattern, split into its parts. */
struct fs_pattern {
    char **part;
    size_t n;
    size_t root; /* parts [0, root) are literal */
};

/* What the lower files tell the kind. */
struct fs_hooks {
    /* A name the patterns want (and no exclude excludes), which may be a
     * regular file: the kind looks at it (stat) unless it knows it. */
    void (*found)(struct fs_set *s, const char *path);
    /* inotify said something of `name` in dir d (mask: IN_*; cookie
     * pairs the two halves of a rename). */
    void (*event)(struct fs_set *s, struct fs_dir *d, const char *name,
                  uint32_t mask, uint32_t cookie);
    /* The end of a batch of events. */
    void (*events_done)(struct fs_set *s);
    /* inotify is not to be had, or it overflowed (err: why). */
    void (*no_inotify)(struct fs_set *s, int err);
};

struct fs_set {
    struct weir_endpoint ep;
    struct weir_file_set_options o;   /* defaults filled; patterns copied */
    struct weir_file_set_file *known; /* o.known, copied; freed once used */
    size_t nknown;
    struct weir_pool *pool;
    uint32_t buf_size;
    struct fs_hooks hooks;

    struct fs_pattern *inc, *exc;
    size_t ninc, nexc;

    /* Directories, indexed by watch descriptor where watched, and listed
     * all in `dirs`. */
    struct fs_dir **dirs;
    size_t ndirs, cap_dirs;
    struct fs_map dir_map;
    struct fs_inotify {
        int fd; /* or -1 */
        struct weir_op poll;
        struct fs_dir **by_wd;
        size_t cap_wd;
        bool poll_failed;
    } inotify[FS_INOTIFY_KINDS];
    /* After a batch of writes, their instance is polled again a settle
     * period later: a file written line by line wakes the loop once per
     * period, not once per line. */
    struct weir_timer iwait;
    uint64_t writes_prompt_until; /* ns: read writes at once until then */
    bool no_inotify;              /* rescans instead of events */

    struct fs_file *files; /* every file known */
    size_t nfiles, nopen;
    struct fs_map path_map, ino_map, fp_map;
    struct fs_map cut_map, next_map; /* fs_file.cut_fp, fs_copy.fp */
    struct fs_file *ready, *ready_tail;
    struct fs_file *opened, *opened_tail;

    struct fs_ledger led;
    uint64_t emitted; /* stream bytes enqueued */

    /* The one read in flight, the input it left to frame, the output
     * buffer being filled (one file's records only) and, when the pool
     * ran dry while framing, the records that did not fit yet. */
    struct {
        struct weir_op op;
        struct weir_buf *buf;
        struct fs_file *f;
        uint64_t off;
        uint32_t len;
        bool busy, copy;
    } rd;
    struct weir_buf *in;
    uint32_t in_pos, in_len;
    struct fs_file *in_f;
    struct weir_buf *out;
    uint32_t out_len;
    struct fs_file *cur_f;
    uint64_t out_consumed;
    uint8_t *spill;
    size_t spill_len, spill_cap;
    uint64_t spill_consumed;
    struct fs_file *gone;    /* files to look at after an event batch */
    struct fs_file *written; /* and files written to, once each */
    uint32_t moved_cookie;   /* of a name the patterns want, moved away */
    bool producing;

    struct weir_timer kick; /* a prompt retry (pool empty, SQ full) */
    /* Files with a few new lines, waiting out the settle period before
     * they are read (fs_trickle), oldest first; `settle` fires at the
     * first one's time. */
    struct fs_file *settle_head, *settle_tail;
    struct weir_timer settle;
    uint64_t tick_ns, next_rescan, next_walk;
    bool walk_due;              /* a file changed state since the last walk */
    struct fs_file **tick_open; /* max_open_files: the tick's open files */
    bool started, ended, scanned;
    uint64_t rotations, lost;
    struct weir_records_stats rec_gone; /* of framers freed */
    struct weir_file_set_changes changes;
};

/* file_set_ident.c */
uint64_t weir__fs_hash(const void *p, size_t n, uint64_t seed);
uint64_t weir__fs_path_key(const char *path);
/* The fingerprint of fd's first len bytes: 0 while it has fewer (never 0
 * otherwise). A pread on the loop's thread: len is small, the bytes are
 * the ones just written or read, in the page cache. */
uint64_t weir__fs_fingerprint(int fd, uint32_t len);
uint64_t weir__fs_fingerprint_path(const char *path, uint32_t len,
                                   struct stat *st);
/* file_set_copy.c: a truncated file's copy by the head it had (at least
 * min bytes), and the copy made after `copy` and before `before` (ns,
 * CLOCK_REALTIME) whose head is not head_now: a cut weir did not see.
 * Each returns the copy open, or -1; and its path in *path (to be freed;
 * NULL when it could not be kept) unless path is NULL. */
int weir__fs_find_copy(const struct fs_set *s, const struct fs_file *f,
                       uint64_t fp, uint64_t min, uint64_t *size, char **path);
int weir__fs_find_later_copy(const struct fs_set *s, const struct fs_file *f,
                             const struct stat *copy, uint64_t before,
                             uint64_t head_now, uint64_t *size, uint64_t *fp,
                             char **path);

/* Copies waiting to be read as f's: at most FS_COPIES_WAITING (a log cut
 * more often than that before weir read one copy has its later copies
 * read as files of their own). Each holds a descriptor (s->nopen). */
#define FS_COPIES_WAITING 16
bool weir__fs_copy_push(struct fs_set *s, struct fs_file *f, int fd,
                        uint64_t size, uint64_t fp, uint64_t lost_mark);
struct fs_copy *weir__fs_copy_pop(struct fs_set *s, struct fs_file *f);
void weir__fs_copies_free(struct fs_set *s, struct fs_file *f);

int weir__fs_map_add(struct fs_map *m, struct fs_link *l, uint64_t key);
void weir__fs_map_del(struct fs_map *m, struct fs_link *l);
/* The first link of the chain that may hold key; walk with next and
 * compare keys. */
struct fs_link *weir__fs_map_find(const struct fs_map *m, uint64_t key);
void weir__fs_map_free(struct fs_map *m);
static inline uint64_t fs_ino_key(uint64_t dev, uint64_t ino)
{
    return (dev * 0x9e3779b97f4a7c15ull) ^ ino;
}

/* file_set_ack.c */
int weir__fs_ledger_add(struct fs_ledger *l, uint64_t end, struct fs_file *f,
                        uint64_t consumed);
/* Pops every entry ending at or before acked, moving its file's acked
 * offset; fn(arg, f) for each file whose last reference went. */
size_t weir__fs_ledger_ack(struct fs_ledger *l, uint64_t acked,
                           void (*fn)(void *arg, struct fs_file *f), void *arg);
void weir__fs_ledger_free(struct fs_ledger *l);

/* file_set_watch.c */
int weir__fs_watch_start(struct fs_set *s);
/* Records dir (watching it when inotify is there); NULL when it is known
 * already (by path, or by dev/ino) or out of memory. */
struct fs_dir *weir__fs_dir_add(struct fs_set *s, const char *path,
                                const struct stat *st);
struct fs_dir *weir__fs_dir_find(struct fs_set *s, const char *path);
/* Arms the poll again when the submission queue refused it. */
void weir__fs_watch_rearm(struct fs_set *s);
void weir__fs_watch_stop(struct fs_set *s);
void weir__fs_dirs_free(struct fs_set *s);

/* file_set_scan.c */
int weir__fs_pattern_parse(struct fs_pattern *p, const char *text);
void weir__fs_pattern_free(struct fs_pattern *p);
/* Whether path is one the set reads: an include matches it, no exclude
 * does, and it does not name a compressed file. */
bool weir__fs_wanted(const struct fs_set *s, const char *path);
/* Whether some include can match a path below directory `path`. */
bool weir__fs_reachable(const struct fs_set *s, const char *path);
bool weir__fs_compressed(const char *path);
/* Walks from every pattern's root, adding directories and calling
 * hooks.found for each file wanted. */
void weir__fs_scan_all(struct fs_set *s);
/* Reads dir (a known one, or a new one under a known one: then it and
 * what it holds are walked). force: even if its mtime is the same. */
void weir__fs_scan_dir(struct fs_set *s, const char *path, bool force);
/* The safety rescan: the known directories whose mtime moved. */
void weir__fs_rescan(struct fs_set *s);

/* CLOCK_MONOTONIC for intervals, CLOCK_REALTIME for JSON's time stamps. */
static inline uint64_t weir__fs_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A read of f is out, or its bytes are being framed or wait in the
 * spill: f must stay as it is. */
static inline bool weir__fs_busy(const struct fs_set *s,
                                 const struct fs_file *f)
{
    return (s->rd.busy && s->rd.f == f) || (s->in && s->in_f == f) ||
           (s->spill_len && s->cur_f == f);
}

/* file_set_emit.c: records into the stream. seal sends the output buffer
 * (seal_maybe only while the stream's queue is empty); framer gives f a
 * framer that starts at offset `at`; feed frames the input buffer left
 * (false when it stopped on a dry pool); flush emits what f's framer
 * holds; drain_spill places the spill (false while the pool is dry). */
void weir__fs_seal(struct fs_set *s);
void weir__fs_seal_maybe(struct fs_set *s);
bool weir__fs_framer(struct fs_set *s, struct fs_file *f, uint64_t at);
bool weir__fs_feed(struct fs_set *s);
void weir__fs_flush(struct fs_set *s, struct fs_file *f);
bool weir__fs_drain_spill(struct fs_set *s);

/* file_set_adopt.c: where the checkpointed file k went while no one
 * watched (its directory, by fingerprint, or by device and inode without
 * one), when it holds at least k->acked bytes: its path (to free) and
 * *st; NULL when not found. */
char *weir__fs_find_known(const struct weir_file_set_file *k, uint32_t fplen,
                          struct stat *st);

#endif
