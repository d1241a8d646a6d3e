/* vecsim: vectorised loops for the cache simulation of VEX code, built
 * for x86-64-v3:
 *
 *   musl-gcc -O3 -g -march=x86-64-v3 -static -o vecsim vecsim.c
 *
 * step:    bench/programs/vecloop.c's loop, c[i] = a[i]*b[i] + c[i]*0.5f
 *          (32-byte loads, a fused multiply-add with a memory operand,
 *          32-byte stores) over three 16 KiB arrays.
 * shifted: integer reads and read-modify-writes one element off their
 *          32-byte alignment, so that every eighth vector access crosses
 *          a cache line and some cross a page.
 *
 * Usage: vecsim [rounds] (default 20). Prints a checksum and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, used))

enum { N = 4096 };

static float a[N], b[N], c[N];
static unsigned e[N + 8] __attribute__((aligned(4096)));

KEEP static float step(void) {
    float sum = 0;
    for (int i = 0; i < N; i++) {
        c[i] = a[i] * b[i] + c[i] * 0.5f;
        sum += c[i];
    }
    return sum;
}

KEEP static unsigned shifted(int k) {
    unsigned sum = 0;
    for (int i = 0; i < N; i++) {
        sum += e[i + k];
    }
    for (int i = 0; i < N; i++) {
        e[i + k] = e[i + k] * 3 + 1;
    }
    return sum;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 17) / 16.0f;
        b[i] = (float)(i % 5) - 2.0f;
        c[i] = 0;
        e[i] = (unsigned)i;
    }
    float total = 0;
    unsigned check = 0;
    for (int r = 0; r < rounds; r++) {
        total += step();
        check += shifted(1);
    }
    printf("%g %u\n", total, check);
    return 0;
}
