/*
 * nvf_cma_tune.c: where the single-copy path starts to beat the segment path, measured. At the
 * first call of NVF_CMA_TUNE_MIN_BYTES or more on a single-node communicator that has the
 * single-copy path, every rank runs both two-shot paths on scratch buffers at a ladder of sizes,
 * interleaved. What each path cost per size seeds the communicator's live choice (nvf_plan.h:
 * from then on local rank 0 picks each call's path from these costs and its own calls' times,
 * nvf_comm.c), since on the project's VMs the faster path changes with the machine's state. The
 * two paths reduce in the same order, so the choice changes speed, never bits.
 *
 * Each rank remembers the window where single copies won (nvf_plan_cma_window) per node size; a
 * later communicator whose every rank remembers one does not measure again (its rank 0 tries
 * each path on its first calls instead). Every rank decides from the same gathered numbers.
 */
#include "nvf_internal.h"
#include "nvf_log.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNE_SIZES 5           /* 64 KiB, 256 KiB, 1 MiB, 4 MiB, 16 MiB */
#define TUNE_REPS 5            /* timed batches per size and path; the median counts */
#define TUNE_BATCH (32u << 20) /* bytes per timed batch, at least one call */

/* What this process measured, per node size: the window's first byte count (0: not measured;
 * SIZE_MAX: single copies never won) and its last (0: no limit). */
static _Atomic size_t measured_min[NVF_MAX_LOCAL + 1], measured_max[NVF_MAX_LOCAL + 1];

