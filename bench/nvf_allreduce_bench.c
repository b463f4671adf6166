/*
 * nvf_allreduce_bench.c: MPI_Allreduce benchmark, several coll modules side by side in one run.
 *
 * For each module named in --modules it duplicates MPI_COMM_WORLD with the info key
 * ompi_comm_coll_preference=<module>, so Open MPI puts that module first on that communicator;
 * every size is then measured on every module in turn, under the same conditions. Per size and
 * module: warm-up, then `reps` repetitions of `iters` calls; a repetition's time is the slowest
 * rank's; the median repetition is reported. Repetitions are interleaved across modules (one of
 * each in turn), so that the machine's slow spells fall on all of them alike. Columns follow
 * nccl-tests: size, count, type, op, then per module time (us), algbw and busbw (GB/s, busbw =
 * algbw * 2(n-1)/n) and #wrong. Every measured batch is checked (integer-valued inputs, exact in
 * any reduction order) and a batch with a wrong element prints WRONG instead of a time. The last
 * columns give nvfabric's speed-up over each other module and, from its MPI_T counters, the share
 * of calls it handled and its cost model's predicted time. A module Open MPI does not put on its
 * communicator (coll/han declines communicators that live on one node) is shown as n/a: nvfabric's
 * counters reveal that it served that communicator instead. Before the table: this machine's
 * memory-copy bandwidth with all ranks copying at once, the floor a shared-memory allreduce can
 * approach. The last column, the machine's state: the mean round trip (ns) of a cache line
 * between ranks 0 and 1 just before and just after the row's repetitions (nvf_line_probe.h; on
 * this project's VMs 40-80 ns normally, 300-340 ns in its slow spells); in two-rank runs also
 * the time the two ranks take to read, at once, the row's size in bytes the other has just
 * written (xchg, nvf_pair_exchange.h): the traffic between the two CPUs that a two-rank
 * allreduce cannot avoid, costed at that moment.
 *
 *   mpirun -np 4 ./nvf_allreduce_bench [--modules nvfabric,tuned,han,sm] [--min 8]
 *          [--max 67108864] [--type float|double|int] [--reps 5] [--csv FILE]
 */
#include <mpi.h>

#include "nvf_line_probe.h"
#include "nvf_pair_exchange.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_MODULES 8

typedef struct {
    char name[32];
    MPI_Comm comm;
    double us, algbw, busbw;
    long wrong;
    bool absent; /* Open MPI did not put this module on its communicator (nvfabric served it) */
} module_t;

static int rank, nranks;
/* The benchmark's own bookkeeping (timing maxima, error counts) runs on a communicator
 * without nvfabric, so that nvfabric's counters count only measured calls. */
static MPI_Comm ctrl;

static double now(void)
{
    return MPI_Wtime();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* MPI_T counters of nvfabric (0 if absent). */
static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_handled, h_delegated, h_pred;
static int have_pvars;

static void pvars_open(void)
{
    int provided, num, found = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nl = sizeof(name), dl = sizeof(desc), verb, cls, bind, ro, cont, at, cnt;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &cont,
                                &at) != MPI_SUCCESS)
            continue;
        if (!strcmp(name, "coll_nvfabric_calls_handled") &&
            MPI_T_pvar_handle_alloc(session, i, NULL, &h_handled, &cnt) == MPI_SUCCESS)
            found |= 1;
        if (!strcmp(name, "coll_nvfabric_predicted_ns") &&
            MPI_T_pvar_handle_alloc(session, i, NULL, &h_pred, &cnt) == MPI_SUCCESS)
            found |= 2;
        if (!strcmp(name, "coll_nvfabric_calls_delegated") &&
            MPI_T_pvar_handle_alloc(session, i, NULL, &h_delegated, &cnt) == MPI_SUCCESS)
            found |= 4;
    }
    have_pvars = found == 7;
}

