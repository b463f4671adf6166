/*
 * nvf_stage.c: copies between memory kinds (host <-> CUDA device or managed memory), for the
 * staged device path: the scheduler moves device data through the node's host segment, and
 * mca/ stages the device buffers of calls it delegates to a module that is not CUDA-aware.
 * On nvfabric's own stream of the buffer's context: waited for (nvf_stage_copy), or queued with a
 * kept event after it for the scheduler's pipelined blocks (nvf_stage_copy_start / _done).
 * Never on the per-element path.
 */
#include "nvf.h"
#include "nvf_internal.h"
#include "nvf_log.h"
#include "cuda/nvf_cuda.h"

#include <string.h>

nvf_status_t nvf_stage_dev(const void *devbuf, nvf_cuda_dev_t **dev)
{
    nvf_cuda_ptr_info_t info;
    if (nvf_memkind_is_host(nvf_cuda_ptr_query(devbuf, &info)))
        return NVF_ERR_INVALID;
    return nvf_cuda_dev_for_buffer(&info, dev);
}

nvf_status_t nvf_stage_copy(nvf_cuda_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return NVF_OK;
    nvf_status_t st = nvf_cuda_copy_async(dev, dst, src, bytes);
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(dev);
    if (st != NVF_OK)
        nvf_error("staging copy of %zu bytes (device %d) failed: %s", bytes,
                  nvf_cuda_dev_ordinal(dev), nvf_cuda_last_error());
    return st;
}

nvf_status_t nvf_stage_copy_start(nvf_comm_t *c, int slot, nvf_cuda_dev_t *dev, void *dst,
                                  const void *src, size_t bytes)
{
    nvf_status_t st = NVF_OK;
    if (c->stage_ev_dev[slot] != dev) { /* first use of the slot, or another device */
        nvf_cuda_event_destroy(c->stage_ev[slot]);
        c->stage_ev[slot] = NULL;
        c->stage_ev_dev[slot] = NULL;
        st = nvf_cuda_event_create(dev, &c->stage_ev[slot]);
        if (st == NVF_OK)
            c->stage_ev_dev[slot] = dev;
    }
    if (st == NVF_OK)
        st = nvf_cuda_copy_async(dev, dst, src, bytes);
    if (st == NVF_OK)
        st = nvf_cuda_event_record(dev, c->stage_ev[slot]);
    if (st != NVF_OK)
        nvf_error("queued staging copy of %zu bytes (device %d) failed: %s", bytes,
                  nvf_cuda_dev_ordinal(dev), nvf_cuda_last_error());
    return st;
}

nvf_status_t nvf_stage_copy_done(nvf_comm_t *c, int slot, bool *done)
{
    nvf_status_t st = nvf_cuda_event_query(c->stage_ev[slot], done);
    if (st != NVF_OK)
        nvf_error("staging copy (device %d) failed: %s",
                  nvf_cuda_dev_ordinal(c->stage_ev_dev[slot]), nvf_cuda_last_error());
    return st;
}

void nvf_stage_events_release(nvf_comm_t *c)
{
    for (int i = 0; i < NVF_STAGE_EVENTS; i++) {
        nvf_cuda_event_destroy(c->stage_ev[i]);
        c->stage_ev[i] = NULL;
        c->stage_ev_dev[i] = NULL;
    }
}

static void drain_one(nvf_cuda_dev_t *dev)
{
    if (dev != NULL && nvf_cuda_stream_sync(dev) != NVF_OK)
        nvf_log(1, "draining the staging copies of a failed call (device %d): %s",
                nvf_cuda_dev_ordinal(dev), nvf_cuda_last_error());
}

void nvf_stage_drain(nvf_cuda_dev_t *in_cu, nvf_cuda_dev_t *out_cu)
{
    drain_one(in_cu);
    if (out_cu != in_cu)
        drain_one(out_cu);
}

