/* Vectorised loops and glibc string functions as a program built for
 * x86-64-v3 runs them (gcc -O3 -march=x86-64-v3): float FMA, integer
 * multiply-add and max reductions, double sums, strlen/strchr/memchr/
 * memcmp/strstr/memcpy on buffers of many lengths. Prints the results and
 * what the CPU reports (CPUID, xgetbv), so a run under emuprof can be
 * compared byte for byte with a native one. */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 1003
static float a[N], b[N], c[N];
static double d[N];
static int ia[N], ib[N];
static char text[4096], copy[4096];

__attribute__((noinline)) static float fused_sum(void) {
    for (int i = 0; i < N; i++) c[i] = a[i] * b[i] + c[i];
    float s = 0;
    for (int i = 0; i < N; i++) s += c[i];
    return s;
}

__attribute__((noinline)) static long dot(void) {
    long s = 0;
    for (int i = 0; i < N; i++) s += ia[i] * ib[i];
    return s;
}

__attribute__((noinline)) static int maximum(void) {
    int m = 0;
    for (int i = 0; i < N; i++) m = ia[i] > m ? ia[i] : m;
    return m;
}

__attribute__((noinline)) static double squares(void) {
    double s = 0;
    for (int i = 0; i < N; i++) s += d[i] * d[i];
    return s;
}

__attribute__((noinline)) static unsigned long strings(void) {
    unsigned long h = 0;
    for (int len = 0; len < 600; len += 7) {
        memset(text, 'a' + len % 26, len);
        text[len] = 0;
        h = h * 31 + strlen(text);
        h = h * 31 + (strchr(text, 'z') ? 1 : 0);
        h = h * 31 + (memchr(text, 'a' + len % 26, len) != NULL);
        memcpy(copy, text, len + 1);
        h = h * 31 + (unsigned)memcmp(copy, text, len + 1);
        copy[len / 2] = '!';
        h = h * 31 + (memcmp(copy, text, len + 1) != 0);
        h = h * 31 + (strstr(copy, "!") != NULL);
        h = h * 31 + strcmp(copy, text);
    }
    return h;
}

int main(void) {
    for (int i = 0; i < N; i++) {
        a[i] = i * 0.5f;
        b[i] = (N - i) * 0.25f;
        ia[i] = i * 7;
        ib[i] = i ^ 0x55;
        d[i] = i / 3.0;
    }
    unsigned eax, ebx, ecx, edx;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    int avx2 = (ebx >> 5) & 1;
    __cpuid(1, eax, ebx, ecx, edx);
    unsigned xcr0 = 0;
    if (ecx & (1u << 27)) {
        unsigned hi;
        __asm__("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    }
    printf("avx %u fma %u f16c %u avx2 %d xcr0 %u\n", (ecx >> 28) & 1, (ecx >> 12) & 1,
           (ecx >> 29) & 1, avx2, xcr0 & 7);
    printf("%f %ld %d %.12f %lu\n", fused_sum(), dot(), maximum(), squares(), strings());
    return 0;
}