/* handled: calls nvfabric's engine ran; seen: calls nvfabric saw (handled + delegated). */
static void pvars_read(unsigned long long *handled, unsigned long long *seen,
                       unsigned long long *pred)
{
    unsigned long long delegated = 0;
    *handled = *seen = *pred = 0;
    if (!have_pvars)
        return;
    MPI_T_pvar_read(session, h_handled, handled);
    MPI_T_pvar_read(session, h_delegated, &delegated);
    MPI_T_pvar_read(session, h_pred, pred);
    *seen = *handled + delegated;
}

typedef struct {
    MPI_Datatype type;
    size_t esize;
    const char *name;
} btype_t;

static void fill_input(const btype_t *t, void *buf, size_t n, int r)
{
    for (size_t i = 0; i < n; i++) {
        int v = (int)((i * 7 + (size_t)r * 13) % 31) - 15; /* small integers: exact sums */
        if (t->type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else if (t->type == MPI_DOUBLE)
            ((double *)buf)[i] = (double)v;
        else
            ((int *)buf)[i] = v;
    }
}

static long count_wrong(const btype_t *t, const void *buf, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        long want = 0;
        for (int r = 0; r < nranks; r++)
            want += (long)((i * 7 + (size_t)r * 13) % 31) - 15;
        double got = t->type == MPI_FLOAT    ? ((const float *)buf)[i]
                     : t->type == MPI_DOUBLE ? ((const double *)buf)[i]
                                             : ((const int *)buf)[i];
        wrong += got != (double)want;
    }
    return wrong;
}

