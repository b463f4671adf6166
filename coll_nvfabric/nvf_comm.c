/*
 * nvf_comm.c: engine communicators: creation, the lazy collective setup at the first call
 * (topology, the node's shared-memory segment, the rail's UCX channels), teardown, and the
 * entry point nvf_allreduce.
 *
 * Setup runs on every rank in the same call (mca/ takes the engine path on uniform arguments
 * only) and ends with an exchange of every rank's status, so that either every rank has a
 * working engine or every rank delegates, with the same reason.
 */
#include "nvf_internal.h"
#include "nvf_cma.h"
#include "nvf_copy.h"
#include "nvf_log.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

nvf_status_t nvf_comm_create(const nvf_config_t *cfg, const nvf_oob_t *oob, nvf_comm_t **out)
{
    nvf_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NVF_ERR_NOMEM;
    c->cfg = *cfg;
    c->oob = *oob;
    c->state = NVF_SETUP_NONE;
    *out = c;
    return NVF_OK;
}

char *nvf_comm_stage(nvf_comm_t *c)
{
    if (c->stage == NULL)
        c->stage = malloc(c->cfg.shm_block_bytes);
    return c->stage;
}

static void teardown(nvf_comm_t *c)
{
    nvf_ipc_release(c);
    free(c->stage);
    c->stage = NULL;
    free(c->cma_tmp);
    c->cma_tmp = NULL;
    if (c->have_rail)
        nvf_rail_close(&c->rail);
    c->have_rail = false;
    nvf_stage_unregister_segment(c);
    nvf_stage_pinned_release(c);
    nvf_stage_events_release(c);
    if (c->shm.base != NULL)
        nvf_shm_detach(&c->shm);
    nvf_topo_free(&c->topo);
}

void nvf_comm_destroy(nvf_comm_t *c)
{
    if (c == NULL)
        return;
    teardown(c);
    free(c);
}

/* Every rank's status and reason; on any failure, the first failing rank's reason in c->why.
 * Returns NVF_OK only if every rank succeeded. */
typedef struct status_rec {
    int32_t st;
    char msg[124];
} status_rec_t;

static nvf_status_t agree(nvf_comm_t *c, nvf_status_t mine, const char *msg)
{
    status_rec_t me = {(int32_t)mine, ""};
    snprintf(me.msg, sizeof(me.msg), "%s", mine == NVF_OK ? "" : msg);
    status_rec_t *all = calloc((size_t)c->oob.size, sizeof(*all));
    if (all == NULL) {
        snprintf(c->why, sizeof(c->why), "out of memory during setup");
        return NVF_ERR_NOMEM; /* every rank fails the same allocation or none: see below */
    }
    if (c->oob.allgather(c->oob.ctx, &me, all, sizeof(me)) != 0) {
        free(all);
        snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
        return NVF_ERR_PEER;
    }
    nvf_status_t st = NVF_OK;
    for (int r = 0; r < c->oob.size; r++) {
        if (all[r].st != NVF_OK) {
            snprintf(c->why, sizeof(c->why), "setup failed on rank %d: %s", r, all[r].msg);
            st = (nvf_status_t)all[r].st;
            break;
        }
    }
    free(all);
    return st;
}

typedef struct shm_rec {
    char name[64];
    uint64_t slot; /* the bytes of its slots */
} shm_rec_t;

/* This rank's affinity mask (any online CPU where it cannot be read). */
static void my_cpus(cpu_set_t *mine)
{
    if (sched_getaffinity(0, sizeof(*mine), mine) == 0)
        return;
    CPU_ZERO(mine);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n && i < CPU_SETSIZE; i++)
        CPU_SET((int)i, mine);
}

/* What each rank tells the others at setup about where it runs. */
typedef struct rank_place {
    cpu_set_t cpus; /* its affinity mask */
    uint64_t llc;   /* its host's last-level cache (bytes, 0: unknown) */
} rank_place_t;

