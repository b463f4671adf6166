/*
 * nvf_cuda_kernel_args.h: the parameter blocks of nvfabric's kernels, and their names, shared by
 * the CUDA C++ kernels (nvf_kernels.cu) and the C launcher (nvf_cuda_launch.c).
 *
 * Plain C structs of fixed-width fields and pointers: the same layout on both sides (the launcher
 * passes each block by value through cuLaunchKernel). Must not include cuda.h or engine headers
 * other than nvf_dtype.h.
 */
#ifndef NVF_CUDA_KERNEL_ARGS_H
#define NVF_CUDA_KERNEL_ARGS_H

#include "../nvf_dtype.h"

#include <stdint.h>

#define NVF_CUDA_ARGS_MAX_SOURCES 16

/* out = src[0] op src[1] op ... op src[nsrc - 1], count elements. vec: every pointer is 16-byte
 * aligned, so whole 16-byte vectors are loaded (the tail that does not fill one is done by
 * elements). */
typedef struct nvf_cuda_reduce_args {
    void *out;
    const void *src[NVF_CUDA_ARGS_MAX_SOURCES];
    uint64_t count;
    uint32_t nsrc;
    uint32_t vec;
} nvf_cuda_reduce_args_t;

/* dst[i] = src[i] for n units of the kernel's unit size (1, 4, 8 or 16 bytes). */
typedef struct nvf_cuda_copy_args {
    void *dst;
    const void *src;
    uint64_t n;
} nvf_cuda_copy_args_t;

/* Wait until (int64_t)(*flag - value) >= 0; after timeout_ns (globaltimer), store 1 into
 * *status and return. */
typedef struct nvf_cuda_wait_args {
    const uint64_t *flag;
    uint64_t value;
    uint64_t timeout_ns;
    uint32_t *status;
} nvf_cuda_wait_args_t;

typedef struct nvf_cuda_write_args {
    uint64_t *flag;
    uint64_t value;
} nvf_cuda_write_args_t;

/* Kernel ids: the reductions first, by (op, dtype), then the others. */
#define NVF_CUDA_KERNEL_REDUCE(op, dt) ((int)(op) * (int)NVF_DTYPE_COUNT + (int)(dt))
enum {
    NVF_CUDA_K_FLAG_WRITE = (int)NVF_OP_COUNT * (int)NVF_DTYPE_COUNT,
    NVF_CUDA_K_FLAG_WAIT,
    NVF_CUDA_K_COPY_1,
    NVF_CUDA_K_COPY_4,
    NVF_CUDA_K_COPY_8,
    NVF_CUDA_K_COPY_16,
    NVF_CUDA_KERNEL_COUNT
};

/* Kernel names (extern "C" in the fatbin): "nvf_cuda_reduce_" OP "_" DTYPE (the ids of
 * NVF_FOREACH_OP_DTYPE_DEVICE, e.g. nvf_cuda_reduce_SUM_FLOAT), and these. */
#define NVF_CUDA_KNAME_FLAG_WRITE "nvf_cuda_flag_write"
#define NVF_CUDA_KNAME_FLAG_WAIT "nvf_cuda_flag_wait"
#define NVF_CUDA_KNAME_COPY_1 "nvf_cuda_copy_1"
#define NVF_CUDA_KNAME_COPY_4 "nvf_cuda_copy_4"
#define NVF_CUDA_KNAME_COPY_8 "nvf_cuda_copy_8"
#define NVF_CUDA_KNAME_COPY_16 "nvf_cuda_copy_16"

/* Threads per block of every kernel (the kernels are built with this launch bound). */
#define NVF_CUDA_BLOCK_THREADS 512

#endif
