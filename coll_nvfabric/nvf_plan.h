/*
 * nvf_plan.h: the plan of one allreduce (algorithm per stage, chunking, pipeline depth) and
 * the cost model that chooses it. The one place that decides; pure functions of the shape of
 * the call, the configuration and the cost parameters, so every rank decides alike.
 */
#ifndef NVF_PLAN_H
#define NVF_PLAN_H

#include "nvf.h"

typedef enum nvf_alg {
    NVF_ALG_ONESHOT, /* one node: every rank reduces every input */
    NVF_ALG_TWOSHOT, /* one node: reduce-scatter by direct loads, then all-gather */
    NVF_ALG_HIER,    /* intra-node reduce, inter-node allreduce per rail, intra-node gather */
    NVF_ALG_DIRECT,  /* one rank per node, host buffers: the inter-node allreduce alone, in place
                      * in the receive buffer (no segment, no pipeline blocks) */
} nvf_alg_t;

typedef enum nvf_split {
    NVF_SPLIT_EVEN,   /* local rank i owns the i-th part of each block (rail-aligned) */
    NVF_SPLIT_LEADER, /* local rank 0 owns each whole block (uneven nodes, small messages) */
} nvf_split_t;

typedef enum nvf_inter_alg {
    NVF_INTER_NONE,
    NVF_INTER_RD,   /* recursive doubling, with the non-power-of-two fold */
    NVF_INTER_RING, /* ring reduce-scatter + all-gather */
    NVF_INTER_RHD,  /* recursive halving reduce-scatter + recursive doubling all-gather */
} nvf_inter_alg_t;

typedef struct nvf_plan {
    nvf_alg_t alg;
    nvf_split_t split;
    nvf_inter_alg_t inter;
    size_t block_elems; /* elements per pipeline block (the direct plan: per piece) */
    int depth;          /* blocks in flight */
    bool cma;           /* two-shot by single copies (CMA) when every local rank has host buffers */
    bool stream;        /* copies of the result into host receive buffers use streaming stores */
    double predicted_us;
    const char *name; /* static, e.g. "hier:even+ring" */
} nvf_plan_t;

/* What a plan depends on. Identical on every rank of a communicator for one call. */
typedef struct nvf_plan_shape {
    size_t count;
    size_t esize;
    int local_size; /* ranks per node (the largest node's, where they differ) */
    int nnodes;
    bool uniform;      /* every node has local_size ranks */
    bool device;       /* device buffers: intra-node parts read peers' buffers directly (CUDA IPC)
                        * instead of copying through the node's segment */
    bool cma;          /* the node's ranks can read and write each other's memory (CMA) */
    bool cores_shared; /* some host runs more ranks than it has CPUs: a pipelined plan's stages
                        * on host memory then take turns on the cores instead of overlapping */
    size_t llc_bytes;  /* this host's last-level cache (0: unknown): it decides only
                        * plan->stream, nothing of the protocol, so it may differ between hosts */
    /* the smallest last-level cache of the communicator's hosts and the most of its ranks on
     * one host (0: unknown): alike on every rank, so the model's cache regime may decide plans */
    size_t cache_bytes;
    int host_ranks;
    /* single node, through the segment: blocks of this many bytes instead of shm_block_size
     * (0: the usual blocks); the live choice's third path (nvf_path_pick) */
    size_t large_block_bytes;
} nvf_plan_shape_t;

void nvf_plan_choose(const nvf_config_t *cfg, const nvf_plan_shape_t *shape, nvf_plan_t *plan);
/* The message size from which host results are streamed into receive buffers (SIZE_MAX:
 * never): stream_min where set, else where the send and receive buffers of the host's ranks
 * (2 x bytes x host_ranks; local_size where that is unknown) fill the last-level cache (32 MiB
 * where it is unknown). */
size_t nvf_plan_stream_min(const nvf_config_t *cfg, const nvf_plan_shape_t *shape);
/* The share of a host plan's copy and reduction time left where the inputs and outputs of the
 * host's ranks (2 x bytes x host_ranks) fit, wholly or in part, in the last-level cache: 1 where
 * cache_speedup is 1 or the cache or rank count is unknown; 1/cache_speedup where they fit; in
 * between, the cached fraction of the working set runs cache_speedup times faster. */
double nvf_plan_cache_scale(const nvf_config_t *cfg, const nvf_plan_shape_t *shape);
/* The model's time (microseconds) for `plan` on `shape`. */
double nvf_plan_predict(const nvf_config_t *cfg, const nvf_plan_shape_t *shape,
                        const nvf_plan_t *plan);
/* Inter-node time of one allreduce of `bytes` among `p` rail peers. */
double nvf_plan_inter_us(const nvf_config_t *cfg, nvf_inter_alg_t alg, int p, double bytes);

/* Where the single copies pay, from a measurement of both single-node two-shot paths at n
 * sizes (ascending, each the slowest rank's median time): the longest run of consecutive sizes
 * at which they were faster (of runs as long, the one at larger sizes), bounded halfway
 * (geometrically) to the measured sizes on either side where they were not. *min_bytes: its
 * first byte count (SIZE_MAX: no such run); *max_bytes: its last (0: no limit, the run reaches
 * the largest size). */
void nvf_plan_cma_window(const size_t *sizes, const double *segment_us, const double *cma_us, int n,
                         size_t *min_bytes, size_t *max_bytes);

/* The direct plan (one rank per node) runs calls of at least 2 x NVF_DIRECT_PIECE_MIN bytes as
 * pieces of at least that much, at most NVF_DIRECT_PIECES, each one allreduce of the rail, so
 * that device data's copies overlap the rail's work (nvf_sched.c). The model counts each
 * piece's latency. */
