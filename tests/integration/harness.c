/*
 * harness.c - the integration tests' shared helpers; harness.h says what
 * each one does.
 */
#include <ftw.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>

#include <cmocka.h>

#include "harness.h"

/* ---- SHA-256 ---- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t sha_ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 =
            sha_ror(w[i - 15], 7) ^ sha_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 =
            sha_ror(w[i - 2], 17) ^ sha_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (sha_ror(e, 6) ^ sha_ror(e, 11) ^ sha_ror(e, 25)) +
                      ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (sha_ror(a, 2) ^ sha_ror(a, 13) ^ sha_ror(a, 22)) +
                      ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1;
        d = c, c = b, b = a, a = t1 + t2;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
    s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};

    memcpy(s->h, iv, sizeof(iv));
    s->len = 0;
    s->n = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->len += len;
    if (s->n) {
        size_t take = 64 - s->n < len ? 64 - s->n : len;

        memcpy(s->buf + s->n, p, take);
        s->n += take;
        p += take;
        len -= take;
        if (s->n < 64)
            return;
        sha256_block(s, s->buf);
        s->n = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        sha256_block(s, p);
    memcpy(s->buf, p, len);
    s->n = len;
}

void sha256_hex(struct sha256 *s, char out[65])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, lenb[8];

    sha256_update(s, &pad, 1);
    while (s->n != 56)
        sha256_update(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, lenb, 8);
    for (int i = 0; i < 8; i++)
        snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

void h_sha_hex(const void *p, size_t len, char hex[65])
{
    struct sha256 s;

    sha256_init(&s);
    sha256_update(&s, p, len);
    sha256_hex(&s, hex);
}

/* ---- the suite's directory ---- */

char h_dir[64];

int h_begin(const char *tag)
{
    char state[128];

    snprintf(h_dir, sizeof(h_dir), "/tmp/weir-%s-XXXXXX", tag);
    if (!mkdtemp(h_dir)) {
        perror("mkdtemp");
        return -1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* weir's default state directory, as systemd would name it: the
     * suite's own, never the machine's. */
    snprintf(state, sizeof(state), "%s/state", h_dir);
    setenv("STATE_DIRECTORY", state, 1);
    /* And its default control socket, made at start when missing. */
    snprintf(state, sizeof(state), "%s/run", h_dir);
    setenv("RUNTIME_DIRECTORY", state, 1);
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return 0;
}

void h_end(void)
{
    h_rm_tree(h_dir);
}

void h_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", h_dir, name);
}

/* ---- time and files ---- */

int64_t h_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

void h_make_file(const char *path, size_t size, uint64_t seed, char hex[65])
{
    static uint8_t block[1 << 16];
    struct sha256 s;
    FILE *f = fopen(path, "w");

    if (!f) {
        perror(path);
        abort();
    }
    sha256_init(&s);
    while (size > 0) {
        size_t n = size < sizeof(block) ? size : sizeof(block);

        for (size_t i = 0; i < n; i += 8) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            memcpy(block + i, &seed, n - i < 8 ? n - i : 8);
        }
        fwrite(block, 1, n, f);
        sha256_update(&s, block, n);
        size -= n;
    }
    fclose(f);
    sha256_hex(&s, hex);
}

bool h_file_sha(const char *path, char hex[65], uint64_t *size)
{
    static uint8_t block[1 << 16];
    struct sha256 s;
    size_t n;
    FILE *f = fopen(path, "r");

    if (!f)
        return false;
    sha256_init(&s);
    *size = 0;
    while ((n = fread(block, 1, sizeof(block), f)) > 0) {
        sha256_update(&s, block, n);
        *size += n;
    }
    fclose(f);
    sha256_hex(&s, hex);
    return true;
}

