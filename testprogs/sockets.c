/* Sockets between processes and threads, for emuprof's socket tests.
 *
 *   sockets [pair | abstract | tcp | udp | dgram | epoll | poll | http [N] | path | all]
 *
 * pair      socketpair(): a forked child echoes words in upper case over a
 *           stream pair and reads a pipe whose fd the parent passed it in
 *           an SCM_RIGHTS message; a datagram pair keeps message
 *           boundaries (and MSG_TRUNC), a seqpacket pair too; shutdown()
 *           ends the stream
 * abstract  an AF_UNIX stream server on an abstract name and three forked
 *           clients; SO_PEERCRED tells the server which client it has
 * tcp       the same over TCP on 127.0.0.1 (an ephemeral port); the
 *           server's getpeername() matches each client's getsockname()
 * udp       a UDP server on 127.0.0.1 answers three forked clients'
 *           datagrams with sendto() to the address recvfrom() gave
 * dgram     an AF_UNIX datagram server and three clients bound to
 *           automatic abstract names
 * epoll     a non-blocking TCP connect completed through epoll, then a
 *           ping and a pong through epoll
 * poll      one thread polls a socketpair and reads until the end while
 *           another writes into it
 * http N    a multi-threaded HTTP/1.0 server (4 threads accepting on one
 *           listening socket) and a forked client making N requests
 *           (default 20), each on a new loopback TCP connection
 * path      an AF_UNIX stream server at ./sockets-test.sock (in the
 *           working directory): the name is a socket file; a client
 *           connects through it, and through a new name after rename();
 *           after unlink() connecting fails with ENOENT
 * all       every mode but path, http with 20 requests (the default)
 *
 * Output never depends on how the processes interleave: children print
 * nothing, and the parent prints what it collected in a fixed order. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "sockets.c:%d: %s failed: %s\n", __LINE__, #cond,         \
                    strerror(errno));                                                 \
            exit(99);                                                                 \
        }                                                                             \
    } while (0)

#define CLIENTS 3

static void write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        CHECK(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* Reads up to len bytes, until the end of the stream. */
static size_t read_all(int fd, void *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, (char *)buf + done, len - done);
        CHECK(n >= 0);
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return done;
}

static int exit_status(pid_t pid) {
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void send_fd(int sock, int fd) {
    char byte = 'F';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
    CHECK(sendmsg(sock, &msg, 0) == 1);
}

static int receive_fd(int sock) {
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    CHECK(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) == 1);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    CHECK(cmsg && cmsg->cmsg_type == SCM_RIGHTS);
    int fd;
    memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
    return fd;
}

static void pair(void) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        close(sv[0]);
        char word[8];
        for (int i = 0; i < 3; i++) {
            CHECK(read_all(sv[1], word, sizeof word) == sizeof word);
            for (size_t j = 0; j < sizeof word; j++)
                if (word[j] >= 'a' && word[j] <= 'z')
                    word[j] -= 'a' - 'A';
            write_all(sv[1], word, sizeof word);
        }
        int passed = receive_fd(sv[1]);
        char data[64];
        size_t n = read_all(passed, data, sizeof data);
        write_all(sv[1], data, n);
        _exit(0);
    }
    close(sv[1]);
    const char *words[] = {"alpha---", "bravo---", "charlie-"};
    for (int i = 0; i < 3; i++) {
        char answer[9] = {0};
        write_all(sv[0], words[i], 8);
        CHECK(read_all(sv[0], answer, 8) == 8);
        printf("pair: %.8s -> %s\n", words[i], answer);
    }
    int p[2];
    CHECK(pipe(p) == 0);
    write_all(p[1], "through a passed fd", 19);
    close(p[1]);
    send_fd(sv[0], p[0]);
    close(p[0]);
    char data[64];
    size_t n = read_all(sv[0], data, sizeof data);
    printf("pair: the child read \"%.*s\" from the fd passed to it\n", (int)n, data);
    printf("pair: child exited %d\n", exit_status(child));
    close(sv[0]);

    CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
    const char *messages[] = {"one", "two-two", "three-three-three"};
    for (int i = 0; i < 3; i++)
        CHECK(send(sv[0], messages[i], strlen(messages[i]), 0) == (ssize_t)strlen(messages[i]));
    char buf[64];
    ssize_t got = recv(sv[1], buf, sizeof buf, 0);
    printf("pair: datagram of %zd bytes \"%.*s\"\n", got, (int)got, buf);
    got = recv(sv[1], buf, sizeof buf, MSG_PEEK);
    printf("pair: peeked datagram of %zd bytes\n", got);
    got = recv(sv[1], buf, 3, MSG_TRUNC);
    printf("pair: a 3-byte buffer with MSG_TRUNC returns %zd\n", got);
    struct iovec iov = {.iov_base = buf, .iov_len = 5};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    got = recvmsg(sv[1], &msg, 0);
    printf("pair: recvmsg of 5 bytes gets %zd, truncated %s\n", got,
           (msg.msg_flags & MSG_TRUNC) ? "yes" : "no");
    close(sv[0]);
    close(sv[1]);

    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    CHECK(write(sv[0], "first", 5) == 5);
    CHECK(write(sv[0], "second", 6) == 6);
    CHECK(shutdown(sv[0], SHUT_WR) == 0);
    memset(&msg, 0, sizeof msg);
    iov.iov_len = 3;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    got = recvmsg(sv[1], &msg, 0);
    printf("pair: seqpacket read of 3 bytes gets %zd \"%.*s\", truncated %s\n", got, (int)got,
           buf, (msg.msg_flags & MSG_TRUNC) ? "yes" : "no");
    got = read(sv[1], buf, sizeof buf);
    printf("pair: next seqpacket \"%.*s\"\n", (int)got, buf);
    printf("pair: after shutdown a read returns %zd\n", read(sv[1], buf, sizeof buf));
    close(sv[0]);
    close(sv[1]);
}

