/*
 * Times of files the guest writes (tests/guest/file_times.rs): written,
 * a second file, touched to "now", then given explicit times. Under
 * emuprof each time is the virtual clock's; prints them with the clock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static void show(const char *what, const char *path) {
    struct stat st; stat(path, &st);
    printf("%s: mtime %lld.%09ld ctime %lld\n", what, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec);
}
int main(void) {
    struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
    printf("clock %lld\n", (long long)now.tv_sec);
    int fd = open("a.txt", O_WRONLY|O_CREAT|O_TRUNC, 0644); write(fd, "hello\n", 6); close(fd);
    show("written", "a.txt");
    fd = open("b.txt", O_WRONLY|O_CREAT|O_TRUNC, 0644); write(fd, "x", 1); close(fd);
    show("second", "b.txt");
    utimensat(AT_FDCWD, "a.txt", NULL, 0);
    show("touched", "a.txt");
    struct timespec t[2] = {{1000, 0}, {2000, 0}};
    utimensat(AT_FDCWD, "a.txt", t, 0);
    show("explicit", "a.txt");
    return 0;
}
