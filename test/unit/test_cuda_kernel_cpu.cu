/*
 * test_cuda_kernel_cpu.cu: the reduction and copy kernels' per-thread code
 * (nvf_cuda_kernel_body.cuh), run on the CPU: built by nvcc as host code, every thread of a grid
 * executed in turn. Threads own disjoint elements, so running them one after another computes
 * what the GPU computes; what this checks is the index arithmetic (vectors, tails, grid stride,
 * in place) and the operators, for every (type, op) pair the device supports, against the tests'
 * own reference, bit for bit (random inputs: the same source order is required).
 *
 * Needs no GPU and no driver. The same code on a GPU is checked by test/gpu/gpu_blocks.
 */
#include "coll_nvfabric/cuda/nvf_cuda_kernel_body.cuh"

extern "C" {
#include "common/nvf_ref.h"
}
#include "nvf_test.h"

#include <string.h>

static unsigned long long seed = 11;

template <typename Op>
static void run_case(nvf_dtype_t dt, nvf_op_t op, size_t count, int nsrc, size_t skew,
                     bool in_place, uint64_t nthreads)
{
    typedef typename Op::type T;
    const size_t es = sizeof(T), bytes = count * es;
    char *buf[NVF_CUDA_ARGS_MAX_SOURCES + 1];
    void *in[NVF_CUDA_ARGS_MAX_SOURCES];
    nvf_cuda_reduce_args_t a;
    memset(&a, 0, sizeof(a));
    unsigned long long seed0 = seed;
    uintptr_t align = 0;
    for (int k = 0; k <= nsrc; k++)
        buf[k] = (char *)aligned_alloc(64, (bytes + 64 + 63) / 64 * 64);
    for (int k = 0; k < nsrc; k++) {
        in[k] = malloc(bytes);
        nvf_ref_fill(dt, op, NVF_REF_RANDOM, in[k], count, seed++);
        memcpy(buf[k] + skew, in[k], bytes);
        a.src[k] = buf[k] + skew;
        align |= (uintptr_t)a.src[k];
    }
    void *ref = malloc(bytes);
    nvf_ref_reduce(dt, op, ref, in, nsrc, count);
    a.out = in_place ? buf[0] + skew : buf[nsrc] + skew;
    if (!in_place)
        memset(a.out, 0xA5, bytes);
    align |= (uintptr_t)a.out;
    a.count = count;
    a.nsrc = (uint32_t)nsrc;
    a.vec = (align & 15u) == 0;
    for (uint64_t tid = 0; tid < nthreads; tid++)
        nvf_cuda_reduce_range<Op>(a, tid, nthreads);
    size_t bad = nvf_ref_first_diff(dt, a.out, ref, count, true);
    if (bad < count) {
        char got[96], want[96];
        nvf_ref_format(dt, a.out, bad, got, sizeof(got));
        nvf_ref_format(dt, ref, bad, want, sizeof(want));
        CHECK(0,
              "%s %s count %zu nsrc %d skew %zu %s threads %llu seed %llu: element %zu is %s, "
              "expected %s",
              nvf_dtype_name(dt), nvf_op_name(op), count, nsrc, skew, in_place ? "in place" : "",
              (unsigned long long)nthreads, seed0, bad, got, want);
    } else {
        CHECK(1, "ok");
    }
    for (int k = 0; k <= nsrc; k++)
        free(buf[k]);
    for (int k = 0; k < nsrc; k++)
        free(in[k]);
    free(ref);
}

template <typename Op> static void run_pair(nvf_dtype_t dt, nvf_op_t op)
{
    const size_t es = sizeof(typename Op::type);
    CHECK(es == nvf_dtype_size(dt), "%s: device element %zu bytes, host %zu", nvf_dtype_name(dt),
          es, nvf_dtype_size(dt));
    const size_t counts[] = {1, 2, 15, 16, 17, 255, 1000, 4099};
    const int nsrcs[] = {1, 3, 16};
    const uint64_t threads[] = {1, 7, 1536};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (size_t s = 0; s < sizeof(nsrcs) / sizeof(nsrcs[0]); s++)
            for (int skew = 0; skew < 2; skew++)
                for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++)
                    run_case<Op>(dt, op, counts[c], nsrcs[s], skew ? (es < 16 ? es : 8) : 0,
                                 (c + t) % 2 == 1, threads[t]);
}

template <typename U> static void run_copy(size_t n, uint64_t nthreads)
{
    U *src = (U *)aligned_alloc(64, (n * sizeof(U) + 63) / 64 * 64 + 64);
    U *dst = (U *)aligned_alloc(64, (n * sizeof(U) + 63) / 64 * 64 + 64);
    for (size_t i = 0; i < n * sizeof(U); i++)
        ((unsigned char *)src)[i] = (unsigned char)(i * 13 + 1);
    memset(dst, 0, n * sizeof(U));
    nvf_cuda_copy_args_t a = {dst, src, n};
    for (uint64_t tid = 0; tid < nthreads; tid++)
        nvf_cuda_copy_range<U>(a, tid, nthreads);
    CHECK(memcmp(dst, src, n * sizeof(U)) == 0, "copy of %zu units of %zu bytes, %llu threads", n,
          sizeof(U), (unsigned long long)nthreads);
    free(src);
    free(dst);
}

int main(void)
{
    int pairs = 0;
#define NVF_RUN_PAIR(OP, ID, T, FN)                                                                \
    run_pair<nvf_cuda_op_##OP##_##ID>(NVF_DTYPE_##ID, NVF_OP_##OP);                                \
    pairs++;
    NVF_FOREACH_OP_DTYPE_DEVICE(NVF_RUN_PAIR)
#undef NVF_RUN_PAIR
    CHECK(pairs == 105, "%d pairs", pairs);
    const size_t ns[] = {1, 3, 1000};
    const uint64_t th[] = {1, 5, 2048};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            run_copy<uint8_t>(ns[i], th[j]);
            run_copy<uint32_t>(ns[i], th[j]);
            run_copy<unsigned long long>(ns[i], th[j]);
            run_copy<uint4>(ns[i], th[j]);
        }
    return nvf_test_finish("test_cuda_kernel_cpu");
}
