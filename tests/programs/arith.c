/* arith: a loop dominated by one kind of arithmetic, for the cycle model.
 *
 * Usage: arith div|add [n]     (default n = 100000)
 *   div: n dependent 64-bit divisions (x = x / d + c): each waits for the
 *        one before, so the loop runs at the division's latency.
 *   add: n iterations of eight dependent additions: one cycle each.
 * Prints the result and exits 0; exits 2 on a bad argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP __attribute__((noinline, used))
/* Hides a value from the optimiser, so every operation stays in the loop. */
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

KEEP unsigned long divide(unsigned long n)
{
    unsigned long x = ~0UL, d = 3;
    for (unsigned long i = 0; i < n; i++) {
        OPAQUE(d);
        x = x / d + 0x7fffffffffffffffUL;
    }
    return x;
}

KEEP unsigned long add(unsigned long n)
{
    unsigned long x = 0, y = 1;
    for (unsigned long i = 0; i < n; i++) {
        OPAQUE(y);
        x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x);
        x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x);
    }
    return x;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    if (argc > 1 && strcmp(argv[1], "div") == 0)
        printf("%lu\n", divide(n));
    else if (argc > 1 && strcmp(argv[1], "add") == 0)
        printf("%lu\n", add(n));
    else {
        fprintf(stderr, "usage: arith div|add [n]\n");
        return 2;
    }
    return 0;
}
