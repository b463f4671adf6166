/*
 * nvf_cuda.h: the device stage's building blocks, the whole API the engine calls for CUDA
 * device buffers: the driver (loaded at run time), buffer attributes, one nvfabric stream per
 * CUDA context, copies, pinned and registered host memory, the reduction / flag / copy kernels,
 * CUDA IPC export and import (cached), device identity (UUIDs) and peer access.
 *
 * Must not include cuda.h (or any CUDA header): the engine includes this file and never sees a
 * CUDA type. Every handle here is opaque, every call returns an nvf_status_t (nvf.h); NVF_ERR_CUDA
 * means a driver call failed: the failing call and the driver's own text were reported through
 * nvf_error() and are available from nvf_cuda_last_error() on the calling thread.
 *
 * Builds without the CUDA toolkit (configure --with-cuda=no) get the same API, implemented by
 * stubs: nvf_cuda_available() is false, classification says host, everything else returns
 * NVF_ERR_UNSUPPORTED. So engine code needs no #ifdef.
 *
 * Threads: every function may be called from any thread. Work queued on a device's stream is
 * ordered as the calls were made; callers that queue from several threads at once must order
 * those threads themselves.
 *
 * Streams and the caller's data: nvfabric's stream is a blocking one: its work follows what the
 * program queued before on the legacy default stream. Work on the program's own streams (or
 * per-thread default streams) must be complete before MPI_Allreduce, as with every CUDA-aware
 * MPI.
 */
#ifndef NVF_CUDA_H
#define NVF_CUDA_H

#include "../nvf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the driver --------------------------------------------------------------------------
 * libcuda.so.1 is opened with dlopen() at the first call that needs it (at most once, thread
 * safe); nothing links against it. Loading never calls cuInit: a process that has not
 * initialised CUDA itself has no device buffers, and every query then says "host". */

/* Whether a usable driver is loaded (loads it on the first call). Says once, at verbose level 1,
 * whether a driver was found and why not. */
bool nvf_cuda_available(void);
/* The driver's CUDA version (e.g. 13000 for 13.0), 0 without a driver. */
int nvf_cuda_driver_version(void);
/* One line: "CUDA driver 13.0 (libcuda.so.1, cuGetProcAddress)" or why there is none. */
const char *nvf_cuda_driver_status(void);
/* The last CUDA failure reported on this thread ("cuMemcpyAsync failed: invalid argument
 * (CUDA_ERROR_INVALID_VALUE)"), "" if none. */
const char *nvf_cuda_last_error(void);

/* Internal to the fast path below: 0 not loaded yet, 1 no driver, 2 driver present (hidden: one
 * PC-relative load, no GOT, inside the component). */
#if defined(__GNUC__)
extern __attribute__((visibility("hidden"))) _Atomic int nvf_cuda_driver_state_;
#else
extern _Atomic int nvf_cuda_driver_state_;
#endif
/* A branch, not a call, once the first load has been tried: false means no driver, so no buffer
 * can be device memory. */
static inline bool nvf_cuda_maybe_present(void)
{
    int s = atomic_load_explicit(&nvf_cuda_driver_state_, memory_order_acquire);
    if (s == 1)
        return false;
    return s == 2 || nvf_cuda_available();
}

/* ---- buffer attributes -------------------------------------------------------------------- */
/* (nvf_cuda_ptr_info_t, one buffer as cuPointerGetAttributes sees it: in nvf.h) */

/* Where p lives; fills info (may be NULL). Never fails: without a driver, when CUDA is not
 * initialised, or when the driver returns any error, the answer is NVF_MEM_HOST. One driver call
 * (cuPointerGetAttributes); never calls cuInit. */
nvf_memkind_t nvf_cuda_ptr_query(const void *p, nvf_cuda_ptr_info_t *info);

