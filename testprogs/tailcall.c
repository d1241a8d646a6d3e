/* tailcall: calls that gcc -O2 turns into jumps (sibling calls).
 *
 * Usage: tailcall
 * Prints "chain: …" and "is_even(1000) = 1", exits 0.
 *
 * Source-level call counts (the same at every level):
 *   chain_start: 100 calls from main; each calls chain_middle, which calls
 *   chain_finish: 100 calls each.
 *   is_even(1000) from main: is_even and is_odd call each other down to 0:
 *   is_even 501 calls (1 from main, 500 from is_odd), is_odd 500 calls.
 * At -O0 every one of these is a `call`. At -O2 the calls chain_start → chain_middle,
 * chain_middle → chain_finish, is_even → is_odd and is_odd → is_even are `jmp`
 * instructions to the first instruction of the callee (check with objdump -d), and
 * the is_even/is_odd ping-pong runs in one stack frame. A profiler that treats a
 * jump to a function's entry as a tail call reports the same callee counts at -O2
 * as at -O0, each tail callee appearing under the caller of the function that
 * jumped to it.
 */
#include <stdio.h>
#include "testprog.h"

KEEP long chain_finish(long x) { return x * 7 + 1; }

KEEP long chain_middle(long x)
{
    x ^= 0x55;
    return chain_finish(x);
}

KEEP long chain_start(long x)
{
    x += 3;
    return chain_middle(x);
}

KEEP int is_odd(unsigned n);

KEEP int is_even(unsigned n)
{
    if (n == 0)
        return 1;
    return is_odd(n - 1);
}

KEEP int is_odd(unsigned n)
{
    if (n == 0)
        return 0;
    return is_even(n - 1);
}

int main(void)
{
    long sum = 0;
    for (long i = 0; i < 100; i++)
        sum += chain_start(i);
    printf("chain: %ld\n", sum);
    printf("is_even(1000) = %d\n", is_even(1000));
    return 0;
}
