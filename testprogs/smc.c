/* smc: self-modifying code, rewritten in place at the same address and size.
 *
 * Usage: smc
 * Prints one line per phase and "total = …", exits 0.
 *
 * `smc_kernel` (written in assembly below, alone on its own page of the
 * program's text) is 16 bytes: 8 bytes of padding, `lea imm32(%rdi), %eax`,
 * `ret`, and a trailing `int3` that never runs. The program rewrites the padding
 * and the immediate between calls, always at the same address and with the
 * same size, so a profiler that decodes a block once and keeps it would count
 * every later version with the first one's instructions:
 *   version 0: one 8-byte nop             -> 3 instructions per call
 *   version 1: eight 1-byte nops          -> 10 instructions per call
 *   version 2: two 4-byte nops            -> 4 instructions per call
 * The immediate is 100 + version, so the sums show which version ran.
 *
 * Phases (each calls run_version once per round, ROUNDS rounds, versions 0, 1,
 * 2, 0, 1, 2, ...; run_version calls smc_kernel CALLS times):
 *   in_place:   the page is read-write-execute; plain stores rewrite the code
 *               between calls, no system call in between.
 *   w_xor_x:    before each rewrite the page becomes read-write (not
 *               executable), after it read-execute again, as JIT compilers do.
 *   from_read:  the page is read-write-execute; the new code arrives through
 *               read(2) from a pipe (the kernel writes it, not the program).
 *
 * Expected call counts (every optimisation level): run_version 3 * ROUNDS = 36,
 * smc_kernel 36 * CALLS = 3600; smc_kernel's self cost
 * 3 * (ROUNDS / 3) * CALLS * (3 + 10 + 4) = 20400 instructions.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "testprog.h"

#define ROUNDS 12
#define CALLS 100
#define KERNEL_SIZE 16
#define PAGE 4096

__asm__(".pushsection .text.smc_kernel, \"ax\", @progbits\n"
        ".p2align 12\n"
        ".globl smc_kernel\n"
        ".type smc_kernel, @function\n"
        "smc_kernel:\n"
        ".byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n" /* nopl 0(%rax,%rax) */
        "lea 100(%rdi), %eax\n"                                  /* 8d 87 imm32 */
        "ret\n"
        "int3\n"
        ".size smc_kernel, .-smc_kernel\n"
        ".p2align 12\n"
        ".popsection\n");

int smc_kernel(int x);

/* The bytes of version `v` of smc_kernel. */
static void kernel_version(unsigned char *code, int v)
{
    static const unsigned char pads[3][8] = {
        { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
        { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 },
        { 0x0f, 0x1f, 0x40, 0x00, 0x0f, 0x1f, 0x40, 0x00 },
    };
    uint32_t imm = 100 + (uint32_t)v;
    memcpy(code, pads[v], 8);
    code[8] = 0x8d;
    code[9] = 0x87;
    memcpy(code + 10, &imm, 4);
    code[14] = 0xc3;
    code[15] = 0xcc;
}

KEEP long run_version(int calls)
{
    long sum = 0;
    for (int i = 0; i < calls; i++)
        sum += smc_kernel(i);
    return sum;
}

static unsigned char *kernel_page(void)
{
    return (unsigned char *)((uintptr_t)smc_kernel & ~(uintptr_t)(PAGE - 1));
}

static int protect(int prot)
{
    if (mprotect(kernel_page(), PAGE, prot) != 0) {
        perror("mprotect");
        return -1;
    }
    return 0;
}

KEEP long phase_in_place(void)
{
    long sum = 0;
    if (protect(PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return -1;
    for (int r = 0; r < ROUNDS; r++) {
        kernel_version((unsigned char *)smc_kernel, r % 3);
        sum += run_version(CALLS);
    }
    return sum;
}

KEEP long phase_w_xor_x(void)
{
    long sum = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (protect(PROT_READ | PROT_WRITE) != 0)
            return -1;
        kernel_version((unsigned char *)smc_kernel, r % 3);
        if (protect(PROT_READ | PROT_EXEC) != 0)
            return -1;
        sum += run_version(CALLS);
    }
    return sum;
}

KEEP long phase_from_read(void)
{
    long sum = 0;
    int fds[2];
    if (pipe(fds) != 0 || protect(PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return -1;
    for (int r = 0; r < ROUNDS; r++) {
        unsigned char code[KERNEL_SIZE];
        kernel_version(code, r % 3);
        if (write(fds[1], code, sizeof code) != (ssize_t)sizeof code ||
            read(fds[0], (unsigned char *)smc_kernel, sizeof code) != (ssize_t)sizeof code)
            return -1;
        sum += run_version(CALLS);
    }
    close(fds[0]);
    close(fds[1]);
    return sum;
}

int main(void)
{
    long a = phase_in_place();
    printf("in_place: %ld\n", a);
    long b = phase_w_xor_x();
    printf("w_xor_x: %ld\n", b);
    long c = phase_from_read();
    printf("from_read: %ld\n", c);
    protect(PROT_READ | PROT_EXEC);
    printf("total = %ld\n", a + b + c);
    return a < 0 || b < 0 || c < 0;
}
