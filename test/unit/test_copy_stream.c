/*
 * test_copy_stream.c: the streaming copy (nvf_copy_stream) copies exactly its bytes, whatever
 * the alignment of either side and the length (below the streaming size, across the 16-byte
 * head and tail, several MiB), and writes nothing outside the destination range; the
 * last-level cache size it is chosen by is plausible.
 */
#include "coll_nvfabric/nvf_copy.h"
#include "nvf_test.h"

#include <stdint.h>
#include <string.h>

#define GUARD 64
#define POISON 0x5A

static unsigned long long seed = 11;

static void check_copy(size_t dst_off, size_t src_off, size_t n)
{
    unsigned char *src = malloc(n + src_off + 1), *dst = malloc(n + dst_off + 2 * GUARD);
    if (src == NULL || dst == NULL) {
        CHECK(0, "out of memory for %zu bytes", n);
        free(src);
        free(dst);
        return;
    }
    for (size_t i = 0; i < n + src_off + 1; i++)
        src[i] = (unsigned char)(nvf_test_rand(&seed) >> 56);
    memset(dst, POISON, n + dst_off + 2 * GUARD);
    unsigned char *d = dst + GUARD + dst_off;
    nvf_copy_stream(d, src + src_off, n);
    nvf_copy_stream_fence();
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (d[i] != src[src_off + i])
            bad = i;
    CHECK(bad == n, "n=%zu dst%%64=%zu src%%64=%zu: byte %zu is %#x, source %#x", n,
          (size_t)((uintptr_t)d & 63), (size_t)((uintptr_t)(src + src_off) & 63), bad,
          bad < n ? d[bad] : 0, bad < n ? src[src_off + bad] : 0);
    size_t outside = SIZE_MAX;
    for (size_t i = 0; i < GUARD + dst_off && outside == SIZE_MAX; i++)
        if (dst[i] != POISON)
            outside = i;
    for (size_t i = GUARD + dst_off + n; i < n + dst_off + 2 * GUARD && outside == SIZE_MAX; i++)
        if (dst[i] != POISON)
            outside = i;
    CHECK(outside == SIZE_MAX, "n=%zu dst offset %zu: byte %zu outside the range written", n,
          dst_off, outside);
    free(src);
    free(dst);
}

int main(void)
{
    const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 4096, 8191, 65537};
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
        for (size_t doff = 0; doff < 32; doff += 3)
            for (size_t soff = 0; soff < 32; soff += 5)
                check_copy(doff, soff, lens[l]);
    check_copy(0, 0, (5u << 20) + 13);
    check_copy(7, 1, 3u << 20);
    /* sysconf's answer: unknown (0), or at least a plausible cache of 64 KiB */
    size_t llc = nvf_llc_bytes();
    CHECK(llc == 0 || llc >= 65536, "last-level cache of %zu bytes", llc);
    return nvf_test_finish("test_copy_stream");
}
