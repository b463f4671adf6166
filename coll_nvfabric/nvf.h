/*
 * nvf.h: the engine's public interface, the only engine header mca/ includes.
 *
 * The engine knows nothing of Open MPI: a communicator reaches it as an nvf_oob_t (rank, size
 * and an allgather callback, used only for setup), a datatype and op as nvf_dtype_t/nvf_op_t,
 * and its tunables as an nvf_config_t. Every function returns an nvf_status_t.
 */
#ifndef NVF_H
#define NVF_H

#include "nvf_dtype.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nvf_status {
    NVF_OK = 0,
    NVF_ERR_UNSUPPORTED, /* the engine does not handle this call: delegate it */
    NVF_ERR_NOMEM,
    NVF_ERR_SYSTEM,  /* an OS call failed (shm_open, mmap, ...) */
    NVF_ERR_UCX,     /* a UCX call failed */
    NVF_ERR_CUDA,    /* a CUDA driver call failed */
    NVF_ERR_PEER,    /* another rank failed during setup */
    NVF_ERR_INVALID, /* bad argument or configuration */
} nvf_status_t;

const char *nvf_status_str(nvf_status_t st);

/* Where a buffer lives. */
typedef enum nvf_memkind {
    NVF_MEM_HOST,        /* ordinary host memory */
    NVF_MEM_HOST_PINNED, /* page-locked host memory registered with CUDA */
    NVF_MEM_DEVICE,      /* cudaMalloc / cuMemCreate device memory */
    NVF_MEM_MANAGED,     /* cudaMallocManaged */
    NVF_MEM_MIXED,       /* send and receive buffers of different kinds */
    NVF_MEM_KIND_COUNT
} nvf_memkind_t;
const char *nvf_memkind_name(nvf_memkind_t kind);

static inline bool nvf_memkind_is_host(nvf_memkind_t kind)
{
    return kind == NVF_MEM_HOST || kind == NVF_MEM_HOST_PINNED;
}

/* One buffer, as cuPointerGetAttributes sees it. */
typedef struct nvf_cuda_ptr_info {
    nvf_memkind_t kind; /* NVF_MEM_HOST, NVF_MEM_HOST_PINNED, NVF_MEM_DEVICE or NVF_MEM_MANAGED */
    int device;         /* device ordinal in this process; -1 for ordinary host memory */
    void *context;      /* the CUcontext it was allocated in (NULL: none, e.g. pool memory) */
    uintptr_t base;     /* start of its allocation (0 if unknown) */
    size_t size;        /* size of its allocation (0 if unknown) */
    size_t offset;      /* pointer - base */
    unsigned long long buffer_id; /* process-wide unique id of the allocation (0 if none) */
} nvf_cuda_ptr_info_t;

/* Where the buffers of one call live (sbuf NULL: in place). Without a CUDA driver every
 * buffer is host memory and this costs a branch; with one, one driver query per buffer. */
nvf_memkind_t nvf_memkind_classify(const void *sbuf, const void *rbuf);
/* The same, keeping what the driver said of each buffer, so that the engine asks no more for
 * the call (nvf_memkind_describe): in is the send buffer (the receive buffer's when in place),
 * out the receive buffer. */
typedef struct nvf_call_mem {
    nvf_memkind_t kind; /* of the call, as nvf_memkind_classify */
    nvf_cuda_ptr_info_t in, out;
} nvf_call_mem_t;
nvf_memkind_t nvf_memkind_describe(const void *sbuf, const void *rbuf, nvf_call_mem_t *mem);
/* Releases what classifying and staging device buffers acquired in this process (per device:
 * nvfabric's stream, the retained primary context, IPC mappings). At component close, after
 * every communicator is gone. */
void nvf_memkind_fini(void);
/* Copies bytes between any two kinds of memory (a CUDA copy when either side is device or
 * managed memory), synchronously. */
nvf_status_t nvf_memcpy_any(void *dst, const void *src, size_t bytes);

/* ---- configuration ------------------------------------------------------------------------ */
typedef enum nvf_host_mode { NVF_HOST_AUTO, NVF_HOST_ON, NVF_HOST_OFF } nvf_host_mode_t;

/* The inter-node algorithm for messages above inter_rd_max bytes per rail. */
typedef enum nvf_inter_large {
    NVF_INTER_LARGE_AUTO, /* the cost model's choice */
    NVF_INTER_LARGE_RING, /* ring reduce-scatter + all-gather */
    NVF_INTER_LARGE_RHD,  /* recursive halving + doubling */
} nvf_inter_large_t;

