/*
 * test_worker_fail.c - a worker whose loop fails for good says so: a
 * task on worker 1 installs a seccomp filter on that thread alone (a
 * filter binds the thread that installs it) which makes the loop's wait
 * (io_uring_enter; epoll_wait and epoll_pwait2 on the epoll engine) fail
 * with ENOTRECOVERABLE, an errno no engine expects. The loop's next wait
 * fails, on_fail runs on worker 1's thread with index 1 and that error,
 * and worker 0 keeps running tasks. Without on_fail the thread ends
 * quietly, and the workers still stop cleanly.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/worker.h"

#define FAIL_WAIT(nr)                                                          \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                           \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTRECOVERABLE)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    unsigned index;
    int err;
    int filter_rc;
    int ran; /* tasks run on the healthy worker */
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void on_fail(void *arg, unsigned index, int err)
{
    assert_ptr_equal(arg, &st);
    pthread_mutex_lock(&st.lock);
    st.calls++;
    st.index = index;
    st.err = err;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

/* Runs on the worker it was posted to: from now on this thread's waits
 * fail. */
static void break_wait(struct weir_task *t)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        FAIL_WAIT(__NR_io_uring_enter),
        FAIL_WAIT(__NR_epoll_wait),
        FAIL_WAIT(__NR_epoll_pwait),
#ifdef __NR_epoll_pwait2
        FAIL_WAIT(__NR_epoll_pwait2),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]),
                              .filter = filter};
    int rc = 0;

    (void)t;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        rc = -errno;
    pthread_mutex_lock(&st.lock);
    st.filter_rc = rc;
    pthread_mutex_unlock(&st.lock);
}

static void count_ran(struct weir_task *t)
{
    (void)t;
    pthread_mutex_lock(&st.lock);
    st.ran++;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

static void run_case(bool with_callback)
{
    struct weir_workers_options wo = {.count = 2, .pool_buffers = 4};
    struct weir_task brk, ping;
    struct weir_workers *w;

    if (with_callback) {
        wo.on_fail = on_fail;
        wo.fail_arg = &st;
    }
    st.calls = st.ran = 0;
    st.err = 0;
    assert_int_equal(weir_workers_start(&w, &wo), 0);
    weir_task_init(&brk, break_wait);
    weir_workers_post(w, 1, &brk);
    if (with_callback) {
        pthread_mutex_lock(&st.lock);
        while (st.calls == 0)
            pthread_cond_wait(&st.cond, &st.lock);
        pthread_mutex_unlock(&st.lock);
        assert_int_equal(st.filter_rc, 0);
        assert_int_equal(st.calls, 1);
        assert_int_equal(st.index, 1);
        assert_int_equal(st.err, -ENOTRECOVERABLE);
    }
    /* The other worker is untouched. */
    weir_task_init(&ping, count_ran);
    weir_workers_post(w, 0, &ping);
    pthread_mutex_lock(&st.lock);
    while (st.ran == 0)
        pthread_cond_wait(&st.cond, &st.lock);
    pthread_mutex_unlock(&st.lock);
    assert_int_equal(weir_workers_stop(w), 0);
    assert_int_equal(st.calls, with_callback ? 1 : 0);
}

static void test_on_fail(void **state)
{
    (void)state;
    run_case(true);
}

static void test_without_callback(void **state)
{
    (void)state;
    run_case(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_on_fail),
        cmocka_unit_test(test_without_callback),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
