/*
 * Times of files the guest writes (tests/guest/file_times.rs): written,
 * a second file, the directory they were created in, a subdirectory whose
 * entries are created, renamed and removed, a file written through a
 * shared mapping, touched to "now", then given explicit times. Under
 * emuprof each time is the virtual clock's; prints them with the clock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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
    show("listing", ".");
    mkdir("d", 0755);
    fd = open("d/f", O_WRONLY|O_CREAT, 0644); close(fd);
    show("created", "d/f");
    show("subdir", "d");
    rename("d/f", "d/g");
    show("renamed", "d");
    unlink("d/g");
    show("unlinked", "d");
    fd = open("m.bin", O_RDWR|O_CREAT|O_TRUNC, 0644); ftruncate(fd, 4096);
    show("truncated", "m.bin");
    char *map = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
    memcpy(map, "mapped", 6); munmap(map, 4096); close(fd);
    show("mapped", "m.bin");
    utimensat(AT_FDCWD, "a.txt", NULL, 0);
    show("touched", "a.txt");
    struct timespec t[2] = {{1000, 0}, {2000, 0}};
    utimensat(AT_FDCWD, "a.txt", t, 0);
    show("explicit", "a.txt");
    return 0;
}