/* One stream server and CLIENTS forked clients at `addr`; the server tells
 * its clients apart by their request (and checks SO_PEERCRED for AF_UNIX, the
 * client's own address for TCP). */
static void stream_server(const char *label, int family, struct sockaddr *addr, socklen_t len) {
    int server = socket(family, SOCK_STREAM, 0);
    CHECK(server >= 0);
    int one = 1;
    CHECK(setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    CHECK(bind(server, addr, len) == 0);
    CHECK(listen(server, 8) == 0);
    socklen_t got_len = len;
    CHECK(getsockname(server, addr, &got_len) == 0);
    int accepting = 0;
    socklen_t size = sizeof accepting;
    CHECK(getsockopt(server, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size) == 0);
    printf("%s: listening %s\n", label, accepting ? "yes" : "no");
    pid_t kids[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            close(server);
            int c = socket(family, SOCK_STREAM, 0);
            CHECK(c >= 0);
            CHECK(connect(c, addr, got_len) == 0);
            struct sockaddr_storage me;
            socklen_t me_len = sizeof me;
            CHECK(getsockname(c, (struct sockaddr *)&me, &me_len) == 0);
            unsigned port = family == AF_INET ? ntohs(((struct sockaddr_in *)&me)->sin_port) : 0;
            char request[32] = {0};
            snprintf(request, sizeof request, "client %d port %05u", i, port);
            write_all(c, request, sizeof request);
            CHECK(shutdown(c, SHUT_WR) == 0);
            char answer[64] = {0};
            size_t n = read_all(c, answer, sizeof answer - 1);
            _exit(n == 36 && strncmp(answer, "ack ", 4) == 0 ? 0 : 1);
        }
    }
    char requests[CLIENTS][32];
    int checked[CLIENTS] = {0};
    for (int k = 0; k < CLIENTS; k++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int c = accept(server, (struct sockaddr *)&peer, &peer_len);
        CHECK(c >= 0);
        char request[32];
        CHECK(read_all(c, request, sizeof request) == sizeof request);
        int i = request[7] - '0';
        CHECK(i >= 0 && i < CLIENTS);
        memcpy(requests[i], request, sizeof request);
        if (family == AF_UNIX) {
            struct ucred cred;
            socklen_t cred_len = sizeof cred;
            CHECK(getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0);
            checked[i] = cred.pid == kids[i] && cred.uid == getuid() && cred.gid == getgid();
        } else {
            unsigned port = ntohs(((struct sockaddr_in *)&peer)->sin_port);
            char expected[32];
            snprintf(expected, sizeof expected, "client %d port %05u", i, port);
            checked[i] = peer.ss_family == AF_INET &&
                         ((struct sockaddr_in *)&peer)->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
                         strcmp(expected, request) == 0;
        }
        char answer[36];
        memcpy(answer, "ack ", 4);
        memcpy(answer + 4, request, sizeof request);
        write_all(c, answer, sizeof answer);
        close(c);
    }
    for (int i = 0; i < CLIENTS; i++) {
        int status = exit_status(kids[i]);
        printf("%s: client %d: request \"client %d\", %s, exited %d\n", label, i, i,
               checked[i] ? (family == AF_UNIX ? "peer credentials match"
                                               : "peer address matches")
                          : "PEER MISMATCH",
               status);
    }
    close(server);
}

