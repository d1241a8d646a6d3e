//! Servers and clients under one emuprof run, talking through sockets
//! emuprof keeps to itself: the same output as natively, the same profile
//! bytes on every run (four of them competing for the CPUs), Debian's
//! Redis and its benchmark as the README runs them, a path socket in the
//! working directory, and nothing outside the run reachable — not
//! even a server the test itself listens with on the host's loopback —
//! unless `--network host` is given.

use crate::common;

use std::path::Path;

use common::compile::compile_c;
use common::testprogs::musl_available;
use common::{testprog, EmuprofCommand, EmuprofRun, Libc};

fn libcs() -> Vec<Libc> {
    let mut libcs = vec![Libc::Glibc, Libc::Dyn];
    if musl_available() {
        libcs.push(Libc::Musl);
    }
    libcs
}

/// Runs `program args` natively in `dir`.
fn native(program: &Path, args: &[&str], dir: &Path) -> std::process::Output {
    let mut command = std::process::Command::new(program);
    command.args(args).current_dir(dir).env_clear();
    common::process::run_with_timeout(command, &program.display().to_string())
}

/// A 4-thread HTTP server and a client process making 100 requests over
/// loopback TCP: the client gets every response, and ten runs (four of
/// them at once) write the same profile bytes — which worker accepted
/// which connection and how every read split included.
#[test]
fn an_http_server_and_its_client_profile_the_same_every_run() {
    for libc in libcs() {
        let program = testprog("sockets", libc, "O2").path;
        let run = || EmuprofCommand::new(&program).args(&["http", "100"]).run();
        let first = run();
        assert_eq!(first.status.code(), Some(0), "{libc}: {}", first.stderr);
        assert_eq!(
            first.stdout_text(),
            "http: 100 requests served by 4 threads, the client exited 0\n",
            "{libc}: {}",
            first.stderr
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let natively = native(&program, &["http", "100"], dir.path());
        assert_eq!(
            String::from_utf8_lossy(&natively.stdout),
            first.stdout_text()
        );
        assert_eq!(
            first.function_metric("serve_request", "calls"),
            100,
            "{libc}"
        );
        common::process::assert_runs_alike(&first, run, &format!("sockets.{libc}.O2 http 100"));
    }
}

/// Every mode but `path` (socketpair fd passing, an AF_UNIX datagram
/// server with several clients, UDP, a non-blocking connect through epoll,
/// a poll loop in one thread while another writes…) gives the same profile
/// twice.
#[test]
fn every_mode_profiles_the_same_twice() {
    for libc in libcs() {
        let program = testprog("sockets", libc, "O2").path;
        let runs: Vec<EmuprofRun> = (0..2)
            .map(|_| EmuprofCommand::new(&program).args(&["all"]).run())
            .collect();
        assert_eq!(runs[0].status.code(), Some(0), "{libc}: {}", runs[0].stderr);
        assert_eq!(
            runs[0].stdout_text(),
            std::fs::read_to_string(common::testprogs::expected_stdout_path("sockets"))
                .expect("expected stdout")
        );
        assert!(
            runs[0].profile_bytes == runs[1].profile_bytes,
            "sockets.{libc}.O2 all: two runs wrote different profiles"
        );
        assert!(
            !runs[0].stderr.contains("network"),
            "no note for sockets inside the run: {}",
            runs[0].stderr
        );
    }
}

/// A server bound to a path in the working directory: the name is a socket
/// file, a client connects through it and through its new name after a
/// rename, and not after an unlink — as natively; the profile is the same
/// twice in the same directory.
#[test]
fn a_path_socket_in_the_working_directory_behaves_as_natively() {
    let program = testprog("sockets", Libc::Glibc, "O2").path;
    let dir = tempfile::tempdir().expect("temp dir");
    let natively = native(&program, &["path"], dir.path());
    assert_eq!(natively.status.code(), Some(0));
    let mut profiles = Vec::new();
    for _ in 0..2 {
        let run = EmuprofCommand::new(&program)
            .args(&["path"])
            .cwd(dir.path())
            .run();
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        assert_eq!(run.stdout_text(), String::from_utf8_lossy(&natively.stdout));
        assert!(
            std::fs::read_dir(dir.path()).expect("dir").next().is_none(),
            "the program removes its socket files"
        );
        profiles.push(run.profile_bytes);
    }
    assert!(
        profiles[0] == profiles[1],
        "two runs wrote different profiles"
    );
}

/// A client connecting to an address outside the run gets `EACCES` and
/// emuprof says so once; a listener the test opens on the host's loopback
/// is not part of the run, so connecting to its port finds nobody
/// (`ECONNREFUSED`), and the host listener never sees a connection.
#[test]
fn nothing_outside_the_run_is_reached() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("host listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("address").port();
    let source = r#"#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static void try_connect(const char *ip, int port) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &addr.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    printf("%s: %s\n", ip, r == 0 ? "connected" : strerror(errno));
    close(fd);
}
int main(int argc, char **argv) {
    try_connect("192.0.2.1", 80);
    try_connect("198.51.100.7", 443);
    try_connect("127.0.0.1", atoi(argv[1]));
    return 0;
}
"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(client) = compile_c(dir.path(), "outside", source, "gcc", &["-O2"]) else {
        return;
    };
    let run = EmuprofCommand::new(&client).args(&[port.to_string()]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        "192.0.2.1: Permission denied\n198.51.100.7: Permission denied\n\
         127.0.0.1: Connection refused\n"
    );
    let notes: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("outside the run"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(notes[0].starts_with("emuprof: "), "{}", notes[0]);
    assert!(
        listener.accept().is_err(),
        "the host's listener was reached from inside the run"
    );
}

