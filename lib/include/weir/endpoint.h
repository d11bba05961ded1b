/*
 * weir/endpoint.h - files, sockets and standard streams as the underlying
 * sources and sinks of core streams, running on one loop.
 *
 * An endpoint belongs to the thread that owns its loop (a worker), and its
 * stream (weir_endpoint_readable or weir_endpoint_writable) is a core
 * stream of that thread: pipe it, tee it, read it. Chunks a source
 * produces are buffers of the pool it was given, which must be the same
 * thread's pool (weir_worker_pool()); chunks a sink receives may come from
 * any pool and are dropped on the loop's thread slot.
 *
 * Sources:
 *   file   reads at explicit offsets, `depth` reads in flight, chunks
 *          enqueued in file order; `follow` keeps reading what is appended,
 *          also after the file was truncated (then from its start again).
 *   fd     one read in flight (recv on a socket, read elsewhere: stdin,
 *          pipes, ttys); ends when the read returns 0.
 * Sinks:
 *   fd     a writev of the queued chunks (sendmsg on a socket: one send in
 *          flight per socket, short sends resumed); regular files are opened
 *          by the caller (O_APPEND or not) and written at their position.
 *   socket an fd sink that owns its connection: connects to `addr` on
 *          start, and, when `reconnect` is set, reconnects with exponential
 *          backoff while the peer is down or after it went away (see
 *          weir_endpoint_socket_sink). While it is
 *          connected it watches its socket, also when idle: a peer that
 *          closes or resets its end is a lost connection at once, not at
 *          the next write (what the peer sends is read and dropped).
 *   null   discards.
 *   http   POSTs batches of records (lines) to an HTTP collector through
 *          libcurl on the loop; what it acknowledges is what the
 *          collector answered 2xx to (weir_endpoint_http_sink).
 *   jetstream  publishes each record (line) to a NATS JetStream subject,
 *          asynchronously, with a message id the server deduplicates;
 *          what it acknowledges is what the stream acknowledged
 *          (weir_endpoint_jetstream_sink).
 *   kafka  produces each record (line) to a Kafka topic through
 *          librdkafka, its events served on the loop; what it
 *          acknowledges is what the cluster confirmed with acks=all
 *          (weir_endpoint_kafka_sink).
 *
 * Lifetime: weir_endpoint_destroy destroys the stream (which must no longer
 * be locked by a pipe or tee), cancels the endpoint's operations, closes
 * its fd, and frees it once the kernel has finished with its memory.
 */
#ifndef WEIR_ENDPOINT_H
#define WEIR_ENDPOINT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "weir/loop.h"
#include "weir/pool.h"
#include "weir/readable.h"
#include "weir/tls.h"
#include "weir/writable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_endpoint;

/* What a socket sink or a followed file tells its owner, for logging. */
enum weir_endpoint_event {
    WEIR_EP_CONNECTED,    /* err 0; a connection is up */
    WEIR_EP_CONNECT_FAIL, /* err: why; a retry is scheduled */
    WEIR_EP_DISCONNECTED, /* err: why; a reconnect follows */
    WEIR_EP_RESUMED,      /* err 0; resending from the acked offset */
    /* A followed file (follow_path). offset: where reading was in it. */
    WEIR_EP_ROTATED,   /* the path names another file: reading it from 0 */
    WEIR_EP_TRUNCATED, /* the file was cut (copytruncate): reading from 0 */
    WEIR_EP_APPEARED,  /* the path that did not exist yet was opened */
    /* A socket sink's host name did not resolve. err: getaddrinfo's
     * EAI_* code (for gai_strerror); a retry is scheduled when reconnect
     * is set. */
    WEIR_EP_RESOLVE_FAIL,
    /* An http sink. FAILING: a request failed and is retried; err: the
     * HTTP status, or -errno (-ETIMEDOUT, -ECONNREFUSED, -ECONNRESET, ...)
     * when no answer came. CONNECTED follows at the next success.
     * REJECTED: the collector refused records for good (a 4xx other than
     * 408 and 429); err: the status; offset: how many records.
     * GAVE_UP: a batch failed retry_limit retries; its records went to
     * the dead letters; err as FAILING's, offset: how many records. */
    WEIR_EP_HTTP_FAILING,
    WEIR_EP_HTTP_REJECTED,
    WEIR_EP_HTTP_GAVE_UP,
    /* A kafka sink. FAILING: the cluster or a broker cannot be reached,
     * or a record is produced again; err: librdkafka's error code (for
     * weir_kafka_strerror). CONNECTED follows at the next delivery.
     * REJECTED: the cluster refused a record for good (too large, not
     * authorized); err: the code; offset: how many records so far. */
    WEIR_EP_KAFKA_FAILING,
    WEIR_EP_KAFKA_REJECTED,
    /* A jetstream sink: a publish failed or was not acknowledged in time
     * and is sent again; err: the NATS client's status (for
     * weir_jetstream_strerror). CONNECTED follows at the next ack.
     * REJECTED: a record refused for good (larger than the server's
     * max_payload or the stream's max_msg_size) or given up after
     * retry_limit failures; err: the status; offset: how many so far. */
    WEIR_EP_JETSTREAM_FAILING,
    WEIR_EP_JETSTREAM_REJECTED,
    /* A jetstream source put messages into its stream: the owner may
     * soon say what its sinks took (weir_jetstream_source_ack), so that
     * the credit they hold comes back without waiting. offset: its
     * stream's bytes so far. */
    WEIR_EP_JETSTREAM_READ,
};