/* What the IPC code needs to know about a device buffer. */
typedef struct nvf_cuda_ptr_detail {
    nvf_cuda_ptr_info_t info;
    bool legacy_ipc;       /* cuIpcGetMemHandle works on it (cudaMalloc / cuMemAlloc memory) */
    bool from_pool;        /* allocated from a memory pool (cudaMallocAsync) */
    bool vmm;              /* a cuMemCreate/cuMemMap mapping (not pool, not legacy) */
    unsigned handle_types; /* CUmemAllocationHandleType bits it may be exported as (VMM, pools) */
    uintptr_t map_base;    /* start and size of the mapping that holds it (cuMemGetAddressRange) */
    size_t map_size;
} nvf_cuda_ptr_detail_t;

/* NVF_OK with d filled, NVF_ERR_INVALID if p is not device or managed memory, NVF_ERR_CUDA. */
nvf_status_t nvf_cuda_ptr_detail(const void *p, nvf_cuda_ptr_detail_t *d);

/* Both buffers of a call (sbuf NULL: in place) as one kind, with each buffer's attributes
 * (either info pointer may be NULL). Same rules as nvf_memkind_classify (nvf_memkind.c):
 * host + pinned host is host; device buffers on different devices, or device with host or
 * managed memory, are NVF_MEM_MIXED. */
nvf_memkind_t nvf_memkind_classify_ex(const void *sbuf, const void *rbuf,
                                      nvf_cuda_ptr_info_t *sinfo, nvf_cuda_ptr_info_t *rinfo);

/* ---- devices, streams, events ------------------------------------------------------------- */
/* nvfabric's state in one CUDA context: the context, its device, a blocking stream created
 * by nvfabric, the kernels module (loaded at the first launch), a pinned status word for
 * device-side timeouts, and the IPC caches. Lives until nvf_cuda_fini(). */
typedef struct nvf_cuda_dev nvf_cuda_dev_t;

/* The device state for the context that owns a buffer (info from nvf_cuda_ptr_query of a device
 * or managed buffer); for buffers without a context (pool / VMM memory), the primary context of
 * its device. NVF_ERR_INVALID for host memory. */
nvf_status_t nvf_cuda_dev_for_buffer(const nvf_cuda_ptr_info_t *info, nvf_cuda_dev_t **out);
/* The device state for the primary context of device `ordinal` (retained until fini). */
nvf_status_t nvf_cuda_dev_for_ordinal(int ordinal, nvf_cuda_dev_t **out);
int nvf_cuda_dev_ordinal(const nvf_cuda_dev_t *d);
int nvf_cuda_dev_sm_count(const nvf_cuda_dev_t *d);
/* 64-bit stream memory operations (cuStreamWriteValue64 / cuStreamWaitValue64) work here. */
bool nvf_cuda_dev_has_memops(const nvf_cuda_dev_t *d);

/* Waits for everything queued on d's stream. NVF_ERR_PEER if a device-side flag wait timed out
 * (the wait kernels give up rather than hang; what followed them on the stream has run on
 * incomplete data and must be discarded), NVF_ERR_CUDA if the driver reported an error. */
nvf_status_t nvf_cuda_stream_sync(nvf_cuda_dev_t *d);
/* *done = whether everything queued so far has completed (does not block). */
nvf_status_t nvf_cuda_stream_query(nvf_cuda_dev_t *d, bool *done);

/* Events on d's stream, for pipelining (e.g. knowing that a chunk of a device-to-host copy has
 * landed). Created without timing. */
typedef struct nvf_cuda_event nvf_cuda_event_t;
nvf_status_t nvf_cuda_event_create(nvf_cuda_dev_t *d, nvf_cuda_event_t **ev);
nvf_status_t nvf_cuda_event_record(nvf_cuda_dev_t *d, nvf_cuda_event_t *ev);
nvf_status_t nvf_cuda_event_query(nvf_cuda_event_t *ev, bool *done);
nvf_status_t nvf_cuda_event_sync(nvf_cuda_event_t *ev);
void nvf_cuda_event_destroy(nvf_cuda_event_t *ev);

/* Releases everything nvfabric made (streams, modules, IPC mappings and exported file
 * descriptors, pinned status words, retained primary contexts). Call once at component close;
 * a context the application already destroyed is skipped quietly. */
