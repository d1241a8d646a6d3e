/* The vector unit's speed benchmark (docs/vector.md, "Counts and speed"):
 * c[i] = a[i]*b[i] + c[i]*0.5f and a sum over 4,096 floats, 2,000 times.
 * Build it twice and compare emuprof's CPU time per instruction:
 *
 *   gcc -O3 -static -o vecloop-v1 vecloop.c
 *   gcc -O3 -static -march=x86-64-v3 -o vecloop-v3 vecloop.c
 *   emuprof -o /dev/null ./vecloop-v1
 *   emuprof --cpu x86-64-v3 -o /dev/null ./vecloop-v3
 */
#include <stdio.h>

#define N 4096
#define ROUNDS 2000

static float a[N], b[N], c[N];

__attribute__((noinline)) static float step(void) {
    float sum = 0;
    for (int i = 0; i < N; i++) {
        c[i] = a[i] * b[i] + c[i] * 0.5f;
        sum += c[i];
    }
    return sum;
}

int main(void) {
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 17) / 16.0f;
        b[i] = (float)(i % 5) - 2.0f;
        c[i] = 0;
    }
    float total = 0;
    for (int r = 0; r < ROUNDS; r++) total += step();
    printf("%g\n", total);
    return 0;
}
