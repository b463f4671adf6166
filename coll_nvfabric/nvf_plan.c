/*
 * nvf_plan.c: the cost model and the choice of plan.
 *
 * Latency alpha (us) and bandwidth (GB/s = 1e3 bytes/us) per level: intra-node copies
 * (intra_alpha, intra_bw), host reduction (reduce_bw, bytes of input per us), inter-node
 * messages (inter_alpha, inter_bw per rail). A pipelined plan overlaps its intra- and
 * inter-node parts: over nb blocks its time is max(A, B) + min(A, B) / nb. On host memory both
 * parts are the CPU's work (copies, reductions, and the transport's copies or system calls), so
 * they overlap only on cores the ranks do not already fill: where a host runs more ranks than
 * it has CPUs, the time is A + B. The intra-node stage's host copies and reductions run
 * cache_speedup times faster on the part of the host's working set that fits its last-level
 * cache (nvf_plan_cache_scale): on a 2-core VM with 32 MiB of L3, 4 ranks at 1 MiB ran 2-3x
 * faster than the bandwidths measured at 8 MiB predicted.
 */
#include "nvf_plan.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* bytes / (GB/s) in microseconds */
static double xfer_us(double bytes, double gbs)
{
    return bytes / (gbs * 1e3);
}

static int ceil_log2(int p)
{
    int k = 0;
    while ((1 << k) < p)
        k++;
    return k;
}

double nvf_plan_inter_us(const nvf_config_t *cfg, nvf_inter_alg_t alg, int p, double bytes)
{
    if (p <= 1 || alg == NVF_INTER_NONE)
        return 0;
    const double a = cfg->inter_alpha_us;
    if (alg == NVF_INTER_RD) {
        int p2 = 1 << (ceil_log2(p + 1) - 1); /* largest power of two <= p */
        double steps = ceil_log2(p2) + (p2 != p ? 2 : 0);
        return steps * (a + xfer_us(bytes, cfg->inter_bw_gbs)) +
               ceil_log2(p2) * xfer_us(bytes, cfg->reduce_bw_gbs);
    }
    if (alg == NVF_INTER_RHD) {
        /* fold (non-power-of-two), log q halving steps, log q doubling steps, unfold */
        int q = 1 << (ceil_log2(p + 1) - 1);
        double fold = q != p ? 2 * (a + xfer_us(bytes, cfg->inter_bw_gbs)) : 0;
        return fold + 2.0 * ceil_log2(q) * a +
               xfer_us(2.0 * (q - 1) / q * bytes, cfg->inter_bw_gbs) +
               xfer_us((double)(q - 1) / q * bytes, cfg->reduce_bw_gbs);
    }
    /* ring: 2(p-1) steps of bytes/p each, (p-1) of them reduce */
    return 2.0 * (p - 1) * a + xfer_us(2.0 * (p - 1) / p * bytes, cfg->inter_bw_gbs) +
           xfer_us((double)(p - 1) / p * bytes, cfg->reduce_bw_gbs);
}

double nvf_plan_cache_scale(const nvf_config_t *cfg, const nvf_plan_shape_t *sh)
{
    if (sh->device || cfg->cache_speedup <= 1 || sh->cache_bytes == 0 || sh->host_ranks <= 0)
        return 1;
    const double ws = 2.0 * (double)sh->count * (double)sh->esize * sh->host_ranks;
    const double cached = ws <= (double)sh->cache_bytes ? 1 : (double)sh->cache_bytes / ws;
    return (1 - cached) + cached / cfg->cache_speedup;
}

