/* initstate: the machine state a new process starts with, as x86-64 Linux's
 * execve leaves it. The entry point (linked with -e initstate_entry) records
 * every general register, RFLAGS, the segment selectors, the x87 environment
 * and MXCSR before the libc runs, then jumps to the libc's _start; main
 * prints them. The stack pointer varies natively (ASLR): only its alignment
 * is printed.
 *
 * Call counts: `show` 1 (all variants). */
#include <stdint.h>
#include <stdio.h>

#include "testprog.h"

/* rax rbx rcx rdx rsi rdi rbp rsp r8..r15, rflags */
uint64_t initstate_regs[17];
/* cs ss ds es fs gs */
uint16_t initstate_selectors[6];
/* fnstenv: control, status, tag words (each in a 32-bit slot) and more */
uint32_t initstate_x87[7];
uint32_t initstate_mxcsr;

__asm__(".text\n"
        ".globl initstate_entry\n"
        ".type initstate_entry, @function\n"
        "initstate_entry:\n"
        "  movq %rax, initstate_regs+0(%rip)\n"
        "  movq %rbx, initstate_regs+8(%rip)\n"
        "  movq %rcx, initstate_regs+16(%rip)\n"
        "  movq %rdx, initstate_regs+24(%rip)\n"
        "  movq %rsi, initstate_regs+32(%rip)\n"
        "  movq %rdi, initstate_regs+40(%rip)\n"
        "  movq %rbp, initstate_regs+48(%rip)\n"
        "  movq %rsp, initstate_regs+56(%rip)\n"
        "  movq %r8, initstate_regs+64(%rip)\n"
        "  movq %r9, initstate_regs+72(%rip)\n"
        "  movq %r10, initstate_regs+80(%rip)\n"
        "  movq %r11, initstate_regs+88(%rip)\n"
        "  movq %r12, initstate_regs+96(%rip)\n"
        "  movq %r13, initstate_regs+104(%rip)\n"
        "  movq %r14, initstate_regs+112(%rip)\n"
        "  movq %r15, initstate_regs+120(%rip)\n"
        "  pushfq\n"
        "  popq initstate_regs+128(%rip)\n"
        "  movw %cs, initstate_selectors+0(%rip)\n"
        "  movw %ss, initstate_selectors+2(%rip)\n"
        "  movw %ds, initstate_selectors+4(%rip)\n"
        "  movw %es, initstate_selectors+6(%rip)\n"
        "  movw %fs, initstate_selectors+8(%rip)\n"
        "  movw %gs, initstate_selectors+10(%rip)\n"
        "  fnstenv initstate_x87(%rip)\n"
        "  fldenv initstate_x87(%rip)\n"
        "  stmxcsr initstate_mxcsr(%rip)\n"
        "  jmp _start\n");

static const char *const names[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                                    "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                    "r12", "r13", "r14", "r15", "rflags"};
static const char *const selector_names[] = {"cs", "ss", "ds", "es", "fs", "gs"};

KEEP static void show(void) {
    for (int i = 0; i < 17; i++) {
        if (i == 7)
            printf("rsp %% 16 = %llu\n", (unsigned long long)(initstate_regs[i] % 16));
        else
            printf("%s %#llx\n", names[i], (unsigned long long)initstate_regs[i]);
    }
    for (int i = 0; i < 6; i++)
        printf("%s %#x\n", selector_names[i], initstate_selectors[i]);
    printf("x87 control %#x status %#x tag %#x\n", initstate_x87[0] & 0xffff,
           initstate_x87[1] & 0xffff, initstate_x87[2] & 0xffff);
    printf("mxcsr %#x\n", initstate_mxcsr);
}

int main(void) {
    show();
    return 0;
}
