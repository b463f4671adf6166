/*
 * nvf_gpu_bench.c: MPI_Allreduce on CUDA device buffers, nvfabric against what an application does
 * today with an MPI that is not CUDA-aware, and against the device's own copy bandwidth.
 *
 * Per size (8 B .. 256 MiB, float sum, every rank on its GPU; ranks may share one):
 *   nvfabric  MPI_Allreduce(d_send, d_recv) on a dup of MPI_COMM_WORLD with
 *             ompi_comm_coll_preference=nvfabric;
 *   staged    cudaMemcpy to pinned host memory, MPI_Allreduce on a dup with
 *             ompi_comm_coll_preference=^nvfabric (what Open MPI does without nvfabric), cudaMemcpy
 *             back: the user's workaround;
 *   d2d       one cudaMemcpy device-to-device of the same size: the floor a copy of the data costs.
 * Columns follow nccl-tests: size, count, type, redop, then per path time (us), algbw, busbw
 * (GB/s, busbw = algbw * 2(n-1)/n) and #wrong (every measured repetition is checked: integer-valued
 * inputs, exact in any order; a wrong result prints WRONG instead of a time); the d2d time and
 * GB/s; nvfabric's speed-up over staged; and, from MPI_T, the share of nvfabric's calls its device
 * path handled (dev%: coll_nvfabric_cuda_calls; today that path is the staged one, CUDA copies
 * through the node's host segment, not the IPC kernels).
 *
 *   mpirun -np 2 bench/nvf_gpu_bench [--min 8] [--max 268435456] [--paths nvfabric,staged,d2d]
 *                                    [--reps 5] [--time 0.02] [--csv FILE]
 */
#include "../test/gpu/gpu_common.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static int rank, nranks;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_cuda, h_handled;
static bool have_pvars;

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
        if (!strcmp(name, "coll_nvfabric_cuda_calls") &&
            MPI_T_pvar_handle_alloc(session, i, NULL, &h_cuda, &cnt) == MPI_SUCCESS)
            found |= 1;
        if (!strcmp(name, "coll_nvfabric_calls_handled") &&
            MPI_T_pvar_handle_alloc(session, i, NULL, &h_handled, &cnt) == MPI_SUCCESS)
            found |= 2;
    }
    have_pvars = found == 3;
}

static unsigned long long cuda_calls(void)
{
    unsigned long long v = 0;
    if (have_pvars)
        MPI_T_pvar_read(session, h_cuda, &v);
    return v;
}

static float input(size_t i, int r)
{
    return (float)((int)((i * 7 + (size_t)r * 13) % 31) - 15);
}

/* The inputs repeat every 31 elements, and so does the sum. */
static long count_wrong(const float *h, size_t n)
{
    float want[31];
    for (size_t i = 0; i < 31; i++) {
        want[i] = 0;
        for (int r = 0; r < nranks; r++)
            want[i] += input(i, r);
    }
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += h[i] != want[i % 31];
    return wrong;
}

typedef struct {
    double us, algbw, busbw;
    long wrong;
    bool ran;
} result_t;

enum { P_NVF, P_STAGED, P_D2D, P_COUNT };
static const char *const path_names[P_COUNT] = {"nvfabric", "staged", "d2d"};

static MPI_Comm comm_nvf, comm_plain;
static float *d_send, *d_recv, *h_send, *h_recv, *h_check;

/* One call of a path on n floats. */
static void run_path(int p, size_t n)
{
    const size_t bytes = n * sizeof(float);
    switch (p) {
    case P_NVF:
        MPI_Allreduce(d_send, d_recv, (int)n, MPI_FLOAT, MPI_SUM, comm_nvf);
        break;
    case P_STAGED:
        GPU_CHECK(cudaMemcpy(h_send, d_send, bytes, cudaMemcpyDeviceToHost));
        MPI_Allreduce(h_send, h_recv, (int)n, MPI_FLOAT, MPI_SUM, comm_plain);
        GPU_CHECK(cudaMemcpy(d_recv, h_recv, bytes, cudaMemcpyHostToDevice));
        break;
    case P_D2D:
        GPU_CHECK(cudaMemcpy(d_recv, d_send, bytes, cudaMemcpyDeviceToDevice));
        break;
    }
}