/* The CPUs the node's ranks may run on: the union of their affinity masks (a rank bound to one
 * core sees only that core in its own mask, yet the ranks together may have one core each). */
static int node_cpus(const nvf_topo_t *t, const rank_place_t *places)
{
    cpu_set_t all_cpus;
    CPU_ZERO(&all_cpus);
    for (int k = 0; k < t->local_size; k++)
        CPU_OR(&all_cpus, &all_cpus, &places[nvf_topo_member(t, t->node, k)].cpus);
    return CPU_COUNT(&all_cpus);
}

/* Whether some host (ranks with equal keys; virtual nodes do not matter) runs more of the
 * communicator's ranks than the union of their masks has CPUs, and the most ranks on one host
 * (*most). The same answers on every rank. */
static bool any_host_oversubscribed(int size, const char *keys, const rank_place_t *places,
                                    int *most)
{
    bool *done = calloc((size_t)size, sizeof(bool));
    bool over = false;
    *most = 0;
    for (int r = 0; r < size; r++) {
        if (done != NULL && done[r])
            continue;
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        int ranks = 0;
        for (int q = r; q < size; q++)
            if (memcmp(keys + (size_t)q * NVF_HOST_KEY_LEN, keys + (size_t)r * NVF_HOST_KEY_LEN,
                       NVF_HOST_KEY_LEN) == 0) {
                CPU_OR(&cpus, &cpus, &places[q].cpus);
                ranks++;
                if (done != NULL)
                    done[q] = true;
            }
        over = over || ranks > CPU_COUNT(&cpus);
        if (ranks > *most)
            *most = ranks;
    }
    free(done);
    return over;
}

