/*
 * test_plan.c: the scheduler's plan choice. Single-node messages take one-shot up to
 * one_shot_max and two-shot above; between nodes, recursive doubling carries what is at most
 * inter_rd_max bytes per rail, and above it coll_nvfabric_inter_algorithm decides: ring or
 * halving-doubling by the cost model (auto), or the one the user named, on every layout. Single
 * copies from cma_min where the ranks can use them (one node, or nodes alike). The plan's
 * predicted time is the model's time for that plan; a pipelined hierarchical plan on host
 * memory overlaps its stages unless a host has more ranks than CPUs (then the stages add up).
 * Host copies and reductions of the intra-node stage run cache_speedup times faster on the part
 * of the host's working set that fits its last-level cache.
 * The measured single-copy window is the longest run of sizes at which the single copies won
 * (against a brute-force search over random measurements), bounded halfway to its neighbours.
 * Results stream into the receive buffer from stream_min, or (auto) from where the inputs and
 * outputs of the node's ranks that run at once reach half the last-level cache, on the plans
 * that copy results out of the segment, never on device buffers, never where streaming is off.
 * The live choice of two-shot path: size classes; an unmeasured path is tried first; the path
 * with the lower median cost runs, the other one call in NVF_PATH_EXPLORE; one slow call does
 * not move the choice, three in five do; two in a row have the others run again, each twice
 * (its first call back, like its first call ever and its first after nvf_cma_tune's seed, does
 * not count).
 */
#include "coll_nvfabric/nvf_plan.h"
#include "nvf_test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static nvf_plan_shape_t shape(size_t bytes, int local_size, int nnodes, bool uniform)
{
    nvf_plan_shape_t sh;
    memset(&sh, 0, sizeof(sh));
    sh.esize = 4;
    sh.count = bytes / 4;
    sh.local_size = local_size;
    sh.nnodes = nnodes;
    sh.uniform = uniform;
    return sh;
}

/* The bytes each rail carries per block of plan p: what decides recursive doubling. */
static size_t rail_bytes(const nvf_plan_shape_t *sh, const nvf_plan_t *p)
{
    size_t blk = (p->block_elems < sh->count ? p->block_elems : sh->count) * sh->esize;
    return p->alg == NVF_ALG_HIER && p->split == NVF_SPLIT_EVEN ? blk / (size_t)sh->local_size
                                                                : blk;
}

static void check_layouts(const nvf_config_t *cfg, nvf_inter_alg_t forced)
{
    const struct {
        int local_size, nnodes;
        bool uniform;
    } layouts[] = {{1, 4, true}, {1, 3, true},  {2, 2, true},
                   {4, 8, true}, {3, 2, false}, {8, 1024, true}};
    const size_t sizes[] = {8, 4096, 65536, 65540, 1 << 20, 16 << 20, (size_t)1 << 30};
    const char *what = forced == NVF_INTER_RING ? "ring" : forced == NVF_INTER_RHD ? "rhd" : "auto";
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            nvf_plan_shape_t sh =
                shape(sizes[s], layouts[l].local_size, layouts[l].nnodes, layouts[l].uniform);
            nvf_plan_t p;
            nvf_plan_choose(cfg, &sh, &p);
            CHECK(p.alg == NVF_ALG_DIRECT || p.alg == NVF_ALG_HIER,
                  "%s, %dx%d, %zu B: a single-node plan (%d) for several nodes", what, sh.nnodes,
                  sh.local_size, sizes[s], (int)p.alg);
            CHECK(p.name != NULL && (strstr(p.name, "inter") || strstr(p.name, "hier")),
                  "%s: plan without a name", what);
            size_t rb = rail_bytes(&sh, &p);
            if (rb <= cfg->inter_rd_max_bytes)
                CHECK(p.inter == NVF_INTER_RD, "%s, %dx%d, %zu B: %zu B per rail ran %s", what,
                      sh.nnodes, sh.local_size, sizes[s], rb, p.name);
            else if (forced != NVF_INTER_NONE)
                CHECK(p.inter == forced, "%s, %dx%d, %zu B: ran %s", what, sh.nnodes, sh.local_size,
                      sizes[s], p.name);
            else
                CHECK(p.inter == NVF_INTER_RING || p.inter == NVF_INTER_RHD,
                      "auto, %dx%d, %zu B: %zu B per rail ran %s", sh.nnodes, sh.local_size,
                      sizes[s], rb, p.name);
            double t = nvf_plan_predict(cfg, &sh, &p);
            CHECK(isfinite(p.predicted_us) && p.predicted_us > 0 && fabs(t - p.predicted_us) < 1e-9,
                  "%s: predicted %g, the model says %g", p.name, p.predicted_us, t);
        }
    }
}

