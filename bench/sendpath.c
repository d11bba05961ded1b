/*
 * sendpath.c - suite `sendpath`: which way of moving a file into a TCP
 * socket is fastest on this machine. It decides the file-to-socket path of
 * the endpoints (bench/results/sendpath.md), so it measures the bare
 * mechanisms, one sender thread each, into the same loopback receiver:
 *
 *   sendfile        a plain sendfile(2) loop (the classic zero-copy path)
 *   read-send       io_uring: reads at explicit offsets, `depth` of them in
 *                   flight, each followed in file order by one send
 *   read-sendmsg    as read-send, but one sendmsg takes every buffer filled
 *                   so far, in order (what weir's stream path does)
 *   splice          io_uring: SPLICE file -> pipe linked to SPLICE pipe ->
 *                   socket, `depth` linked pairs per submission
 *   read-send-zc    as read-send, with SEND_ZC
 *
 *   weir-bench sendpath [size=1GiB] [chunk=256KiB] [depth=4]
 *
 * The file is made once in /tmp and read from the page cache, as a served
 * file usually is.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

struct receiver {
    int listen_fd;
    int port;
    uint64_t bytes;
    double cpu_s; /* the receiver thread's own CPU time */
};

static double thread_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static void *receive_all(void *arg)
{
    struct receiver *rx = arg;
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    int fd = accept(rx->listen_fd, NULL, NULL);
    ssize_t n;
    double c0 = thread_cpu_s();

    rx->bytes = 0;
    while (fd >= 0 && (n = read(fd, buf, cap)) > 0)
        rx->bytes += (uint64_t)n;
    rx->cpu_s = thread_cpu_s() - c0;
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

static int listen_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(fd, 8) < 0 || getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_loopback(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        return -1;
    return fd;
}

static int send_sendfile(int file, int sock, uint64_t size, size_t chunk,
                         unsigned depth)
{
    off_t off = 0;

    (void)depth;
    while ((uint64_t)off < size) {
        ssize_t n = sendfile(sock, file, &off, chunk);
        if (n <= 0)
            return -1;
    }
    return 0;
}

/*
 * Reads run ahead up to `depth` buffers; sends go out strictly in file
 * order, one at a time, because two sends in flight on one stream socket
 * may complete out of order when the first has to wait for room.
 */
static int send_uring_read(int file, int sock, uint64_t size, size_t chunk,
                           unsigned depth, bool zc, bool batch)
{
    struct iovec *iov = calloc(depth, sizeof(*iov));
    struct msghdr msg;
    struct io_uring ring;
    struct io_uring_cqe *cqe;
    char **bufs = calloc(depth, sizeof(*bufs));
    uint32_t *filled = calloc(depth, sizeof(*filled));
    uint64_t read_off = 0, sent = 0, next_send_seq = 0, next_read_seq = 0;
    bool send_in_flight = false;
    unsigned zc_notifs = 0;
    int rc = 0;

    if (io_uring_queue_init(64, &ring, 0) < 0)
        return -1;
    for (unsigned i = 0; i < depth; i++)
        bufs[i] = aligned_alloc(4096, chunk);

    while (sent < size || zc_notifs) {
        /* Issue reads into free buffers. */
        while (next_read_seq - next_send_seq < depth && read_off < size) {
            unsigned slot = (unsigned)(next_read_seq % depth);
            size_t len = size - read_off < chunk ? size - read_off : chunk;
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

            io_uring_prep_read(sqe, file, bufs[slot], (unsigned)len, read_off);
            io_uring_sqe_set_data64(sqe, (next_read_seq << 1) | 0);
            read_off += len;
            next_read_seq++;
        }
        /* Send the next buffer in order when it is filled; batched: every
         * filled buffer from there on, in one sendmsg. */
        if (!send_in_flight && next_send_seq < next_read_seq &&
            filled[next_send_seq % depth]) {
            unsigned slot = (unsigned)(next_send_seq % depth);
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

            if (zc) {
                io_uring_prep_send_zc(sqe, sock, bufs[slot], filled[slot], 0,
                                      0);
            } else if (batch) {
                unsigned n = 0;

                for (uint64_t q = next_send_seq;
                     q < next_read_seq && filled[q % depth]; q++, n++)
                    iov[n] = (struct iovec){bufs[q % depth], filled[q % depth]};
                msg = (struct msghdr){.msg_iov = iov, .msg_iovlen = n};
                io_uring_prep_sendmsg(sqe, sock, &msg, 0);
            } else {
                io_uring_prep_send(sqe, sock, bufs[slot], filled[slot],
                                   MSG_WAITALL);
            }
            io_uring_sqe_set_data64(sqe, (next_send_seq << 1) | 1);
            send_in_flight = true;
        }
        io_uring_submit_and_wait(&ring, 1);
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            uint64_t seq = cqe->user_data >> 1;
            bool is_send = cqe->user_data & 1;

            seen++;
            if (zc && is_send && (cqe->flags & IORING_CQE_F_NOTIF)) {
                zc_notifs--;
                continue;
            }
            if (cqe->res < 0) {
                rc = -1;
                sent = size;
                continue;
            }
            if (!is_send) {
                filled[seq % depth] = (uint32_t)cqe->res;
                continue;
            }
            if (zc && (cqe->flags & IORING_CQE_F_MORE))
                zc_notifs++;
            /* Whole buffers sent are free again; a short send resumes
             * from where it stopped. */
            uint32_t left = (uint32_t)cqe->res;
            sent += left;
            while (left > 0) {
                unsigned slot = (unsigned)(next_send_seq % depth);

                if (left < filled[slot]) {
                    memmove(bufs[slot], bufs[slot] + left, filled[slot] - left);
                    filled[slot] -= left;
                    break;
                }
                left -= filled[slot];
                filled[slot] = 0;
                next_send_seq++;
            }
            send_in_flight = false;
        }
        io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
    for (unsigned i = 0; i < depth; i++)
        free(bufs[i]);
    free(bufs);
    free(filled);
    free(iov);
    return rc;
}

static int send_uring_splice(int file, int sock, uint64_t size, size_t chunk,
                             unsigned depth)
{
    struct io_uring ring;
    struct io_uring_cqe *cqe;
    int pipefd[2];
    uint64_t off = 0, sent = 0;
    int rc = 0;

    if (pipe(pipefd) < 0 || io_uring_queue_init(256, &ring, 0) < 0)
        return -1;
    /* The pipe holds one chunk: each file->pipe splice is drained by the
     * linked pipe->socket splice before the next pair starts. */
    fcntl(pipefd[1], F_SETPIPE_SZ, (int)chunk);
    while (sent < size) {
        unsigned pairs = 0;

        /* One link of `depth` pairs: in, out, in, out ... The link keeps
         * them in order, so the pipe never holds two chunks. */
        for (; pairs < depth && off < size; pairs++) {
            size_t len = size - off < chunk ? size - off : chunk;
            struct io_uring_sqe *in = io_uring_get_sqe(&ring);
            struct io_uring_sqe *out = io_uring_get_sqe(&ring);

            io_uring_prep_splice(in, file, (int64_t)off, pipefd[1], -1,
                                 (unsigned)len, SPLICE_F_MOVE);
            in->flags |= IOSQE_IO_LINK;
            io_uring_sqe_set_data64(in, 0);
            io_uring_prep_splice(out, pipefd[0], -1, sock, -1, (unsigned)len,
                                 SPLICE_F_MOVE);
            if (pairs + 1 < depth && off + len < size)
                out->flags |= IOSQE_IO_LINK;
            io_uring_sqe_set_data64(out, 1);
            off += len;
        }
        io_uring_submit_and_wait(&ring, pairs * 2);
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            seen++;
            if (cqe->res < 0) {
                rc = -1;
                sent = size;
            } else if (cqe->user_data == 1) {
                sent += (uint64_t)cqe->res;
            }
        }
        io_uring_cq_advance(&ring, seen);
        /* A short pipe->socket splice would leave bytes in the pipe; a
         * real endpoint resumes there. Here it means a wrong figure. */
        if (sent != off && rc == 0) {
            fprintf(stderr, "sendpath: short splice (%llu of %llu)\n",
                    (unsigned long long)sent, (unsigned long long)off);
            rc = -1;
            break;
        }
    }
    io_uring_queue_exit(&ring);
    close(pipefd[0]);
    close(pipefd[1]);
    return rc;
}