void h_write_text(const char *path, const char *fmt, ...)
{
    va_list ap;
    FILE *f = fopen(path, "w");

    if (!f) {
        perror(path);
        abort();
    }
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

char *h_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = calloc(1, (size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        buf[0] = '\0';
    fclose(f);
    return buf;
}

unsigned h_count(const char *text, const char *needle)
{
    unsigned n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

bool h_wait_log(const char *path, const char *needle, unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;

    do {
        char *t = h_slurp(path);
        bool found = strstr(t, needle) != NULL;

        free(t);
        if (found)
            return true;
        h_sleep_ms(20);
    } while (h_now_ms() < end);
    return false;
}

/* ---- deterministic bytes ---- */

void h_fill(uint8_t *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        p[i] = (uint8_t)*seed;
    }
}

void h_seeded_hex(size_t len, uint64_t seed, char hex[65])
{
    (void)h_send_seeded(-1, len, seed, hex);
}

/* ---- the weir process ---- */

extern char **environ;

const char *h_bin(void)
{
    const char *bin = getenv("WEIR_BIN");

    if (!bin) {
        fprintf(stderr, "WEIR_BIN is not set\n");
        abort();
    }
    return bin;
}

/* Children still running, killed by h_reap_all when a test failed. */
static pid_t h_children[64];

void h_track(pid_t pid, bool add)
{
    for (int i = 0; i < 64; i++)
        if (add ? h_children[i] == 0 : h_children[i] == pid) {
            h_children[i] = add ? pid : 0;
            return;
        }
}

void h_reap_all(void)
{
    for (int i = 0; i < 64; i++)
        if (h_children[i] > 0) {
            kill(h_children[i], SIGKILL);
            waitpid(h_children[i], NULL, 0);
            h_children[i] = 0;
        }
}

void h_spawn_io(struct h_weir *w, char *const argv[], const char *log,
                const char *in, const char *out)
{
    posix_spawn_file_actions_t fa;
    const char *bin = h_bin();
    char *args[32];
    int i;

    args[0] = (char *)bin;
    for (i = 1; argv[i] && i < 31; i++)
        args[i] = argv[i];
    args[i] = NULL;
    snprintf(w->log, sizeof(w->log), "%s", log);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY,
                                     0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    if (out)
        posix_spawn_file_actions_addopen(&fa, 1, out,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    else
        posix_spawn_file_actions_adddup2(&fa, 2, 1);
    if (posix_spawn(&w->pid, bin, &fa, NULL, args, environ) != 0) {
        perror("posix_spawn");
        abort();
    }
    posix_spawn_file_actions_destroy(&fa);
    h_track(w->pid, true);
}

void h_spawn(struct h_weir *w, char *const argv[], const char *log)
{
    h_spawn_io(w, argv, log, NULL, NULL);
}

int h_wait(struct h_weir *w, unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;
    int status;

    for (;;) {
        pid_t r = waitpid(w->pid, &status, WNOHANG);

        if (r == w->pid)
            break;
        if (h_now_ms() >= end) {
            kill(w->pid, SIGKILL);
            waitpid(w->pid, &status, 0);
            h_track(w->pid, false);
            w->pid = 0;
            return -1;
        }
        h_sleep_ms(10);
    }
    h_track(w->pid, false);
    w->pid = 0;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

int h_stop(struct h_weir *w, unsigned timeout_ms)
{
    if (w->pid > 0)
        kill(w->pid, SIGTERM);
    return h_wait(w, timeout_ms);
}

/* ---- a process's figures ---- */

double h_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long utime, stime;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    p = fgets(buf, sizeof(buf), f);
    fclose(f);
    if (!p || !(p = strrchr(buf, ')')))
        return -1;
    /* Fields 14 and 15 (utime, stime), counted after the comm field. */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

long h_status_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    size_t n = strlen(key);
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/* ---- sockets ---- */

/*
 * The kernel's bind(port 0) hands out a port from the ephemeral range, the
 * same range every outgoing connect() draws from. Between closing the probe
 * socket and weir's listen, a client of another test running in parallel
 * can take that port as its local end, and weir's bind fails with
 * EADDRINUSE. So ports for weir to listen on come from below the ephemeral
 * range, where no connect() lands; the probe bind only checks that no
 * listener holds one already.
 */
static uint16_t ephemeral_low(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    unsigned low = 32768, high;

    if (f) {
        if (fscanf(f, "%u %u", &low, &high) != 2)
            low = 32768;
        fclose(f);
    }
    return low > 65535 ? 32768 : (uint16_t)low;
}

static bool port_bindable(bool v6, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, v6, port);
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    bool ok;

    if (fd < 0)
        abort();
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ok = bind(fd, (struct sockaddr *)&ss, len) == 0;
    close(fd);
    return ok;
}

/* A port the kernel chose from its ephemeral range. */
static uint16_t h_kernel_port(bool v6)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, v6, 0);
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    uint16_t port;

    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        abort();
    port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                    : ((struct sockaddr_in *)&ss)->sin_port);
    close(fd);
    return port;
}

uint16_t h_free_port(bool v6)
{
    static unsigned next;
    uint16_t low = 10000, high = ephemeral_low();
    unsigned span;

    if (high <= low + 1000) /* a range reaching down here: the kernel picks */
        return h_kernel_port(v6);
    span = (unsigned)(high - low);
    /* Parallel test processes start far apart in the range; within one
     * process ports are handed out in turn, never twice in a row. */
    if (next == 0)
        next = ((unsigned)getpid() * 2654435761u) % span + 1;
    for (unsigned tries = 0; tries < span; tries++) {
        uint16_t port = (uint16_t)(low + next++ % span);

        if (port_bindable(v6, port))
            return port;
    }
    return h_kernel_port(v6);
}