typedef void (*weir_endpoint_event_fn)(void *arg, enum weir_endpoint_event ev,
                                       int err, uint64_t offset);

/*
 * What is set on every TCP connection an endpoint or a splice stage reads
 * or writes (an fd given to it, and each connection it makes), so that a
 * peer whose host vanished is noticed: keepalive probes while the
 * connection is idle, and TCP_USER_TIMEOUT (how long sent bytes may stay
 * unacknowledged before the kernel gives the connection up, also bounding
 * the keepalive probes); and the congestion control, where the system's
 * does not suit the path. Zeros leave the kernel's settings.
 */
struct weir_tcp_options {
    bool keepalive;
    uint32_t keepalive_idle_s;  /* TCP_KEEPIDLE */
    uint32_t keepalive_intvl_s; /* TCP_KEEPINTVL */
    uint32_t keepalive_cnt;     /* TCP_KEEPCNT */
    uint32_t user_timeout_ms;   /* TCP_USER_TIMEOUT */
    /* TCP_CONGESTION, such as "cubic" (at most 15 characters); "": the
     * system's (net.ipv4.tcp_congestion_control). */
    char congestion[16];
};

/*
 * Sets every option of t on fd, a TCP socket, the zeros too: keepalive
 * on or off, TCP_USER_TIMEOUT 0 (the kernel's), the system's congestion
 * control for "". For a listening socket, whose accepted connections
 * inherit them all, so that they need no call of their own; set again on
 * a socket in use, it leaves nothing of the earlier options behind.
 * Returns 0, or the -errno of the first that failed (the others are set
 * all the same).
 */
int weir_tcp_apply(int fd, const struct weir_tcp_options *t);

/*
 * What every endpoint on a peer's socket shares (fd sources, fd sinks and
 * socket sinks): how long a send may stall, and what is set on the TCP
 * connection.
 */
struct weir_peer_options {
    /* A sink on a socket: a send that moves no byte for this long ends
     * the connection with -ETIMEDOUT (a socket sink that reconnects
     * reconnects; any other sink fails its write). 0: no bound. Sources
     * do not send: unused there. */
    uint64_t send_timeout_ns;
    struct weir_tcp_options tcp; /* TCP sockets: see above */
};

/*
 * Each constructor has its own options. Fields they share mean the same
 * in each:
 *   own_fd   close the fd on destroy (and on a constructor's failure).
 *   counter  statistics: bytes delivered (sinks) or read (sources) are
 *            added here when not NULL, relaxed: another thread may
 *            sample it.
 *   hwm      a sink's stream's high-water mark in bytes; 0: 1 MiB.
 *   tls      a TLS session on the fd (weir/tls.h): the endpoint reads or
 *            writes plaintext through it, and holds its own reference.
 *            NULL: plain.
 */
struct weir_file_source_options {
    uint32_t chunk_size; /* bytes per read; 0: the pool's buffer size */
    uint32_t depth;      /* reads in flight, 2..64; 0: 4 */
    uint64_t offset;     /* where reading starts */
    bool follow;         /* keep reading what is appended */
    uint64_t poll_ns;    /* follow: how often to look at the size; 0: 100 ms */
    /* Follow: the file's path, watched for rotation (see endpoint_file.c);
     * with it the fd may be -1 (the file does not exist yet). NULL: the
     * fd alone. Requires own_fd. */
    const char *follow_path;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
    bool own_fd;
    _Atomic uint64_t *counter;
};

