/*
 * config.h - the daemon's configuration: what weir.conf, or the arguments
 * of `weir pipe`, describe. Built by config_parse.c (INI files),
 * pipe_args.c (the command line), and checked as a whole by config_check.c.
 * The run path reads it and never changes it; a reload builds a new one.
 *
 * Every value remembers where it was defined, so a later check can say
 * FILE:LINE. Sizes are bytes, durations milliseconds.
 */
#ifndef WEIR_DAEMON_CONFIG_H
#define WEIR_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sys/log.h"
#include "conf/value.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/tls.h"

/* Defaults and limits; config/weir.conf.md quotes them. The chunk size
 * is the fastest measured for file -> tcp (bench/results/sendpath.md). */
#define CONF_DEFAULT_HWM       (1 * MiB)
#define CONF_MIN_HWM           UINT64_C(1)
#define CONF_MAX_HWM           (16 * GiB)
#define CONF_DEFAULT_CHUNK     (256 * KiB)
#define CONF_MIN_CHUNK         UINT64_C(512)
#define CONF_MAX_CHUNK         (16 * MiB)
#define CONF_MAX_WORKERS       1024
#define CONF_DEFAULT_POOL      (1 * GiB)
#define CONF_MIN_POOL          (4 * MiB)
#define CONF_MAX_POOL          (64 * GiB)
#define CONF_DEFAULT_DRAIN_MS  5000
#define CONF_DEFAULT_STATE_DIR "/var/lib/weir"
#define CONF_DEFAULT_CKPT_MS   1000
#define CONF_MIN_CKPT_MS       10
#define CONF_MAX_CKPT_MS       (3600 * 1000)
#define CONF_MAX_DRAIN_MS      (3600 * 1000)
#define CONF_DEFAULT_BACKLOG   4096
#define CONF_MAX_BACKLOG       65535
/* Unsent bytes a served client's socket may queue (TCP_NOTSENT_LOWAT):
 * by default chosen from the congestion control of the listening socket
 * (listener.c), 128 KiB under bbr and 1 MiB under the others. */
#define CONF_NOTSENT_AUTO    UINT64_MAX
#define CONF_NOTSENT_PACED   (128u << 10)
#define CONF_NOTSENT_UNPACED (1u << 20)
#define CONF_MAX_NOTSENT     (1ull << 30)
#define CONF_MAX_CLIENTS     1000000
#define CONF_MAX_NAME        64
/* A jetstream source's consumer: how long a message may stay
 * unacknowledged before the server delivers it again. */
#define CONF_DEFAULT_JS_ACK_WAIT_MS (60 * 1000)
#define CONF_MAX_JS_ACK_WAIT_MS     (24 * 3600 * 1000)
#define CONF_MAX_TRANSFORMS         32
#define CONF_MAX_SINKS              64
#define CONF_ERRORS_SHOWN           100        /* then only counted */
#define CONF_MAX_FILE_SIZE          (16 * MiB) /* a config file, in bytes */
#define CONF_DEFAULT_HANDSHAKE_MS   30000      /* tls, tls-listen */
#define CONF_MAX_HANDSHAKE_MS       (3600 * 1000)
/* http-listen: a request's head (and a kept-alive connection's next
 * one) must arrive within this. */
#define CONF_DEFAULT_HEADER_TIMEOUT_MS 10000
#define CONF_MAX_HEADER_TIMEOUT_MS     (3600 * 1000)

/* The control socket, in the unit's RuntimeDirectory. */
#define CONF_DEFAULT_CONTROL "/run/weir/control"
/* A control socket's path fits a unix socket's address, with room for
 * the temporary name it is bound under first. */
