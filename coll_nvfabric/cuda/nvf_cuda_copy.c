/*
 * nvf_cuda_copy.c: asynchronous copies on nvfabric's stream of a device (copy engines, through
 * cuMemcpy*Async). Kernel copies are in nvf_cuda_launch.c.
 *
 * Must not synchronise: completion is observed with nvf_cuda_stream_sync or an event.
 */
#include "nvf_cuda_dev.h"

#define NVF_CUDA_COPY_BODY(call)                                                                   \
    do {                                                                                           \
        if (bytes == 0)                                                                            \
            return NVF_OK;                                                                         \
        bool pushed;                                                                               \
        nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);                                          \
        if (st != NVF_OK)                                                                          \
            return st;                                                                             \
        st = call;                                                                                 \
        nvf_cuda_ctx_leave(d, pushed);                                                             \
        return st;                                                                                 \
    } while (0)

nvf_status_t nvf_cuda_copy_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    NVF_CUDA_COPY_BODY(NVF_CU(cuMemcpyAsync, (CUdeviceptr)(uintptr_t)dst,
                              (CUdeviceptr)(uintptr_t)src, bytes, d->stream));
}

nvf_status_t nvf_cuda_copy_d2h_async(nvf_cuda_dev_t *d, void *host, const void *dev, size_t bytes)
{
    NVF_CUDA_COPY_BODY(
        NVF_CU(cuMemcpyDtoHAsync, host, (CUdeviceptr)(uintptr_t)dev, bytes, d->stream));
}

nvf_status_t nvf_cuda_copy_h2d_async(nvf_cuda_dev_t *d, void *dev, const void *host, size_t bytes)
{
    NVF_CUDA_COPY_BODY(
        NVF_CU(cuMemcpyHtoDAsync, (CUdeviceptr)(uintptr_t)dev, host, bytes, d->stream));
}

nvf_status_t nvf_cuda_copy_d2d_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    NVF_CUDA_COPY_BODY(NVF_CU(cuMemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)dst,
                              (CUdeviceptr)(uintptr_t)src, bytes, d->stream));
}