static nvf_status_t setup(nvf_comm_t *c)
{
    char err[160] = "";
    nvf_status_t st = NVF_OK;
    const nvf_config_t *cfg = &c->cfg;

    /* 0. how long an idle wait spins before it yields the core: where the runtime itself
     * yields at once (more processes than cores), so do we, or the peer we wait for may not
     * get the core; otherwise a few polls first (a yield costs a system call) */
    if (c->cfg.spin_before_yield < 0) {
        bool yield = c->oob.yield_when_idle != NULL && c->oob.yield_when_idle(c->oob.ctx);
        c->cfg.spin_before_yield = yield ? 1 : 64;
        nvf_log(3, "rank %d: idle waits yield after %d polls", c->oob.rank,
                c->cfg.spin_before_yield);
    }

    /* 1. who shares a host with whom */
    char *keys = malloc((size_t)c->oob.size * NVF_HOST_KEY_LEN);
    char key[NVF_HOST_KEY_LEN];
    nvf_host_key(key);
    if (keys == NULL || c->oob.allgather(c->oob.ctx, key, keys, NVF_HOST_KEY_LEN) != 0) {
        free(keys);
        snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
        return NVF_ERR_PEER; /* allgather failures are collective errors */
    }
    /* and on which CPUs each may run (oversubscription: waits, single copies, the model), and
     * its host's cache (the model's cache regime decides plans: the smallest, on every rank) */
    c->llc_bytes = nvf_llc_bytes();
    rank_place_t my_place = {.llc = c->llc_bytes},
                 *places = malloc((size_t)c->oob.size * sizeof(rank_place_t));
    my_cpus(&my_place.cpus);
    if (places == NULL || c->oob.allgather(c->oob.ctx, &my_place, places, sizeof(my_place)) != 0) {
        free(keys);
        free(places);
        snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
        return NVF_ERR_PEER;
    }
    st = nvf_topo_build(&c->topo, c->oob.rank, c->oob.size, keys, cfg->virtual_node_size);
    c->cores_shared = any_host_oversubscribed(c->oob.size, keys, places, &c->host_ranks);
    c->cache_bytes = c->llc_bytes;
    for (int r = 0; r < c->oob.size; r++)
        if (places[r].llc < c->cache_bytes)
            c->cache_bytes = places[r].llc;
    const int ncpu = st == NVF_OK ? node_cpus(&c->topo, places) : 0;
    free(keys);
    free(places);
    if (st != NVF_OK)
        snprintf(err, sizeof(err), "topology: %s", nvf_status_str(st));
    const nvf_topo_t *t = &c->topo;
    if (st == NVF_OK && t->local_size > NVF_MAX_LOCAL) {
        st = NVF_ERR_UNSUPPORTED;
        snprintf(err, sizeof(err), "%d ranks on one node (at most %d)", t->local_size,
                 NVF_MAX_LOCAL);
    }

    /* 2. the node's segment: the first local rank creates it, the others map it, then it is
     * unlinked (so that a crash leaves nothing behind) */
    shm_rec_t rec = {"", 0};
    /* one node: slots that hold the live choice's large blocks too, where the whole segment
     * stays within NVF_SHM_LARGE_MAX and /dev/shm has room for it (else the usual slots: the
     * leader says which) */
    size_t slot = cfg->shm_block_bytes;
    if (st == NVF_OK && t->nnodes == 1 && t->local_size > 1 && cfg->shm_block_large_bytes > slot &&
        nvf_shm_bytes(t->local_size, cfg->shm_nsets, cfg->shm_block_large_bytes) <=
            NVF_SHM_LARGE_MAX)
        slot = cfg->shm_block_large_bytes;
    if (st == NVF_OK) {
        if (t->local_size == 1)
            st = nvf_shm_private(&c->shm, cfg->shm_nsets, slot, err, sizeof(err));
        else if (t->local_rank == 0) {
            st = nvf_shm_create(&c->shm, t->local_size, cfg->shm_nsets, slot, err, sizeof(err));
            if (st != NVF_OK && slot > cfg->shm_block_bytes) {
                nvf_log(
                    1, "rank %d: no room for a segment with %zu-byte slots (%s): usual blocks only",
                    t->rank, slot, err);
                slot = cfg->shm_block_bytes;
                st = nvf_shm_create(&c->shm, t->local_size, cfg->shm_nsets, slot, err, sizeof(err));
            }
        }
        if (st == NVF_OK && t->local_size > 1 && t->local_rank == 0)
            snprintf(rec.name, sizeof(rec.name), "%s", c->shm.name);
        rec.slot = slot;
    }
    shm_rec_t *recs = calloc((size_t)c->oob.size, sizeof(*recs));
    if (recs == NULL || c->oob.allgather(c->oob.ctx, &rec, recs, sizeof(rec)) != 0) {
        free(recs);
        teardown(c);
        snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
        return NVF_ERR_PEER;
    }
    if (st == NVF_OK && t->local_size > 1 && t->local_rank != 0) {
        const shm_rec_t *leader = &recs[nvf_topo_member(t, t->node, 0)];
        if (leader->name[0] == '\0') {
            st = NVF_ERR_PEER;
            snprintf(err, sizeof(err), "the node leader could not create its segment");
        } else {
            slot = (size_t)leader->slot;
            st = nvf_shm_attach(&c->shm, leader->name, t->local_size, cfg->shm_nsets, slot, err,
                                sizeof(err));
        }
    }
    free(recs);
    c->large_block_bytes = slot > cfg->shm_block_bytes ? slot : 0;
    nvf_status_t all = agree(c, st, err);
    nvf_shm_unlink(&c->shm); /* every local rank has it mapped, or nobody needs it */
    if (all != NVF_OK) {
        teardown(c);
        return all;
    }

    /* 3. can a node's ranks read and write each other's memory (CMA)? Each publishes the
     * address of a known word; each reads every peer's. Not an error if not: the copying path.
     * One node, or nodes alike (the rail-aligned plan's intra-node stage): every rank of the
     * communicator takes the same branch, which is collective. */
    if ((t->nnodes == 1 || t->uniform) && t->local_size > 1 && cfg->cma_enable) {
        /* more ranks than cores: the single copies' page pinning costs more than it saves */
        bool oversubscribed = t->local_size > ncpu && !cfg->cma_oversubscribed;
        if (oversubscribed)
            nvf_log(1,
                    "rank %d: single-copy path off: %d ranks on this node share %d CPUs (see "
                    "coll_nvfabric_cma_oversubscribed)",
                    t->rank, t->local_size, ncpu);
        nvf_shm_call_t *mine = &c->shm.ctrl[t->local_rank].call;
        c->cma_probe = 0x6e7666636d61ULL ^ (uint64_t)getpid();
        mine->pid = (int32_t)getpid();
        mine->in_addr = (uint64_t)(uintptr_t)&c->cma_probe;
        int32_t ok = !oversubscribed, all_ok = 1;
        int32_t *oks = calloc((size_t)c->oob.size, sizeof(int32_t));
        if (oks == NULL || c->oob.allgather(c->oob.ctx, &ok, oks, sizeof(ok)) != 0) {
            free(oks);
            teardown(c);
            snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
            return NVF_ERR_PEER;
        }
        for (int k = 0; k < t->local_size && ok; k++) {
            const nvf_shm_call_t *peer = &c->shm.ctrl[k].call;
            uint64_t v = 0;
            if (k != t->local_rank &&
                (nvf_cma_read((pid_t)peer->pid, &v, peer->in_addr, sizeof(v)) != NVF_OK ||
                 v != (0x6e7666636d61ULL ^ (uint64_t)peer->pid))) {
                nvf_log(1,
                        "rank %d: single-copy path unavailable: process_vm_readv from local "
                        "rank %d: %s",
                        t->rank, k, v ? "unexpected data" : strerror(errno));
                ok = 0;
            }
        }
        c->cma_tmp = ok ? malloc(cfg->shm_block_bytes + (size_t)NVF_MAX_LOCAL * 64) : NULL;
        ok = ok && c->cma_tmp != NULL;
        if (c->oob.allgather(c->oob.ctx, &ok, oks, sizeof(ok)) != 0) {
            free(oks);
            teardown(c);
            snprintf(c->why, sizeof(c->why), "bootstrap allgather failed during setup");
            return NVF_ERR_PEER;
        }
        for (int r = 0; r < c->oob.size; r++)
            all_ok &= oks[r];
        free(oks);
        c->cma = all_ok != 0;
        c->cma_tune_pending = c->cma && t->nnodes == 1 && cfg->cma_tune;
        if (!c->cma) {
            free(c->cma_tmp);
            c->cma_tmp = NULL;
        }
    }
    /* without single copies the live choice starts at once, between the block sizes (with
     * them, once they are measured: nvf_cma_tune; not where their window is set) */
    if (c->large_block_bytes != 0 && !c->cma)
        c->path_live = true;

    /* 4. the rail, when there are several nodes; nodes of different sizes use local rank 0's
     * rail only (the leader plan) */
    if (t->nnodes > 1) {
        st = NVF_OK;
        if (!cfg->inter_enable) {
            st = NVF_ERR_UNSUPPORTED;
            snprintf(err, sizeof(err), "inter-node stage disabled (coll_nvfabric_inter=false)");
        }
        bool active = t->uniform || t->local_rank == 0;
        if (st == NVF_OK) {
            st = nvf_rail_setup(&c->rail, t, &c->oob, cfg->inter_slot_bytes, active, err,
                                sizeof(err));
            c->have_rail = active;
        }
        all = agree(c, st, err);
        if (all != NVF_OK) {
            teardown(c);
            return all;
        }
    }
    const nvf_plan_shape_t host_shape = {
        .local_size = t->max_local, .llc_bytes = c->llc_bytes, .host_ranks = c->host_ranks};
    const size_t stream_min = nvf_plan_stream_min(cfg, &host_shape);
    char stream_text[96] = ", results into recvbuf without streaming stores";
    if (stream_min != SIZE_MAX)
        snprintf(stream_text, sizeof(stream_text),
                 ", results streamed into recvbuf from %zu bytes (last-level cache %zu bytes)",
                 stream_min, c->llc_bytes);
    char rail_text[192] = "";
    if (c->have_rail) {
        const char *ucx_defaults = nvf_rail_ucx_defaults(&c->rail);
        snprintf(rail_text, sizeof(rail_text),
                 ", UCX rail connected (messages of %zu bytes, %s%s%s)", c->rail.slot_bytes,
                 c->rail.any_am ? "active messages on some rail" : "puts",
                 *ucx_defaults ? "; UCX defaults of nvfabric's: " : "", ucx_defaults);
    }
    char large_text[96] = "";
    if (c->large_block_bytes != 0)
        snprintf(large_text, sizeof(large_text), ", blocks of %zu or %zu bytes chosen live",
                 cfg->shm_block_bytes, c->large_block_bytes);
    char cache_text[112] = "";
    if (cfg->cache_speedup > 1)
        snprintf(cache_text, sizeof(cache_text),
                 ", model: copies %.2fx faster within %zu bytes of cache for %d ranks on a host",
                 cfg->cache_speedup, c->cache_bytes, c->host_ranks);
    nvf_log(
        1,
        "rank %d: engine ready: %d node(s)%s, local rank %d of %d, segment %zu bytes%s%s%s%s%s%s",
        t->rank, t->nnodes, t->uniform ? "" : " of different sizes", t->local_rank, t->local_size,
        c->shm.size, large_text, rail_text, c->cma ? ", single-copy (CMA) path available" : "",
        c->cores_shared ? ", more ranks than CPUs on a host (stages modelled without overlap)" : "",
        stream_text, cache_text);
    return NVF_OK;
}