void nvf_cuda_fini(void);

/* ---- copies (asynchronous, on d's stream) ------------------------------------------------
 * Any direction with unified addressing; the host side should be pinned (nvf_cuda_host_alloc or
 * nvf_cuda_host_register) for the copy to be truly asynchronous. bytes == 0 is a no-op. */
nvf_status_t nvf_cuda_copy_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes);
nvf_status_t nvf_cuda_copy_d2h_async(nvf_cuda_dev_t *d, void *host, const void *dev, size_t bytes);
nvf_status_t nvf_cuda_copy_h2d_async(nvf_cuda_dev_t *d, void *dev, const void *host, size_t bytes);
nvf_status_t nvf_cuda_copy_d2d_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes);

/* ---- pinned and registered host memory ------------------------------------------------------ */
/* Page-locked, portable (usable from every context), device-mapped host memory for staging. */
nvf_status_t nvf_cuda_host_alloc(nvf_cuda_dev_t *d, size_t bytes, void **host);
void nvf_cuda_host_free(nvf_cuda_dev_t *d, void *host);
/* Page-locks an existing host region (the engine's shared-memory segment) so that copies to and
 * from it are asynchronous and device kernels can read and write it (flags). *dev_ptr receives the
 * address device code uses for `host` (the same value with unified addressing). A region some
 * other code registered already is accepted (and left registered by nvf_cuda_host_unregister). */
nvf_status_t nvf_cuda_host_register(nvf_cuda_dev_t *d, void *host, size_t bytes, void **dev_ptr);
nvf_status_t nvf_cuda_host_unregister(nvf_cuda_dev_t *d, void *host);

/* ---- kernels (asynchronous, on d's stream) ------------------------------------------------ */
/* Most source buffers of one reduction launch (more: reduce in steps, out as the next src[0]). */
#define NVF_CUDA_MAX_SOURCES 16

/* out[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], left to right (a fixed order: the same
 * inputs give the same bits on every rank and every run, and the same bits as the host's
 * nvf_reduce_many). out may equal any one src (each element is read from every source before
 * it is written: the engine's in-place CUDA IPC call writes over its own src[me]); otherwise no
 * two buffers overlap. Buffers may be this
 * process's device memory, IPC mappings of peers' buffers, managed or device-mapped host memory.
 * 16-byte loads when every pointer is 16-byte aligned, element loads otherwise; the grid follows
 * the count and the SM count. NVF_ERR_UNSUPPORTED if the device has no kernel for (dt, op)
 * (nvf_op_supported_on_device), NVF_ERR_INVALID for nsrc outside 1..NVF_CUDA_MAX_SOURCES. */
nvf_status_t nvf_cuda_reduce_async(nvf_cuda_dev_t *d, nvf_dtype_t dt, nvf_op_t op, void *out,
                                   const void *const *src, int nsrc, size_t count);

/* A copy by a kernel (for IPC mappings and small sizes, where a copy engine's latency is larger):
 * the widest loads that the alignment of dst, src allows. */
nvf_status_t nvf_cuda_copy_kernel_async(nvf_cuda_dev_t *d, void *dst, const void *src,
                                        size_t bytes);

/* Flags for ordering between processes: 64-bit words in IPC-mapped device memory or in
 * registered host memory (use the dev_ptr of nvf_cuda_host_register); 8-byte aligned.
 * "flag >= value" is in wrap-around order ((int64_t)(flag - value) >= 0), as for sequence
 * numbers.
 *
 * write: once the work queued before it on the stream is complete and visible system-wide, stores
 * value (release, system scope). wait: holds back the work queued after it until flag >= value
 * (acquire, system scope).
 *
 * Two implementations. The kernels (default): the wait polls, backs off, and gives up after
 * timeout_ns (0: a default of 30 s), making the next nvf_cuda_stream_sync return NVF_ERR_PEER
 * instead of hanging. The stream memory operations (_memop; NVF_ERR_UNSUPPORTED unless
 * nvf_cuda_dev_has_memops): no launch and no SM held while waiting, but no timeout.
 * Several ranks on ONE GPU: prefer the memops or host-side waits: a spinning wait kernel keeps
 * its context on the GPU until the time slice ends while the peer it waits for is another
 * context. */