static MPI_Comm dup_with(const char *pref)
{
    MPI_Comm c;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", pref);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    MPI_Info_free(&info);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    size_t min_bytes = 8, max_bytes = 256u << 20;
    int reps = 5;
    double target_s = 0.02;
    const char *csv_path = NULL, *paths_arg = "nvfabric,staged,d2d";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            target_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv_path = argv[++i];
        else if (!strcmp(argv[i], "--paths") && i + 1 < argc)
            paths_arg = argv[++i];
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s [--min B] [--max B] [--paths nvfabric,staged,d2d] [--reps N] "
                        "[--time S] [--csv FILE]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1 || reps > 101)
        reps = 5;
    bool on[P_COUNT] = {false};
    for (int p = 0; p < P_COUNT; p++)
        on[p] = strstr(paths_arg, path_names[p]) != NULL;
    int device, ndev = gpu_select_device(&device), minimum;
    MPI_Allreduce(&ndev, &minimum, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (minimum == 0) {
        if (rank == 0)
            printf("SKIPPED: no CUDA device visible to every rank\n");
        MPI_Finalize();
        return 77;
    }
    comm_nvf = dup_with("nvfabric");
    comm_plain = dup_with("^nvfabric");
    pvars_open();

    const size_t maxn = max_bytes / sizeof(float);
    GPU_CHECK(cudaMalloc((void **)&d_send, max_bytes));
    GPU_CHECK(cudaMalloc((void **)&d_recv, max_bytes));
    GPU_CHECK(cudaMallocHost((void **)&h_send, max_bytes));
    GPU_CHECK(cudaMallocHost((void **)&h_recv, max_bytes));
    h_check = malloc(max_bytes);
    for (size_t i = 0; i < maxn; i++)
        h_check[i] = input(i, rank);
    GPU_CHECK(cudaMemcpy(d_send, h_check, max_bytes, cudaMemcpyHostToDevice));

    struct cudaDeviceProp prop;
    GPU_CHECK(cudaGetDeviceProperties(&prop, device));
    FILE *csv = NULL;
    if (rank == 0) {
        printf("# nvf_gpu_bench: %d ranks, float sum, device %d (%s), %d reps (median), slowest "
               "rank\n",
               nranks, device, prop.name, reps);
        printf("# nvfabric: device buffers on a comm preferring nvfabric; staged: cudaMemcpy to "
               "pinned host + MPI_Allreduce without nvfabric + cudaMemcpy back; d2d: one "
               "cudaMemcpy device-to-device (the copy floor)\n");
        printf("%12s %11s %6s %5s", "size(B)", "count", "type", "redop");
        for (int p = 0; p < P_D2D; p++)
            if (on[p])
                printf(" | %-8s %9s %8s %8s %6s", path_names[p], "time(us)", "algbw", "busbw",
                       "#wrong");
        if (on[P_D2D])
            printf(" | %-3s %9s %8s", "d2d", "time(us)", "GB/s");
        if (on[P_NVF] && on[P_STAGED])
            printf(" | %8s", "vs-stage");
        if (on[P_NVF])
            printf(" %5s", "dev%");
        printf("\n");
        if (csv_path && (csv = fopen(csv_path, "w")) != NULL)
            fprintf(csv, "ranks,size,count,type,path,time_us,algbw_gbs,busbw_gbs,wrong,dev_frac\n");
    }

    long total_wrong = 0;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        const size_t n = bytes / sizeof(float);
        if (n == 0)
            continue;
        result_t res[P_COUNT];
        memset(res, 0, sizeof(res));
        double dev_frac = 0;
        for (int p = 0; p < P_COUNT; p++) {
            if (!on[p])
                continue;
            /* iterations per repetition, from a timed probe */
            for (int i = 0; i < 2; i++)
                run_path(p, n);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < 3; i++)
                run_path(p, n);
            GPU_CHECK(cudaDeviceSynchronize());
            double t = (MPI_Wtime() - t0) / 3, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            int iters = (int)(target_s / (tmax > 1e-7 ? tmax : 1e-7));
            iters = iters < 2 ? 2 : iters > 20000 ? 20000 : iters;
            double times[101];
            long wrong = 0;
            unsigned long long c0 = cuda_calls();
            for (int r = 0; r < reps; r++) {
                GPU_CHECK(cudaMemset(d_recv, 0xA5, bytes));
                GPU_CHECK(cudaDeviceSynchronize());
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++)
                    run_path(p, n);
                GPU_CHECK(cudaDeviceSynchronize());
                t = (MPI_Wtime() - t0) / iters;
                if (p != P_D2D) {
                    GPU_CHECK(cudaMemcpy(h_recv, d_recv, bytes, cudaMemcpyDeviceToHost));
                    wrong += count_wrong(h_recv, n);
                }
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                times[r] = tmax;
            }
            if (p == P_NVF && have_pvars)
                dev_frac = (double)(cuda_calls() - c0) / ((double)reps * iters);
            long wrong_all;
            MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            qsort(times, (size_t)reps, sizeof(double), cmp_double);
            res[p].ran = true;
            res[p].us = times[reps / 2] * 1e6;
            res[p].algbw = (double)bytes / (res[p].us * 1e-6) / 1e9;
            res[p].busbw = res[p].algbw * 2.0 * (nranks - 1) / nranks;
            res[p].wrong = wrong_all;
            total_wrong += wrong_all;
        }
        if (rank == 0) {
            printf("%12zu %11zu %6s %5s", bytes, n, "float", "sum");
            for (int p = 0; p < P_D2D; p++) {
                if (!on[p])
                    continue;
                if (res[p].wrong)
                    printf(" | %-8s %9s %8s %8s %6ld", "", "WRONG", "-", "-", res[p].wrong);
                else
                    printf(" | %-8s %9.2f %8.3f %8.3f %6ld", "", res[p].us, res[p].algbw,
                           res[p].busbw, res[p].wrong);
            }
            if (on[P_D2D])
                printf(" | %-3s %9.2f %8.2f", "", res[P_D2D].us, res[P_D2D].algbw);
            if (on[P_NVF] && on[P_STAGED]) {
                if (res[P_NVF].wrong || res[P_STAGED].wrong)
                    printf(" | %8s", "-");
                else
                    printf(" | %7.2fx", res[P_STAGED].us / res[P_NVF].us);
            }
            if (on[P_NVF])
                printf(" %4.0f%%", dev_frac * 100);
            printf("\n");
            fflush(stdout);
            if (csv)
                for (int p = 0; p < P_COUNT; p++)
                    if (on[p])
                        fprintf(csv, "%d,%zu,%zu,float,%s,%.3f,%.4f,%.4f,%ld,%.3f\n", nranks, bytes,
                                n, path_names[p], res[p].us, res[p].algbw,
                                p == P_D2D ? 0.0 : res[p].busbw, res[p].wrong,
                                p == P_NVF ? dev_frac : 0.0);
        }
    }
    if (csv)
        fclose(csv);
    GPU_CHECK(cudaFree(d_send));
    GPU_CHECK(cudaFree(d_recv));
    GPU_CHECK(cudaFreeHost(h_send));
    GPU_CHECK(cudaFreeHost(h_recv));
    free(h_check);
    MPI_Comm_free(&comm_nvf);
    MPI_Comm_free(&comm_plain);
    if (have_pvars) {
        MPI_T_pvar_handle_free(session, &h_cuda);
        MPI_T_pvar_handle_free(session, &h_handled);
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
