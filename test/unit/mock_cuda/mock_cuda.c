/*
 * mock_cuda.c: a fake CUDA driver (libcuda.so.1) for the unit tests, built only for tests.
 *
 * It implements the handful of driver entry points nvfabric resolves, over fake "device" memory:
 * ranges of a reserved address range backed by memfd files, so that they are readable on the
 * host (the tests check results directly), freed ranges are reused at the same address (buffer
 * ids change, as with a real allocator), and another process can map them (IPC handles name the
 * exporter's pid and memfd; the importer opens /proc/<pid>/fd/<fd>). Streams run every operation
 * at once, except with NVF_MOCK_DEFER_COPIES=1 in the environment: then copies on a stream other
 * than the legacy one are queued and land later, in stream order: one more every second time an
 * event recorded after them is queried (it says CUDA_ERROR_NOT_READY until all have), all of them
 * at a synchronisation or before the stream's next kernel or memory operation; a copy reads its
 * source when it lands, as a DMA engine would, so code that publishes or reuses a buffer before
 * its copy completed gets stale data. Kernel launches are emulated on the host from the kernel's
 * name and parameter block (the reduction in source order with nvf_op_defs.h's host operators),
 * which checks what the launcher passes, not the CUDA code (test_cuda_kernel_cpu does that).
 *
 * Like a real driver: nothing works before cuInit (CUDA_ERROR_NOT_INITIALIZED), allocations need
 * a current context, cuPointerGetAttributes fills defaults for unknown pointers, an IPC handle
 * opened twice in one process fails (CUDA_ERROR_ALREADY_MAPPED), a process cannot open its own.
 * Controls for the tests: nvf_mock_* (mock_cuda.h). Built with -DNVF_MOCK_OLD it plays a driver
 * too old for nvfabric (no cuDeviceGetUuid_v2, no cuGetProcAddress_v2).
 *
 * Must never be installed or linked into anything but tests.
 */
#include "coll_nvfabric/cuda/nvf_cuda_kernel_args.h"
#include "coll_nvfabric/nvf_op_defs.h"

#include <cuda.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    char name[64];
    unsigned grid, block;
    uint32_t vec, nsrc;
    uint64_t count;
} mock_launch_t; /* nvf_mock_launch_t of mock_cuda.h */

/* The controls (mock_cuda.h reaches them with dlsym). */
EXPORT int nvf_mock_version(void);
EXPORT unsigned long nvf_mock_count(const char *fn);
EXPORT void nvf_mock_fail(const char *fn, CUresult r, int times);
EXPORT int nvf_mock_kind_of(const void *p);
EXPORT void *nvf_mock_alloc_vmm(size_t bytes, int fd_exportable);
EXPORT void nvf_mock_free_vmm(void *p);
EXPORT void nvf_mock_last_launch(mock_launch_t *out);
EXPORT unsigned long nvf_mock_live_mappings(void);

/* ---- state -------------------------------------------------------------------------------- */
#define MOCK_ARENA (1ull << 32)
#define MOCK_GRAN (64u << 10)
#define MOCK_MAX_ALLOCS 4096
#define MOCK_MAX_DEVICES 8

enum {
    K_NONE,
    K_DEVICE,
    K_MANAGED,
    K_HOSTALLOC,
    K_REGISTERED,
    K_POOL,
    K_VMM,
    K_IMPORTED,
    K_VMM_MAPPED,
    K_RESERVED, /* cuMemAddressReserve: no memory yet */
};

struct mock_alloc {
    int used;
    int kind;
    uintptr_t base;
    size_t size;
    int fd; /* memfd backing (device kinds) */
    unsigned long long id;
    int device;
    CUcontext ctx;
    int fd_exportable;
    /* imports: what was opened, to refuse a second open of the same handle */
    int src_pid, src_fd;
    unsigned long long src_id;
};

