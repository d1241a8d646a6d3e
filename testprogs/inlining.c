/* inlining: what the optimiser inlines, for build-to-build comparisons.
 *
 * Usage: inlining
 * Prints "inlining: checksum …" and exits 0, identical at every level.
 * Built at -O0, -O1, -O2, -O3 and -O2 -fno-inline (see the Makefile).
 *
 *   square_plus (static, tiny, called from two places): a real function with
 *     2000 calls at -O0 and with -O2 -fno-inline; at -O1, -O2 and -O3 gcc inlines it
 *     into both callers and no square_plus symbol is left in the binary.
 *   clamp_byte (static, small, called from one place in a loop): likewise
 *     1000 calls at -O0 / -fno-inline, gone at -O1, -O2 and -O3.
 *   mix_step (KEEP): never inlined, 1000 calls at every level: a fixed point to
 *     compare the other functions against.
 *   -O1: gcc 12 already inlines square_plus and clamp_byte (early inlining of
 *     tiny bodies); other gcc versions may differ, so tests only rely on O0, O2,
 *     O3 and O2-noinline.
 */
#include <stdio.h>
#include <stdint.h>
#include "testprog.h"

static uint32_t square_plus(uint32_t x)
{
    return x * x + 1;
}

static uint32_t clamp_byte(uint32_t x)
{
    uint32_t v = x % 300;
    return v > 255 ? 255 : v;
}

KEEP uint32_t mix_step(uint32_t acc, uint32_t value)
{
    return (acc ^ value) * 16777619u;
}

KEEP uint32_t sum_squares(int n)
{
    uint32_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += square_plus((uint32_t)i);
    return sum;
}

KEEP uint32_t hash_clamped(int n)
{
    uint32_t acc = 2166136261u;
    for (int i = 0; i < n; i++)
        acc = mix_step(acc, clamp_byte(square_plus((uint32_t)i * 7u)));
    return acc;
}

int main(void)
{
    uint32_t a = sum_squares(1000);
    uint32_t b = hash_clamped(1000);
    printf("inlining: checksum %08x %08x\n", (unsigned)a, (unsigned)b);
    return 0;
}