double nvf_plan_predict(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, const nvf_plan_t *plan)
{
    const double S = (double)sh->count * (double)sh->esize;
    const double L = sh->local_size;
    /* host copies and reductions: faster where the working set stays in the cache */
    const double cs = nvf_plan_cache_scale(cfg, sh);
    const double ai = cfg->intra_alpha_us, bc = cfg->intra_bw_gbs / cs,
                 br = cfg->reduce_bw_gbs / cs;
    const double blk = (double)plan->block_elems * (double)sh->esize;
    const double nb = blk > 0 ? ceil(S / blk) : 1;
    if (sh->device) {
        /* CUDA IPC: reduce-scatter by direct loads of (L-1)/L of the data from the peers,
         * all-gather by direct stores of as much; one-shot reads every peer's whole buffer */
        double intra = plan->alg == NVF_ALG_ONESHOT
                           ? 2 * ai + xfer_us((L - 1) * S, bc) + xfer_us(L * S, br)
                           : (2 + nb) * ai + xfer_us(2 * (L - 1) / L * S, bc) + xfer_us(S, br);
        if (plan->alg != NVF_ALG_HIER)
            return intra;
        double part = plan->split == NVF_SPLIT_EVEN ? S / L : S;
        if (plan->split == NVF_SPLIT_LEADER)
            intra = (2 + nb) * ai + xfer_us(2 * (L - 1) * S, bc) + xfer_us(L * S, br);
        double inter = nb * nvf_plan_inter_us(cfg, plan->inter, sh->nnodes, part / nb);
        double hi = intra > inter ? intra : inter, lo = intra > inter ? inter : intra;
        return hi + lo / (nb > 1 ? nb : 1);
    }
    switch (plan->alg) {
    case NVF_ALG_DIRECT: /* the rail alone (it reads the input where it is), piece by piece */
        return nb * nvf_plan_inter_us(cfg, plan->inter, sh->nnodes, S / nb);
    case NVF_ALG_ONESHOT:
        /* copy in, one flag round, reduce all L inputs */
        return 2 * ai + xfer_us(S, bc) + (L > 1 ? xfer_us(L * S, br) : 0);
    case NVF_ALG_TWOSHOT:
        if (plan->cma) /* one round to agree, then read the others' parts, reduce, write */
            return (3 + nb) * ai + xfer_us(2 * (L - 1) / L * S, bc) + xfer_us(S, br);
        /* per block: publish, reduce my part of L inputs, publish, copy out */
        return (2 + nb) * ai + xfer_us(S * (2 - 1 / L), bc) + xfer_us(S, br);
    case NVF_ALG_HIER: {
        double intra, inter;
        if (plan->split == NVF_SPLIT_EVEN && plan->cma) {
            /* one round to agree; read the others' parts, reduce; write my part to them */
            intra = (3 + nb) * ai + xfer_us(2 * (L - 1) / L * S, bc) + xfer_us(S, br);
            inter = nb * nvf_plan_inter_us(cfg, plan->inter, sh->nnodes, blk > S ? S / L : blk / L);
        } else if (plan->split == NVF_SPLIT_EVEN) {
            intra = (2 + nb) * ai + xfer_us(S * (2 - 1 / L), bc) + (L > 1 ? xfer_us(S, br) : 0);
            inter = nb * nvf_plan_inter_us(cfg, plan->inter, sh->nnodes, blk > S ? S / L : blk / L);
        } else {
            intra = (2 + nb) * ai + xfer_us(2 * S, bc) + (L > 1 ? xfer_us(L * S, br) : 0);
            inter = nb * nvf_plan_inter_us(cfg, plan->inter, sh->nnodes, blk > S ? S : blk);
        }
        if (sh->cores_shared)
            return intra + inter;
        double hi = intra > inter ? intra : inter, lo = intra > inter ? inter : intra;
        return hi + lo / (nb > 1 ? nb : 1);
    }
    }
    return 0;
}

static void finish(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, nvf_plan_t *p)
{
    p->predicted_us = nvf_plan_predict(cfg, sh, p);
}

