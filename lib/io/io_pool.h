/*
 * io_pool.h - the epoll engine's I/O threads: a small pool, shared by the
 * process, that makes the reads of regular files which would wait for the
 * disk, so a cold read never holds a loop. A read's result comes back to
 * its loop as a task, onto the loop's done list. Private to lib/io.
 */
#ifndef WEIR_IO_IO_POOL_H
#define WEIR_IO_IO_POOL_H

#include <stdbool.h>

#include "epoll_impl.h"

/* Any thread. Starts the threads, once per process; later calls do
 * nothing. */
void weir__io_pool_start(void);

/* Owner thread of loop. Hands a read to the threads; false when there are
 * none. r is theirs until its task runs on loop. */
bool weir__io_pool_submit(struct weir_loop *loop, struct epl_req *r);

#endif
