/* A hostile guest for tests/hostile/hostile_guests.rs: it tries every way out of
 * emuprof's --root and --read-only it knows, through raw system calls (no
 * libc path handling in between).
 *
 *   hostile_guest ATTACK OUTSIDE
 *
 * OUTSIDE is the host directory next to the root that holds `secret`
 * (content "HOST-SECRET") and `dir/`. Every file the guest manages to read
 * is printed as "read <what>: <bytes>", so the test finds any leaked secret
 * in stdout; what the guest manages to change is checked on the host.
 * ATTACK is one of: dotdot, symlinks, dirfd, proc, readonly, stdin, swap,
 * race. `stdin` uses fd 0 (a directory the test redirected) as a dirfd and
 * as the working directory.
 * The last two run together in two emuprof processes sharing one root:
 * `swap` flips names between a file and a symlink to the host until `race`,
 * which hammers those names with every path call for argv[3] rounds,
 * creates `/stop`.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif

static const char *outside;
static char buf[4096];

/* "OUTSIDE/rest" (the host path, which means nothing inside the root). */
static const char *host(const char *rest) {
    static char paths[8][4096];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 4096, "%s/%s", outside, rest);
    return p;
}

/* "../" repeated 40 times followed by the host path: climbs past any root. */
static const char *climb(const char *rest) {
    static char p[8192];
    p[0] = 0;
    for (int i = 0; i < 40; i++)
        strcat(p, "../");
    strcat(p, host(rest));
    return p;
}

static void show(const char *what, int fd) {
    if (fd < 0)
        return;
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        printf("read %s: %s\n", what, buf);
    }
    syscall(SYS_close, fd);
}

static void try_open_at(int dirfd, const char *path, const char *what) {
    show(what, (int)syscall(SYS_openat, dirfd, path, O_RDONLY));
}

static void try_open(const char *path, const char *what) {
    try_open_at(AT_FDCWD, path, what);
}

/* Every call that changes a name or its inode, on `path`. */
static void change_all(const char *path, const char *tag) {
    char other[4200];
    syscall(SYS_chmod, path, 0777);
    syscall(SYS_fchmodat, AT_FDCWD, path, 0777, 0);
    syscall(SYS_chown, path, 4321, 4321);
    syscall(SYS_lchown, path, 4321, 4321);
    syscall(SYS_fchownat, AT_FDCWD, path, 4321, 4321, 0);
    syscall(SYS_truncate, path, 1);
    struct timespec times[2] = {{1, 0}, {1, 0}};
    syscall(SYS_utimensat, AT_FDCWD, path, times, 0);
    struct timeval tv[2] = {{2, 0}, {2, 0}};
    syscall(SYS_utimes, path, tv);
    int fd = (int)syscall(SYS_open, path, O_WRONLY | O_APPEND);
    if (fd >= 0) {
        syscall(SYS_write, fd, "OVERWRITTEN", 11);
        syscall(SYS_close, fd);
    }
    fd = (int)syscall(SYS_open, path, O_RDWR);
    if (fd >= 0) {
        syscall(SYS_ftruncate, fd, 0);
        syscall(SYS_fchmod, fd, 0777);
        syscall(SYS_close, fd);
    }
    snprintf(other, sizeof other, "/stolen-%s", tag);
    syscall(SYS_link, path, other);
    syscall(SYS_linkat, AT_FDCWD, path, AT_FDCWD, other, AT_SYMLINK_FOLLOW);
    show("a hard link made to it", (int)syscall(SYS_open, other, O_RDONLY));
    syscall(SYS_unlink, other);
    syscall(SYS_access, path, W_OK);
    syscall(SYS_setxattr, path, "user.x", "1", 1, 0);
    try_open(path, tag);
}

/* Every call that makes or removes a name inside the directory `dir`. */
static void populate(const char *dir) {
    char p[4200];
    snprintf(p, sizeof p, "%s/made-dir", dir);
    syscall(SYS_mkdir, p, 0777);
    snprintf(p, sizeof p, "%s/made-file", dir);
    int fd = (int)syscall(SYS_open, p, O_WRONLY | O_CREAT, 0666);
    if (fd >= 0)
        syscall(SYS_close, fd);
    snprintf(p, sizeof p, "%s/made-fifo", dir);
    syscall(SYS_mknod, p, 0010666, 0);
    snprintf(p, sizeof p, "%s/made-link", dir);
    syscall(SYS_symlink, "x", p);
    snprintf(p, sizeof p, "%s/made-hardlink", dir);
    syscall(SYS_link, "/data", p);
    snprintf(p, sizeof p, "%s/moved-in", dir);
    syscall(SYS_rename, "/data2", p);
    snprintf(p, sizeof p, "%s/secret", dir);
    syscall(SYS_rename, p, "/stolen-by-rename");
    try_open("/stolen-by-rename", "a file renamed into the root");
    syscall(SYS_unlink, p);
    snprintf(p, sizeof p, "%s/dir", dir);
    syscall(SYS_rmdir, p);
}