/* cores_shared: a hierarchical host plan's time is its intra-node part (the model's time with
 * free inter-node messages, less the inter-node reductions) plus nb times the inter-node time
 * of one block's part;
 * without it, less (the stages overlap) unless there is one block; device plans never add. */
static void check_cores_shared(const nvf_config_t *cfg0)
{
    const struct {
        int local_size, nnodes;
        size_t bytes;
    } cases[] = {{2, 2, 8}, {2, 2, 1 << 20}, {2, 2, 16 << 20}, {4, 8, 64 << 20}, {8, 3, 1 << 20}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        nvf_config_t cfg = *cfg0;
        nvf_plan_shape_t sh = shape(cases[i].bytes, cases[i].local_size, cases[i].nnodes, true);
        sh.cores_shared = true;
        nvf_plan_t p, q;
        nvf_plan_choose(&cfg, &sh, &p);
        CHECK(p.alg == NVF_ALG_HIER && p.split == NVF_SPLIT_EVEN, "%dx%d, %zu B: ran %s", sh.nnodes,
              sh.local_size, cases[i].bytes, p.name);
        double blk = (double)(p.block_elems < sh.count ? p.block_elems : sh.count) * 4;
        double nb = ceil((double)cases[i].bytes / ((double)p.block_elems * 4));
        double inter =
            nb * nvf_plan_inter_us(&cfg, p.inter, sh.nnodes, blk / (double)sh.local_size);
        nvf_config_t free_inter = cfg;
        free_inter.inter_alpha_us = 0;
        free_inter.inter_bw_gbs = 1e30;
        /* (the inter-node part's reductions still cost their time with free messages) */
        double intra =
            nvf_plan_predict(&free_inter, &sh, &p) -
            nb * nvf_plan_inter_us(&free_inter, p.inter, sh.nnodes, blk / (double)sh.local_size);
        CHECK(inter > 0 && fabs(p.predicted_us - (intra + inter)) < 1e-6 * p.predicted_us,
              "%dx%d, %zu B, %s, cores shared: predicted %g us, intra %g + inter %g", sh.nnodes,
              sh.local_size, cases[i].bytes, p.name, p.predicted_us, intra, inter);
        sh.cores_shared = false;
        double overlapped = nvf_plan_predict(&cfg, &sh, &p);
        CHECK(nb > 1 ? overlapped < p.predicted_us - 1e-9
                     : fabs(overlapped - p.predicted_us) < 1e-9,
              "%dx%d, %zu B, %s: %g us overlapped, %g us shared, %g blocks", sh.nnodes,
              sh.local_size, cases[i].bytes, p.name, overlapped, p.predicted_us, nb);
        sh.device = true;
        nvf_plan_choose(&cfg, &sh, &q);
        double dev = q.predicted_us;
        sh.cores_shared = true;
        CHECK(fabs(nvf_plan_predict(&cfg, &sh, &q) - dev) < 1e-9,
              "%dx%d, %zu B, device %s: the copy engines overlap whatever the cores", sh.nnodes,
              sh.local_size, cases[i].bytes, q.name);
    }
}

/* The cache regime: with intra_alpha 0, a single-node host plan's time is all copies and
 * reductions, so it scales by the share of them left where the host's working set (2 x bytes x
 * host_ranks) fits the cache: 1/speedup where it all fits, (1 - f) + f/speedup where a fraction
 * f of it does; a hierarchical plan's inter-node part does not scale; device plans, an unknown
 * cache or rank count, and cache_speedup 1 leave the model as it was. */
