/*
 * nvf_internal.h: the engine communicator, shared by its setup (nvf_comm.c) and the scheduler
 * (nvf_sched.c). Not visible outside coll_nvfabric/.
 */
#ifndef NVF_INTERNAL_H
#define NVF_INTERNAL_H

#include "nvf.h"
#include "nvf_inter.h"
#include "nvf_plan.h"
#include "nvf_shm.h"
#include "nvf_topo.h"

#include <time.h>

/* Most ranks on one node the engine serves (beyond it, calls are delegated). */
#define NVF_MAX_LOCAL 256

typedef enum nvf_setup_state {
    NVF_SETUP_NONE,   /* nothing done yet: the first call sets up */
    NVF_SETUP_READY,  /* the engine runs calls */
    NVF_SETUP_FAILED, /* setup failed on some rank: every call is delegated */
} nvf_setup_state_t;

#define NVF_STAGE_EVENTS 128

struct nvf_comm {
    nvf_config_t cfg;
    nvf_oob_t oob;
    nvf_setup_state_t state;
    char why[160]; /* why setup failed (static for the life of the comm) */
    nvf_topo_t topo;
    nvf_shm_t shm;   /* my node's segment */
    nvf_rail_t rail; /* my rail, when there are several nodes */
    bool have_rail;
    uint64_t seq;                  /* blocks started on this communicator */
    uint64_t small_seq;            /* small calls (nvf_small.c) made on this communicator */
    uint64_t ipc_seq;              /* calls that tried the CUDA IPC path (nvf_ipc.c) */
    nvf_cuda_event_t *ipc_ready;   /* recorded on ipc_ready_dev's stream: my inputs are */
    nvf_cuda_dev_t *ipc_ready_dev; /* complete before peers read them (nvf_ipc.c) */
    char *stage;  /* private host block for the staged device path (made on first use) */
    int shm_cuda; /* my mapping of the segment registered with CUDA (page-locked) for
                   * the staged path's copies: 0 not yet tried, 1 registered, -1 refused */
    nvf_cuda_dev_t *shm_cuda_dev; /* ... through this device's context */
    void *pinned;                 /* page-locked host buffer for the direct plan's device data */
    size_t pinned_bytes;          /* (nvf_stage_pinned), allocated through pinned_dev, */
    nvf_cuda_dev_t *pinned_dev;   /* kept for later calls */
    bool pinned_refused;          /* the driver refused once: pageable buffers from then on */
    /* the staged path's queued copies: event i is recorded after the copy of block slot i
     * (nvf_stage_copy_start) on stage_ev_dev[i]'s stream; made on first use, remade for another
     * device */
    nvf_cuda_event_t *stage_ev[NVF_STAGE_EVENTS];
    nvf_cuda_dev_t *stage_ev_dev[NVF_STAGE_EVENTS];
    bool cma;           /* every local rank can read and write every other's memory (CMA) */
    bool cores_shared;  /* some host of the communicator runs more of its ranks than it has CPUs */
    size_t llc_bytes;   /* this host's last-level cache (0: unknown), for plan->stream */
    size_t cache_bytes; /* the smallest last-level cache of the communicator's hosts */
    int host_ranks;     /* the most of its ranks on one host */
    char *cma_tmp;      /* private block for the peers' inputs read by CMA */
    uint64_t cma_probe; /* what the peers read at setup to find out whether CMA works */
    bool cma_tune_pending; /* the single-copy crossover is still to be measured (nvf_cma_tune) */
    bool path_live; /* local rank 0 picks each single-node two-shot call's path (nvf_plan.h) */
    nvf_path_stats_t paths;                 /* local rank 0's costs of the paths */
    nvf_path_t path_best[NVF_PATH_CLASSES]; /* ... and which was the cheapest */
    size_t large_block_bytes; /* the segment's slots hold blocks this large (0: no large path) */
    nvf_plan_cache_t plans;
};

/* The staged device path (nvf_stage.c): registers my mapping of the node's segment with CUDA
 * at the first call with a device buffer `devbuf`, so that the copies in and out of it are
 * direct DMA instead of the driver's staging through its own page-locked buffers; where the
 * driver refuses (e.g. the locked-memory limit), the copies go on unregistered (said once, at
 * verbose level 1). */
void nvf_stage_register_segment(nvf_comm_t *c, const void *devbuf);
/* Undoes it (before the segment is unmapped). */
void nvf_stage_unregister_segment(nvf_comm_t *c);
/* The device state whose stream copies devbuf's data (device or managed memory): one driver
 * query. NVF_ERR_INVALID for host memory. */
nvf_status_t nvf_stage_dev(const void *devbuf, nvf_cuda_dev_t **dev);
/* The device states that copy a call's send and receive buffers (NULL for host memory, and
 * both for mem NULL: a host call), from what the call's classification found: no driver query
 * (nvf_cuda_dev_for_buffer); a failure is reported. */
nvf_status_t nvf_stage_devs(const nvf_comm_t *c, const nvf_call_mem_t *mem, nvf_cuda_dev_t **in_cu,
                            nvf_cuda_dev_t **out_cu);
/* bytes between host memory and memory of dev's device (either way), on dev's stream, waited
 * for; a failure is reported (nvf_error). */
