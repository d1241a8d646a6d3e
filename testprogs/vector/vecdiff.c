/* Differential test of emuprof's vector unit: runs every instruction form
 * of forms.h on random registers, flags and memory and prints, per form,
 * a hash of the state after each case (or, with a form's name as the
 * argument, the whole state of every case). Run natively and under
 * `emuprof --cpu x86-64-v3`, the outputs must be identical.
 *
 *   gcc -O1 -static -mno-red-zone -o vecdiff vecdiff.c
 *   ./vecdiff [CASES [FORM]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forms.h"

/* What a form sees and leaves: YMM0-15, rax rcx rdx rsi, RFLAGS, MXCSR
 * (random rounding, DAZ and FTZ, no exception flags before), memory. */
struct state {
    uint8_t ymm[16][32];
    uint64_t gpr[4];
    uint64_t flags;
    uint32_t mxcsr, pad32;
    uint64_t pad[2];
    uint8_t mem[256];
} __attribute__((aligned(64)));

struct state state;

#define STATE_ASM(name, insn, setup)                                           \
    __asm__(".text\n.globl f_" #name "\n.type f_" #name ",@function\nf_" #name \
            ":\n"                                                              \
            "push %r15\n"                                                      \
            "lea state(%rip), %r15\n" LOAD insn "\n" SAVE "pop %r15\nret\n");
#define LOAD                                                                   \
    "vmovdqu 0(%r15), %ymm0\nvmovdqu 32(%r15), %ymm1\n"                        \
    "vmovdqu 64(%r15), %ymm2\nvmovdqu 96(%r15), %ymm3\n"                       \
    "vmovdqu 128(%r15), %ymm4\nvmovdqu 160(%r15), %ymm5\n"                     \
    "vmovdqu 192(%r15), %ymm6\nvmovdqu 224(%r15), %ymm7\n"                     \
    "vmovdqu 256(%r15), %ymm8\nvmovdqu 288(%r15), %ymm9\n"                     \
    "vmovdqu 320(%r15), %ymm10\nvmovdqu 352(%r15), %ymm11\n"                   \
    "vmovdqu 384(%r15), %ymm12\nvmovdqu 416(%r15), %ymm13\n"                   \
    "vmovdqu 448(%r15), %ymm14\nvmovdqu 480(%r15), %ymm15\n"                   \
    "mov 512(%r15), %rax\nmov 520(%r15), %rcx\nmov 528(%r15), %rdx\n"          \
    "mov 536(%r15), %rsi\nlea 576(%r15), %rdi\n"                               \
    "ldmxcsr 552(%r15)\npushq 544(%r15)\npopfq\n"
#define SAVE                                                                   \
    "pushfq\npopq 544(%r15)\nstmxcsr 552(%r15)\n"                             \
    "mov %rax, 512(%r15)\nmov %rcx, 520(%r15)\nmov %rdx, 528(%r15)\n"          \
    "mov %rsi, 536(%r15)\n"                                                    \
    "vmovdqu %ymm0, 0(%r15)\nvmovdqu %ymm1, 32(%r15)\n"                        \
    "vmovdqu %ymm2, 64(%r15)\nvmovdqu %ymm3, 96(%r15)\n"                       \
    "vmovdqu %ymm4, 128(%r15)\nvmovdqu %ymm5, 160(%r15)\n"                     \
    "vmovdqu %ymm6, 192(%r15)\nvmovdqu %ymm7, 224(%r15)\n"                     \
    "vmovdqu %ymm8, 256(%r15)\nvmovdqu %ymm9, 288(%r15)\n"                     \
    "vmovdqu %ymm10, 320(%r15)\nvmovdqu %ymm11, 352(%r15)\n"                   \
    "vmovdqu %ymm12, 384(%r15)\nvmovdqu %ymm13, 416(%r15)\n"                   \
    "vmovdqu %ymm14, 448(%r15)\nvmovdqu %ymm15, 480(%r15)\n"                   \
    "vzeroupper\n"

FORMS(STATE_ASM)

#define DECLARE(name, insn, setup) void f_##name(void);
FORMS(DECLARE)

struct form {
    const char *name;
    void (*run)(void);
    int setup;
};

#define ENTRY(name, insn, setup) {#name, f_##name, setup},
static const struct form forms[] = {FORMS(ENTRY)};

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint32_t nice_f32(void) {
    static const uint32_t special[] = {0, 0x80000000, 0x3f800000, 0x7f800000, 0xff800000,
                                       0x7fc00000, 0x7fa00001, 0xffc12345, 0x00000001,
                                       0x807fffff, 0x7f7fffff, 0x00800000, 0x4b000001};
    uint64_t r = next();
    if (r % 3 == 0) return special[(r >> 8) % (sizeof special / sizeof special[0])];
    float f = (float)((int64_t)(r >> 20) % 2001 - 1000) / 8.0f;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return bits;
}

