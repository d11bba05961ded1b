/*
 * test_loop.c - the event loop on its own: operations and their callbacks,
 * batching, timers, cancel, linked requests, deferred frees, sockets, and
 * tasks posted from another thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/loop.h"
#include "weir/worker.h"

#define container_of(p, type, member)                                          \
    ((type *)((char *)(p)-offsetof(type, member)))

static struct weir_loop *new_loop(void)
{
    struct weir_loop *loop = NULL;
    int err = weir_loop_create(&loop, NULL);

    if (err)
        fail_msg("weir_loop_create: %s", weir_loop_strerror(err));
    return loop;
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* ---- NOPs: many ops, one turn ---- */

struct counter {
    struct weir_loop *loop;
    int done;
    int want;
};

struct nop_op {
    struct weir_op op;
    struct counter *c;
    int res;
};

static void nop_done(struct weir_op *op, int res, uint32_t flags)
{
    struct nop_op *n = container_of(op, struct nop_op, op);

    assert_int_equal(flags, 0);
    assert_false(op->pending);
    n->res = res;
    if (++n->c->done == n->c->want)
        weir_loop_stop(n->c->loop);
}

static void test_nop_batch(void **state)
{
    struct nop_op ops[600];
    struct counter c = {.loop = new_loop(), .want = 600};

    (void)state;
    /* More than the submission queue holds: starting flushes early. */
    for (int i = 0; i < 600; i++) {
        ops[i] = (struct nop_op){.op.fn = nop_done, .c = &c, .res = -1};
        assert_int_equal(weir_loop_nop(c.loop, &ops[i].op), 0);
        assert_true(ops[i].op.pending);
    }
    assert_int_equal(weir_loop_pending(c.loop), 600);
    assert_int_equal(weir_loop_turns(c.loop), 0);
    assert_int_equal(weir_loop_run(c.loop), 0);
    assert_int_equal(c.done, 600);
    /* At least one turn took the completions; not one per op. */
    assert_true(weir_loop_turns(c.loop) >= 1);
    assert_true(weir_loop_turns(c.loop) < 600);
    for (int i = 0; i < 600; i++)
        assert_int_equal(ops[i].res, 0);
    assert_int_equal(weir_loop_pending(c.loop), 0);
    weir_loop_destroy(c.loop);
}

/* ---- a file written and read back at explicit offsets ---- */

#define FILE_CHUNKS 16
#define CHUNK       (64 * 1024)

struct file_job {
    struct weir_loop *loop;
    int fd;
    uint8_t *src;
    uint8_t *dst;
    struct weir_op ops[FILE_CHUNKS];
    int writes_left;
    int reads_left;
    int errors;
};

/* The job under test; callbacks find their index from the op's place in
 * ops[]. */
static struct file_job *current_job;

static struct file_job *job_of(struct weir_op *op, int *index)
{
    *index = (int)(op - current_job->ops);
    return current_job;
}

static void file_read_done(struct weir_op *op, int res, uint32_t flags)
{
    int i;
    struct file_job *j = job_of(op, &i);

    (void)flags;
    if (res != CHUNK)
        j->errors++;
    if (--j->reads_left == 0)
        weir_loop_stop(j->loop);
}

static void file_write_done(struct weir_op *op, int res, uint32_t flags)
{
    int i;
    struct file_job *j = job_of(op, &i);

    (void)flags;
    if (res != CHUNK)
        j->errors++;
    if (--j->writes_left > 0)
        return;
    /* All written: read everything back in reverse order, in one batch. */
    for (int k = FILE_CHUNKS - 1; k >= 0; k--) {
        j->ops[k].fn = file_read_done;
        assert_int_equal(weir_loop_read(j->loop, &j->ops[k], j->fd,
                                        j->dst + (size_t)k * CHUNK, CHUNK,
                                        (uint64_t)k * CHUNK),
                         0);
    }
}