#define NVF_DIRECT_PIECES 4
#define NVF_DIRECT_PIECE_MIN ((size_t)8 << 20)

/* The live choice between the single-node two-shot paths: through the segment, by single
 * copies, through the segment in large blocks. On the project's VMs the faster one changes
 * with the machine's state, for seconds at a time (single copies 2-4x faster in its slow
 * spells, the segment up to 1.8x faster outside them; in the spells 1 MiB blocks beat 256 KiB
 * ones by 1.2-1.5x from 4 MiB, outside them 256 KiB blocks win by up to 2x on 4 ranks at 1-2
 * MiB), so no window measured once holds. Local rank 0 keeps, per size class and path, the
 * cost per byte of its last NVF_PATH_SAMPLES calls (seeded by nvf_cma_tune's measurement),
 * runs the path whose median is lowest, and one call in NVF_PATH_EXPLORE of a class another
 * (the others in turn), so that a change is seen. The median: one call that waited for a
 * descheduled peer must not move the choice; three slow calls in five do. A change of state is
 * noticed sooner: two calls in a row on a path that took more than NVF_PATH_SHIFT times its
 * median (or less than 1/NVF_PATH_SHIFT of it) make the other paths' costs stale: each is run
 * twice more, the second call's cost replacing all its samples (the first pays for a cold
 * cache), before the cheapest is chosen again (the VM's slow spells make one path 2-3x slower
 * and another hardly; exploring one call in 16 took a hundred calls to see that). The path's own
 * median still moves only with three calls in five, so that two calls that waited for descheduled
 * peers cost the others' re-runs only. Classes: around 64 KiB, 256 KiB, 1, 4 and 16 MiB (bounds
 * halfway between, geometrically). */
typedef enum nvf_path {
    NVF_PATH_SEGMENT, /* through the segment, in blocks of shm_block_size */
    NVF_PATH_CMA,     /* by single copies */
    NVF_PATH_LARGE,   /* through the segment, in blocks of shm_block_large */
    NVF_PATH_COUNT
} nvf_path_t;
#define NVF_PATH_BIT(p) (1u << (p))
#define NVF_PATH_CLASSES 5
#define NVF_PATH_EXPLORE 16
#define NVF_PATH_SAMPLES 5
#define NVF_PATH_SHIFT 1.5
typedef struct nvf_path_stats {
    /* [class][path][sample]: ns per byte, 0: none yet */
    double ns_per_byte[NVF_PATH_CLASSES][NVF_PATH_COUNT][NVF_PATH_SAMPLES];
    unsigned next[NVF_PATH_CLASSES][NVF_PATH_COUNT];    /* the sample the next call replaces */
    unsigned shifted[NVF_PATH_CLASSES][NVF_PATH_COUNT]; /* calls in a row off the median */
    bool stale[NVF_PATH_CLASSES][NVF_PATH_COUNT];       /* to be run again: the state changed */
    bool confirming[NVF_PATH_CLASSES][NVF_PATH_COUNT];  /* stale, run once since: once more */
    unsigned calls[NVF_PATH_CLASSES];
} nvf_path_stats_t;

int nvf_path_class(size_t bytes);
/* The path for the next call of class cls among those in `allowed` (NVF_PATH_BIT of each; the
 * segment always); counts the call. A path with no cost known yet is tried first, then a stale
 * one (in the order of nvf_path_t). */
nvf_path_t nvf_path_pick(nvf_path_stats_t *s, int cls, unsigned allowed);
/* A call of `bytes` in class cls took us microseconds on path p: it replaces the path's oldest
 * sample; the second in a row off its median by NVF_PATH_SHIFT makes the others stale (then it
 * returns true). A path with nothing known, or stale, runs twice: its first call may pay for
 * first touches or a cold cache, so each of the two fills all its samples and the first leaves
 * it stale: the second call's cost is what counts. */
bool nvf_path_record(nvf_path_stats_t *s, int cls, nvf_path_t p, double us, size_t bytes);
/* A cost measured outside the live choice (nvf_cma_tune, on scratch buffers): it fills the
 * path's samples, and the path is stale: its first two live calls still run (the second
 * counts). */
void nvf_path_seed(nvf_path_stats_t *s, int cls, nvf_path_t p, double us, size_t bytes);
/* The median of the path's samples in ns per byte (0: none yet). */
double nvf_path_cost(const nvf_path_stats_t *s, int cls, nvf_path_t p);
/* Of the paths in `among` with a cost known, the one whose median is lowest (the first in the
 * order of nvf_path_t on a tie; the segment where none is known); *cost (may be NULL): its
 * median, 0 where none is known. */
nvf_path_t nvf_path_cheapest(const nvf_path_stats_t *s, int cls, unsigned among, double *cost);
/* "through the segment", "by single copies", "through the segment in large blocks" */
const char *nvf_path_name(nvf_path_t p);

/* A small cache of chosen plans per communicator, keyed by (count, esize, device, cma,
 * large_block_bytes); the rest of the shape is fixed for a communicator. */
#define NVF_PLAN_CACHE_SIZE 32
typedef struct nvf_plan_cache {
    struct {
        size_t count, esize, large_block_bytes;
        bool device, cma;
        nvf_plan_t plan;
    } e[NVF_PLAN_CACHE_SIZE];
} nvf_plan_cache_t;

/* The plan for `shape`, from the cache or chosen and cached. */
const nvf_plan_t *nvf_plan_get(nvf_plan_cache_t *cache, const nvf_config_t *cfg,
                               const nvf_plan_shape_t *shape);

#endif