static void abstract_server(void) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "emuprof-sockets-%d",
                     (int)getpid());
    stream_server("abstract", AF_UNIX, (struct sockaddr *)&addr,
                  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
}

static void tcp_server(void) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    stream_server("tcp", AF_INET, (struct sockaddr *)&addr, sizeof addr);
}

static void udp(void) {
    int server = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(server >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(server, (struct sockaddr *)&addr, sizeof addr) == 0);
    socklen_t len = sizeof addr;
    CHECK(getsockname(server, (struct sockaddr *)&addr, &len) == 0);
    pid_t kids[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            int c = socket(AF_INET, SOCK_DGRAM, 0);
            char datagram[600];
            memset(datagram, 'a' + i, sizeof datagram);
            datagram[0] = (char)('0' + i);
            size_t size = 100 + 200 * (size_t)i;
            CHECK(sendto(c, datagram, size, 0, (struct sockaddr *)&addr, sizeof addr) ==
                  (ssize_t)size);
            char answer[64];
            ssize_t n = recv(c, answer, sizeof answer, 0);
            char expected[64];
            int want = snprintf(expected, sizeof expected, "got %zu bytes", size);
            _exit(n == want && memcmp(answer, expected, (size_t)n) == 0 ? 0 : 1);
        }
    }
    ssize_t sizes[CLIENTS] = {0};
    int from_loopback[CLIENTS] = {0};
    for (int k = 0; k < CLIENTS; k++) {
        ssize_t size = recv(server, NULL, 0, MSG_PEEK | MSG_TRUNC);
        char datagram[600];
        struct sockaddr_in from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(server, datagram, sizeof datagram, 0, (struct sockaddr *)&from,
                             &from_len);
        CHECK(n == size && n > 0);
        int i = datagram[0] - '0';
        CHECK(i >= 0 && i < CLIENTS);
        sizes[i] = n;
        from_loopback[i] = from_len == sizeof from && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
                           from.sin_port != 0;
        char answer[64];
        int a = snprintf(answer, sizeof answer, "got %zd bytes", n);
        CHECK(sendto(server, answer, (size_t)a, 0, (struct sockaddr *)&from, from_len) == a);
    }
    for (int i = 0; i < CLIENTS; i++)
        printf("udp: client %d: %zd bytes from %s, exited %d\n", i, sizes[i],
               from_loopback[i] ? "a loopback port" : "ELSEWHERE", exit_status(kids[i]));
    close(server);
}

static void dgram(void) {
    int server = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(server >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "emuprof-dgram-%d",
                     (int)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    CHECK(bind(server, (struct sockaddr *)&addr, len) == 0);
    pid_t kids[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            int c = socket(AF_UNIX, SOCK_DGRAM, 0);
            struct sockaddr_un me = {.sun_family = AF_UNIX};
            CHECK(bind(c, (struct sockaddr *)&me, sizeof(sa_family_t)) == 0);
            char message[32];
            int m = snprintf(message, sizeof message, "%d: hello", i);
            CHECK(sendto(c, message, (size_t)m, 0, (struct sockaddr *)&addr, len) == m);
            char answer[64];
            ssize_t got = recv(c, answer, sizeof answer, 0);
            _exit(got == m + 4 && memcmp(answer, "re: ", 4) == 0 ? 0 : 1);
        }
    }
    int named[CLIENTS] = {0};
    for (int k = 0; k < CLIENTS; k++) {
        char message[64];
        struct sockaddr_un from;
        socklen_t from_len = sizeof from;
        ssize_t got = recvfrom(server, message, sizeof message, 0, (struct sockaddr *)&from,
                               &from_len);
        CHECK(got > 0);
        int i = message[0] - '0';
        CHECK(i >= 0 && i < CLIENTS);
        /* An automatic name: a NUL and five hex digits. */
        named[i] = from_len == offsetof(struct sockaddr_un, sun_path) + 6 && from.sun_path[0] == 0;
        char answer[64];
        memcpy(answer, "re: ", 4);
        memcpy(answer + 4, message, (size_t)got);
        CHECK(sendto(server, answer, (size_t)got + 4, 0, (struct sockaddr *)&from, from_len) ==
              got + 4);
    }
    for (int i = 0; i < CLIENTS; i++)
        printf("dgram: client %d: %s, exited %d\n", i,
               named[i] ? "sent from an automatic abstract name" : "UNNAMED", exit_status(kids[i]));
    close(server);
}

