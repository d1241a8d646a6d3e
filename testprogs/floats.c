/* floats: floating point as a program sees it — printf of doubles and long
 * doubles (x87), rounding modes and the floating-point environment, denormals,
 * NaN payloads, libm (sqrt, exp, sin, log, pow) and SSE conversions. Output
 * must not depend on the libc (no %La, whose form differs), nor on which
 * exception flags the arithmetic raised. Every
 * line must be byte-identical natively and under emuprof; the values depend on
 * the initial x87 control word (0x037F, 64-bit precision) and MXCSR (0x1F80).
 *
 * Call counts: `mix` 100 (all variants). */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "testprog.h"

/* volatile keeps -O2 from folding the arithmetic at compile time. */
static volatile double one = 1.0, seven = 7.0, tenth = 0.1, three = 3.0;
static volatile long double lone = 1.0L, lthree = 3.0L;

KEEP static double mix(double acc, int i) {
    return acc * 1.0000001 + sqrt((double)i) / (i + 1.5);
}

static void show_bits(const char *what, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    printf("%s %016llx\n", what, (unsigned long long)bits);
}

int main(void) {
    printf("%.17g %.6f %.15g\n", tenth, one / seven, M_PI);
    printf("%a %a %.20e\n", one / three, tenth, one / seven);

    long double third = lone / lthree;
    printf("long double %.21Lg\n", third);
    printf("ldbl: mant %d max %Lg eps %Lg\n", LDBL_MANT_DIG, LDBL_MAX, LDBL_EPSILON);

    unsigned short cw;
    unsigned int mxcsr;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    /* The control bits only: which exception flags are set is not compared
     * (the emulated SSE unit does not raise them, see the README). */
    printf("x87 cw %#06x mxcsr control %#06x\n", cw, mxcsr & ~0x3fu);

    static const int modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    static const char *const names[] = {"nearest", "upward", "downward", "towardzero"};
    for (int i = 0; i < 4; i++) {
        fesetround(modes[i]);
        volatile double q = one / three;
        volatile long double lq = lone / lthree;
        printf("%-10s %d %.17g %.21Lg %ld\n", names[i], fegetround() == modes[i], q, lq,
               lrint(2.5 * one));
    }
    fesetround(FE_TONEAREST);

    fenv_t env;
    fegetenv(&env);
    fesetround(FE_UPWARD);
    fenv_t changed;
    fegetenv(&changed);
    fesetenv(&env);
    volatile double z = one / (tenth - tenth);
    printf("fenv restored %d inf %g -inf %g\n", fegetround() == FE_TONEAREST, z, -z);

    volatile double tiny = DBL_MIN;
    double denormal = tiny / 1024.0;
    printf("denormal %g %d\n", denormal, fpclassify(denormal) == FP_SUBNORMAL);
    show_bits("denormal", denormal);
    show_bits("min-subnormal", DBL_TRUE_MIN * one);

    double payload = nan("0x1234");
    show_bits("nan(0x1234)", payload);
    show_bits("0/0", (tenth - tenth) / (tenth - tenth));
    show_bits("nan+1", payload + one);

    printf("sqrt %.17g exp %.17g sin %.17g log %.17g pow %.17g\n", sqrt(2.0 * one), exp(one),
           sin(one), log(tenth), pow(tenth, three));
    printf("long sqrtl %.21Lg mul %.21Lg\n", sqrtl(2.0L * lone), lthree * lthree / (lone * 7));

    volatile double big = 3.7e9, neg = -2.5, huge = 1e300;
    volatile float f = 16777217.0f;
    printf("conv %d %d %lld %u %.9g %.17g %d\n", (int)neg, (int)lrint(neg), (long long)big,
           (unsigned)big, (double)(float)(one / three), (double)f, (int)huge);

    double acc = 0;
    for (int i = 0; i < 100; i++)
        acc = mix(acc, i);
    printf("mix %.17g\n", acc);
    return 0;
}