/// A real server from Debian, as the README runs it: `redis-server`
/// answering `redis-benchmark`'s 1,000 SETs and 1,000 GETs over loopback
/// TCP, all started by one shell script under one run. Two runs write the
/// same profile bytes, and the README's `check` holds the server to its
/// cost per SET (and fails, exit 3, with a limit below it).
#[test]
fn redis_and_its_benchmark_run_as_the_readme_says() {
    if common::find_in_path("redis-server").is_none()
        || common::find_in_path("redis-benchmark").is_none()
    {
        common::ci::skip_unless_ci(
            "redis-server is not installed (Debian packages redis-server, redis-tools)",
        );
        return;
    }
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).expect("README");
    let block = |after: &str, fence: &str| -> String {
        let rest = readme
            .split_once(after)
            .expect("README has the Redis example")
            .1;
        rest.split_once(fence)
            .and_then(|(_, rest)| rest.split_once("```"))
            .expect("a code block follows")
            .0
            .to_string()
    };
    let script = block("**Servers and their clients**", "```sh\n");
    let limits = block("check --limits redis.toml", "```toml\n");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("redis.sh"), &script).expect("write the script");
    let runs: Vec<EmuprofRun> = (0..2)
        .map(|_| {
            EmuprofCommand::new("/bin/sh")
                .args(&["redis.sh"])
                .cwd(dir.path())
                .run()
        })
        .collect();
    for run in &runs {
        assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
        let out = run.stdout_text();
        assert!(out.contains("SET: ") && out.contains("GET: "), "{out}");
    }
    assert!(
        runs[0].profile_bytes == runs[1].profile_bytes,
        "two runs of redis-server and redis-benchmark wrote different profiles"
    );
    let check = |limits: &str| {
        let path = dir.path().join("redis.toml");
        std::fs::write(&path, limits).expect("write limits");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_emuprof"));
        command
            .args(["check", "--limits"])
            .arg(&path)
            .args(["--", "/bin/sh", "redis.sh"])
            .current_dir(dir.path())
            .env_clear();
        common::process::run_with_timeout(command, "emuprof check")
    };
    let holds = check(&limits);
    assert_eq!(
        holds.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&holds.stderr)
    );
    let broken = check(&limits.replace("1_800_000", "1_000_000"));
    assert_eq!(broken.status.code(), Some(3));
}

