/* deeprec: deep recursion, 100 000 frames.
 *
 * Usage: deeprec [depth]   (default depth = 100000)
 * Prints "descend(100000) = 100000, checksum 5000050000" and exits 0.
 *
 * descend is called depth + 1 times (1 from main, depth from itself); the shadow
 * call stack of a profiler reaches depth + 1 frames of descend. Each frame is small
 * (well under 80 bytes at -O0), so the deepest point needs under 8 MB of stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include "testprog.h"

static long long checksum;

KEEP long descend(long n)
{
    if (n == 0)
        return 0;
    checksum += n;
    long depth = descend(n - 1) + 1;
    OPAQUE(depth);
    return depth;
}

int main(int argc, char **argv)
{
    long depth = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    long reached = descend(depth);
    printf("descend(%ld) = %ld, checksum %lld\n", depth, reached, checksum);
    return 0;
}