static void check_cache_regime(const nvf_config_t *cfg0)
{
    const struct {
        size_t bytes, cache;
        int host_ranks, local_size, nnodes;
        double speedup;
    } cases[] = {
        {1 << 20, 32 << 20, 4, 4, 1, 3.0}, {4 << 20, 32 << 20, 4, 4, 1, 3.0},
        {8 << 20, 32 << 20, 4, 4, 1, 3.0}, {16 << 20, 32 << 20, 4, 2, 1, 2.5},
        {4096, 1 << 20, 2, 2, 1, 4.0},     {1 << 20, 0, 4, 4, 1, 3.0},
        {1 << 20, 32 << 20, 0, 4, 1, 3.0}, {1 << 20, 32 << 20, 4, 4, 1, 1.0},
        {1 << 20, 32 << 20, 4, 2, 2, 3.0}, {16 << 20, 32 << 20, 4, 2, 2, 2.0},
        {3 << 20, 8 << 20, 8, 4, 2, 5.0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        nvf_config_t cfg = *cfg0, off;
        cfg.intra_alpha_us = 0;
        cfg.cache_speedup = cases[i].speedup;
        off = cfg;
        off.cache_speedup = 1;
        nvf_plan_shape_t sh = shape(cases[i].bytes, cases[i].local_size, cases[i].nnodes, true);
        sh.cache_bytes = cases[i].cache;
        sh.host_ranks = cases[i].host_ranks;
        sh.cores_shared = true;
        double ws = 2.0 * (double)cases[i].bytes * cases[i].host_ranks, f = 0;
        if (cases[i].cache != 0 && cases[i].host_ranks > 0)
            f = ws <= (double)cases[i].cache ? 1 : (double)cases[i].cache / ws;
        double want = (1 - f) + f / cases[i].speedup;
        CHECK(fabs(nvf_plan_cache_scale(&cfg, &sh) - want) < 1e-12,
              "%zu B, %d ranks, cache %zu, x%g: scale %g, want %g", cases[i].bytes, sh.host_ranks,
              sh.cache_bytes, cases[i].speedup, nvf_plan_cache_scale(&cfg, &sh), want);
        nvf_plan_t p;
        nvf_plan_choose(&off, &sh, &p);
        double inter = 0;
        if (p.alg == NVF_ALG_HIER) { /* the inter-node part, as the model has it either way */
            double blk = (double)(p.block_elems < sh.count ? p.block_elems : sh.count) * 4;
            double nb = ceil((double)cases[i].bytes / ((double)p.block_elems * 4));
            inter = nb * nvf_plan_inter_us(&cfg, p.inter, sh.nnodes, blk / (double)sh.local_size);
        }
        double before = nvf_plan_predict(&off, &sh, &p), after = nvf_plan_predict(&cfg, &sh, &p);
        CHECK(fabs(after - (inter + want * (before - inter))) < 1e-9 * before,
              "%dx%d, %zu B, %s: %g us with the cache regime, %g without, inter %g, share %g",
              sh.nnodes, sh.local_size, cases[i].bytes, p.name, after, before, inter, want);
        sh.device = true;
        nvf_plan_choose(&off, &sh, &p);
        CHECK(nvf_plan_cache_scale(&cfg, &sh) == 1 &&
                  nvf_plan_predict(&cfg, &sh, &p) == nvf_plan_predict(&off, &sh, &p),
              "%zu B, device %s: no cache regime on device memory", cases[i].bytes, p.name);
    }
}

/* The window the slow way: every maximal run of wins, the longest (then the later) kept; its
 * first and last index, or -1 where the single copies never won. */
static void check_stream(const nvf_config_t *cfg0)
{
    nvf_config_t cfg = *cfg0;
    const struct {
        int local_size, nnodes, host_ranks;
        size_t llc;
        size_t from; /* expected auto threshold: llc / (2 x host_ranks), local_size where
                      * host_ranks is unknown, llc 32 MiB where unknown */
    } cases[] = {{2, 1, 2, 32u << 20, 8u << 20},  {4, 1, 0, 32u << 20, 4u << 20},
                 {4, 1, 4, 32u << 20, 4u << 20},  {2, 2, 4, 32u << 20, 4u << 20},
                 {3, 1, 3, 30u << 20, 5242880},   {2, 1, 2, 0, 8u << 20},
                 {1, 2, 1, 8u << 20, 4u << 20},   {8, 4, 8, 256u << 20, 16u << 20},
                 {1, 4, 0, 32u << 20, 16u << 20}, {2, 1, 0, 32u << 20, 8u << 20}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        nvf_plan_shape_t sh = shape(8, cases[i].local_size, cases[i].nnodes, true);
        sh.llc_bytes = cases[i].llc;
        sh.host_ranks = cases[i].host_ranks;
        size_t from = nvf_plan_stream_min(&cfg, &sh);
        CHECK(from == cases[i].from,
              "%dx%d, %d ranks on the host, llc %zu: streams from %zu, "
              "expected %zu",
              sh.nnodes, sh.local_size, sh.host_ranks, cases[i].llc, from, cases[i].from);
        const size_t sizes[] = {from - 4, from, from + 4, 64u << 20};
        for (size_t s = 0; s < 4; s++) {
            sh.count = sizes[s] / sh.esize;
            nvf_plan_t p;
            for (int cma = 0; cma < 2; cma++) {
                sh.cma = cma;
                sh.device = false;
                nvf_plan_choose(&cfg, &sh, &p);
                bool copies_out = (p.alg == NVF_ALG_TWOSHOT && !p.cma) || p.alg == NVF_ALG_HIER;
                CHECK(p.stream == (copies_out && sizes[s] >= from),
                      "%dx%d, %zu B, cma %d, plan %s: stream %d, from %zu", sh.nnodes,
                      sh.local_size, sizes[s], cma, p.name, p.stream, from);
                sh.device = true;
                nvf_plan_choose(&cfg, &sh, &p);
                CHECK(!p.stream, "device, %zu B: streams", sizes[s]);
            }
            sh.cma = false;
            sh.device = false;
            cfg.stream_enable = false;
            nvf_plan_choose(&cfg, &sh, &p);
            CHECK(!p.stream, "stream off, %zu B: streams", sizes[s]);
            cfg.stream_enable = true;
        }
    }
    /* stream_min set: from there, whatever the cache */
    nvf_plan_shape_t sh = shape(100000, 2, 1, true);
    sh.llc_bytes = 1u << 30;
    cfg.stream_min_bytes = 100000;
    nvf_plan_t p;
    nvf_plan_choose(&cfg, &sh, &p);
    CHECK(p.stream && nvf_plan_stream_min(&cfg, &sh) == 100000, "stream_min 100000: %s streams %d",
          p.name, p.stream);
    sh.count--;
    nvf_plan_choose(&cfg, &sh, &p);
    CHECK(!p.stream, "stream_min 100000, 99996 B: streams");
}

/* A path's first two calls (the first one, paying for first touches, does not count). */
static void record_warm(nvf_path_stats_t *s, int cls, nvf_path_t p, double us, size_t bytes)
{
    nvf_path_record(s, cls, p, 3 * us, bytes);
    nvf_path_record(s, cls, p, us, bytes);
}

static void check_live_path(void)
{
    const struct {
        size_t bytes;
        int cls;
    } classes[] = {{65536, 0},          {131071, 0},   {131072, 1},         {262144, 1},
                   {524287, 1},         {524288, 2},   {1u << 20, 2},       {(2u << 20) - 1, 2},
                   {2u << 20, 3},       {4u << 20, 3}, {(8u << 20) - 1, 3}, {8u << 20, 4},
                   {(size_t)1 << 34, 4}};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        CHECK(nvf_path_class(classes[i].bytes) == classes[i].cls, "%zu B: class %d, expected %d",
              classes[i].bytes, nvf_path_class(classes[i].bytes), classes[i].cls);

    const unsigned two = NVF_PATH_BIT(NVF_PATH_CMA); /* segment and single copies */
    nvf_path_stats_t s;
    memset(&s, 0, sizeof(s));
    const size_t b = 1u << 20;
    const int cls = nvf_path_class(b);
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_SEGMENT, "nothing known: the segment first");
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 500, b); /* first call: first touches */
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_CMA, "single copies unknown: tried next");
    nvf_path_record(&s, cls, NVF_PATH_CMA, 700, b);
    /* a path's first call does not count: each runs once more, and that cost replaces it */
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_SEGMENT, "the segment's first call counted");
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 100, b); /* segment: 100 us */
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_CMA, "the single copies' first call counted");
    nvf_path_record(&s, cls, NVF_PATH_CMA, 150, b); /* single copies: 150 us */
    CHECK(!s.stale[cls][NVF_PATH_SEGMENT] && !s.stale[cls][NVF_PATH_CMA] &&
              fabs(nvf_path_cost(&s, cls, NVF_PATH_CMA) - 150e3 / (double)b) < 1e-9,
          "single copies cost %g after their second call", nvf_path_cost(&s, cls, NVF_PATH_CMA));
    CHECK(fabs(nvf_path_cost(&s, cls, NVF_PATH_SEGMENT) - 100e3 / (double)b) < 1e-9,
          "segment cost %g", nvf_path_cost(&s, cls, NVF_PATH_SEGMENT));
    /* the cheaper path, and the other one call in NVF_PATH_EXPLORE */
    memset(s.calls, 0, sizeof(s.calls));
    int other = 0;
    for (int k = 0; k < 4 * NVF_PATH_EXPLORE; k++) {
        nvf_path_t p = nvf_path_pick(&s, cls, two);
        other += p == NVF_PATH_CMA;
        CHECK(p == (k % NVF_PATH_EXPLORE == NVF_PATH_EXPLORE - 1 ? NVF_PATH_CMA : NVF_PATH_SEGMENT),
              "call %d: path %d", k, (int)p);
    }
    CHECK(other == 4, "the other path ran %d times in %d calls", other, 4 * NVF_PATH_EXPLORE);
    /* not allowed: never picked, whatever it cost */
    memset(s.calls, 0, sizeof(s.calls));
    for (int k = 0; k < 2 * NVF_PATH_EXPLORE; k++)
        CHECK(nvf_path_pick(&s, cls, 0) == NVF_PATH_SEGMENT, "call %d: a path not allowed", k);
    /* one slow segment call (a peer descheduled) does not move the choice; a second in a row
     * has the single copies run again (the machine may have changed state); the segment's own
     * cost moves with the third slow call in five */
    memset(s.calls, 0, sizeof(s.calls));
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 1000, b);
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_SEGMENT, "one slow call moved the choice");
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 1000, b);
    CHECK(s.stale[cls][NVF_PATH_CMA] && nvf_path_pick(&s, cls, two) == NVF_PATH_CMA,
          "two slow calls in a row: the single copies not run again");
    /* run again twice: the first call back (a cold cache) does not count */
    nvf_path_record(&s, cls, NVF_PATH_CMA, 600, b);
    CHECK(s.stale[cls][NVF_PATH_CMA] && nvf_path_pick(&s, cls, two) == NVF_PATH_CMA,
          "single copies run again once only");
    nvf_path_record(&s, cls, NVF_PATH_CMA, 150, b);
    CHECK(!s.stale[cls][NVF_PATH_CMA] && nvf_path_pick(&s, cls, two) == NVF_PATH_SEGMENT,
          "single copies run again at the same cost: the segment (2 slow calls in 5) not chosen");
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 1000, b);
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_CMA,
          "three slow calls in five did not move the choice");
    /* and back once the single copies slow down in turn */
    for (int k = 0; k < 3; k++)
        nvf_path_record(&s, cls, NVF_PATH_CMA, 2000, b);
    CHECK(nvf_path_pick(&s, cls, two) == NVF_PATH_SEGMENT,
          "single copies slower again: still chosen");
    /* classes are independent */
    CHECK(nvf_path_pick(&s, 0, two) == NVF_PATH_SEGMENT &&
              nvf_path_cost(&s, 0, NVF_PATH_SEGMENT) == 0,
          "class 0 was touched");

    /* three paths: the unknown large blocks tried first, then the cheapest; exploring calls
     * take the two others in turn */
    const unsigned three = NVF_PATH_BIT(NVF_PATH_CMA) | NVF_PATH_BIT(NVF_PATH_LARGE);
    memset(&s, 0, sizeof(s));
    record_warm(&s, cls, NVF_PATH_SEGMENT, 300, b);
    record_warm(&s, cls, NVF_PATH_CMA, 200, b);
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_LARGE, "large blocks unknown: not tried");
    CHECK(nvf_path_pick(&s, cls, NVF_PATH_BIT(NVF_PATH_CMA)) == NVF_PATH_CMA,
          "large blocks not allowed, single copies cheapest: not chosen");
    record_warm(&s, cls, NVF_PATH_LARGE, 100, b);
    memset(s.calls, 0, sizeof(s.calls));
    int runs[NVF_PATH_COUNT] = {0};
    for (int k = 0; k < 4 * NVF_PATH_EXPLORE; k++) {
        nvf_path_t p = nvf_path_pick(&s, cls, three);
        runs[p]++;
        if (k % NVF_PATH_EXPLORE != NVF_PATH_EXPLORE - 1)
            CHECK(p == NVF_PATH_LARGE, "call %d: path %d, the cheapest is the large blocks", k,
                  (int)p);
        else
            CHECK(p != NVF_PATH_LARGE, "call %d: exploring, yet the cheapest path", k);
    }
    CHECK(runs[NVF_PATH_SEGMENT] == 2 && runs[NVF_PATH_CMA] == 2,
          "exploring: the segment ran %d times, single copies %d, in %d calls (2 and 2)",
          runs[NVF_PATH_SEGMENT], runs[NVF_PATH_CMA], 4 * NVF_PATH_EXPLORE);
    /* a change of state: a single slow call is forgotten by the next normal one; two in a row
     * have the two others run again, once each, their new costs replacing all their samples;
     * then the cheapest */
    memset(&s, 0, sizeof(s));
    record_warm(&s, cls, NVF_PATH_SEGMENT, 100, b);
    record_warm(&s, cls, NVF_PATH_CMA, 200, b);
    record_warm(&s, cls, NVF_PATH_LARGE, 300, b);
    const double spell[] = {300, 100, 300};
    for (int k = 0; k < 3; k++)
        nvf_path_record(&s, cls, NVF_PATH_SEGMENT, spell[k], b);
    CHECK(!s.stale[cls][NVF_PATH_CMA] && !s.stale[cls][NVF_PATH_LARGE] &&
              nvf_path_pick(&s, cls, three) == NVF_PATH_SEGMENT,
          "slow calls not in a row made the others stale");
    nvf_path_record(&s, cls, NVF_PATH_SEGMENT, 300, b);
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_CMA,
          "second slow call: single copies not rerun");
    nvf_path_record(&s, cls, NVF_PATH_CMA, 450, b);
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_CMA, "single copies not rerun twice");
    nvf_path_record(&s, cls, NVF_PATH_CMA, 150, b);
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_LARGE, "large blocks not rerun");
    nvf_path_record(&s, cls, NVF_PATH_LARGE, 270, b);
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_LARGE, "large blocks not rerun twice");
    nvf_path_record(&s, cls, NVF_PATH_LARGE, 90, b);
    CHECK(fabs(nvf_path_cost(&s, cls, NVF_PATH_CMA) - 150e3 / (double)b) < 1e-9 &&
              fabs(nvf_path_cost(&s, cls, NVF_PATH_LARGE) - 90e3 / (double)b) < 1e-9,
          "rerun costs did not replace the old ones: %g %g", nvf_path_cost(&s, cls, NVF_PATH_CMA),
          nvf_path_cost(&s, cls, NVF_PATH_LARGE));
    CHECK(nvf_path_pick(&s, cls, three) == NVF_PATH_LARGE, "the cheapest after the reruns");
    /* faster by as much counts too (the end of a spell): the large blocks twice at a third */
    nvf_path_record(&s, cls, NVF_PATH_LARGE, 30, b);
    nvf_path_record(&s, cls, NVF_PATH_LARGE, 30, b);
    CHECK(s.stale[cls][NVF_PATH_SEGMENT] && s.stale[cls][NVF_PATH_CMA] &&
              !s.stale[cls][NVF_PATH_LARGE],
          "two calls in a row 3x faster did not make the others stale");
    /* costs measured before the live choice (nvf_cma_tune's seeds): each path still runs
     * twice, its first call (first touches of the program's buffers) not counting. The case
     * seen on the AMD VM: the segment's first 4 MiB call at 0.73 ns per byte, later ones
     * 0.13-0.16, the single copies 0.2 */
    memset(&s, 0, sizeof(s));
    const size_t b4 = (size_t)4 << 20;
    const int c4 = nvf_path_class(b4);
    nvf_path_seed(&s, c4, NVF_PATH_SEGMENT, 0.12e-3 * (double)b4, b4);
    nvf_path_seed(&s, c4, NVF_PATH_CMA, 0.25e-3 * (double)b4, b4);
    const nvf_path_t order[] = {NVF_PATH_SEGMENT, NVF_PATH_SEGMENT, NVF_PATH_CMA, NVF_PATH_CMA};
    const double ns[] = {0.73, 0.14, 0.3, 0.2};
    for (int k = 0; k < 4; k++) {
        const nvf_path_t p = nvf_path_pick(&s, c4, two);
        CHECK(p == order[k], "seeded: call %d on path %d, expected %d", k, (int)p, (int)order[k]);
        nvf_path_record(&s, c4, p, ns[k] * 1e-3 * (double)b4, b4);
    }
    CHECK(fabs(nvf_path_cost(&s, c4, NVF_PATH_SEGMENT) - 0.14) < 1e-9 &&
              fabs(nvf_path_cost(&s, c4, NVF_PATH_CMA) - 0.2) < 1e-9,
          "seeded: costs %g and %g, expected each path's second call (0.14, 0.2)",
          nvf_path_cost(&s, c4, NVF_PATH_SEGMENT), nvf_path_cost(&s, c4, NVF_PATH_CMA));
    CHECK(nvf_path_pick(&s, c4, two) == NVF_PATH_SEGMENT, "seeded: the segment not chosen");
    CHECK(strcmp(nvf_path_name(NVF_PATH_LARGE), nvf_path_name(NVF_PATH_SEGMENT)) != 0,
          "paths named alike");
}

