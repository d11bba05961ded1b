/*
 * fileio.c - suite `fileio`: how the epoll engine should read regular
 * files, which epoll cannot wait for (a file is always "ready").
 *
 *   weir-bench fileio [size=256MiB] [reps=3] [depth=4] [chunk=256KiB]
 *
 * Each strategy of weir_loop_options.file_reads reads one file through an
 * epoll loop, `depth` reads of `chunk` in flight as the file source keeps
 * them, warm (the file in the page cache) and cold (its pages dropped with
 * POSIX_FADV_DONTNEED before each run; the resident share left is shown).
 * Beside the reads a 1 ms timer is re-armed on the same loop: its worst
 * lateness is how long a read held the loop, which every other stream on
 * that worker would wait too. Best throughput of `reps` runs; the lateness
 * is the worst seen over them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "weir/loop.h"

#define MAX_DEPTH 64

struct fio {
    struct weir_loop *loop;
    int fd;
    uint64_t size, next_off, got;
    uint32_t chunk, depth;
    unsigned inflight;
    struct weir_op ops[MAX_DEPTH];
    uint8_t *bufs[MAX_DEPTH];
    struct weir_timer tick;
    uint64_t due, worst_late;
    int err;
};

static struct fio f;

static void read_issue(struct weir_op *op);

static void read_done(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    f.inflight--;
    if (res <= 0) {
        f.err = res ? res : -EIO;
        weir_loop_stop(f.loop);
        return;
    }
    f.got += (uint64_t)res;
    if (f.next_off < f.size)
        read_issue(op);
    else if (f.inflight == 0)
        weir_loop_stop(f.loop);
}

static void read_issue(struct weir_op *op)
{
    size_t i = (size_t)(op - f.ops);
    uint64_t len = f.size - f.next_off;

    if (len > f.chunk)
        len = f.chunk;
    op->fn = read_done;
    if (weir_loop_read(f.loop, op, f.fd, f.bufs[i], (uint32_t)len,
                       f.next_off) != 0) {
        f.err = -EBUSY;
        weir_loop_stop(f.loop);
        return;
    }
    f.next_off += len;
    f.inflight++;
}

static void tick_fired(struct weir_op *op, int res, uint32_t flags)
{
    uint64_t now = bench_now_ns();

    (void)op;
    (void)res;
    (void)flags;
    if (now > f.due && now - f.due > f.worst_late)
        f.worst_late = now - f.due;
    f.due = now + 1000000;
    weir_loop_timer_start(f.loop, &f.tick, 1000000);
}

/* Share of the file's pages in the page cache, in percent. */
static double resident(int fd, uint64_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (size_t)((size + (uint64_t)page - 1) / (uint64_t)page);
    unsigned char *vec = malloc(pages);
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    size_t in = 0;

    if (map == MAP_FAILED || !vec || mincore(map, size, vec) != 0) {
        if (map != MAP_FAILED)
            munmap(map, size);
        free(vec);
        return -1;
    }
    for (size_t i = 0; i < pages; i++)
        in += vec[i] & 1;
    munmap(map, size);
    free(vec);
    return 100.0 * (double)in / (double)pages;
}

/* One run; returns GB/s or a negative value on failure. */
static double run_once(enum weir_loop_file_reads how, int fd, uint64_t size,
                       uint32_t chunk, uint32_t depth)
{
    struct weir_loop_options o = {.engine = WEIR_ENGINE_EPOLL,
                                  .file_reads = how};
    uint64_t t0, t1;

    f = (struct fio){.fd = fd, .size = size, .chunk = chunk, .depth = depth};
    if (weir_loop_create(&f.loop, &o) != 0)
        return -1;
    for (uint32_t i = 0; i < depth; i++)
        f.bufs[i] = malloc(chunk);
    f.tick.op.fn = tick_fired;
    t0 = bench_now_ns();
    f.due = t0 + 1000000;
    weir_loop_timer_start(f.loop, &f.tick, 1000000);
    for (uint32_t i = 0; i < depth && f.next_off < size; i++)
        read_issue(&f.ops[i]);
    weir_loop_run(f.loop);
    t1 = bench_now_ns();
    weir_loop_destroy(f.loop);
    for (uint32_t i = 0; i < depth; i++)
        free(f.bufs[i]);
    if (f.err || f.got != size)
        return -1;
    return (double)size / (double)(t1 - t0);
}

int bench_fileio(int argc, char **argv)
{
    static const struct {
        const char *name;
        enum weir_loop_file_reads how;
    } ways[] = {
        {"nowait+block", WEIR_LOOP_FILE_READS_NOWAIT_BLOCK},
        {"nowait+threads", WEIR_LOOP_FILE_READS_NOWAIT_THREADS},
        {"threads", WEIR_LOOP_FILE_READS_THREADS},
        {"block", WEIR_LOOP_FILE_READS_BLOCK},
    };
    const char *path = "/tmp/weir-bench-fileio.bin";
    uint64_t size = 256u << 20, reps = 3, depth = 4, chunk = 256u << 10;
    char sizestr[32];
    int fd;

    for (int i = 1; i < argc; i++) {
        int ok = 0;

        if (strncmp(argv[i], "size=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &size) == 0;
        else if (strncmp(argv[i], "reps=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &reps) == 0;
        else if (strncmp(argv[i], "depth=", 6) == 0)
            ok = e2e_parse_size(argv[i] + 6, &depth) == 0;
        else if (strncmp(argv[i], "chunk=", 6) == 0)
            ok = e2e_parse_size(argv[i] + 6, &chunk) == 0;
        if (!ok || reps == 0 || depth == 0 || depth > MAX_DEPTH || chunk == 0 ||
            chunk > (64u << 20)) {
            fprintf(stderr, "usage: weir-bench fileio [size=256MiB] "
                            "[reps=3] [depth=4] [chunk=256KiB]\n");
            return 2;
        }
    }
    if (e2e_make_file(path, size) != 0) {
        perror(path);
        return 1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    e2e_format_size(size, sizestr, sizeof(sizestr));
    for (int cold = 0; cold < 2; cold++)
        for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
            double best = 0, res_min = 100;
            uint64_t worst = 0;

            for (uint64_t r = 0; r < reps; r++) {
                double gbps, rp;

                if (cold) {
                    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                    rp = resident(fd, size);
                    if (rp < res_min)
                        res_min = rp;
                }
                gbps = run_once(ways[w].how, fd, (uint64_t)size,
                                (uint32_t)chunk, (uint32_t)depth);
                if (gbps < 0) {
                    fprintf(stderr, "fileio %s: read failed\n", ways[w].name);
                    close(fd);
                    return 1;
                }
                if (gbps > best)
                    best = gbps;
                if (f.worst_late > worst)
                    worst = f.worst_late;
            }
            printf("fileio reads=%s cache=%s size=%s depth=%u chunk=%u: "
                   "%.2f GB/s, worst timer lateness %.2f ms",
                   ways[w].name, cold ? "cold" : "warm", sizestr,
                   (unsigned)depth, (unsigned)chunk, best, (double)worst / 1e6);
            if (cold)
                printf(" (resident before: %.0f%%)", res_min);
            printf("\n");
            fflush(stdout);
        }
    close(fd);
    return 0;
}
