/* Memory shared between processes; every line it prints is the same
 * natively and under emuprof. Built by tests/guest/shared_mappings.rs
 * (gcc -static -pthread).
 *
 *   anonymous  parent and forked child take turns (a pipe handshake)
 *              incrementing a counter in a MAP_SHARED|MAP_ANONYMOUS page
 *   file       a MAP_SHARED mapping of a file made before fork: the
 *              child's writes show in the parent's mapping, and reach the
 *              file at msync, where read() sees them
 *   semaphore  a process-shared POSIX semaphore in shared memory, posted
 *              by the child and waited for by the parent
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void anonymous(void)
{
    volatile long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int to_child[2], to_parent[2];
    pipe(to_child);
    pipe(to_parent);
    char token = 'x';
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 500; i++) {
            read(to_child[0], &token, 1);
            (*counter)++;
            write(to_parent[1], &token, 1);
        }
        _exit(0);
    }
    for (int i = 0; i < 500; i++) {
        (*counter)++;
        write(to_child[1], &token, 1);
        read(to_parent[0], &token, 1);
    }
    waitpid(child, NULL, 0);
    printf("anonymous: counter %ld\n", *counter);
}

static void file(void)
{
    int fd = open("shared.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
    ftruncate(fd, 4096);
    char *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    strcpy(map, "parent");
    pid_t child = fork();
    if (child == 0) {
        printf("file: the child sees \"%s\"\n", map);
        fflush(stdout);
        strcpy(map, "written by the child");
        _exit(0);
    }
    waitpid(child, NULL, 0);
    printf("file: the parent sees \"%s\"\n", map);
    msync(map, 4096, MS_SYNC);
    char back[32] = {0};
    pread(fd, back, sizeof back - 1, 0);
    printf("file: read() gives \"%s\"\n", back);
    munmap(map, 4096);
    close(fd);
    unlink("shared.dat");
}

static void semaphore(void)
{
    sem_t *sem = mmap(NULL, sizeof *sem, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
    sem_init(sem, 1, 0);
    pid_t child = fork();
    if (child == 0) {
        usleep(1000);
        sem_post(sem);
        sem_post(sem);
        _exit(0);
    }
    sem_wait(sem);
    waitpid(child, NULL, 0);
    int value;
    sem_getvalue(sem, &value);
    printf("semaphore: one wait went through, %d left\n", value);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    anonymous();
    file();
    semaphore();
    return 0;
}