nvf_status_t nvf_cuda_flag_write_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value);
nvf_status_t nvf_cuda_flag_wait_async(nvf_cuda_dev_t *d, const uint64_t *flag, uint64_t value,
                                      uint64_t timeout_ns);
nvf_status_t nvf_cuda_flag_write_memop_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value);
nvf_status_t nvf_cuda_flag_wait_memop_async(nvf_cuda_dev_t *d, const uint64_t *flag,
                                            uint64_t value);

/* The kernels' names in the embedded fatbin (for tests): index 0.. until NULL. */
const char *nvf_cuda_kernel_name(int index);

/* ---- device identity and peer access -------------------------------------------------------- */
/* A device's UUID: the same GPU has the same UUID in every process, whatever its ordinal there
 * (ranks may see different CUDA_VISIBLE_DEVICES). Compare UUIDs across processes, never
 * ordinals. */
typedef struct nvf_cuda_uuid {
    unsigned char bytes[16];
} nvf_cuda_uuid_t;

nvf_status_t nvf_cuda_device_uuid(int ordinal, nvf_cuda_uuid_t *uuid);
void nvf_cuda_dev_uuid(const nvf_cuda_dev_t *d, nvf_cuda_uuid_t *uuid);
bool nvf_cuda_uuid_equal(const nvf_cuda_uuid_t *a, const nvf_cuda_uuid_t *b);
/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it (out: >= 41 bytes). */
void nvf_cuda_uuid_format(const nvf_cuda_uuid_t *uuid, char *out, size_t outlen);
/* The ordinal under which this process sees the device with this UUID; NVF_ERR_UNSUPPORTED if
 * it does not see it (not in its CUDA_VISIBLE_DEVICES). */
nvf_status_t nvf_cuda_device_by_uuid(const nvf_cuda_uuid_t *uuid, int *ordinal);
/* Whether kernels on device a can load and store memory of device b (both ordinals of this
 * process; true for a == b). */
nvf_status_t nvf_cuda_peer_capable(int a, int b, bool *can);
/* Whether memory of the peer's device (by UUID) can be used from d through an IPC mapping: same
 * device, or a device this process sees with peer access from d's. *same_device tells which. */
nvf_status_t nvf_cuda_peer_reachable(nvf_cuda_dev_t *d, const nvf_cuda_uuid_t *peer, bool *can,
                                     bool *same_device);

/* ---- CUDA IPC ---------------------------------------------------------------------------------
 * The exporter describes a device buffer in a fixed-size plain descriptor (copy it through
 * shared memory or the bootstrap); an importer in another process maps it. */
#define NVF_CUDA_IPC_MAGIC 0x4e564649u /* "NVFI" */
typedef enum nvf_cuda_ipc_method {
    NVF_CUDA_IPC_LEGACY = 1, /* cuIpcGetMemHandle / cuIpcOpenMemHandle */
    NVF_CUDA_IPC_FD = 2,     /* cuMemExportToShareableHandle (POSIX fd) fetched with pidfd_getfd */
} nvf_cuda_ipc_method_t;

typedef struct nvf_cuda_ipc_desc {
    uint32_t magic;           /* NVF_CUDA_IPC_MAGIC (a zeroed slot is not a descriptor) */
    uint32_t method;          /* nvf_cuda_ipc_method_t */
    uint64_t proc_id;         /* the exporting process (random, fixed for its lifetime) */
    uint64_t buffer_id;       /* the exporter's buffer id of the allocation */
    uint64_t base;            /* allocation (LEGACY) or mapping (FD) start, exporter's address */
    uint64_t size;            /* its size */
    uint64_t offset;          /* the buffer's offset from base */
    uint64_t bytes;           /* bytes from offset the importer may use */
    int32_t pid;              /* exporter's pid (FD) */
    int32_t fd;               /* exporter's file descriptor number (FD) */
    nvf_cuda_uuid_t uuid;     /* the exporter's device */
    unsigned char handle[64]; /* CUipcMemHandle (LEGACY) */
    unsigned char reserved[16];
} nvf_cuda_ipc_desc_t;
_Static_assert(sizeof(nvf_cuda_ipc_desc_t) == 160, "the IPC descriptor is a fixed 160 bytes");

