/* contexts: about 1.1 million distinct calling contexts for the scaling
 * benchmark. Ten functions call all ten again down to depth DEPTH (default 6),
 * so every path is a context of its own: sum of 10^i for i <= 6.
 * Build: gcc -O2 -static -o contexts contexts.c */
#include <stdio.h>
#include <stdlib.h>

typedef long (*fn)(int);
static fn table[10];
#define F(k) __attribute__((noinline)) static long f##k(int d) { \
    long s = k; if (d > 0) for (int j = 0; j < 10; j++) s += table[j](d - 1); return s; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9)

int main(int argc, char **argv)
{
    fn t[10] = {f0, f1, f2, f3, f4, f5, f6, f7, f8, f9};
    for (int i = 0; i < 10; i++) table[i] = t[i];
    int depth = argc > 1 ? atoi(argv[1]) : 6;
    printf("%ld\n", f0(depth));
    return 0;
}