/* Whether the large-message algorithm alg may be chosen (coll_nvfabric_inter_algorithm). */
static bool large_allowed(const nvf_config_t *cfg, nvf_inter_alg_t alg)
{
    switch (cfg->inter_large) {
    case NVF_INTER_LARGE_RING:
        return alg == NVF_INTER_RING;
    case NVF_INTER_LARGE_RHD:
        return alg == NVF_INTER_RHD;
    case NVF_INTER_LARGE_AUTO:
        break;
    }
    return true;
}

/* Pipeline block sizes to try: the segment's block (the largest possible), and 1/4, 1/16 and
 * 1/64 of it, down to 16 KiB: small blocks overlap the stages better, large ones pay the
 * per-block latencies fewer times (ring and halving-doubling latencies grow with the nodes). */
#define NVF_PLAN_BLOCKS 4

static size_t block_candidate(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, int k)
{
    size_t bytes = cfg->shm_block_bytes >> (2 * k);
    if (k > 0 && bytes < 16384)
        return 0;
    size_t be = bytes / sh->esize;
    return be ? be : 1;
}

/* Assumed where the host does not say how large its last-level cache is. */
#define NVF_LLC_DEFAULT_BYTES (32u << 20)

size_t nvf_plan_stream_min(const nvf_config_t *cfg, const nvf_plan_shape_t *sh)
{
    if (!cfg->stream_enable || sh->device)
        return SIZE_MAX;
    if (cfg->stream_min_bytes != 0)
        return cfg->stream_min_bytes;
    const size_t llc = sh->llc_bytes != 0 ? sh->llc_bytes : NVF_LLC_DEFAULT_BYTES;
    /* measured (2026-12-07, AMD VM, 32 MiB L3, alternating runs binned by the machine's state):
     * 4 ranks on its 2 CPUs gained from 4 MiB (1.4-1.5 ms against 2.0-4.9 ms) and lost at 1-2
     * MiB; 2 ranks lost at 4 MiB (median 0.43 ms against 0.36 ms) and gained from 8 MiB: where
     * the send and receive buffers of all the host's ranks fill the cache */
    const int ranks = sh->host_ranks > 0 ? sh->host_ranks : sh->local_size;
    return llc / (2 * (size_t)(ranks > 1 ? ranks : 1));
}

static void choose_alg(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, nvf_plan_t *plan);

void nvf_plan_choose(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, nvf_plan_t *plan)
{
    choose_alg(cfg, sh, plan);
    /* the plans that copy results out of the segment into the receive buffer (the single-copy
     * two-shot reduces straight into it and sends it on from there; one-shot is small) */
    const bool copies_out =
        (plan->alg == NVF_ALG_TWOSHOT && !plan->cma) || plan->alg == NVF_ALG_HIER;
    plan->stream = copies_out && sh->count * sh->esize >= nvf_plan_stream_min(cfg, sh);
}