struct weir_fd_source_options {
    uint32_t chunk_size; /* bytes per read; 0: the pool's buffer size */
    bool own_fd;
    _Atomic uint64_t *counter;
    struct weir_peer_options peer; /* the fd is a socket: its TCP options */
    struct weir_tls_session *tls;
};

struct weir_fd_sink_options {
    uint64_t hwm;
    bool own_fd;
    _Atomic uint64_t *counter;
    /* On a socket: after the last byte the close shuts the sending side
     * down and reads (and drops) what the peer still sends, up to 1 MiB,
     * until the peer closes or linger_ns have passed, so that closing
     * never resets a connection whose peer has not read everything yet
     * (a client that sent a request). 0: close at once. */
    uint64_t linger_ns;
    struct weir_peer_options peer;
    /* A TLS sink's close sends close_notify first; one whose session no
     * source reads lingers after it (linger_ns, or 2 s when 0) so that
     * the peer's last records are read, not reset. */
    struct weir_tls_session *tls;
};

struct weir_null_sink_options {
    uint64_t hwm;
    _Atomic uint64_t *counter;
};

/* What a reconnecting socket sink keeps to resend (see resume below). */
enum weir_resume {
    WEIR_RESUME_OFF = 0, /* nothing: replay_fd, or the bytes are lost */
    WEIR_RESUME_BYTES,   /* a copy; the new connection starts at any byte */
    WEIR_RESUME_GZIP,    /* a copy; it starts where a gzip member does */
    WEIR_RESUME_ZSTD,    /* a copy; it starts where a zstd frame does */
};

/* The most a resuming sink keeps (WEIR_RESUME_BYTES and up). */
#define WEIR_RESUME_MAX (8u * 1024u * 1024u)

/* Options of a socket sink that connects by itself. */
struct weir_socket_sink_options {
    uint64_t hwm;
    _Atomic uint64_t *counter; /* bytes the peers acknowledged */
    struct weir_peer_options peer;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    /* Or a host name (copied) and port: resolved at every connect
     * attempt, off the loop's thread (getaddrinfo on a short-lived
     * thread of its own), and every address it gives is tried in turn
     * before the attempt counts as failed. NULL: addr. */
    const char *host;
    uint16_t port;
    bool reconnect; /* retry while down, reconnect after a loss */
    /* With reconnect: a peer that stalls (the send timeout, or the
     * kernel's TCP_USER_TIMEOUT) fails the sink instead; for a sink that
     * may lose bytes anyway (a tee branch that drops). */
    bool cut_stalled;
    uint64_t backoff_min_ns; /* first retry delay; 0: 100 ms */
    uint64_t backoff_max_ns; /* cap of the doubling; 0: 10 s */
    /* A connect that has not completed after this long fails with
     * -ETIMEDOUT (and is retried when reconnect is set). 0: the
     * kernel's bound (its SYN retries, about two minutes). */
    uint64_t connect_timeout_ns;
    /* A regular file whose bytes [replay_base, ...) are this stream's
     * bytes, or -1. With it, a reconnect resends from the last byte the
     * old connection's peer acknowledged (TCP_INFO tcpi_bytes_acked);
     * without it, what the old connection had sent but not had
     * acknowledged is lost. Not closed by the endpoint. */
    int replay_fd;
    uint64_t replay_base;
    /*
     * Instead of a replay file: the sink keeps a copy of what it sent,
     * from the start of the member (gzip) or frame (zstd) the peer's
     * acknowledgements have reached, so that after a loss the new
     * connection starts there and its bytes decode by themselves. The
     * members are found by their own headers: weir's gzip writes each
     * member's size in an extra field, and zstd frames say their blocks'
     * sizes. The copy holds at most WEIR_RESUME_MAX; a sink about to go
     * past it waits for acknowledgements first (within send_timeout).
     * Bytes the old peer received of that member arrive again.
     */
    enum weir_resume resume;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
    /* TLS: every connection gets a session of this context (the endpoint
     * holds a reference) and counts as connected once its handshake is
     * done; a failed handshake is a failed connect. tls_name is the
     * server name to send and check (copied; NULL: none). With TLS a
     * reconnect does not resend: the peer's TCP acknowledgements count
     * records, not stream bytes, so what the old connection had not had
     * acknowledged is lost, as without a replay file. */
    struct weir_tls_ctx *tls;
    const char *tls_name;
};

