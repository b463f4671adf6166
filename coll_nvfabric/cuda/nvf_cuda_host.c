/*
 * nvf_cuda_host.c: page-locked host memory: staging buffers nvfabric allocates (cuMemHostAlloc)
 * and existing regions it registers (cuMemHostRegister), e.g. the engine's shared-memory
 * segment, so that copies to it are asynchronous and device kernels can poll flags in it.
 *
 * Everything is portable (usable from every context) and device-mapped. Must not register a
 * region twice on its own account, nor unregister what it did not register.
 */
#include "nvf_cuda_dev.h"
#include "../nvf_log.h"

#include <stdlib.h>

/* The regions nvfabric registered itself (only those are unregistered). */
struct nvf_cuda_region {
    void *host;
    struct nvf_cuda_region *next;
};
static struct nvf_cuda_region *nvf_cuda_regions;
static pthread_mutex_t nvf_cuda_regions_lock = PTHREAD_MUTEX_INITIALIZER;

static nvf_status_t nvf_cuda_region_add(void *host)
{
    struct nvf_cuda_region *r = malloc(sizeof(*r));
    if (r == NULL)
        return NVF_ERR_NOMEM;
    r->host = host;
    pthread_mutex_lock(&nvf_cuda_regions_lock);
    r->next = nvf_cuda_regions;
    nvf_cuda_regions = r;
    pthread_mutex_unlock(&nvf_cuda_regions_lock);
    return NVF_OK;
}

static bool nvf_cuda_region_remove(void *host)
{
    bool found = false;
    pthread_mutex_lock(&nvf_cuda_regions_lock);
    for (struct nvf_cuda_region **p = &nvf_cuda_regions; *p != NULL; p = &(*p)->next) {
        if ((*p)->host == host) {
            struct nvf_cuda_region *r = *p;
            *p = r->next;
            free(r);
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&nvf_cuda_regions_lock);
    return found;
}

nvf_status_t nvf_cuda_host_alloc(nvf_cuda_dev_t *d, size_t bytes, void **host)
{
    *host = NULL;
    if (bytes == 0)
        return NVF_ERR_INVALID;
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    st = NVF_CU(cuMemHostAlloc, host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

void nvf_cuda_host_free(nvf_cuda_dev_t *d, void *host)
{
    if (host == NULL)
        return;
    bool pushed;
    if (nvf_cuda_ctx_enter(d, &pushed) != NVF_OK)
        return;
    nvf_cuda_check(nvf_cu.cuMemFreeHost(host), "cuMemFreeHost");
    nvf_cuda_ctx_leave(d, pushed);
}

nvf_status_t nvf_cuda_host_register(nvf_cuda_dev_t *d, void *host, size_t bytes, void **dev_ptr)
{
    *dev_ptr = NULL;
    if (host == NULL || bytes == 0)
        return NVF_ERR_INVALID;
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    CUresult r = nvf_cu.cuMemHostRegister(
        host, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
        nvf_log(2, "cuda: host region %p (%zu bytes) was registered already", host, bytes);
    else
        st = nvf_cuda_check(r, "cuMemHostRegister");
    CUdeviceptr dp = 0;
    if (st == NVF_OK)
        st = NVF_CU(cuMemHostGetDevicePointer, &dp, host, 0);
    if (st == NVF_OK && r == CUDA_SUCCESS)
        st = nvf_cuda_region_add(host);
    if (st == NVF_OK)
        *dev_ptr = (void *)(uintptr_t)dp;
    else if (r == CUDA_SUCCESS)
        nvf_cuda_check(nvf_cu.cuMemHostUnregister(host), "cuMemHostUnregister");
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

nvf_status_t nvf_cuda_host_unregister(nvf_cuda_dev_t *d, void *host)
{
    if (!nvf_cuda_region_remove(host))
        return NVF_OK; /* registered by someone else (or never): theirs to unregister */
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    CUresult r = nvf_cu.cuMemHostUnregister(host);
    st = r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? NVF_OK
                                                    : nvf_cuda_check(r, "cuMemHostUnregister");
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}