/* A single-node two-shot plan in large blocks: blocks of large_block_bytes, its own name, its
 * own place in the plan cache; not with single copies, not on several nodes. */
static void check_large_blocks(const nvf_config_t *cfg)
{
    nvf_plan_shape_t sh = {
        .count = (16u << 20) / 4, .esize = 4, .local_size = 4, .nnodes = 1, .uniform = true};
    nvf_plan_t usual, large;
    nvf_plan_choose(cfg, &sh, &usual);
    sh.large_block_bytes = 1u << 20;
    nvf_plan_choose(cfg, &sh, &large);
    CHECK(usual.alg == NVF_ALG_TWOSHOT && usual.block_elems * 4 == cfg->shm_block_bytes,
          "usual plan %s: %zu-element blocks", usual.name, usual.block_elems);
    CHECK(large.alg == NVF_ALG_TWOSHOT && !large.cma && large.block_elems == (1u << 20) / 4 &&
              strcmp(large.name, "host:twoshot+large") == 0,
          "large plan %s: %zu-element blocks", large.name, large.block_elems);
    CHECK(large.predicted_us < usual.predicted_us,
          "large blocks: fewer block latencies, model "
          "%.2f against %.2f us",
          large.predicted_us, usual.predicted_us);
    nvf_plan_cache_t cache;
    memset(&cache, 0, sizeof(cache));
    const nvf_plan_t *c1 = nvf_plan_get(&cache, cfg, &sh);
    sh.large_block_bytes = 0;
    const nvf_plan_t *c0 = nvf_plan_get(&cache, cfg, &sh);
    CHECK(c0->block_elems == usual.block_elems && strcmp(c0->name, "host:twoshot") == 0,
          "cache: the usual plan came back as %s", c0->name);
    sh.large_block_bytes = 1u << 20;
    c1 = nvf_plan_get(&cache, cfg, &sh);
    CHECK(c1->block_elems == large.block_elems, "cache: the large plan came back with %zu",
          c1->block_elems);
    sh.cma = true; /* single copies win over large blocks where both are asked for */
    nvf_plan_t cma;
    nvf_config_t any = *cfg;
    any.cma_min_bytes = 0;
    any.cma_max_bytes = 0;
    nvf_plan_choose(&any, &sh, &cma);
    CHECK(cma.cma && cma.block_elems * 4 == cfg->shm_block_bytes, "cma plan %s: %zu elements",
          cma.name, cma.block_elems);
    sh.cma = false;
    sh.nnodes = 2;
    sh.local_size = 2;
    nvf_plan_t hier;
    nvf_plan_choose(cfg, &sh, &hier);
    CHECK(hier.alg == NVF_ALG_HIER && hier.block_elems * 4 <= cfg->shm_block_bytes,
          "several nodes: plan %s with %zu-element blocks", hier.name, hier.block_elems);
}

