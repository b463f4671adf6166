/*
 * nvf_plan_tool.c: the plan nvfabric's scheduler would choose at scale, and its predicted
 * time, from the same cost model the component uses (coll_nvfabric/nvf_plan.c). No MPI, no
 * hardware: it answers "what would N nodes x G GPUs do?" on paper.
 *
 * Defaults describe an H100/H200 node: G = 8 GPUs on NVSwitch, NVLink ~370 GB/s achievable per
 * GPU, one 400 Gb/s NIC per GPU (~48 GB/s), device memory reductions at ~2000 GB/s. For each
 * node count and message size it prints the plan, the predicted time, the predicted bus
 * bandwidth (busbw = S/t * 2(p-1)/p, p = N*G) and two bounds:
 *   flat  2(p-1)/p * S / B_nic           every byte over a NIC (a flat ring of p GPUs)
 *   hier  max(2(G-1)/G * S / B_nvlink,    the node's share over NVLink,
 *             2(N-1)/N * S / (G * B_nic)) and the rails' share over G NICs in parallel
 *
 *   nvf_plan_tool [--gpus G] [--nodes-max N] [--nvlink GB/s] [--nic GB/s] [--reduce GB/s]
 *                 [--intra-alpha us] [--inter-alpha us] [--block bytes] [--host]
 *   --host: model host buffers (the shared-memory stage) instead of device buffers.
 */
#include "coll_nvfabric/nvf_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void human(double bytes, char *out, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (bytes >= 1024 && u < 3) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, len, "%.0f %s", bytes, unit[u]);
}

int main(int argc, char **argv)
{
    nvf_config_t cfg;
    nvf_config_init_defaults(&cfg);
    int gpus = 8, nodes_max = 4096;
    bool device = true;
    cfg.intra_bw_gbs = 370;
    cfg.inter_bw_gbs = 48;
    cfg.reduce_bw_gbs = 2000;
    cfg.intra_alpha_us = 2.0;
    cfg.inter_alpha_us = 4.0;
    cfg.shm_block_bytes = 256u << 20; /* the largest block; the plan tries smaller ones */
    cfg.inter_rd_max_bytes = 256u << 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--host")) {
            device = false;
            continue;
        }
        if (v == NULL)
            goto usage;
        i++;
        if (!strcmp(a, "--gpus"))
            gpus = atoi(v);
        else if (!strcmp(a, "--nodes-max"))
            nodes_max = atoi(v);
        else if (!strcmp(a, "--nvlink"))
            cfg.intra_bw_gbs = atof(v);
        else if (!strcmp(a, "--nic"))
            cfg.inter_bw_gbs = atof(v);
        else if (!strcmp(a, "--reduce"))
            cfg.reduce_bw_gbs = atof(v);
        else if (!strcmp(a, "--intra-alpha"))
            cfg.intra_alpha_us = atof(v);
        else if (!strcmp(a, "--inter-alpha"))
            cfg.inter_alpha_us = atof(v);
        else if (!strcmp(a, "--block"))
            cfg.shm_block_bytes = strtoull(v, NULL, 0);
        else
            goto usage;
    }
    if (gpus < 1 || nodes_max < 1)
        goto usage;
    cfg.one_shot_max_bytes = 65536 < cfg.shm_block_bytes ? 65536 : cfg.shm_block_bytes;
    printf("# nvfabric cost model: %d %s per node, %s %.0f GB/s, NIC %.0f GB/s per %s, reduce "
           "%.0f GB/s, alpha intra %.1f us / inter %.1f us, blocks of %zu bytes\n",
           gpus, device ? "GPUs" : "ranks", device ? "NVLink" : "intra-node copies",
           cfg.intra_bw_gbs, cfg.inter_bw_gbs, device ? "GPU" : "rank", cfg.reduce_bw_gbs,
           cfg.intra_alpha_us, cfg.inter_alpha_us, cfg.shm_block_bytes);
    printf("%6s %6s %9s  %-18s %12s %10s %10s %10s %6s\n", "nodes", "ranks", "size", "plan",
           "time(us)", "busbw", "flat-bnd", "hier-bnd", "%hier");
    const double sizes[] = {
        8, 1024, 65536, 1 << 20, 16 << 20, 256 << 20, 1024.0 * (1 << 20), 4096.0 * (1 << 20)};
    for (int n = 1; n <= nodes_max; n *= 2) {
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            double S = sizes[k];
            /* a rank (GPU) per core at least: the stages overlap */
            nvf_plan_shape_t sh = {.count = (size_t)(S / 4),
                                   .esize = 4,
                                   .local_size = gpus,
                                   .nnodes = n,
                                   .uniform = true,
                                   .device = device};
            if (sh.count == 0)
                sh.count = 1;
            nvf_plan_t plan;
            nvf_plan_choose(&cfg, &sh, &plan);
            double p = (double)n * gpus, t = plan.predicted_us;
            double busbw = p > 1 ? S / (t * 1e3) * 2 * (p - 1) / p : 0; /* GB/s */
            /* bounds: the time for the bytes that must cross each link (us) */
            double flat = n > 1 ? 2 * (p - 1) / p * S / (cfg.inter_bw_gbs * 1e3) : 0;
            double intra_b = 2.0 * (gpus - 1) / gpus * S / (cfg.intra_bw_gbs * 1e3);
            double inter_b = n > 1 ? 2.0 * (n - 1) / n * S / (gpus * cfg.inter_bw_gbs * 1e3) : 0;
            double hier = intra_b > inter_b ? intra_b : inter_b;
            char sz[32];
            human(S, sz, sizeof(sz));
            printf("%6d %6.0f %9s  %-18s %12.2f %10.2f %10.2f %10.2f %5.0f%%\n", n, p, sz,
                   plan.name, t, busbw, flat, hier, t > 0 ? 100 * hier / t : 0);
        }
    }
    printf("# time in microseconds; busbw in GB/s; bounds are times (us) for the bytes alone; "
           "%%hier = share of the hierarchical bound the plan reaches\n");
    return 0;
usage:
    fprintf(stderr,
            "usage: %s [--gpus G] [--nodes-max N] [--nvlink GB/s] [--nic GB/s] [--reduce "
            "GB/s] [--intra-alpha us] [--inter-alpha us] [--block bytes] [--host]\n",
            argv[0]);
    return 2;
}