static int make_file(const char *path, uint64_t size)
{
    struct stat st;
    char *buf;
    int fd;

    if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
        return 0;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    buf = malloc(1 << 20);
    for (size_t i = 0; i < (1 << 20); i++)
        buf[i] = (char)(i * 2654435761u >> 13);
    for (uint64_t done = 0; done < size; done += 1 << 20)
        if (write(fd, buf, 1 << 20) != 1 << 20)
            return -1;
    free(buf);
    return close(fd);
}

static uint64_t parse_size(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 10);

    if (strcmp(end, "KiB") == 0)
        v <<= 10;
    else if (strcmp(end, "MiB") == 0)
        v <<= 20;
    else if (strcmp(end, "GiB") == 0)
        v <<= 30;
    return v;
}

enum method {
    M_SENDFILE,
    M_READ_SEND,
    M_READ_SENDMSG,
    M_SPLICE,
    M_READ_SEND_ZC,
    M_COUNT
};
static const char *const method_names[] = {
    "sendfile", "read-send", "read-sendmsg", "splice", "read-send-zc"};

static double run_one(enum method m, const char *path, uint64_t size,
                      size_t chunk, unsigned depth)
{
    struct receiver rx = {0};
    pthread_t t;
    int file, sock, rc = -1;
    uint64_t t0, t1;
    char params[160];

    rx.listen_fd = listen_loopback(&rx.port);
    file = open(path, O_RDONLY);
    if (rx.listen_fd < 0 || file < 0)
        return 0;
    pthread_create(&t, NULL, receive_all, &rx);
    sock = connect_loopback(rx.port);
    t0 = bench_now_ns();
    switch (m) {
    case M_SENDFILE:
        rc = send_sendfile(file, sock, size, chunk, depth);
        break;
    case M_READ_SEND:
        rc = send_uring_read(file, sock, size, chunk, depth, false, false);
        break;
    case M_READ_SENDMSG:
        rc = send_uring_read(file, sock, size, chunk, depth, false, true);
        break;
    case M_SPLICE:
        rc = send_uring_splice(file, sock, size, chunk, depth);
        break;
    case M_READ_SEND_ZC:
        rc = send_uring_read(file, sock, size, chunk, depth, true, false);
        break;
    case M_COUNT:
        break;
    }
    shutdown(sock, SHUT_WR);
    pthread_join(t, NULL);
    t1 = bench_now_ns();
    close(sock);
    close(file);
    close(rx.listen_fd);
    if (rc != 0 || rx.bytes != size) {
        printf("sendpath method=%s: FAILED (%llu of %llu bytes)\n",
               method_names[m], (unsigned long long)rx.bytes,
               (unsigned long long)size);
        return 0;
    }
    double gbs = (double)size / (double)(t1 - t0);
    snprintf(params, sizeof(params), "method=%s chunk=%zu depth=%u",
             method_names[m], chunk, depth);
    printf("sendpath %s: %.2f GB/s, receiver %.3f cpu-s/GiB\n", params, gbs,
           rx.cpu_s * (double)(1u << 30) / (double)size);
    fflush(stdout);
    return gbs;
}

