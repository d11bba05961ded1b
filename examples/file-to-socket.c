/*
 * file-to-socket.c - copies a file into a TCP socket on a weir event loop,
 * and receives it on the same loop.
 *
 *   file-to-socket [FILE]
 *
 * Without FILE it writes 3 MiB of pseudo-random bytes to a temporary file
 * first. It listens on 127.0.0.1 (a port the kernel picks), connects to
 * itself, and then, on one loop and one thread:
 *   - a file endpoint reads FILE into buffers of a pool, and a pipe moves
 *     those chunks into an fd endpoint writing to the connected socket;
 *     when the file ends, the pipe closes the sink (shutting down the
 *     socket's write side);
 *   - a recv operation on the accepted socket checksums what arrives,
 *     until the end of the stream.
 * It prints the size and FNV-1a checksum of the file and of what arrived.
 *
 * Build against an installed libweir:
 *   cc file-to-socket.c $(pkg-config --cflags --libs weir)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weir/endpoint.h>
#include <weir/loop.h>
#include <weir/pipe.h>
#include <weir/pool.h>

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

#define FNV_SEED 14695981039346656037u

struct copy {
    struct weir_loop *loop;
    struct weir_endpoint *src, *sink;
    int pipe_rc;
    int pipe_done;
    /* The receiving side: one recv in flight at a time. */
    struct weir_op recv_op;
    int rx_fd;
    uint8_t rx_buf[64 * 1024];
    uint64_t rx_bytes, rx_sum;
    int rx_rc;
    int rx_done;
};

static void maybe_stop(struct copy *c)
{
    if (c->pipe_done && c->rx_done)
        weir_loop_stop(c->loop);
}

/* The pipe finished: both streams are unlocked, so the endpoints may go.
 * Their memory is freed at the end of this batch of completions. */
static void pipe_done(void *ctx, int rc)
{
    struct copy *c = ctx;

    c->pipe_rc = rc;
    c->pipe_done = 1;
    weir_endpoint_destroy(c->src);
    weir_endpoint_destroy(c->sink);
    maybe_stop(c);
}

static int start_recv(struct copy *c)
{
    return weir_loop_recv(c->loop, &c->recv_op, c->rx_fd, c->rx_buf,
                          sizeof(c->rx_buf), 0);
}

/* Runs on the loop's thread with recv(2)'s result. The op is embedded in
 * struct copy, so the callback finds its object with offsetof. */
static void recv_done(struct weir_op *op, int res, uint32_t flags)
{
    struct copy *c =
        (struct copy *)(void *)((char *)op - offsetof(struct copy, recv_op));

    (void)flags;
    if (res > 0) {
        c->rx_bytes += (uint64_t)res;
        c->rx_sum = fnv1a(c->rx_sum, c->rx_buf, (size_t)res);
        res = start_recv(c);
        if (res == 0)
            return;
    }
    c->rx_rc = res; /* 0: end of stream; < 0: the error */
    c->rx_done = 1;
    maybe_stop(c);
}

/* A listening socket on 127.0.0.1 and a connected pair through it. */
static int socket_pair(int *tx, int *rx)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (lfd < 0)
        return -errno;
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
        goto fail;
    *tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*tx < 0)
        goto fail;
    /* The kernel completes the handshake from the listen backlog, so a
     * blocking connect returns before accept is called. */
    if (connect(*tx, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(*tx);
        goto fail;
    }
    *rx = accept(lfd, NULL, NULL);
    if (*rx < 0) {
        close(*tx);
        goto fail;
    }
    close(lfd);
    return 0;
fail:
    close(lfd);
    return -errno;
}

/* The file's size and checksum, read the plain way, to compare with. */
static int file_sum(const char *path, uint64_t *bytes, uint64_t *sum)
{
    uint8_t b[65536];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    *bytes = 0;
    *sum = FNV_SEED;
    while ((n = read(fd, b, sizeof(b))) > 0) {
        *bytes += (uint64_t)n;
        *sum = fnv1a(*sum, b, (size_t)n);
    }
    close(fd);
    return n < 0 ? -errno : 0;
}

static int make_file(char *path)
{
    uint8_t b[4096];
    uint32_t x = 12345;
    int fd = mkstemp(path);

    if (fd < 0)
        return -errno;
    for (int blk = 0; blk < 768; blk++) { /* 768 * 4 KiB = 3 MiB */
        for (size_t i = 0; i < sizeof(b); i++) {
            x = x * 1103515245u + 12345u;
            b[i] = (uint8_t)(x >> 16);
        }
        if (write(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
            close(fd);
            return -EIO;
        }
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    static struct copy c; /* static: holds a 64 KiB buffer */
    char tmp[] = "/tmp/weir-example-XXXXXX";
    const char *path = argc > 1 ? argv[1] : tmp;
    struct weir_pool_options po = {.count = 32, .threads = 1, .owner = 0};
    struct weir_file_source_options so = {.own_fd = true};
    struct weir_fd_sink_options ko = {.own_fd = true, .hwm = 256 * 1024};
    struct weir_pool *pool;
    uint64_t f_bytes, f_sum;
    int tx_fd, in_fd, rc;

    if (argc == 1 && (rc = make_file(tmp)) != 0) {
        fprintf(stderr, "temporary file: %s\n", strerror(-rc));
        return 1;
    }
    if ((rc = file_sum(path, &f_bytes, &f_sum)) != 0 ||
        (rc = socket_pair(&tx_fd, &c.rx_fd)) != 0) {
        fprintf(stderr, "setup: %s\n", strerror(-rc));
        return 1;
    }
    /* The loop and the pool belong to this thread, slot 0. */
    rc = weir_loop_create(&c.loop, NULL);
    if (rc != 0) {
        fprintf(stderr, "%s\n", weir_loop_strerror(rc));
        return 1;
    }
    if (weir_pool_create(&pool, &po) != 0)
        return 1;

    in_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in_fd < 0)
        return 1;
    /* Both endpoints own their fds and close them when destroyed. */
    if (weir_endpoint_file_source(&c.src, c.loop, pool, in_fd, &so) != 0 ||
        weir_endpoint_fd_sink(&c.sink, c.loop, tx_fd, &ko) != 0)
        return 1;
    rc = weir_pipe_to(weir_endpoint_readable(c.src),
                      weir_endpoint_writable(c.sink), NULL, pipe_done, &c);
    if (rc != WEIR_PENDING)
        pipe_done(&c, rc);

    c.rx_sum = FNV_SEED;
    c.recv_op.fn = recv_done;
    if (start_recv(&c) != 0)
        return 1;

    rc = weir_loop_run(c.loop);

    printf("loop: %d\n", rc);
    printf("pipe: %d\n", c.pipe_rc);
    printf("recv: %d\n", c.rx_rc);
    printf("file:     %llu bytes, fnv1a %016llx\n", (unsigned long long)f_bytes,
           (unsigned long long)f_sum);
    printf("received: %llu bytes, fnv1a %016llx\n",
           (unsigned long long)c.rx_bytes, (unsigned long long)c.rx_sum);
    close(c.rx_fd);
    weir_loop_destroy(c.loop);
    /* Every buffer came home when the endpoints were freed. */
    rc = weir_pool_destroy(pool);
    printf("pool: %d\n", rc);
    if (argc == 1)
        unlink(tmp);
    return rc == 0 && c.pipe_rc == 0 && c.rx_rc == 0 && c.rx_bytes == f_bytes &&
                   c.rx_sum == f_sum
               ? 0
               : 1;
}
