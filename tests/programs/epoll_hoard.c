/* Up to 25 processes hold as many epoll instances as they can get at once:
 * up to 24 children, one after the other (until a fork fails), then the
 * parent. Each prints how many it made and how its last epoll_create1
 * failed, and every process keeps its instances (and its other fds: stdio
 * and pipe ends, 5 in a child, 7 in the parent) until the parent is done. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

static void hoard(const char *who) {
    int made = 0;
    while (epoll_create1(0) >= 0)
        made++;
    printf("%s made %d, then %s\n", who, made, strerror(errno));
    fflush(stdout);
}

int main(void) {
    int done[2], gate[2];
    if (pipe(done) || pipe(gate))
        return 1;
    for (int i = 0; i < 24; i++) {
        char c = 1;
        pid_t pid = fork();
        if (pid < 0) {
            printf("fork failed: %s\n", strerror(errno));
            break;
        }
        if (pid == 0) {
            close(done[0]);
            close(gate[1]);
            hoard("child");
            write(done[1], &c, 1);
            read(gate[0], &c, 1);
            _exit(0);
        }
        /* One child at a time, so the order (and the counts) are fixed. */
        if (read(done[0], &c, 1) != 1)
            return 3;
    }
    hoard("parent");
    close(gate[1]);
    while (wait(NULL) > 0)
        ;
    return 0;
}
