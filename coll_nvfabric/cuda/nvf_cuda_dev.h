/*
 * nvf_cuda_dev.h: the per-context device state shared by the files of coll_nvfabric/cuda/
 * (its layout is private to this directory; the engine sees nvf_cuda_dev_t as opaque).
 * Must not be included outside coll_nvfabric/cuda/.
 */
#ifndef NVF_CUDA_DEV_H
#define NVF_CUDA_DEV_H

#include "nvf_cuda_driver.h"
#include "nvf_cuda_kernel_args.h"

#include <pthread.h>

struct nvf_cuda_ipc_cache;
struct nvf_cuda_export_cache;

struct nvf_cuda_dev {
    CUcontext ctx;
    CUdevice device;
    int ordinal;
    bool primary; /* ctx is device's primary context, retained by nvfabric */
    int sm_count;
    bool memops;      /* 64-bit stream memory operations */
    bool memop_flush; /* ... whose waits can flush remote (RDMA) writes to the device */
    nvf_cuda_uuid_t uuid;
    CUstream stream; /* created by nvfabric, CU_STREAM_DEFAULT: after legacy-stream work */

    /* device-side errors (flag wait timeouts): pinned, device-mapped words */
    volatile uint32_t *status;
    CUdeviceptr status_dev;

    pthread_mutex_t lock; /* module loading, IPC caches */
    CUmodule module;      /* the embedded fatbin, loaded at the first launch */
    bool module_failed;
    _Atomic(CUfunction) fn[NVF_CUDA_KERNEL_COUNT];

    struct nvf_cuda_ipc_cache *ipc;    /* imported mappings (nvf_cuda_ipc.c) */
    struct nvf_cuda_export_cache *exp; /* exported handles (nvf_cuda_ipc.c) */
};

/* nvf_cuda_launch.c: the CUfunction of kernel `id` (module loaded on first use). The caller has
 * entered d's context. NVF_ERR_UNSUPPORTED when the module has no code for this GPU. */
nvf_status_t nvf_cuda_kernel_get(nvf_cuda_dev_t *d, int id, CUfunction *f);
/* nvf_cuda_launch.c / nvf_cuda_ipc.c: teardown of their parts of d (context entered). */
void nvf_cuda_launch_fini_dev(nvf_cuda_dev_t *d);
void nvf_cuda_ipc_fini_dev(nvf_cuda_dev_t *d);

#endif
