/* collect: a long setup, then the work a benchmark wants to measure.
 *
 * Usage: collect [n]        (default n = 20)
 *
 * main calls build_table (fills and checksums a 64 Ki-entry table: most of
 * the run), then fib(n) (direct recursion), then square, which is always
 * inlined into main and so has no entry of its own. `--collect fib` must
 * count exactly fib's inclusive instructions; `--collect square` must say
 * that square was inlined into main.
 */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noipa))
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

static unsigned table[1 << 16];

KEEP unsigned build_table(void)
{
    unsigned state = 1, sum = 0;
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++) {
        state = state * 1664525u + 1013904223u;
        table[i] = state >> 7;
    }
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

static inline __attribute__((always_inline)) long square(long x)
{
    OPAQUE(x);
    return x * x;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
    unsigned checksum = build_table();
    long result = fib(n);
    printf("table %u fib(%ld) = %ld square %ld\n", checksum, n, result, square(result));
    return 0;
}