#define CONF_MAX_CONTROL 90
/* Dead and stalled peers (config/weir.conf.md says why these values). */
#define CONF_DEFAULT_KEEPALIVE_IDLE_MS   (30 * 1000)
#define CONF_DEFAULT_TCP_USER_TIMEOUT_MS (30 * 1000)
#define CONF_DEFAULT_SEND_TIMEOUT_MS     (60 * 1000)
#define CONF_DEFAULT_CONNECT_TIMEOUT_MS  (10 * 1000)
#define CONF_MAX_PEER_TIMEOUT_MS         (3600 * 1000)
#define CONF_DEFAULT_FLUSH_INTERVAL_MS   1000
#define CONF_MAX_FLUSH_INTERVAL_MS       (3600 * 1000)
/* A glob source (config/weir.conf.md says why these values). */
#define CONF_DEFAULT_ROTATE_WAIT_MS  5000
#define CONF_MAX_ROTATE_WAIT_MS      (3600 * 1000)
#define CONF_DEFAULT_LINE_TIMEOUT_MS 1000
#define CONF_MIN_LINE_TIMEOUT_MS     1
#define CONF_MAX_LINE_TIMEOUT_MS     (3600 * 1000)
#define CONF_DEFAULT_MAX_OPEN_FILES  32
#define CONF_MAX_OPEN_FILES          65536
#define CONF_DEFAULT_RESCAN_MS       10000
#define CONF_MIN_RESCAN_MS           100
#define CONF_MAX_RESCAN_MS           (3600 * 1000)
#define CONF_MAX_IGNORE_OLDER_MS     (UINT64_C(10) * 365 * 86400 * 1000)
#define CONF_DEFAULT_MAX_RECORD      (64 * KiB)
#define CONF_MIN_MAX_RECORD          UINT64_C(16)
#define CONF_MAX_MAX_RECORD          (64 * MiB)
#define CONF_MAX_EXCLUDES            64
/* An http sink (config/weir.conf.md says why these values). */
#define CONF_DEFAULT_HTTP_BATCH_BYTES   (1 * MiB)
#define CONF_MAX_HTTP_BATCH_BYTES       (256 * MiB)
#define CONF_DEFAULT_HTTP_BATCH_RECORDS 10000
#define CONF_MAX_HTTP_BATCH_RECORDS     10000000
#define CONF_DEFAULT_HTTP_BATCH_AGE_MS  1000
#define CONF_MAX_HTTP_BATCH_AGE_MS      (3600 * 1000)
#define CONF_DEFAULT_HTTP_CONCURRENCY   2
#define CONF_MAX_HTTP_CONCURRENCY       64
#define CONF_DEFAULT_HTTP_TIMEOUT_MS    30000
#define CONF_MAX_HTTP_TIMEOUT_MS        (3600 * 1000)
#define CONF_MAX_HTTP_HEADERS           32
/* retries= not given: without end in weir run (the collector may be down
 * for an hour), a few in weir pipe (which ends and says so instead). */
#define CONF_HTTP_RETRIES_UNSET UINT64_MAX
#define CONF_PIPE_HTTP_RETRIES  5
#define CONF_MAX_HTTP_RETRIES   1000000
#define CONF_MAX_KAFKA_PROPS    64

/*
 * Where something was defined: FILE:LINE, or, when file is NULL, the
 * number of a command-line argument of `weir pipe` (counted like the
 * shell's $N: `weir pipe SRC` has SRC as argument 2).
 */
struct conf_loc {
    const char *file;
    unsigned line;
};

static inline bool conf_loc_set(const struct conf_loc *loc)
{
    return loc->line != 0;
}

/* One message of a conf_diag, held until config_diag_flush. */
struct conf_msg {
    unsigned file; /* index in conf_diag.files: the order files were met */
    unsigned line;
    unsigned seq; /* the order it was said, for messages of one line */
    bool warning;
    char *text; /* "FILE:LINE: message", ready to print */
};

/* The messages about one config and their count. A config is checked in
 * passes (keys as they are read, then whole pipelines, then what they
 * name on this machine), so messages are held and printed in the order
 * of the lines they name, not the order the passes found them. */
struct conf_diag {
    unsigned errors;
    unsigned warnings;
    struct conf_msg *msgs;
    size_t nmsgs, cap;
    const char **files; /* the file names met, each once */
    unsigned nfiles;
};

/* Holds "FILE:LINE: message" (or "argument N: message") and counts it as
 * an error. */
