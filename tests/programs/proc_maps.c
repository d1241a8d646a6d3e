/* Reads /proc/self/maps as programs do and prints what it checked, the
 * same natively and under emuprof: every line parses in Linux's format
 * (names at column 73, sorted page-aligned ranges), read in small chunks,
 * with pread and after lseek alike; [stack] holds a local variable; [heap]
 * grows after malloc; the program's own path (readlink /proc/self/exe)
 * names the range holding main's code; pthread_getattr_np of the main
 * thread (which glibc answers from the maps) gives a stack that holds the
 * local variable. With an argument, also writes the maps file there. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char maps[1 << 20];

/* The whole maps file, read 7 bytes at a time; with `check`, prints
 * whether pread and a read after lseek see the same bytes. */
static size_t read_maps(int check) {
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) {
        perror("open /proc/self/maps");
        exit(1);
    }
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, maps + len, 7)) > 0)
        len += (size_t)n;
    maps[len] = 0;
    if (!check) {
        close(fd);
        return len;
    }
    char again[64];
    ssize_t at_ten = pread(fd, again, sizeof again, 10);
    printf("pread from 10 agrees: %s\n",
           at_ten > 0 && memcmp(again, maps + 10, (size_t)at_ten) == 0 ? "yes" : "no");
    lseek(fd, 5, SEEK_SET);
    ssize_t at_five = read(fd, again, sizeof again);
    printf("read after lseek agrees: %s\n",
           at_five > 0 && memcmp(again, maps + 5, (size_t)at_five) == 0 ? "yes" : "no");
    close(fd);
    return len;
}

struct range {
    unsigned long start, end;
    char perms[5];
    char name[4096];
};

/* Parses the line at `text`; 0 when it is not in Linux's format. */
static int parse(const char *text, struct range *r) {
    char line[4200];
    size_t length = strcspn(text, "\n");
    if (length >= sizeof line)
        return 0;
    memcpy(line, text, length);
    line[length] = 0;
    unsigned long offset, inode;
    unsigned major, minor;
    int name_at = -1;
    if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &r->start, &r->end, r->perms, &offset,
               &major, &minor, &inode, &name_at) != 7)
        return 0;
    if (r->start % 4096 || r->end % 4096 || r->start >= r->end)
        return 0;
    r->name[0] = 0;
    if (line[name_at]) {
        if (name_at != 73)
            return 0;
        strcpy(r->name, line + name_at);
    }
    return 1;
}

/* The range holding `addr`, its name in `name`; 0 when none does. */
static int find(unsigned long addr, char *name, char *perms, unsigned long *end) {
    for (char *line = maps; *line; line = strchr(line, '\n') + 1) {
        struct range r;
        if (parse(line, &r) && r.start <= addr && addr < r.end) {
            strcpy(name, r.name);
            strcpy(perms, r.perms);
            if (end)
                *end = r.end;
            return 1;
        }
    }
    return 0;
}

/* The end of [heap], 0 when there is none. */
static unsigned long heap_end(void) {
    for (char *line = maps; *line; line = strchr(line, '\n') + 1) {
        struct range r;
        if (parse(line, &r) && strcmp(r.name, "[heap]") == 0)
            return r.end;
    }
    return 0;
}

int main(int argc, char **argv) {
    size_t len = read_maps(1);
    int lines = 0, good = 1, named_libraries = 0;
    unsigned long previous_end = 0;
    char exe[4096] = {0};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0)
        return 1;
    for (char *line = maps; *line; line = strchr(line, '\n') + 1) {
        struct range r;
        lines++;
        if (!parse(line, &r) || r.start < previous_end)
            good = 0;
        previous_end = r.end;
        if (strstr(r.name, ".so"))
            named_libraries = 1;
    }
    printf("every line parses: %s (%s)\n", good && lines > 3 ? "yes" : "no",
           maps[len - 1] == '\n' ? "ends with a newline" : "no newline");
    printf("a shared library is named: %s\n", named_libraries ? "yes" : "no");

    int local = 0;
    char name[4096], perms[5];
    unsigned long end;
    printf("[stack] holds a local: %s\n",
           find((unsigned long)&local, name, perms, NULL) && strcmp(name, "[stack]") == 0
               ? "yes"
               : "no");
    printf("main's code is named by /proc/self/exe: %s\n",
           find((unsigned long)&main, name, perms, NULL) && strcmp(name, exe) == 0 &&
                   perms[2] == 'x'
               ? "yes"
               : "no");

    unsigned long before = heap_end();
    /* Below the mmap threshold, more than the first heap holds. */
    char *volatile block = 0;
    for (int i = 0; i < 8; i++) {
        block = malloc(100000);
        block[0] = 1;
    }
    read_maps(0);
    unsigned long after = heap_end();
    printf("[heap] grows after malloc: %s\n", after > before ? "yes" : "no");
    printf("the block is in [heap]: %s\n",
           find((unsigned long)block, name, perms, &end) && strcmp(name, "[heap]") == 0 ? "yes"
                                                                                          : "no");

    pthread_attr_t attr;
    void *stack;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
        pthread_attr_getstack(&attr, &stack, &size) != 0)
        return 1;
    unsigned long low = (unsigned long)stack, here = (unsigned long)&local;
    printf("main thread's stack holds a local: %s\n",
           low <= here && here < low + size ? "yes" : "no");
    printf("main thread's stack is at least 1 MiB: %s\n", size >= (1 << 20) ? "yes" : "no");

    if (argc > 1) {
        FILE *out = fopen(argv[1], "w");
        if (!out || fwrite(maps, 1, strlen(maps), out) != strlen(maps) || fclose(out))
            return 1;
    }
    return 0;
}
