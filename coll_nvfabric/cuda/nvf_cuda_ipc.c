/*
 * nvf_cuda_ipc.c: CUDA IPC between the ranks of a node: export a device buffer as a fixed-size
 * descriptor, import a peer's descriptor as a mapping in this process, with caches on both
 * sides (one per device context, under the device's lock).
 *
 * Legacy route: cuIpcGetMemHandle on the allocation base / cuIpcOpenMemHandle (lazy peer
 * access). FD route, for VMM memory exportable as a POSIX fd: cuMemExportToShareableHandle in
 * the exporter, pidfd_open + pidfd_getfd in the importer, cuMemImportFromShareableHandle, then
 * reserve, map and grant access. Pool memory (cudaMallocAsync) and VMM memory without an fd
 * handle type are reported as not exportable: the caller stages.
 *
 * Import cache: keyed by (exporting process, buffer id, base); a descriptor of the same process
 * overlapping a cached mapping with another buffer id evicts it (the peer freed and reallocated);
 * capacity NVF_CUDA_IPC_CACHE_MAX, least recently used first. A mapping is closed only after
 * nvfabric's stream of that context is idle. Must not close a mapping in use by queued work, and
 * must not import its own process's buffers (it returns their address).
 */
#include "nvf_cuda_dev.h"
#include "../nvf_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define NVF_CUDA_IPC_BUCKETS 1024
#define NVF_CUDA_EXPORT_MAX 64

struct nvf_cuda_ipc_entry {
    uint64_t proc_id, buffer_id, base, size; /* the exporter's allocation */
    uint32_t method;
    CUdeviceptr mapped; /* where base is mapped here */
    struct nvf_cuda_ipc_entry *hnext;
    struct nvf_cuda_ipc_entry *prev, *next; /* LRU: head most recent */
};

struct nvf_cuda_ipc_cache {
    struct nvf_cuda_ipc_entry *buckets[NVF_CUDA_IPC_BUCKETS];
    struct nvf_cuda_ipc_entry *head, *tail;
    unsigned live;
    nvf_cuda_ipc_stats_t stats;
};

struct nvf_cuda_export_entry {
    uint64_t buffer_id;
    uintptr_t base;
    size_t size;
    uint32_t method;
    int fd; /* FD route: the exported fd, kept open; -1 otherwise */
    uint64_t last_use;
    unsigned char handle[64];
};

struct nvf_cuda_export_cache {
    struct nvf_cuda_export_entry e[NVF_CUDA_EXPORT_MAX];
    unsigned n;
    uint64_t tick;
};

_Static_assert(sizeof(CUipcMemHandle) == 64, "CUipcMemHandle is 64 bytes");

static unsigned nvf_cuda_ipc_hash(uint64_t proc_id, uint64_t buffer_id, uint64_t base)
{
    uint64_t h = proc_id * 0x9e3779b97f4a7c15ULL ^ buffer_id * 0xc2b2ae3d27d4eb4fULL ^ base;
    h ^= h >> 29;
    return (unsigned)(h % NVF_CUDA_IPC_BUCKETS);
}

static nvf_status_t nvf_cuda_ipc_cache_get(nvf_cuda_dev_t *d, struct nvf_cuda_ipc_cache **c)
{
    if (d->ipc == NULL)
        d->ipc = calloc(1, sizeof(*d->ipc));
    *c = d->ipc;
    return *c != NULL ? NVF_OK : NVF_ERR_NOMEM;
}

/* ---- export ------------------------------------------------------------------------------ */
static struct nvf_cuda_export_entry *nvf_cuda_export_find(nvf_cuda_dev_t *d, uint64_t buffer_id,
                                                          uintptr_t base, uint32_t method)
{
    struct nvf_cuda_export_cache *x = d->exp;
    if (x == NULL)
        return NULL;
    for (unsigned i = 0; i < x->n; i++) {
        struct nvf_cuda_export_entry *e = &x->e[i];
        if (e->buffer_id == buffer_id && e->base == base && e->method == method) {
            e->last_use = ++x->tick;
            return e;
        }
    }
    return NULL;
}