/* How an http sink shapes its body and reads its answers. */
enum weir_http_preset {
    WEIR_HTTP_RAW = 0,       /* records newline-separated; any 2xx */
    WEIR_HTTP_CLICKHOUSE,    /* JSONEachRow: objects as they are, other
                                lines as {"message":"..."} */
    WEIR_HTTP_ELASTICSEARCH, /* _bulk NDJSON, an action line per record;
                                the answer's items read one by one */
    WEIR_HTTP_SPLUNK_HEC,    /* {"event":...} per record; the token as
                                Authorization: Splunk */
    WEIR_HTTP_LOKI,          /* Loki's push API: one stream of `labels`,
                                each record a value stamped at its batch */
    WEIR_HTTP_OTLP,          /* OTLP/HTTP JSON logs: one resource of
                                `labels` as attributes, each record a log
                                record's string body */
};

enum weir_http_compression {
    WEIR_HTTP_IDENTITY = 0,
    WEIR_HTTP_GZIP,
    WEIR_HTTP_ZSTD,
};

/* Buckets of weir_http_counters.answer: answers that took at most
 * weir_http_answer_le_ms[i] ms; the last bucket is everything slower. */
#define WEIR_HTTP_ANSWER_BUCKETS 8
extern const uint32_t weir_http_answer_le_ms[WEIR_HTTP_ANSWER_BUCKETS - 1];

/* What an http sink has done, added relaxed (another thread samples). */
struct weir_http_counters {
    _Atomic uint64_t requests;                /* requests sent */
    _Atomic uint64_t batches, records, bytes; /* acknowledged (bytes: body) */
    _Atomic uint64_t retry_connect, retry_timeout, retry_429, retry_5xx;
    _Atomic uint64_t dead_letter; /* records refused for good */
    _Atomic uint64_t in_flight;   /* requests out now */
    _Atomic uint64_t answer[WEIR_HTTP_ANSWER_BUCKETS];
    _Atomic uint64_t answer_us; /* the answers' times summed */
};

/*
 * Options of an http sink (weir_endpoint_http_sink). Strings are copied.
 * The input is cut into records at '\n' (a last line without one is a
 * record at the close; a line longer than batch_bytes or hwm is cut),
 * records are batched, and each batch is POSTed to url; `counter` (and
 * weir_endpoint_acked) count the input bytes of the batches answered 2xx,
 * in order.
 */
struct weir_http_sink_options {
    uint64_t hwm; /* input held, batches out included; 0: 1 MiB */
    _Atomic uint64_t *counter;
    struct weir_http_counters *stats; /* may be NULL */
    const char *url;                  /* http:// or https:// */
    enum weir_http_preset preset;
    enum weir_http_compression compression;
    const char *index; /* Elasticsearch: the action's _index; NULL: URL's */
    /* Loki: the stream's labels, each "name=value"; none: job=weir.
     * OTLP: the resource's attributes; none: service.name=weir. */
    const char *const *labels;
    unsigned nlabels;
    /* "Name: value" lines sent with every request. */
    const char *const *headers;
    unsigned nheaders;
    /* Authorization: Bearer (splunk_hec: Splunk) TOKEN; NULL: none. */
    const char *bearer;
    const char *user, *password; /* basic authentication; NULL: none */
    uint64_t batch_bytes;        /* 0: 1 MiB */
    uint32_t batch_records;      /* 0: 10000 */
    uint64_t batch_age_ns;       /* 0: 1 s */
    unsigned concurrency;        /* requests out at once; 0: 2 */
    uint64_t timeout_ns;         /* a request's whole time; 0: 30 s */
    uint64_t connect_timeout_ns; /* 0: 10 s */
    uint64_t backoff_min_ns;     /* first retry delay; 0: 100 ms */
    uint64_t backoff_max_ns;     /* cap of the doubling; 0: 30 s */
    /* Retries of a batch before its records are given up (to the dead
     * letters, counted, WEIR_EP_HTTP_GAVE_UP); 0: retried without end. */
    uint32_t retry_limit;
    const char *ca; /* https: a PEM file of CAs; NULL: system */
    bool insecure;  /* https: no certificate check */
    /* Records refused for good go here, one JSON line each
     * ({"status":N,"answer":"...","record":"..."}), appended with
     * write(2). Not closed by the endpoint. */
    bool has_dead_letter;
    int dead_letter_fd;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
};

