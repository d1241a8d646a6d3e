/* The C library's long double functions on a table of arguments: each
 * result as printf("%.21Lg") and as its 80-bit pattern, and the
 * exception flags the call raised (fetestexcept). Built static with glibc
 * and musl and dynamic with glibc; the output must be the same natively
 * and under emuprof. glibc's and musl's x86-64 long double functions run
 * the x87's F2XM1, FYL2X, FYL2XP1, FPATAN, FSCALE, FRNDINT, FPREM and
 * FPREM1. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const long double args[] = {
    0.0L, -0.0L, 1e-4940L, -3.6e-4951L, LDBL_MIN, 1e-30L, -1e-10L,
    0.25L, 0.5L, -0.5L, 0.75L, 1.0L, -1.0L, 1.0000000001L, 2.0L, 2.5L, 3.0L,
    10.0L, -10.0L, 0.6931471805599453094L,
    1.5707963267948966192L, 3.1415926535897932385L, -3.1415926535897932385L,
    4.7123889803846898577L, 6.2831853071795864769L, 100.0L, 1e4L,
    11356.0L, 11357.0L, -11355.0L, -11400.0L, -11500.0L, -12000.0L,
    16383.5L, 1e10L, 1e19L, 1e300L, LDBL_MAX, -LDBL_MAX,
    INFINITY, -INFINITY, NAN,
};

static const long double pairs[][2] = {
    {2.0L, 0.5L}, {10.0L, -3.0L}, {-8.0L, 3.0L}, {0.5L, 20000.0L},
    {2.0L, 16384.0L}, {2.0L, -16446.0L}, {2.0L, -16440.5L},
    {1.0000001L, 1e10L}, {2.7182818284590452354L, 1.0L}, {3.0L, 0.3L},
    {INFINITY, -1.0L}, {NAN, 0.0L}, {-2.0L, 3.0L}, {-2.0L, 0.5L},
    {0.0L, -1.0L}, {10.0L, 3.0L}, {1e4000L, 3.0L}, {-7.5L, 2.0L},
    {5.5L, INFINITY}, {INFINITY, 2.0L}, {1.0L, 0.0L},
    {LDBL_MAX, LDBL_MIN}, {1e-4940L, 3e-4945L},
    {3.1415926535897932385L * 1e21L, 1.5707963267948966192L},
    {123456789.125L, 0.001L}, {-1e-300L, 7.0L},
};

static void show(const char *name, long double x, long double y, long double r)
{
    unsigned char bytes[10];
    int flags = fetestexcept(FE_ALL_EXCEPT);

    memcpy(bytes, &r, 10);
    printf("%-10s %-24.17Lg %-24.17Lg %.21Lg %02x%02x:", name, x, y, r, bytes[9], bytes[8]);
    for (int i = 7; i >= 0; i--) {
        printf("%02x", bytes[i]);
    }
    printf(" %s%s%s%s%s\n", flags & FE_INVALID ? "I" : "-", flags & FE_DIVBYZERO ? "Z" : "-",
           flags & FE_OVERFLOW ? "O" : "-", flags & FE_UNDERFLOW ? "U" : "-",
           flags & FE_INEXACT ? "P" : "-");
}

typedef long double (*unary)(long double);
typedef long double (*binary)(long double, long double);

int main(void)
{
    static const struct {
        const char *name;
        unary f;
    } unaries[] = {
        {"expl", expl},   {"exp2l", exp2l},   {"expm1l", expm1l}, {"logl", logl},
        {"log2l", log2l}, {"log10l", log10l}, {"log1pl", log1pl}, {"sinl", sinl},
        {"cosl", cosl},   {"tanl", tanl},     {"atanl", atanl},   {"sqrtl", sqrtl},
        {"rintl", rintl},
    };
    static const struct {
        const char *name;
        binary f;
    } binaries[] = {
        {"powl", powl}, {"fmodl", fmodl}, {"remainderl", remainderl}, {"atan2l", atan2l},
    };
    static const int modes[] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
    static const char *mode_names[] = {"nearest", "down", "up", "toward zero"};

    for (unsigned m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        fesetround(modes[m]);
        printf("rounding %s\n", mode_names[m]);
        for (unsigned f = 0; f < sizeof unaries / sizeof unaries[0]; f++) {
            for (unsigned a = 0; a < sizeof args / sizeof args[0]; a++) {
                volatile long double x = args[a];
                feclearexcept(FE_ALL_EXCEPT);
                long double r = unaries[f].f(x);
                show(unaries[f].name, x, 0.0L, r);
            }
        }
        for (unsigned f = 0; f < sizeof binaries / sizeof binaries[0]; f++) {
            for (unsigned p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
                volatile long double x = pairs[p][0], y = pairs[p][1];
                feclearexcept(FE_ALL_EXCEPT);
                long double r = binaries[f].f(x, y);
                show(binaries[f].name, x, y, r);
            }
        }
    }
    return 0;
}
