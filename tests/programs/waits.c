/* Waits, timers and machine queries as real programs use them; every line
 * it prints is the same natively and under emuprof. Built by
 * tests/guest/waits_and_timers.rs (gcc -static -pthread).
 *
 *   spin      main spins on a flag a second thread sets after usleep(10000)
 *   poll      poll(NULL, 0, 100) and epoll_wait of an empty instance wait
 *             their whole timeout on the clock
 *   timer     a POSIX timer's SIGALRM ends sigsuspend
 *   itimer    setitimer's SIGALRM ends pause; alarm answers the time left
 *   child     sigsuspend until SIGCHLD from a child that slept
 *   busy      a timer ends the wait of a parent whose child never stops
 *             running, as `timeout` needs
 *   sigwait   sigtimedwait times out on the clock, takes a pending signal,
 *             and one a child sends; sigpending lists a blocked one
 *   mincore   resident pages of the stack, ENOMEM for an unmapped page
 *   queries   scheduling queries, capget, eventfd
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int flag;
static volatile sig_atomic_t alarms, children;

static void *setter(void *arg)
{
    (void)arg;
    usleep(10000);
    flag = 1;
    return NULL;
}

static void spin(void)
{
    pthread_t t;
    pthread_create(&t, NULL, setter, NULL);
    while (!flag) {
    }
    pthread_join(t, NULL);
    printf("spin: the sleeping thread set the flag\n");
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void polls(void)
{
    long long start = now_ms();
    int n = poll(NULL, 0, 100);
    printf("poll: %d, waited at least 100 ms: %s\n", n, now_ms() - start >= 100 ? "yes" : "no");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    start = now_ms();
    n = epoll_wait(ep, &ev, 1, 50);
    printf("epoll_wait: %d, waited at least 50 ms: %s\n", n, now_ms() - start >= 50 ? "yes" : "no");
    close(ep);
}

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void timer(void)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    signal(SIGALRM, on_alarm);
    timer_t id;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGALRM;
    if (timer_create(CLOCK_REALTIME, &sev, &id) != 0) {
        printf("timer_create: %s\n", strerror(errno));
        return;
    }
    struct itimerspec its = {.it_value = {.tv_nsec = 50000000}};
    timer_settime(id, 0, &its, NULL);
    long long start = now_ms();
    while (alarms == 0)
        sigsuspend(&old);
    sigset_t after;
    sigprocmask(SIG_SETMASK, NULL, &after);
    printf("timer: fired %d time(s) after at least 50 ms: %s; SIGALRM blocked again: %s\n",
           (int)alarms, now_ms() - start >= 50 ? "yes" : "no",
           sigismember(&after, SIGALRM) ? "yes" : "no");
    timer_delete(id);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void itimer(void)
{
    alarms = 0;
    struct itimerval iv = {.it_value = {.tv_usec = 20000}};
    setitimer(ITIMER_REAL, &iv, NULL);
    pause();
    printf("itimer: pause ended by SIGALRM: %s\n", alarms == 1 ? "yes" : "no");
    alarm(5);
    printf("alarm: %u seconds left of the previous one\n", alarm(0));
}

static void on_child(int sig)
{
    (void)sig;
    children++;
}

static void child(void)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    signal(SIGCHLD, on_child);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(20000);
        _exit(3);
    }
    while (children == 0)
        sigsuspend(&old);
    int status;
    waitpid(pid, &status, 0);
    printf("child: SIGCHLD ended sigsuspend, exit status %d\n", WEXITSTATUS(status));
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void busy(void)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    alarms = 0;
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            flag++;
    }
    struct itimerval iv = {.it_value = {.tv_usec = 30000}};
    setitimer(ITIMER_REAL, &iv, NULL);
    while (alarms == 0)
        sigsuspend(&old);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    printf("busy: the timer fired while the child ran; child killed by signal %d\n",
           WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void sigwait_(void)
{
    sigset_t set, old, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    struct timespec wait = {.tv_nsec = 20000000};
    long long start = now_ms();
    int r = sigtimedwait(&set, NULL, &wait);
    printf("sigwait: %d (%s) after at least 20 ms: %s\n", r, r < 0 ? strerror(errno) : "-",
           now_ms() - start >= 20 ? "yes" : "no");
    kill(getpid(), SIGUSR1);
    sigpending(&pending);
    printf("sigwait: SIGUSR1 pending: %s\n", sigismember(&pending, SIGUSR1) ? "yes" : "no");
    siginfo_t info;
    r = sigtimedwait(&set, &info, &wait);
    printf("sigwait: took %s, si_signo %s\n", r == SIGUSR1 ? "SIGUSR1" : "?",
           info.si_signo == SIGUSR1 ? "SIGUSR1" : "?");
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        usleep(10000);
        kill(parent, SIGUSR2);
        _exit(0);
    }
    struct timespec long_wait = {.tv_sec = 5};
    r = sigtimedwait(&set, NULL, &long_wait);
    printf("sigwait: took %s from the child\n", r == SIGUSR2 ? "SIGUSR2" : "?");
    waitpid(pid, NULL, 0);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void residency(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char here;
    uintptr_t stack_page = (uintptr_t)&here & ~(uintptr_t)(page - 1);
    unsigned char vec[2];
    int r = mincore((void *)stack_page, page, vec);
    printf("mincore: stack page %d, resident %d\n", r, vec[0] & 1);
    void *gone = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, page);
    r = mincore(gone, page, vec);
    printf("mincore: unmapped page %d (%s)\n", r, r ? strerror(errno) : "-");
    r = mincore((char *)stack_page + 1, page, vec);
    printf("mincore: unaligned %d (%s)\n", r, r ? strerror(errno) : "-");
}

static void queries(void)
{
    struct sched_param param = {.sched_priority = 7};
    printf("sched: fifo %d..%d, other %d..%d, policy %d\n", sched_get_priority_min(SCHED_FIFO),
           sched_get_priority_max(SCHED_FIFO), sched_get_priority_min(SCHED_OTHER),
           sched_get_priority_max(SCHED_OTHER), sched_getscheduler(0));
    sched_getparam(0, &param);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    /* The nice value itself is the caller's (a test runner may renice). */
    printf("sched: priority %d, nice in range: %s (errno %d)\n", param.sched_priority,
           nice >= -20 && nice <= 19 ? "yes" : "no", errno);
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    memset(data, 0xff, sizeof data);
    long r = syscall(SYS_capget, &header, data);
    /* The sets themselves are the user's (emuprof's guest holds none). */
    printf("capget: %ld, version %#x\n", r, header.version);
    int fd = eventfd(2, EFD_CLOEXEC);
    uint64_t v = 5;
    write(fd, &v, sizeof v);
    read(fd, &v, sizeof v);
    printf("eventfd: %llu\n", (unsigned long long)v);
    close(fd);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    spin();
    polls();
    timer();
    itimer();
    child();
    busy();
    sigwait_();
    residency();
    queries();
    return 0;
}