nvf_status_t nvf_stage_copy(nvf_cuda_dev_t *dev, void *dst, const void *src, size_t bytes);
/* The same, queued (pipelined copies): started on dev's stream with c's event `slot`
 * (0 <= slot < NVF_STAGE_EVENTS) recorded after it; nvf_stage_copy_done says, without blocking,
 * whether everything queued before that event has landed. A failure is reported. */
nvf_status_t nvf_stage_copy_start(nvf_comm_t *c, int slot, nvf_cuda_dev_t *dev, void *dst,
                                  const void *src, size_t bytes);
nvf_status_t nvf_stage_copy_done(nvf_comm_t *c, int slot, bool *done);
/* Destroys c's events (teardown). */
void nvf_stage_events_release(nvf_comm_t *c);
/* Waits for every copy queued on the streams of a call's devices (nvf_stage_devs; NULL: none),
 * for a call that stops early: nothing may land in the segment or the user's buffers after it
 * returned. Errors are only logged. */
void nvf_stage_drain(nvf_cuda_dev_t *in_cu, nvf_cuda_dev_t *out_cu);
/* A page-locked host buffer of at least `bytes` (NVF_STAGE_PINNED_MAX at most) for the direct
 * plan's device data, allocated through dev and kept for the communicator's later calls; NULL
 * where it is larger or the driver refuses (then the caller stages in pageable memory). */
#define NVF_STAGE_PINNED_MAX ((size_t)256 << 20)
void *nvf_stage_pinned(nvf_comm_t *c, nvf_cuda_dev_t *dev, size_t bytes);
/* Frees it (teardown). */
void nvf_stage_pinned_release(nvf_comm_t *c);

/* A monotonic clock in microseconds (timing the paths, noticing stalls). */
static inline double nvf_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* In a polling loop, between two looks at a line another core is about to write: the pause
 * lets that core's stores through instead of pulling the line back after each of them. */
static inline void nvf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* nvf_cma_tune.c: at the first call of at least NVF_CMA_TUNE_MIN_BYTES on a single-node
 * communicator with the single-copy path (cma_tune_pending), measure both two-shot paths and
 * start the live choice between them from those costs (path_live). Collective; NVF_OK also
 * where nothing was measured (then cma_min and cma_max stay, and the choice is not live). */
#define NVF_CMA_TUNE_MIN_BYTES ((size_t)64 << 10)
nvf_status_t nvf_cma_tune(nvf_comm_t *c);

/* A private host buffer of one block (shm_block_bytes), or NULL if out of memory. */
char *nvf_comm_stage(nvf_comm_t *c);

/* nvf_small.c: whether a call of this many bytes with this plan takes the inline path (one
 * node of several ranks, one-shot, at most NVF_SMALL_MAX_BYTES: every rank alike), and the
 * call itself. */
bool nvf_small_fits(const nvf_comm_t *c, const nvf_plan_t *plan, size_t bytes);
nvf_status_t nvf_small_run(nvf_comm_t *c, const void *sbuf, void *rbuf, size_t count,
                           nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem);

/* Wait until *word >= value (a peer's progress in the segment), spinning, then yielding;
 * NVF_ERR_PEER if a rank failed meanwhile; after 60 s, one error line naming what (`what`:
 * "input to a small MPI_Allreduce", of local rank `peer`) and the likely cause. The word is
 * looked at here first, so a peer that is already there costs no call (the inline small path);
 * the waiting itself is in nvf_wait.c. */
nvf_status_t nvf_wait_slow(nvf_comm_t *c, const _Atomic uint64_t *word, uint64_t value,
                           const char *what, int peer);
static inline nvf_status_t nvf_wait_at_least(nvf_comm_t *c, const _Atomic uint64_t *word,
                                             uint64_t value, const char *what, int peer)
{
    if (atomic_load_explicit(word, memory_order_acquire) >= value)
        return NVF_OK;
    return nvf_wait_slow(c, word, value, what, peer);
}

/* nvf_ipc.c: whether device-memory calls on this communicator try the CUDA IPC path (cuda_ipc,
 * one node of several ranks: every rank alike), and the call: *ran false (and NVF_OK) when some
 * rank could not take part (host or mixed memory, memory CUDA IPC cannot export, a device that
 * cannot reach a peer's, a (type, op) without a kernel): every rank then sees the same and the
 * caller runs the staged path. */
bool nvf_ipc_wanted(const nvf_comm_t *c);
nvf_status_t nvf_ipc_run(nvf_comm_t *c, const void *sbuf, void *rbuf, size_t count, nvf_dtype_t dt,
                         nvf_op_t op, const nvf_call_mem_t *mem, bool *ran);
/* Releases what the path keeps between calls (an event); at communicator teardown. */
void nvf_ipc_release(nvf_comm_t *c);

/* nvf_sched.c: run one call with an established communicator. */
/* mem: where the buffers live (NULL: host memory); device or managed buffers are staged
 * through the segment with CUDA copies (the staged device path). */
nvf_status_t nvf_sched_run(nvf_comm_t *c, const nvf_plan_t *plan, const void *sbuf, void *rbuf,
                           size_t count, nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem);

#endif
