/*
 * nvf_cuda_kernel_body.cuh: what one thread of a reduction or copy kernel does, written once as
 * __host__ __device__ code so that the unit tests run the very same index arithmetic on the CPU
 * (test/unit/test_cuda_kernel_cpu.cu) that the GPU runs (nvf_kernels.cu).
 *
 * Thread `tid` of `nthreads` takes vectors (and then elements) tid, tid + nthreads, ...; each
 * output element is reduced from its sources in source order, so the result does not depend on
 * the grid. The element arithmetic is nvf_op_defs.h's, compiled with -fmad=false on the device.
 * Must not use shared memory, atomics or anything that only exists on one side.
 */
#ifndef NVF_CUDA_KERNEL_BODY_CUH
#define NVF_CUDA_KERNEL_BODY_CUH

/* nvf_op_defs.h uses the <stdint.h> types without including it when compiled as CUDA */
#include <stdint.h>

#include "../nvf_op_defs.h"
#include "nvf_cuda_kernel_args.h"

#define NVF_CUDA_HD __host__ __device__ __forceinline__

/* One operator as a type, for templates: T apply(T, T) calls nvf_op_defs.h's function. */
#define NVF_CUDA_OP_TYPE(OP, ID, T, FN)                                                            \
    struct nvf_cuda_op_##OP##_##ID {                                                               \
        typedef T type;                                                                            \
        static NVF_CUDA_HD T apply(T a, T b)                                                       \
        {                                                                                          \
            return FN(a, b);                                                                       \
        }                                                                                          \
    };
NVF_FOREACH_OP_DTYPE_DEVICE(NVF_CUDA_OP_TYPE)
#undef NVF_CUDA_OP_TYPE

/* 16 bytes seen as a vector load and as elements (every element size divides 16). */
template <typename T> union nvf_cuda_vec16 {
    uint4 v;
    T e[16 / sizeof(T)];
};

template <typename Op>
static NVF_CUDA_HD void nvf_cuda_reduce_range(const nvf_cuda_reduce_args_t &a, uint64_t tid,
                                              uint64_t nthreads)
{
    typedef typename Op::type T;
    static_assert(16 % sizeof(T) == 0, "element size must divide 16");
    const uint64_t n = a.count;
    const unsigned nsrc = a.nsrc;
    uint64_t head = 0;
    if (a.vec) {
        constexpr unsigned per = 16 / sizeof(T);
        const uint64_t nvec = n / per;
        uint4 *out = (uint4 *)a.out;
        for (uint64_t v = tid; v < nvec; v += nthreads) {
            nvf_cuda_vec16<T> acc, x;
            acc.v = ((const uint4 *)a.src[0])[v];
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
            for (unsigned k = 1; k < nsrc; k++) {
                x.v = ((const uint4 *)a.src[k])[v];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
                for (unsigned e = 0; e < per; e++)
                    acc.e[e] = Op::apply(acc.e[e], x.e[e]);
            }
            out[v] = acc.v;
        }
        head = nvec * per;
    }
    T *out = (T *)a.out;
    for (uint64_t i = head + tid; i < n; i += nthreads) {
        T acc = ((const T *)a.src[0])[i];
        for (unsigned k = 1; k < nsrc; k++)
            acc = Op::apply(acc, ((const T *)a.src[k])[i]);
        out[i] = acc;
    }
}

/* U: the unit (uint8_t, uint32_t, unsigned long long or uint4). */
template <typename U>
static NVF_CUDA_HD void nvf_cuda_copy_range(const nvf_cuda_copy_args_t &a, uint64_t tid,
                                            uint64_t nthreads)
{
    U *dst = (U *)a.dst;
    const U *src = (const U *)a.src;
    for (uint64_t i = tid; i < a.n; i += nthreads)
        dst[i] = src[i];
}

#endif
