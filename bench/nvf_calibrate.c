/*
 * nvf_calibrate.c: measure the cost model's parameters on this machine and layout, and the size
 * from which nvfabric beats the module it would delegate to (coll_nvfabric_host_auto_min).
 *
 * Run it on the layout to calibrate, e.g.
 *   mpirun -np 4 nvf_calibrate                                   (one node)
 *   mpirun -np 4 --mca coll_nvfabric_virtual_node_size 2 nvf_calibrate   (2 nodes x 2)
 * It prints suggested values as MCA parameter lines (name = value), ready to append to a
 * parameter file ($HOME/.openmpi/mca-params.conf; not mca_base_param_files=FILE, which would
 * replace the site's file); --out FILE writes them there too. Measured, with every rank
 * working at once:
 *   intra_bw      memory-copy bandwidth per rank (8 MiB copies), from the start of all
 *                 ranks' copies to the end of the last one (where ranks outnumber the cores,
 *                 each gets its share of them, as during an allreduce)
 *   reduce_bw     host reduction throughput per rank (bytes of input per second, float sum),
 *                 timed the same way
 *   cache_speedup how much faster both run with buffers that the host's ranks together keep
 *                 in its last-level cache (each rank's within 1/6 of it)
 *   intra_alpha   half an 8-byte one-shot allreduce through nvfabric (one node)
 *   inter_alpha,  with several nodes: fitted so that the cost model reproduces nvfabric's
 *   inter_bw      8-byte and 8 MiB allreduce times
 *   host_auto_min smallest size from which nvfabric is never more than 10% slower than Open
 *                 MPI's own module (tuned), per a sweep of both in this run
 */
#include "coll_nvfabric/nvf_copy.h"
#include "coll_nvfabric/nvf_plan.h"
#include "coll_nvfabric/nvf_reduce.h"

#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static MPI_Comm ctrl; /* bookkeeping without nvfabric */

static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, ctrl);
    return m;
}

static MPI_Comm comm_with(const char *pref)
{
    MPI_Info info;
    MPI_Comm c;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", pref);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    MPI_Info_free(&info);
    return c;
}

/* Median over 5 repetitions of the slowest rank's time per call (seconds). */
static double time_allreduce(MPI_Comm c, float *s, float *r, int n)
{
    double best[5];
    int iters = n < 1024 ? 2000 : n < 262144 ? 200 : 20;
    for (int i = 0; i < 3; i++)
        MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, c);
    for (int rep = 0; rep < 5; rep++) {
        MPI_Barrier(ctrl);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, c);
        best[rep] = slowest((MPI_Wtime() - t0) / iters);
    }
    for (int i = 0; i < 5; i++) /* sort */
        for (int j = i + 1; j < 5; j++)
            if (best[j] < best[i]) {
                double x = best[i];
                best[i] = best[j];
                best[j] = x;
            }
    return best[2];
}

/* The value of control variable `name` as an unsigned integer (Open MPI exposes int and bool
 * parameters as MPI_INT, sizes as MPI_UNSIGNED_LONG); dflt where it is absent. */
static unsigned long long read_cvar(const char *name, unsigned long long dflt)
{
    int num;
    unsigned long long v = dflt;
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char n[256], desc[1024];
        int nl = sizeof(n), dl = sizeof(desc), verb, bind, scope, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_handle h;
        if (MPI_T_cvar_get_info(i, n, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) !=
                MPI_SUCCESS ||
            strcmp(n, name) != 0 || MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS)
            continue;
        union {
            int i;
            unsigned u;
            long l;
            unsigned long ul;
            long long ll;
            unsigned long long ull;
        } buf = {0};
        if (count == 1 && MPI_T_cvar_read(h, &buf) == MPI_SUCCESS) {
            if (dt == MPI_INT)
                v = buf.i < 0 ? dflt : (unsigned long long)buf.i;
            else if (dt == MPI_UNSIGNED)
                v = buf.u;
            else if (dt == MPI_LONG)
                v = buf.l < 0 ? dflt : (unsigned long long)buf.l;
            else if (dt == MPI_UNSIGNED_LONG)
                v = buf.ul;
            else if (dt == MPI_LONG_LONG)
                v = buf.ll < 0 ? dflt : (unsigned long long)buf.ll;
            else if (dt == MPI_UNSIGNED_LONG_LONG)
                v = buf.ull;
        }
        MPI_T_cvar_handle_free(&h);
    }
    return v;
}

