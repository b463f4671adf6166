/*
 * coll_nvfabric_params.c: every MCA parameter of the component, registered here and nowhere
 * else, with its one-line help. Defaults come from the engine (nvf_config_init_defaults).
 * Values arrive as usual from --mca, OMPI_MCA_coll_nvfabric_* and parameter files; a bad value
 * is reported once, clearly, and disables the component (programs keep running on the
 * remaining coll components).
 */
#include "coll_nvfabric.h"

#include "opal/mca/base/mca_base_var.h"

#include <string.h>

/* Default priority: above tuned (30), below self (75). */
#define NVFABRIC_DEFAULT_PRIORITY 40

/* Storage for size parameters: MCA has no size_t type in every version, use unsigned long. */
static unsigned long nvf_host_auto_min, nvf_one_shot_max, nvf_shm_block, nvf_shm_block_large,
    nvf_inter_rd_max, nvf_inter_slot, nvf_cma_min, nvf_cma_max, nvf_stream_min;

static void reg_int(const char *name, const char *help, int *storage, int level)
{
    (void)mca_base_component_var_register(&mca_coll_nvfabric_component.super.collm_version, name,
                                          help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

static void reg_size(const char *name, const char *help, unsigned long *storage, size_t dflt)
{
    *storage = (unsigned long)dflt;
    (void)mca_base_component_var_register(&mca_coll_nvfabric_component.super.collm_version, name,
                                          help, MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, 0, 0,
                                          OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

static void reg_double(const char *name, const char *help, double *storage)
{
    (void)mca_base_component_var_register(&mca_coll_nvfabric_component.super.collm_version, name,
                                          help, MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0,
                                          OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

static void reg_bool(const char *name, const char *help, bool *storage)
{
    (void)mca_base_component_var_register(&mca_coll_nvfabric_component.super.collm_version, name,
                                          help, MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

int mca_coll_nvfabric_register_params(void)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    nvf_config_t *cfg = &c->cfg;
    nvf_config_init_defaults(cfg);

    c->priority = NVFABRIC_DEFAULT_PRIORITY;
    reg_int("priority", "Priority of coll/nvfabric (default 40: above tuned's 30); < 0 disables it",
            &c->priority, OPAL_INFO_LVL_2);
    reg_int("verbose",
            "0 silent; 1 what the component chose per communicator and why each new kind of call "
            "was delegated; 2 every plan; 3 debug",
            &cfg->verbose, OPAL_INFO_LVL_2);

    c->host_mode_text = (char *)nvf_host_mode_name(cfg->host_mode);
    (void)mca_base_component_var_register(
        &c->super.collm_version, "host",
        "Take over MPI_Allreduce on host buffers: auto (where measured faster than Open MPI's own "
        "module: from host_auto_min bytes), on (always), off (never)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->host_mode_text);
    reg_size("host_auto_min",
             "With host=auto: smallest message (bytes) nvfabric takes over; smaller ones go to "
             "Open MPI's module whatever the memory (ranks of a call may pass different kinds)",
             &nvf_host_auto_min, cfg->host_auto_min_bytes);
    reg_int("virtual_node_size",
            "Cut each host into virtual nodes of this many consecutive ranks (0 = off); makes the "
            "inter-node stage run on one machine",
            &cfg->virtual_node_size, OPAL_INFO_LVL_4);
    reg_size("one_shot_max",
             "Single-node messages up to this many bytes use the one-shot algorithm (every rank "
             "reduces all inputs); larger use two-shot",
             &nvf_one_shot_max, cfg->one_shot_max_bytes);
    reg_size("shm_block_size",
             "Bytes of one pipeline block per rank in the shared-memory segment (the chunk size)",
             &nvf_shm_block, cfg->shm_block_bytes);
    reg_size("shm_block_large",
             "Single-node calls: the other block size the live choice tries for two-shot through "
             "the segment (the segment's slots are made this large where the whole stays within "
             "64 MiB); 0: off",
             &nvf_shm_block_large, cfg->shm_block_large_bytes);
    reg_int("shm_nsets", "Pipeline buffer sets in the shared-memory segment (2..64)",
            &cfg->shm_nsets, OPAL_INFO_LVL_5);
    reg_int("pipeline_depth", "Blocks in flight at once (1..shm_nsets)", &cfg->pipeline_depth,
            OPAL_INFO_LVL_5);
    reg_int("spin_before_yield",
            "Polls of a flag before yielding the core (keeps oversubscribed runs moving); -1: 1 "
            "where Open MPI yields when idle (more processes than cores), else 64",
            &cfg->spin_before_yield, OPAL_INFO_LVL_6);
    reg_bool("inter", "Allow the UCX inter-node stage (false: multi-node calls are delegated)",
             &cfg->inter_enable);
    reg_size("inter_rd_max",
             "Inter-node stage: recursive doubling up to this many bytes per rail; above, "
             "inter_algorithm",
             &nvf_inter_rd_max, cfg->inter_rd_max_bytes);
    c->inter_large_text = (char *)nvf_inter_large_name(cfg->inter_large);
    (void)mca_base_component_var_register(
        &c->super.collm_version, "inter_algorithm",
        "Inter-node stage, messages above inter_rd_max bytes per rail: auto (the cost model "
        "chooses), ring (reduce-scatter + all-gather around a ring) or rhd (recursive halving + "
        "doubling)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->inter_large_text);
    reg_size("inter_slot_size",
             "Inter-node stage: bytes of one receive slot, the largest message (0: auto, up to "
             "2 MiB where every rail channel writes by RDMA put, 256 KiB where any sends by "
             "active messages, e.g. over tcp)",
             &nvf_inter_slot, cfg->inter_slot_bytes);
    reg_double("intra_alpha", "Cost model: intra-node latency per step (microseconds)",
               &cfg->intra_alpha_us);
    reg_double("intra_bw", "Cost model: intra-node copy bandwidth per rank (GB/s)",
               &cfg->intra_bw_gbs);
    reg_double("inter_alpha", "Cost model: inter-node latency per message (microseconds)",
               &cfg->inter_alpha_us);
    reg_double("inter_bw", "Cost model: inter-node bandwidth per rail (GB/s)", &cfg->inter_bw_gbs);
    reg_double("reduce_bw", "Cost model: host reduction throughput per rank (GB/s of input)",
               &cfg->reduce_bw_gbs);
    reg_double("cache_speedup",
               "Cost model: how many times faster host copies and reductions run where the "
               "inputs and outputs of a host's ranks fit its last-level cache (1: the model "
               "has no cache regime; bench/nvf_calibrate measures it)",
               &cfg->cache_speedup);
    reg_bool("cuda",
             "Use the CUDA device stage when a driver and a GPU are present (false: device "
             "buffers are copied to host memory and reduced there)",
             &cfg->cuda_enable);
    reg_bool("cuda_ipc",
             "Experimental, never run on a GPU yet: on one node, calls whose ranks all pass "
             "device memory reduce over CUDA IPC mappings of each other's buffers (two-shot) "
             "instead of staging through host memory; every rank of a call must then pass the "
             "same kind of memory",
             &cfg->cuda_ipc);
    reg_bool("cma",
             "Single-copy intra-node path for large messages: read peers' inputs and write their "
             "results directly (process_vm_readv/writev; needs ptrace access between ranks)",
             &cfg->cma_enable);
    reg_bool("cma_oversubscribed",
             "Use the single-copy path also with more ranks on a node than cores (slower there)",
             &cfg->cma_oversubscribed);
    reg_size("cma_min",
             "Messages from this many bytes use the single-copy path on one node and in the "
             "intra-node stage of the rail-aligned hierarchical plan",
             &nvf_cma_min, cfg->cma_min_bytes);
    reg_size("cma_max", "Messages up to this many bytes use the single-copy path (0: no limit)",
             &nvf_cma_max, cfg->cma_max_bytes);
    reg_bool("cma_tune",
             "Single-node communicators measure, at their first call of 64 KiB or more, what the "
             "single-copy and the segment paths cost; from then on local rank 0 picks each "
             "call's path from those costs and its calls' own times, instead of cma_min and "
             "cma_max (off where either is set)",
             &cfg->cma_tune);
    reg_bool("stream",
             "Write results into host receive buffers with streaming (non-temporal) stores from "
             "stream_min bytes: no read of each line before it is written, and the inputs stay "
             "in the cache",
             &cfg->stream_enable);
    reg_size("stream_min",
             "Messages from this many bytes stream their results (0: auto, where the node's "
             "ranks' inputs and outputs together exceed half the last-level cache)",
             &nvf_stream_min, cfg->stream_min_bytes);
    return OMPI_SUCCESS;
}

/* Called at component open, after the MCA system has set the values. */
int mca_coll_nvfabric_check_params(void)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    nvf_config_t *cfg = &c->cfg;
    char err[200];

    cfg->host_auto_min_bytes = nvf_host_auto_min;
    cfg->one_shot_max_bytes = nvf_one_shot_max;
    cfg->shm_block_bytes = nvf_shm_block;
    cfg->shm_block_large_bytes = nvf_shm_block_large;
    cfg->inter_rd_max_bytes = nvf_inter_rd_max;
    cfg->inter_slot_bytes = nvf_inter_slot;
    cfg->cma_min_bytes = nvf_cma_min;
    cfg->cma_max_bytes = nvf_cma_max;
    cfg->stream_min_bytes = nvf_stream_min;
    /* a cma_min or cma_max the user chose is not measured over */
    static const char *const window[] = {"cma_min", "cma_max"};
    for (int i = 0; i < 2; i++) {
        mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
        int vari = mca_base_var_find("ompi", "coll", "nvfabric", window[i]);
        if (vari >= 0 && mca_base_var_get_value(vari, NULL, &source, NULL) == OPAL_SUCCESS &&
            source != MCA_BASE_VAR_SOURCE_DEFAULT)
            cfg->cma_tune = false;
    }

    if (nvf_parse_host_mode(c->host_mode_text, &cfg->host_mode) != NVF_OK) {
        snprintf(err, sizeof(err), "host=%s: must be auto, on or off",
                 c->host_mode_text ? c->host_mode_text : "(null)");
    } else if (nvf_parse_inter_large(c->inter_large_text, &cfg->inter_large) != NVF_OK) {
        snprintf(err, sizeof(err), "inter_algorithm=%s: must be auto, ring or rhd",
                 c->inter_large_text ? c->inter_large_text : "(null)");
    } else if (nvf_config_validate(cfg, err, sizeof(err)) == NVF_OK) {
        c->disabled = false;
        return OMPI_SUCCESS;
    }
    c->disabled = true;
    snprintf(c->disabled_reason, sizeof(c->disabled_reason), "coll_nvfabric_%s", err);
    mca_coll_nvfabric_show_help("bad-param", c->disabled_reason);
    return OMPI_ERR_BAD_PARAM;
}
