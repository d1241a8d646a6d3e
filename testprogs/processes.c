/* Processes with known structure, for emuprof's process tests.
 *
 *   processes [fork | harness [N [SCALE]] | pipeline [KIB] | spawn | exec | killed | reap | all | leaf]
 *
 * fork      the parent runs work(PARENT_WORK), its child work(CHILD_WORK),
 *           exits 3; the parent waits and prints both results
 * harness   a fork-per-test runner: N tests (default 6), each in its own
 *           child; test i runs work(i * SCALE) (default 10000) and exits
 *           i % 3, the last one dies by SIGABRT; the parent reports each
 *           status (a large SCALE keeps a child busy for seconds, for the
 *           live view's tests)
 * pipeline  the parent writes KIB kibibytes (default 1024) into a pipe, a
 *           child checksums them and sends the sum back through a second
 *           pipe
 * spawn     posix_spawn of this program in leaf mode, then system() of it
 * exec      a child execs this program in leaf mode
 * killed    a child blocks reading a pipe; the parent kills it with SIGTERM
 * reap      five children exit with different statuses; the parent reaps
 *           them with waitpid(-1, WNOHANG) in a loop
 * select    two children write into a pipe each; the parent multiplexes
 *           them with select() until both end, after a select() that
 *           times out (its sets come back empty) while the children wait
 * epoll     the same with epoll_wait()
 * pdeathsig a child forks a grandchild that asks for SIGTERM when its
 *           parent dies (prctl(PR_SET_PDEATHSIG)) and then blocks; the child
 *           exits, the grandchild dies of SIGTERM, which the first process
 *           sees as EOF on a pipe only the grandchild held open
 * fifo PATH makes a FIFO at PATH; a child writes a line into it while the
 *           parent reads, then the other way round (the writer opens
 *           first, so its open waits for the reader); removes it
 * fiforead PATH
 *           reads an existing FIFO to its end (the writer may be a program
 *           outside emuprof) and prints what it read
 * leaf      prints one line and exits 5
 *
 * Output never depends on how the processes interleave: a child prints only
 * before it exits, and its parent prints only after waiting for it. */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include "testprog.h"

extern char **environ;

#define PARENT_WORK 100000
#define CHILD_WORK 300000

static const char *self;

/* Known work: a loop of `n` iterations. */
KEEP unsigned long work(unsigned long n)
{
    unsigned long sum = 0;
    for (unsigned long i = 0; i < n; i++)
        sum += i * i;
    return sum;
}