/* How many CPUs the ranks of `c` may run on together (the union of their affinity masks). */
static int cpus_of(MPI_Comm c)
{
    int n;
    MPI_Comm_size(c, &n);
    cpu_set_t mine, all;
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
        return (int)sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t *masks = malloc((size_t)n * sizeof(cpu_set_t));
    if (masks == NULL)
        return (int)sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, masks, (int)sizeof(mine), MPI_BYTE, c);
    CPU_ZERO(&all);
    for (int k = 0; k < n; k++)
        CPU_OR(&all, &all, &masks[k]);
    free(masks);
    return CPU_COUNT(&all);
}

/* Copy and float-sum reduction throughput per rank (GB/s; bytes of input for the reduction)
 * with every rank working at once: each timed from the barrier before to the one after, the
 * fastest of five; buffers of `bytes` (at most a, b and c's size), used over and over to move
 * 8 MiB per rank, so that small buffers stay in the cache. */
static void measure_bw(float *a, float *b, float *c, size_t bytes, double *copy_gbs,
                       double *reduce_gbs)
{
    const size_t total = 8u << 20, n = bytes / sizeof(float);
    const int rounds = (int)(total / bytes > 0 ? total / bytes : 1);
    const void *src[2] = {a, b};
    memcpy(c, a, bytes); /* warm: bring them in */
    nvf_reduce_many(NVF_DTYPE_FLOAT, NVF_OP_SUM, c, src, 2, n);
    double tc = 1e30, tr = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        MPI_Barrier(ctrl);
        double t0 = MPI_Wtime();
        for (int k = 0; k < rounds; k++)
            memcpy(k % 2 ? a : c, k % 2 ? c : a, bytes); /* back and forth: nothing elided */
        MPI_Barrier(ctrl);                               /* until every rank has copied */
        double t = slowest(MPI_Wtime() - t0);
        tc = t < tc ? t : tc;
        MPI_Barrier(ctrl);
        t0 = MPI_Wtime();
        for (int k = 0; k < rounds; k++)
            nvf_reduce_many(NVF_DTYPE_FLOAT, NVF_OP_SUM, c, src, 2, n);
        MPI_Barrier(ctrl);
        t = slowest(MPI_Wtime() - t0);
        tr = t < tr ? t : tr;
    }
    *copy_gbs = (double)rounds * (double)bytes / tc / 1e9;
    *reduce_gbs = 2.0 * (double)rounds * (double)bytes / tr / 1e9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int provided, rank, size;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *out_path = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--out"))
            out_path = argv[i + 1];
    ctrl = comm_with("^nvfabric");
    MPI_Comm nvf = comm_with("nvfabric"), ompi = comm_with("tuned");

    /* layout: nodes as nvfabric sees them (hosts, cut into virtual nodes) */
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    int host_rank, host_size;
    MPI_Comm_rank(host, &host_rank);
    MPI_Comm_size(host, &host_size);
    int vnode = (int)read_cvar("coll_nvfabric_virtual_node_size", 0);
    int local = vnode > 0 && vnode < host_size ? vnode : host_size;
    int first_of_node = (host_rank % local == 0), nnodes;
    MPI_Allreduce(&first_of_node, &nnodes, 1, MPI_INT, MPI_SUM, ctrl);
    int uniform_local = local, min_local;
    MPI_Allreduce(&uniform_local, &min_local, 1, MPI_INT, MPI_MIN, ctrl);

    nvf_config_t cfg;
    nvf_config_init_defaults(&cfg);
    cfg.cma_enable = read_cvar("coll_nvfabric_cma", cfg.cma_enable) != 0;
    cfg.cma_oversubscribed = read_cvar("coll_nvfabric_cma_oversubscribed", 0) != 0;
    cfg.cma_min_bytes = (size_t)read_cvar("coll_nvfabric_cma_min", cfg.cma_min_bytes);
    cfg.cma_max_bytes = (size_t)read_cvar("coll_nvfabric_cma_max", cfg.cma_max_bytes);

    /* the rest of the shape as the engine finds it: more ranks than CPUs on some host (its
     * stages then take turns on the cores), single copies within a node (where the engine's
     * probe would enable them: several ranks, not more than their CPUs, unless forced) */
    int over = host_size > cpus_of(host), cores_shared;
    MPI_Allreduce(&over, &cores_shared, 1, MPI_INT, MPI_LOR, ctrl);
    MPI_Comm node;
    MPI_Comm_split(host, host_rank / local, host_rank, &node);
    int node_over = local > cpus_of(node), any_node_over;
    MPI_Allreduce(&node_over, &any_node_over, 1, MPI_INT, MPI_LOR, ctrl);
    const bool cma = local > 1 && cfg.cma_enable && (!any_node_over || cfg.cma_oversubscribed);

    /* copy and reduction bandwidth, all ranks at once, from memory (8 MiB buffers) and from
     * the last-level cache (buffers of every rank of the host within half of it) */
    const size_t bytes = 8u << 20, n = bytes / sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(i % 7), b[i] = (float)(i % 5), c[i] = 0;
    measure_bw(a, b, c, bytes, &cfg.intra_bw_gbs, &cfg.reduce_bw_gbs);
    unsigned long long llc = nvf_llc_bytes(), cache_bytes;
    MPI_Allreduce(&llc, &cache_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, ctrl);
    int host_ranks;
    MPI_Allreduce(&host_size, &host_ranks, 1, MPI_INT, MPI_MAX, ctrl);
    size_t in_cache = cache_bytes / (6 * (size_t)host_ranks) / 4096 * 4096;
    double cached_copy = 0, cached_reduce = 0;
    if (in_cache >= 65536 && in_cache < bytes) {
        measure_bw(a, b, c, in_cache, &cached_copy, &cached_reduce);
        /* the ratio of the geometric means; never below 1 (noise) */
        double sp = sqrt(cached_copy * cached_reduce / (cfg.intra_bw_gbs * cfg.reduce_bw_gbs));
        cfg.cache_speedup = sp > 1 ? (sp < 100 ? sp : 100) : 1;
    }

    /* latency, and the inter-node parameters fitted to nvfabric's own times */
    float *s = malloc(bytes), *r = malloc(bytes);
    for (size_t i = 0; i < n; i++)
        s[i] = (float)((i + (size_t)rank) % 9);
    double t8 = time_allreduce(nvf, s, r, 2) * 1e6;
    nvf_plan_shape_t small = {.count = 2,
                              .esize = sizeof(float),
                              .local_size = local,
                              .nnodes = nnodes,
                              .uniform = min_local == local,
                              .cma = cma,
                              .cores_shared = cores_shared != 0,
                              .cache_bytes = (size_t)cache_bytes,
                              .host_ranks = host_ranks};
    if (nnodes == 1) {
        cfg.intra_alpha_us = t8 / 2;
    } else {
        /* intra latency from a node-local communicator, then inter_alpha by bisection */
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "ompi_comm_coll_preference", "nvfabric");
        MPI_Comm node_nvf;
        MPI_Comm_dup_with_info(node, info, &node_nvf);
        MPI_Info_free(&info);
        double ti = local > 1 ? time_allreduce(node_nvf, s, r, 2) * 1e6 : 0.4;
        cfg.intra_alpha_us = ti / 2;
        double lo = 0, hi = 1000;
        for (int it = 0; it < 60; it++) {
            cfg.inter_alpha_us = (lo + hi) / 2;
            nvf_plan_t p;
            nvf_plan_choose(&cfg, &small, &p);
            if (p.predicted_us < t8)
                lo = cfg.inter_alpha_us;
            else
                hi = cfg.inter_alpha_us;
        }
        double tl = time_allreduce(nvf, s, r, (int)n) * 1e6;
        nvf_plan_shape_t large = small;
        large.count = n;
        double blo = 0.01, bhi = 1000;
        for (int it = 0; it < 60; it++) {
            cfg.inter_bw_gbs = (blo + bhi) / 2;
            nvf_plan_t p;
            nvf_plan_choose(&cfg, &large, &p);
            if (p.predicted_us > tl)
                blo = cfg.inter_bw_gbs; /* model too slow: more bandwidth */
            else
                bhi = cfg.inter_bw_gbs;
        }
        MPI_Comm_free(&node_nvf);
    }
    MPI_Comm_free(&node);

    /* host_auto_min: nvfabric vs tuned, from 8 bytes up */
    size_t auto_min = 0;
    int sizes = 0;
    for (size_t sz = 8; sz <= bytes; sz *= 4, sizes++) {
        double tn = time_allreduce(nvf, s, r, (int)(sz / sizeof(float)));
        double to = time_allreduce(ompi, s, r, (int)(sz / sizeof(float)));
        if (tn > 1.1 * to)
            auto_min = sz * 4; /* slower here: start above */
        if (rank == 0)
            printf("# %9zu B: nvfabric %9.2f us, tuned %9.2f us\n", sz, tn * 1e6, to * 1e6);
    }
    if (auto_min > bytes)
        auto_min = bytes;

    if (rank == 0) {
        printf("# nvf_calibrate: %d ranks, %d node(s) of %d rank(s)\n", size, nnodes, local);
        printf("# per rank, all at once: copy %.2f GB/s, reduce %.2f GB/s (8 MiB buffers)",
               cfg.intra_bw_gbs, cfg.reduce_bw_gbs);
        if (cached_copy > 0)
            printf("; %.2f and %.2f GB/s (%zu-byte buffers, %d ranks, %llu bytes of cache)",
                   cached_copy, cached_reduce, in_cache, host_ranks, cache_bytes);
        printf("\n");
        char lines[1024];
        int len =
            snprintf(lines, sizeof(lines),
                     "coll_nvfabric_intra_bw = %.2f\ncoll_nvfabric_reduce_bw = %.2f\n"
                     "coll_nvfabric_cache_speedup = %.2f\n"
                     "coll_nvfabric_intra_alpha = %.3f\n",
                     cfg.intra_bw_gbs, cfg.reduce_bw_gbs, cfg.cache_speedup, cfg.intra_alpha_us);
        if (nnodes > 1)
            len += snprintf(lines + len, sizeof(lines) - (size_t)len,
                            "coll_nvfabric_inter_alpha = %.3f\ncoll_nvfabric_inter_bw = %.3f\n",
                            cfg.inter_alpha_us, cfg.inter_bw_gbs);
        snprintf(lines + len, sizeof(lines) - (size_t)len, "coll_nvfabric_host_auto_min = %zu\n",
                 auto_min);
        fputs(lines, stdout);
        if (out_path != NULL) {
            FILE *f = fopen(out_path, "w");
            if (f == NULL || fputs(lines, f) < 0)
                fprintf(stderr, "cannot write %s\n", out_path);
            if (f != NULL)
                fclose(f);
        }
    }
    free(a);
    free(b);
    free(c);
    free(s);
    free(r);
    MPI_Comm_free(&host);
    MPI_Comm_free(&nvf);
    MPI_Comm_free(&ompi);
    MPI_Comm_free(&ctrl);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