static void nvf_cuda_export_drop(struct nvf_cuda_export_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
}

/* A slot for a new export (the least recently used one when full). */
static struct nvf_cuda_export_entry *nvf_cuda_export_slot(nvf_cuda_dev_t *d)
{
    if (d->exp == NULL && (d->exp = calloc(1, sizeof(*d->exp))) == NULL)
        return NULL;
    struct nvf_cuda_export_cache *x = d->exp;
    struct nvf_cuda_export_entry *e;
    if (x->n < NVF_CUDA_EXPORT_MAX) {
        e = &x->e[x->n++];
    } else {
        e = &x->e[0];
        for (unsigned i = 1; i < x->n; i++)
            if (x->e[i].last_use < e->last_use)
                e = &x->e[i];
        nvf_cuda_export_drop(e);
    }
    memset(e, 0, sizeof(*e));
    e->fd = -1;
    e->last_use = ++x->tick;
    return e;
}

/* FD exports keep the allocation alive: drop those whose buffer is gone. */
static void nvf_cuda_export_prune_fds(nvf_cuda_dev_t *d)
{
    struct nvf_cuda_export_cache *x = d->exp;
    for (unsigned i = 0; x != NULL && i < x->n; i++) {
        struct nvf_cuda_export_entry *e = &x->e[i];
        if (e->fd < 0)
            continue;
        nvf_cuda_ptr_info_t info;
        if (nvf_cuda_ptr_query((const void *)e->base, &info) != NVF_MEM_DEVICE ||
            info.buffer_id != e->buffer_id) {
            nvf_cuda_export_drop(e);
            e->buffer_id = 0;
            e->base = 0;
        }
    }
}

static void nvf_cuda_desc_fill(nvf_cuda_dev_t *d, nvf_cuda_ipc_desc_t *desc,
                               const struct nvf_cuda_export_entry *e, const void *ptr, size_t bytes)
{
    desc->magic = NVF_CUDA_IPC_MAGIC;
    desc->method = e->method;
    desc->proc_id = nvf_cuda_proc_id();
    desc->buffer_id = e->buffer_id;
    desc->base = e->base;
    desc->size = e->size;
    desc->offset = (uint64_t)((uintptr_t)ptr - e->base);
    desc->bytes = bytes;
    desc->pid = (int32_t)getpid();
    desc->fd = e->fd;
    desc->uuid = d->uuid;
    memcpy(desc->handle, e->handle, sizeof(desc->handle));
}

nvf_status_t nvf_cuda_ipc_export(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                 nvf_cuda_ipc_desc_t *desc, const char **why)
{
    nvf_cuda_ptr_info_t info;
    nvf_cuda_ptr_query(ptr, &info);
    return nvf_cuda_ipc_export_described(d, ptr, bytes, &info, desc, why);
}