int bench_sendpath(int argc, char **argv)
{
    uint64_t size = 1ull << 30;
    size_t chunk = 256 << 10;
    unsigned depth = 4;
    const char *path = "/tmp/weir-bench-sendpath.dat";
    double best[M_COUNT] = {0};

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "size=", 5) == 0)
            size = parse_size(argv[i] + 5);
        else if (strncmp(argv[i], "chunk=", 6) == 0)
            chunk = (size_t)parse_size(argv[i] + 6);
        else if (strncmp(argv[i], "depth=", 6) == 0)
            depth = (unsigned)atoi(argv[i] + 6);
    }
    if (make_file(path, size) < 0) {
        perror("sendpath: making the test file");
        return 1;
    }
    /* Interleave the methods over three rounds so drift in the machine's
     * state affects them alike; report each one's best. */
    for (int round = 0; round < 3; round++)
        for (int m = 0; m < M_COUNT; m++) {
            double g = run_one((enum method)m, path, size, chunk, depth);
            if (g > best[m])
                best[m] = g;
        }
    for (int m = 0; m < M_COUNT; m++)
        printf("sendpath best method=%s: %.2f GB/s (%.2fx sendfile)\n",
               method_names[m], best[m], best[0] > 0 ? best[m] / best[0] : 0.0);
    return 0;
}