static void epoll_connect(void) {
    int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(server, (struct sockaddr *)&addr, sizeof addr) == 0);
    socklen_t len = sizeof addr;
    CHECK(getsockname(server, (struct sockaddr *)&addr, &len) == 0);
    CHECK(listen(server, 4) == 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, server, &ev) == 0);
    int client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(client, (struct sockaddr *)&addr, sizeof addr);
    CHECK(r == 0 || errno == EINPROGRESS);
    ev.events = EPOLLOUT;
    ev.data.u32 = 2;
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, client, &ev) == 0);
    int accepted = -1, wrote = 0, answered = 0;
    char buf[16];
    while (!answered) {
        struct epoll_event events[4];
        int n = epoll_wait(ep, events, 4, 5000);
        CHECK(n > 0);
        for (int i = 0; i < n; i++) {
            unsigned what = events[i].data.u32;
            if (what == 1 && accepted < 0) {
                accepted = accept4(server, NULL, NULL, SOCK_NONBLOCK);
                CHECK(accepted >= 0);
                printf("epoll: the server accepted a connection\n");
                struct epoll_event in = {.events = EPOLLIN, .data.u32 = 3};
                CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, accepted, &in) == 0);
            } else if (what == 2 && !wrote && (events[i].events & EPOLLOUT)) {
                int error = -1;
                socklen_t size = sizeof error;
                CHECK(getsockopt(client, SOL_SOCKET, SO_ERROR, &error, &size) == 0);
                printf("epoll: the client is connected (SO_ERROR %d)\n", error);
                CHECK(write(client, "ping", 4) == 4);
                wrote = 1;
                struct epoll_event in = {.events = EPOLLIN, .data.u32 = 2};
                CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, client, &in) == 0);
            } else if (what == 3) {
                ssize_t got = read(accepted, buf, sizeof buf);
                CHECK(got == 4);
                printf("epoll: the server read \"%.4s\"\n", buf);
                CHECK(write(accepted, "pong", 4) == 4);
                CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, accepted, NULL) == 0);
            } else if (what == 2 && wrote) {
                ssize_t got = read(client, buf, sizeof buf);
                CHECK(got == 4);
                printf("epoll: the client read \"%.4s\"\n", buf);
                answered = 1;
            }
        }
    }
    ssize_t none = read(client, buf, sizeof buf);
    printf("epoll: another read gets %zd (%s)\n", none, none < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    close(client);
    close(accepted);
    close(server);
    close(ep);
}

static int poll_sv[2];
static size_t poll_total;
static unsigned poll_sum;

static void *poller(void *arg) {
    (void)arg;
    struct pollfd pfd = {.fd = poll_sv[1], .events = POLLIN};
    char buf[100];
    for (;;) {
        CHECK(poll(&pfd, 1, -1) == 1);
        ssize_t n = read(poll_sv[1], buf, sizeof buf);
        CHECK(n >= 0);
        if (n == 0)
            return NULL;
        for (ssize_t i = 0; i < n; i++)
            poll_sum = poll_sum * 31 + (unsigned char)buf[i];
        poll_total += (size_t)n;
    }
}

static void poll_loop(void) {
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, poll_sv) == 0);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, poller, NULL) == 0);
    char line[64];
    for (int i = 0; i < 50; i++) {
        int n = snprintf(line, sizeof line, "line %d of the writer thread\n", i);
        write_all(poll_sv[0], line, (size_t)n);
        if (i % 10 == 0)
            sched_yield();
    }
    close(poll_sv[0]);
    CHECK(pthread_join(thread, NULL) == 0);
    printf("poll: the polling thread read %zu bytes, checksum %08x\n", poll_total, poll_sum);
    close(poll_sv[1]);
}

static int http_listener;
static int http_served;
static pthread_mutex_t http_lock = PTHREAD_MUTEX_INITIALIZER;

/* Answers one request on `c`: "hello <path>". */
static void serve_request(int c) {
    char request[256];
    size_t got = 0;
    while (got < sizeof request - 1) {
        ssize_t n = read(c, request + got, sizeof request - 1 - got);
        CHECK(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
        request[got] = 0;
        if (strstr(request, "\r\n\r\n"))
            break;
    }
    request[got] = 0;
    char path[128] = "/";
    sscanf(request, "GET %127s", path);
    char body[160], response[320];
    int body_len = snprintf(body, sizeof body, "hello %s\n", path);
    int len = snprintf(response, sizeof response,
                       "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
                       body_len, body);
    write_all(c, response, (size_t)len);
}

static void *http_worker(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(http_listener, NULL, NULL);
        if (c < 0)
            return NULL;
        serve_request(c);
        pthread_mutex_lock(&http_lock);
        http_served++;
        pthread_mutex_unlock(&http_lock);
        close(c);
    }
}

