/* VEX.vvvv of every instruction form of forms.h set to register 5 (field
 * 1010b) instead of what the assembler wrote: a form that has no VEX.vvvv
 * operand raises #UD (SIGILL) when the field is not 1111b; a form that has
 * one reads or writes YMM5 instead. Prints, per form, "ok" or the signal.
 * Run natively and under `emuprof --cpu x86-64-v3`, the outputs must be
 * identical. The gathers, whose VEX.vvvv is the mask, are left out.
 *
 *   gcc -O1 -static -mno-red-zone -o vexvvvv vexvvvv.c
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "forms.h"

/* Each form's bytes, between b_NAME and e_NAME, as data. */
#define BYTES(name, insn, setup)                                                  \
    __asm__(".pushsection .rodata\n.globl b_" #name "\nb_" #name ":\n" insn         \
            "\n.globl e_" #name "\ne_" #name ":\n.popsection\n");
FORMS(BYTES)

#define DECLARE(name, insn, setup) extern const uint8_t b_##name[], e_##name[];
FORMS(DECLARE)

struct form {
    const char *name;
    const uint8_t *start, *end;
    int setup;
};

#define ENTRY(name, insn, setup) {#name, b_##name, e_##name, setup},
static const struct form forms[] = {FORMS(ENTRY)};

/* Where each form runs, followed by `ret`. */
enum { SLOT = 32 };

static sigjmp_buf escape;
static volatile int caught;

static void on_signal(int signal) {
    caught = signal;
    siglongjmp(escape, 1);
}

/* Sets VEX.vvvv (stored inverted) to register 5. */
static void set_vvvv(uint8_t *code) {
    uint8_t *field = code[0] == 0xc5 ? &code[1] : &code[2];
    *field = (*field & ~0x78) | ((~5u & 0xf) << 3);
}

int main(void) {
    size_t n = sizeof forms / sizeof forms[0];
    uint8_t *code = mmap(NULL, n * SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
    if (code == MAP_FAILED) return 1;
    for (size_t f = 0; f < n; f++) {
        size_t size = forms[f].end - forms[f].start;
        if (size + 1 > SLOT || (forms[f].start[0] != 0xc4 && forms[f].start[0] != 0xc5)) {
            printf("%s: not one VEX instruction\n", forms[f].name);
            return 1;
        }
        memcpy(code + f * SLOT, forms[f].start, size);
        set_vvvv(code + f * SLOT);
        code[f * SLOT + size] = 0xc3;
    }
    if (mprotect(code, n * SLOT, PROT_READ | PROT_EXEC) != 0) return 1;
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    action.sa_flags = SA_NODEFER;
    sigaction(SIGILL, &action, NULL);
    sigaction(SIGSEGV, &action, NULL);
    sigaction(SIGBUS, &action, NULL);
    static uint8_t memory[256] __attribute__((aligned(64)));
    for (volatile size_t f = 0; f < n; f++) {
        if (forms[f].setup == 1 || forms[f].setup == 2) continue;
        caught = 0;
        if (sigsetjmp(escape, 1) == 0) {
            uint64_t rax = 4, rdx = 4;
            __asm__ volatile("call *%[run]"
                             : "+a"(rax), "+d"(rdx)
                             : [run] "r"(code + f * SLOT), "D"(memory)
                             : "rcx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0",
                               "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                               "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
        }
        printf("%s %s\n", forms[f].name,
               caught == 0         ? "ok"
               : caught == SIGILL  ? "SIGILL"
               : caught == SIGSEGV ? "SIGSEGV"
                                   : "SIGBUS");
    }
    return 0;
}
