/*
 * gpu_common.h: what the GPU test and benchmark programs share: CUDA runtime error checks, the
 * choice of device per rank (several ranks may share one GPU), and the kinds of buffer a user
 * passes to MPI_Allreduce (cudaMalloc, cudaMallocAsync, cudaMallocManaged, cudaMallocHost).
 *
 * These programs link the CUDA runtime; the component never does. Must not include engine
 * headers (the programs that test the engine's building blocks include them themselves).
 */
#ifndef NVF_GPU_COMMON_H
#define NVF_GPU_COMMON_H

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_CHECK(call)                                                                            \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,              \
                    cudaGetErrorString(e_), cudaGetErrorName(e_));                                 \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                          \
        }                                                                                          \
    } while (0)

typedef enum {
    GPU_BUF_DEVICE,  /* cudaMalloc */
    GPU_BUF_ASYNC,   /* cudaMallocAsync (default memory pool) */
    GPU_BUF_MANAGED, /* cudaMallocManaged */
    GPU_BUF_PINNED,  /* cudaMallocHost */
    GPU_BUF_KINDS
} gpu_buf_kind_t;

static inline const char *gpu_kind_name(gpu_buf_kind_t k)
{
    static const char *const names[GPU_BUF_KINDS] = {"device", "async", "managed", "pinned"};
    return k < GPU_BUF_KINDS ? names[k] : "?";
}

static inline int gpu_kind_parse(const char *s)
{
    for (int k = 0; k < GPU_BUF_KINDS; k++)
        if (strcmp(s, gpu_kind_name((gpu_buf_kind_t)k)) == 0)
            return k;
    return -1;
}

static inline void *gpu_alloc(gpu_buf_kind_t k, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    switch (k) {
    case GPU_BUF_DEVICE:
        GPU_CHECK(cudaMalloc(&p, bytes));
        break;
    case GPU_BUF_ASYNC:
        GPU_CHECK(cudaMallocAsync(&p, bytes, 0));
        GPU_CHECK(cudaStreamSynchronize(0));
        break;
    case GPU_BUF_MANAGED:
        GPU_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
        break;
    default:
        GPU_CHECK(cudaMallocHost(&p, bytes));
        break;
    }
    return p;
}

static inline void gpu_free(gpu_buf_kind_t k, void *p)
{
    switch (k) {
    case GPU_BUF_DEVICE:
        GPU_CHECK(cudaFree(p));
        break;
    case GPU_BUF_ASYNC:
        GPU_CHECK(cudaFreeAsync(p, 0));
        GPU_CHECK(cudaStreamSynchronize(0));
        break;
    case GPU_BUF_MANAGED:
        GPU_CHECK(cudaFree(p));
        break;
    default:
        GPU_CHECK(cudaFreeHost(p));
        break;
    }
}

/* This rank's rank among the ranks of its node, and the node's size. */
static inline void gpu_local_rank(int *local, int *nlocal)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, local);
    MPI_Comm_size(node, nlocal);
    MPI_Comm_free(&node);
}

/* Picks this rank's GPU (local rank modulo the GPUs it sees); returns the device count, 0 if
 * none (then the caller skips). */
static inline int gpu_select_device(int *device)
{
    int n = 0, local, nlocal;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        n = 0;
    gpu_local_rank(&local, &nlocal);
    *device = n > 0 ? local % n : -1;
    if (n > 0) {
        GPU_CHECK(cudaSetDevice(*device));
        GPU_CHECK(cudaFree(0)); /* create the primary context now, as applications do */
    }
    return n;
}

#endif
