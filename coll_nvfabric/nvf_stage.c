/*
 * nvf_stage.c: copies between memory kinds (host <-> CUDA device or managed memory), for the
 * staged device path: the scheduler moves device data through the node's host segment, and
 * mca/ stages the device buffers of calls it delegates to a module that is not CUDA-aware.
 * Synchronous on nvfabric's own stream of the buffer's context; never on the per-element path.
 */
#include "nvf.h"
#include "nvf_log.h"
#include "cuda/nvf_cuda.h"

#include <string.h>

static bool host_kind(nvf_memkind_t k)
{
    return k == NVF_MEM_HOST || k == NVF_MEM_HOST_PINNED;
}

nvf_status_t nvf_memcpy_any(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return NVF_OK;
    nvf_cuda_ptr_info_t di, si;
    nvf_memkind_t dk = nvf_cuda_ptr_query(dst, &di), sk = nvf_cuda_ptr_query(src, &si);
    if (host_kind(dk) && host_kind(sk)) {
        memcpy(dst, src, bytes);
        return NVF_OK;
    }
    nvf_cuda_dev_t *dev = NULL;
    nvf_status_t st = nvf_cuda_dev_for_buffer(host_kind(dk) ? &si : &di, &dev);
    if (st == NVF_OK)
        st = nvf_cuda_copy_async(dev, dst, src, bytes);
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(dev);
    if (st != NVF_OK)
        nvf_error("staging copy of %zu bytes (%s to %s) failed: %s", bytes, nvf_memkind_name(sk),
                  nvf_memkind_name(dk), nvf_cuda_last_error());
    return st;
}

nvf_status_t nvf_memkind_each(const void *sbuf, const void *rbuf, nvf_memkind_t *skind,
                              nvf_memkind_t *rkind)
{
    *rkind = nvf_cuda_ptr_query(rbuf, NULL);
    *skind = sbuf != NULL ? nvf_cuda_ptr_query(sbuf, NULL) : *rkind;
    return NVF_OK;
}
