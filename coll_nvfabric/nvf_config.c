/*
 * nvf_config.c: the engine's default tunables, their validation, and parsing of the textual
 * ones. mca/coll_nvfabric_params.c registers each field as an MCA parameter initialised from
 * these defaults; this file must not know about MCA.
 */
#include "nvf.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void nvf_config_init_defaults(nvf_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->verbose = 0;
    cfg->host_mode = NVF_HOST_AUTO;
    cfg->host_auto_min_bytes = 0;
    cfg->virtual_node_size = 0;
    cfg->one_shot_max_bytes = 8192; /* measured: two-shot wins from 8-32 KiB on 2-4 ranks */
    cfg->shm_block_bytes = 262144;
    cfg->shm_nsets = 4;
    /* Measured on the project's AMD VM (2026-12-07 evening, alternating runs binned by the
     * cache-line round trip between ranks; bench/results/host-blocks-2026-12-07-amd.txt): in
     * its slow spells 1 MiB blocks took 2 ranks at 16 MiB from 3.9-5.0 ms to 2.9-3.3 ms and 4
     * ranks from 15-17 ms to 11-13 ms; outside them 256 KiB blocks were up to 2x faster on 4
     * ranks at 1-2 MiB. So both, chosen live per call (nvf_path_pick) for calls of at least 8
     * large blocks, where the segment's slots can hold them. */
    cfg->shm_block_large_bytes = 1u << 20;
    cfg->pipeline_depth = 2;
    cfg->spin_before_yield = -1;
    cfg->inter_enable = true;
    cfg->inter_rd_max_bytes = 65536;
    cfg->inter_large = NVF_INTER_LARGE_AUTO;
    cfg->inter_slot_bytes = 0; /* auto: by transport (nvf_inter.h) */
    /* cost model: intra-node and reduction figures measured by bench/nvf_calibrate on the
     * project's 2-core test machine; inter-node ones for a typical 100 Gb/s RDMA network */
    cfg->intra_alpha_us = 0.3;
    cfg->intra_bw_gbs = 14.0;
    cfg->inter_alpha_us = 5.0;
    cfg->inter_bw_gbs = 10.0;
    cfg->reduce_bw_gbs = 17.0;
    cfg->cache_speedup = 1.0; /* off until bench/nvf_calibrate measures it for the machine */
    cfg->cuda_enable = true;
    cfg->cuda_ipc = false; /* until a GPU run has checked it (README, Limitations) */
    cfg->cma_enable = true;
    cfg->cma_oversubscribed = false;
    /* Where the single copies start to beat the segment moves from machine to machine and, on
     * this project's 2-core VMs, from day to day (2 ranks: from 64 KiB on 2026-12-03 and late
     * on 12-04, from 8 MiB that morning, nowhere up to 64 MiB that evening): so single-node
     * communicators measure it (cma_tune); cma_min is the fallback, for the hierarchical plan's
     * intra-node stage and where tuning is off */
    cfg->cma_min_bytes = 8u << 20;
    cfg->cma_max_bytes = 0;
    cfg->cma_tune = true;
    /* Measured on the project's AMD VM (2026-12-07, 2 ranks, segment path, alternating runs):
     * streaming the result into recvbuf took 8 MiB from 2.0-2.1 ms to 1.1-1.2 ms and 16 MiB from
     * 4.0-4.3 ms to 2.6-2.7 ms, but slowed 1-2 MiB by 10-50% (the data still fit the cache) */
    cfg->stream_enable = true;
    cfg->stream_min_bytes = 0;
}

#define NVF_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(err, errlen, __VA_ARGS__);                                                    \
            return NVF_ERR_INVALID;                                                                \
        }                                                                                          \
    } while (0)

