/* nondet: a program whose work depends on time, randomness and the pid.
 *
 * Usage: nondet [show]
 * Prints "nondet: clocks ok, random ok, pid ok, slept ok" and exits 0 (a failed
 * check prints which one on stderr and exits 1). With "show" it also prints the
 * mixed value and how many times it called spin().
 *
 * It reads time(), clock_gettime (REALTIME and MONOTONIC), gettimeofday, rdtsc,
 * getrandom() and syscall(SYS_getrandom), getpid(), sleeps 1 ms with nanosleep, and
 * then calls spin() 1000 + (mix % 1000) times, where mix is a hash of all of them.
 * Natively (and under Callgrind) the instruction count therefore changes from run
 * to run; under emuprof, with its virtual clock, seeded getrandom and fixed pid, it
 * must be the same on every run and every host. The checks are ones any sane
 * clock satisfies: time() agrees with CLOCK_REALTIME and gettimeofday to a second,
 * MONOTONIC never goes back, and a 1 ms nanosleep advances MONOTONIC by >= 1 ms.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include "testprog.h"

static int check(int ok, const char *what)
{
    if (!ok)
        fprintf(stderr, "nondet: check failed: %s\n", what);
    return ok;
}

KEEP uint32_t spin(uint32_t acc)
{
    return (acc ^ 0x9e3779b9u) * 16777619u;
}

static long long nanos(const struct timespec *ts)
{
    return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int main(int argc, char **argv)
{
    int show = argc > 1 && strcmp(argv[1], "show") == 0;
    uint32_t mix = 2166136261u;

    struct timespec real, mono_before, mono_after, mono_slept;
    struct timeval tv;
    time_t now = time(NULL);
    clock_gettime(CLOCK_REALTIME, &real);
    gettimeofday(&tv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &mono_before);
    clock_gettime(CLOCK_MONOTONIC, &mono_after);
    uint64_t tsc = __rdtsc();
    int clocks_ok = check(llabs((long long)(real.tv_sec - now)) <= 1, "time() vs CLOCK_REALTIME") &
                    check(llabs((long long)(tv.tv_sec - now)) <= 1, "time() vs gettimeofday") &
                    check(nanos(&mono_after) >= nanos(&mono_before), "CLOCK_MONOTONIC went back");
    mix = fnv1a(mix, &now, sizeof now);
    mix = fnv1a(mix, &real, sizeof real);
    mix = fnv1a(mix, &tv, sizeof tv);
    mix = fnv1a(mix, &mono_after, sizeof mono_after);
    mix = fnv1a(mix, &tsc, sizeof tsc);

    unsigned char random_bytes[16] = { 0 }, syscall_bytes[8] = { 0 };
    int random_ok = check(getrandom(random_bytes, sizeof random_bytes, 0) == sizeof random_bytes,
                          "getrandom() returned a short read") &
                    check(syscall(SYS_getrandom, syscall_bytes, sizeof syscall_bytes, 0) ==
                              (long)sizeof syscall_bytes,
                          "syscall(SYS_getrandom) returned a short read");
    mix = fnv1a(mix, random_bytes, sizeof random_bytes);
    mix = fnv1a(mix, syscall_bytes, sizeof syscall_bytes);

    pid_t pid = getpid();
    int pid_ok = check(pid > 0, "getpid() <= 0");
    mix = fnv1a(mix, &pid, sizeof pid);

    struct timespec one_ms = { 0, 1000000 };
    nanosleep(&one_ms, NULL);
    clock_gettime(CLOCK_MONOTONIC, &mono_slept);
    int slept_ok = check(nanos(&mono_slept) - nanos(&mono_after) >= 1000000,
                         "a 1 ms nanosleep advanced CLOCK_MONOTONIC by less than 1 ms");
    mix = fnv1a(mix, &mono_slept, sizeof mono_slept);

    uint32_t spins = 1000 + mix % 1000, acc = mix;
    for (uint32_t i = 0; i < spins; i++)
        acc = spin(acc);

    if (!(clocks_ok && random_ok && pid_ok && slept_ok))
        return 1;
    printf("nondet: clocks ok, random ok, pid ok, slept ok\n");
    if (show)
        printf("mix %08x, spin() called %u times, result %08x\n", (unsigned)mix,
               (unsigned)spins, (unsigned)acc);
    return 0;
}
