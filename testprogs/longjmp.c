/* longjmp: setjmp/longjmp out of several frames, then exit() from deep inside.
 *
 * Usage: longjmp
 * Prints "jumps 5, level2 returns 5, level1 returns 5, work 5" and
 * "exiting with status 3 from level 3", then exits with status 3 on purpose
 * (exit() is called three frames below main, so those frames never return).
 *
 * Expected call counts (every optimisation level):
 *   level1, level2, level3: 10 calls each (i = 0 … 9, one chain per i).
 *   For even i level3 calls longjmp back to main, skipping the rest of level3,
 *   level2 and level1 (3 frames unwound at once): 5 times.
 *   For odd i level3 calls work() and the chain returns normally: work 5 calls.
 *   exit_level1 → exit_level2 → exit_level3 → exit(3): 1 call each.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include "testprog.h"

static jmp_buf resume;
static volatile int jumps, level2_returns, level1_returns, work_calls;

KEEP long work(long i)
{
    work_calls++;
    return i * i;
}

KEEP long level3(long i)
{
    if (i % 2 == 0)
        longjmp(resume, (int)i + 1);
    long r = work(i);
    OPAQUE(r);
    return r;
}

KEEP long level2(long i)
{
    long r = level3(i);
    level2_returns++;
    return r;
}

KEEP long level1(long i)
{
    long r = level2(i);
    level1_returns++;
    return r;
}

KEEP void exit_level3(void)
{
    printf("exiting with status 3 from level 3\n");
    exit(3);
}

KEEP void exit_level2(void)
{
    exit_level3();
    printf("not reached\n");
}

KEEP void exit_level1(void)
{
    exit_level2();
    printf("not reached\n");
}

int main(void)
{
    for (volatile long i = 0; i < 10; i++) {
        if (setjmp(resume) == 0)
            level1(i);
        else
            jumps++;
    }
    printf("jumps %d, level2 returns %d, level1 returns %d, work %d\n",
           jumps, level2_returns, level1_returns, work_calls);
    exit_level1();
    return 0;
}
