/*
 * nvf_pair_write_read.c: what a two-rank shared-memory allreduce's traffic costs on this host,
 * split into its writes and its reads. Two processes (fork) share a window of two halves of
 * SIZE bytes; each iteration, each writes its private SIZE bytes into its own half (lines the
 * other read in the iteration before), both meet, each reads the other's half into its private
 * buffer, both meet. Prints the mean write and read times and the line round trip measured
 * first (the machine's state). With "nt", the writes use non-temporal stores (x86 SSE2; memcpy
 * elsewhere).
 *
 *   bench/nvf_pair_write_read [SIZE in KiB, default 1024] [nt]
 *
 * Not an MPI program, and no part of nvfabric: a probe for bench/results (see
 * pair-write-read-2026-12-08-amd.txt).
 */

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ITERS 100
#define SKIP 5
#define LINE_LONGS 8 /* one 64-byte line per flag */

static _Atomic long *flags;
static int me;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void wait_for(_Atomic long *v, long want)
{
    unsigned spins = 0;
    while (atomic_load_explicit(v, memory_order_acquire) < want)
        if (++spins == 1u << 14) {
            spins = 0;
            sched_yield();
        }
}

/* both processes at step s */
static void meet(long s)
{
    atomic_store_explicit(&flags[me * LINE_LONGS], s, memory_order_release);
    wait_for(&flags[(1 - me) * LINE_LONGS], s);
}

static void write_half(void *dst, const void *src, size_t n, int nt)
{
#if defined(__SSE2__)
    if (nt) {
        __m128i *d = dst;
        const __m128i *s = src;
        for (size_t i = 0; i < n / 16; i++)
            _mm_stream_si128(d + i, _mm_load_si128(s + i));
        _mm_sfence();
        return;
    }
#endif
    (void)nt;
    memcpy(dst, src, n);
}

int main(int argc, char **argv)
{
    const size_t size = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 10;
    const int nt = argc > 2 && strcmp(argv[2], "nt") == 0;
    if (size == 0 || size % 64 != 0) {
        fprintf(stderr, "usage: %s [SIZE in KiB] [nt]\n", argv[0]);
        return 2;
    }
    char *window =
        mmap(NULL, 2 * size + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (window == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    flags = (_Atomic long *)(void *)(window + 2 * size);
    const pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    me = child == 0;
    char *mine = aligned_alloc(64, size);
    if (mine == NULL)
        return 1;
    memset(mine, me + 1, size);
    /* the line round trip: the parent makes the counter odd, the child even again */
    _Atomic long *counter = &flags[2 * LINE_LONGS];
    const int rounds = 20000;
    const double t_rtt = now_us();
    for (long i = 1; i <= rounds; i++) {
        if (me) {
            wait_for(counter, 2 * i - 1);
            atomic_store_explicit(counter, 2 * i, memory_order_release);
        } else {
            atomic_store_explicit(counter, 2 * i - 1, memory_order_release);
            wait_for(counter, 2 * i);
        }
    }
    const double rtt_ns = (now_us() - t_rtt) * 1e3 / rounds;
    double write_us = 0, read_us = 0;
    long step = 0;
    for (int i = 1; i <= ITERS; i++) {
        mine[i % size]++; /* fresh data */
        meet(++step);
        const double t0 = now_us();
        write_half(window + (size_t)me * size, mine, size, nt);
        meet(++step);
        const double t1 = now_us();
        memcpy(mine, window + (size_t)(1 - me) * size, size);
        meet(++step);
        const double t2 = now_us();
        if (i > SKIP) {
            write_us += t1 - t0;
            read_us += t2 - t1;
        }
    }
    if (me == 0) {
        printf("rtt %5.0f ns  %-6s %6zu KiB: write %8.1f us, read %8.1f us (means of %d)\n", rtt_ns,
               nt ? "nt" : "memcpy", size >> 10, write_us / (ITERS - SKIP),
               read_us / (ITERS - SKIP), ITERS - SKIP);
        waitpid(child, NULL, 0);
    }
    free(mine);
    return 0;
}
