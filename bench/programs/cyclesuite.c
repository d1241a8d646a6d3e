/* cyclesuite: small kernels of different cost per instruction, for
 * bench/cycles_validation.py.
 *
 * Usage: cyclesuite KERNEL [scale]   (scale multiplies the work, default 1)
 * Kernels: div, add, chase, chase-big, branchy, sorted, qsort, matmul, fdiv,
 *          crc, strings, hash, sieve.
 * Prints a checksum and exits 0; exits 2 on an unknown kernel.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Dependent 64-bit divisions. */
static uint64_t k_div(long n)
{
    uint64_t x = ~0ULL, d = 7;
    for (long i = 0; i < n * 2000000; i++) {
        OPAQUE(d);
        x = x / d + 0x7fffffffffffffffULL;
    }
    return x;
}

/* Dependent additions. */
static uint64_t k_add(long n)
{
    uint64_t x = 0, y = 3;
    for (long i = 0; i < n * 4000000; i++) {
        OPAQUE(y);
        x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x); x += y; OPAQUE(x);
    }
    return x;
}

/* Pointer chasing through a random cycle of `size` slots. */
static uint64_t chase(long n, size_t size)
{
    size_t *next_slot = malloc(size * sizeof *next_slot);
    size_t *order = malloc(size * sizeof *order);
    for (size_t i = 0; i < size; i++)
        order[i] = i;
    for (size_t i = size - 1; i > 0; i--) {
        size_t j = next() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < size; i++)
        next_slot[order[i]] = order[(i + 1) % size];
    size_t p = 0;
    /* Out of the caches every hop waits for memory: fewer hops. */
    long hops = size > 65536 ? n * 300000 : n * 4000000;
    for (long i = 0; i < hops; i++)
        p = next_slot[p];
    free(order);
    free(next_slot);
    return p;
}

/* Branches on random bits (half mispredicted) or on sorted data. */
static uint64_t branches(long n, int sorted)
{
    enum { N = 1 << 16 };
    static int data[N];
    for (int i = 0; i < N; i++)
        data[i] = sorted ? i * 256 / N : (int)(next() % 256);
    uint64_t sum = 0;
    for (long r = 0; r < n * 40; r++)
        for (int i = 0; i < N; i++) {
            int v = data[i];
            OPAQUE(v);
            if (v >= 128)
                sum += v;
            else
                sum ^= v;
        }
    return sum;
}

static int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t k_qsort(long n)
{
    size_t count = 200000 * n;
    uint64_t *v = malloc(count * sizeof *v);
    for (size_t i = 0; i < count; i++)
        v[i] = next();
    qsort(v, count, sizeof *v, compare);
    uint64_t x = v[count / 2];
    free(v);
    return x;
}

static uint64_t k_matmul(long n)
{
    enum { M = 96 };
    static double a[M][M], b[M][M], c[M][M];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            a[i][j] = (double)(next() % 1000) / 7;
            b[i][j] = (double)(next() % 1000) / 3;
        }
    for (long r = 0; r < n * 12; r++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < M; j++) {
                double s = 0;
                for (int k = 0; k < M; k++)
                    s += a[i][k] * b[k][j];
                c[i][j] = s;
            }
    return (uint64_t)c[M / 2][M / 3];
}

static uint64_t k_fdiv(long n)
{
    double x = 1e300, d = 1.0000001;
    for (long i = 0; i < n * 3000000; i++) {
        OPAQUE(d);
        x = x / d + 1.0;
    }
    return (uint64_t)x;
}

static uint64_t k_crc(long n)
{
    static unsigned char buf[1 << 16];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)next();
    uint32_t crc = ~0u;
    for (long r = 0; r < n * 30; r++)
        for (size_t i = 0; i < sizeof buf; i++) {
            crc ^= buf[i];
            for (int b = 0; b < 8; b++)
                crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    return ~crc;
}

static uint64_t k_strings(long n)
{
    static char a[4096], b[4096];
    for (size_t i = 0; i + 1 < sizeof a; i++)
        a[i] = (char)('a' + next() % 26);
    uint64_t sum = 0;
    for (long r = 0; r < n * 60000; r++) {
        memcpy(b, a, sizeof a);
        b[r % 4000] = 'A';
        sum += strlen(b) + (uint64_t)memcmp(a, b, sizeof a);
    }
    return sum;
}

static uint64_t k_hash(long n)
{
    enum { SLOTS = 1 << 14 };
    static uint64_t keys[SLOTS];
    uint64_t found = 0;
    for (long r = 0; r < n * 3000000; r++) {
        uint64_t k = next() % 8000; /* at most half the slots fill */
        uint64_t h = (k * 0x9e3779b97f4a7c15ULL) >> 50;
        while (keys[h] && keys[h] != k + 1)
            h = (h + 1) & (SLOTS - 1);
        if (keys[h])
            found++;
        else if (r % 2)
            keys[h] = k + 1;
    }
    return found;
}

static uint64_t k_sieve(long n)
{
    size_t size = 2000000;
    uint64_t count = 0;
    char *composite = malloc(size);
    for (long r = 0; r < n * 4; r++) {
        memset(composite, 0, size);
        for (size_t i = 2; i * i < size; i++)
            if (!composite[i])
                for (size_t j = i * i; j < size; j += i)
                    composite[j] = 1;
        for (size_t i = 2; i < size; i++)
            count += !composite[i];
    }
    free(composite);
    return count;
}

int main(int argc, char **argv)
{
    const char *kernel = argc > 1 ? argv[1] : "";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 1;
    uint64_t r;
    if (!strcmp(kernel, "div")) r = k_div(n);
    else if (!strcmp(kernel, "add")) r = k_add(n);
    else if (!strcmp(kernel, "chase")) r = chase(n, 2048);
    else if (!strcmp(kernel, "chase-big")) r = chase(n, 1 << 20);
    else if (!strcmp(kernel, "branchy")) r = branches(n, 0);
    else if (!strcmp(kernel, "sorted")) r = branches(n, 1);
    else if (!strcmp(kernel, "qsort")) r = k_qsort(n);
    else if (!strcmp(kernel, "matmul")) r = k_matmul(n);
    else if (!strcmp(kernel, "fdiv")) r = k_fdiv(n);
    else if (!strcmp(kernel, "crc")) r = k_crc(n);
    else if (!strcmp(kernel, "strings")) r = k_strings(n);
    else if (!strcmp(kernel, "hash")) r = k_hash(n);
    else if (!strcmp(kernel, "sieve")) r = k_sieve(n);
    else {
        fprintf(stderr, "cyclesuite: unknown kernel %s\n", kernel);
        return 2;
    }
    printf("%s %llu\n", kernel, (unsigned long long)r);
    return 0;
}