/* The fewest large blocks a call must have to run in them (nvf_allreduce). */
#define NVF_LARGE_MIN_BLOCKS 8

/* The two-shot path of the call whose first block is seq0, the same on every local rank:
 * local rank 0 picks it among `allowed` (nvf_path_pick) and says so in the segment's header;
 * the others wait for that. Rank 0 cannot be on a later call before every other rank has read
 * this one's choice: it waits for their first block of this call. */
static nvf_status_t agree_path(nvf_comm_t *c, uint64_t seq0, int cls, unsigned allowed,
                               nvf_path_t *path)
{
    nvf_shm_header_t *h = c->shm.hdr;
    if (c->topo.local_rank == 0) {
        *path = nvf_path_pick(&c->paths, cls, allowed);
        atomic_store_explicit(&h->path, seq0 << 2 | (uint64_t)*path, memory_order_release);
        return NVF_OK;
    }
    unsigned spins = 0;
    const double since = nvf_now_us();
    bool warned = false;
    for (;;) {
        uint64_t v = atomic_load_explicit(&h->path, memory_order_acquire);
        if (v >> 2 == seq0) {
            *path = (nvf_path_t)(v & 3);
            return NVF_OK;
        }
        if (++spins >= (unsigned)c->cfg.spin_before_yield) {
            spins = 0;
            sched_yield();
            if (atomic_load_explicit(&h->failed, memory_order_acquire))
                return NVF_ERR_PEER;
            if (!warned && nvf_now_us() - since > 60e6) {
                warned = true;
                nvf_error("rank %d waited 60 s for local rank 0 to start MPI_Allreduce: if ranks "
                          "pass buffers of different memory kinds (host and device) to the same "
                          "call, coll_nvfabric_host=off and coll_nvfabric_cuda_ipc=true need "
                          "them alike.",
                          c->topo.rank);
            }
        }
    }
}

