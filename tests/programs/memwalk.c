/* memwalk: memory access patterns whose cache misses are easy to predict,
 * for the cache simulation.
 *
 * Usage: memwalk stride|chase|matrix|threads [n]
 *   stride: n passes over a 2 MiB array, one read-modify-write per 64-byte
 *           line: every access misses a 32 KiB L1, a 2 MiB array fits LL.
 *   chase:  n steps of pointer chasing through a random cycle of 64-byte
 *           nodes over 1 MiB (a random walk through memory).
 *   matrix: n transposes of a 256x256 matrix of doubles (column writes miss).
 *   threads: two threads, one after the other (so no scheduler decides the
 *           order of their accesses), each mallocs 1.5 MiB in its own arena
 *           and makes n passes over it, one read-modify-write per line.
 * Prints a checksum and exits 0; exits 2 on a bad argument.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP __attribute__((noinline, used))

enum { LINE = 64, ARRAY = 2 << 20, NODES = (1 << 20) / LINE, DIM = 256 };

struct node {
    struct node *next;
    char pad[LINE - sizeof(struct node *)];
};

static unsigned char array[ARRAY];
static struct node nodes[NODES];
static double a[DIM][DIM], b[DIM][DIM];

KEEP unsigned long stride(unsigned long passes)
{
    unsigned long sum = 0;
    for (unsigned long p = 0; p < passes; p++) {
        for (unsigned long i = 0; i < ARRAY; i += LINE) {
            array[i] += (unsigned char)p;
            sum += array[i];
        }
    }
    return sum;
}

KEEP unsigned long chase(unsigned long steps)
{
    /* A random cyclic permutation (Sattolo), from a fixed seed. */
    static unsigned order[NODES];
    unsigned long seed = 12345;
    for (unsigned i = 0; i < NODES; i++)
        order[i] = i;
    for (unsigned i = NODES - 1; i > 0; i--) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        unsigned j = (unsigned)((seed >> 33) % i);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < NODES; i++)
        nodes[order[i]].next = &nodes[order[(i + 1) % NODES]];
    struct node *n = &nodes[0];
    unsigned long visited = 0;
    for (unsigned long s = 0; s < steps; s++) {
        n = n->next;
        visited += (unsigned long)(n - nodes);
    }
    return visited;
}

KEEP double matrix(unsigned long times)
{
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            a[i][j] = i * DIM + j;
    for (unsigned long t = 0; t < times; t++)
        for (int i = 0; i < DIM; i++)
            for (int j = 0; j < DIM; j++)
                b[j][i] = a[i][j] + (double)t;
    return b[DIM - 1][0];
}

enum { THREAD_BYTES = 3 << 19 };

KEEP void *thread_walk(void *arg)
{
    unsigned long passes = (unsigned long)arg, sum = 0;
    unsigned char *mine = malloc(THREAD_BYTES);
    if (!mine)
        return NULL;
    memset(mine, 1, THREAD_BYTES);
    for (unsigned long p = 0; p < passes; p++)
        for (unsigned long i = 0; i < THREAD_BYTES; i += LINE) {
            mine[i] += (unsigned char)p;
            sum += mine[i];
        }
    free(mine);
    return (void *)sum;
}

KEEP unsigned long threads(unsigned long passes)
{
    unsigned long total = 0;
    for (int t = 0; t < 2; t++) {
        pthread_t thread;
        void *sum;
        if (pthread_create(&thread, NULL, thread_walk, (void *)passes) != 0)
            return 0;
        pthread_join(thread, &sum);
        total += (unsigned long)sum;
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 4;
    if (strcmp(argv[1], "stride") == 0)
        printf("%lu\n", stride(n));
    else if (strcmp(argv[1], "chase") == 0)
        printf("%lu\n", chase(n));
    else if (strcmp(argv[1], "matrix") == 0)
        printf("%.0f\n", matrix(n));
    else if (strcmp(argv[1], "threads") == 0)
        printf("%lu\n", threads(n));
    else
        return 2;
    return 0;
}
