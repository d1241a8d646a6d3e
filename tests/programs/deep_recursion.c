/* A recursion DEPTH calls deep (define it when compiling), on a thread
 * whose stack holds it: the same instructions per level at any depth, so
 * totals at two small depths give the exact total at a large one. */
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) static long down(long n) {
    if (n == 0)
        return 0;
    return down(n - 1) + 1;
}

static void *recurse(void *arg) {
    (void)arg;
    return (void *)down(DEPTH);
}

int main(void) {
    pthread_attr_t attr;
    pthread_t thread;
    void *result;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 30);
    if (pthread_create(&thread, &attr, recurse, 0) || pthread_join(thread, &result))
        return 1;
    return (long)result == DEPTH ? 0 : 2;
}
