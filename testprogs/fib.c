/* fib: direct recursion.
 *
 * Usage: fib [n]        (default n = 20)
 * Prints "fib(20) = 6765" and exits 0.
 *
 * Expected call structure, identical at every optimisation level (KEEP and OPAQUE
 * stop gcc from cloning fib or turning one recursive call into a loop):
 *   fib is called C(n) = 2*fib(n+1) - 1 times in all; for n = 20 that is
 *   2*10946 - 1 = 21891 calls: 1 from main and 21890 from fib itself.
 *   Inclusive cost of fib counts the recursion once: it equals the cost of the
 *   single call from main.
 */
#include <stdio.h>
#include <stdlib.h>
#include "testprog.h"

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
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
    printf("fib(%ld) = %ld\n", n, fib(n));
    return 0;
}
