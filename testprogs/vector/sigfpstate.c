/* The floating-point state in a signal frame: the handler finds the
 * interrupted MXCSR, x87 control word, XMM (and with the argument "ymm",
 * YMM) registers in uc_mcontext.fpregs, changes one register there and
 * clobbers others itself; after rt_sigreturn the interrupted code sees the
 * change and nothing else. A second handler sets fpregs to NULL, which
 * resets the state. Prints the same natively and under emuprof.
 * Build: gcc -O2 sigfpstate.c (no -mavx needed: the YMM code is asm). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define MAGIC1 0x46505853u
#define MAGIC2 0x46505845u
#define YMM_HI 576

static int use_ymm;

static int cpu_has_osxsave(void) {
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    return (c >> 27) & 1;
}

static void on_usr1(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)info;
    ucontext_t *uc = ctx;
    unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
    if (!fp) {
        printf("handler: fpregs NULL\n");
        return;
    }
    uint32_t sw[5];
    memcpy(sw, fp + 464, sizeof sw);
    int xsave = sw[0] == MAGIC1;
    printf("handler: xsave frame as cpuid says: %s\n", xsave == cpu_has_osxsave() ? "yes" : "no");
    if (xsave) {
        uint32_t magic2;
        memcpy(&magic2, fp + sw[4], 4);
        uint64_t features;
        memcpy(&features, fp + 472, 8);
        printf("handler: magic2 %s, extended size %s, features x87 sse%s\n",
               magic2 == MAGIC2 ? "ok" : "missing", sw[1] == sw[4] + 4 ? "ok" : "wrong",
               use_ymm ? ((features & 4) ? " ymm" : " no-ymm") : "");
        if ((uintptr_t)fp % 64 != 0) {
            printf("handler: area not 64-byte aligned\n");
        }
    }
    struct _libc_fpstate *f = uc->uc_mcontext.fpregs;
    printf("handler: interrupted mxcsr %04x cw %04x\n", f->mxcsr, f->cwd);
    printf("handler: interrupted xmm8 %08x%08x%08x%08x\n", f->_xmm[8].element[3],
           f->_xmm[8].element[2], f->_xmm[8].element[1], f->_xmm[8].element[0]);
    f->_xmm[8].element[0] = 0x600dcafe;
    if (use_ymm) {
        uint32_t *hi = (uint32_t *)(fp + YMM_HI + 8 * 16);
        printf("handler: interrupted ymm8 upper %08x%08x%08x%08x\n", hi[3], hi[2], hi[1], hi[0]);
        hi[3] = 0xfeedf00d;
    }
    unsigned mxcsr;
    unsigned short cw;
    __asm__ volatile("stmxcsr %0\nfnstcw %1" : "=m"(mxcsr), "=m"(cw));
    printf("handler: own mxcsr %04x cw %04x\n", mxcsr, cw);
    /* Clobber what the interrupted code must get back. */
    unsigned wild_mxcsr = 0x7f80;
    unsigned short wild_cw = 0x0c7f;
    __asm__ volatile("pcmpeqd %%xmm9, %%xmm9\nldmxcsr %0\nfldcw %1" ::"m"(wild_mxcsr), "m"(wild_cw)
                     : "xmm9");
    if (use_ymm) {
        __asm__ volatile("vpcmpeqd %%ymm9, %%ymm9, %%ymm9\nvpcmpeqd %%ymm8, %%ymm8, %%ymm8" ::
                             : "xmm8", "xmm9");
    }
}

static void on_usr2(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)info;
    ((ucontext_t *)ctx)->uc_mcontext.fpregs = NULL;
}

struct state {
    uint32_t mxcsr;
    uint16_t cw;
    uint32_t r8[8], r9[8];
};

/* Sets MXCSR, the x87 control word, xmm8/xmm9 (ymm8/ymm9 with use_ymm),
 * sends itself `sig` with a bare syscall and records what it finds after. */
