/* Shared helpers for the emuprof test programs.
 *
 * Everything here is tiny on purpose: the programs must keep a call structure that
 * a reader can count by hand, at -O0 and at -O2.
 */
#ifndef EMUPROF_TESTPROG_H
#define EMUPROF_TESTPROG_H

#include <stdint.h>

/* Keep a function out of line and un-cloned at every optimisation level (no
 * inlining, no .constprop/.isra/.part clones, no identical-code folding), so each
 * call in the source is a call in the binary. Sibling calls (call → jmp) are still
 * allowed: tailcall.c relies on that. */
#define KEEP __attribute__((noipa))

/* Make gcc forget what it knows about `x`. Placing it between a recursive call and
 * the `return` keeps gcc -O2 from turning `return f(n-1) + f(n-2)` into a loop
 * (tail recursion with an accumulator), so call counts stay as written. */
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

/* Numerical Recipes LCG: deterministic pseudo-random numbers, same on every libc. */
static inline uint32_t lcg_next(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

/* FNV-1a over a byte buffer, continuing from `hash` (start with 2166136261u). */
static inline uint32_t fnv1a(uint32_t hash, const void *data, unsigned long len)
{
    const unsigned char *bytes = data;
    for (unsigned long i = 0; i < len; i++) {
        hash ^= bytes[i];
        hash *= 16777619u;
    }
    return hash;
}

#endif
