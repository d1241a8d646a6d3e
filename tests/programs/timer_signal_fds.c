/* timerfd and signalfd as real programs use them; every line it prints is
 * the same natively and under emuprof (counts that depend on the host's
 * timing natively are printed as bounds). Built by
 * tests/guest/timer_signal_fds.rs (gcc -static -pthread).
 *
 *   timer     a relative interval timer: a blocking read waits for the
 *             first expiry, expirations during a sleep add up, gettime
 *   nonblock  EAGAIN before the expiry, disarming, EINVAL for writes,
 *             short reads and settime on other fds
 *   absolute  an absolute CLOCK_REALTIME expiry, waited for by poll
 *   epoll     a timerfd and a signalfd in one epoll instance
 *   select    select on a timerfd
 *   thread    a thread blocked in a timerfd read wakes while main spins
 *   fork      a child reads the timerfd it inherited
 *   signals   signalfd: raise, two at once, a signal from a child, SIGCHLD
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct itimerspec spec(long value_ms, long interval_ms)
{
    struct itimerspec s;
    s.it_value.tv_sec = value_ms / 1000;
    s.it_value.tv_nsec = (value_ms % 1000) * 1000000L;
    s.it_interval.tv_sec = interval_ms / 1000;
    s.it_interval.tv_nsec = (interval_ms % 1000) * 1000000L;
    return s;
}

/* A call's result, with its errno's name when it failed. */
static void show(const char *what, long result)
{
    printf("%s %ld %s\n", what, result, result < 0 ? strerror(errno) : "");
}

static uint64_t read_count(int fd)
{
    uint64_t count = 0;
    if (read(fd, &count, sizeof count) != sizeof count)
        return 0;
    return count;
}

static void timer(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct itimerspec s = spec(20, 20);
    timerfd_settime(fd, 0, &s, NULL);
    printf("timer: first read %s\n", read_count(fd) >= 1 ? ">= 1" : "0");
    usleep(50000);
    uint64_t later = read_count(fd);
    printf("timer: after 50 ms %s\n", later >= 2 ? ">= 2" : "< 2");
    struct itimerspec now;
    timerfd_gettime(fd, &now);
    printf("timer: interval %ld ms, next within it %d\n", now.it_interval.tv_nsec / 1000000L,
           now.it_value.tv_sec == 0 && now.it_value.tv_nsec <= 20000000L);
    close(fd);
}

static void nonblock(void)
{
    int fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK);
    uint64_t count;
    show("nonblock: unarmed read", read(fd, &count, 8));
    struct itimerspec s = spec(1000, 0), old, cur;
    timerfd_settime(fd, 0, &s, NULL);
    timerfd_gettime(fd, &cur);
    printf("nonblock: armed, %d s left at most\n", (int)cur.it_value.tv_sec + 1);
    struct itimerspec off = spec(0, 0);
    timerfd_settime(fd, 0, &off, &old);
    timerfd_gettime(fd, &cur);
    printf("nonblock: old value set %d, now disarmed %d\n",
           old.it_value.tv_sec > 0 || old.it_value.tv_nsec > 0,
           cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    show("nonblock: write", write(fd, &count, 8));
    s = spec(1, 0);
    timerfd_settime(fd, 0, &s, NULL);
    usleep(5000);
    char small[4];
    show("nonblock: short read", read(fd, small, sizeof small));
    printf("nonblock: read %llu\n", (unsigned long long)read_count(fd));
    show("nonblock: settime of stdout", timerfd_settime(1, 0, &s, NULL));
    show("nonblock: bad clock", timerfd_create(12345, 0));
    close(fd);
}

