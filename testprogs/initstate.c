/* Dumps the machine state the kernel hands a new program at its ELF entry
 * point: general registers, flags, segment selectors and the x87/SSE state.
 * The entry point is `state_entry` (linked with -Wl,-e,state_entry): it saves
 * everything, then jumps to the C library's own `_start` with the registers
 * the C library needs (rsp, rdx) untouched. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

struct entry_state {
    uint64_t gpr[16];          /* rax rbx rcx rdx rsi rdi rbp rsp r8..r15 */
    uint64_t rflags;
    uint16_t seg[6];           /* cs ss ds es fs gs */
    uint8_t fxsave[512] __attribute__((aligned(16)));
};

struct entry_state entry_state __attribute__((aligned(16)));

__asm__(
    ".text\n"
    ".globl state_entry\n"
    ".type state_entry, @function\n"
    "state_entry:\n"
    "    mov %rax, entry_state+0(%rip)\n"
    "    mov %rbx, entry_state+8(%rip)\n"
    "    mov %rcx, entry_state+16(%rip)\n"
    "    mov %rdx, entry_state+24(%rip)\n"
    "    mov %rsi, entry_state+32(%rip)\n"
    "    mov %rdi, entry_state+40(%rip)\n"
    "    mov %rbp, entry_state+48(%rip)\n"
    "    mov %rsp, entry_state+56(%rip)\n"
    "    mov %r8, entry_state+64(%rip)\n"
    "    mov %r9, entry_state+72(%rip)\n"
    "    mov %r10, entry_state+80(%rip)\n"
    "    mov %r11, entry_state+88(%rip)\n"
    "    mov %r12, entry_state+96(%rip)\n"
    "    mov %r13, entry_state+104(%rip)\n"
    "    mov %r14, entry_state+112(%rip)\n"
    "    mov %r15, entry_state+120(%rip)\n"
    "    pushfq\n"
    "    popq entry_state+128(%rip)\n"
    "    mov %cs, entry_state+136(%rip)\n"
    "    mov %ss, entry_state+138(%rip)\n"
    "    mov %ds, entry_state+140(%rip)\n"
    "    mov %es, entry_state+142(%rip)\n"
    "    mov %fs, entry_state+144(%rip)\n"
    "    mov %gs, entry_state+146(%rip)\n"
    "    fxsave entry_state+160(%rip)\n"
    "    mov entry_state+0(%rip), %rax\n"
    "    jmp _start\n");

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

int main(void) {
    static const char *names[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    const struct entry_state *s = &entry_state;
    for (int i = 0; i < 16; i++) {
        if (i == 7) /* the stack address itself differs between runs (ASLR) */
            printf("rsp %% 16 = %llu\n", (unsigned long long)(s->gpr[i] % 16));
        else
            printf("%s = %#llx\n", names[i], (unsigned long long)s->gpr[i]);
    }
    printf("rflags = %#llx\n", (unsigned long long)s->rflags);
    static const char *segs[6] = {"cs", "ss", "ds", "es", "fs", "gs"};
    for (int i = 0; i < 6; i++)
        printf("%s = %#x\n", segs[i], s->seg[i]);
    const uint8_t *fx = s->fxsave;
    uint16_t fcw, fsw;
    uint32_t mxcsr;
    memcpy(&fcw, fx + 0, 2);
    memcpy(&fsw, fx + 2, 2);
    memcpy(&mxcsr, fx + 24, 4);
    printf("x87 control word = %#x\n", fcw);
    printf("x87 status word = %#x\n", fsw);
    printf("x87 tag word (abridged) = %#x\n", fx[4]);
    printf("x87 last opcode = %#x\n", fx[6] | fx[7] << 8);
    printf("mxcsr = %#x\n", mxcsr);
    printf("x87 registers all zero: %s\n", all_zero(fx + 32, 128) ? "yes" : "no");
    printf("xmm registers all zero: %s\n", all_zero(fx + 160, 256) ? "yes" : "no");
    return 0;
}
