/*
 * nvf_cuda_none.c: the device-stage API (nvf_cuda.h) for builds without the CUDA toolkit
 * (configure --with-cuda=no, or no nvcc): no driver, every buffer is host memory, every other
 * call returns NVF_ERR_UNSUPPORTED. Lets the engine call nvf_cuda_* without #ifdefs.
 *
 * Must not be built together with the real implementation, and must not try to find a driver.
 */
#include "nvf_cuda.h"

#include <string.h>

_Atomic int nvf_cuda_driver_state_ = 1;

bool nvf_cuda_available(void)
{
    return false;
}

int nvf_cuda_driver_version(void)
{
    return 0;
}

const char *nvf_cuda_driver_status(void)
{
    return "built without CUDA (configure found no toolkit, or --with-cuda=no): every buffer is "
           "host memory";
}

const char *nvf_cuda_last_error(void)
{
    return "";
}

nvf_memkind_t nvf_cuda_ptr_query(const void *p, nvf_cuda_ptr_info_t *info)
{
    if (info != NULL) {
        memset(info, 0, sizeof(*info));
        info->kind = NVF_MEM_HOST;
        info->device = -1;
    }
    return NVF_MEM_HOST;
}

nvf_status_t nvf_cuda_ptr_detail(const void *p, nvf_cuda_ptr_detail_t *d)
{
    memset(d, 0, sizeof(*d));
    d->info.kind = NVF_MEM_HOST;
    d->info.device = -1;
    return NVF_ERR_INVALID;
}

nvf_status_t nvf_cuda_dev_for_buffer(const nvf_cuda_ptr_info_t *info, nvf_cuda_dev_t **out)
{
    *out = NULL;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_dev_for_ordinal(int ordinal, nvf_cuda_dev_t **out)
{
    *out = NULL;
    return NVF_ERR_UNSUPPORTED;
}

int nvf_cuda_dev_ordinal(const nvf_cuda_dev_t *d)
{
    return -1;
}

int nvf_cuda_dev_sm_count(const nvf_cuda_dev_t *d)
{
    return 0;
}

bool nvf_cuda_dev_has_memops(const nvf_cuda_dev_t *d)
{
    return false;
}

nvf_status_t nvf_cuda_stream_sync(nvf_cuda_dev_t *d)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_stream_query(nvf_cuda_dev_t *d, bool *done)
{
    *done = true;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_event_create(nvf_cuda_dev_t *d, nvf_cuda_event_t **ev)
{
    *ev = NULL;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_event_record(nvf_cuda_dev_t *d, nvf_cuda_event_t *ev)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_event_query(nvf_cuda_event_t *ev, bool *done)
{
    *done = true;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_event_sync(nvf_cuda_event_t *ev)
{
    return NVF_ERR_UNSUPPORTED;
}

void nvf_cuda_event_destroy(nvf_cuda_event_t *ev) {}

void nvf_cuda_fini(void) {}

nvf_status_t nvf_cuda_copy_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_copy_d2h_async(nvf_cuda_dev_t *d, void *host, const void *dev, size_t bytes)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_copy_h2d_async(nvf_cuda_dev_t *d, void *dev, const void *host, size_t bytes)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_copy_d2d_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_host_alloc(nvf_cuda_dev_t *d, size_t bytes, void **host)
{
    *host = NULL;
    return NVF_ERR_UNSUPPORTED;
}

void nvf_cuda_host_free(nvf_cuda_dev_t *d, void *host) {}

nvf_status_t nvf_cuda_host_register(nvf_cuda_dev_t *d, void *host, size_t bytes, void **dev_ptr)
{
    *dev_ptr = NULL;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_host_unregister(nvf_cuda_dev_t *d, void *host)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_reduce_async(nvf_cuda_dev_t *d, nvf_dtype_t dt, nvf_op_t op, void *out,
                                   const void *const *src, int nsrc, size_t count)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_copy_kernel_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_flag_write_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_flag_wait_async(nvf_cuda_dev_t *d, const uint64_t *flag, uint64_t value,
                                      uint64_t timeout_ns)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_flag_write_memop_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value)
{
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_flag_wait_memop_async(nvf_cuda_dev_t *d, const uint64_t *flag, uint64_t value)
{
    return NVF_ERR_UNSUPPORTED;
}

const char *nvf_cuda_kernel_name(int index)
{
    return NULL;
}

nvf_status_t nvf_cuda_device_uuid(int ordinal, nvf_cuda_uuid_t *uuid)
{
    memset(uuid, 0, sizeof(*uuid));
    return NVF_ERR_UNSUPPORTED;
}

void nvf_cuda_dev_uuid(const nvf_cuda_dev_t *d, nvf_cuda_uuid_t *uuid)
{
    memset(uuid, 0, sizeof(*uuid));
}

bool nvf_cuda_uuid_equal(const nvf_cuda_uuid_t *a, const nvf_cuda_uuid_t *b)
{
    return memcmp(a->bytes, b->bytes, sizeof(a->bytes)) == 0;
}

void nvf_cuda_uuid_format(const nvf_cuda_uuid_t *uuid, char *out, size_t outlen)
{
    if (outlen > 0)
        out[0] = '\0';
}

nvf_status_t nvf_cuda_device_by_uuid(const nvf_cuda_uuid_t *uuid, int *ordinal)
{
    *ordinal = -1;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_peer_capable(int a, int b, bool *can)
{
    *can = false;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_peer_reachable(nvf_cuda_dev_t *d, const nvf_cuda_uuid_t *peer, bool *can,
                                     bool *same_device)
{
    *can = false;
    *same_device = false;
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_ipc_export(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                 nvf_cuda_ipc_desc_t *desc, const char **why)
{
    memset(desc, 0, sizeof(*desc));
    if (why != NULL)
        *why = "built without CUDA";
    return NVF_ERR_UNSUPPORTED;
}

nvf_status_t nvf_cuda_ipc_export_described(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                           const nvf_cuda_ptr_info_t *described,
                                           nvf_cuda_ipc_desc_t *desc, const char **why)
{
    return nvf_cuda_ipc_export(d, ptr, bytes, desc, why);
}

nvf_status_t nvf_cuda_ipc_export_fd(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                    nvf_cuda_ipc_desc_t *desc, const char **why)
{
    return nvf_cuda_ipc_export(d, ptr, bytes, desc, why);
}

nvf_status_t nvf_cuda_ipc_import(nvf_cuda_dev_t *d, const nvf_cuda_ipc_desc_t *desc, void **ptr)
{
    *ptr = NULL;
    return NVF_ERR_UNSUPPORTED;
}

void nvf_cuda_ipc_stats(nvf_cuda_dev_t *d, nvf_cuda_ipc_stats_t *stats)
{
    memset(stats, 0, sizeof(*stats));
}

nvf_status_t nvf_cuda_ipc_flush(nvf_cuda_dev_t *d)
{
    return NVF_ERR_UNSUPPORTED;
}