static void dotdot(void) {
    try_open(climb("secret"), "../ from the working directory");
    char abs[8300];
    snprintf(abs, sizeof abs, "/%s", climb("secret"));
    try_open(abs, "/../ from the root");
    try_open(host("secret"), "the host path");
    change_all(climb("secret"), "dotdot");
    populate(climb("dir"));
    syscall(SYS_chdir, "/sub");
    for (int i = 0; i < 64; i++)
        syscall(SYS_chdir, "..");
    if (syscall(SYS_getcwd, buf, sizeof buf) > 0)
        printf("cwd after 64 chdir(\"..\"): %s\n", buf);
    try_open(host("secret") + 1, "relative host path from the top");
}

static void symlinks(void) {
    syscall(SYS_symlink, host("secret"), "/abs");
    syscall(SYS_symlink, climb("secret"), "/rel");
    syscall(SYS_symlink, "/", "/top");
    syscall(SYS_symlink, host("dir"), "/absdir");
    syscall(SYS_symlink, climb("dir"), "/reldir");
    syscall(SYS_symlink, "../../../../../../../../..", "/sub/up");
    try_open("/abs", "an absolute symlink");
    try_open("/rel", "a relative symlink");
    try_open("/sub/up/secret", "a symlink to ../../..");
    char p[8400];
    snprintf(p, sizeof p, "/top/..%s", host("secret"));
    try_open(p, "a symlink to / then ..");
    change_all("/abs", "abs");
    change_all("/rel", "rel");
    populate("/absdir");
    populate("/reldir");
    /* A symlink to itself and a chain: ELOOP, never a hang. */
    syscall(SYS_symlink, "/loop", "/loop");
    try_open("/loop/x", "a symlink loop");
    /* Following a symlink in a rename/link target or an exec. */
    char *argv[] = {"abs", NULL};
    syscall(SYS_execve, "/abs", argv, NULL);
}

static void dirfd_tricks(void) {
    int root = (int)syscall(SYS_open, "/", O_RDONLY | O_DIRECTORY);
    int sub = (int)syscall(SYS_open, "/sub", O_PATH | O_DIRECTORY);
    try_open_at(root, climb("secret"), "openat(/, ../..)");
    try_open_at(sub, climb("secret"), "openat(O_PATH /sub, ../..)");
    try_open_at(root, host("secret"), "openat(/, host path)");
    int up = (int)syscall(SYS_openat, sub, "../../../../../../..", O_RDONLY | O_DIRECTORY);
    if (up >= 0) {
        long n = syscall(SYS_getdents64, up, buf, sizeof buf);
        for (long at = 0; at < n;) {
            unsigned short reclen = *(unsigned short *)(buf + at + 16);
            printf("listed above the root: %s\n", buf + at + 19);
            at += reclen;
        }
        syscall(SYS_fchdir, up);
        try_open(host("secret") + 1, "relative host path after fchdir");
    }
    syscall(SYS_fchdir, sub);
    try_open(climb("secret"), "../ after fchdir");
    /* A dirfd to a directory that is then moved somewhere else. */
    syscall(SYS_mkdir, "/mv", 0755);
    int mv = (int)syscall(SYS_open, "/mv", O_RDONLY | O_DIRECTORY);
    syscall(SYS_rename, "/mv", "/sub/mv");
    try_open_at(mv, climb("secret"), "openat(moved dir, ../..)");
    /* Names relative to an fd of a file, and AT_EMPTY_PATH on it. */
    int file = (int)syscall(SYS_open, "/data", O_RDONLY);
    try_open_at(file, "../secret", "openat(file fd, ..)");
    syscall(SYS_linkat, file, "", AT_FDCWD, "/emptypath-link", AT_EMPTY_PATH);
    syscall(SYS_fchownat, file, "", 4321, 4321, AT_EMPTY_PATH);
}

/* Fd 0 is a directory the guest did not open: use it for everything. */
static void stdin_dir(void) {
    try_open_at(0, "secret", "openat(stdin, secret)");
    try_open_at(0, "../secret", "openat(stdin, ../secret)");
    try_open_at(0, climb("secret"), "openat(stdin, ../..)");
    syscall(SYS_mkdirat, 0, "made-dir", 0777);
    int fd = (int)syscall(SYS_openat, 0, "made-file", O_WRONLY | O_CREAT, 0666);
    if (fd >= 0)
        syscall(SYS_close, fd);
    syscall(SYS_symlinkat, "x", 0, "made-link");
    syscall(SYS_fchmodat, 0, "secret", 0777, 0);
    syscall(SYS_fchownat, 0, "secret", 4321, 4321, 0);
    syscall(SYS_linkat, AT_FDCWD, "/data", 0, "made-hardlink", 0);
    syscall(SYS_renameat, 0, "secret", AT_FDCWD, "/stolen-by-renameat");
    try_open("/stolen-by-renameat", "a file renamed from stdin's directory");
    syscall(SYS_unlinkat, 0, "secret", 0);
    if (syscall(SYS_fchdir, 0) == 0) {
        try_open("secret", "secret after fchdir(stdin)");
        try_open("../secret", "../secret after fchdir(stdin)");
        syscall(SYS_mkdir, "made-after-fchdir", 0777);
        long n = syscall(SYS_getcwd, buf, sizeof buf);
        if (n > 0)
            printf("cwd after fchdir(stdin): %s\n", buf);
    }
}

