/*
 * File mappings as programs use them (tests/guest/shared_mappings.rs):
 * writes into a MAP_SHARED mapping of a file open for writing reach the
 * file at msync, at munmap and when the process ends; writes into a
 * MAP_PRIVATE mapping never do. Another process reads the file back with
 * read() after each step; the process itself reads what it wrote through
 * the mapping before any sync.
 *
 * Usage: shared_map FILE   (FILE is created; its final bytes are checked
 * by the test after the program exits)
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 10000

/* A child process reads `len` bytes of `path` at `offset` with pread. */
static void read_back(const char *path, const char *what, off_t offset, size_t len)
{
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char buf[64] = {0};
        int fd = open(path, O_RDONLY);
        ssize_t n = pread(fd, buf, len < sizeof buf ? len : sizeof buf - 1, offset);
        printf("%s: %zd bytes: \"%s\"\n", what, n, buf);
        fflush(stdout);
        _exit(0);
    }
    waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "shared_map.dat";
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, SIZE) != 0) {
        perror(path);
        return 1;
    }
    char *shared = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    strcpy(shared, "synced with msync");
    if (msync(shared, 4096, MS_SYNC) != 0) {
        perror("msync");
        return 1;
    }
    read_back(path, "after msync", 0, 17);

    char *private_copy = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    strcpy(private_copy + 100, "private, never written");
    munmap(private_copy, SIZE);
    read_back(path, "after a private write", 100, 22);

    strcpy(shared + 5000, "written back by munmap");
    munmap(shared, SIZE);
    read_back(path, "after munmap", 5000, 22);

    shared = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("mapped again: \"%s\"\n", shared + 5000);
    strcpy(shared + 2000, "read before any sync");
    char own[32] = {0};
    pread(fd, own, 20, 2000);
    printf("read in the same process: \"%s\"\n", own);
    strcpy(shared + 9980, "written back at exit");
    return 0;
}