static void choose_alg(const nvf_config_t *cfg, const nvf_plan_shape_t *sh, nvf_plan_t *plan)
{
    const size_t bytes = sh->count * sh->esize;
    memset(plan, 0, sizeof(*plan));
    plan->block_elems = block_candidate(cfg, sh, 0);
    plan->depth = cfg->pipeline_depth;
    if (sh->nnodes <= 1) {
        if (bytes <= cfg->one_shot_max_bytes) {
            plan->alg = NVF_ALG_ONESHOT;
            plan->depth = 1;
            plan->name = sh->device ? "ipc:oneshot" : "host:oneshot";
        } else {
            plan->alg = NVF_ALG_TWOSHOT;
            plan->cma = !sh->device && sh->cma && bytes >= cfg->cma_min_bytes &&
                        (cfg->cma_max_bytes == 0 || bytes <= cfg->cma_max_bytes);
            if (!sh->device && !plan->cma && sh->large_block_bytes >= sh->esize)
                plan->block_elems = sh->large_block_bytes / sh->esize;
            plan->name = sh->device                           ? "ipc:twoshot"
                         : plan->cma                          ? "host:twoshot+cma"
                         : sh->large_block_bytes >= sh->esize ? "host:twoshot+large"
                                                              : "host:twoshot";
        }
        finish(cfg, sh, plan);
        return;
    }
    /* one rank per node: the rail alone, the algorithm by the model */
    if (sh->local_size == 1 && sh->uniform && !sh->device) {
        static const char *const direct[] = {"inter", "inter:rd", "inter:ring", "inter:rhd"};
        plan->alg = NVF_ALG_DIRECT;
        size_t pieces = bytes / NVF_DIRECT_PIECE_MIN;
        pieces = pieces < 1 ? 1 : pieces > NVF_DIRECT_PIECES ? NVF_DIRECT_PIECES : pieces;
        plan->block_elems = (sh->count + pieces - 1) / pieces;
        plan->depth = 1;
        const bool small = bytes <= cfg->inter_rd_max_bytes;
        const nvf_inter_alg_t algs[] = {NVF_INTER_RING, NVF_INTER_RHD};
        nvf_plan_t best = {0};
        best.predicted_us = INFINITY;
        for (int a = 0; a < (small ? 1 : 2); a++) {
            nvf_plan_t p = *plan;
            p.inter = small ? NVF_INTER_RD : algs[a];
            if (!small && !large_allowed(cfg, p.inter))
                continue;
            p.name = direct[p.inter];
            finish(cfg, sh, &p);
            if (p.predicted_us < best.predicted_us)
                best = p;
        }
        *plan = best;
        return;
    }
    /* several nodes: the rail-aligned plan where nodes are alike, the leader plan always; per
     * block size, the inter-node algorithm by the bytes each rail carries per block (small:
     * recursive doubling; large: whichever of ring and halving-doubling the model prefers) */
    static const char *const names[3][4] = {
        {"hier:even", "hier:even+rd", "hier:even+ring", "hier:even+rhd"},
        {"hier:leader", "hier:leader+rd", "hier:leader+ring", "hier:leader+rhd"},
        {"hier:even+cma", "hier:even+cma+rd", "hier:even+cma+ring", "hier:even+cma+rhd"},
    };
    /* the rail-aligned plan's intra-node stage by single copies (host buffers, from cma_min) */
    const bool cma = !sh->device && sh->cma && bytes >= cfg->cma_min_bytes &&
                     (cfg->cma_max_bytes == 0 || bytes <= cfg->cma_max_bytes);
    nvf_plan_t best = {0};
    best.predicted_us = INFINITY;
    for (int k = 0; k < NVF_PLAN_BLOCKS; k++) {
        size_t be = block_candidate(cfg, sh, k);
        if (be == 0 || (k > 0 && be >= sh->count))
            continue; /* a block no smaller than the message was tried already */
        for (int s = 0; s < 2; s++) {
            nvf_plan_t p = *plan;
            p.alg = NVF_ALG_HIER;
            p.block_elems = be;
            p.split = s == 0 ? NVF_SPLIT_EVEN : NVF_SPLIT_LEADER;
            if (p.split == NVF_SPLIT_EVEN && (!sh->uniform || sh->local_size < 2))
                continue;
            p.cma = p.split == NVF_SPLIT_EVEN && cma;
            size_t blk_bytes = (be < sh->count ? be : sh->count) * sh->esize;
            size_t rail_bytes =
                p.split == NVF_SPLIT_EVEN ? blk_bytes / (size_t)sh->local_size : blk_bytes;
            const nvf_inter_alg_t large[] = {NVF_INTER_RING, NVF_INTER_RHD};
            const bool small = rail_bytes <= cfg->inter_rd_max_bytes;
            for (int a = 0; a < (small ? 1 : 2); a++) {
                p.inter = small ? NVF_INTER_RD : large[a];
                if (!small && !large_allowed(cfg, p.inter))
                    continue;
                p.name = names[p.cma ? 2 : s][p.inter];
                finish(cfg, sh, &p);
                if (p.predicted_us < best.predicted_us)
                    best = p;
            }
        }
    }
    *plan = best;
}

