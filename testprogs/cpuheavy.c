/* cpuheavy: the benchmark program — recursion, sorting with a callback, string
 * processing and a compression loop.
 *
 * Usage: cpuheavy [rounds] [fib|sort|text|all]   (default: 1 all)
 * Prints one line per part with a checksum and exits 0 (1 if a self-check fails).
 * Instructions per round (Callgrind Ir, -O2): fib 8.9 M; sort 459 M with musl
 * (its smoothsort qsort) and 105 M with glibc; text 16 M (musl) / 13 M (glibc).
 * The cost grows linearly with rounds, which the scaling benchmark uses
 * (`cpuheavy 11 fib` ≈ 10^8 … `cpuheavy 1123 fib` ≈ 10^10 instructions).
 *
 * Parts, each repeated `rounds` times:
 *   fib:  fib(27), 635 621 calls of fib (KEEP/OPAQUE keep them all real calls).
 *   sort: qsort of 200 000 LCG integers with compare_u32 as the callback.
 *   text: build 256 KiB of LCG "words", count words and letters, compress it with
 *         a small LZ77 (lz_compress), decompress (lz_decompress) and verify.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "testprog.h"

#define SORT_COUNT 200000
#define TEXT_SIZE (256 * 1024)
#define LZ_WINDOW 4096
#define LZ_MIN_MATCH 4
#define LZ_MAX_MATCH 130
#define LZ_HASH_BITS 12

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    long sum = fib(n - 1) + fib(n - 2);
    OPAQUE(sum);
    return sum;
}

KEEP int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

KEEP uint32_t sort_part(uint32_t seed)
{
    uint32_t *values = malloc(sizeof *values * SORT_COUNT);
    if (values == NULL)
        return 0;
    for (int i = 0; i < SORT_COUNT; i++)
        values[i] = lcg_next(&seed);
    qsort(values, SORT_COUNT, sizeof *values, compare_u32);
    uint32_t hash = 2166136261u;
    for (int i = 0; i < SORT_COUNT; i++) {
        if (i > 0 && values[i - 1] > values[i])
            hash = 0;
        hash = (hash ^ values[i]) * 16777619u;
    }
    free(values);
    return hash;
}

/* Fill `text` with lowercase words of 1-9 letters separated by single spaces,
 * drawn from a small vocabulary so the compressor finds repeats. */
KEEP void make_text(char *text, size_t size, uint32_t seed)
{
    static const char *const vocabulary[] = {
        "emulator", "call", "tree", "profile", "instruction", "block", "return",
        "stack", "frame", "x", "recursion", "cost", "inclusive", "self", "graph",
        "musl", "glibc", "static", "binary", "kernel", "syscall", "page",
    };
    const size_t words = sizeof vocabulary / sizeof vocabulary[0];
    size_t pos = 0;
    while (pos + 16 < size) {
        const char *word = vocabulary[lcg_next(&seed) % words];
        size_t len = strlen(word);
        memcpy(text + pos, word, len);
        pos += len;
        text[pos++] = (lcg_next(&seed) % 13 == 0) ? '\n' : ' ';
    }
    memset(text + pos, ' ', size - pos - 1);
    text[size - 1] = '\0';
}

KEEP uint32_t count_words(const char *text, uint32_t letters[26])
{
    uint32_t words = 0;
    int in_word = 0;
    for (const char *p = text; *p; p++) {
        if (*p >= 'a' && *p <= 'z') {
            letters[*p - 'a']++;
            if (!in_word)
                words++;
            in_word = 1;
        } else {
            in_word = 0;
        }
    }
    return words;
}

/* Token stream: 0x00 len byte… (literal run, len 1-255) or
 * 0x01 offset_hi offset_lo len (match of len + LZ_MIN_MATCH bytes). */
