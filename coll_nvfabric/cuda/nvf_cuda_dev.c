/*
 * nvf_cuda_dev.c: nvfabric's state per CUDA context (see nvf_cuda_dev.h): found or made for a
 * buffer's context or a device's primary context, with nvfabric's own (blocking) stream;
 * entering the context, stream synchronisation (with the device-side timeout flag), events and
 * the final teardown.
 *
 * Devices live in a small append-only registry (lock-free lookups, creation under a mutex) until
 * nvf_cuda_fini(). Must not create contexts other than by retaining a device's primary context,
 * and never calls cuInit.
 */
#include "nvf_cuda_dev.h"
#include "../nvf_log.h"

#include <stdlib.h>
#include <string.h>

#define NVF_CUDA_MAX_DEVS 64

static nvf_cuda_dev_t *nvf_cuda_devs[NVF_CUDA_MAX_DEVS];
static _Atomic int nvf_cuda_ndevs;
static pthread_mutex_t nvf_cuda_devs_lock = PTHREAD_MUTEX_INITIALIZER;

struct nvf_cuda_event {
    nvf_cuda_dev_t *d;
    CUevent ev;
};

nvf_status_t nvf_cuda_ctx_enter(nvf_cuda_dev_t *d, bool *pushed)
{
    CUcontext cur = NULL;
    *pushed = false;
    nvf_status_t st = NVF_CU(cuCtxGetCurrent, &cur);
    if (st != NVF_OK || cur == d->ctx)
        return st;
    st = NVF_CU(cuCtxPushCurrent, d->ctx);
    *pushed = st == NVF_OK;
    return st;
}

