/*
 * nvf_cuda_flags.cuh: device-side primitives for ordering between processes: 64-bit flags stored
 * with release and loaded with acquire semantics at system scope (PTX memory model, sm_70+),
 * usable on IPC-mapped device memory of a peer and on device-mapped host memory (generic
 * addresses), plus the GPU's nanosecond clock for timeouts.
 *
 * Device code only (include from .cu files). Must not spin without a bound: callers pass a
 * timeout.
 */
#ifndef NVF_CUDA_FLAGS_CUH
#define NVF_CUDA_FLAGS_CUH

#include <stdint.h>

/* *p = v, after every memory operation before it (in this thread, and those it has observed)
 * is visible to every observer in the system. */
static __device__ __forceinline__ void nvf_cuda_store_release_sys(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* *p, before any memory operation after it. */
static __device__ __forceinline__ uint64_t nvf_cuda_load_acquire_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void nvf_cuda_store_relaxed_sys_u32(uint32_t *p, uint32_t v)
{
    asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

static __device__ __forceinline__ uint64_t nvf_cuda_globaltimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Whether flag >= value in wrap-around order (as cuStreamWaitValue64's GEQ). */
static __device__ __forceinline__ bool nvf_cuda_flag_reached(uint64_t flag, uint64_t value)
{
    return (int64_t)(flag - value) >= 0;
}

/* Polls *flag until it reaches value (true), or timeout_ns elapse (false). One thread. */
static __device__ __forceinline__ bool nvf_cuda_flag_wait_geq(const uint64_t *flag, uint64_t value,
                                                              uint64_t timeout_ns)
{
    if (nvf_cuda_flag_reached(nvf_cuda_load_acquire_sys(flag), value))
        return true;
    const uint64_t start = nvf_cuda_globaltimer();
    unsigned backoff = 32;
    for (;;) {
        __nanosleep(backoff);
        if (backoff < 1024)
            backoff *= 2;
        if (nvf_cuda_flag_reached(nvf_cuda_load_acquire_sys(flag), value))
            return true;
        if (nvf_cuda_globaltimer() - start > timeout_ns)
            return false;
    }
}

#endif
