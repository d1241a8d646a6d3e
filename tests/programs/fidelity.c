/* fidelity: Linux behaviours a program can observe, one per mode (argv[1]);
 * with a second argument, handlers for SIGILL, SIGSEGV and SIGPIPE print a
 * line and exit with 40 + the signal number.
 *
 *   ud2       executes ud2 (SIGILL)
 *   hlt       executes hlt, privileged (SIGSEGV); likewise cli, sti,
 *             movcr (mov %cr0), wrmsr, lgdt, in and out
 *   pipe      writes to a pipe whose reader is closed (SIGPIPE, EPIPE)
 *   ncpu      prints sysconf's CPU counts and the CPUs in /proc/cpuinfo
 *   getpwnam  looks up root (glibc asks nscd over an AF_UNIX socket first)
 *   rdrand    uses RDRAND when CPUID offers it (else getrandom) to decide how
 *             many times to call spin(): the profile shows the value's effect
 */
#include <cpuid.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static void on_signal(int sig) {
    printf("handler ran for signal %d\n", sig);
    fflush(stdout);
    _exit(40 + sig);
}

__attribute__((noipa)) static void spin(void) {}

static uint64_t random_value(void) {
    unsigned a, b, c, d;
    uint64_t v = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_RDRND)) {
        unsigned char ok = 0;
        while (!ok)
            __asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
        return v;
    }
    if (getrandom(&v, sizeof v, 0) != sizeof v)
        return 0;
    return v;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (argc > 2) {
        signal(SIGILL, on_signal);
        signal(SIGSEGV, on_signal);
        signal(SIGPIPE, on_signal);
    }
    if (!strcmp(mode, "ud2"))
        __asm__ volatile("ud2");
    if (!strcmp(mode, "hlt"))
        __asm__ volatile("hlt");
    if (!strcmp(mode, "cli"))
        __asm__ volatile("cli");
    if (!strcmp(mode, "sti"))
        __asm__ volatile("sti");
    if (!strcmp(mode, "movcr")) {
        unsigned long cr0;
        __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    }
    if (!strcmp(mode, "wrmsr"))
        __asm__ volatile("wrmsr" ::"c"(0x10), "a"(0), "d"(0));
    if (!strcmp(mode, "lgdt")) {
        char descriptor[10] = {0};
        __asm__ volatile("lgdt %0" ::"m"(descriptor));
    }
    if (!strcmp(mode, "in")) {
        unsigned char value;
        __asm__ volatile("inb $0x60, %0" : "=a"(value));
    }
    if (!strcmp(mode, "out"))
        __asm__ volatile("outb %0, $0x80" ::"a"((unsigned char)0));
    if (!strcmp(mode, "pipe")) {
        int fds[2];
        if (pipe(fds) != 0)
            return 2;
        close(fds[0]);
        ssize_t n = write(fds[1], "x", 1);
        perror("write");
        printf("write returned %zd\n", n);
        return 3;
    }
    if (!strcmp(mode, "ncpu")) {
        FILE *f = fopen("/proc/cpuinfo", "r");
        char line[256];
        int processors = 0;
        while (f && fgets(line, sizeof line, f))
            processors += !strncmp(line, "processor", 9);
        printf("online %ld configured %ld cpuinfo %d\n", sysconf(_SC_NPROCESSORS_ONLN),
               sysconf(_SC_NPROCESSORS_CONF), processors);
        return 0;
    }
    if (!strcmp(mode, "getpwnam")) {
        struct passwd *pw = getpwnam("root");
        printf("root uid %d\n", pw ? (int)pw->pw_uid : -1);
        return 0;
    }
    if (!strcmp(mode, "rdrand")) {
        uint64_t v = random_value();
        for (uint64_t i = 0; i < 1000 + v % 1000; i++)
            spin();
        printf("done\n");
        return 0;
    }
    return 1;
}
