/* Processes with known structure, for emuprof's process tests.
 *
 *   processes [fork | harness [N] | pipeline [KIB] | spawn | exec | killed | reap | all | leaf]
 *
 * fork      the parent runs work(PARENT_WORK), its child work(CHILD_WORK),
 *           exits 3; the parent waits and prints both results
 * harness   a fork-per-test runner: N tests (default 6), each in its own
 *           child; test i runs work(i * 10000) and exits i % 3, the last one
 *           dies by SIGABRT; the parent reports each status
 * pipeline  the parent writes KIB kibibytes (default 1024) into a pipe, a
 *           child checksums them and sends the sum back through a second
 *           pipe
 * spawn     posix_spawn of this program in leaf mode, then system() of it
 * exec      a child execs this program in leaf mode
 * killed    a child blocks reading a pipe; the parent kills it with SIGTERM
 * reap      five children exit with different statuses; the parent reaps
 *           them with waitpid(-1, WNOHANG) in a loop
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
#include <sys/wait.h>
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

KEEP static int run_test(int i, int count)
{
    unsigned long result = work((unsigned long)i * 10000);
    printf("test %d: work %lu\n", i, result);
    fflush(stdout);
    if (i == count - 1)
        abort();
    return i % 3;
}

static int harness(int count)
{
    int failed = 0;
    for (int i = 0; i < count; i++) {
        pid_t child = fork_flushed();
        if (child < 0)
            return 1;
        if (child == 0)
            exit(run_test(i, count));
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
        return harness(argc > 2 ? atoi(argv[2]) : 6);
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
    if (!strcmp(mode, "all"))
        return fork_and_wait() || harness(6) || pipeline(256) || spawn() || exec_child() ||
               killed() || reap();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
