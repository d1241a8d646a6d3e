/* costmix: two functions whose order by instructions is the opposite of
 * their order by cycles, for sorting by a metric.
 *
 * Usage: costmix ADDS DIVS
 *   adds(ADDS): ADDS iterations of four dependent additions (about one
 *               cycle per instruction).
 *   divs(DIVS): DIVS dependent 64-bit divisions (tens of cycles each).
 * Prints both results and exits 0; exits 2 on a bad argument.
 */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, used))
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

KEEP unsigned long adds(unsigned long n)
{
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) {
        x += i;
        x += 3;
        x += 5;
        x += 7;
        OPAQUE(x);
    }
    return x;
}

KEEP unsigned long divs(unsigned long n)
{
    unsigned long x = ~0UL, d = 3;
    for (unsigned long i = 0; i < n; i++) {
        OPAQUE(d);
        x = x / d + 0x7fffffffffffffffUL;
    }
    return x;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    unsigned long a = strtoul(argv[1], NULL, 10), d = strtoul(argv[2], NULL, 10);
    printf("%lu %lu\n", adds(a), divs(d));
    return 0;
}