static void window_reference(const double *seg, const double *cma, int n, int *first, int *last)
{
    *first = *last = -1;
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            bool run = (i == 0 || !(cma[i - 1] < seg[i - 1])) &&
                       (j == n - 1 || !(cma[j + 1] < seg[j + 1]));
            for (int k = i; k <= j; k++)
                run = run && cma[k] < seg[k];
            if (run && (*first < 0 || j - i >= *last - *first)) {
                *first = i;
                *last = j;
            }
        }
}

static void check_cma_window(void)
{
    const size_t sizes[5] = {65536, 262144, 1048576, 4194304, 16777216};
    const double seg[5] = {7, 24, 130, 570, 2300};
    const struct {
        double cma[5];
        size_t min, max;
    } cases[] = {
        {{5, 14, 82, 443, 1895}, 65536, 0},        /* faster everywhere: no limit */
        {{9, 30, 82, 443, 1895}, 524289, 0},       /* from halfway between 256 KiB and 1 MiB */
        {{5, 14, 82, 443, 2500}, 65536, 8388608},  /* up to halfway to 16 MiB */
        {{5, 30, 82, 443, 2500}, 524289, 8388608}, /* 1 and 4 MiB: longer than 64 KiB alone */
        {{5, 14, 130, 443, 1895}, 2097153, 0},     /* two runs as long: the later */
        {{7, 24, 130, 570, 2300}, SIZE_MAX, 0},    /* a tie is no win */
        {{9, 30, 140, 600, 2299.9}, 8388609, 0},   /* the largest only */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t min, max;
        nvf_plan_cma_window(sizes, seg, cases[c].cma, 5, &min, &max);
        CHECK(min == cases[c].min && max == cases[c].max,
              "window case %zu: %zu..%zu, want %zu..%zu", c, min, max, cases[c].min, cases[c].max);
    }
    /* random measurements: the window holds exactly the reference run's sizes */
    unsigned long long rng = 12345;
    for (int t = 0; t < 3000; t++) {
        int n = 1 + (int)(nvf_test_rand(&rng) % 5);
        double s[5], m[5];
        for (int i = 0; i < n; i++) {
            s[i] = (double)(1 + nvf_test_rand(&rng) % 1000);
            m[i] = (double)(1 + nvf_test_rand(&rng) % 1000);
        }
        size_t min, max;
        nvf_plan_cma_window(sizes, s, m, n, &min, &max);
        int first, last;
        window_reference(s, m, n, &first, &last);
        if (first < 0) {
            CHECK(min == SIZE_MAX, "random window %d: never won, yet from %zu", t, min);
            continue;
        }
        for (int i = 0; i < n; i++) {
            bool in = sizes[i] >= min && (max == 0 || sizes[i] <= max);
            CHECK(in == (i >= first && i <= last), "random window %d: size %zu %s the window", t,
                  sizes[i], in ? "in" : "not in");
        }
        CHECK((max == 0) == (last == n - 1), "random window %d: limit %zu, run ends at %d of %d", t,
              max, last, n);
    }
}