nvf_status_t nvf_config_validate(const nvf_config_t *cfg, char *err, size_t errlen)
{
    NVF_CHECK(cfg->verbose >= 0, "verbose=%d: must be >= 0", cfg->verbose);
    NVF_CHECK(cfg->host_mode == NVF_HOST_AUTO || cfg->host_mode == NVF_HOST_ON ||
                  cfg->host_mode == NVF_HOST_OFF,
              "host: must be auto, on or off");
    NVF_CHECK(cfg->virtual_node_size >= 0,
              "virtual_node_size=%d: must be 0 (off) or a number of ranks per virtual node",
              cfg->virtual_node_size);
    NVF_CHECK(cfg->shm_block_bytes >= 4096 && cfg->shm_block_bytes <= ((size_t)1 << 30),
              "shm_block_size=%zu: must be between 4096 and 1073741824 bytes",
              cfg->shm_block_bytes);
    NVF_CHECK(cfg->one_shot_max_bytes <= cfg->shm_block_bytes,
              "one_shot_max=%zu: must not exceed shm_block_size (%zu)", cfg->one_shot_max_bytes,
              cfg->shm_block_bytes);
    NVF_CHECK(cfg->shm_nsets >= 2 && cfg->shm_nsets <= 64, "shm_nsets=%d: must be 2..64",
              cfg->shm_nsets);
    NVF_CHECK(cfg->shm_block_large_bytes == 0 ||
                  (cfg->shm_block_large_bytes > cfg->shm_block_bytes &&
                   cfg->shm_block_large_bytes <= ((size_t)1 << 30)),
              "shm_block_large=%zu: must be 0 (off) or more than shm_block_size (%zu) and at "
              "most 1073741824 bytes",
              cfg->shm_block_large_bytes, cfg->shm_block_bytes);
    NVF_CHECK(cfg->pipeline_depth >= 1 && cfg->pipeline_depth <= cfg->shm_nsets,
              "pipeline_depth=%d: must be 1..shm_nsets (%d)", cfg->pipeline_depth, cfg->shm_nsets);
    NVF_CHECK(cfg->spin_before_yield >= -1, "spin_before_yield=%d: must be -1 (auto) or >= 0",
              cfg->spin_before_yield);
    NVF_CHECK(cfg->inter_large == NVF_INTER_LARGE_AUTO ||
                  cfg->inter_large == NVF_INTER_LARGE_RING ||
                  cfg->inter_large == NVF_INTER_LARGE_RHD,
              "inter_algorithm: must be auto, ring or rhd");
    NVF_CHECK(cfg->inter_slot_bytes == 0 ||
                  (cfg->inter_slot_bytes >= 4096 && cfg->inter_slot_bytes <= ((size_t)1 << 30)),
              "inter_slot_size=%zu: must be 0 (auto) or between 4096 and 1073741824 bytes",
              cfg->inter_slot_bytes);
    NVF_CHECK(cfg->intra_alpha_us >= 0 && cfg->inter_alpha_us >= 0,
              "intra_alpha/inter_alpha: latencies must be >= 0 microseconds");
    NVF_CHECK(cfg->intra_bw_gbs > 0 && cfg->inter_bw_gbs > 0 && cfg->reduce_bw_gbs > 0,
              "intra_bw/inter_bw/reduce_bw: bandwidths must be > 0 GB/s");
    NVF_CHECK(cfg->cache_speedup >= 1 && cfg->cache_speedup <= 100,
              "cache_speedup=%g: must be between 1 (no cache regime) and 100", cfg->cache_speedup);
    return NVF_OK;
}

/* The words of the textual parameters and their values; the first word of each value is its
 * name. */
struct nvf_word {
    const char *word;
    int value;
};
#define NVF_NWORDS(t) (sizeof(t) / sizeof((t)[0]))

static const struct nvf_word host_words[] = {
    {"auto", NVF_HOST_AUTO}, {"on", NVF_HOST_ON},     {"yes", NVF_HOST_ON},
    {"true", NVF_HOST_ON},   {"1", NVF_HOST_ON},      {"off", NVF_HOST_OFF},
    {"no", NVF_HOST_OFF},    {"false", NVF_HOST_OFF}, {"0", NVF_HOST_OFF},
};

static const struct nvf_word inter_large_words[] = {
    {"auto", NVF_INTER_LARGE_AUTO},
    {"ring", NVF_INTER_LARGE_RING},
    {"rhd", NVF_INTER_LARGE_RHD},
};

/* The value of the word matching text (case-insensitive), or -1. */
static int value_of(const struct nvf_word *words, size_t n, const char *text)
{
    for (size_t i = 0; text != NULL && i < n; i++) {
        if (strcasecmp(text, words[i].word) == 0)
            return words[i].value;
    }
    return -1;
}

static const char *name_of(const struct nvf_word *words, size_t n, int value)
{
    for (size_t i = 0; i < n; i++) {
        if (words[i].value == value)
            return words[i].word;
    }
    return "invalid";
}

nvf_status_t nvf_parse_host_mode(const char *text, nvf_host_mode_t *mode)
{
    int v = value_of(host_words, NVF_NWORDS(host_words), text);
    if (v < 0)
        return NVF_ERR_INVALID;
    *mode = (nvf_host_mode_t)v;
    return NVF_OK;
}

const char *nvf_host_mode_name(nvf_host_mode_t mode)
{
    return name_of(host_words, NVF_NWORDS(host_words), (int)mode);
}

nvf_status_t nvf_parse_inter_large(const char *text, nvf_inter_large_t *alg)
{
    int v = value_of(inter_large_words, NVF_NWORDS(inter_large_words), text);
    if (v < 0)
        return NVF_ERR_INVALID;
    *alg = (nvf_inter_large_t)v;
    return NVF_OK;
}

const char *nvf_inter_large_name(nvf_inter_large_t alg)
{
    return name_of(inter_large_words, NVF_NWORDS(inter_large_words), (int)alg);
}