/* Local rank 0: what the call on the path took, and whether that changed the cheapest path
 * (of those measured). */
static void record_path(nvf_comm_t *c, int cls, nvf_path_t path, double us, size_t bytes)
{
    const bool changed = nvf_path_record(&c->paths, cls, path, us, bytes);
    nvf_log(3, "rank %d: a call of %zu bytes %s: %.3f ns per byte (median %.3f)", c->topo.rank,
            bytes, nvf_path_name(path), us * 1e3 / (double)bytes,
            nvf_path_cost(&c->paths, cls, path));
    if (changed)
        nvf_log(2,
                "rank %d: calls of about %zu bytes %s: two in a row off the median (now %.3f ns "
                "per byte): the other paths run again",
                c->topo.rank, (size_t)65536 << (2 * cls), nvf_path_name(path),
                us * 1e3 / (double)bytes);
    const nvf_path_t was = c->path_best[cls];
    double best_cost;
    const nvf_path_t best = nvf_path_cheapest(&c->paths, cls, ~0u, &best_cost);
    if (best != was && nvf_path_cost(&c->paths, cls, was) != 0)
        nvf_log(2, "rank %d: calls of about %zu bytes now %s (%.3f against %.3f ns per byte)",
                c->topo.rank, (size_t)65536 << (2 * cls), nvf_path_name(best), best_cost,
                nvf_path_cost(&c->paths, cls, was));
    c->path_best[cls] = best;
}

