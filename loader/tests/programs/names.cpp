// Test program for the loader's C++ demangling test (loader/tests/).
// Built at test time with g++ -static.
#include <cstdio>

namespace demo {
struct Widget {
    int value;
    __attribute__((noinline)) int spin(int turns);
};

__attribute__((noinline)) int Widget::spin(int turns) {
    return value * turns + 1;
}

template <typename T>
__attribute__((noinline)) T twice(T x) {
    return x + x;
}
}  // namespace demo

int main(int argc, char **) {
    demo::Widget widget{argc};
    std::printf("%d %ld\n", widget.spin(3), demo::twice<long>(argc));
    return 0;
}