/*
 * Owner of `loop`. Each creates the endpoint and its stream. Returns 0,
 * -EINVAL (bad options), -ENOMEM. On failure an fd marked own_fd is
 * closed. Options may be NULL (all zero) except a socket sink's.
 */
int weir_endpoint_file_source(struct weir_endpoint **out,
                              struct weir_loop *loop, struct weir_pool *pool,
                              int fd, const struct weir_file_source_options *o);
int weir_endpoint_fd_source(struct weir_endpoint **out, struct weir_loop *loop,
                            struct weir_pool *pool, int fd,
                            const struct weir_fd_source_options *o);
int weir_endpoint_fd_sink(struct weir_endpoint **out, struct weir_loop *loop,
                          int fd, const struct weir_fd_sink_options *o);
int weir_endpoint_socket_sink(struct weir_endpoint **out,
                              struct weir_loop *loop,
                              const struct weir_socket_sink_options *o);
int weir_endpoint_null_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_null_sink_options *o);
/* libweir built with libcurl; -ENOTSUP when the URL's scheme is neither
 * http nor https. */
int weir_endpoint_http_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_http_sink_options *o);
/* The libcurl libweir runs with ("7.88.1"). */
const char *weir_http_curl_version(void);

/* What a kafka sink has done, added relaxed (another thread samples). */
struct weir_kafka_counters {
    _Atomic uint64_t records, bytes; /* acknowledged (bytes: values) */
    _Atomic uint64_t in_flight;      /* records produced, not yet reported */
    _Atomic uint64_t retries;        /* records produced again */
    /* Errors by reason: the cluster unreachable (librdkafka's error
     * callback), a delivery that timed out, a record refused for good
     * (to the dead letters), any other. */
    _Atomic uint64_t err_transport, err_timeout, err_rejected, err_other;
};

/*
 * Options of a kafka sink (weir_endpoint_kafka_sink). Strings are copied.
 * The input is cut into records at '\n' (an empty line is no record; a
 * last line without one is a record at the close; a line longer than hwm
 * is cut), and each record is produced to `topic` by an idempotent
 * producer with acks=all. `counter` (and weir_endpoint_acked) count the
 * input bytes up to the first record without a successful delivery
 * report: reports may come out of order across partitions, the count
 * moves in order.
 */
struct weir_kafka_sink_options {
    uint64_t hwm; /* input held, records in librdkafka included; 0: 1 MiB */
    _Atomic uint64_t *counter;
    struct weir_kafka_counters *stats; /* may be NULL */
    const char *brokers;               /* "host:port[,host:port...]" */
    const char *topic;
    /* Every record's key (records with one key go to one partition, in
     * order); NULL: none (librdkafka's partitioner spreads them). */
    const char *key;
    /* librdkafka's compression.codec: none, gzip, lz4, zstd (snappy);
     * NULL: none. */
    const char *compression;
    /* librdkafka's own settings, each "name=value", set after weir's
     * (so they may override them). */
    const char *const *props;
    unsigned nprops;
    /* Records refused for good go here, one JSON line each
     * ({"error":"...","record":"..."}), appended with write(2). Not
     * closed by the endpoint. */
    bool has_dead_letter;
    int dead_letter_fd;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
};

/* libweir built with librdkafka. -EINVAL (bad options, a setting
 * librdkafka refused), -ENOMEM. The cluster is contacted from here on,
 * by librdkafka's threads; the sink serves their events on the loop. */
int weir_endpoint_kafka_sink(struct weir_endpoint **out, struct weir_loop *loop,
                             const struct weir_kafka_sink_options *o);
/*
 * Checks o's settings as librdkafka reads them, contacting nothing.
 * 0, or -EINVAL with librdkafka's sentence in err (-ENOMEM).
 */
int weir_kafka_check(const struct weir_kafka_sink_options *o, char *err,
                     size_t errlen);
/* librdkafka's name for one of its error codes. */
const char *weir_kafka_strerror(int err);
/* The librdkafka libweir runs with ("2.0.2"). */
const char *weir_kafka_version(void);