socklen_t h_addr(struct sockaddr_storage *ss, bool v6, uint16_t port)
{
    memset(ss, 0, sizeof(*ss));
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
        return sizeof(*a);
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->sin_port = htons(port);
    return sizeof(*a);
}

int h_listen(bool v6, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, v6, port);
    int one = 1, fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int h_listen_any(uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = h_listen(false, 0);

    assert_true(fd >= 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    *port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int h_listen_unix(const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
    unlink(path);
    if (bind(fd, (struct sockaddr *)&un, sizeof(un)) != 0 ||
        listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int h_hold_port(uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
    len = sizeof(ss);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    *port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int h_accept(int lfd, unsigned timeout_ms)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};

    if (poll(&p, 1, (int)timeout_ms) != 1)
        return -1;
    return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

int h_connect(bool v6, uint16_t port, const char *unix_path,
              unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;

    do {
        struct sockaddr_storage ss = {0};
        socklen_t len;
        int fd;

        if (unix_path) {
            struct sockaddr_un *un = (struct sockaddr_un *)&ss;
            un->sun_family = AF_UNIX;
            snprintf(un->sun_path, sizeof(un->sun_path), "%s", unix_path);
            len = sizeof(*un);
        } else {
            len = h_addr(&ss, v6, port);
        }
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&ss, len) == 0)
            return fd;
        close(fd);
        h_sleep_ms(20);
    } while (h_now_ms() < end);
    return -1;
}

int64_t h_drain(int fd, char hex[65], uint64_t max, unsigned timeout_ms)
{
    static _Thread_local uint8_t buf[1 << 17];
    struct sha256 s;
    uint64_t total = 0;

    sha256_init(&s);
    while (total < max) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        size_t want = max - total < sizeof(buf) ? max - total : sizeof(buf);
        ssize_t n;

        if (poll(&p, 1, (int)timeout_ms) != 1)
            return -1;
        n = read(fd, buf, want);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        sha256_update(&s, buf, (size_t)n);
        total += (uint64_t)n;
    }
    if (hex)
        sha256_hex(&s, hex);
    return (int64_t)total;
}

bool h_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *at = p;

    while (n > 0) {
        ssize_t w = write(fd, at, n);

        if (w <= 0)
            return false;
        at += w;
        n -= (size_t)w;
    }
    return true;
}

bool h_send_file(int fd, const char *path)
{
    static _Thread_local uint8_t buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return false;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        if (!h_write_all(fd, buf, n)) {
            fclose(f);
            return false;
        }
    fclose(f);
    return true;
}

bool h_send_seeded(int fd, size_t len, uint64_t seed, char hex[65])
{
    static _Thread_local uint8_t buf[1 << 16];
    struct sha256 s;

    sha256_init(&s);
    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);

        h_fill(buf, n, &seed);
        sha256_update(&s, buf, n);
        if (fd >= 0 && !h_write_all(fd, buf, n))
            return false;
        len -= n;
    }
    if (hex)
        sha256_hex(&s, hex);
    return true;
}

void h_expect_fetch(const struct h_weir *w, uint16_t port, unsigned connect_ms,
                    uint64_t size, const char *hex, unsigned timeout_ms)
{
    int fd = h_connect(false, port, NULL, connect_ms);
    char got_hex[65];

    if (fd < 0) {
        fprintf(stderr, "cannot connect to 127.0.0.1:%u\n", port);
        if (w)
            h_show_log(w);
        fail();
    }
    assert_int_equal(h_drain(fd, got_hex, UINT64_MAX, timeout_ms), size);
    close(fd);
    assert_string_equal(got_hex, hex);
}

/* ---- a client ---- */

static void *client_send(void *arg)
{
    struct h_client *c = arg;

    c->sent = h_send_seeded(c->fd, c->send_len, c->seed, c->sent_hex);
    shutdown(c->fd, SHUT_WR);
    return NULL;
}

void h_client_run(struct h_client *c, unsigned timeout_ms)
{
    c->got = -1;
    c->fd = h_connect(c->v6, c->port, c->unix_path, timeout_ms);
    if (c->fd < 0)
        return;
    if (c->send && pthread_create(&c->tx, NULL, client_send, c) != 0) {
        close(c->fd);
        return;
    }
    c->got = h_drain(c->fd, c->hex, UINT64_MAX, timeout_ms);
    if (c->send)
        pthread_join(c->tx, NULL);
    close(c->fd);
}

