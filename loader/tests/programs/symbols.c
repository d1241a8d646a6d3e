/* Test program for the loader's symbol and DWARF tests (loader/tests/).
 * Built at test time: gcc -static, gcc -static-pie, musl-gcc -static, each with -g.
 * The tests look up the line of `int main(` in this file, so keep it on one line. */
#include <stdio.h>

static volatile int sink;

static inline __attribute__((always_inline)) int twice(int x) {
    sink = x; /* a store that stays inside the inlined body */
    return x * 2;
}

__attribute__((noinline)) int use_twice(int x) {
    return twice(x) + 7;
}

__attribute__((noinline)) int answer(int x) {
    return use_twice(x) * 3;
}

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", answer(argc));
    return 0;
}