/* What a jetstream sink has done, added relaxed (another thread samples). */
struct weir_jetstream_counters {
    _Atomic uint64_t records, bytes; /* acknowledged (bytes: payloads) */
    _Atomic uint64_t duplicates;     /* acknowledged as already stored */
    _Atomic uint64_t in_flight;      /* records published, not yet answered */
    _Atomic uint64_t retries;        /* records published again */
    /* Errors by reason: no acknowledgement in time, no stream answered
     * (no responders: a leader being elected, no stream for the
     * subject), any other. */
    _Atomic uint64_t err_timeout, err_no_responders, err_other;
    /* Records refused for good or given up after retry_limit: in the
     * dead letters, not the stream. */
    _Atomic uint64_t dead_letter;
};

/*
 * Options of a jetstream sink (weir_endpoint_jetstream_sink). Strings are
 * copied. The input is cut into records at '\n' as for a kafka sink, and
 * each is published to `subject` asynchronously with the header
 * Nats-Msg-Id "ID_PREFIX:OFFSET", OFFSET being id_base plus the record's
 * offset in the input: a record published again (after a failure, or by
 * a later run that resumed at the same offset with the same prefix) is
 * dropped by the stream's duplicate window. `counter` (and
 * weir_endpoint_acked) count the input bytes up to the first record the
 * stream has not acknowledged.
 */
struct weir_jetstream_sink_options {
    uint64_t hwm; /* input held, records out included; 0: 1 MiB */
    _Atomic uint64_t *counter;
    struct weir_jetstream_counters *stats; /* may be NULL */
    const char *servers; /* "nats://host:port[,nats://host:port...]" */
    const char *subject;
    /* Stable across runs for the same input (the daemon: a file's
     * identity); NULL: one of the sink's own, so that ids never repeat
     * across runs (no deduplication after a restart). No ':'. */
    const char *id_prefix;
    uint64_t id_base;
    uint64_t ack_wait_ns; /* a publish unanswered this long is sent
                             again; 0: 5 s */
    const char *creds;    /* a NATS credentials file; NULL: none */
    const char *ca;       /* tls://: a PEM file of CAs; NULL: system */
    /* A record the server refuses for good (larger than its max_payload
     * or the stream's max_msg_size), or the oldest one out after
     * retry_limit failed publishes in a row (0: never given up), is
     * counted as handled, not stored: with has_dead_letter, one JSON
     * line {"error":"...","record":"..."} is appended to dead_letter_fd
     * (a regular file's write, on the loop). */
    unsigned retry_limit;
    bool has_dead_letter;
    int dead_letter_fd;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
};

/* libweir built with the NATS C client. -EINVAL, -ENOMEM. The servers
 * are connected to on a short-lived thread; records wait until then. */
int weir_endpoint_jetstream_sink(struct weir_endpoint **out,
                                 struct weir_loop *loop,
                                 const struct weir_jetstream_sink_options *o);
/* What a jetstream source has done, added relaxed (another thread
 * samples). */
struct weir_jetstream_source_counters {
    _Atomic uint64_t records, bytes; /* messages read into the stream */
    _Atomic uint64_t acked;          /* messages acknowledged to the consumer */
    _Atomic uint64_t unacked;        /* gauge: read, not acknowledged yet */
    /* Deliveries dropped: a message delivered again while its first
     * delivery was still held (the consumer's ack_wait ran out). */
    _Atomic uint64_t redelivered;
    _Atomic uint64_t errors; /* fetches or acks that failed */
};

/*
 * Options of a jetstream source (weir_endpoint_jetstream_source). Strings
 * are copied. It reads `stream` through the durable pull consumer
 * `consumer` (explicit acks; made when missing, with `filter` as its
 * filter subject and `ack_wait_ns` as its ack wait), one message a record:
 * the payload, and a '\n' after it unless it ends with one. A message is
 * acknowledged only when the owner says every byte of it has been taken
 * (weir_jetstream_source_ack): never on read. The client's calls run on a
 * thread of the source's own, which fetches only while fewer than `hwm`
 * payload bytes are held unacknowledged. Before an acknowledgement is
 * sent the thread fdatasyncs `sync_fds` (the daemon's file sinks; dup'd).
 * At a start, a consumer that still has messages delivered and not
 * acknowledged (a run that was killed) is made again at its ack floor,
 * so they come again first and in order.
 */