/// With `--network host`, a connection nobody in the run listens for goes
/// to the host: the client reaches the test's own listener on the host's
/// loopback, exchanges bytes with it, and emuprof says once that the run
/// reached outside.
#[test]
fn network_host_reaches_a_listener_outside_the_run() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("host listener");
    let port = listener.local_addr().expect("address").port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("a connection from the run");
        let mut request = [0u8; 6];
        stream.read_exact(&mut request).expect("read");
        stream.write_all(b"echo: ").expect("write");
        stream.write_all(&request).expect("write");
    });
    let source = r#"#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("connect");
        return 1;
    }
    if (write(fd, "hello\n", 6) != 6)
        return 2;
    char buf[64];
    size_t got = 0;
    ssize_t n;
    while ((n = read(fd, buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    fwrite(buf, 1, got, stdout);
    return 0;
}
"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(client) = compile_c(dir.path(), "reach", source, "gcc", &["-O2"]) else {
        return;
    };
    let run = EmuprofCommand::new(&client)
        .flags(&["--network", "host"])
        .args(&[port.to_string()])
        .run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "echo: hello\n");
    server.join().expect("the host listener");
    let notes = run.stderr.matches("--network host").count();
    assert_eq!(notes, 1, "{}", run.stderr);
}

/// Corners compared with Linux itself: a dual-stack IPv6 listener taking an
/// IPv4 client (IPv4-mapped) and an IPv6 one, `EISCONN`, a non-blocking
/// `accept` with nothing queued, `read` of a listening socket,
/// `SO_RCVTIMEO` on the virtual clock, `sendfile` into a socket,
/// `MSG_WAITALL` across two writes of another process, the end of a closed
/// peer, automatic `AF_UNIX` names, `SO_TYPE`/`SO_DOMAIN`/`SO_PROTOCOL`,
/// `shutdown` and `send` of an unconnected datagram socket (`EPIPE`
/// without `SIGPIPE`).
#[test]
fn corners_answer_as_linux_does() {
    same_as_linux("corners", CORNERS);
}

/// An edge-triggered `epoll` of a listening socket sees each new
/// connection as an edge, and no edge for connections it already saw.
#[test]
fn edge_triggered_epoll_sees_each_connection() {
    same_as_linux("edges", EDGES);
}

/// Builds `source` and runs it natively and under emuprof: the same
/// output, exit status 0.
fn same_as_linux(name: &str, source: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(program) = compile_c(dir.path(), name, source, "gcc", &["-O2"]) else {
        return;
    };
    let natively = native(&program, &[], dir.path());
    assert_eq!(natively.status.code(), Some(0));
    let run = EmuprofCommand::new(&program).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout_text(), String::from_utf8_lossy(&natively.stdout));
}

const EDGES: &str = r#"#include <arpa/inet.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(s, (void *)&a, sizeof a); socklen_t l = sizeof a; getsockname(s, (void *)&a, &l); listen(s, 16);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
    for (int i = 0; i < 3; i++) { int c = socket(AF_INET, SOCK_STREAM, 0); connect(c, (void *)&a, sizeof a); }
    struct epoll_event out[4];
    printf("wait 1: %d\n", epoll_wait(ep, out, 4, 100));
    printf("accept: %s\n", accept(s, NULL, NULL) >= 0 ? "ok" : "fail");
    printf("wait 2 (no new edge): %d\n", epoll_wait(ep, out, 4, 100));
    int c = socket(AF_INET, SOCK_STREAM, 0); connect(c, (void *)&a, sizeof a);
    printf("wait 3 (a new connection): %d\n", epoll_wait(ep, out, 4, 100));
    int n = 0; while (accept(s, NULL, NULL) >= 0) n++;
    printf("accepted %d more\n", n);
    return 0;
}
"#;