static void proc_files(void) {
    static const char *paths[] = {
        "/proc/self/root/secret", "/proc/self/cwd/secret", "/proc/self/fd/0",
        "/proc/self/mem",         "/proc/self/environ",    "/proc/self/maps",
        "/proc/thread-self/root", "/proc/1/root/etc/passwd",
        "/proc/self/exe",
    };
    for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {
        char p[8400];
        try_open(paths[i], paths[i]);
        snprintf(p, sizeof p, "/proc/self/root%s", host("secret"));
        try_open(p, "/proc/self/root + host path");
        long n = syscall(SYS_readlink, paths[i], buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = 0;
            printf("readlink %s: %s\n", paths[i], buf);
        }
    }
    int fd = (int)syscall(SYS_open, "/proc/self/mem", O_RDWR);
    if (fd >= 0)
        printf("opened emuprof's own memory\n");
}

/* Under --read-only: every change, through paths and inherited fds. */
static void read_only(void) {
    change_all("/data", "data");
    populate("/sub");
    syscall(SYS_rename, "/data", "/renamed");
    syscall(SYS_renameat2, AT_FDCWD, "/data", AT_FDCWD, "/data2", RENAME_EXCHANGE);
    syscall(SYS_unlink, "/data");
    syscall(SYS_rmdir, "/sub/empty");
    int fd = (int)syscall(SYS_open, "/", O_TMPFILE | O_RDWR, 0600);
    if (fd >= 0)
        printf("O_TMPFILE opened\n");
    syscall(SYS_ftruncate, 1, 0);
    syscall(SYS_fchmod, 1, 0777);
    syscall(SYS_fchown, 1, 4321, 4321);
    struct timespec times[2] = {{1, 0}, {1, 0}};
    syscall(SYS_utimensat, 1, NULL, times, 0);
    syscall(SYS_fallocate, 1, 0, 0, 1 << 20);
    fd = (int)syscall(SYS_dup, 1);
    syscall(SYS_ftruncate, fd, 0);
    int data = (int)syscall(SYS_open, "/data", O_RDONLY);
    char *map = (char *)syscall(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, data, 0);
    if (map != MAP_FAILED) {
        memcpy(map, "MAPPED", 6);
        syscall(SYS_msync, map, 4096, MS_SYNC);
        syscall(SYS_munmap, map, 4096);
    }
}

/* `/victim` and `/vdir` flip between a file (or directory) inside the root
 * and a symlink to the host, by atomic exchanges. */
static void swap(void) {
    long rounds = 0;
    /* Bounded, so a racer that died cannot leave it running forever. */
    for (; syscall(SYS_access, "/stop", F_OK) != 0 && rounds < 5000000; rounds++) {
        syscall(SYS_renameat2, AT_FDCWD, "/victim", AT_FDCWD, "/victim-alt", RENAME_EXCHANGE);
        syscall(SYS_renameat2, AT_FDCWD, "/vdir", AT_FDCWD, "/vdir-alt", RENAME_EXCHANGE);
    }
    printf("swapped %ld times\n", rounds);
}

static void race(long rounds) {
    for (long i = 0; i < rounds; i++) {
        change_all("/victim", "victim");
        populate("/vdir");
        try_open("/vdir/secret", "/vdir/secret");
        syscall(SYS_umask, 0);
        syscall(SYS_mkdir, "/vdir/m", 0777);
        syscall(SYS_rmdir, "/vdir/m");
        syscall(SYS_umask, 022);
    }
    int fd = (int)syscall(SYS_open, "/stop", O_WRONLY | O_CREAT, 0644);
    if (fd >= 0)
        syscall(SYS_close, fd);
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    outside = argv[2];
    long rounds = argc > 3 ? atol(argv[3]) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *attack = argv[1];
    if (!strcmp(attack, "dotdot"))
        dotdot();
    else if (!strcmp(attack, "symlinks"))
        symlinks();
    else if (!strcmp(attack, "dirfd"))
        dirfd_tricks();
    else if (!strcmp(attack, "proc"))
        proc_files();
    else if (!strcmp(attack, "readonly"))
        read_only();
    else if (!strcmp(attack, "stdin"))
        stdin_dir();
    else if (!strcmp(attack, "swap"))
        swap();
    else if (!strcmp(attack, "race"))
        race(rounds);
    else
        return 2;
    printf("done %s\n", attack);
    return 0;
}
