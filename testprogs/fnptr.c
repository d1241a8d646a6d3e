/* fnptr: indirect calls through a table of function pointers.
 *
 * Usage: fnptr
 * Prints "dispatch: 1000 steps, acc = …" and "apply_twice: …", exits 0.
 *
 * Expected call counts (every optimisation level; the table pointer goes through
 * OPAQUE so gcc cannot devirtualise the calls):
 *   run_table: 1 call; it makes 1000 indirect calls, ops[i % 4](acc):
 *     op_add3, op_mul2, op_xor5, op_rot1: 250 calls each, all from run_table
 *   apply_twice(f, x) calls f twice through a pointer; main calls it 3 times with
 *     op_add3, op_mul2 and op_xor5, adding 2 calls to each of them:
 *     op_add3, op_mul2, op_xor5: 252 calls in all; op_rot1: 250.
 */
#include <stdio.h>
#include <stdint.h>
#include "testprog.h"

typedef uint32_t (*op_fn)(uint32_t);

KEEP uint32_t op_add3(uint32_t x) { return x + 3; }
KEEP uint32_t op_mul2(uint32_t x) { return x * 2 + 1; }
KEEP uint32_t op_xor5(uint32_t x) { return x ^ 0x55555555u; }
KEEP uint32_t op_rot1(uint32_t x) { return (x << 1) | (x >> 31); }

static op_fn const ops[4] = { op_add3, op_mul2, op_xor5, op_rot1 };

KEEP uint32_t run_table(uint32_t acc, int steps)
{
    op_fn const *table = ops;
    OPAQUE(table);
    for (int i = 0; i < steps; i++)
        acc = table[i % 4](acc);
    return acc;
}

KEEP uint32_t apply_twice(op_fn f, uint32_t x)
{
    uint32_t r = f(f(x));
    OPAQUE(r);
    return r;
}

int main(void)
{
    uint32_t acc = run_table(1, 1000);
    printf("dispatch: 1000 steps, acc = %u\n", (unsigned)acc);
    uint32_t a = apply_twice(op_add3, 10);
    uint32_t b = apply_twice(op_mul2, 10);
    uint32_t c = apply_twice(op_xor5, 10);
    printf("apply_twice: %u %u %u\n", (unsigned)a, (unsigned)b, (unsigned)c);
    return 0;
}