nvf_status_t nvf_cuda_ipc_export_described(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                           const nvf_cuda_ptr_info_t *described,
                                           nvf_cuda_ipc_desc_t *desc, const char **why)
{
    const char *dummy;
    if (why == NULL)
        why = &dummy;
    *why = NULL;
    memset(desc, 0, sizeof(*desc));
    const nvf_cuda_ptr_info_t info = *described;
    const nvf_memkind_t kind = info.kind;
    if (kind == NVF_MEM_MANAGED) {
        *why = "managed memory cannot be shared with CUDA IPC";
        return NVF_ERR_UNSUPPORTED;
    }
    if (kind != NVF_MEM_DEVICE || info.base == 0) {
        *why = "not device memory";
        return NVF_ERR_INVALID;
    }
    if (info.offset + bytes > info.size || info.offset + bytes < info.offset) {
        *why = "the buffer extends past its allocation";
        return NVF_ERR_INVALID;
    }
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    pthread_mutex_lock(&d->lock);
    struct nvf_cuda_ipc_cache *c;
    st = nvf_cuda_ipc_cache_get(d, &c);
    if (st != NVF_OK)
        goto out;
    c->stats.exports++;
    struct nvf_cuda_export_entry *e =
        nvf_cuda_export_find(d, info.buffer_id, info.base, NVF_CUDA_IPC_LEGACY);
    if (e != NULL) {
        c->stats.export_hits++;
        nvf_cuda_desc_fill(d, desc, e, ptr, bytes);
        goto out;
    }
    nvf_cuda_ptr_detail_t det;
    st = nvf_cuda_ptr_detail(ptr, &det);
    if (st != NVF_OK)
        goto out;
    if (det.from_pool) {
        *why = "cudaMallocAsync (memory pool) memory cannot be exported with cuIpcGetMemHandle";
        st = NVF_ERR_UNSUPPORTED;
        goto out;
    }
    if (!det.legacy_ipc) {
        *why = "cuMemCreate (VMM) memory cannot be exported with cuIpcGetMemHandle";
        st = NVF_ERR_UNSUPPORTED;
        goto out;
    }
    CUipcMemHandle h;
    CUresult r = nvf_cu.cuIpcGetMemHandle(&h, (CUdeviceptr)info.base);
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED) {
        nvf_cuda_note(r, "cuIpcGetMemHandle");
        *why = "cuIpcGetMemHandle refuses this memory";
        st = NVF_ERR_UNSUPPORTED;
        goto out;
    }
    st = nvf_cuda_check(r, "cuIpcGetMemHandle");
    if (st != NVF_OK)
        goto out;
    e = nvf_cuda_export_slot(d);
    if (e == NULL) {
        st = NVF_ERR_NOMEM;
        goto out;
    }
    e->buffer_id = info.buffer_id;
    e->base = info.base;
    e->size = info.size;
    e->method = NVF_CUDA_IPC_LEGACY;
    memcpy(e->handle, h.reserved, sizeof(e->handle));
    nvf_cuda_desc_fill(d, desc, e, ptr, bytes);
out:
    pthread_mutex_unlock(&d->lock);
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