static void absolute(void)
{
    int fd = timerfd_create(CLOCK_REALTIME, 0);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 5000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    struct itimerspec s = {{0, 0}, t};
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &s, NULL);
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, -1);
    printf("absolute: poll %d revents %#x read %llu\n", ready, p.revents,
           (unsigned long long)read_count(fd));
    struct itimerspec past = {{0, 0}, {1, 0}};
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &past, NULL);
    printf("absolute: a time passed long ago expires at once: %llu\n",
           (unsigned long long)read_count(fd));
    close(fd);
}

static void epoll(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK);
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = 7};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e);
    e.data.u64 = 9;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e);
    struct itimerspec s = spec(3, 0);
    timerfd_settime(tfd, 0, &s, NULL);
    struct epoll_event out[2];
    int n = epoll_wait(ep, out, 2, -1);
    printf("epoll: %d ready, data %llu, count %llu\n", n, (unsigned long long)out[0].data.u64,
           (unsigned long long)read_count(tfd));
    printf("epoll: nothing left within 10 ms: %d\n", epoll_wait(ep, out, 2, 10));
    raise(SIGUSR1);
    n = epoll_wait(ep, out, 2, -1);
    struct signalfd_siginfo info;
    ssize_t got = read(sfd, &info, sizeof info);
    printf("epoll: %d ready, data %llu, read %zd signal %u\n", n,
           (unsigned long long)out[0].data.u64, got, info.ssi_signo);
    close(ep);
    close(tfd);
    close(sfd);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void select_timerfd(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec s = spec(4, 0);
    timerfd_settime(fd, 0, &s, NULL);
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(fd, &readable);
    int n = select(fd + 1, &readable, NULL, NULL, NULL);
    printf("select: %d ready, set %d, count %llu\n", n, FD_ISSET(fd, &readable),
           (unsigned long long)read_count(fd));
    close(fd);
}

static volatile int woke;

static void *reader(void *arg)
{
    uint64_t count = read_count(*(int *)arg);
    woke = (int)count;
    return NULL;
}

static void thread(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec s = spec(10, 0);
    timerfd_settime(fd, 0, &s, NULL);
    pthread_t t;
    pthread_create(&t, NULL, reader, &fd);
    while (!woke) {
    }
    pthread_join(t, NULL);
    printf("thread: the reader woke with %d while main spun\n", woke);
    close(fd);
}

static void fork_child(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec s = spec(8, 0);
    timerfd_settime(fd, 0, &s, NULL);
    pid_t child = fork();
    if (child == 0) {
        printf("fork: the child read %llu\n", (unsigned long long)read_count(fd));
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    printf("fork: child exited %d\n", WEXITSTATUS(status));
    close(fd);
}

static void signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    struct signalfd_siginfo info[2];
    show("signals: nothing pending", read(fd, info, sizeof info));
    raise(SIGUSR2);
    raise(SIGUSR1);
    ssize_t got = read(fd, info, sizeof info);
    printf("signals: read %zd: %u %u\n", got, info[0].ssi_signo, info[1].ssi_signo);
    show("signals: small buffer", read(fd, info, 100));

    /* A blocking signalfd: a signal from a child, then its SIGCHLD. */
    int blocking = signalfd(-1, &set, 0);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        usleep(2000);
        kill(parent, SIGUSR2);
        usleep(2000);
        _exit(3);
    }
    struct pollfd p = {blocking, POLLIN, 0};
    printf("signals: poll %d\n", poll(&p, 1, -1));
    read(blocking, info, sizeof info[0]);
    printf("signals: from the child %u\n", info[0].ssi_signo);
    read(blocking, info, sizeof info[0]);
    printf("signals: then %u\n", info[0].ssi_signo);
    int status;
    waitpid(child, &status, 0);
    printf("signals: child exited %d\n", WEXITSTATUS(status));
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, SIGUSR1);
    printf("signals: new mask keeps fd %d\n", signalfd(blocking, &only, 0) == blocking);
    close(fd);
    close(blocking);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    timer();
    nonblock();
    absolute();
    epoll();
    select_timerfd();
    thread();
    fork_child();
    signals();
    return 0;
}