static void *client_thread(void *arg)
{
    struct h_client *c = arg;

    h_client_run(c, c->wait_ms);
    return NULL;
}

void h_client_start(struct h_client *c, unsigned timeout_ms)
{
    c->wait_ms = timeout_ms;
    assert_int_equal(pthread_create(&c->th, NULL, client_thread, c), 0);
}

void h_client_join(struct h_client *c)
{
    pthread_join(c->th, NULL);
}

/* ---- a collector that comes up late ---- */

static void *collector_thread(void *arg)
{
    struct h_collector *c = arg;
    int fd = h_accept(c->lfd, c->wait_ms);

    c->got = fd < 0 ? -1 : h_drain(fd, NULL, UINT64_MAX, c->wait_ms);
    if (fd >= 0)
        close(fd);
    return NULL;
}

void h_collector_up(struct h_collector *c, int held, unsigned timeout_ms)
{
    c->lfd = held;
    c->wait_ms = timeout_ms;
    assert_int_equal(listen(held, 8), 0);
    assert_int_equal(pthread_create(&c->th, NULL, collector_thread, c), 0);
}

void h_collector_join(struct h_collector *c)
{
    pthread_join(c->th, NULL);
    close(c->lfd);
    assert_true(c->got > 0);
}

/* ---- weir, judged ---- */

void h_start_conf(struct h_weir *w, const char *name, unsigned flags,
                  const char *fmt, ...)
{
    char conf[600], log[600], state[600], body[4096];
    bool verbose;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    snprintf(conf, sizeof(conf), "%s/%s.conf", h_dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", h_dir, name);
    if (flags & H_CONF_FRESH_LOG)
        unlink(log);
    /* Checkpoints per config name: a restart of the same config finds
     * its own, another test's never. */
    snprintf(state, sizeof(state), "%s/%s.state", h_dir, name);
    setenv("STATE_DIRECTORY", state, 1);
    h_write_text(conf, "%s%s",
                 strncmp(body, "[daemon]", 8) ? "[daemon]\nworkers = 2\n" : "",
                 body);
    verbose = (flags & H_CONF_VERBOSE) && !strstr(body, "log_level");
    if (verbose)
        h_spawn(w, (char *const[]){"weir", "-v", "-c", conf, NULL}, log);
    else
        h_spawn(w, (char *const[]){"weir", "-c", conf, NULL}, log);
}

void h_show_log(const struct h_weir *w)
{
    char *t = h_slurp(w->log);

    fprintf(stderr, "log of weir (%s):\n%s\n", w->log, t);
    free(t);
}

void h_expect_log(const struct h_weir *w, const char *needle,
                  unsigned timeout_ms)
{
    if (!h_wait_log(w->log, needle, timeout_ms)) {
        fprintf(stderr, "log lacks '%s'\n", needle);
        h_show_log(w);
        fail();
    }
}

void h_expect_log_count(const struct h_weir *w, const char *needle, unsigned n,
                        unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;
    unsigned got;

    for (;;) {
        char *t = h_slurp(w->log);

        got = h_count(t, needle);
        free(t);
        if (got >= n)
            return;
        if (h_now_ms() > end)
            break;
        h_sleep_ms(20);
    }
    fprintf(stderr, "%u of %u lines '%s'\n", got, n, needle);
    h_show_log(w);
    fail();
}

/* UBSan reports and carries on unless told otherwise: the log shows it. */
static bool has_report(const char *log)
{
    return strstr(log, "runtime error:") || strstr(log, "Sanitizer");
}

void h_expect_clean(const struct h_weir *w)
{
    char *t = h_slurp(w->log);
    bool bad = has_report(t);

    free(t);
    if (bad) {
        fprintf(stderr, "sanitizer report\n");
        h_show_log(w);
        fail();
    }
}

void h_expect_exit(struct h_weir *w, int rc, bool stop, unsigned timeout_ms)
{
    int got = stop ? h_stop(w, timeout_ms) : h_wait(w, timeout_ms);
    char *t = h_slurp(w->log);
    bool bad = got != rc || has_report(t);

    free(t);
    if (bad) {
        fprintf(stderr, "weir exited %d, expected %d\n", got, rc);
        h_show_log(w);
        fail();
    }
}

int h_teardown(void **state)
{
    (void)state;
    h_reap_all();
    return 0;
}

static int h_rm_entry(const char *path, const struct stat *sb, int flag,
                      struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void h_rm_tree(const char *dir)
{
    nftw(dir, h_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
