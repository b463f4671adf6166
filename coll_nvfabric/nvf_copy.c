/*
 * nvf_copy.c: the streaming copy (see nvf_copy.h). x86-64: SSE2 non-temporal 16-byte stores
 * (every x86-64 CPU has them), the destination aligned to 16 bytes first; elsewhere memcpy.
 * And the last-level cache size that decides where streaming pays (Linux's sysfs, else glibc).
 */
#include "nvf_copy.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first line of CPU 0's cache `index`'s attribute `name` in sysfs ("" if absent). */
static void cache_attr(int index, const char *name, char *buf, size_t len)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, name);
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f != NULL && fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    if (f != NULL)
        fclose(f);
}

/* The largest data or unified cache of CPU 0 that Linux lists (sysfs), in bytes; 0 if none. */
static size_t sysfs_llc_bytes(void)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; i++) {
        char level_s[16], type[32], size_s[32];
        int level = 0;
        unsigned long kib = 0;
        cache_attr(i, "level", level_s, sizeof(level_s));
        if (level_s[0] == '\0')
            break;
        cache_attr(i, "type", type, sizeof(type));
        cache_attr(i, "size", size_s, sizeof(size_s));
        const bool ok = sscanf(level_s, "%d", &level) == 1 && sscanf(size_s, "%luK", &kib) == 1;
        if (ok && strncmp(type, "Instruction", 11) != 0 && level > best_level) {
            best_level = level;
            best = (size_t)kib * 1024;
        }
    }
    return best;
}

size_t nvf_llc_bytes(void)
{
    /* sysfs first: glibc's sysconf reports the whole package's L3 on some AMD CPUs (320 MiB on
     * the project's EPYC VM, whose cores share 32 MiB) */
    size_t b = sysfs_llc_bytes();
    if (b != 0)
        return b;
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v <= 0)
        v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? (size_t)v : 0;
}

#if defined(__x86_64__)
#include <emmintrin.h>

/* Below this a streaming copy saves nothing (the lines are few, the fence costs). */
#define NVF_STREAM_MIN_BYTES 256

void nvf_copy_stream(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (n < NVF_STREAM_MIN_BYTES) {
        memcpy(d, s, n);
        return;
    }
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    for (; i + 16 <= n; i += 16)
        _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    memcpy(d + i, s + i, n - i);
}

void nvf_copy_stream_fence(void)
{
    _mm_sfence();
}

#else

void nvf_copy_stream(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

void nvf_copy_stream_fence(void) {}

#endif