const CORNERS: &str = r#"#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define E(x) ((x) < 0 ? strerrorname_np(errno) : "ok")
int main(void) {
    /* dual stack */
    int s6 = socket(AF_INET6, SOCK_STREAM, 0);
    int zero = 0; setsockopt(s6, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
    printf("bind6 %s\n", E(bind(s6, (void *)&a6, sizeof a6)));
    socklen_t l = sizeof a6; getsockname(s6, (void *)&a6, &l);
    printf("listen %s\n", E(listen(s6, 4)));
    int c4 = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = a6.sin6_port, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    printf("connect4 %s\n", E(connect(c4, (void *)&a4, sizeof a4)));
    printf("connect4 again %s\n", E(connect(c4, (void *)&a4, sizeof a4)));
    struct sockaddr_in6 peer; l = sizeof peer;
    int acc = accept(s6, (void *)&peer, &l);
    char txt[64]; inet_ntop(AF_INET6, &peer.sin6_addr, txt, sizeof txt);
    printf("accepted from %s len %u\n", txt, l);
    int c6 = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 lo = {.sin6_family = AF_INET6, .sin6_port = a6.sin6_port, .sin6_addr = in6addr_loopback};
    printf("connect6 %s\n", E(connect(c6, (void *)&lo, sizeof lo)));
    l = sizeof peer; int acc6 = accept(s6, (void *)&peer, &l);
    inet_ntop(AF_INET6, &peer.sin6_addr, txt, sizeof txt);
    printf("accepted from %s\n", txt);
    /* nonblocking accept */
    fcntl(s6, F_SETFL, O_NONBLOCK);
    printf("accept empty %s\n", E(accept(s6, NULL, NULL)));
    /* read on listening */
    char b[16];
    printf("read listening %s\n", E(read(s6, b, 1)));
    /* SO_RCVTIMEO */
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    setsockopt(acc, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    printf("recv with timeout %s\n", E(recv(acc, b, 1, 0)));
    /* sendfile into a socket */
    FILE *f = tmpfile(); fputs("file contents\n", f); fflush(f);
    off_t off = 0;
    printf("sendfile %zd\n", sendfile(c4, fileno(f), &off, 100));
    ssize_t n = recv(acc, b, sizeof b, 0);
    printf("got %zd %.*s", n, (int)n, b);
    /* waitall */
    write(c6, "ab", 2);
    if (fork() == 0) { usleep(1000); write(c6, "cd", 2); _exit(0); }
    n = recv(acc6, b, 4, MSG_WAITALL);
    printf("waitall %zd\n", n);
    wait(NULL);
    /* peer closes */
    close(c4);
    printf("after close: read %zd\n", read(acc, b, 1));
    /* unix autobind name */
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    bind(u, (void *)&un, sizeof(sa_family_t));
    l = sizeof un; getsockname(u, (void *)&un, &l);
    printf("autobind len %u first %d\n", l, un.sun_path[0]);
    /* SO_TYPE etc */
    int v; l = sizeof v; getsockopt(u, SOL_SOCKET, SO_TYPE, &v, &l); printf("type %d\n", v);
    l = sizeof v; getsockopt(s6, SOL_SOCKET, SO_DOMAIN, &v, &l); printf("domain %d\n", v);
    l = sizeof v; getsockopt(acc, SOL_SOCKET, SO_PROTOCOL, &v, &l); printf("protocol %d\n", v);
    l = sizeof v; getsockopt(acc, SOL_SOCKET, SO_RCVBUF, &v, &l); printf("rcvbuf %s\n", v > 0 ? "positive" : "?");
    /* bad calls */
    printf("shutdown unconnected %s\n", E(shutdown(u, SHUT_RDWR)));
    printf("getpeername unconnected %s\n", (l = sizeof un, E(getpeername(u, (void *)&un, &l))));
    printf("listen dgram %s\n", E(listen(u, 1)));
    printf("send dgram unconnected %s\n", E(send(u, "x", 1, 0)));
    /* sendmmsg and recvmmsg of a UDP socket to itself */
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in self = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(udp, (void *)&self, sizeof self); l = sizeof self; getsockname(udp, (void *)&self, &l);
    connect(udp, (void *)&self, sizeof self);
    char bufs[4][8] = {"one", "two!", "three"};
    struct iovec iovs[4];
    struct mmsghdr msgs[4];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < 4; i++) {
        iovs[i].iov_base = bufs[i];
        iovs[i].iov_len = i < 3 ? strlen(bufs[i]) : 8;
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    printf("sendmmsg %d\n", sendmmsg(udp, msgs, 3, 0));
    for (int i = 0; i < 4; i++) iovs[i].iov_len = 8;
    int got = recvmmsg(udp, msgs, 4, MSG_WAITFORONE, NULL);
    printf("recvmmsg %d:", got);
    for (int i = 0; i < got; i++) printf(" %u", msgs[i].msg_len);
    printf("\n");
    return 0;
}
"#;
