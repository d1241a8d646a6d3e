/* mutual: mutual recursion in the foo/bar/toy shape.
 *
 * Usage: mutual [n]     (default n = 10)
 * Prints "foo(10) = 1830" and exits 0.
 *
 *   main → foo(n)
 *   foo(k): if k > 0 calls bar(k); then calls toy(k)
 *   bar(k): calls foo(k - 1); if k is even, also calls toy(k)
 *   toy(k): a leaf loop of k + 10 iterations
 *
 * Expected call counts for n = 10 (every optimisation level; KEEP keeps all three
 * out of line and no call is in tail position):
 *   foo: 11 calls (k = 10 … 0): 1 from main, 10 from bar
 *   bar: 10 calls (k = 10 … 1), all from foo
 *   toy: 16 calls: 11 from foo, 5 from bar (k = 10, 8, 6, 4, 2)
 * The cycle foo → bar → foo must be counted once: the inclusive cost of foo and of
 * bar never exceeds the total.
 */
#include <stdio.h>
#include <stdlib.h>
#include "testprog.h"

KEEP long foo(long k);

KEEP long toy(long k)
{
    long acc = 0;
    for (long i = 0; i < k + 10; i++) {
        acc += i;
        OPAQUE(acc);
    }
    return acc;
}

KEEP long bar(long k)
{
    long r = foo(k - 1);
    if (k % 2 == 0)
        r += toy(k);
    OPAQUE(r);
    return r;
}

KEEP long foo(long k)
{
    long r = 0;
    if (k > 0)
        r += bar(k);
    r += toy(k);
    OPAQUE(r);
    return r;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
    printf("foo(%ld) = %ld\n", n, foo(n));
    return 0;
}