/* The geometric midpoint of two measured sizes: sizes up to it go with the smaller one. */
static size_t midpoint(size_t a, size_t b)
{
    return (size_t)sqrt((double)a * (double)b);
}

void nvf_plan_cma_window(const size_t *sizes, const double *segment_us, const double *cma_us, int n,
                         size_t *min_bytes, size_t *max_bytes)
{
    int best_first = -1, best_len = 0;
    for (int i = 0; i < n;) {
        if (!(cma_us[i] < segment_us[i])) {
            i++;
            continue;
        }
        int j = i;
        while (j < n && cma_us[j] < segment_us[j])
            j++;
        if (j - i >= best_len) { /* ties: the later run */
            best_first = i;
            best_len = j - i;
        }
        i = j;
    }
    *min_bytes = SIZE_MAX;
    *max_bytes = 0;
    if (best_first < 0)
        return;
    const int last = best_first + best_len - 1;
    *min_bytes =
        best_first == 0 ? sizes[0] : midpoint(sizes[best_first - 1], sizes[best_first]) + 1;
    *max_bytes = last == n - 1 ? 0 : midpoint(sizes[last], sizes[last + 1]);
}

const nvf_plan_t *nvf_plan_get(nvf_plan_cache_t *cache, const nvf_config_t *cfg,
                               const nvf_plan_shape_t *shape)
{
    size_t h = (shape->count * 0x9e3779b97f4a7c15ULL + shape->esize * 8 +
                (shape->large_block_bytes != 0) * 4 + shape->device * 2 + shape->cma) %
               NVF_PLAN_CACHE_SIZE;
    if (cache->e[h].count != shape->count || cache->e[h].esize != shape->esize ||
        cache->e[h].device != shape->device || cache->e[h].cma != shape->cma ||
        cache->e[h].large_block_bytes != shape->large_block_bytes) {
        nvf_plan_choose(cfg, shape, &cache->e[h].plan);
        cache->e[h].count = shape->count;
        cache->e[h].esize = shape->esize;
        cache->e[h].device = shape->device;
        cache->e[h].cma = shape->cma;
        cache->e[h].large_block_bytes = shape->large_block_bytes;
    }
    return &cache->e[h].plan;
}

int nvf_path_class(size_t bytes)
{
    int cls = 0;
    for (size_t bound = 128u << 10; cls < NVF_PATH_CLASSES - 1 && bytes >= bound; bound *= 4)
        cls++;
    return cls;
}

double nvf_path_cost(const nvf_path_stats_t *s, int cls, nvf_path_t p)
{
    double v[NVF_PATH_SAMPLES];
    memcpy(v, s->ns_per_byte[cls][p], sizeof(v));
    for (int i = 1; i < NVF_PATH_SAMPLES; i++) /* insertion sort of five */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[NVF_PATH_SAMPLES / 2];
}

nvf_path_t nvf_path_cheapest(const nvf_path_stats_t *s, int cls, unsigned among, double *cost)
{
    nvf_path_t best = NVF_PATH_SEGMENT;
    double best_cost = 0;
    for (int p = 0; p < NVF_PATH_COUNT; p++) {
        const double c = (among & NVF_PATH_BIT(p)) ? nvf_path_cost(s, cls, (nvf_path_t)p) : 0;
        if (c != 0 && (best_cost == 0 || c < best_cost)) {
            best = (nvf_path_t)p;
            best_cost = c;
        }
    }
    if (cost != NULL)
        *cost = best_cost;
    return best;
}