static void test_file_rw(void **state)
{
    char dir[] = "/tmp/weir-loop-XXXXXX";
    char path[64];
    struct file_job j = {.loop = new_loop()};
    size_t total = (size_t)FILE_CHUNKS * CHUNK;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/data", dir);
    j.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(j.fd >= 0);
    j.src = malloc(total);
    j.dst = calloc(1, total);
    for (size_t i = 0; i < total; i++)
        j.src[i] = (uint8_t)(i * 2654435761u >> 13);
    j.writes_left = j.reads_left = FILE_CHUNKS;
    current_job = &j;
    for (int k = 0; k < FILE_CHUNKS; k++) {
        j.ops[k].fn = file_write_done;
        assert_int_equal(weir_loop_write(j.loop, &j.ops[k], j.fd,
                                         j.src + (size_t)k * CHUNK, CHUNK,
                                         (uint64_t)k * CHUNK),
                         0);
    }
    assert_int_equal(weir_loop_run(j.loop), 0);
    assert_int_equal(j.errors, 0);
    assert_true(fnv1a(14695981039346656037ull, j.src, total) ==
                fnv1a(14695981039346656037ull, j.dst, total));
    close(j.fd);
    unlink(path);
    rmdir(dir);
    free(j.src);
    free(j.dst);
    weir_loop_destroy(j.loop);
}

/* ---- timers ---- */

struct timer_case {
    struct weir_loop *loop;
    struct weir_timer fire;
    struct weir_timer never;
    int fire_res;
    int never_res;
    int done;
};

static void timer_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct timer_case *t = container_of(op, struct timer_case, fire.op);

    (void)flags;
    t->fire_res = res;
    /* Stop the long one from the first one's callback. */
    assert_int_equal(weir_loop_timer_stop(t->loop, &t->never), 0);
    if (++t->done == 2)
        weir_loop_stop(t->loop);
}

static void timer_never(struct weir_op *op, int res, uint32_t flags)
{
    struct timer_case *t = container_of(op, struct timer_case, never.op);

    (void)flags;
    t->never_res = res;
    if (++t->done == 2)
        weir_loop_stop(t->loop);
}

static void test_timers(void **state)
{
    struct timer_case t = {.loop = new_loop()};

    (void)state;
    t.fire.op.fn = timer_fired;
    t.never.op.fn = timer_never;
    assert_int_equal(weir_loop_timer_start(t.loop, &t.never, 3600000000000ull),
                     0);
    assert_int_equal(weir_loop_timer_start(t.loop, &t.fire, 1000000), 0);
    assert_int_equal(weir_loop_run(t.loop), 0);
    assert_int_equal(t.fire_res, -ETIME);
    assert_int_equal(t.never_res, -ECANCELED);
    assert_int_equal(weir_loop_timer_stop(t.loop, &t.never), -ENOENT);
    weir_loop_destroy(t.loop);
}

/* ---- cancel a read that would wait forever ---- */

struct cancel_case {
    struct weir_loop *loop;
    struct weir_op read;
    struct weir_op nop;
    char buf[16];
    int res;
};

static void cancel_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct cancel_case *c = container_of(op, struct cancel_case, read);

    (void)flags;
    c->res = res;
    weir_loop_stop(c->loop);
}

static void cancel_nop_done(struct weir_op *op, int res, uint32_t flags)
{
    struct cancel_case *c = container_of(op, struct cancel_case, nop);

    (void)res;
    (void)flags;
    /* By now the read has been submitted and is waiting. */
    assert_int_equal(weir_loop_cancel(c->loop, &c->read), 0);
}

static void test_cancel(void **state)
{
    struct cancel_case c = {.loop = new_loop(), .res = 1};
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    c.read.fn = cancel_read_done;
    c.nop.fn = cancel_nop_done;
    assert_int_equal(weir_loop_read(c.loop, &c.read, fds[0], c.buf,
                                    sizeof(c.buf), (uint64_t)-1),
                     0);
    assert_int_equal(weir_loop_nop(c.loop, &c.nop), 0);
    assert_int_equal(weir_loop_run(c.loop), 0);
    assert_int_equal(c.res, -ECANCELED);
    assert_int_equal(weir_loop_cancel(c.loop, &c.read), -ENOENT);
    close(fds[0]);
    close(fds[1]);
    weir_loop_destroy(c.loop);
}

/* ---- linked requests: a write, then a read of what it wrote ---- */

struct link_case {
    struct weir_loop *loop;
    struct weir_op write;
    struct weir_op read;
    char out[8];
    char in[8];
    int wres, rres;
};

static void link_write_done(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    container_of(op, struct link_case, write)->wres = res;
}

