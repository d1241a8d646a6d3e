/* Two threads take two mutexes in opposite order and meet in a barrier in
 * between, so they always deadlock: emuprof must say so and stop. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;

static void *other(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&a);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_barrier_init(&both_hold_one, NULL, 2);
    pthread_create(&t, NULL, other, NULL);
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&b);
    pthread_join(t, NULL);
    puts("unreachable");
    return 0;
}
