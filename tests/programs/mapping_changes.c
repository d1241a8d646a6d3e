/* Mapping changes take effect at once: after mprotect, munmap and a
   MAP_FIXED mapping over old pages, every page behaves as its new mapping
   says, though each was just read or written through its old one (also
   when 64 MiB of data made the emulated TLB grow first). Prints
   what each probe found; the output is the same under Linux and emuprof. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf probe_env;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(probe_env, 1);
}

/* "ok <value>" when the byte at p can be read, "fault" when not. */
static void probe_read(const char *what, volatile unsigned char *p) {
    if (sigsetjmp(probe_env, 1) == 0) {
        unsigned char v = *p;
        printf("%s: ok %u\n", what, v);
    } else {
        printf("%s: fault\n", what);
    }
}

/* "ok" when the byte at p can be written, "fault" when not. */
static void probe_write(const char *what, volatile unsigned char *p, unsigned char v) {
    if (sigsetjmp(probe_env, 1) == 0) {
        *p = v;
        printf("%s: ok\n", what);
    } else {
        printf("%s: fault\n", what);
    }
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);

    unsigned char *p = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    for (int i = 0; i < 8; i++) p[i * page] = (unsigned char)(10 + i);

    mprotect(p + 3 * page, page, PROT_NONE);
    probe_read("page 3 after PROT_NONE", p + 3 * page);
    probe_read("page 2 beside it", p + 2 * page);
    probe_read("page 4 beside it", p + 4 * page);
    mprotect(p + 3 * page, page, PROT_READ | PROT_WRITE);
    probe_read("page 3 readable again", p + 3 * page);

    mprotect(p + 5 * page, page, PROT_READ);
    probe_write("page 5 after PROT_READ, write", p + 5 * page, 99);
    probe_read("page 5 after PROT_READ, read", p + 5 * page);

    munmap(p + 6 * page, page);
    probe_read("page 6 after munmap", p + 6 * page);

    mmap(p + 7 * page, page, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    probe_read("page 7 mapped anew", p + 7 * page);

    /* More pages than a flush of a range handles one by one. */
    int many = 200;
    unsigned char *q = mmap(NULL, many * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return 1;
    for (int i = 0; i < many; i++) q[i * page] = (unsigned char)i;
    mprotect(q, many * page, PROT_READ);
    probe_write("200 pages after PROT_READ, first", q, 1);
    probe_write("200 pages after PROT_READ, last", q + (many - 1) * page, 1);
    probe_read("200 pages after PROT_READ, read", q + 100 * page);
    munmap(q, many * page);
    probe_read("200 pages after munmap", q + 150 * page);

    /* Pages used through an emulated TLB that grew: 64 MiB (more pages
       than it holds at first) written and read back three times in a
       scattered order by 8-byte accesses that span two pages, so it is
       refilled over and over. */
    enum { LARGE = 16384, STEP = 7919 };
    unsigned char *d = mmap(NULL, (LARGE + 1) * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED) return 1;
    unsigned long long sum = 0, value;
    for (unsigned pass = 0; pass < 3; pass++) {
        for (unsigned i = 0; i < LARGE; i++) {
            unsigned char *at = d + ((i * STEP + pass) % LARGE) * page + page - 4;
            memcpy(&value, at, sizeof value);
            value = value * 31 + i + pass;
            memcpy(at, &value, sizeof value);
        }
        for (unsigned i = 0; i < LARGE; i++) {
            memcpy(&value, d + ((i * STEP * 3 + pass) % LARGE) * page + page - 4, sizeof value);
            sum = sum * 1099511628211ULL ^ value;
        }
    }
    printf("64 MiB read back: %016llx\n", sum);
    mprotect(d + 100 * page, 10 * page, PROT_READ);
    probe_write("64 MiB, page after PROT_READ, write", d + 101 * page - 4, 1);
    probe_read("64 MiB, page after PROT_READ, read", d + 101 * page - 4);
    probe_write("64 MiB, the page after those, write", d + 110 * page, 1);
    munmap(d + 200 * page, 2 * page);
    probe_read("64 MiB, page after munmap", d + 201 * page - 1);
    mmap(d + 300 * page, 2 * page, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    probe_read("64 MiB, page mapped anew", d + 301 * page - 1);
    return 0;
}