static void link_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct link_case *l = container_of(op, struct link_case, read);

    (void)flags;
    l->rres = res;
    weir_loop_stop(l->loop);
}

static void test_link(void **state)
{
    struct link_case l = {.loop = new_loop()};
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    memcpy(l.out, "weir-lnk", 8);
    l.write.fn = link_write_done;
    l.read.fn = link_read_done;
    assert_int_equal(
        weir_loop_write(l.loop, &l.write, fds[1], l.out, 8, (uint64_t)-1), 0);
    weir_loop_link(l.loop);
    assert_int_equal(
        weir_loop_read(l.loop, &l.read, fds[0], l.in, 8, (uint64_t)-1), 0);
    assert_int_equal(weir_loop_run(l.loop), 0);
    assert_int_equal(l.wres, 8);
    assert_int_equal(l.rres, 8);
    assert_memory_equal(l.in, "weir-lnk", 8);
    close(fds[0]);
    close(fds[1]);
    weir_loop_destroy(l.loop);
}

/* ---- mark and reap: a free deferred past the rest of the batch ---- */

struct reaped {
    struct weir_loop *loop;
    struct weir_op a;
    struct weir_op b;
    struct weir_reap reap;
    int *log; /* outlives the object */
    int n;
    bool dead;
};

static void reap_free(struct weir_reap *r)
{
    struct reaped *o = container_of(r, struct reaped, reap);
    int *log = o->log;

    log[o->n++] = 3;
    o->dead = true;
    weir_loop_stop(o->loop);
}

static void reap_a(struct weir_op *op, int res, uint32_t flags)
{
    struct reaped *o = container_of(op, struct reaped, a);

    (void)res;
    (void)flags;
    o->log[o->n++] = 1;
    /* Decide to free while b may still complete in this batch. */
    weir_loop_defer(o->loop, &o->reap);
}

static void reap_b(struct weir_op *op, int res, uint32_t flags)
{
    struct reaped *o = container_of(op, struct reaped, b);

    (void)res;
    (void)flags;
    assert_false(o->dead);
    o->log[o->n++] = 2;
}

static void test_defer(void **state)
{
    int log[4] = {0};
    struct reaped o = {.loop = new_loop(), .log = log};

    (void)state;
    o.a.fn = reap_a;
    o.b.fn = reap_b;
    o.reap.fn = reap_free;
    assert_int_equal(weir_loop_nop(o.loop, &o.a), 0);
    assert_int_equal(weir_loop_nop(o.loop, &o.b), 0);
    assert_int_equal(weir_loop_run(o.loop), 0);
    assert_int_equal(o.n, 3);
    assert_int_equal(log[0], 1);
    assert_int_equal(log[1], 2);
    assert_int_equal(log[2], 3);
    weir_loop_destroy(o.loop);
}

/* ---- sockets on 127.0.0.1: accept, connect, send, recv ---- */

struct sock_case {
    struct weir_loop *loop;
    int lfd, cfd, afd;
    struct weir_op accept, connect, send, recv;
    struct sockaddr_in addr;
    uint8_t out[4096];
    uint8_t in[4096];
    size_t got;
    int steps;
};

static void sock_step(struct sock_case *s)
{
    if (++s->steps == 2) {
        /* Connected and accepted: send one block, receive it. */
        assert_int_equal(
            weir_loop_send(s->loop, &s->send, s->cfd, s->out, 4096, 0), 0);
        assert_int_equal(
            weir_loop_recv(s->loop, &s->recv, s->afd, s->in, 4096, 0), 0);
    }
}

static void sock_accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct sock_case *s = container_of(op, struct sock_case, accept);

    (void)flags;
    assert_true(res >= 0);
    s->afd = res;
    sock_step(s);
}

static void sock_connected(struct weir_op *op, int res, uint32_t flags)
{
    struct sock_case *s = container_of(op, struct sock_case, connect);

    (void)flags;
    assert_int_equal(res, 0);
    sock_step(s);
}

static void sock_sent(struct weir_op *op, int res, uint32_t flags)
{
    (void)op;
    (void)flags;
    assert_int_equal(res, 4096);
}