static int http_get(const struct sockaddr_in *addr, int i) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(c >= 0);
    CHECK(connect(c, (const struct sockaddr *)addr, sizeof *addr) == 0);
    int one = 1;
    CHECK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    char request[128];
    int n = snprintf(request, sizeof request, "GET /item/%d HTTP/1.0\r\nHost: localhost\r\n\r\n", i);
    write_all(c, request, (size_t)n);
    char response[512];
    size_t got = read_all(c, response, sizeof response - 1);
    response[got] = 0;
    close(c);
    char expected[64];
    snprintf(expected, sizeof expected, "\r\n\r\nhello /item/%d\n", i);
    return strncmp(response, "HTTP/1.0 200 OK\r\n", 17) == 0 && strstr(response, expected) != NULL;
}

static void http(int requests) {
    http_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(http_listener >= 0);
    int one = 1;
    CHECK(setsockopt(http_listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(http_listener, (struct sockaddr *)&addr, sizeof addr) == 0);
    socklen_t len = sizeof addr;
    CHECK(getsockname(http_listener, (struct sockaddr *)&addr, &len) == 0);
    CHECK(listen(http_listener, 64) == 0);
    pid_t client = fork();
    CHECK(client >= 0);
    if (client == 0) {
        int ok = 0;
        for (int i = 0; i < requests; i++)
            ok += http_get(&addr, i);
        _exit(ok == requests ? 0 : 1);
    }
    pthread_t workers[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&workers[i], NULL, http_worker, NULL) == 0);
    int status = exit_status(client);
    pthread_mutex_lock(&http_lock);
    int served = http_served;
    pthread_mutex_unlock(&http_lock);
    printf("http: %d requests served by 4 threads, the client exited %d\n", served, status);
    /* The workers still wait in accept(); exit() ends them. */
}

static void path_server(void) {
    const char *name = "sockets-test.sock";
    unlink(name);
    int server = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, name);
    CHECK(bind(server, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(listen(server, 4) == 0);
    struct stat st;
    CHECK(lstat(name, &st) == 0);
    printf("path: %s is %s\n", name, S_ISSOCK(st.st_mode) ? "a socket" : "NOT A SOCKET");
    int again = socket(AF_UNIX, SOCK_STREAM, 0);
    printf("path: a second bind gets %s\n",
           bind(again, (struct sockaddr *)&addr, sizeof addr) < 0 && errno == EADDRINUSE
               ? "EADDRINUSE"
               : "?");
    close(again);
    const char *names[] = {"sockets-test.sock", "sockets-moved.sock"};
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            CHECK(rename(names[0], names[1]) == 0);
            strcpy(addr.sun_path, names[1]);
        }
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            int c = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK(connect(c, (struct sockaddr *)&addr, sizeof addr) == 0);
            write_all(c, "knock", 5);
            char answer[16];
            size_t n = read_all(c, answer, sizeof answer);
            _exit(n == 7 && memcmp(answer, "welcome", 7) == 0 ? 0 : 1);
        }
        int c = accept(server, NULL, NULL);
        CHECK(c >= 0);
        char request[5];
        CHECK(read_all(c, request, 5) == 5);
        struct sockaddr_un peer;
        socklen_t peer_len = sizeof peer;
        CHECK(getsockname(c, (struct sockaddr *)&peer, &peer_len) == 0);
        write_all(c, "welcome", 7);
        close(c);
        printf("path: through %s: \"%.5s\", the accepted socket is named %s, client exited %d\n",
               names[round], request, peer.sun_path, exit_status(child));
    }
    CHECK(unlink(names[1]) == 0);
    int late = socket(AF_UNIX, SOCK_STREAM, 0);
    int r = connect(late, (struct sockaddr *)&addr, sizeof addr);
    printf("path: after unlink connect gets %s\n", r < 0 && errno == ENOENT ? "ENOENT" : "?");
    close(late);
    close(server);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    int all = strcmp(mode, "all") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (all || strcmp(mode, "pair") == 0)
        pair();
    if (all || strcmp(mode, "abstract") == 0)
        abstract_server();
    if (all || strcmp(mode, "tcp") == 0)
        tcp_server();
    if (all || strcmp(mode, "udp") == 0)
        udp();
    if (all || strcmp(mode, "dgram") == 0)
        dgram();
    if (all || strcmp(mode, "epoll") == 0)
        epoll_connect();
    if (all || strcmp(mode, "poll") == 0)
        poll_loop();
    if (all || strcmp(mode, "http") == 0)
        http(argc > 2 && !all ? atoi(argv[2]) : 20);
    if (strcmp(mode, "path") == 0)
        path_server();
    return 0;
}
