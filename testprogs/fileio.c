/* fileio: write a file, read it back, print a checksum.
 *
 * Usage: fileio [path]   (default path: emuprof-fileio.tmp in the current directory)
 * Prints "wrote 65536 bytes, read 65536 bytes, pread ok, checksum …" and exits 0;
 * the file is removed afterwards. On an I/O error it names the failing call on
 * stderr and exits 1.
 *
 * Writes with stdio (fopen/fwrite/fclose), reads with open/fstat/read/lseek/pread/
 * close and removes with unlink, so it covers the usual file syscalls. The output
 * does not depend on the path, the environment or the host.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testprog.h"

#define FILE_SIZE 65536
#define CHUNK 4096

static int fail(const char *what)
{
    perror(what);
    return 1;
}

KEEP int write_pattern(const char *path)
{
    FILE *out = fopen(path, "wb");
    if (out == NULL)
        return fail("fopen");
    uint32_t state = 42;
    unsigned char chunk[CHUNK];
    for (int done = 0; done < FILE_SIZE; done += CHUNK) {
        for (int i = 0; i < CHUNK; i++)
            chunk[i] = (unsigned char)(lcg_next(&state) >> 24);
        if (fwrite(chunk, 1, CHUNK, out) != CHUNK)
            return fail("fwrite");
    }
    if (fclose(out) != 0)
        return fail("fclose");
    return 0;
}

KEEP int read_back(const char *path, uint32_t *checksum, long *size, int *pread_ok)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return fail("open");
    struct stat st;
    if (fstat(fd, &st) != 0)
        return fail("fstat");
    *size = (long)st.st_size;
    unsigned char chunk[CHUNK];
    uint32_t hash = 2166136261u;
    ssize_t got;
    while ((got = read(fd, chunk, CHUNK)) > 0)
        hash = fnv1a(hash, chunk, (unsigned long)got);
    if (got < 0)
        return fail("read");
    *checksum = hash;

    unsigned char first[16], again[16];
    if (lseek(fd, 0, SEEK_SET) != 0 || read(fd, first, sizeof first) != sizeof first)
        return fail("lseek/read");
    if (pread(fd, again, sizeof again, 0) != sizeof again)
        return fail("pread");
    *pread_ok = 1;
    for (unsigned i = 0; i < sizeof first; i++)
        if (first[i] != again[i])
            *pread_ok = 0;
    if (close(fd) != 0)
        return fail("close");
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "emuprof-fileio.tmp";
    if (write_pattern(path) != 0)
        return 1;
    uint32_t checksum = 0;
    long size = 0;
    int pread_ok = 0;
    if (read_back(path, &checksum, &size, &pread_ok) != 0)
        return 1;
    if (unlink(path) != 0)
        return fail("unlink");
    printf("wrote %d bytes, read %ld bytes, pread %s, checksum %08x\n", FILE_SIZE, size,
           pread_ok ? "ok" : "MISMATCH", (unsigned)checksum);
    return 0;
}