struct mock_ctx {
    int device;
    int retains;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static uintptr_t arena;
static struct mock_alloc allocs[MOCK_MAX_ALLOCS];
static unsigned long long next_id = 100;
static struct mock_ctx ctxs[MOCK_MAX_DEVICES];
static int ndevices = 1;
static _Thread_local CUcontext ctx_stack[16];
static _Thread_local int ctx_depth;
static int stream_memops = 1;
static int flush_remote = 1; /* CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES (NVF_MOCK_FLUSH) */
static int defer_copies;

struct mock_counter {
    char name[48];
    unsigned long n;
    CUresult fail_with;
    int fail_times;
};
static struct mock_counter counters[128];

/* Counts a call; returns the error to inject, or CUDA_SUCCESS. */
static CUresult mock_enter(const char *fn)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 128; i++) {
        if (counters[i].name[0] == '\0')
            snprintf(counters[i].name, sizeof(counters[i].name), "%s", fn);
        if (strcmp(counters[i].name, fn) == 0) {
            counters[i].n++;
            if (counters[i].fail_times > 0) {
                counters[i].fail_times--;
                r = counters[i].fail_with;
            }
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

#define ENTER(fn)                                                                                  \
    do {                                                                                           \
        CUresult inj_ = mock_enter(fn);                                                            \
        if (inj_ != CUDA_SUCCESS)                                                                  \
            return inj_;                                                                           \
        if (!initialized)                                                                          \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

static void mock_setup(void)
{
    const char *n = getenv("NVF_MOCK_DEVICES");
    if (n != NULL && atoi(n) > 0 && atoi(n) <= MOCK_MAX_DEVICES)
        ndevices = atoi(n);
    const char *m = getenv("NVF_MOCK_MEMOPS");
    if (m != NULL)
        stream_memops = atoi(m);
    const char *fl = getenv("NVF_MOCK_FLUSH");
    if (fl != NULL)
        flush_remote = atoi(fl);
    const char *d = getenv("NVF_MOCK_DEFER_COPIES");
    if (d != NULL)
        defer_copies = atoi(d);
    for (int i = 0; i < MOCK_MAX_DEVICES; i++)
        ctxs[i].device = i;
}

static CUcontext mock_current(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

static int mock_ctx_device(CUcontext c)
{
    struct mock_ctx *m = (struct mock_ctx *)c;
    if (m < ctxs || m >= ctxs + ndevices)
        return -1;
    return m->device;
}

/* The allocation holding p (lock held). */
static struct mock_alloc *mock_find(uintptr_t p)
{
    for (int i = 0; i < MOCK_MAX_ALLOCS; i++)
        if (allocs[i].used && p >= allocs[i].base && p < allocs[i].base + allocs[i].size)
            return &allocs[i];
    return NULL;
}

static struct mock_alloc *mock_slot(void)
{
    for (int i = 0; i < MOCK_MAX_ALLOCS; i++)
        if (!allocs[i].used) {
            memset(&allocs[i], 0, sizeof(allocs[i]));
            allocs[i].used = 1;
            allocs[i].fd = -1;
            return &allocs[i];
        }
    return NULL;
}

/* First fit in the arena (lock held): the lowest gap of `size` bytes. */
static uintptr_t mock_arena_place(size_t size)
{
    uintptr_t at = arena;
    for (;;) {
        int moved = 0;
        for (int i = 0; i < MOCK_MAX_ALLOCS; i++) {
            struct mock_alloc *a = &allocs[i];
            if (!a->used || a->base < arena || a->base >= arena + MOCK_ARENA)
                continue;
            if (a->base < at + size && at < a->base + a->size) {
                at = (a->base + a->size + MOCK_GRAN - 1) & ~(uintptr_t)(MOCK_GRAN - 1);
                moved = 1;
            }
        }
        if (!moved)
            break;
    }
    return at + size <= arena + MOCK_ARENA ? at : 0;
}

static size_t mock_round(size_t n)
{
    return (n + MOCK_GRAN - 1) & ~(size_t)(MOCK_GRAN - 1);
}

/* A new memfd-backed range in the arena (lock held). */
static CUresult mock_alloc_device(int kind, size_t bytes, CUdeviceptr *out, int fd)
{
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = mock_current();
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    size_t size = mock_round(bytes);
    if (fd < 0) {
        fd = memfd_create("nvf-mock-cuda", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uintptr_t at = mock_arena_place(size);
    struct mock_alloc *a = mock_slot();
    if (at == 0 || a == NULL) {
        close(fd);
        if (a)
            a->used = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (mmap((void *)at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        close(fd);
        a->used = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->kind = kind;
    a->base = at;
    a->size = size;
    a->fd = fd;
    a->id = next_id++;
    a->ctx = c;
    a->device = mock_ctx_device(c);
    *out = (CUdeviceptr)at;
    return CUDA_SUCCESS;
}

static void mock_release_range(struct mock_alloc *a)
{
    mmap((void *)a->base, a->size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (a->fd >= 0)
        close(a->fd);
    a->used = 0;
}

/* ---- controls ----------------------------------------------------------------------------- */
EXPORT int nvf_mock_version(void)
{
    return 1;
}

EXPORT unsigned long nvf_mock_count(const char *fn)
{
    unsigned long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 128; i++)
        if (strcmp(counters[i].name, fn) == 0)
            n = counters[i].n;
    pthread_mutex_unlock(&lock);
    return n;
}

EXPORT void nvf_mock_fail(const char *fn, CUresult r, int times)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 128; i++) {
        if (counters[i].name[0] == '\0')
            snprintf(counters[i].name, sizeof(counters[i].name), "%s", fn);
        if (strcmp(counters[i].name, fn) == 0) {
            counters[i].fail_with = r;
            counters[i].fail_times = times;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

EXPORT int nvf_mock_kind_of(const void *p)
{
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)p);
    int k = a ? a->kind : K_NONE;
    pthread_mutex_unlock(&lock);
    return k;
}

EXPORT void *nvf_mock_alloc_vmm(size_t bytes, int fd_exportable)
{
    CUdeviceptr p = 0;
    pthread_mutex_lock(&lock);
    if (mock_alloc_device(K_VMM, bytes, &p, -1) == CUDA_SUCCESS) {
        struct mock_alloc *a = mock_find((uintptr_t)p);
        a->fd_exportable = fd_exportable;
    }
    pthread_mutex_unlock(&lock);
    return (void *)(uintptr_t)p;
}

EXPORT void nvf_mock_free_vmm(void *p)
{
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)p);
    if (a && a->kind == K_VMM)
        mock_release_range(a);
    pthread_mutex_unlock(&lock);
}

static mock_launch_t last_launch;

EXPORT void nvf_mock_last_launch(mock_launch_t *out)
{
    pthread_mutex_lock(&lock);
    *out = last_launch;
    pthread_mutex_unlock(&lock);
}

EXPORT unsigned long nvf_mock_live_mappings(void)
{
    unsigned long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MOCK_MAX_ALLOCS; i++)
        if (allocs[i].used && (allocs[i].kind == K_IMPORTED || allocs[i].kind == K_VMM_MAPPED))
            n++;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- initialisation, errors, versions ----------------------------------------------------- */
EXPORT CUresult cuInit(unsigned int flags)
{
    CUresult r = mock_enter("cuInit");
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    if (!initialized) {
        mock_setup();
        void *p =
            mmap(NULL, MOCK_ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        arena = ((uintptr_t)p + MOCK_GRAN - 1) & ~(uintptr_t)(MOCK_GRAN - 1);
        initialized = 1;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    mock_enter("cuDriverGetVersion");
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
    switch (error) {
    case CUDA_SUCCESS:
        *str = "no error";
        break;
    case CUDA_ERROR_INVALID_VALUE:
        *str = "invalid argument";
        break;
    case CUDA_ERROR_NOT_INITIALIZED:
        *str = "initialization error";
        break;
    case CUDA_ERROR_OUT_OF_MEMORY:
        *str = "out of memory";
        break;
    case CUDA_ERROR_INVALID_CONTEXT:
        *str = "invalid device context";
        break;
    case CUDA_ERROR_ALREADY_MAPPED:
        *str = "resource already mapped";
        break;
    case CUDA_ERROR_NOT_FOUND:
        *str = "named symbol not found";
        break;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
        *str = "an illegal memory access was encountered";
        break;
    default:
        *str = "mock error";
        break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **str)
{
    switch (error) {
    case CUDA_ERROR_INVALID_VALUE:
        *str = "CUDA_ERROR_INVALID_VALUE";
        break;
    case CUDA_ERROR_NOT_INITIALIZED:
        *str = "CUDA_ERROR_NOT_INITIALIZED";
        break;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
        *str = "CUDA_ERROR_ILLEGAL_ADDRESS";
        break;
    case CUDA_ERROR_ALREADY_MAPPED:
        *str = "CUDA_ERROR_ALREADY_MAPPED";
        break;
    default:
        *str = "CUDA_ERROR_MOCK";
        break;
    }
    return CUDA_SUCCESS;
}

/* ---- devices and contexts ----------------------------------------------------------------- */
EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    ENTER("cuDeviceGet");
    if (ordinal < 0 || ordinal >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    ENTER("cuDeviceGetCount");
    *count = ndevices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    ENTER("cuDeviceGetAttribute");
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = 4;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
        *pi = stream_memops;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:
        *pi = stream_memops && flush_remote;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        *pi = 1;
        break;
    default:
        *pi = 0;
        break;
    }
    return CUDA_SUCCESS;
}

#ifndef NVF_MOCK_OLD
EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    ENTER("cuDeviceGetUuid");
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; i++)
        uuid->bytes[i] = (char)(0xA0 + i + 16 * dev);
    return CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    ENTER("cuDeviceCanAccessPeer");
    *can = dev != peer && dev >= 0 && peer >= 0 && dev < ndevices && peer < ndevices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER("cuDevicePrimaryCtxRetain");
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    ctxs[dev].retains++;
    pthread_mutex_unlock(&lock);
    *pctx = (CUcontext)&ctxs[dev];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER("cuDevicePrimaryCtxRelease");
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    CUresult r = ctxs[dev].retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (ctxs[dev].retains > 0)
        ctxs[dev].retains--;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER("cuDevicePrimaryCtxGetState");
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = ctxs[dev].retains > 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER("cuCtxGetCurrent");
    *pctx = mock_current();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER("cuCtxSetCurrent");
    if (ctx != NULL && mock_ctx_device(ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    if (ctx == NULL)
        ctx_depth = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    ENTER("cuCtxPushCurrent");
    if (mock_ctx_device(ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 16)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    ENTER("cuCtxPopCurrent");
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER("cuCtxGetDevice");
    CUcontext c = mock_current();
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = mock_ctx_device(c);
    return CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------------- */
EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER("cuMemAlloc");
    pthread_mutex_lock(&lock);
    CUresult r = mock_alloc_device(K_DEVICE, bytesize, dptr, -1);
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER("cuMemAllocManaged");
    pthread_mutex_lock(&lock);
    CUresult r = mock_alloc_device(K_MANAGED, bytesize, dptr, -1);
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    ENTER("cuMemAllocAsync");
    pthread_mutex_lock(&lock);
    CUresult r = mock_alloc_device(K_POOL, bytesize, dptr, -1);
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
    ENTER("cuMemFree");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)dptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->base == dptr &&
        (a->kind == K_DEVICE || a->kind == K_MANAGED || a->kind == K_POOL)) {
        mock_release_range(a);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    ENTER("cuMemHostAlloc");
    if (mock_current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    size_t size = mock_round(bytesize ? bytesize : 1);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_slot();
    if (a == NULL) {
        pthread_mutex_unlock(&lock);
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->kind = K_HOSTALLOC;
    a->base = (uintptr_t)p;
    a->size = size;
    a->id = next_id++;
    a->ctx = mock_current();
    a->device = mock_ctx_device(a->ctx);
    pthread_mutex_unlock(&lock);
    *pp = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    ENTER("cuMemFreeHost");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)p);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->kind == K_HOSTALLOC && a->base == (uintptr_t)p) {
        munmap((void *)a->base, a->size);
        a->used = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int flags)
{
    ENTER("cuMemHostRegister");
    if (mock_current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (mock_find((uintptr_t)p) || mock_find((uintptr_t)p + bytesize - 1)) {
        r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    } else {
        struct mock_alloc *a = mock_slot();
        if (a == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            a->kind = K_REGISTERED;
            a->base = (uintptr_t)p;
            a->size = bytesize;
            a->id = next_id++;
            a->ctx = mock_current();
            a->device = mock_ctx_device(a->ctx);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    ENTER("cuMemHostUnregister");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)p);
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (a && a->kind == K_REGISTERED && a->base == (uintptr_t)p) {
        a->used = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    ENTER("cuMemHostGetDevicePointer");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)p);
    int ok = a && (a->kind == K_HOSTALLOC || a->kind == K_REGISTERED);
    pthread_mutex_unlock(&lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    ENTER("cuMemGetAddressRange");
    if (mock_current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)dptr);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (a && a->kind != K_HOSTALLOC && a->kind != K_REGISTERED && a->kind != K_RESERVED) {
        if (pbase)
            *pbase = a->base;
        if (psize)
            *psize = a->size;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                       CUdeviceptr ptr)
{
    ENTER("cuPointerGetAttributes");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)ptr);
    if (a && a->kind == K_RESERVED)
        a = NULL;
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < n && r == CUDA_SUCCESS; i++) {
        int dev_kind = a && a->kind != K_HOSTALLOC && a->kind != K_REGISTERED;
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            /* pool and VMM memory belong to no context */
            *(CUcontext *)data[i] =
                a && a->kind != K_POOL && a->kind != K_VMM && a->kind != K_VMM_MAPPED ? a->ctx
                                                                                      : NULL;
            break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned int *)data[i] = a == NULL  ? 0u
                                       : dev_kind ? CU_MEMORYTYPE_DEVICE
                                                  : CU_MEMORYTYPE_HOST;
            break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data[i] = a ? a->id : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned int *)data[i] = a && a->kind == K_MANAGED;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data[i] = a ? a->device : -2;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = a ? a->base : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[i] = a ? a->size : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
            *(unsigned int *)data[i] = a && a->kind == K_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
            *(CUmemoryPool *)data[i] = a && a->kind == K_POOL ? (CUmemoryPool)&next_id : NULL;
            break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            *(unsigned int *)data[i] = a && a->kind == K_VMM && a->fd_exportable
                                           ? (unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                           : 0u;
            break;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *(unsigned int *)data[i] = a != NULL;
            break;
        default:
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- streams, events, copies -------------------------------------------------------------- */
/* A queued copy (NVF_MOCK_DEFER_COPIES) */
struct mock_op {
    uintptr_t dst, src;
    size_t n;
};
#define MOCK_QUEUE 64
struct mock_stream {
    int magic;
    struct mock_op q[MOCK_QUEUE];    /* ring: copies [done, queued) still to land */
    unsigned long long queued, done; /* copies ever queued, landed */
    unsigned long long polls;        /* queries of events with copies still to land */
};

struct mock_event {
    struct mock_stream *s;     /* NULL: recorded on the legacy stream (nothing ever pending) */
    unsigned long long ticket; /* complete once s->done reaches it */
};

/* The oldest queued copy lands (lock held). */
static void mock_land_one(struct mock_stream *s)
{
    const struct mock_op *op = &s->q[s->done % MOCK_QUEUE];
    memmove((void *)op->dst, (const void *)op->src, op->n);
    s->done++;
}

/* Every copy queued on s so far lands (stream order: before a kernel, a memory operation, or a
 * synchronisation). */
static void mock_land_all(CUstream h)
{
    struct mock_stream *s = (struct mock_stream *)h;
    if (s == NULL)
        return;
    pthread_mutex_lock(&lock);
    while (s->done < s->queued)
        mock_land_one(s);
    pthread_mutex_unlock(&lock);
}

EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
    ENTER("cuStreamCreate");
    if (flags & CU_STREAM_NON_BLOCKING)
        (void)mock_enter("cuStreamCreate(CU_STREAM_NON_BLOCKING)"); /* counted for the tests */
    if (mock_current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* from a static pool: a stream whose context "died" (a test of fini) is no leak */
    static struct mock_stream pool[256];
    pthread_mutex_lock(&lock);
    struct mock_stream *s = NULL;
    for (int i = 0; i < 256 && s == NULL; i++)
        if (pool[i].magic == 0)
            s = &pool[i];
    if (s != NULL) {
        s->magic = 0x5157;
        s->queued = s->done = s->polls = 0;
    }
    pthread_mutex_unlock(&lock);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ph = (CUstream)s;
    return CUDA_SUCCESS;
}

static CUresult mock_stream_ok(CUstream h)
{
    if (h == NULL)
        return CUDA_SUCCESS;
    return ((struct mock_stream *)h)->magic == 0x5157 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuStreamDestroy(CUstream h)
{
    ENTER("cuStreamDestroy");
    CUresult r = mock_stream_ok(h);
    if (r == CUDA_SUCCESS)
        mock_land_all(h); /* a real driver finishes the stream's work first */
    if (r == CUDA_SUCCESS && h != NULL)
        ((struct mock_stream *)h)->magic = 0;
    return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    ENTER("cuStreamSynchronize");
    CUresult r = mock_stream_ok(h);
    if (r == CUDA_SUCCESS)
        mock_land_all(h);
    return r;
}

EXPORT CUresult cuStreamQuery(CUstream h)
{
    ENTER("cuStreamQuery");
    CUresult r = mock_stream_ok(h);
    if (r == CUDA_SUCCESS)
        mock_land_all(h);
    return r;
}

EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
    ENTER("cuEventCreate");
    *ph = (CUevent)calloc(1, sizeof(struct mock_event));
    return *ph != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuEventRecord(CUevent ev, CUstream s)
{
    ENTER("cuEventRecord");
    CUresult r = mock_stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    struct mock_event *e = (struct mock_event *)ev;
    pthread_mutex_lock(&lock);
    e->s = (struct mock_stream *)s;
    e->ticket = e->s != NULL ? e->s->queued : 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Queued copies land one per second query of an event after them (the first query after a
 * copy was queued finds it still running): the engine must poll, and must not use what a copy
 * writes before its event says so. */
EXPORT CUresult cuEventQuery(CUevent ev)
{
    ENTER("cuEventQuery");
    struct mock_event *e = (struct mock_event *)ev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (e->s != NULL && e->s->done < e->ticket) {
        if (++e->s->polls % 2 == 0)
            mock_land_one(e->s);
        r = CUDA_ERROR_NOT_READY;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuEventSynchronize(CUevent ev)
{
    ENTER("cuEventSynchronize");
    struct mock_event *e = (struct mock_event *)ev;
    pthread_mutex_lock(&lock);
    while (e->s != NULL && e->s->done < e->ticket)
        mock_land_one(e->s);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy(CUevent ev)
{
    ENTER("cuEventDestroy");
    free(ev);
    return CUDA_SUCCESS;
}

static CUresult mock_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult r = mock_stream_ok(s);
    if (r != CUDA_SUCCESS || n == 0)
        return r;
    struct mock_stream *q = (struct mock_stream *)s;
    if (!defer_copies || q == NULL) {
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
        return r;
    }
    pthread_mutex_lock(&lock);
    if (q->queued - q->done == MOCK_QUEUE) /* full: the oldest lands first */
        mock_land_one(q);
    q->q[q->queued % MOCK_QUEUE] = (struct mock_op){(uintptr_t)dst, (uintptr_t)src, n};
    q->queued++;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    ENTER("cuMemcpyAsync");
    return mock_copy(dst, src, n, s);
}

EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    ENTER("cuMemcpyHtoDAsync");
    if (nvf_mock_kind_of((void *)(uintptr_t)dst) == K_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    return mock_copy(dst, (CUdeviceptr)(uintptr_t)src, n, s);
}

EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    ENTER("cuMemcpyDtoHAsync");
    if (nvf_mock_kind_of((void *)(uintptr_t)src) == K_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    return mock_copy((CUdeviceptr)(uintptr_t)dst, src, n, s);
}

EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    ENTER("cuMemcpyDtoDAsync");
    return mock_copy(dst, src, n, s);
}

EXPORT CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                     unsigned int flags)
{
    ENTER("cuStreamWriteValue64");
    if (mock_stream_ok(s) == CUDA_SUCCESS)
        mock_land_all(s);
    __atomic_store_n((uint64_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
    return mock_stream_ok(s);
}

EXPORT CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                    unsigned int flags)
{
    ENTER("cuStreamWaitValue64");
    if (flags & CU_STREAM_WAIT_VALUE_FLUSH) { /* counted for the tests; refused where unsupported */
        (void)mock_enter("cuStreamWaitValue64(CU_STREAM_WAIT_VALUE_FLUSH)");
        if (!flush_remote)
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (mock_stream_ok(s) == CUDA_SUCCESS)
        mock_land_all(s);
    uint64_t v = __atomic_load_n((uint64_t *)(uintptr_t)addr, __ATOMIC_ACQUIRE);
    /* a stream that would block forever: report it instead (tests set flags first) */
    if ((int64_t)(v - value) < 0)
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    return mock_stream_ok(s);
}

/* ---- modules and kernels ------------------------------------------------------------------ */
typedef void (*mock_reduce_fn)(const nvf_cuda_reduce_args_t *a);
#define MOCK_REDUCE(OP, ID, T, FN)                                                                 \
    static void mock_reduce_##OP##_##ID(const nvf_cuda_reduce_args_t *a)                           \
    {                                                                                              \
        T *out = (T *)a->out;                                                                      \
        for (uint64_t i = 0; i < a->count; i++) {                                                  \
            T acc = ((const T *)a->src[0])[i];                                                     \
            for (unsigned k = 1; k < a->nsrc; k++)                                                 \
                acc = FN(acc, ((const T *)a->src[k])[i]);                                          \
            out[i] = acc;                                                                          \
        }                                                                                          \
    }
NVF_FOREACH_OP_DTYPE_DEVICE(MOCK_REDUCE)
#undef MOCK_REDUCE

enum { F_REDUCE, F_WRITE, F_WAIT, F_COPY };
struct mock_function {
    const char *name;
    int kind;
    mock_reduce_fn reduce;
    unsigned unit;
};
static const struct mock_function functions[] = {
#define MOCK_FN(OP, ID, T, FN)                                                                     \
    {"nvf_cuda_reduce_" #OP "_" #ID, F_REDUCE, mock_reduce_##OP##_##ID, 0},
    NVF_FOREACH_OP_DTYPE_DEVICE(MOCK_FN)
#undef MOCK_FN
        {NVF_CUDA_KNAME_FLAG_WRITE, F_WRITE, NULL, 0},
    {NVF_CUDA_KNAME_FLAG_WAIT, F_WAIT, NULL, 0},
    {NVF_CUDA_KNAME_COPY_1, F_COPY, NULL, 1},
    {NVF_CUDA_KNAME_COPY_4, F_COPY, NULL, 4},
    {NVF_CUDA_KNAME_COPY_8, F_COPY, NULL, 8},
    {NVF_CUDA_KNAME_COPY_16, F_COPY, NULL, 16},
};

struct mock_module {
    int magic;
};

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER("cuModuleLoadData");
    if (mock_current() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    uint32_t magic;
    memcpy(&magic, image, sizeof(magic));
    if (magic != 0xBA55ED50u) /* a fatbin */
        return CUDA_ERROR_INVALID_IMAGE;
    struct mock_module *m = calloc(1, sizeof(*m));
    m->magic = 0x30d;
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
    ENTER("cuModuleUnload");
    free(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule m, const char *name)
{
    ENTER("cuModuleGetFunction");
    if (m == NULL || ((struct mock_module *)m)->magic != 0x30d)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
        if (strcmp(functions[i].name, name) == 0) {
            *hfunc = (CUfunction)(uintptr_t)&functions[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz,
                               unsigned int shmem, CUstream s, void **params, void **extra)
{
    ENTER("cuLaunchKernel");
    const struct mock_function *fn = (const struct mock_function *)f;
    if (fn == NULL || gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1 ||
        params == NULL || extra != NULL || mock_current() == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = mock_stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    mock_land_all(s); /* the kernel runs after the copies queued before it */
    pthread_mutex_lock(&lock);
    memset(&last_launch, 0, sizeof(last_launch));
    snprintf(last_launch.name, sizeof(last_launch.name), "%s", fn->name);
    last_launch.grid = gx;
    last_launch.block = bx;
    if (fn->kind == F_REDUCE) {
        const nvf_cuda_reduce_args_t *a = params[0];
        last_launch.vec = a->vec;
        last_launch.nsrc = a->nsrc;
        last_launch.count = a->count;
    }
    pthread_mutex_unlock(&lock);
    switch (fn->kind) {
    case F_REDUCE: {
        const nvf_cuda_reduce_args_t *a = params[0];
        if (a->nsrc < 1 || a->nsrc > NVF_CUDA_ARGS_MAX_SOURCES)
            return CUDA_ERROR_INVALID_VALUE;
        fn->reduce(a);
        break;
    }
    case F_WRITE: {
        const nvf_cuda_write_args_t *a = params[0];
        __atomic_store_n(a->flag, a->value, __ATOMIC_RELEASE);
        break;
    }
    case F_WAIT: {
        const nvf_cuda_wait_args_t *a = params[0];
        uint64_t v = __atomic_load_n(a->flag, __ATOMIC_ACQUIRE);
        if ((int64_t)(v - a->value) < 0) /* it would time out: say so like the kernel does */
            __atomic_store_n(a->status, 1u, __ATOMIC_RELEASE);
        break;
    }
    case F_COPY: {
        const nvf_cuda_copy_args_t *a = params[0];
        memmove(a->dst, a->src, (size_t)a->n * fn->unit);
        break;
    }
    }
    return CUDA_SUCCESS;
}

/* ---- IPC (legacy) ------------------------------------------------------------------------- */
struct mock_ipc_handle {
    uint32_t magic;
    int32_t pid, fd;
    uint64_t size, id;
};

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    ENTER("cuIpcGetMemHandle");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)dptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->kind == K_DEVICE && a->base == dptr) {
        struct mock_ipc_handle mh = {0x1bc, (int32_t)getpid(), a->fd, a->size, a->id};
        memset(h, 0, sizeof(*h));
        memcpy(h->reserved, &mh, sizeof(mh));
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle h, unsigned int flags)
{
    ENTER("cuIpcOpenMemHandle");
    struct mock_ipc_handle mh;
    memcpy(&mh, h.reserved, sizeof(mh));
    if (mh.magic != 0x1bc)
        return CUDA_ERROR_INVALID_VALUE;
    if (mh.pid == getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* a process cannot open its own handle */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)mh.pid, (int)mh.fd);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MOCK_MAX_ALLOCS; i++) {
        struct mock_alloc *a = &allocs[i];
        if (a->used && a->kind == K_IMPORTED && a->src_pid == mh.pid && a->src_id == mh.id) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_ALREADY_MAPPED;
        }
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CUresult r = fd < 0 ? CUDA_ERROR_INVALID_VALUE
                        : mock_alloc_device(K_IMPORTED, (size_t)mh.size, pdptr, fd);
    if (r == CUDA_SUCCESS) {
        struct mock_alloc *a = mock_find((uintptr_t)*pdptr);
        a->src_pid = mh.pid;
        a->src_fd = mh.fd;
        a->src_id = mh.id;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    ENTER("cuIpcCloseMemHandle");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)dptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->kind == K_IMPORTED && a->base == dptr) {
        mock_release_range(a);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- virtual memory management (the FD route) --------------------------------------------- */
/* A generic allocation handle: an fd (dup of the allocation's memfd) and its size. */
struct mock_vmm_handle {
    int fd;
    size_t size;
};

EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
    ENTER("cuMemRetainAllocationHandle");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)addr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && (a->kind == K_VMM || a->kind == K_VMM_MAPPED)) {
        struct mock_vmm_handle *m = malloc(sizeof(*m));
        m->fd = dup(a->fd);
        m->size = a->size;
        *h = (CUmemGenericAllocationHandle)(uintptr_t)m;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    ENTER("cuMemRelease");
    struct mock_vmm_handle *m = (struct mock_vmm_handle *)(uintptr_t)h;
    if (m == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    close(m->fd);
    free(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle h,
                                             CUmemAllocationHandleType type,
                                             unsigned long long flags)
{
    ENTER("cuMemExportToShareableHandle");
    struct mock_vmm_handle *m = (struct mock_vmm_handle *)(uintptr_t)h;
    if (m == NULL || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    *(int *)shareable = dup(m->fd);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os_handle,
                                               CUmemAllocationHandleType type)
{
    ENTER("cuMemImportFromShareableHandle");
    int fd = (int)(uintptr_t)os_handle;
    struct stat st;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fstat(fd, &st) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct mock_vmm_handle *m = malloc(sizeof(*m));
    m->fd = dup(fd);
    m->size = (size_t)st.st_size;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    ENTER("cuMemAddressReserve");
    pthread_mutex_lock(&lock);
    size = mock_round(size);
    uintptr_t at = mock_arena_place(size);
    struct mock_alloc *a = at ? mock_slot() : NULL;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (a) {
        a->kind = K_RESERVED;
        a->base = at;
        a->size = size;
        *ptr = at;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER("cuMemAddressFree");
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->kind == K_RESERVED && a->base == ptr) {
        a->used = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle h, unsigned long long flags)
{
    ENTER("cuMemMap");
    struct mock_vmm_handle *m = (struct mock_vmm_handle *)(uintptr_t)h;
    pthread_mutex_lock(&lock);
    struct mock_alloc *a = mock_find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (m && a && a->kind == K_RESERVED && a->base == ptr && offset == 0 && size <= m->size &&
        mmap((void *)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd, 0) !=
            MAP_FAILED) {
        /* the reservation becomes a mapping; the reservation record is kept for AddressFree */
        struct mock_alloc *b = mock_slot();
        a->size = 0; /* hide the reservation while mapped */
        b->kind = K_VMM_MAPPED;
        b->base = ptr;
        b->size = size;
        b->fd = dup(m->fd);
        b->id = next_id++;
        b->ctx = mock_current();
        b->device = mock_ctx_device(b->ctx);
        b->src_fd = (int)size; /* reservation size, restored on unmap */
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER("cuMemUnmap");
    pthread_mutex_lock(&lock);
    struct mock_alloc *b = mock_find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (b && b->kind == K_VMM_MAPPED && b->base == ptr) {
        size_t rsize = (size_t)b->src_fd;
        mock_release_range(b);
        for (int i = 0; i < MOCK_MAX_ALLOCS; i++)
            if (allocs[i].used && allocs[i].kind == K_RESERVED && allocs[i].base == ptr)
                allocs[i].size = rsize;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t count)
{
    ENTER("cuMemSetAccess");
    if (count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id < 0 ||
        desc->location.id >= ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress --------------------------------------------------------------------- */
#ifndef NVF_MOCK_OLD
struct mock_proc {
    const char *name;
    void *fn;
};
#define P(n, f)                                                                                    \
    {                                                                                              \
        n, (void *)(uintptr_t)&f                                                                   \
    }
static const struct mock_proc procs[] = {
    P("cuInit", cuInit),
    P("cuGetErrorString", cuGetErrorString),
    P("cuGetErrorName", cuGetErrorName),
    P("cuDriverGetVersion", cuDriverGetVersion),
    P("cuPointerGetAttributes", cuPointerGetAttributes),
    P("cuDeviceGet", cuDeviceGet),
    P("cuDeviceGetCount", cuDeviceGetCount),
    P("cuDeviceGetAttribute", cuDeviceGetAttribute),
    P("cuDeviceGetUuid", cuDeviceGetUuid),
    P("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer),
    P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease),
    P("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState),
    P("cuCtxGetCurrent", cuCtxGetCurrent),
    P("cuCtxPushCurrent", cuCtxPushCurrent),
    P("cuCtxPopCurrent", cuCtxPopCurrent),
    P("cuCtxGetDevice", cuCtxGetDevice),
    P("cuMemGetAddressRange", cuMemGetAddressRange),
    P("cuMemHostAlloc", cuMemHostAlloc),
    P("cuMemFreeHost", cuMemFreeHost),
    P("cuMemHostRegister", cuMemHostRegister),
    P("cuMemHostUnregister", cuMemHostUnregister),
    P("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer),
    P("cuMemcpyAsync", cuMemcpyAsync),
    P("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync),
    P("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync),
    P("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync),
    P("cuStreamCreate", cuStreamCreate),
    P("cuStreamDestroy", cuStreamDestroy),
    P("cuStreamSynchronize", cuStreamSynchronize),
    P("cuStreamQuery", cuStreamQuery),
    P("cuEventCreate", cuEventCreate),
    P("cuEventRecord", cuEventRecord),
    P("cuEventQuery", cuEventQuery),
    P("cuEventSynchronize", cuEventSynchronize),
    P("cuEventDestroy", cuEventDestroy),
    P("cuModuleLoadData", cuModuleLoadData),
    P("cuModuleUnload", cuModuleUnload),
    P("cuModuleGetFunction", cuModuleGetFunction),
    P("cuLaunchKernel", cuLaunchKernel),
    P("cuIpcGetMemHandle", cuIpcGetMemHandle),
    P("cuIpcOpenMemHandle", cuIpcOpenMemHandle),
    P("cuIpcCloseMemHandle", cuIpcCloseMemHandle),
    P("cuStreamWriteValue64", cuStreamWriteValue64),
    P("cuStreamWaitValue64", cuStreamWaitValue64),
    P("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
    P("cuMemExportToShareableHandle", cuMemExportToShareableHandle),
    P("cuMemImportFromShareableHandle", cuMemImportFromShareableHandle),
    P("cuMemAddressReserve", cuMemAddressReserve),
    P("cuMemAddressFree", cuMemAddressFree),
    P("cuMemMap", cuMemMap),
    P("cuMemUnmap", cuMemUnmap),
    P("cuMemSetAccess", cuMemSetAccess),
    P("cuMemRelease", cuMemRelease),
};
#undef P

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *status)
{
    mock_enter("cuGetProcAddress");
    *pfn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (getenv("NVF_MOCK_NO_PROCADDR") != NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        if (strcmp(procs[i].name, symbol) == 0) {
            *pfn = procs[i].fn;
            if (status)
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}
#endif