void config_error(struct conf_diag *diag, const struct conf_loc *loc,
                  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same, as a warning ("FILE:LINE: warning: message"), not counted as
 * an error. */
void config_warning(struct conf_diag *diag, const struct conf_loc *loc,
                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prints the held messages in the order of their files and lines (the
 * first CONF_ERRORS_SHOWN errors, every warning) and forgets them; the
 * counts stay. */
void config_diag_flush(struct conf_diag *diag);

enum addr_kind {
    ADDR_FILE,
    ADDR_TCP,
    ADDR_TCP_LISTEN,
    ADDR_UNIX,
    ADDR_UNIX_LISTEN,
    ADDR_STDIN,
    ADDR_STDOUT,
    ADDR_NULL,
    /* A file source whose path holds * ? or [: every file it matches,
     * now and later (weir/file_set.h). Spelt file: as the one file. */
    ADDR_FILE_SET,
    /* http: and https: sinks, batches of records POSTed to a URL. */
    ADDR_HTTP,
    /* kafka: records produced to a Kafka topic (librdkafka). */
    ADDR_KAFKA,
    /* jetstream: records published to a NATS JetStream subject. */
    ADDR_JETSTREAM,
    /* A directory source: its files, served by http-listen sinks. */
    ADDR_DIR,
    ADDR_KINDS /* how many; a new kind goes before it */
};

/* What keys a kafka sink's records (records of one key stay in order). */
enum kafka_key {
    KAFKA_KEY_FILE, /* the source's path (default) */
    KAFKA_KEY_HOST, /* the host's name */
    KAFKA_KEY_NONE, /* none: librdkafka spreads them over partitions */
};

/* Which end of a pipeline an address is parsed for. */
enum addr_role {
    ADDR_SOURCE,
    ADDR_SINK,
};

/* What a sink does when its queue reaches its high-water mark. */
enum on_full {
    ON_FULL_BLOCK,       /* hold the source back (default) */
    ON_FULL_DROP_NEWEST, /* discard the chunk that does not fit */
    ON_FULL_DROP_OLDEST, /* discard the oldest queued chunks to make room */
    ON_FULL_DISCONNECT,  /* close this sink, keep the others going */
};

struct weir_address {
    enum addr_kind kind;
    enum addr_role role;
    char *text; /* as written, for messages */
    /* What the series and the status board call a sink: name= when
     * given, else the address without its options, so that changing an
     * option keeps the series (and the dashboards on them). */
    char *label;
    char *name; /* name= */
    char *host; /* tcp, tcp-listen: a name or a literal, no brackets */
    bool ipv6;  /* host was written as [v6 literal] */
    uint16_t port;
    char *path; /* file, unix, unix-listen: absolute if it was relative */
    /* Options; each *_set tells whether the address gave it. */
    bool follow, follow_set; /* file source */
    bool fifo, fifo_set;     /* file source: a FIFO or a device, by intent */
    bool append, append_set; /* file sink */
    enum on_full on_full;    /* sinks */
    bool on_full_set;
    uint64_t high_water_mark; /* sinks; 0 until resolved */
    unsigned max_clients;     /* listen kinds; 0 = no limit */
    unsigned backlog;         /* listen kinds */
    uint64_t notsent_lowat;   /* tcp-listen; 0: the kernel's (no bound);
                               * CONF_NOTSENT_AUTO: by congestion control */
    /* tls: and tls-listen: are tcp and tcp-listen with tls set. */
    bool tls;
    char *cert, *key, *ca, *sni, *alpn, *ciphers; /* NULL: not given */
    bool verify;                                  /* tls: default yes */
    enum weir_tls_version min_version;            /* default TLS 1.2 */
    uint64_t handshake_timeout_ms;
    struct weir_tls_ctx *tls_ctx; /* made by config_check (conf/tls.c) */
    /* http, https: the URL (everything before the first comma), and the
     * sink's options; ca= and verify= are the tls options above. */
    char *url;
    enum weir_http_preset preset;
    enum weir_http_compression compression;
    char *index;    /* elasticsearch: the action's _index */
    char **headers; /* header=, each "Name: value" */
    unsigned nheaders;
    char **labels; /* label=, each "name=value" (loki) */
    unsigned nlabels;
    char *auth_file; /* a bearer token, read at the start */
    char *user;      /* basic authentication, with password_file */
    char *password_file;
    char *dead_letter; /* records refused for good, appended */
    uint64_t batch_bytes, batch_records, batch_age_ms;
    uint64_t concurrency, timeout_ms;
    uint64_t retries; /* 0: forever; CONF_HTTP_RETRIES_UNSET: by mode */
    /* kafka: the brokers as written (HOST:PORT,...), the topic, what
     * keys the records, compression=, and each rdkafka.NAME=VALUE as
     * "NAME=VALUE"; dead_letter= is the http sinks'. */
    char *brokers, *topic;
    enum kafka_key key_by;
    char *kafka_compression;
    char **kafka_props;
    unsigned nkafka_props;
    /* jetstream: the servers as written (nats://H:P,...), the subject, a
     * credentials file (ca= is the tls option above). A jetstream source:
     * the stream after the slash, its durable consumer (consumer=; by
     * default weir_ and the pipeline's name), subject= its filter, and
     * ack_wait= the consumer's when weir makes it. */
    char *servers, *subject, *creds;
    char *js_stream, *consumer;
    uint64_t ack_wait_ms;
    /* http-listen: is tcp-listen with serve_http set: files served over
     * HTTP (daemon/httpd). */
    bool serve_http;
    char *url_path;       /* path=: where a file source is; NULL: "/" */
    bool server_header;   /* server=, default yes */
    bool dotfiles;        /* dotfiles=, default no */
    bool follow_symlinks; /* follow_symlinks=, default no */
    bool dir_index;       /* index=, default no: list directories */
    uint64_t header_timeout_ms;
    char *access_log; /* request_log=: a path, or "stdout"; NULL: none */
    bool access_json; /* request_log_format=json (else clf) */
    bool access_format_set;
    struct conf_loc loc;
};

struct conf_transform {
    char *spec; /* "name" or "name:argument", as written */
    struct conf_loc loc;
};

struct weir_pipeline {
    char *name;
    struct conf_loc loc; /* the [pipeline NAME] line */
    struct weir_address *source;
    struct conf_loc source_loc; /* set even when the address was bad */
    unsigned sink_keys;         /* sink lines seen, good or bad */
    struct conf_transform *transforms;
    size_t ntransforms;
    struct weir_address **sinks;
    size_t nsinks;
    uint64_t high_water_mark;
    struct conf_loc high_water_mark_loc;
    uint64_t chunk_size;
    struct conf_loc chunk_size_loc;
    bool follow;
    struct conf_loc follow_loc;
    /* Peers: TCP keepalive (and its idle time), TCP_USER_TIMEOUT, and
     * the bounds on a send that moves nothing and on a connect; 0: none
     * (the kernel's). */
    bool keepalive;
    struct conf_loc keepalive_loc;
    uint64_t keepalive_idle_ms;
    struct conf_loc keepalive_idle_loc;
    uint64_t tcp_user_timeout_ms;
    struct conf_loc tcp_user_timeout_loc;
    uint64_t send_timeout_ms;
    struct conf_loc send_timeout_loc;
    uint64_t connect_timeout_ms;
    struct conf_loc connect_timeout_loc;
    /* TCP_CONGESTION on every TCP connection; "": the system's. */
    char tcp_congestion[16];
    struct conf_loc tcp_congestion_loc;
    /* A followed source's compressors end their member/frame at least
     * this often while bytes come in; 0: only when it is idle. */
    uint64_t flush_interval_ms;
    struct conf_loc flush_interval_loc;
    /* A followed file without a checkpoint starts at its end, not at
     * its beginning (read_from). */
    bool read_from_end;
    struct conf_loc read_from_loc;
    /* A glob source's keys (ADDR_FILE_SET; config_check refuses them on
     * any other source). */
    char **exclude; /* absolute patterns */
    size_t nexclude;
    struct conf_loc exclude_loc;
    uint64_t ignore_older_ms; /* 0: off */
    struct conf_loc ignore_older_loc;
    uint64_t rotate_wait_ms;
    struct conf_loc rotate_wait_loc;
    uint64_t line_timeout_ms;
    struct conf_loc line_timeout_loc;
    unsigned max_open_files;
    struct conf_loc max_open_files_loc;
    uint64_t rescan_interval_ms;
    struct conf_loc rescan_interval_loc;
    bool framing_bytes; /* framing = bytes (refused with a glob) */
    struct conf_loc framing_loc;
    uint64_t max_record;
    struct conf_loc max_record_loc;
    bool on_long_skip; /* on_long = skip; else truncate */
    struct conf_loc on_long_loc;
    char *multiline_start; /* a PCRE2 pattern, or NULL */
    struct conf_loc multiline_start_loc;
    bool format_json; /* format = json; else raw */
    struct conf_loc format_loc;
};

struct weir_daemon_conf {
    unsigned workers; /* 0 = auto: one per online CPU */
    struct conf_loc workers_loc;
    enum weir_engine engine; /* AUTO: io_uring, else epoll (weir/loop.h) */
    struct conf_loc engine_loc;
    enum log_level log_level;
    struct conf_loc log_level_loc;
    uint64_t drain_timeout_ms; /* a stop's and a reload's drain */
    uint64_t pool_size;        /* buffer pool per worker, bytes */
    struct conf_loc pool_size_loc;
    struct conf_loc drain_timeout_loc;
    struct weir_address *metrics; /* reserved: HOST:PORT, or NULL */
    struct conf_loc daemon_loc;   /* the first [daemon] line */
    enum log_style log_format;    /* text or JSON lines */
    struct conf_loc log_format_loc;
    enum log_target log_target; /* auto, stderr or the journal */
    struct conf_loc log_target_loc;
    bool access_log; /* one info line per client served */
    struct conf_loc access_log_loc;
    /* The control socket's path (NULL: none); _set: named in the file. */
    char *control_socket;
    bool control_socket_set;
    struct conf_loc control_socket_loc;
    /* Where followed files' checkpoints are kept; how often. */
    char *state_directory;
    struct conf_loc state_directory_loc;
    uint64_t checkpoint_interval_ms;
    struct conf_loc checkpoint_interval_loc;
};

struct weir_config {
    char *file;     /* the config's name in messages; NULL for `weir pipe` */
    char *base_dir; /* relative paths resolve against this */
    bool oneshot;   /* `weir pipe`: run the one pipeline once, then exit */
    struct weir_daemon_conf daemon;
    struct weir_pipeline **pipelines;
    size_t npipelines;
};

/*
 * Reads a config file. Relative paths in it resolve against the file's
 * directory. Every error is reported (FILE:LINE: message); returns the
 * config when there was none, else NULL with *errors set.
 */
struct weir_config *config_load_file(const char *path, unsigned *errors);

/* The same for `weir --check`, which also warns, among the errors and in
 * line order, of each tcp address whose host does not resolve now. */
struct weir_config *config_check_file(const char *path, unsigned *errors);

/*
 * Reads a config held in memory (the embedded demo), named `name` in
 * messages, with relative paths resolved against base_dir.
 */
struct weir_config *config_load_string(const char *text, const char *name,
                                       const char *base_dir, unsigned *errors);

/* Whole-config checks after parsing; adds to diag. */
void config_check(struct weir_config *conf, struct conf_diag *diag);

/* The state directory when the config names none: $STATE_DIRECTORY's
 * first, else CONF_DEFAULT_STATE_DIR. NULL when out of memory. */
char *config_default_state_dir(void);
/* Whether a pipeline follows a file: then the config keeps checkpoints
 * in its state directory. */
bool config_follows(const struct weir_config *conf);
/* The control socket when the config names none (config.c says where).
 * NULL when out of memory. */
char *config_default_control(void);

/* Model helpers shared by the INI and the command-line front ends. */
struct weir_config *config_new(const char *file, const char *base_dir);
struct weir_pipeline *config_add_pipeline(struct weir_config *conf,
                                          const char *name,
                                          const struct conf_loc *loc);
int config_add_sink(struct weir_pipeline *p, struct weir_address *sink);
int config_add_transform(struct weir_pipeline *p, const char *spec,
                         const struct conf_loc *loc);
void config_free(struct weir_config *conf);

/*
 * A config shared by what is built from it: an unchanged pipeline keeps
 * its definition across reloads, so a config lives until the last holder
 * lets go. conf_ref_new takes ownership of conf (NULL when out of memory,
 * then conf is freed); each holder calls conf_ref_get once and
 * conf_ref_put once.
 */
struct conf_ref {
    struct weir_config *conf;
    unsigned refs;
};

struct conf_ref *conf_ref_new(struct weir_config *conf);
struct conf_ref *conf_ref_get(struct conf_ref *c);
void conf_ref_put(struct conf_ref *c);

/*
 * Prints the value each key takes when the config does not give it, as
 * KEY=VALUE lines (sizes in bytes, durations in ms, "none" for no limit),
 * read from the objects the parser builds (`weir --dump-defaults`, which
 * the docs test compares with the man pages and --help). 0, or -1 when out
 * of memory.
 */
int config_print_defaults(FILE *f);

const char *addr_kind_name(enum addr_kind kind);
const char *on_full_name(enum on_full policy);

#endif