static void interrupted(int sig, struct state *out) {
    static const uint32_t v8[8] = {0x01234567, 0x89abcdef, 0x02468ace, 0x13579bdf,
                                   0xa0a1a2a3, 0xb0b1b2b3, 0xc0c1c2c3, 0xd0d1d2d3};
    static const uint32_t v9[8] = {0x11111111, 0x22222222, 0x33333333, 0x44444444,
                                   0x55555555, 0x66666666, 0x77777777, 0x88888888};
    uint32_t mxcsr = 0x5f80; /* round up */
    uint16_t cw = 0x027f;    /* 53-bit precision */
    long pid = getpid(), tid = syscall(SYS_gettid);
    if (use_ymm) {
        __asm__ volatile("ldmxcsr %[mx]\nfldcw %[cw]\n"
                         "vmovdqu %[v8], %%ymm8\nvmovdqu %[v9], %%ymm9\n"
                         "mov %[nr], %%eax\nsyscall\n"
                         "stmxcsr %[omx]\nfnstcw %[ocw]\n"
                         "vmovdqu %%ymm8, %[o8]\nvmovdqu %%ymm9, %[o9]\nvzeroupper\n"
                         : [omx] "=m"(out->mxcsr), [ocw] "=m"(out->cw), [o8] "=m"(out->r8),
                           [o9] "=m"(out->r9)
                         : [mx] "m"(mxcsr), [cw] "m"(cw), [v8] "m"(v8), [v9] "m"(v9),
                           [nr] "i"(SYS_tgkill), "D"(pid), "S"(tid), "d"((long)sig)
                         : "rax", "rcx", "r11", "xmm8", "xmm9", "memory");
    } else {
        __asm__ volatile("ldmxcsr %[mx]\nfldcw %[cw]\n"
                         "movdqu %[v8], %%xmm8\nmovdqu %[v9], %%xmm9\n"
                         "mov %[nr], %%eax\nsyscall\n"
                         "stmxcsr %[omx]\nfnstcw %[ocw]\n"
                         "movdqu %%xmm8, %[o8]\nmovdqu %%xmm9, %[o9]\n"
                         : [omx] "=m"(out->mxcsr), [ocw] "=m"(out->cw), [o8] "=m"(out->r8),
                           [o9] "=m"(out->r9)
                         : [mx] "m"(mxcsr), [cw] "m"(cw), [v8] "m"(v8), [v9] "m"(v9),
                           [nr] "i"(SYS_tgkill), "D"(pid), "S"(tid), "d"((long)sig)
                         : "rax", "rcx", "r11", "xmm8", "xmm9", "memory");
    }
    /* Back to the defaults before printing. */
    uint32_t mx_default = 0x1f80;
    uint16_t cw_default = 0x037f;
    __asm__ volatile("ldmxcsr %0\nfldcw %1" ::"m"(mx_default), "m"(cw_default));
}

static void print(const char *what, const struct state *s) {
    int n = use_ymm ? 8 : 4;
    printf("%s: mxcsr %04x cw %04x\n%s: reg8 ", what, s->mxcsr, s->cw, what);
    for (int i = n - 1; i >= 0; i--) printf("%08x", s->r8[i]);
    printf("\n%s: reg9 ", what);
    for (int i = n - 1; i >= 0; i--) printf("%08x", s->r9[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    use_ymm = argc > 1 && strcmp(argv[1], "ymm") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = on_usr1;
    sigaction(SIGUSR1, &sa, 0);
    sa.sa_sigaction = on_usr2;
    sigaction(SIGUSR2, &sa, 0);

    struct state s;
    memset(&s, 0, sizeof s);
    interrupted(SIGUSR1, &s);
    print("after a handler changed xmm8", &s);
    memset(&s, 0, sizeof s);
    interrupted(SIGUSR2, &s);
    print("after fpregs = NULL", &s);
    return 0;
}
