/*
 * nvf_kernels.cu: nvfabric's kernels, compiled by nvcc into a fatbin that is embedded in the
 * engine library (nvf_cuda_fatbin.S) and loaded through the driver API (cuModuleLoadData): one
 * reduction kernel per (op, type) pair of NVF_FOREACH_OP_DTYPE_DEVICE, generated, never written
 * by hand; the flag write / wait kernels; copy kernels by unit size.
 *
 * Every kernel is extern "C" with a name the launcher builds from the same lists
 * (nvf_cuda_kernel_args.h). Built with -fmad=false: floating point rounds as on the host.
 * Must not use the CUDA runtime (nothing links libcudart) or device-side malloc/printf.
 */
#include "nvf_cuda_flags.cuh"
#include "nvf_cuda_kernel_body.cuh"

#define NVF_CUDA_TID() ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x)
#define NVF_CUDA_NTHREADS() ((uint64_t)gridDim.x * blockDim.x)

#define NVF_CUDA_REDUCE_KERNEL(OP, ID, T, FN)                                                      \
    extern "C" __global__ void __launch_bounds__(NVF_CUDA_BLOCK_THREADS)                           \
        nvf_cuda_reduce_##OP##_##ID(const __grid_constant__ nvf_cuda_reduce_args_t a)              \
    {                                                                                              \
        nvf_cuda_reduce_range<nvf_cuda_op_##OP##_##ID>(a, NVF_CUDA_TID(), NVF_CUDA_NTHREADS());    \
    }
NVF_FOREACH_OP_DTYPE_DEVICE(NVF_CUDA_REDUCE_KERNEL)
#undef NVF_CUDA_REDUCE_KERNEL

#define NVF_CUDA_COPY_KERNEL(NAME, U)                                                              \
    extern "C" __global__ void __launch_bounds__(NVF_CUDA_BLOCK_THREADS)                           \
        NAME(const __grid_constant__ nvf_cuda_copy_args_t a)                                       \
    {                                                                                              \
        nvf_cuda_copy_range<U>(a, NVF_CUDA_TID(), NVF_CUDA_NTHREADS());                            \
    }
NVF_CUDA_COPY_KERNEL(nvf_cuda_copy_1, uint8_t)
NVF_CUDA_COPY_KERNEL(nvf_cuda_copy_4, uint32_t)
NVF_CUDA_COPY_KERNEL(nvf_cuda_copy_8, unsigned long long)
NVF_CUDA_COPY_KERNEL(nvf_cuda_copy_16, uint4)
#undef NVF_CUDA_COPY_KERNEL

/* One thread: the work before this kernel on the stream has completed (stream order); the fence
 * and the release store make it visible system-wide before the flag. */
extern "C" __global__ void __launch_bounds__(NVF_CUDA_BLOCK_THREADS)
    nvf_cuda_flag_write(const __grid_constant__ nvf_cuda_write_args_t a)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        __threadfence_system();
        nvf_cuda_store_release_sys(a.flag, a.value);
    }
}

/* One thread: the kernels after this one on the stream start only when it returns, after the
 * acquire load saw the flag; on timeout it records the failure for nvf_cuda_stream_sync. */
extern "C" __global__ void __launch_bounds__(NVF_CUDA_BLOCK_THREADS)
    nvf_cuda_flag_wait(const __grid_constant__ nvf_cuda_wait_args_t a)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        if (!nvf_cuda_flag_wait_geq(a.flag, a.value, a.timeout_ns)) {
            nvf_cuda_store_relaxed_sys_u32(a.status, 1u);
            __threadfence_system();
        }
    }
}