static void sock_received(struct weir_op *op, int res, uint32_t flags)
{
    struct sock_case *s = container_of(op, struct sock_case, recv);

    (void)flags;
    assert_true(res > 0);
    s->got += (size_t)res;
    if (s->got < 4096)
        assert_int_equal(weir_loop_recv(s->loop, &s->recv, s->afd,
                                        s->in + s->got, 4096 - s->got, 0),
                         0);
    else
        weir_loop_stop(s->loop);
}

static void test_sockets(void **state)
{
    struct sock_case s = {.loop = new_loop(), .afd = -1};
    socklen_t len = sizeof(s.addr);

    (void)state;
    for (int i = 0; i < 4096; i++)
        s.out[i] = (uint8_t)(i * 7 + 3);
    s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s.lfd >= 0);
    s.addr.sin_family = AF_INET;
    s.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s.lfd, (struct sockaddr *)&s.addr, sizeof(s.addr)),
                     0);
    assert_int_equal(listen(s.lfd, 4), 0);
    assert_int_equal(getsockname(s.lfd, (struct sockaddr *)&s.addr, &len), 0);
    s.cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    s.accept.fn = sock_accepted;
    s.connect.fn = sock_connected;
    s.send.fn = sock_sent;
    s.recv.fn = sock_received;
    assert_int_equal(
        weir_loop_accept(s.loop, &s.accept, s.lfd, NULL, NULL, SOCK_CLOEXEC),
        0);
    assert_int_equal(weir_loop_connect(s.loop, &s.connect, s.cfd,
                                       (struct sockaddr *)&s.addr,
                                       sizeof(s.addr)),
                     0);
    assert_int_equal(weir_loop_run(s.loop), 0);
    assert_memory_equal(s.in, s.out, 4096);
    close(s.afd);
    close(s.cfd);
    close(s.lfd);
    weir_loop_destroy(s.loop);
}

/* ---- multishot accept: one op, many connections, then cancel ---- */

struct multi_case {
    struct weir_loop *loop;
    struct weir_op accept;
    int accepted;
    int more;
    int last_res;
    int fds[8];
};

static void multi_accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct multi_case *m = container_of(op, struct multi_case, accept);

    if (flags & WEIR_OP_MORE) {
        assert_true(op->pending);
        assert_true(res >= 0);
        m->fds[m->accepted++] = res;
        m->more++;
        if (m->accepted == 3)
            assert_int_equal(weir_loop_cancel(m->loop, op), 0);
        return;
    }
    /* The last one: canceled (or an accept that raced the cancel). */
    assert_false(op->pending);
    if (res >= 0)
        m->fds[m->accepted++] = res;
    m->last_res = res;
    weir_loop_stop(m->loop);
}

static void test_accept_multishot(void **state)
{
    struct multi_case m = {.loop = new_loop()};
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd[3];

    (void)state;
    assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
    /* Three clients queue in the backlog before the loop runs. */
    for (int i = 0; i < 3; i++) {
        cfd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(cfd[i], (struct sockaddr *)&sin, sizeof(sin)),
                         0);
    }
    m.accept.fn = multi_accepted;
    assert_int_equal(
        weir_loop_accept_multishot(m.loop, &m.accept, lfd, SOCK_CLOEXEC), 0);
    assert_int_equal(weir_loop_run(m.loop), 0);
    assert_int_equal(m.more, 3);
    assert_int_equal(m.accepted, 3);
    assert_int_equal(m.last_res, -ECANCELED);
    assert_int_equal(weir_loop_pending(m.loop), 0);
    for (int i = 0; i < 3; i++) {
        close(m.fds[i]);
        close(cfd[i]);
    }
    close(lfd);
    weir_loop_destroy(m.loop);
}

/* ---- tasks posted from another thread wake a sleeping loop ---- */

#define POSTS 2000

struct post_case {
    struct weir_loop *loop;
    struct weir_task tasks[POSTS];
    int ran[POSTS];
    int total;
    pthread_t thread;
};

static struct post_case *current_post;

static void post_ran(struct weir_task *t)
{
    struct post_case *p = current_post;
    int i = (int)(t - p->tasks);

    p->ran[i]++;
    if (++p->total == POSTS)
        weir_loop_stop(p->loop);
}

static void *poster(void *arg)
{
    struct post_case *p = arg;

    for (int i = 0; i < POSTS; i++) {
        weir_loop_post(p->loop, &p->tasks[i]);
        /* Idle now and then so the loop goes to sleep between posts. */
        if (i % 16 == 0)
            usleep(50);
    }
    return NULL;
}

