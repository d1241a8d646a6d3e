/* Signal handlers under emuprof: raise() to a handler, a SIGSEGV handler
 * that siglongjmps out of a null-pointer write, an ignored SIGPIPE, and
 * abort() caught by a SIGABRT handler that exits 7. Built by tests/guest/signals.rs. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int usr1_count;
static sigjmp_buf recover;
static volatile void *fault_addr;

static void on_usr1(int sig) { (void)sig; usr1_count++; }
static void on_segv(int sig, siginfo_t *info, void *ctx) { (void)sig; (void)ctx; fault_addr = info->si_addr; siglongjmp(recover, 1); }
static void on_abrt(int sig) { (void)sig; printf("abort caught\n"); fflush(stdout); _exit(7); }

int main(void)
{
    signal(SIGUSR1, on_usr1);
    raise(SIGUSR1);
    raise(SIGUSR1);
    printf("usr1 handled %d times\n", usr1_count);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    if (sigsetjmp(recover, 1) == 0) {
        *(volatile int *)16 = 1;
        printf("not reached\n");
    } else {
        printf("segv at %p recovered\n", (void *)fault_addr);
    }
    signal(SIGPIPE, SIG_IGN);
    raise(SIGPIPE);
    printf("sigpipe ignored\n");
    signal(SIGABRT, on_abrt);
    abort();
}