struct weir_jetstream_source_options {
    uint64_t hwm;         /* payload bytes held unacknowledged; 0: 1 MiB */
    uint32_t batch;       /* messages per fetch, at most; 0: 1024 */
    uint64_t ack_wait_ns; /* the consumer's, when it is made; 0: 60 s */
    _Atomic uint64_t *counter;
    struct weir_jetstream_source_counters *stats; /* may be NULL */
    const char *servers;  /* "nats://host:port[,nats://host:port...]" */
    const char *stream;   /* the JetStream stream */
    const char *consumer; /* its durable name (no '.') */
    const char *filter;   /* a subject filter; NULL: every message */
    const char *creds;    /* a NATS credentials file; NULL: none */
    const char *ca;       /* tls://: a PEM file of CAs; NULL: system */
    const int *sync_fds;
    unsigned nsync_fds;
    /* WEIR_EP_JETSTREAM_FAILING (err: the client's status) while the
     * consumer cannot be had or a fetch fails; CONNECTED once it reads. */
    weir_endpoint_event_fn on_event;
    void *event_arg;
};

/* libweir built with the NATS C client. -EINVAL, -ENOMEM. */
int weir_endpoint_jetstream_source(
    struct weir_endpoint **out, struct weir_loop *loop, struct weir_pool *pool,
    const struct weir_jetstream_source_options *o);
/* Owner. Every byte of the source's stream before `acked` has been taken
 * by every sink: the messages that end there are acknowledged (on the
 * source's thread). Returns how many messages that was. */
uint64_t weir_jetstream_source_ack(struct weir_endpoint *ep, uint64_t acked);
/* Waits, up to timeout_ns, until every jetstream source's thread has
 * sent the acknowledgements it was handed and closed its connection (a
 * program's exit: the threads are detached). False on the timeout. */
bool weir_jetstream_sources_wait(uint64_t timeout_ns);
/* Owner. While held, the source puts nothing more into its stream (a
 * broadcast with no client): what it fetched waits, and, its credit
 * spent, the fetches stop. */
void weir_jetstream_source_hold(struct weir_endpoint *ep, bool hold);
/* The NATS client's text for one of its statuses. */
const char *weir_jetstream_strerror(int err);
/* The NATS C client libweir runs with ("3.4.1"). */
const char *weir_jetstream_version(void);

/* Owner. The endpoint's stream (NULL for the other direction). */
struct weir_readable *weir_endpoint_readable(struct weir_endpoint *ep);
struct weir_writable *weir_endpoint_writable(struct weir_endpoint *ep);

/* Owner. Bytes read (source) or written (sink) so far. */
uint64_t weir_endpoint_bytes(const struct weir_endpoint *ep);

/*
 * Owner. A sink: the bytes of its stream the far side has, as far as this
 * end can tell: a TCP socket's bytes handed to the kernel minus those not
 * yet acknowledged by the peer (SIOCOUTQ, less a FIN still
 * unacknowledged; a unix socket's queue is counted in kernel memory, so
 * its count errs low); a socket sink that is down, the offset its peer had
 * acknowledged when it was lost; anything else, the bytes written (a
 * regular file's are in the page cache: fdatasync makes them durable).
 * -EINVAL for a source.
 */
int weir_endpoint_acked(const struct weir_endpoint *ep, uint64_t *acked);

/* Which file a followed source reads now, for a checkpoint. */
struct weir_file_position {
    uint64_t dev, ino;
    /* The source's byte count (weir_endpoint_bytes) at this file's byte
     * 0: byte n of the stream is byte n - start of the file. Negative
     * when reading began past the start (options' offset). */
    int64_t start;
    uint32_t head_len;
    uint8_t head[64]; /* the file's first bytes, as read so far */
};

/* Owner. A file source's current file; -ENOENT while it waits for the
 * file to exist, -EINVAL for another endpoint. */
int weir_endpoint_file_position(const struct weir_endpoint *ep,
                                struct weir_file_position *pos);

/* Owner. A source ends its stream cleanly (close, not error) as soon as
 * the reads in flight have been delivered: what was read still flows. A
 * sink that lingers (linger_ns) stops lingering. */
void weir_endpoint_stop(struct weir_endpoint *ep);

/* Owner. See "Lifetime" above. Safe inside the stream's callbacks. */
void weir_endpoint_destroy(struct weir_endpoint *ep);

/* Owner. A socket sink gives up now: one that is down or connecting fails
 * its pending write with -ECANCELED, a connection is shut down so its
 * pending send fails, and it never reconnects from here on; its stream
 * then ends through the usual error path. Other endpoints: nothing. For
 * an owner that stopped waiting (a drain that timed out). */
void weir_endpoint_cut(struct weir_endpoint *ep);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_ENDPOINT_H */
