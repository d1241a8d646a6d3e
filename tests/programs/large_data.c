/* Data larger than the emulated TLB: 64 MiB written and read back in a
   scattered order, each access 8 bytes spanning two pages, three times
   over (far more pages than the TLB holds at first, so it is refilled
   over and over and grows). Then mapping changes take effect on pages
   just used through it: a page made read-only faults on a write, an
   unmapped page faults on a read, a page mapped anew over old data reads
   zeros. Prints a checksum and what each probe found; the output is the
   same under Linux and emuprof. */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { PAGE = 4096, PAGES = 16384, PASSES = 3, STEP = 7919 };

static sigjmp_buf probe_env;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(probe_env, 1);
}

/* The 8 bytes at the end of page `page` and the start of the next. */
static unsigned char *spanning(unsigned char *data, unsigned page) {
    return data + (size_t)page * PAGE + PAGE - 4;
}

static uint64_t read_spanning(unsigned char *data, unsigned page) {
    uint64_t value;
    memcpy(&value, (void *)spanning(data, page), sizeof value);
    return value;
}

static void probe_read(const char *what, volatile unsigned char *p) {
    if (sigsetjmp(probe_env, 1) == 0) {
        unsigned char value = *p;
        printf("%s: ok %u\n", what, value);
    } else {
        printf("%s: fault\n", what);
    }
}

static void probe_write(const char *what, volatile unsigned char *p) {
    if (sigsetjmp(probe_env, 1) == 0) {
        *p = 1;
        printf("%s: ok\n", what);
    } else {
        printf("%s: fault\n", what);
    }
}

int main(void) {
    signal(SIGSEGV, on_segv);
    unsigned char *data = mmap(NULL, (size_t)(PAGES + 1) * PAGE, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    uint64_t checksum = 0;
    for (unsigned pass = 0; pass < PASSES; pass++) {
        for (unsigned i = 0; i < PAGES; i++) {
            unsigned page = (unsigned)(((uint64_t)i * STEP + pass) % PAGES);
            uint64_t value = read_spanning(data, page) * 31 + page + pass;
            memcpy((void *)spanning(data, page), &value, sizeof value);
        }
        for (unsigned i = 0; i < PAGES; i++) {
            unsigned page = (unsigned)(((uint64_t)i * STEP * 3 + pass) % PAGES);
            checksum = checksum * 1099511628211ULL ^ read_spanning(data, page);
        }
    }
    printf("checksum %016llx\n", (unsigned long long)checksum);

    unsigned char *read_only = data + (size_t)100 * PAGE;
    unsigned char *unmapped = data + (size_t)200 * PAGE;
    unsigned char *remapped = data + (size_t)300 * PAGE;
    mprotect(read_only, 10 * PAGE, PROT_READ);
    munmap(unmapped, 2 * PAGE);
    mmap(remapped, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
         0);
    probe_read("read-only page, read", read_only + PAGE - 4);
    probe_write("read-only page, write", read_only + PAGE - 1);
    probe_write("page after the read-only ones, write", read_only + 10 * PAGE);
    probe_read("unmapped page, read", unmapped + PAGE - 1);
    probe_read("page mapped anew, read", remapped + PAGE - 1);
    probe_read("page before it, read", remapped - 1);
    return 0;
}