nvf_status_t nvf_allreduce(nvf_comm_t *c, const void *sbuf, void *rbuf, size_t count,
                           nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem,
                           nvf_call_report_t *report, const char **why)
{
    if (c->state == NVF_SETUP_NONE) {
        nvf_status_t st = setup(c);
        c->state = st == NVF_OK ? NVF_SETUP_READY : NVF_SETUP_FAILED;
        if (st != NVF_OK) {
            static bool said;
            if (!said && c->oob.rank == 0) {
                said = true;
                nvf_error("engine unavailable on a communicator of %d ranks, delegating its "
                          "calls: %s",
                          c->oob.size, c->why);
            }
        }
    }
    if (c->state != NVF_SETUP_READY) {
        if (why)
            *why = c->why;
        return NVF_ERR_UNSUPPORTED;
    }
    /* device, managed or mixed memory: the staged path (CUDA copies through the segment); the
     * protocol is the same as for host buffers, so ranks may pass different kinds */
    const bool device = !nvf_memkind_is_host(mem->kind);
    const bool in_dev = device && !nvf_memkind_is_host(mem->in.kind);
    const bool out_dev = device && !nvf_memkind_is_host(mem->out.kind);
    const nvf_call_mem_t *dev_mem = device ? mem : NULL; /* what the stages copy */
    /* one node, device memory on every rank: CUDA IPC when enabled and possible for all (before
     * the path agreement below, which counts the scheduler's calls) */
    if (device && nvf_ipc_wanted(c)) {
        bool ran = false;
        nvf_status_t st = nvf_ipc_run(c, sbuf, rbuf, count, dt, op, mem, &ran);
        if (st != NVF_OK)
            return st;
        if (ran) {
            if (report != NULL) {
                report->plan = "ipc:twoshot";
                report->inter_ran = false;
                report->device = true;
                report->predicted_us = 0;
            }
            nvf_log(2, "rank %d: %zu x %s %s: plan ipc:twoshot", c->topo.rank, count,
                    nvf_dtype_name(dt), nvf_op_name(op));
            return NVF_OK;
        }
    }
    /* the first call from the smallest size the single copies are measured at measures them
     * (every rank alike: the size is the same on every rank) */
    if (c->cma_tune_pending && count * nvf_dtype_size(dt) >= NVF_CMA_TUNE_MIN_BYTES) {
        c->cma_tune_pending = false;
        nvf_status_t st = nvf_cma_tune(c);
        if (st != NVF_OK) {
            nvf_error("rank %d: measuring the single-copy path failed: %s", c->topo.rank,
                      nvf_status_str(st));
            return st;
        }
    }
    /* once measured, each two-shot call's path is local rank 0's pick (every rank alike: the
     * size and the communicator's state are the same on every rank); below the sizes measured,
     * through the segment */
    const size_t bytes = count * nvf_dtype_size(dt);
    bool cma = c->cma && !c->path_live;
    nvf_path_t path = NVF_PATH_SEGMENT;
    int cls = -1;
    if (c->path_live && bytes >= NVF_CMA_TUNE_MIN_BYTES && bytes > c->cfg.one_shot_max_bytes) {
        cls = nvf_path_class(bytes);
        /* large blocks only where a call has NVF_LARGE_MIN_BLOCKS of them: with fewer the
         * pipeline hardly overlaps (4 ranks on 2 CPUs at 2 MiB: 0.9-1.6 ms with them allowed
         * against 0.6-1.2 ms in 256 KiB blocks) */
        const bool large_ok =
            c->large_block_bytes != 0 && bytes >= NVF_LARGE_MIN_BLOCKS * c->large_block_bytes;
        const unsigned allowed = (c->cma ? NVF_PATH_BIT(NVF_PATH_CMA) : 0) |
                                 (large_ok ? NVF_PATH_BIT(NVF_PATH_LARGE) : 0);
        nvf_status_t st = agree_path(c, c->seq + 1, cls, allowed, &path);
        if (st != NVF_OK)
            return st;
        cma = path == NVF_PATH_CMA;
    }
    /* the shape must be the same on every rank: on nodes of different sizes, the largest */
    nvf_plan_shape_t shape = {.count = count,
                              .esize = nvf_dtype_size(dt),
                              .local_size = c->topo.max_local,
                              .nnodes = c->topo.nnodes,
                              .uniform = c->topo.uniform,
                              .device = false,
                              .cma = cma,
                              .cores_shared = c->cores_shared,
                              .cache_bytes = c->cache_bytes,
                              .host_ranks = c->host_ranks,
                              .llc_bytes = c->llc_bytes,
                              .large_block_bytes =
                                  path == NVF_PATH_LARGE ? c->large_block_bytes : 0};
    const nvf_plan_t *plan = nvf_plan_get(&c->plans, &c->cfg, &shape);
    const bool timed = cls >= 0 && c->topo.local_rank == 0 && !device;
    const double t0 = timed ? nvf_now_us() : 0;
    const bool small = nvf_small_fits(c, plan, bytes);
    /* device data copied in and out of the segment: page-locked from the first such call */
    if ((in_dev || out_dev) && plan->alg != NVF_ALG_DIRECT)
        nvf_stage_register_segment(c, in_dev && sbuf != NULL ? sbuf : rbuf);
    nvf_status_t st = small ? nvf_small_run(c, sbuf, rbuf, count, dt, op, dev_mem)
                            : nvf_sched_run(c, plan, sbuf, rbuf, count, dt, op, dev_mem);
    if (timed && st == NVF_OK)
        record_path(c, cls, path, nvf_now_us() - t0, bytes);
    const char *plan_name = small ? "host:oneshot+inline" : plan->name;
    if (report != NULL) {
        report->plan = plan_name;
        report->inter_ran =
            (plan->alg == NVF_ALG_HIER || plan->alg == NVF_ALG_DIRECT) && c->topo.nnodes > 1;
        report->device = device;
        report->predicted_us = plan->predicted_us;
    }
    if (nvf_log_level() >= 2)
        nvf_log(2, "rank %d: %zu x %s %s: plan %s, %zu-element blocks, depth %d, model %.2f us%s",
                c->topo.rank, count, nvf_dtype_name(dt), nvf_op_name(op), plan_name,
                plan->block_elems, plan->depth, plan->predicted_us,
                plan->stream ? ", results streamed" : "");
    return st;
}
