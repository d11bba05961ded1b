/* ring.c - suite `ring` (being written). */
#include <stdio.h>

#include "bench.h"

int bench_ring(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ring: not written yet\n");
    return 1;
}