static void describe(const char *what, int status)
{
    if (WIFEXITED(status))
        printf("%s: exited %d\n", what, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("%s: killed by signal %d\n", what, WTERMSIG(status));
    else
        printf("%s: status %#x\n", what, status);
}

static pid_t fork_flushed(void)
{
    fflush(stdout);
    return fork();
}

static int fork_and_wait(void)
{
    pid_t child = fork_flushed();
    if (child < 0)
        return 1;
    if (child == 0) {
        printf("child: work %lu, parent is the forker: %d\n", work(CHILD_WORK),
               getppid() != getpid());
        exit(3);
    }
    unsigned long mine = work(PARENT_WORK);
    int status;
    if (waitpid(child, &status, 0) != child)
        return 1;
    printf("parent: work %lu\n", mine);
    describe("child", status);
    return 0;
}

KEEP static int run_test(int i, int count, unsigned long scale)
{
    unsigned long result = work((unsigned long)i * scale);
    printf("test %d: work %lu\n", i, result);
    fflush(stdout);
    if (i == count - 1)
        abort();
    return i % 3;
}

static int harness(int count, unsigned long scale)
{
    int failed = 0;
    for (int i = 0; i < count; i++) {
        pid_t child = fork_flushed();
        if (child < 0)
            return 1;
        if (child == 0)
            exit(run_test(i, count, scale));
        int status;
        waitpid(child, &status, 0);
        char name[32];
        snprintf(name, sizeof name, "test %d", i);
        describe(name, status);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    printf("harness: %d of %d failed\n", failed, count);
    return 0;
}

static int pipeline(long kib)
{
    int down[2], up[2];
    if (pipe(down) || pipe(up))
        return 1;
    pid_t child = fork_flushed();
    if (child == 0) {
        close(down[1]);
        close(up[0]);
        uint32_t hash = 2166136261u;
        char buf[4096];
        ssize_t n;
        long total = 0;
        while ((n = read(down[0], buf, sizeof buf)) > 0) {
            hash = fnv1a(hash, buf, (unsigned long)n);
            total += n;
        }
        char line[64];
        int len = snprintf(line, sizeof line, "%ld %08x", total, hash);
        write(up[1], line, (size_t)len);
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    char block[1024];
    uint32_t state = 1;
    for (long k = 0; k < kib; k++) {
        for (size_t i = 0; i < sizeof block; i++)
            block[i] = (char)lcg_next(&state);
        for (size_t done = 0; done < sizeof block;) {
            ssize_t n = write(down[1], block + done, sizeof block - done);
            if (n <= 0)
                return 1;
            done += (size_t)n;
        }
    }
    close(down[1]);
    char answer[64] = {0};
    ssize_t got = 0, n;
    while ((n = read(up[0], answer + got, sizeof answer - 1 - (size_t)got)) > 0)
        got += n;
    int status;
    waitpid(child, &status, 0);
    printf("pipeline: child read %s\n", answer);
    describe("pipeline child", status);
    return 0;
}

static int spawn(void)
{
    char *args[] = {(char *)self, "leaf", "spawned", NULL};
    pid_t child;
    fflush(stdout);
    int rc = posix_spawn(&child, self, NULL, NULL, args, environ);
    if (rc != 0) {
        printf("posix_spawn failed: %d\n", rc);
        return 1;
    }
    int status;
    waitpid(child, &status, 0);
    describe("spawned", status);
    char command[4200];
    snprintf(command, sizeof command, "%s leaf system", self);
    fflush(stdout);
    describe("system", system(command));
    return 0;
}

static int exec_child(void)
{
    pid_t child = fork_flushed();
    if (child == 0) {
        execl(self, self, "leaf", "exec'd", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    describe("exec'd child", status);
    return 0;
}

static int killed(void)
{
    int fds[2];
    if (pipe(fds))
        return 1;
    pid_t child = fork_flushed();
    if (child == 0) {
        char c;
        read(fds[0], &c, 1); /* nobody writes */
        _exit(0);
    }
    kill(child, SIGTERM);
    int status;
    waitpid(child, &status, 0);
    describe("killed child", status);
    close(fds[0]);
    close(fds[1]);
    return 0;
}

static int reap(void)
{
    for (int i = 0; i < 5; i++) {
        pid_t child = fork_flushed();
        if (child == 0) {
            work((unsigned long)(5 - i) * 20000);
            _exit(10 + i);
        }
    }
    int seen = 0, sum = 0;
    while (seen < 5) {
        int status;
        pid_t done = waitpid(-1, &status, WNOHANG);
        if (done > 0) {
            seen++;
            sum += WEXITSTATUS(status);
        } else {
            sched_yield();
        }
    }
    printf("reap: %d children, statuses sum to %d\n", seen, sum);
    return 0;
}

#define MUX_LINES 200

/* Child `id` of a multiplexing test: waits on `go` until the parent says
 * so, then writes MUX_LINES lines into `out` and exits. */
static void mux_child(int id, int go, int out)
{
    char c;
    if (read(go, &c, 1) != 1)
        _exit(1);
    for (int i = 0; i < MUX_LINES; i++) {
        char line[64];
        int len = snprintf(line, sizeof line, "child %d line %d: %lu\n", id, i, work(100));
        if (write(out, line, (size_t)len) != len)
            _exit(1);
    }
    _exit(0);
}

/* Starts two mux children; out[i] is the read end of child i's pipe,
 * go[i] the write end of its start signal. */
static int mux_start(int out[2], int go[2], pid_t child[2])
{
    for (int id = 0; id < 2; id++) {
        int data[2], start[2];
        if (pipe(data) || pipe(start))
            return 1;
        child[id] = fork_flushed();
        if (child[id] == 0) {
            close(data[0]);
            close(start[1]);
            if (id == 1) /* not the first child's pipes */
                close(out[0]), close(go[0]);
            mux_child(id, start[0], data[1]);
        }
        close(data[1]);
        close(start[0]);
        out[id] = data[0];
        go[id] = start[1];
    }
    return 0;
}

/* Reads what is there on `fd` into the count of child `id`; 0 at EOF. */
static ssize_t mux_read(int fd, long *bytes)
{
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0)
        *bytes += n;
    return n;
}

static int mux_finish(const char *how, pid_t child[2], long bytes[2], int timed_out)
{
    for (int id = 0; id < 2; id++) {
        int status;
        waitpid(child[id], &status, 0);
        printf("%s: child %d sent %ld bytes, ", how, id, bytes[id]);
        describe("ended", status);
    }
    printf("%s: the early wait timed out with nothing ready: %s\n", how, timed_out ? "yes" : "no");
    return 0;
}

static int select_mux(void)
{
    int out[2], go[2];
    pid_t child[2];
    long bytes[2] = {0, 0};
    if (mux_start(out, go, child))
        return 1;
    fd_set early;
    FD_ZERO(&early);
    FD_SET(out[0], &early);
    FD_SET(out[1], &early);
    struct timeval wait = {0, 20000};
    int timed_out = select(out[1] + 1, &early, NULL, NULL, &wait) == 0 &&
                    !FD_ISSET(out[0], &early) && !FD_ISSET(out[1], &early);
    write(go[0], "g", 1);
    write(go[1], "g", 1);
    int open_fds = 2;
    while (open_fds > 0) {
        fd_set ready;
        FD_ZERO(&ready);
        for (int id = 0; id < 2; id++)
            if (out[id] >= 0)
                FD_SET(out[id], &ready);
        if (select(FD_SETSIZE, &ready, NULL, NULL, NULL) <= 0)
            return 1;
        for (int id = 0; id < 2; id++) {
            if (out[id] >= 0 && FD_ISSET(out[id], &ready) && mux_read(out[id], &bytes[id]) == 0) {
                close(out[id]);
                out[id] = -1;
                open_fds--;
            }
        }
    }
    return mux_finish("select", child, bytes, timed_out);
}

static int epoll_mux(void)
{
    int out[2], go[2];
    pid_t child[2];
    long bytes[2] = {0, 0};
    if (mux_start(out, go, child))
        return 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return 1;
    for (int id = 0; id < 2; id++) {
        struct epoll_event event = {.events = EPOLLIN, .data.u64 = 100 + (uint64_t)id};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, out[id], &event))
            return 1;
    }
    struct epoll_event got[4];
    int timed_out = epoll_wait(ep, got, 4, 20) == 0;
    write(go[0], "g", 1);
    write(go[1], "g", 1);
    int open_fds = 2;
    while (open_fds > 0) {
        int n = epoll_wait(ep, got, 4, -1);
        if (n <= 0)
            return 1;
        for (int i = 0; i < n; i++) {
            int id = (int)(got[i].data.u64 - 100);
            if (id < 0 || id > 1)
                return 1;
            if (mux_read(out[id], &bytes[id]) == 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, out[id], NULL);
                close(out[id]);
                open_fds--;
            }
        }
    }
    close(ep);
    return mux_finish("epoll", child, bytes, timed_out);
}

static int pdeathsig(void)
{
    int held[2], ready[2], never[2];
    if (pipe(held) || pipe(ready) || pipe(never))
        return 1;
    pid_t child = fork_flushed();
    if (child == 0) {
        close(held[0]);
        if (fork() == 0) {
            close(ready[0]);
            close(never[1]);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            write(ready[1], "r", 1);
            char c;
            read(never[0], &c, 1); /* until the signal */
            _exit(0);
        }
        close(held[1]);
        close(never[0]);
        close(never[1]);
        char c;
        read(ready[0], &c, 1); /* the grandchild asked for the signal */
        _exit(0);
    }
    close(held[1]);
    close(ready[1]);
    int status; /* never[1] stays open: only the signal ends the grandchild */
    waitpid(child, &status, 0);
    describe("pdeathsig child", status);
    char c;
    printf("pdeathsig: the grandchild's pipe reads EOF: %s\n", read(held[0], &c, 1) == 0 ? "yes" : "no");
    close(held[0]);
    close(ready[0]);
    close(never[0]);
    close(never[1]);
    return 0;
}

/* Reads `path` (a FIFO) to its end into `buf`; the length read, or -1. */
static int read_fifo(const char *path, char *buf, int size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int total = 0, n;
    while (total < size && (n = read(fd, buf + total, size - total)) > 0)
        total += n;
    close(fd);
    return total;
}

static int write_fifo(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return 1;
    int failed = write(fd, line, strlen(line)) != (ssize_t)strlen(line);
    return close(fd) || failed;
}

static int fifo(const char *path)
{
    if (mkfifo(path, 0600))
        return 1;
    for (int round = 0; round < 2; round++) {
        const char *line = round ? "parent to child\n" : "child to parent\n";
        pid_t child = fork_flushed();
        if (child < 0)
            return 1;
        int child_writes = round == 0;
        if (child == 0) {
            if (child_writes)
                exit(write_fifo(path, line));
            char buf[64];
            int n = read_fifo(path, buf, sizeof buf);
            printf("fifo child read: %.*s", n > 0 ? n : 0, buf);
            exit(n != (int)strlen(line));
        }
        char buf[64];
        int n = 0;
        if (child_writes) {
            n = read_fifo(path, buf, sizeof buf);
            printf("fifo parent read: %.*s", n > 0 ? n : 0, buf);
        } else if (write_fifo(path, line)) {
            return 1;
        }
        int status;
        waitpid(child, &status, 0);
        describe("fifo child", status);
    }
    return unlink(path);
}

int main(int argc, char **argv)
{
    self = argv[0];
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "leaf")) {
        printf("leaf: %s\n", argc > 2 ? argv[2] : "");
        return 5;
    }
    if (!strcmp(mode, "fork"))
        return fork_and_wait();
    if (!strcmp(mode, "harness"))
        return harness(argc > 2 ? atoi(argv[2]) : 6, argc > 3 ? strtoul(argv[3], NULL, 10) : 10000);
    if (!strcmp(mode, "pipeline"))
        return pipeline(argc > 2 ? atol(argv[2]) : 1024);
    if (!strcmp(mode, "spawn"))
        return spawn();
    if (!strcmp(mode, "exec"))
        return exec_child();
    if (!strcmp(mode, "killed"))
        return killed();
    if (!strcmp(mode, "reap"))
        return reap();
    if (!strcmp(mode, "select"))
        return select_mux();
    if (!strcmp(mode, "epoll"))
        return epoll_mux();
    if (!strcmp(mode, "pdeathsig"))
        return pdeathsig();
    if (!strcmp(mode, "fifo") && argc > 2)
        return fifo(argv[2]);
    if (!strcmp(mode, "fiforead") && argc > 2) {
        char buf[256];
        int n = read_fifo(argv[2], buf, sizeof buf);
        printf("fiforead: %.*s", n > 0 ? n : 0, buf);
        return n < 0;
    }
    if (!strcmp(mode, "all"))
        return fork_and_wait() || harness(6, 10000) || pipeline(256) || spawn() || exec_child() ||
               killed() || reap() || select_mux() || epoll_mux() || pdeathsig();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
