/* Threads with known structure, for emuprof's thread tests.
 *
 *   threads [workers N [ITERATIONS] | prodcons | barrier | nested | all | cpus]
 *
 * `workers N` starts N threads that each run work(ITERATIONS) (default
 * 100000: six instructions per iteration at -O2) and joins them.
 *
 * Every mode prints only results that do not depend on the interleaving
 * (`cpus` prints the CPU count the program sees, which depends on the
 * machine; it is not part of `all`). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WORKERS 16

/* Known work: a loop of `n` iterations. */
__attribute__((noinline)) unsigned long work(unsigned long n)
{
    unsigned long sum = 0;
    for (unsigned long i = 0; i < n; i++)
        sum += i * i;
    return sum;
}

static void *worker(void *arg)
{
    unsigned long n = (unsigned long)arg;
    return (void *)work(n);
}

static int workers(int count, unsigned long iterations)
{
    pthread_t threads[MAX_WORKERS];
    if (count < 1 || count > MAX_WORKERS)
        return 2;
    unsigned long total = 0;
    for (int i = 0; i < count; i++)
        if (pthread_create(&threads[i], NULL, worker, (void *)iterations) != 0)
            return 1;
    for (int i = 0; i < count; i++) {
        void *result;
        pthread_join(threads[i], &result);
        total += (unsigned long)result;
    }
    printf("workers: %d threads, sum %lu\n", count, total);
    return 0;
}

/* Producer-consumer over a one-slot buffer with a mutex and two condvars. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t filled = PTHREAD_COND_INITIALIZER;
static pthread_cond_t emptied = PTHREAD_COND_INITIALIZER;
static int slot, full;

static void *producer(void *arg)
{
    int items = *(int *)arg;
    for (int i = 1; i <= items; i++) {
        pthread_mutex_lock(&lock);
        while (full)
            pthread_cond_wait(&emptied, &lock);
        slot = i;
        full = 1;
        pthread_cond_signal(&filled);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static int prodcons(void)
{
    int items = 1000;
    long sum = 0;
    pthread_t p;
    pthread_create(&p, NULL, producer, &items);
    for (int i = 0; i < items; i++) {
        pthread_mutex_lock(&lock);
        while (!full)
            pthread_cond_wait(&filled, &lock);
        sum += slot;
        full = 0;
        pthread_cond_signal(&emptied);
        pthread_mutex_unlock(&lock);
    }
    pthread_join(p, NULL);
    printf("prodcons: %d items, sum %ld\n", items, sum);
    return 0;
}

/* Four threads meet at a barrier three times. */
static pthread_barrier_t barrier;
static int rounds_seen[4];

static void *at_barrier(void *arg)
{
    int me = (int)(long)arg;
    for (int round = 0; round < 3; round++) {
        work(1000 * (me + 1));
        rounds_seen[me]++;
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static int barrier_mode(void)
{
    pthread_t t[4];
    pthread_barrier_init(&barrier, NULL, 4);
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, at_barrier, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("barrier: rounds %d %d %d %d\n", rounds_seen[0], rounds_seen[1], rounds_seen[2],
           rounds_seen[3]);
    return 0;
}

/* A thread that starts threads; one of them exits early with pthread_exit. */
static void *leaf(void *arg)
{
    if (arg)
        pthread_exit((void *)7);
    return (void *)work(5000);
}

static void *spawner(void *arg)
{
    (void)arg;
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, leaf, NULL);
    pthread_create(&b, NULL, leaf, (void *)1);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    return (void *)((unsigned long)ra + (unsigned long)rb);
}

static int nested(void)
{
    pthread_t s;
    void *r;
    pthread_create(&s, NULL, spawner, NULL);
    pthread_join(s, &r);
    printf("nested: %lu\n", (unsigned long)r);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    int rc = 0;
    if (!strcmp(mode, "workers") || !strcmp(mode, "all"))
        rc |= workers(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? strtoul(argv[3], NULL, 10) : 100000);
    if (!strcmp(mode, "prodcons") || !strcmp(mode, "all"))
        rc |= prodcons();
    if (!strcmp(mode, "barrier") || !strcmp(mode, "all"))
        rc |= barrier_mode();
    if (!strcmp(mode, "nested") || !strcmp(mode, "all"))
        rc |= nested();
    if (!strcmp(mode, "cpus"))
        printf("cpus: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    return rc;
}
