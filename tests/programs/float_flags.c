/* MXCSR as SSE (or, built with -march=x86-64-v3, VEX) arithmetic leaves
 * it: the exception flags fetestexcept reports after each operation, the
 * rounding mode, flush-to-zero and denormals-are-zero. Prints the same
 * natively and under emuprof. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile double zero = 0.0, one = 1.0, three = 3.0, big = DBL_MAX, tiny = DBL_MIN;
static volatile double minus_one = -1.0, huge = 1e30, denormal = 4.9e-324;
static volatile float onef = 1.0f, threef = 3.0f, tinyf = FLT_MIN;

static void flags(const char *what, double r) {
    int e = fetestexcept(FE_ALL_EXCEPT);
    uint64_t bits;
    memcpy(&bits, &r, 8);
    printf("%-22s %016llx%s%s%s%s%s\n", what, (unsigned long long)bits,
           e & FE_INVALID ? " invalid" : "", e & FE_DIVBYZERO ? " divbyzero" : "",
           e & FE_OVERFLOW ? " overflow" : "", e & FE_UNDERFLOW ? " underflow" : "",
           e & FE_INEXACT ? " inexact" : "");
    feclearexcept(FE_ALL_EXCEPT);
}

static unsigned get_mxcsr(void) {
    unsigned m;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    return m;
}

static void set_mxcsr(unsigned m) {
    __asm__ volatile("ldmxcsr %0" ::"m"(m));
}

int main(void) {
    feclearexcept(FE_ALL_EXCEPT);
    flags("exact", one + one);
    flags("1/0", one / zero);
    flags("0/0", zero / zero);
    flags("max*2", big * 2.0);
    flags("1/3", one / three);
    flags("min/3", tiny / three);
    flags("sqrt(-1)", sqrt(minus_one));
    flags("(int)1e30", (double)(int)huge);
    flags("(long)1e30", (double)(long)huge);
    flags("1/3 float", onef / threef);
    flags("min*min float", tinyf * tinyf);
    for (int mode = 0; mode < 4; mode++) {
        static const int modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
        static const char *names[] = {"nearest", "upward", "downward", "towardzero"};
        char what[32];
        fesetround(modes[mode]);
        snprintf(what, sizeof what, "1/3 %s", names[mode]);
        flags(what, one / three);
        snprintf(what, sizeof what, "-1/3 %s", names[mode]);
        flags(what, minus_one / three);
        snprintf(what, sizeof what, "rint(2.5) %s", names[mode]);
        flags(what, (double)(long)lrint(2.5 * one));
    }
    fesetround(FE_TONEAREST);
    unsigned m = get_mxcsr();
    set_mxcsr(m | 0x8000); /* FTZ */
    flags("min/3 ftz", tiny / three);
    set_mxcsr(m | 0x0040); /* DAZ */
    flags("denormal*1 daz", denormal * one);
    set_mxcsr(m);
    flags("denormal*1", denormal * one);
    /* Without the denormal flag (DE), which emuprof's SSE arithmetic does not raise. */
    printf("mxcsr %04x\n", get_mxcsr() & ~2u);
    return 0;
}