/* Each rank copies `bytes` repeatedly, all at once; returns the slowest rank's GB/s. */
static double memcpy_bandwidth(size_t bytes)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        MPI_Barrier(ctrl);
        double t0 = now();
        memcpy(b, a, bytes);
        memcpy(a, b, bytes);
        double t = now() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, ctrl);
        if (tmax < best)
            best = tmax;
    }
    free(a);
    free(b);
    return 2.0 * (double)bytes / best / 1e9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "ompi_comm_coll_preference", "^nvfabric");
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ctrl);
        MPI_Info_free(&info);
    }
    const char *modules_arg = "nvfabric,tuned,han,sm";
    const char *type_arg = "float";
    const char *csv_path = NULL;
    size_t min_bytes = 8, max_bytes = 64u << 20;
    int reps = 5;
    double target_s = 0.02; /* time per repetition */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--modules") && i + 1 < argc)
            modules_arg = argv[++i];
        else if (!strcmp(argv[i], "--type") && i + 1 < argc)
            type_arg = argv[++i];
        else if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            target_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv_path = argv[++i];
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s [--modules a,b] [--type float|double|int] [--min B] "
                        "[--max B] [--reps N] [--time S] [--csv FILE]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    btype_t bt = {MPI_FLOAT, sizeof(float), "float"};
    if (!strcmp(type_arg, "double"))
        bt = (btype_t){MPI_DOUBLE, sizeof(double), "double"};
    else if (!strcmp(type_arg, "int"))
        bt = (btype_t){MPI_INT, sizeof(int), "int32"};
    if (reps < 1 || reps > 101)
        reps = 5;

    module_t mods[MAX_MODULES];
    int nmods = 0, nvf_index = -1;
    char list[256];
    snprintf(list, sizeof(list), "%s", modules_arg);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nmods < MAX_MODULES;
         tok = strtok_r(NULL, ",", &save)) {
        module_t *m = &mods[nmods];
        memset(m, 0, sizeof(*m));
        snprintf(m->name, sizeof(m->name), "%s", tok);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "ompi_comm_coll_preference", tok);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &m->comm);
        MPI_Info_free(&info);
        if (!strcmp(tok, "nvfabric"))
            nvf_index = nmods;
        nmods++;
    }
    pvars_open();
    const int have_probe = nvf_line_probe_open(ctrl) == 0;
    const int probe_rounds = 2000;
    const int have_pair = nvf_pair_exchange_open(ctrl, max_bytes) == 0;

    double copy_bw = memcpy_bandwidth(64u << 20);
    FILE *csv = NULL;
    if (rank == 0) {
        printf("# nvf_allreduce_bench: %d ranks, type %s, op sum, %d reps (median), slowest rank\n",
               nranks, bt.name, reps);
        printf("# memory-copy bandwidth, all %d ranks copying at once: %.2f GB/s per rank "
               "(%.2f GB/s total)\n",
               nranks, copy_bw, copy_bw * nranks);
        printf("# modules:");
        for (int m = 0; m < nmods; m++)
            printf(" %s", mods[m].name);
        printf("   (each on its own dup of MPI_COMM_WORLD, ompi_comm_coll_preference=<module>)\n");
        printf("%12s %11s %7s %5s", "size(B)", "count", "type", "op");
        for (int m = 0; m < nmods; m++)
            printf(" | %-8.8s %9s %8s %8s %6s", mods[m].name, "time(us)", "algbw", "busbw",
                   "#wrong");
        if (nvf_index >= 0) {
            printf(" |");
            for (int m = 0; m < nmods; m++)
                if (m != nvf_index)
                    printf(" %8.8s", mods[m].name);
            printf(" %8s %9s", "handled", "model(us)");
        }
        printf(" | %13s%s\n", have_probe ? "line rtt(ns)" : "", have_pair ? "  xchg(us)" : "");
        if (csv_path && (csv = fopen(csv_path, "w")) != NULL) {
            fprintf(csv, "ranks,size,count,type,module,time_us,algbw_gbs,busbw_gbs,wrong,"
                         "handled_frac,model_us,line_rtt_ns_before,line_rtt_ns_after,"
                         "pair_exchange_us\n");
        }
    }

    size_t maxn = max_bytes / bt.esize;
    void *sbuf = malloc(max_bytes), *rbuf = malloc(max_bytes);
    long total_wrong = 0;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        size_t n = bytes / bt.esize;
        if (n == 0 || n > maxn)
            continue;
        fill_input(&bt, sbuf, n, rank);
        /* iterations per repetition from a timed probe on the first module, after one call
         * that may pay for setting up (segments, endpoints) */
        int iters = 1;
        {
            MPI_Allreduce(sbuf, rbuf, (int)n, bt.type, MPI_SUM, mods[0].comm);
            MPI_Barrier(ctrl);
            double t0 = now();
            for (int i = 0; i < 3; i++)
                MPI_Allreduce(sbuf, rbuf, (int)n, bt.type, MPI_SUM, mods[0].comm);
            double t = (now() - t0) / 3, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, ctrl);
            iters = (int)(target_s / (tmax > 1e-7 ? tmax : 1e-7));
            if (iters < 2)
                iters = 2;
            if (iters > 20000)
                iters = 20000;
        }
        double handled_frac = 0, model_us = 0;
        /* repetitions interleaved across the modules (repetition r of every module, then r+1):
         * a slow spell of the machine (this project's VM has some lasting seconds) then lands
         * on every module alike instead of on whichever module was measured during it */
        static double times[MAX_MODULES][101];
        long wrong[MAX_MODULES] = {0};
        unsigned long long dh[MAX_MODULES] = {0}, ds[MAX_MODULES] = {0}, dp[MAX_MODULES] = {0};
        for (int m = 0; m < nmods; m++)
            for (int i = 0; i < 2; i++) /* warm-up */
                MPI_Allreduce(sbuf, rbuf, (int)n, bt.type, MPI_SUM, mods[m].comm);
        const double rtt_before = nvf_line_probe_rtt_ns(probe_rounds);
        for (int r = 0; r < reps; r++) {
            for (int m = 0; m < nmods; m++) {
                module_t *mod = &mods[m];
                unsigned long long h0, s0, p0, h1, s1, p1;
                memset(rbuf, 0xA5, bytes);
                pvars_read(&h0, &s0, &p0);
                MPI_Barrier(mod->comm);
                double t0 = now();
                for (int i = 0; i < iters; i++)
                    MPI_Allreduce(sbuf, rbuf, (int)n, bt.type, MPI_SUM, mod->comm);
                double t = (now() - t0) / iters, tmax;
                pvars_read(&h1, &s1, &p1);
                dh[m] += h1 - h0;
                ds[m] += s1 - s0;
                dp[m] += p1 - p0;
                wrong[m] += count_wrong(&bt, rbuf, n);
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, ctrl);
                times[m][r] = tmax;
            }
        }
        const double rtt_after = nvf_line_probe_rtt_ns(probe_rounds);
        const double exchange_us = nvf_pair_exchange_us(bytes, 5);
        for (int m = 0; m < nmods; m++) {
            module_t *mod = &mods[m];
            /* a module Open MPI did not select (e.g. han on a single node) leaves nvfabric on
             * that communicator: its counters move */
            int absent = m != nvf_index && ds[m] > 0, any_absent;
            MPI_Allreduce(&absent, &any_absent, 1, MPI_INT, MPI_MAX, ctrl);
            mod->absent = any_absent != 0;
            long wrong_all;
            MPI_Allreduce(&wrong[m], &wrong_all, 1, MPI_LONG, MPI_SUM, ctrl);
            qsort(times[m], (size_t)reps, sizeof(double), cmp_double);
            mod->us = times[m][reps / 2] * 1e6;
            mod->algbw = (double)bytes / (mod->us * 1e-6) / 1e9;
            mod->busbw = mod->algbw * 2.0 * (nranks - 1) / nranks;
            mod->wrong = wrong_all;
            total_wrong += wrong_all;
            if (m == nvf_index) {
                unsigned long long calls = (unsigned long long)reps * (unsigned long long)iters;
                handled_frac = calls ? (double)dh[m] / (double)calls : 0;
                model_us = dh[m] > 0 ? (double)dp[m] / (double)dh[m] / 1000.0 : 0;
            }
        }
        if (rank == 0) {
            printf("%12zu %11zu %7s %5s", bytes, n, bt.name, "sum");
            for (int m = 0; m < nmods; m++) {
                if (mods[m].absent)
                    printf(" | %-8.8s %9s %8s %8s %6s", "", "n/a", "-", "-", "-");
                else if (mods[m].wrong)
                    printf(" | %-8.8s %9s %8s %8s %6ld", "", "WRONG", "-", "-", mods[m].wrong);
                else
                    printf(" | %-8.8s %9.2f %8.3f %8.3f %6ld", "", mods[m].us, mods[m].algbw,
                           mods[m].busbw, mods[m].wrong);
            }
            if (nvf_index >= 0) {
                printf(" |");
                for (int m = 0; m < nmods; m++) {
                    if (m == nvf_index)
                        continue;
                    if (mods[m].absent || mods[m].wrong || mods[nvf_index].wrong)
                        printf(" %8s", "-");
                    else
                        printf(" %7.2fx", mods[m].us / mods[nvf_index].us);
                }
                printf(" %7.0f%% %9.2f", handled_frac * 100, model_us);
            }
            if (have_probe)
                printf(" | %6.0f/%-6.0f", rtt_before, rtt_after);
            else
                printf(" | %13s", "-");
            if (have_pair)
                printf(" %9.2f", exchange_us);
            printf("\n");
            fflush(stdout);
            if (csv)
                for (int m = 0; m < nmods; m++)
                    if (!mods[m].absent)
                        fprintf(csv,
                                "%d,%zu,%zu,%s,%s,%.3f,%.4f,%.4f,%ld,%.3f,%.3f,%.0f,%.0f,%.2f\n",
                                nranks, bytes, n, bt.name, mods[m].name, mods[m].us, mods[m].algbw,
                                mods[m].busbw, mods[m].wrong, m == nvf_index ? handled_frac : 0,
                                m == nvf_index ? model_us : 0, rtt_before, rtt_after,
                                have_pair ? exchange_us : -1.0);
        }
    }
    if (csv)
        fclose(csv);
    free(sbuf);
    free(rbuf);
    for (int m = 0; m < nmods; m++)
        MPI_Comm_free(&mods[m].comm);
    nvf_line_probe_close();
    nvf_pair_exchange_close();
    MPI_Comm_free(&ctrl);
    if (have_pvars) {
        MPI_T_pvar_handle_free(session, &h_handled);
        MPI_T_pvar_handle_free(session, &h_delegated);
        MPI_T_pvar_handle_free(session, &h_pred);
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