static void test_post_from_thread(void **state)
{
    static struct post_case p;

    (void)state;
    memset(&p, 0, sizeof(p));
    p.loop = new_loop();
    current_post = &p;
    for (int i = 0; i < POSTS; i++)
        weir_task_init(&p.tasks[i], post_ran);
    assert_int_equal(pthread_create(&p.thread, NULL, poster, &p), 0);
    /* Returns only once all POSTS ran; a lost wakeup hangs here and the
     * meson timeout fails the test. */
    assert_int_equal(weir_loop_run(p.loop), 0);
    pthread_join(p.thread, NULL);
    for (int i = 0; i < POSTS; i++)
        assert_int_equal(p.ran[i], 1);
    weir_loop_destroy(p.loop);
}

/* ---- posting a queued task again runs it once ---- */

static int coalesced_runs;

static void coalesced(struct weir_task *t)
{
    (void)t;
    coalesced_runs++;
}

static void stop_task(struct weir_task *t)
{
    (void)t;
    weir_loop_stop(weir_loop_current());
}

static void test_post_coalesces(void **state)
{
    struct weir_loop *loop = new_loop();
    struct weir_task t, stop;

    (void)state;
    weir_task_init(&t, coalesced);
    weir_task_init(&stop, stop_task);
    assert_true(weir_loop_post(loop, &t));
    assert_false(weir_loop_post(loop, &t));
    assert_true(weir_loop_post(loop, &stop));
    assert_int_equal(weir_loop_run(loop), 0);
    assert_int_equal(coalesced_runs, 1);
    weir_loop_destroy(loop);
}

/* ---- io_uring refused, as a container's seccomp profile does ---- */

static int child_without_io_uring(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]),
                              .filter = filter};
    struct weir_loop_options uring = {.engine = WEIR_ENGINE_IO_URING};
    struct weir_workers_options wo = {.count = 2,
                                      .engine = WEIR_ENGINE_IO_URING};
    struct weir_workers *w;
    struct weir_loop *loop;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        return 10;
    if (weir_loop_create(&loop, &uring) != -EPERM)
        return 11;
    /* Workers report the first worker's error and leave nothing behind. */
    if (weir_workers_start(&w, &wo) != -EPERM)
        return 12;
    if (!strstr(weir_loop_strerror(-EPERM), "seccomp"))
        return 13;
    /* AUTO runs on epoll instead and says why. */
    if (weir_loop_create(&loop, &(struct weir_loop_options){0}) != 0)
        return 14;
    if (weir_loop_engine(loop) != WEIR_ENGINE_EPOLL)
        return 15;
    if (getenv("WEIR_ENGINE") == NULL &&
        !strstr(weir_loop_engine_reason(loop), "EPERM"))
        return 16;
    weir_loop_destroy(loop);
    wo.engine = WEIR_ENGINE_AUTO;
    if (weir_workers_start(&w, &wo) != 0)
        return 17;
    if (weir_loop_engine(weir_workers_loop(w, 1)) != WEIR_ENGINE_EPOLL)
        return 18;
    if (weir_workers_stop(w) != 0)
        return 19;
    return 0;
}

static void test_setup_refused(void **state)
{
    int status;
    pid_t pid;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_without_io_uring());
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- the operator's message for each setup failure ---- */

static void test_strerror(void **state)
{
    (void)state;
    assert_non_null(
        strstr(weir_loop_strerror(-EPERM), "kernel.io_uring_disabled=0"));
    assert_non_null(strstr(weir_loop_strerror(-EPERM), "seccomp"));
    assert_non_null(strstr(weir_loop_strerror(-ENOSYS), "ENOSYS"));
    assert_non_null(strstr(weir_loop_strerror(-ENOMEM), "LimitMEMLOCK"));
    assert_non_null(weir_loop_strerror(-12345));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nop_batch),
        cmocka_unit_test(test_file_rw),
        cmocka_unit_test(test_timers),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_defer),
        cmocka_unit_test(test_sockets),
        cmocka_unit_test(test_accept_multishot),
        cmocka_unit_test(test_post_from_thread),
        cmocka_unit_test(test_post_coalesces),
        cmocka_unit_test(test_setup_refused),
        cmocka_unit_test(test_strerror),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