typedef struct nvf_config {
    int verbose;                  /* 0 silent, 1 choices, 2 per-call detail, 3 debug */
    nvf_host_mode_t host_mode;    /* take over host buffers: auto (by size), on, off */
    size_t host_auto_min_bytes;   /* auto: host buffers of at least this many bytes */
    int virtual_node_size;        /* > 0: cut each host into nodes of this many ranks */
    size_t one_shot_max_bytes;    /* single-node calls up to this size use the one-shot algorithm */
    size_t shm_block_bytes;       /* bytes of one pipeline block (per rank slot) in the segment */
    int shm_nsets;                /* pipeline buffer sets in the segment */
    size_t shm_block_large_bytes; /* single node: the live choice's large blocks (0: none) */
    int pipeline_depth;           /* blocks in flight, <= shm_nsets */
    int spin_before_yield;        /* polls of a flag before sched_yield(); -1: auto (at setup: 1
                                   * where the runtime yields when idle, else 64) */
    bool inter_enable;            /* allow the UCX inter-node stage */
    size_t inter_rd_max_bytes;    /* inter-node: recursive doubling up to this size */
    nvf_inter_large_t inter_large; /* inter-node: the algorithm above inter_rd_max_bytes */
    size_t inter_slot_bytes;       /* inter-node: bytes of one RDMA receive slot */
    /* cost model: latency (us) and bandwidth (GB/s = 1e9 B/s) per level */
    double intra_alpha_us;
    double intra_bw_gbs;
    double inter_alpha_us;
    double inter_bw_gbs;
    double reduce_bw_gbs;    /* host reduction throughput (bytes of input per second) */
    double cache_speedup;    /* host copies and reductions run this many times faster where the
                              * host's ranks' inputs and outputs fit its last-level cache (1:
                              * no cache regime in the model) */
    bool cuda_enable;        /* use the device stage when a driver is present */
    bool cuda_ipc;           /* one node, device buffers: CUDA IPC two-shot (nvf_ipc.c), not yet
                              * run on a GPU: off by default */
    bool cma_enable;         /* single-copy intra-node path through process_vm_readv/writev */
    bool cma_oversubscribed; /* ... also with more local ranks than cores */
    size_t cma_min_bytes;    /* single-node messages from this size ... */
    size_t cma_max_bytes;    /* ... up to this size use it (0: no limit) */
    bool cma_tune;           /* single-node communicators measure both two-shot paths at their
                              * first call of 64 KiB or more, then pick each call's path live
                              * instead of by cma_min/max (mca/ turns it off where either is
                              * set) */
    bool stream_enable;      /* host results written into receive buffers with streaming stores
                              * (nvf_copy_stream) from stream_min_bytes ... */
    size_t stream_min_bytes; /* ... (0: auto, from the last-level cache and the node's ranks:
                              * nvf_plan_stream_min) */
} nvf_config_t;

void nvf_config_init_defaults(nvf_config_t *cfg);
/* NVF_OK, or NVF_ERR_INVALID with a one-line explanation naming the parameter in err. */
nvf_status_t nvf_config_validate(const nvf_config_t *cfg, char *err, size_t errlen);
/* "auto", "on", "off" (also 1/0, yes/no, true/false, case-insensitive). */
nvf_status_t nvf_parse_host_mode(const char *text, nvf_host_mode_t *mode);
const char *nvf_host_mode_name(nvf_host_mode_t mode);
/* "auto", "ring", "rhd" (case-insensitive). */
nvf_status_t nvf_parse_inter_large(const char *text, nvf_inter_large_t *alg);
const char *nvf_inter_large_name(nvf_inter_large_t alg);

/* ---- logging ------------------------------------------------------------------------------ */
/* Where engine messages go (mca/ points it at opal_output; default: stderr). */
typedef void (*nvf_log_sink_t)(int level, const char *msg);
void nvf_log_set_sink(nvf_log_sink_t sink, int verbose);
int nvf_log_level(void);

/* ---- communicators ------------------------------------------------------------------------ */
/* The engine's view of a communicator's bootstrap: used only during setup (first call). */
typedef struct nvf_oob {
    /* Every rank contributes len bytes; rbuf receives size * len bytes, in rank order.
     * Returns 0 on success. Collective over the whole communicator. */
    int (*allgather)(void *ctx, const void *sbuf, void *rbuf, size_t len);
    /* Optional: whether the MPI runtime makes idle waits yield the core at once (it does when
     * it runs more processes on a node than it has cores); asked once, at setup. */
    bool (*yield_when_idle)(void *ctx);
    void *ctx;
    int rank;
    int size;
} nvf_oob_t;

typedef struct nvf_comm nvf_comm_t;

/* Local and cheap: records the configuration; setup happens at the first nvf_allreduce. */
nvf_status_t nvf_comm_create(const nvf_config_t *cfg, const nvf_oob_t *oob, nvf_comm_t **out);
/* Local: unmaps and frees what this communicator made. */
void nvf_comm_destroy(nvf_comm_t *comm);

/* What one call did, for counters and verbose output. */
typedef struct nvf_call_report {
    const char *plan;    /* e.g. "host:oneshot", "hier:twoshot+ring" (static string) */
    bool inter_ran;      /* an inter-node stage ran */
    bool device;         /* the device stage ran */
    double predicted_us; /* the cost model's prediction for this call */
} nvf_call_report_t;

/*
 * Allreduce `count` elements of `dt` with `op`. sbuf == NULL means in place (rbuf holds the
 * input). `mem` is where the buffers live (nvf_memkind_describe of the same buffers).
 * Collective over the communicator. Returns:
 *   NVF_OK               recvbuf holds the result on every rank;
 *   NVF_ERR_UNSUPPORTED  nothing was done, on every rank alike (setup failed or the call is
 *                        outside what the engine handles): the caller must delegate;
 *   anything else        a failure after the ranks had started: reported, not delegable.
 * why (optional) receives a static one-line reason for NVF_ERR_UNSUPPORTED.
 */
nvf_status_t nvf_allreduce(nvf_comm_t *comm, const void *sbuf, void *rbuf, size_t count,
                           nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem,
                           nvf_call_report_t *report, const char **why);

#ifdef __cplusplus
}
#endif
#endif