static uint64_t nice_f64(void) {
    static const uint64_t special[] = {0, 0x8000000000000000u, 0x3ff0000000000000u,
                                       0x7ff0000000000000u, 0xfff0000000000000u,
                                       0x7ff8000000000000u, 0x7ff4000000000001u,
                                       0x0000000000000001u, 0x7fefffffffffffffu,
                                       0x41e0000000000000u, 0xc1e0000000200000u};
    uint64_t r = next();
    if (r % 3 == 0) return special[(r >> 8) % (sizeof special / sizeof special[0])];
    double d = (double)((int64_t)(r >> 20) % 20001 - 10000) / 16.0;
    uint64_t bits;
    memcpy(&bits, &d, 8);
    return bits;
}

/* One random quadword: raw bits, floats of either size, or a small
 * integer (shift counts, indices). */
static uint64_t random_qword(void) {
    switch (next() % 5) {
    case 0:
    case 1: return next();
    case 2: return nice_f32() | (uint64_t)nice_f32() << 32;
    case 3: return nice_f64();
    default: return (next() % 72) | (uint64_t)(next() % 72) << 32;
    }
}

/* Strings for the SSE4.2 comparisons: bytes from a small alphabet (both
 * signs) so elements match, zero bytes and zero words so implicit lengths
 * vary, and explicit lengths of either sign around the element count. */
static void randomize_strings(void) {
    static const uint8_t alphabet[] = {'a', 'b', 'c', 0xe1, 0x7f, 0x80};
    uint8_t *strings[] = {state.ymm[1], state.ymm[3], state.mem};
    size_t sizes[] = {32, 32, sizeof state.mem};
    for (int s = 0; s < 3; s++) {
        for (size_t i = 0; i < sizes[s]; i += 2) {
            uint64_t r = next();
            for (int k = 0; k < 2; k++, r >>= 8)
                strings[s][i + k] = r % 16 == 0 ? 0 : alphabet[(r >> 4) % sizeof alphabet];
            if (r % 24 == 0) strings[s][i] = strings[s][i + 1] = 0;
        }
    }
    for (int g = 0; g < 3; g += 2)
        state.gpr[g] = next() % 8 == 0 ? next() : (uint64_t)((int64_t)(next() % 41) - 20);
}

static void randomize(int setup) {
    uint64_t *words = (uint64_t *)&state;
    for (size_t i = 0; i < sizeof state / 8; i++) words[i] = random_qword();
    /* CF PF AF ZF SF OF random, IF and bit 1 set, DF clear. */
    state.flags = 0x202 | (next() & 0x8d5);
    /* Exceptions masked; any rounding; DAZ and FTZ each in a quarter. */
    uint64_t m = next();
    state.mxcsr = 0x1f80 | (m & 0x6000) | ((m >> 16) % 4 == 0 ? 0x40 : 0) |
                  ((m >> 24) % 4 == 0 ? 0x8000 : 0);
    state.pad32 = 0;
    if (setup == 3) {
        randomize_strings();
    } else if (setup) {
        for (int i = 0; i < 8; i++) {
            if (setup == 1)
                ((uint32_t *)state.ymm[3])[i] = next() % 16;
            else if (i < 4)
                ((uint64_t *)state.ymm[3])[i] = next() % 16;
        }
    }
}

static uint64_t hash_state(void) {
    const uint64_t *words = (const uint64_t *)&state;
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < sizeof state / 8; i++) {
        h = (h ^ words[i]) * 0x100000001b3u;
        h ^= h >> 29;
    }
    return h;
}

static void dump_state(int c) {
    printf("case %d:", c);
    for (int r = 0; r < 16; r++) {
        printf(" ymm%d=", r);
        for (int b = 31; b >= 0; b--) printf("%02x", state.ymm[r][b]);
    }
    printf(" rax=%lx rcx=%lx rdx=%lx rsi=%lx flags=%lx mxcsr=%x mem=", state.gpr[0],
           state.gpr[1], state.gpr[2], state.gpr[3], state.flags, state.mxcsr);
    for (int b = 0; b < 256; b++) printf("%02x", state.mem[b]);
    printf("\n");
}

int main(int argc, char **argv) {
    int cases = argc > 1 ? atoi(argv[1]) : 1000;
    const char *only = argc > 2 ? argv[2] : NULL;
    size_t n = sizeof forms / sizeof forms[0];
    for (size_t f = 0; f < n; f++) {
        if (only && strcmp(only, forms[f].name) != 0) continue;
        rng = 0x9e3779b97f4a7c15u ^ (f * 0x100000001b3u);
        uint64_t h = 0;
        for (int c = 0; c < cases; c++) {
            randomize(forms[f].setup);
            if (only) dump_state(c);
            forms[f].run();
            if (only) dump_state(c);
            h = h * 31 + hash_state();
        }
        printf("%s %016lx\n", forms[f].name, h);
    }
    printf("%zu forms, %d cases each\n", n, cases);
    return 0;
}