nvf_path_t nvf_path_pick(nvf_path_stats_t *s, int cls, unsigned allowed)
{
    const unsigned k = s->calls[cls]++;
    allowed |= NVF_PATH_BIT(NVF_PATH_SEGMENT);
    for (int p = 0; p < NVF_PATH_COUNT; p++)
        if ((allowed & NVF_PATH_BIT(p)) && nvf_path_cost(s, cls, (nvf_path_t)p) == 0)
            return (nvf_path_t)p; /* not tried yet */
    for (int p = 0; p < NVF_PATH_COUNT; p++)
        if ((allowed & NVF_PATH_BIT(p)) && s->stale[cls][p])
            return (nvf_path_t)p; /* measured before the machine changed */
    const nvf_path_t best = nvf_path_cheapest(s, cls, allowed, NULL);
    if (k % NVF_PATH_EXPLORE != NVF_PATH_EXPLORE - 1)
        return best;
    /* exploring: the others in turn */
    nvf_path_t others[NVF_PATH_COUNT];
    int n = 0;
    for (int p = 0; p < NVF_PATH_COUNT; p++)
        if ((allowed & NVF_PATH_BIT(p)) && p != (int)best)
            others[n++] = (nvf_path_t)p;
    return n == 0 ? best : others[(k / NVF_PATH_EXPLORE) % (unsigned)n];
}

/* Every sample of path p in class cls set to v (ns per byte): what a refill or a seed knows. */
static void fill_samples(nvf_path_stats_t *s, int cls, nvf_path_t p, double v)
{
    for (int i = 0; i < NVF_PATH_SAMPLES; i++)
        s->ns_per_byte[cls][p][i] = v;
    s->shifted[cls][p] = 0;
}

bool nvf_path_record(nvf_path_stats_t *s, int cls, nvf_path_t p, double us, size_t bytes)
{
    if (bytes == 0 || !(us > 0))
        return false;
    const double v = us * 1e3 / (double)bytes;
    double *samples = s->ns_per_byte[cls][p];
    const double median = nvf_path_cost(s, cls, p);
    if (median == 0 || s->stale[cls][p]) { /* nothing, or nothing current, known of it */
        fill_samples(s, cls, p, v);
        /* the first call on a path, and the first after others ran for a while, pays for
         * first touches or a cold cache (the segment's large slots: 5x its cost on the 2-core
         * VM; the first 4 MiB call through the segment after seeding: 0.73 against 0.13-0.16
         * ns per byte later, which had the single copies chosen for ~45 calls at 0.2): it runs
         * once more, and that call's cost counts */
        s->stale[cls][p] = !s->confirming[cls][p];
        s->confirming[cls][p] = !s->confirming[cls][p];
        return false;
    }
    bool changed = false;
    if (v > NVF_PATH_SHIFT * median || v * NVF_PATH_SHIFT < median) {
        if (++s->shifted[cls][p] >= 2) { /* the state changed: the others' costs are old */
            s->shifted[cls][p] = 0;
            for (int q = 0; q < NVF_PATH_COUNT; q++)
                if (q != (int)p && nvf_path_cost(s, cls, (nvf_path_t)q) != 0 && !s->stale[cls][q]) {
                    s->stale[cls][q] = changed = true;
                    s->confirming[cls][q] = false;
                }
        }
    } else {
        s->shifted[cls][p] = 0;
    }
    unsigned *next = &s->next[cls][p];
    samples[*next] = v;
    *next = (*next + 1) % NVF_PATH_SAMPLES;
    return changed;
}

void nvf_path_seed(nvf_path_stats_t *s, int cls, nvf_path_t p, double us, size_t bytes)
{
    if (bytes == 0 || !(us > 0))
        return;
    fill_samples(s, cls, p, us * 1e3 / (double)bytes);
    s->stale[cls][p] = true;
    s->confirming[cls][p] = false;
}

const char *nvf_path_name(nvf_path_t p)
{
    switch (p) {
    case NVF_PATH_CMA:
        return "by single copies";
    case NVF_PATH_LARGE:
        return "through the segment in large blocks";
    default:
        return "through the segment";
    }
}