static int barrier(nvf_comm_t *c)
{
    int32_t me = 0, *all = calloc((size_t)c->oob.size, sizeof(int32_t));
    int rc = all == NULL ? -1 : c->oob.allgather(c->oob.ctx, &me, all, sizeof(me));
    free(all);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The ladder: powers of 4 from NVF_CMA_TUNE_MIN_BYTES to 16 MiB, above the one-shot limit. */
static int ladder(const nvf_config_t *cfg, size_t sizes[TUNE_SIZES])
{
    int n = 0;
    for (size_t s = NVF_CMA_TUNE_MIN_BYTES; s <= ((size_t)16 << 20) && n < TUNE_SIZES; s *= 4)
        if (s > cfg->one_shot_max_bytes)
            sizes[n++] = s;
    return n;
}

/* times[(size * 2 + path) * TUNE_REPS + rep]: my microseconds per call; in and out hold the
 * largest size. */
static nvf_status_t measure(nvf_comm_t *c, const size_t *sizes, int n, float *in, float *out,
                            double *times)
{
    for (size_t i = 0; i < sizes[n - 1] / sizeof(float); i++)
        in[i] = (float)(1 + (i + (size_t)c->topo.local_rank) % 61);
    nvf_plan_shape_t shape = {.esize = sizeof(float),
                              .local_size = c->topo.local_size,
                              .nnodes = 1,
                              .uniform = true,
                              .cma = true,
                              .cores_shared = c->cores_shared,
                              .cache_bytes = c->cache_bytes,
                              .host_ranks = c->host_ranks,
                              .llc_bytes = c->llc_bytes};
    nvf_config_t cfgs[2] = {c->cfg, c->cfg};
    cfgs[0].cma_min_bytes = SIZE_MAX; /* path 0: through the segment */
    cfgs[1].cma_min_bytes = 0;        /* path 1: single copies */
    cfgs[1].cma_max_bytes = 0;
    nvf_status_t st = NVF_OK;
    for (int k = 0; k < n && st == NVF_OK; k++) {
        shape.count = sizes[k] / sizeof(float);
        nvf_plan_t plans[2];
        for (int p = 0; p < 2 && st == NVF_OK; p++) {
            nvf_plan_choose(&cfgs[p], &shape, &plans[p]);
            /* untimed: first touch of the pages at this size */
            st = nvf_sched_run(c, &plans[p], in, out, shape.count, NVF_DTYPE_FLOAT, NVF_OP_SUM,
                               NULL);
        }
        const unsigned calls = sizes[k] >= TUNE_BATCH ? 1u : (unsigned)(TUNE_BATCH / sizes[k]);
        for (int rep = 0; rep < TUNE_REPS && st == NVF_OK; rep++)
            for (int p = 0; p < 2 && st == NVF_OK; p++) {
                if (barrier(c) != 0)
                    return NVF_ERR_PEER;
                double t0 = nvf_now_us();
                for (unsigned i = 0; i < calls && st == NVF_OK; i++)
                    st = nvf_sched_run(c, &plans[p], in, out, shape.count, NVF_DTYPE_FLOAT,
                                       NVF_OP_SUM, NULL);
                times[(k * 2 + p) * TUNE_REPS + rep] = (nvf_now_us() - t0) / calls;
            }
    }
    return st;
}

/* "from 65536 to 8388608 bytes", "from 65536 bytes", "never". */
static void describe(char *buf, size_t len, size_t min, size_t max)
{
    if (min == SIZE_MAX)
        snprintf(buf, len, "never");
    else if (max == 0)
        snprintf(buf, len, "from %zu bytes", min);
    else
        snprintf(buf, len, "from %zu to %zu bytes", min, max);
}

/* From now on local rank 0 picks each call's path (nvf_comm.c), starting from what was
 * measured here, if anything (times: per ladder size, microseconds per call); the window no
 * longer limits the plans. */
static void go_live(nvf_comm_t *c, const size_t *sizes, const double *seg, const double *cma, int n)
{
    for (int k = 0; k < n; k++) {
        const int cls = nvf_path_class(sizes[k]);
        nvf_path_seed(&c->paths, cls, NVF_PATH_SEGMENT, seg[k], sizes[k]);
        nvf_path_seed(&c->paths, cls, NVF_PATH_CMA, cma[k], sizes[k]);
        c->path_best[cls] = cma[k] < seg[k] ? NVF_PATH_CMA : NVF_PATH_SEGMENT;
    }
    c->path_live = true;
    c->cfg.cma_min_bytes = 0;
    c->cfg.cma_max_bytes = 0;
}

nvf_status_t nvf_cma_tune(nvf_comm_t *c)
{
    const int L = c->topo.local_size, P = c->oob.size;
    size_t sizes[TUNE_SIZES];
    const int n = ladder(&c->cfg, sizes);
    if (n == 0 || L > NVF_MAX_LOCAL)
        return NVF_OK; /* the same on every rank: nothing to measure */
    char window[80];

    /* 1. does every rank know the answer already, and could every rank get the memory to
     * measure it? (one exchange: a rank that cannot must not leave the others waiting) */
    const size_t per_rank = (size_t)n * 2 * TUNE_REPS;
    double *times = calloc(per_rank, sizeof(double));
    double *all = calloc(per_rank * (size_t)P, sizeof(double));
    float *in = malloc(sizes[n - 1]), *out = malloc(sizes[n - 1]);
    uint64_t mine[3] = {atomic_load_explicit(&measured_min[L], memory_order_acquire),
                        atomic_load_explicit(&measured_max[L], memory_order_relaxed),
                        times != NULL && all != NULL && in != NULL && out != NULL};
    uint64_t *each = calloc((size_t)P * 3, sizeof(uint64_t));
    nvf_status_t st = NVF_OK;
    if (each == NULL || c->oob.allgather(c->oob.ctx, mine, each, sizeof(mine)) != 0)
        st = NVF_ERR_PEER;
    bool all_known = true, all_ready = true;
    for (int r = 0; r < P && st == NVF_OK; r++) {
        all_known = all_known && each[3 * r] != 0;
        all_ready = all_ready && each[3 * r + 2] != 0;
    }
    if (st != NVF_OK || all_known || !all_ready) {
        if (st == NVF_OK && all_known) { /* rank 0's, for all: a start for its live choice */
            describe(window, sizeof(window), (size_t)each[0], (size_t)each[1]);
            go_live(c, NULL, NULL, NULL, 0);
            if (c->oob.rank == 0)
                nvf_log(1,
                        "rank 0: single copies %s (measured before on %d local ranks); each "
                        "path tried again on this communicator",
                        window, L);
        } else if (st == NVF_OK) {
            nvf_log(1,
                    "rank %d: single copies not measured (out of memory on some rank): from "
                    "cma_min",
                    c->oob.rank);
        }
        free(each);
        free(times);
        free(all);
        free(in);
        free(out);
        return st;
    }
    free(each);

    /* 2. measure, all together; decide from everyone's numbers */
    const double t0 = nvf_now_us();
    st = measure(c, sizes, n, in, out, times);
    free(in);
    free(out);
    if (st == NVF_OK && c->oob.allgather(c->oob.ctx, times, all, per_rank * sizeof(double)) != 0)
        st = NVF_ERR_PEER;
    if (st != NVF_OK) {
        free(times);
        free(all);
        return st;
    }
    /* per size and path: the slowest rank of each batch, then the median over batches */
    double seg[TUNE_SIZES], cma[TUNE_SIZES];
    for (int k = 0; k < n; k++)
        for (int p = 0; p < 2; p++) {
            double slowest[TUNE_REPS];
            for (int rep = 0; rep < TUNE_REPS; rep++) {
                slowest[rep] = 0;
                for (int r = 0; r < P; r++) {
                    double t = all[(size_t)r * per_rank + (size_t)(k * 2 + p) * TUNE_REPS + rep];
                    slowest[rep] = t > slowest[rep] ? t : slowest[rep];
                }
            }
            qsort(slowest, TUNE_REPS, sizeof(double), cmp_double);
            (p ? cma : seg)[k] = slowest[TUNE_REPS / 2];
        }
    free(times);
    free(all);
    size_t min, max;
    nvf_plan_cma_window(sizes, seg, cma, n, &min, &max);
    go_live(c, sizes, seg, cma, n);
    atomic_store_explicit(&measured_max[L], max, memory_order_relaxed);
    atomic_store_explicit(&measured_min[L], min, memory_order_release);
    if (nvf_log_level() >= 1 && c->oob.rank == 0) {
        char line[400];
        size_t len = 0;
        for (int k = 0; k < n && len < sizeof(line); k++)
            len += (size_t)snprintf(line + len, sizeof(line) - len, " %zu B %.1f/%.1f us;",
                                    sizes[k], seg[k], cma[k]);
        describe(window, sizeof(window), min, max);
        nvf_log(1,
                "rank 0: single copies measured on %d local ranks (segment/single-copy, slowest "
                "rank):%s single copies faster %s to start with (%.0f ms)",
                L, line, window, (nvf_now_us() - t0) / 1000);
    }
    return NVF_OK;
}
