/* clientreq: Callgrind's client requests around the region a benchmark
 * measures (valgrind/callgrind.h, as gungraun-style harnesses use them).
 *
 * Usage: clientreq [n [parts]]     (default n = 20)
 *        clientreq probe             prints RUNNING_ON_VALGRIND's value
 * Prints "fib(20) = 6765, table 3976090496" and exits 0.
 *
 * main stops instrumentation, builds a table (not counted), starts
 * instrumentation again, then collection is toggled off around a checksum
 * of the table (not counted) and on again before fib(n) (counted). With
 * `parts`, the statistics are zeroed before fib and dumped after it
 * (CALLGRIND_DUMP_STATS_AT), so the last part holds fib and the output.
 * Natively the macros do nothing.
 *
 * Expected costs: build_table and checksum count no instruction; fib counts
 * what fib.c's fib counts for the same n.
 */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "testprog.h"

static unsigned table[1 << 14];

KEEP void build_table(void)
{
    unsigned state = 1;
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        table[i] = lcg_next(&state) >> 7;
}

KEEP unsigned checksum(void)
{
    unsigned sum = 0;
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        sum += table[i] ^ i;
    return sum;
}

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    long sum = fib(n - 1) + fib(n - 2);
    OPAQUE(sum);
    return sum;
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0] == 'p') {
        printf("RUNNING_ON_VALGRIND = %u\n", (unsigned)RUNNING_ON_VALGRIND);
        return 0;
    }
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
    int parts = argc > 2;
    CALLGRIND_STOP_INSTRUMENTATION;
    build_table();
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_TOGGLE_COLLECT;
    unsigned sum = checksum();
    CALLGRIND_TOGGLE_COLLECT;
    if (parts)
        CALLGRIND_ZERO_STATS;
    long result = fib(n);
    if (parts)
        CALLGRIND_DUMP_STATS_AT("after fib");
    printf("fib(%ld) = %ld, table %u\n", n, result, sum);
    return 0;
}