int main(void)
{
    nvf_config_t cfg;
    nvf_config_init_defaults(&cfg);

    /* one node: one-shot up to one_shot_max, two-shot above */
    nvf_plan_shape_t one = shape(cfg.one_shot_max_bytes, 4, 1, true);
    nvf_plan_t p;
    nvf_plan_choose(&cfg, &one, &p);
    CHECK(p.alg == NVF_ALG_ONESHOT, "one node, one_shot_max bytes: %s", p.name);
    one = shape(cfg.one_shot_max_bytes + 4, 4, 1, true);
    nvf_plan_choose(&cfg, &one, &p);
    CHECK(p.alg == NVF_ALG_TWOSHOT, "one node, one_shot_max + 4 bytes: %s", p.name);

    /* single copies (the shape says the node's ranks can use them): from cma_min, on one node
     * and in the rail-aligned hierarchical plan; never below it, on device memory, or in the
     * leader plan (nodes of different sizes) */
    const struct {
        int local_size, nnodes;
        bool uniform, device;
        size_t bytes;
        bool want;
    } cma_cases[] = {
        {2, 1, true, false, cfg.cma_min_bytes, true},
        {2, 1, true, false, cfg.cma_min_bytes - 4, false},
        {2, 2, true, false, cfg.cma_min_bytes, true},
        {4, 8, true, false, (size_t)1 << 30, true},
        {2, 2, true, false, cfg.cma_min_bytes - 4, false},
        {2, 2, true, true, cfg.cma_min_bytes, false},
        {3, 2, false, false, cfg.cma_min_bytes, false},
    };
    for (size_t i = 0; i < sizeof(cma_cases) / sizeof(cma_cases[0]); i++) {
        nvf_plan_shape_t sh = shape(cma_cases[i].bytes, cma_cases[i].local_size,
                                    cma_cases[i].nnodes, cma_cases[i].uniform);
        sh.cma = true;
        sh.device = cma_cases[i].device;
        nvf_plan_choose(&cfg, &sh, &p);
        CHECK(p.cma == cma_cases[i].want && (strstr(p.name, "cma") != NULL) == p.cma,
              "%dx%d%s%s, %zu B: %s", sh.nnodes, sh.local_size, sh.uniform ? "" : " uneven",
              sh.device ? " device" : "", cma_cases[i].bytes, p.name);
        CHECK(fabs(nvf_plan_predict(&cfg, &sh, &p) - p.predicted_us) < 1e-9, "%s: predicted",
              p.name);
        sh.cma = false; /* and never where the ranks cannot */
        nvf_plan_choose(&cfg, &sh, &p);
        CHECK(!p.cma, "%dx%d, %zu B, no CMA: %s", sh.nnodes, sh.local_size, cma_cases[i].bytes,
              p.name);
    }

    check_cores_shared(&cfg);
    check_cache_regime(&cfg);
    check_cma_window();
    check_stream(&cfg);
    check_live_path();
    check_large_blocks(&cfg);

    /* auto: the cheaper of ring and halving-doubling by the model, for the direct plan */
    check_layouts(&cfg, NVF_INTER_NONE);
    for (int p4 = 3; p4 <= 64; p4 *= 2) {
        nvf_plan_shape_t sh = shape(64 << 20, 1, p4, true);
        nvf_plan_choose(&cfg, &sh, &p);
        /* (four pieces of 16 MiB) */
        double ring = 4 * nvf_plan_inter_us(&cfg, NVF_INTER_RING, p4, 16 << 20);
        double rhd = 4 * nvf_plan_inter_us(&cfg, NVF_INTER_RHD, p4, 16 << 20);
        CHECK(p.inter == (ring < rhd ? NVF_INTER_RING : NVF_INTER_RHD),
              "auto, %d nodes: ran %s, ring %g us, rhd %g us", p4, p.name, ring, rhd);
    }

    /* the direct plan's pieces: one below 16 MiB, then as many of at least 8 MiB as fit, at
     * most four; the model counts each piece's allreduce */
    const struct {
        size_t bytes, pieces;
    } cuts[] = {{8, 1},        {(16 << 20) - 4, 1}, {16 << 20, 2},
                {24 << 20, 3}, {64 << 20, 4},       {(size_t)1 << 30, 4}};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        nvf_plan_shape_t sh = shape(cuts[i].bytes, 1, 4, true);
        nvf_plan_choose(&cfg, &sh, &p);
        const size_t per = (sh.count + cuts[i].pieces - 1) / cuts[i].pieces;
        const double want =
            (double)cuts[i].pieces *
            nvf_plan_inter_us(&cfg, p.inter, 4, (double)cuts[i].bytes / (double)cuts[i].pieces);
        CHECK(p.alg == NVF_ALG_DIRECT && p.block_elems == per &&
                  fabs(p.predicted_us - want) < 1e-6 * want,
              "direct, %zu B: %zu-element pieces (want %zu), predicted %g us (want %g)",
              cuts[i].bytes, p.block_elems, per, p.predicted_us, want);
    }

    /* inter_algorithm named: that one above inter_rd_max, recursive doubling below */
    cfg.inter_large = NVF_INTER_LARGE_RING;
    check_layouts(&cfg, NVF_INTER_RING);
    cfg.inter_large = NVF_INTER_LARGE_RHD;
    check_layouts(&cfg, NVF_INTER_RHD);
    cfg.inter_rd_max_bytes = 0; /* no recursive doubling at all */
    nvf_plan_shape_t tiny = shape(8, 1, 4, true);
    nvf_plan_choose(&cfg, &tiny, &p);
    CHECK(p.inter == NVF_INTER_RHD, "inter_rd_max 0, rhd named, 8 B: ran %s", p.name);
    return nvf_test_finish("test_plan");
}
