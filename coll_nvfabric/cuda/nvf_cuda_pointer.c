/*
 * nvf_cuda_pointer.c: what the driver knows about a buffer (cuPointerGetAttributes).
 *
 * The classification query is on every MPI_Allreduce: one driver call per buffer, asking only
 * attributes that every driver since CUDA 11.0 knows. Should a driver still refuse one of them
 * (CUDA_ERROR_INVALID_VALUE) for some kind of memory, the two that decide the kind are asked
 * alone: reading device memory as host memory would crash. Any other error means "not a device
 * pointer", including CUDA_ERROR_NOT_INITIALIZED. Must never call cuInit, allocate, lock or log
 * on that path.
 */
#include "nvf_cuda_driver.h"

#include <string.h>

nvf_memkind_t nvf_cuda_ptr_query(const void *p, nvf_cuda_ptr_info_t *info)
{
    nvf_cuda_ptr_info_t local;
    if (info == NULL)
        info = &local;
    info->kind = NVF_MEM_HOST;
    info->device = -1;
    info->context = NULL;
    info->base = 0;
    info->size = 0;
    info->offset = 0;
    info->buffer_id = 0;
    if (p == NULL || !nvf_cuda_maybe_present())
        return NVF_MEM_HOST;

    unsigned int mem_type = 0;
    unsigned int is_managed = 0;
    int ordinal = -1;
    CUcontext ctx = NULL;
    unsigned long long buffer_id = 0;
    CUdeviceptr range_start = 0;
    size_t range_size = 0;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_CONTEXT,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    void *data[] = {&mem_type, &is_managed, &ordinal, &ctx, &buffer_id, &range_start, &range_size};
    CUresult r = nvf_cu.cuPointerGetAttributes(sizeof(attrs) / sizeof(attrs[0]), attrs, data,
                                               (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_ERROR_INVALID_VALUE) {
        /* the kind alone (no context, buffer id or range: the caller finds the device by its
         * ordinal, and the IPC path, which needs the range, declines) */
        mem_type = 0;
        is_managed = 0;
        ordinal = -1;
        ctx = NULL;
        buffer_id = 0;
        range_start = 0;
        range_size = 0;
        CUpointer_attribute kind_attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                            CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
        void *kind_data[] = {&mem_type, &is_managed, &ordinal};
        r = nvf_cu.cuPointerGetAttributes(3, kind_attrs, kind_data, (CUdeviceptr)(uintptr_t)p);
    }
    if (r != CUDA_SUCCESS)
        return NVF_MEM_HOST;

    if (is_managed)
        info->kind = NVF_MEM_MANAGED;
    else if (mem_type == CU_MEMORYTYPE_DEVICE)
        info->kind = NVF_MEM_DEVICE;
    else if (mem_type == CU_MEMORYTYPE_HOST)
        info->kind = NVF_MEM_HOST_PINNED;
    else
        return NVF_MEM_HOST; /* not known to CUDA (or HMM/ATS system memory: host-accessible) */
    info->device = ordinal;
    info->context = ctx;
    info->buffer_id = buffer_id;
    if (range_start != 0 && (uintptr_t)p >= range_start) {
        info->base = (uintptr_t)range_start;
        info->size = range_size;
        info->offset = (size_t)((uintptr_t)p - range_start);
    }
    return info->kind;
}

nvf_status_t nvf_cuda_ptr_detail(const void *p, nvf_cuda_ptr_detail_t *d)
{
    memset(d, 0, sizeof(*d));
    nvf_memkind_t kind = nvf_cuda_ptr_query(p, &d->info);
    if (kind != NVF_MEM_DEVICE && kind != NVF_MEM_MANAGED)
        return NVF_ERR_INVALID;

    /* Newer attributes, one at a time: an old driver that lacks one only loses that answer. */
    unsigned int legacy = 0;
    CUpointer_attribute a_legacy = CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE;
    void *d_legacy = &legacy;
    CUresult r = nvf_cu.cuPointerGetAttributes(1, &a_legacy, &d_legacy, (CUdeviceptr)(uintptr_t)p);
    bool legacy_known = r == CUDA_SUCCESS;

    CUmemoryPool pool = NULL;
    CUpointer_attribute a_pool = CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE;
    void *d_pool = &pool;
    if (nvf_cu.cuPointerGetAttributes(1, &a_pool, &d_pool, (CUdeviceptr)(uintptr_t)p) !=
        CUDA_SUCCESS)
        pool = NULL;

    unsigned long long handle_types = 0;
    CUpointer_attribute a_ht = CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES;
    void *d_ht = &handle_types;
    if (nvf_cu.cuPointerGetAttributes(1, &a_ht, &d_ht, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        handle_types = 0;

    CUdeviceptr mbase = 0;
    size_t msize = 0;
    if (nvf_cu.cuMemGetAddressRange(&mbase, &msize, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS) {
        d->map_base = (uintptr_t)mbase;
        d->map_size = msize;
    }

    d->from_pool = pool != NULL;
    d->handle_types = (unsigned)handle_types;
    /* Without the attribute (drivers before 11.x): cudaMalloc memory is the legacy kind unless
     * it came from a pool; managed memory never is. */
    d->legacy_ipc = legacy_known ? legacy != 0 : (!d->from_pool && kind == NVF_MEM_DEVICE);
    if (kind == NVF_MEM_MANAGED)
        d->legacy_ipc = false;
    d->vmm = kind == NVF_MEM_DEVICE && !d->legacy_ipc && !d->from_pool;
    return NVF_OK;
}
