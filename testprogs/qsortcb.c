/* qsortcb: libc qsort with a comparison callback.
 *
 * Usage: qsortcb [count]   (default count = 20000)
 * Prints "sorted 20000 ints: ok, checksum …" and exits 0.
 *
 * compare_ints is called only through the function pointer given to qsort, so in
 * the call tree it sits under libc's sort routines (glibc: msort_with_tmp …; musl:
 * smoothsort helpers). How many times it is called depends on the libc's algorithm,
 * so the program does not print that number; a profile must agree with Callgrind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "testprog.h"

KEEP int compare_ints(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    uint32_t *values = malloc(sizeof *values * (size_t)count);
    if (values == NULL) {
        fprintf(stderr, "qsortcb: out of memory\n");
        return 1;
    }
    uint32_t state = 12345;
    for (long i = 0; i < count; i++)
        values[i] = lcg_next(&state) >> 8;
    qsort(values, (size_t)count, sizeof *values, compare_ints);
    int ok = 1;
    uint32_t checksum = 2166136261u;
    for (long i = 0; i < count; i++) {
        if (i > 0 && values[i - 1] > values[i])
            ok = 0;
        checksum = fnv1a(checksum, &values[i], sizeof values[i]);
    }
    printf("sorted %ld ints: %s, checksum %08x\n", count, ok ? "ok" : "NOT SORTED",
           (unsigned)checksum);
    free(values);
    return ok ? 0 : 1;
}