/* Describes [ptr, ptr + bytes) of a device buffer of d's context for other processes. Cached
 * per allocation (buffer id), so repeated exports of a buffer cost one attribute query.
 * NVF_ERR_UNSUPPORTED with *why set (a static string) when the memory cannot be exported the
 * legacy way: cudaMallocAsync pool memory and cuMemCreate (VMM) memory; the caller then uses a
 * staged path, or the FD route (nvf_cuda_ipc_export_fd) for VMM memory made exportable as a
 * POSIX file descriptor. NVF_ERR_INVALID if ptr is not device memory. */
nvf_status_t nvf_cuda_ipc_export(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                 nvf_cuda_ipc_desc_t *desc, const char **why);
/* The same for a buffer the caller has already asked the driver about (nvf_cuda_ptr_query of
 * ptr itself, e.g. a call's nvf_call_mem_t): a repeated export then asks the driver nothing. */
nvf_status_t nvf_cuda_ipc_export_described(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                           const nvf_cuda_ptr_info_t *described,
                                           nvf_cuda_ipc_desc_t *desc, const char **why);
/* The FD route for VMM memory whose allocation allows CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
 * the exporter keeps the exported fd open (until fini or eviction); the importer copies it with
 * pidfd_open + pidfd_getfd (Linux >= 5.6, and ptrace access to the exporter: same user, and
 * kernel.yama.ptrace_scope 0 or the exporter's consent), imports it and maps it. Not used by
 * nvf_cuda_ipc_export: the caller chooses it explicitly. */
nvf_status_t nvf_cuda_ipc_export_fd(nvf_cuda_dev_t *d, const void *ptr, size_t bytes,
                                    nvf_cuda_ipc_desc_t *desc, const char **why);

/* Maps a peer's buffer into d's context; *ptr is the address of the buffer's byte `offset`.
 * Mappings are cached per (exporting process, buffer id): a hit costs a hash lookup. A
 * descriptor whose allocation overlaps a cached one of the same process with another buffer id
 * means the peer freed that buffer: the stale mapping is closed first. At most
 * NVF_CUDA_IPC_CACHE_MAX mappings are kept (least recently used closed first). Closing waits for
 * d's stream, so no queued work uses a closed mapping. A descriptor from this process returns
 * the buffer's own address. NVF_ERR_INVALID for a malformed descriptor, NVF_ERR_SYSTEM if the FD
 * route cannot fetch the fd (permissions: see above). */
#define NVF_CUDA_IPC_CACHE_MAX 256
nvf_status_t nvf_cuda_ipc_import(nvf_cuda_dev_t *d, const nvf_cuda_ipc_desc_t *desc, void **ptr);

typedef struct nvf_cuda_ipc_stats {
    unsigned long long exports, export_hits; /* nvf_cuda_ipc_export calls / served from cache */
    unsigned long long imports, import_hits; /* nvf_cuda_ipc_import calls / served from cache */
    unsigned long long opens, closes;        /* mappings opened / closed */
    unsigned long long stale_evictions;      /* closed because the peer's buffer id changed */
    unsigned long long lru_evictions;        /* closed because the cache was full */
    unsigned live;                           /* mappings open now */
} nvf_cuda_ipc_stats_t;
void nvf_cuda_ipc_stats(nvf_cuda_dev_t *d, nvf_cuda_ipc_stats_t *stats);
/* Closes every mapping imported into d (e.g. when a communicator's peers go away). */
nvf_status_t nvf_cuda_ipc_flush(nvf_cuda_dev_t *d);

#endif