nvf_status_t nvf_cuda_ipc_export_fd(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                    nvf_cuda_ipc_desc_t *desc, const char **why)
{
    const char *dummy;
    if (why == NULL)
        why = &dummy;
    *why = NULL;
    memset(desc, 0, sizeof(*desc));
    if (nvf_cu.cuMemRetainAllocationHandle == NULL || nvf_cu.cuMemExportToShareableHandle == NULL ||
        nvf_cu.cuMemRelease == NULL) {
        *why = "the driver has no virtual memory management API";
        return NVF_ERR_UNSUPPORTED;
    }
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    pthread_mutex_lock(&d->lock);
    nvf_cuda_ptr_detail_t det;
    st = nvf_cuda_ptr_detail(ptr, &det);
    if (st != NVF_OK) {
        *why = "not device memory";
        goto out;
    }
    if (!det.vmm || !(det.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        det.map_base == 0) {
        *why = "not cuMemCreate memory exportable as a POSIX file descriptor";
        st = NVF_ERR_UNSUPPORTED;
        goto out;
    }
    const size_t offset = (size_t)((uintptr_t)ptr - det.map_base);
    if (offset + bytes > det.map_size) {
        *why = "the buffer extends past its mapping";
        st = NVF_ERR_INVALID;
        goto out;
    }
    struct nvf_cuda_ipc_cache *c;
    st = nvf_cuda_ipc_cache_get(d, &c);
    if (st != NVF_OK)
        goto out;
    c->stats.exports++;
    struct nvf_cuda_export_entry *e =
        nvf_cuda_export_find(d, det.info.buffer_id, det.map_base, NVF_CUDA_IPC_FD);
    if (e != NULL) {
        c->stats.export_hits++;
        nvf_cuda_desc_fill(d, desc, e, ptr, bytes);
        goto out;
    }
    nvf_cuda_export_prune_fds(d);
    CUmemGenericAllocationHandle h;
    st = NVF_CU(cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)ptr);
    if (st != NVF_OK)
        goto out;
    int fd = -1;
    st = NVF_CU(cuMemExportToShareableHandle, &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    nvf_cuda_check(nvf_cu.cuMemRelease(h), "cuMemRelease");
    if (st != NVF_OK)
        goto out;
    e = nvf_cuda_export_slot(d);
    if (e == NULL) {
        close(fd);
        st = NVF_ERR_NOMEM;
        goto out;
    }
    e->buffer_id = det.info.buffer_id;
    e->base = det.map_base;
    e->size = det.map_size;
    e->method = NVF_CUDA_IPC_FD;
    e->fd = fd;
    nvf_cuda_desc_fill(d, desc, e, ptr, bytes);
out:
    pthread_mutex_unlock(&d->lock);
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

/* ---- import ------------------------------------------------------------------------------ */
static void nvf_cuda_lru_unlink(struct nvf_cuda_ipc_cache *c, struct nvf_cuda_ipc_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void nvf_cuda_lru_push(struct nvf_cuda_ipc_cache *c, struct nvf_cuda_ipc_entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (c->tail == NULL)
        c->tail = e;
}

/* Unmaps one imported mapping (d's context is current; its stream is idle). */
static nvf_status_t nvf_cuda_unmap(const struct nvf_cuda_ipc_entry *e, bool quiet)
{
    nvf_status_t (*chk)(CUresult, const char *) = quiet ? nvf_cuda_note : nvf_cuda_check;
    if (e->method == NVF_CUDA_IPC_LEGACY)
        return chk(nvf_cu.cuIpcCloseMemHandle(e->mapped), "cuIpcCloseMemHandle");
    nvf_status_t st = chk(nvf_cu.cuMemUnmap(e->mapped, e->size), "cuMemUnmap");
    nvf_status_t st2 = chk(nvf_cu.cuMemAddressFree(e->mapped, e->size), "cuMemAddressFree");
    return st != NVF_OK ? st : st2;
}

/* Removes e from the cache and unmaps it. */
static nvf_status_t nvf_cuda_ipc_close_entry(struct nvf_cuda_ipc_cache *c,
                                             struct nvf_cuda_ipc_entry *e, bool quiet)
{
    unsigned b = nvf_cuda_ipc_hash(e->proc_id, e->buffer_id, e->base);
    for (struct nvf_cuda_ipc_entry **p = &c->buckets[b]; *p != NULL; p = &(*p)->hnext) {
        if (*p == e) {
            *p = e->hnext;
            break;
        }
    }
    nvf_cuda_lru_unlink(c, e);
    c->live--;
    c->stats.closes++;
    nvf_status_t st = nvf_cuda_unmap(e, quiet);
    free(e);
    return st;
}

/* Maps a descriptor of another process (d's context is current). */
static nvf_status_t nvf_cuda_map(nvf_cuda_dev_t *d, const nvf_cuda_ipc_desc_t *desc,
                                 CUdeviceptr *mapped)
{
    *mapped = 0;
    if (desc->method == NVF_CUDA_IPC_LEGACY) {
        CUipcMemHandle h;
        memcpy(h.reserved, desc->handle, sizeof(h.reserved));
        return NVF_CU(cuIpcOpenMemHandle, mapped, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    }
    if (nvf_cu.cuMemImportFromShareableHandle == NULL || nvf_cu.cuMemAddressReserve == NULL ||
        nvf_cu.cuMemMap == NULL || nvf_cu.cuMemSetAccess == NULL || nvf_cu.cuMemUnmap == NULL ||
        nvf_cu.cuMemAddressFree == NULL || nvf_cu.cuMemRelease == NULL) {
        nvf_cuda_set_error("the driver has no virtual memory management API");
        return NVF_ERR_UNSUPPORTED;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)desc->pid, 0);
    if (pidfd < 0) {
        nvf_cuda_set_error("pidfd_open(%d) failed: %s", (int)desc->pid, strerror(errno));
        nvf_error("cuda: %s", nvf_cuda_last_error());
        return NVF_ERR_SYSTEM;
    }
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)desc->fd, 0);
    int err = errno;
    close(pidfd);
    if (fd < 0) {
        nvf_cuda_set_error("pidfd_getfd(pid %d, fd %d) failed: %s (it needs ptrace access to the "
                           "exporter: same user and kernel.yama.ptrace_scope 0)",
                           (int)desc->pid, (int)desc->fd, strerror(err));
        nvf_error("cuda: %s", nvf_cuda_last_error());
        return NVF_ERR_SYSTEM;
    }
    CUmemGenericAllocationHandle h;
    nvf_status_t st = NVF_CU(cuMemImportFromShareableHandle, &h, (void *)(uintptr_t)fd,
                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (st != NVF_OK)
        return st;
    CUdeviceptr va = 0;
    st = NVF_CU(cuMemAddressReserve, &va, (size_t)desc->size, 0, 0, 0);
    if (st == NVF_OK) {
        st = NVF_CU(cuMemMap, va, (size_t)desc->size, 0, h, 0);
        if (st == NVF_OK) {
            CUmemAccessDesc acc;
            memset(&acc, 0, sizeof(acc));
            acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            acc.location.id = d->ordinal;
            acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            st = NVF_CU(cuMemSetAccess, va, (size_t)desc->size, &acc, 1);
            if (st != NVF_OK)
                nvf_cuda_check(nvf_cu.cuMemUnmap(va, (size_t)desc->size), "cuMemUnmap");
        }
        if (st != NVF_OK)
            nvf_cuda_check(nvf_cu.cuMemAddressFree(va, (size_t)desc->size), "cuMemAddressFree");
    }
    /* the mapping holds its own reference to the allocation */
    nvf_cuda_check(nvf_cu.cuMemRelease(h), "cuMemRelease");
    if (st == NVF_OK)
        *mapped = va;
    return st;
}

static bool nvf_cuda_desc_valid(const nvf_cuda_ipc_desc_t *desc)
{
    return desc->magic == NVF_CUDA_IPC_MAGIC &&
           (desc->method == NVF_CUDA_IPC_LEGACY || desc->method == NVF_CUDA_IPC_FD) &&
           desc->size > 0 && desc->offset <= desc->size &&
           desc->bytes <= desc->size - desc->offset && desc->base != 0 && desc->proc_id != 0;
}

nvf_status_t nvf_cuda_ipc_import(nvf_cuda_dev_t *d, const nvf_cuda_ipc_desc_t *desc, void **ptr)
{
    *ptr = NULL;
    if (!nvf_cuda_desc_valid(desc)) {
        nvf_cuda_set_error("malformed CUDA IPC descriptor");
        return NVF_ERR_INVALID;
    }
    if (desc->proc_id == nvf_cuda_proc_id()) {
        *ptr = (void *)(uintptr_t)(desc->base + desc->offset);
        return NVF_OK;
    }
    pthread_mutex_lock(&d->lock);
    struct nvf_cuda_ipc_cache *c;
    nvf_status_t st = nvf_cuda_ipc_cache_get(d, &c);
    if (st != NVF_OK)
        goto out;
    c->stats.imports++;
    unsigned b = nvf_cuda_ipc_hash(desc->proc_id, desc->buffer_id, desc->base);
    struct nvf_cuda_ipc_entry *e = c->buckets[b];
    while (e != NULL && !(e->proc_id == desc->proc_id && e->buffer_id == desc->buffer_id &&
                          e->base == desc->base && e->method == desc->method))
        e = e->hnext;
    if (e != NULL) {
        c->stats.import_hits++;
        nvf_cuda_lru_unlink(c, e);
        nvf_cuda_lru_push(c, e);
        *ptr = (void *)(uintptr_t)(e->mapped + desc->offset);
        goto out;
    }

    bool pushed;
    st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        goto out;
    /* Stale mappings of this peer (its buffer id changed: freed and reallocated), then room. */
    bool synced = false;
    for (struct nvf_cuda_ipc_entry *s = c->head, *next; s != NULL && st == NVF_OK; s = next) {
        next = s->next;
        if (s->proc_id != desc->proc_id || s->base >= desc->base + desc->size ||
            desc->base >= s->base + s->size)
            continue;
        if (!synced && (st = NVF_CU(cuStreamSynchronize, d->stream)) != NVF_OK)
            break;
        synced = true;
        nvf_log(3, "cuda: IPC mapping of a peer's buffer %llx (id %llu) is stale: closed",
                (unsigned long long)s->base, (unsigned long long)s->buffer_id);
        c->stats.stale_evictions++;
        st = nvf_cuda_ipc_close_entry(c, s, false);
    }
    if (st == NVF_OK && c->live >= NVF_CUDA_IPC_CACHE_MAX) {
        if (!synced)
            st = NVF_CU(cuStreamSynchronize, d->stream);
        if (st == NVF_OK) {
            c->stats.lru_evictions++;
            st = nvf_cuda_ipc_close_entry(c, c->tail, false);
        }
    }
    CUdeviceptr mapped = 0;
    if (st == NVF_OK)
        st = nvf_cuda_map(d, desc, &mapped);
    nvf_cuda_ctx_leave(d, pushed);
    if (st != NVF_OK)
        goto out;
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        /* cannot cache it: unmap rather than leak */
        struct nvf_cuda_ipc_entry tmp = {
            .method = desc->method, .mapped = mapped, .size = desc->size};
        if (nvf_cuda_ctx_enter(d, &pushed) == NVF_OK) {
            nvf_cuda_unmap(&tmp, false);
            nvf_cuda_ctx_leave(d, pushed);
        }
        st = NVF_ERR_NOMEM;
        goto out;
    }
    e->proc_id = desc->proc_id;
    e->buffer_id = desc->buffer_id;
    e->base = desc->base;
    e->size = desc->size;
    e->method = desc->method;
    e->mapped = mapped;
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    nvf_cuda_lru_push(c, e);
    c->live++;
    c->stats.opens++;
    *ptr = (void *)(uintptr_t)(mapped + desc->offset);
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

void nvf_cuda_ipc_stats(nvf_cuda_dev_t *d, nvf_cuda_ipc_stats_t *stats)
{
    memset(stats, 0, sizeof(*stats));
    pthread_mutex_lock(&d->lock);
    if (d->ipc != NULL) {
        *stats = d->ipc->stats;
        stats->live = d->ipc->live;
    }
    pthread_mutex_unlock(&d->lock);
}

/* Closes every import of d (d's context current). */
static nvf_status_t nvf_cuda_ipc_close_all(nvf_cuda_dev_t *d, bool quiet)
{
    nvf_status_t st = NVF_OK;
    struct nvf_cuda_ipc_cache *c = d->ipc;
    while (c != NULL && c->head != NULL) {
        nvf_status_t s = nvf_cuda_ipc_close_entry(c, c->head, quiet);
        if (st == NVF_OK)
            st = s;
    }
    return st;
}

nvf_status_t nvf_cuda_ipc_flush(nvf_cuda_dev_t *d)
{
    bool pushed;
    pthread_mutex_lock(&d->lock);
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st == NVF_OK) {
        st = NVF_CU(cuStreamSynchronize, d->stream);
        if (st == NVF_OK)
            st = nvf_cuda_ipc_close_all(d, false);
        nvf_cuda_ctx_leave(d, pushed);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

void nvf_cuda_ipc_fini_dev(nvf_cuda_dev_t *d)
{
    nvf_cuda_ipc_close_all(d, true);
    free(d->ipc);
    d->ipc = NULL;
    if (d->exp != NULL)
        for (unsigned i = 0; i < d->exp->n; i++)
            nvf_cuda_export_drop(&d->exp->e[i]);
    free(d->exp);
    d->exp = NULL;
}