KEEP size_t lz_compress(const unsigned char *in, size_t size, unsigned char *out)
{
    static uint32_t table[1 << LZ_HASH_BITS];
    memset(table, 0xff, sizeof table);
    size_t pos = 0, written = 0, literal_start = 0;
    while (pos < size) {
        size_t best = 0, best_offset = 0;
        if (pos + LZ_MIN_MATCH <= size) {
            uint32_t key = (uint32_t)in[pos] | (uint32_t)in[pos + 1] << 8 |
                           (uint32_t)in[pos + 2] << 16 | (uint32_t)in[pos + 3] << 24;
            uint32_t slot = (key * 2654435761u) >> (32 - LZ_HASH_BITS);
            uint32_t candidate = table[slot];
            table[slot] = (uint32_t)pos;
            if (candidate < pos && pos - candidate < LZ_WINDOW) {
                size_t len = 0;
                while (pos + len < size && len < LZ_MAX_MATCH && in[candidate + len] == in[pos + len])
                    len++;
                if (len >= LZ_MIN_MATCH) {
                    best = len;
                    best_offset = pos - candidate;
                }
            }
        }
        if (best == 0 && pos - literal_start < 255) {
            pos++;
            continue;
        }
        if (pos > literal_start) {
            out[written++] = 0;
            out[written++] = (unsigned char)(pos - literal_start);
            memcpy(out + written, in + literal_start, pos - literal_start);
            written += pos - literal_start;
        }
        if (best > 0) {
            out[written++] = 1;
            out[written++] = (unsigned char)(best_offset >> 8);
            out[written++] = (unsigned char)best_offset;
            out[written++] = (unsigned char)(best - LZ_MIN_MATCH);
            pos += best;
        }
        literal_start = pos;
    }
    if (pos > literal_start) {
        out[written++] = 0;
        out[written++] = (unsigned char)(pos - literal_start);
        memcpy(out + written, in + literal_start, pos - literal_start);
        written += pos - literal_start;
    }
    return written;
}

KEEP size_t lz_decompress(const unsigned char *in, size_t size, unsigned char *out)
{
    size_t pos = 0, written = 0;
    while (pos < size) {
        if (in[pos] == 0) {
            size_t len = in[pos + 1];
            memcpy(out + written, in + pos + 2, len);
            written += len;
            pos += 2 + len;
        } else {
            size_t offset = (size_t)in[pos + 1] << 8 | in[pos + 2];
            size_t len = (size_t)in[pos + 3] + LZ_MIN_MATCH;
            for (size_t i = 0; i < len; i++, written++)
                out[written] = out[written - offset];
            pos += 4;
        }
    }
    return written;
}

KEEP int text_part(uint32_t seed, uint32_t *words, size_t *compressed, uint32_t *hash)
{
    char *text = malloc(TEXT_SIZE);
    unsigned char *packed = malloc(TEXT_SIZE * 2);
    unsigned char *unpacked = malloc(TEXT_SIZE);
    if (text == NULL || packed == NULL || unpacked == NULL)
        return 0;
    make_text(text, TEXT_SIZE, seed);
    uint32_t letters[26] = { 0 };
    *words = count_words(text, letters);
    *compressed = lz_compress((const unsigned char *)text, TEXT_SIZE, packed);
    size_t restored = lz_decompress(packed, *compressed, unpacked);
    int ok = restored == TEXT_SIZE && memcmp(text, unpacked, TEXT_SIZE) == 0;
    *hash = fnv1a(fnv1a(2166136261u, letters, sizeof letters), packed, *compressed);
    free(unpacked);
    free(packed);
    free(text);
    return ok;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
    const char *part = argc > 2 ? argv[2] : "all";
    int all = strcmp(part, "all") == 0, ok = 1;
    if (!all && strcmp(part, "fib") != 0 && strcmp(part, "sort") != 0 && strcmp(part, "text") != 0) {
        fprintf(stderr, "usage: cpuheavy [rounds] [fib|sort|text|all]\n");
        return 2;
    }
    for (long round = 0; round < rounds; round++) {
        uint32_t seed = 1000 + (uint32_t)round;
        if (all || strcmp(part, "fib") == 0)
            printf("round %ld fib(27) = %ld\n", round, fib(27));
        if (all || strcmp(part, "sort") == 0)
            printf("round %ld sort: checksum %08x\n", round, (unsigned)sort_part(seed));
        if (all || strcmp(part, "text") == 0) {
            uint32_t words = 0, hash = 0;
            size_t compressed = 0;
            int text_ok = text_part(seed, &words, &compressed, &hash);
            ok = ok && text_ok;
            printf("round %ld text: %u words, %zu -> %zu bytes, roundtrip %s, checksum %08x\n",
                   round, (unsigned)words, (size_t)TEXT_SIZE, compressed,
                   text_ok ? "ok" : "FAILED", (unsigned)hash);
        }
    }
    return ok ? 0 : 1;
}