nvf_status_t nvf_memcpy_any(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return NVF_OK;
    nvf_cuda_ptr_info_t di, si;
    nvf_memkind_t dk = nvf_cuda_ptr_query(dst, &di), sk = nvf_cuda_ptr_query(src, &si);
    if (nvf_memkind_is_host(dk) && nvf_memkind_is_host(sk)) {
        memcpy(dst, src, bytes);
        return NVF_OK;
    }
    nvf_cuda_dev_t *dev = NULL;
    nvf_status_t st = nvf_cuda_dev_for_buffer(nvf_memkind_is_host(dk) ? &si : &di, &dev);
    if (st != NVF_OK) {
        nvf_error("staging copy of %zu bytes (%s to %s): no device state: %s", bytes,
                  nvf_memkind_name(sk), nvf_memkind_name(dk), nvf_cuda_last_error());
        return st;
    }
    return nvf_stage_copy(dev, dst, src, bytes);
}

nvf_status_t nvf_stage_devs(const nvf_comm_t *c, const nvf_call_mem_t *mem, nvf_cuda_dev_t **in_cu,
                            nvf_cuda_dev_t **out_cu)
{
    *in_cu = *out_cu = NULL;
    if (mem == NULL)
        return NVF_OK;
    const bool in_dev = !nvf_memkind_is_host(mem->in.kind),
               out_dev = !nvf_memkind_is_host(mem->out.kind);
    if ((in_dev && nvf_cuda_dev_for_buffer(&mem->in, in_cu) != NVF_OK) ||
        (out_dev && nvf_cuda_dev_for_buffer(&mem->out, out_cu) != NVF_OK)) {
        nvf_error("rank %d: no CUDA device state for the %s buffer: %s", c->topo.rank,
                  in_dev && *in_cu == NULL ? "send" : "receive", nvf_cuda_last_error());
        return NVF_ERR_CUDA;
    }
    return NVF_OK;
}

void *nvf_stage_pinned(nvf_comm_t *c, nvf_cuda_dev_t *dev, size_t bytes)
{
    if (bytes <= c->pinned_bytes)
        return c->pinned;
    if (c->pinned_refused || bytes > NVF_STAGE_PINNED_MAX)
        return NULL;
    nvf_stage_pinned_release(c);
    /* whole MiB, at least one: calls that grow a little do not allocate again */
    const size_t mib = (size_t)1 << 20, size = (bytes + mib - 1) / mib * mib;
    void *p = NULL;
    if (nvf_cuda_host_alloc(dev, size, &p) != NVF_OK) {
        c->pinned_refused = true;
        nvf_log(1,
                "rank %d: no page-locked buffer of %zu bytes for device data between nodes "
                "(cuMemHostAlloc: %s): staged through pageable memory",
                c->oob.rank, size, nvf_cuda_last_error());
        return NULL;
    }
    c->pinned = p;
    c->pinned_bytes = size;
    c->pinned_dev = dev;
    return p;
}

void nvf_stage_pinned_release(nvf_comm_t *c)
{
    if (c->pinned != NULL)
        nvf_cuda_host_free(c->pinned_dev, c->pinned);
    c->pinned = NULL;
    c->pinned_bytes = 0;
    c->pinned_dev = NULL;
}

void nvf_stage_register_segment(nvf_comm_t *c, const void *devbuf)
{
    if (c->shm_cuda != 0 || c->shm.base == NULL || c->shm.size == 0)
        return;
    c->shm_cuda = -1;
    nvf_cuda_dev_t *dev = NULL;
    void *dev_ptr;
    nvf_status_t st = nvf_stage_dev(devbuf, &dev);
    if (st == NVF_OK)
        st = nvf_cuda_host_register(dev, c->shm.base, c->shm.size, &dev_ptr);
    if (st != NVF_OK) {
        nvf_log(1,
                "rank %d: the node's segment (%zu bytes) stays pageable for the staged "
                "device path (cuMemHostRegister: %s): its copies go through the driver's "
                "own buffers",
                c->oob.rank, c->shm.size, nvf_cuda_last_error());
        return;
    }
    c->shm_cuda = 1;
    c->shm_cuda_dev = dev;
    nvf_log(2, "rank %d: the node's segment (%zu bytes) registered with CUDA for the staged path",
            c->oob.rank, c->shm.size);
}

void nvf_stage_unregister_segment(nvf_comm_t *c)
{
    if (c->shm_cuda == 1 && nvf_cuda_host_unregister(c->shm_cuda_dev, c->shm.base) != NVF_OK)
        nvf_log(1, "rank %d: cuMemHostUnregister of the node's segment failed: %s", c->oob.rank,
                nvf_cuda_last_error());
    c->shm_cuda = 0;
    c->shm_cuda_dev = NULL;
}
