/* fsqrt and frndint (sqrtl, rintl) on a spread of values under every
 * rounding control and precision control: the result and C1, which says
 * whether the result was rounded up in magnitude. Prints the same natively
 * and under emuprof. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void run(long double x, uint16_t control, int sqrt_not_round) {
    long double r;
    uint16_t status;
    if (sqrt_not_round)
        __asm__ volatile("fldcw %2\nfclex\nfsqrt\nfnstsw %1" : "=t"(r), "=m"(status) : "m"(control), "0"(x));
    else
        __asm__ volatile("fldcw %2\nfclex\nfrndint\nfnstsw %1" : "=t"(r), "=m"(status) : "m"(control), "0"(x));
    uint16_t restore = 0x037f;
    __asm__ volatile("fldcw %0" ::"m"(restore));
    unsigned char b[10];
    memcpy(b, &r, 10);
    printf("%s %04x %-12Lg %02x%02x:%02x%02x%02x%02x%02x%02x%02x%02x C1=%d\n", sqrt_not_round ? "fsqrt" : "frndint",
           control, x, b[9], b[8], b[7], b[6], b[5], b[4], b[3], b[2], b[1], b[0], status >> 9 & 1);
}

int main(void) {
    static const long double values[] = {0.5L, 1.5L, 2.5L, -2.5L, -0.5L, 2.0L, 3.0L, 5.0L, 10.0L, 0.1L,
                                         -0.7L, 1e-5L, 1e30L, 123456.789L, -0.0L, 1e-4940L};
    for (int sqrt_not_round = 0; sqrt_not_round < 2; sqrt_not_round++)
        for (unsigned rc = 0; rc < 4; rc++)
            for (unsigned pc = 0; pc < 4; pc += 1)
                for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
                    if (pc != 1) run(values[i], 0x7f | pc << 8 | rc << 10, sqrt_not_round);
    return 0;
}
