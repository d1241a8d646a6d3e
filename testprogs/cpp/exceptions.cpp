// exceptions: C++ exceptions thrown and caught through several frames.
//
// Build: g++ -static -O2 -g -o exceptions exceptions.cpp   (also fine at -O0)
// Usage: exceptions            prints a fixed text and exits 0.
//        exceptions uncaught   prints the same, then lets a ParseError escape
//                              main: std::terminate prints a message and
//                              calls abort (SIGABRT).
//
// Call structure (every function below is noipa, so each call in the source
// is a call in the binary):
//   main calls run_batch once per round (ROUNDS = 4).
//   run_batch calls catch_parse once per item (ITEMS = 30): 120 calls.
//   catch_parse calls descend(item, DEPTH = 3); descend recurses down to depth
//   0 and calls parse_item there: descend runs 120 * 4 = 480 times, parse_item
//   120 times. parse_item throws ParseError for every item divisible by 3
//   (10 per round: 40 throws), so 40 exceptions unwind through 4 descend
//   frames; each descend above depth 0 runs a Guard destructor
//   (guard_released) whether it returns or unwinds: 360 calls.
//   rethrow_outer calls rethrow_inner once per round with index round + 1 into
//   a 3-element vector; in rounds 2 and 3 std::vector::at throws
//   std::out_of_range, rethrow_inner catches it and rethrows it with `throw;`,
//   and rethrow_outer catches it: 2 more exceptions, 2 rethrows.
//   So __cxa_throw runs 42 times and __cxa_rethrow twice.

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#define KEEP __attribute__((noipa))

namespace {

const int ROUNDS = 4;
const int ITEMS = 30;
const int DEPTH = 3;

int guards_released = 0;

class ParseError : public std::runtime_error {
public:
    ParseError(const std::string &what, int item) : std::runtime_error(what), item_(item) {}
    int item() const { return item_; }

private:
    int item_;
};

KEEP void guard_released(int depth) { guards_released += depth + 1; }

// Runs its destructor during unwinding: the call tree must see it as a call
// from descend even though descend never returns normally.
struct Guard {
    int depth;
    ~Guard() { guard_released(depth); }
};

}  // namespace

KEEP int parse_item(int item) {
    if (item % 3 == 0) {
        throw ParseError("item " + std::to_string(item) + " is divisible by 3", item);
    }
    return item * 7 % 11;
}

KEEP int descend(int item, int depth) {
    if (depth == 0) {
        return parse_item(item);
    }
    Guard guard{depth};
    return descend(item, depth - 1) + 1;
}

KEEP int catch_parse(int item, std::string &log) {
    try {
        return descend(item, DEPTH);
    } catch (const ParseError &error) {
        if (error.item() < 7) {
            log += error.what();
            log += '\n';
        }
        return -error.item();
    }
}

KEEP long run_batch(int round, std::string &log) {
    long sum = 0;
    for (int item = 0; item < ITEMS; item++) {
        sum += catch_parse(item + round, log);
    }
    return sum;
}

KEEP int rethrow_inner(const std::vector<int> &values, size_t index) {
    try {
        return values.at(index);
    } catch (const std::out_of_range &) {
        throw;
    }
}

KEEP int rethrow_outer(size_t index) {
    std::vector<int> values{10, 20, 30};
    try {
        return rethrow_inner(values, index);
    } catch (const std::exception &) {
        return -1;
    }
}

int main(int argc, char **argv) {
    std::string log;
    for (int round = 0; round < ROUNDS; round++) {
        long sum = run_batch(round, log);
        int fetched = rethrow_outer(static_cast<size_t>(round) + 1);
        std::printf("round %d: sum %ld, fetched %d\n", round, sum, fetched);
    }
    std::printf("%s", log.c_str());
    std::printf("guards released: %d\n", guards_released);
    if (argc > 1 && std::strcmp(argv[1], "uncaught") == 0) {
        std::fflush(stdout);
        return parse_item(ITEMS);
    }
    return 0;
}
