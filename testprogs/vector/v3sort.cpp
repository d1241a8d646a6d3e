// C++ built for x86-64-v3: std::sort, <cmath> (glibc's FMA variants of
// exp, log, sin, pow) and loops GCC vectorises with AVX2 and FMA. The
// kernels are extern "C" and noinline so their names and self counts can
// be compared with Callgrind's.
//   g++ -O2 -march=x86-64-v3 -static -g -o v3sort v3sort.cpp
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

static std::vector<double> values(size_t n) {
    std::vector<double> v(n);
    uint64_t x = 88172645463325252u;
    for (auto &d : v) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d = static_cast<double>(x % 1000000) / 1000.0;
    }
    return v;
}

extern "C" __attribute__((noinline)) void sort_values(double *v, size_t n) {
    std::sort(v, v + n);
}

extern "C" __attribute__((noinline)) double transcendental_sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += std::exp(-v[i] / 100.0) + std::log1p(v[i]) + std::sin(v[i]) +
                                        std::pow(v[i] + 1.0, 0.25);
    return s;
}

extern "C" __attribute__((noinline)) void axpy(double *y, const double *x, double a, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = a * x[i] + y[i] * 0.5;
}

extern "C" __attribute__((noinline)) float dot_float(const float *a, const float *b, size_t n) {
    float s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

int main() {
    const size_t n = 20000;
    std::vector<double> v = values(n);
    std::vector<double> y(n, 1.0);
    sort_values(v.data(), n);
    std::printf("sorted %d first %.3f last %.3f median %.3f\n", std::is_sorted(v.begin(), v.end()),
                v.front(), v.back(), v[n / 2]);
    std::printf("transcendental %.10g\n", transcendental_sum(v.data(), n));
    for (int r = 0; r < 20; r++) axpy(y.data(), v.data(), 0.001 * r, n);
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = static_cast<float>(y[i] / 1000.0);
        b[i] = static_cast<float>(std::sqrt(v[i]));
    }
    std::printf("axpy %.6f dot %.3f\n", y[n - 1], static_cast<double>(dot_float(a.data(), b.data(), n)));
    return 0;
}