void nvf_cuda_ctx_leave(nvf_cuda_dev_t *d, bool pushed)
{
    (void)d;
    if (pushed) {
        CUcontext popped;
        nvf_cuda_check(nvf_cu.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
    }
}

static nvf_cuda_dev_t *nvf_cuda_dev_find(CUcontext ctx)
{
    int n = atomic_load_explicit(&nvf_cuda_ndevs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (nvf_cuda_devs[i]->ctx == ctx)
            return nvf_cuda_devs[i];
    return NULL;
}

static void nvf_cuda_dev_free(nvf_cuda_dev_t *d)
{
    if (d->stream != NULL)
        nvf_cuda_note(nvf_cu.cuStreamDestroy(d->stream), "cuStreamDestroy");
    if (d->status != NULL)
        nvf_cuda_note(nvf_cu.cuMemFreeHost((void *)d->status), "cuMemFreeHost");
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* A new device state for ctx (which is current on this thread). */
static nvf_status_t nvf_cuda_dev_make(CUcontext ctx, bool primary, nvf_cuda_dev_t **out)
{
    nvf_cuda_dev_t *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NVF_ERR_NOMEM;
    pthread_mutex_init(&d->lock, NULL);
    d->ctx = ctx;
    d->primary = primary;
    nvf_status_t st = NVF_CU(cuCtxGetDevice, &d->device);
    if (st == NVF_OK)
        st = NVF_CU(cuDeviceGetAttribute, &d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    d->device);
    CUuuid uuid;
    if (st == NVF_OK)
        st = NVF_CU(cuDeviceGetUuid, &uuid, d->device);
    if (st == NVF_OK)
        /* A blocking stream: ordered after work the program queued on the legacy default stream
         * (kernels, cudaMemset, pageable cudaMemcpy whose DMA may still run), as programs that
         * call MPI right after such work expect; a non-blocking stream could read stale input */
        st = NVF_CU(cuStreamCreate, &d->stream, CU_STREAM_DEFAULT);
    void *status = NULL;
    if (st == NVF_OK)
        st = NVF_CU(cuMemHostAlloc, &status, 64,
                    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (st == NVF_OK) {
        d->status = status;
        memset(status, 0, 64);
        st = NVF_CU(cuMemHostGetDevicePointer, &d->status_dev, status, 0);
    }
    if (st != NVF_OK) {
        nvf_cuda_dev_free(d);
        return st;
    }
    d->ordinal = (int)d->device;
    memcpy(d->uuid.bytes, uuid.bytes, sizeof(d->uuid.bytes));
    int memops = 0;
    if (nvf_cu.cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                    d->device) != CUDA_SUCCESS)
        memops = 0;
    d->memops = memops && nvf_cu.cuStreamWriteValue64 != NULL && nvf_cu.cuStreamWaitValue64 != NULL;
    int flush = 0; /* (drivers older than the attribute refuse it: no flush) */
    if (nvf_cu.cuDeviceGetAttribute(&flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                    d->device) != CUDA_SUCCESS)
        flush = 0;
    d->memop_flush = d->memops && flush;
    char u[48];
    nvf_cuda_uuid_format(&d->uuid, u, sizeof(u));
    nvf_log(1, "cuda: device %d (%s): %d SMs, %s context, stream memory operations %s", d->ordinal,
            u, d->sm_count, primary ? "primary" : "application", d->memops ? "yes" : "no");
    *out = d;
    return NVF_OK;
}

/* Finds or makes the device state of ctx; `primary_of` >= 0: ctx is that device's primary
 * context, already retained by the caller (the retain is kept by a new state, dropped
 * otherwise). */
static nvf_status_t nvf_cuda_dev_get(CUcontext ctx, int primary_of, nvf_cuda_dev_t **out)
{
    nvf_cuda_dev_t *d = nvf_cuda_dev_find(ctx);
    if (d != NULL) {
        if (primary_of >= 0)
            nvf_cuda_check(nvf_cu.cuDevicePrimaryCtxRelease((CUdevice)primary_of),
                           "cuDevicePrimaryCtxRelease");
        *out = d;
        return NVF_OK;
    }
    pthread_mutex_lock(&nvf_cuda_devs_lock);
    nvf_status_t st = NVF_OK;
    d = nvf_cuda_dev_find(ctx);
    bool keep_retain = false;
    if (d == NULL) {
        int n = atomic_load_explicit(&nvf_cuda_ndevs, memory_order_relaxed);
        if (n == NVF_CUDA_MAX_DEVS) {
            st = NVF_ERR_UNSUPPORTED;
            nvf_cuda_set_error("more than %d CUDA contexts", NVF_CUDA_MAX_DEVS);
            goto out;
        }
        bool pushed = false;
        CUcontext cur = NULL;
        st = NVF_CU(cuCtxGetCurrent, &cur);
        if (st == NVF_OK && cur != ctx) {
            st = NVF_CU(cuCtxPushCurrent, ctx);
            pushed = st == NVF_OK;
        }
        if (st == NVF_OK)
            st = nvf_cuda_dev_make(ctx, primary_of >= 0, &d);
        nvf_cuda_ctx_leave(NULL, pushed);
        if (st != NVF_OK)
            goto out;
        nvf_cuda_devs[n] = d;
        atomic_store_explicit(&nvf_cuda_ndevs, n + 1, memory_order_release);
        keep_retain = true;
    }
out:
    pthread_mutex_unlock(&nvf_cuda_devs_lock);
    if (primary_of >= 0 && !keep_retain)
        nvf_cuda_check(nvf_cu.cuDevicePrimaryCtxRelease((CUdevice)primary_of),
                       "cuDevicePrimaryCtxRelease");
    *out = st == NVF_OK ? d : NULL;
    return st;
}

nvf_status_t nvf_cuda_dev_for_ordinal(int ordinal, nvf_cuda_dev_t **out)
{
    *out = NULL;
    if (!nvf_cuda_available())
        return NVF_ERR_UNSUPPORTED;
    int n = atomic_load_explicit(&nvf_cuda_ndevs, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        if (nvf_cuda_devs[i]->primary && nvf_cuda_devs[i]->ordinal == ordinal) {
            *out = nvf_cuda_devs[i];
            return NVF_OK;
        }
    }
    CUdevice dev;
    nvf_status_t st = NVF_CU(cuDeviceGet, &dev, ordinal);
    CUcontext ctx = NULL;
    if (st == NVF_OK)
        st = NVF_CU(cuDevicePrimaryCtxRetain, &ctx, dev);
    if (st != NVF_OK)
        return st;
    return nvf_cuda_dev_get(ctx, (int)dev, out);
}

nvf_status_t nvf_cuda_dev_for_buffer(const nvf_cuda_ptr_info_t *info, nvf_cuda_dev_t **out)
{
    *out = NULL;
    if (info == NULL || (info->kind != NVF_MEM_DEVICE && info->kind != NVF_MEM_MANAGED))
        return NVF_ERR_INVALID;
    if (!nvf_cuda_available())
        return NVF_ERR_UNSUPPORTED;
    if (info->context == NULL)
        return nvf_cuda_dev_for_ordinal(info->device, out);
    CUcontext ctx = (CUcontext)info->context;
    nvf_cuda_dev_t *d = nvf_cuda_dev_find(ctx);
    if (d != NULL) {
        *out = d;
        return NVF_OK;
    }
    /* Is it the device's primary context (the CUDA runtime's)? Then keep it alive with a retain;
     * never create a primary context that is not active. */
    unsigned int flags = 0;
    int active = 0;
    if (info->device >= 0 &&
        nvf_cu.cuDevicePrimaryCtxGetState((CUdevice)info->device, &flags, &active) ==
            CUDA_SUCCESS &&
        active) {
        CUcontext pctx = NULL;
        nvf_status_t st = NVF_CU(cuDevicePrimaryCtxRetain, &pctx, (CUdevice)info->device);
        if (st != NVF_OK)
            return st;
        if (pctx == ctx)
            return nvf_cuda_dev_get(ctx, info->device, out);
        nvf_cuda_check(nvf_cu.cuDevicePrimaryCtxRelease((CUdevice)info->device),
                       "cuDevicePrimaryCtxRelease");
    }
    return nvf_cuda_dev_get(ctx, -1, out);
}

int nvf_cuda_dev_ordinal(const nvf_cuda_dev_t *d)
{
    return d->ordinal;
}

int nvf_cuda_dev_sm_count(const nvf_cuda_dev_t *d)
{
    return d->sm_count;
}

bool nvf_cuda_dev_has_memops(const nvf_cuda_dev_t *d)
{
    return d->memops;
}

void nvf_cuda_dev_uuid(const nvf_cuda_dev_t *d, nvf_cuda_uuid_t *uuid)
{
    *uuid = d->uuid;
}

nvf_status_t nvf_cuda_stream_sync(nvf_cuda_dev_t *d)
{
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    st = NVF_CU(cuStreamSynchronize, d->stream);
    nvf_cuda_ctx_leave(d, pushed);
    if (st == NVF_OK && d->status[0] != 0) {
        d->status[0] = 0;
        nvf_cuda_set_error("a device-side wait for a peer's flag timed out on device %d",
                           d->ordinal);
        nvf_error("cuda: %s", nvf_cuda_last_error());
        st = NVF_ERR_PEER;
    }
    return st;
}

nvf_status_t nvf_cuda_stream_query(nvf_cuda_dev_t *d, bool *done)
{
    bool pushed;
    *done = false;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    CUresult r = nvf_cu.cuStreamQuery(d->stream);
    nvf_cuda_ctx_leave(d, pushed);
    if (r == CUDA_ERROR_NOT_READY)
        return NVF_OK;
    *done = r == CUDA_SUCCESS;
    return nvf_cuda_check(r, "cuStreamQuery");
}

nvf_status_t nvf_cuda_event_create(nvf_cuda_dev_t *d, nvf_cuda_event_t **out)
{
    *out = NULL;
    nvf_cuda_event_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return NVF_ERR_NOMEM;
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st == NVF_OK) {
        st = NVF_CU(cuEventCreate, &e->ev, CU_EVENT_DISABLE_TIMING);
        nvf_cuda_ctx_leave(d, pushed);
    }
    if (st != NVF_OK) {
        free(e);
        return st;
    }
    e->d = d;
    *out = e;
    return NVF_OK;
}

nvf_status_t nvf_cuda_event_record(nvf_cuda_dev_t *d, nvf_cuda_event_t *ev)
{
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    st = NVF_CU(cuEventRecord, ev->ev, d->stream);
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

nvf_status_t nvf_cuda_event_query(nvf_cuda_event_t *ev, bool *done)
{
    bool pushed;
    *done = false;
    nvf_status_t st = nvf_cuda_ctx_enter(ev->d, &pushed);
    if (st != NVF_OK)
        return st;
    CUresult r = nvf_cu.cuEventQuery(ev->ev);
    nvf_cuda_ctx_leave(ev->d, pushed);
    *done = r == CUDA_SUCCESS;
    return r == CUDA_ERROR_NOT_READY ? NVF_OK : nvf_cuda_check(r, "cuEventQuery");
}

nvf_status_t nvf_cuda_event_sync(nvf_cuda_event_t *ev)
{
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(ev->d, &pushed);
    if (st != NVF_OK)
        return st;
    st = NVF_CU(cuEventSynchronize, ev->ev);
    nvf_cuda_ctx_leave(ev->d, pushed);
    return st;
}

void nvf_cuda_event_destroy(nvf_cuda_event_t *ev)
{
    if (ev == NULL)
        return;
    bool pushed;
    if (nvf_cuda_ctx_enter(ev->d, &pushed) == NVF_OK) {
        nvf_cuda_check(nvf_cu.cuEventDestroy(ev->ev), "cuEventDestroy");
        nvf_cuda_ctx_leave(ev->d, pushed);
    }
    free(ev);
}

void nvf_cuda_fini(void)
{
    if (atomic_load_explicit(&nvf_cuda_driver_state_, memory_order_acquire) != 2)
        return;
    pthread_mutex_lock(&nvf_cuda_devs_lock);
    int n = atomic_load_explicit(&nvf_cuda_ndevs, memory_order_relaxed);
    atomic_store_explicit(&nvf_cuda_ndevs, 0, memory_order_release);
    for (int i = 0; i < n; i++) {
        nvf_cuda_dev_t *d = nvf_cuda_devs[i];
        nvf_cuda_devs[i] = NULL;
        /* The application may have destroyed the context (cudaDeviceReset) or the driver may be
         * shutting down: then its resources are gone with it, and nothing is reported. */
        bool pushed = false;
        if (nvf_cuda_note(nvf_cu.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent") == NVF_OK) {
            pushed = true;
            nvf_cuda_note(nvf_cu.cuStreamSynchronize(d->stream), "cuStreamSynchronize");
            nvf_cuda_ipc_fini_dev(d);
            nvf_cuda_launch_fini_dev(d);
            if (d->stream != NULL)
                nvf_cuda_note(nvf_cu.cuStreamDestroy(d->stream), "cuStreamDestroy");
            if (d->status != NULL)
                nvf_cuda_note(nvf_cu.cuMemFreeHost((void *)d->status), "cuMemFreeHost");
        }
        d->stream = NULL;
        d->status = NULL;
        if (pushed) {
            CUcontext popped;
            nvf_cuda_note(nvf_cu.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
        }
        if (d->primary)
            nvf_cuda_note(nvf_cu.cuDevicePrimaryCtxRelease(d->device), "cuDevicePrimaryCtxRelease");
        nvf_cuda_dev_free(d);
    }
    pthread_mutex_unlock(&nvf_cuda_devs_lock);
}
