// random_device: C++ std::random_device (libstdc++ picks RDRAND when CPUID
// offers it, else getrandom or /dev/urandom) decides how often spin() runs.
#include <cstdio>
#include <random>

__attribute__((noipa)) static void spin() {}

int main() {
    std::random_device device;
    unsigned n = 1000 + device() % 1000;
    for (unsigned i = 0; i < n; i++)
        spin();
    std::puts("done");
    return 0;
}
