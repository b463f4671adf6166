/*
 * gpu_allreduce.c: MPI_Allreduce on GPU buffers, exactly as an application calls it, every element
 * checked against each rank's own sequential reduction (test/common/nvf_ref.c).
 *
 * One buffer kind per run (a run that crashes does not hide the others): cudaMalloc (device),
 * cudaMallocAsync (async), cudaMallocManaged (managed) or cudaMallocHost (pinned). Cases: every
 * predefined datatype x every op that MPI defines on it and the device stage computes (device
 * kind; a subset of types for the other kinds) x counts (1, small primes, counts not divisible by
 * the number of ranks, around 64 Ki, and a few MiB) x offsets into a larger allocation of 0, 1 and
 * 3 elements (pointers not 16-byte aligned) x in place / out of place x communicators (WORLD, a
 * dup, reversed order). Ranks may share one GPU.
 *
 *   --kind device|async|managed|pinned   (default device)
 *   --level quick|full                   full: every type at the large counts, more offsets
 *   --mode exact|random                  random: full-range inputs; the result must then match the
 *                                        rank-order reduction bit for bit, and agree across ranks
 *   --expect-device                      every call must be counted by coll_nvfabric_cuda_calls
 * Prints the first wrong element of each failing case and a summary; exit 0 only if all passed,
 * 77 when no GPU is visible.
 */
#include "gpu_common.h"
#include "nvf_mpi_test.h"

#include <stdint.h>

static int rank, nranks;
static gpu_buf_kind_t kind = GPU_BUF_DEVICE;
static bool full, expect_device;
static nvf_ref_mode_t mode = NVF_REF_EXACT;
static long cases, failures, counter_failures, disagreements;
static unsigned long long seed = 1;

/* Device-capable pairs, as the engine's device list (no long double on a GPU). */
static bool device_pair(nvf_dtype_t dt, nvf_op_t op)
{
    if (dt == NVF_DTYPE_LONG_DOUBLE || dt == NVF_DTYPE_LONG_DOUBLE_COMPLEX ||
        dt == NVF_DTYPE_LONG_DOUBLE_INT)
        return false;
    return nvf_ref_mpi_defines(dt, op);
}

static void poison(void *p, size_t bytes)
{
    if (kind == GPU_BUF_PINNED)
        memset(p, 0xA5, bytes);
    else
        GPU_CHECK(cudaMemset(p, 0xA5, bytes));
    GPU_CHECK(cudaDeviceSynchronize());
}

static void run_case(MPI_Comm comm, const char *cname, const nvf_mpi_type_t *ty, nvf_op_t op,
                     size_t count, size_t off, bool in_place, char *sbase, char *rbase)
{
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    const size_t es = nvf_ref_size(ty->dt), bytes = count * es;
    void **in = calloc((size_t)csize, sizeof(void *));
    for (int r = 0; r < csize; r++) {
        in[r] = malloc(bytes);
        nvf_ref_fill(ty->dt, op, mode, in[r], count, seed * 1000003ULL + (unsigned)r);
    }
    void *ref = malloc(bytes), *got = malloc(bytes);
    nvf_ref_reduce(ty->dt, op, ref, in, csize, count);
    char *sbuf = sbase + off * es, *rbuf = rbase + off * es;
    if (in_place) {
        GPU_CHECK(cudaMemcpy(rbuf, in[crank], bytes, cudaMemcpyDefault));
    } else {
        GPU_CHECK(cudaMemcpy(sbuf, in[crank], bytes, cudaMemcpyDefault));
        poison(rbuf, bytes);
    }
    nvf_pvars_t before, after;
    nvf_pvars_read(&before);
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)count, ty->type,
                           nvf_mpi_op(op), comm);
    nvf_pvars_read(&after);
    GPU_CHECK(cudaMemcpy(got, rbuf, bytes, cudaMemcpyDefault));
    cases++;
    long bad = 0;
    size_t first = count;
    if (rc != MPI_SUCCESS) {
        bad = 1;
        fprintf(stderr, "FAIL rank %d: MPI_Allreduce returned %d\n", rank, rc);
    }
    for (size_t i = 0; rc == MPI_SUCCESS && i < count; i++)
        if (!nvf_ref_same(ty->dt, got, ref, i, mode == NVF_REF_RANDOM) && bad++ == 0)
            first = i;
    if (bad && first < count && failures < 20) {
        char g[96], w[96];
        nvf_ref_format(ty->dt, got, first, g, sizeof(g));
        nvf_ref_format(ty->dt, ref, first, w, sizeof(w));
        fprintf(stderr,
                "FAIL rank %d: %s %s %s op=%s count=%zu offset=%zu %s seed=%llu: %ld wrong; "
                "element %zu is %s, expected %s\n",
                rank, gpu_kind_name(kind), cname, ty->name, nvf_ref_op_name(op), count, off,
                in_place ? "in-place" : "out-of-place", seed, bad, first, g, w);
    }
    if (bad)
        failures++;
    if (mode == NVF_REF_RANDOM) {
        /* every rank must hold the same bits: compare with rank 0's result */
        void *r0 = malloc(bytes);
        if (crank == 0)
            memcpy(r0, got, bytes);
        MPI_Bcast(r0, (int)bytes, MPI_BYTE, 0, comm);
        if (nvf_ref_first_diff(ty->dt, got, r0, count, true) < count)
            disagreements++;
        free(r0);
    }
    if (expect_device && csize >= 2 && after.present) {
        unsigned long long dc = after.v[NVF_PV_CUDA_CALLS] - before.v[NVF_PV_CUDA_CALLS];
        if (dc != 1 && counter_failures++ < 10)
            fprintf(stderr, "FAIL rank %d: %s %s count=%zu: coll_nvfabric_cuda_calls +%llu\n", rank,
                    ty->name, nvf_ref_op_name(op), count, dc);
    }
    for (int r = 0; r < csize; r++)
        free(in[r]);
    free(in);
    free(ref);
    free(got);
    seed++;
}

static bool subset_type(MPI_Datatype t)
{
    return t == MPI_FLOAT || t == MPI_DOUBLE || t == MPI_INT || t == MPI_SIGNED_CHAR ||
           t == MPI_UNSIGNED_SHORT || t == MPI_LONG || t == MPI_C_BOOL ||
           t == MPI_C_DOUBLE_COMPLEX || t == MPI_DOUBLE_INT || t == MPI_SHORT_INT;
}

static void run_comm(MPI_Comm comm, const char *cname, char *sbase, char *rbase, size_t cap)
{
    int csize;
    MPI_Comm_size(comm, &csize);
    for (int t = 0; t < nvf_mpi_ntypes; t++) {
        const nvf_mpi_type_t *ty = &nvf_mpi_types[t];
        int msize;
        MPI_Type_size(ty->type, &msize);
        if (msize == 0)
            continue;
        const bool sub = subset_type(ty->type);
        if (kind != GPU_BUF_DEVICE && !sub && !full)
            continue;
        const size_t es = nvf_ref_size(ty->dt);
        size_t counts[16];
        int nc = 0;
        const size_t small[] = {1, 2, 3, 7, 61, 1021};
        for (int i = 0; i < 6; i++)
            counts[nc++] = small[i];
        counts[nc++] = (size_t)csize * 1000 + 1;
        counts[nc++] = 65537;
        if (sub || full) {
            counts[nc++] = (1u << 20) / es * 3 + 3;
            if (full)
                counts[nc++] = (32u << 20) / es + 5;
        }
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_op_t op = (nvf_op_t)o;
            if (!device_pair(ty->dt, op))
                continue;
            if (ty->type == MPI_BYTE &&
                !(op == NVF_OP_BAND || op == NVF_OP_BOR || op == NVF_OP_BXOR))
                continue;
            if ((ty->type == MPI_AINT || ty->type == MPI_OFFSET || ty->type == MPI_COUNT) &&
                (op == NVF_OP_LAND || op == NVF_OP_LOR || op == NVF_OP_LXOR))
                continue;
            for (int k = 0; k < nc; k++) {
                if (counts[k] > 70000 && op != NVF_OP_SUM && op != NVF_OP_MAXLOC &&
                    op != NVF_OP_BXOR && !full)
                    continue;
                const size_t offs[] = {0, 1, 3};
                for (int f = 0; f < (full ? 3 : 2); f++) {
                    if ((counts[k] + offs[f]) * es > cap)
                        continue;
                    for (int ip = 0; ip < 2; ip++)
                        run_case(comm, cname, ty, op, counts[k], offs[f], ip == 1, sbase, rbase);
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kind") && i + 1 < argc) {
            int k = gpu_kind_parse(argv[++i]);
            if (k < 0) {
                if (rank == 0)
                    fprintf(stderr, "unknown kind %s\n", argv[i]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            kind = (gpu_buf_kind_t)k;
        } else if (!strcmp(argv[i], "--level") && i + 1 < argc) {
            full = !strcmp(argv[++i], "full");
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            mode = !strcmp(argv[++i], "random") ? NVF_REF_RANDOM : NVF_REF_EXACT;
        } else if (!strcmp(argv[i], "--expect-device")) {
            expect_device = true;
        }
    }
    int device, ndev = gpu_select_device(&device), minimum;
    MPI_Allreduce(&ndev, &minimum, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (minimum == 0) {
        if (rank == 0)
            printf("SKIPPED: no CUDA device visible to every rank\n");
        MPI_Finalize();
        return 77;
    }
    nvf_pvars_open();
    const size_t cap = (full ? (48u << 20) : (8u << 20)) + 64;
    char *sbase = gpu_alloc(kind, cap), *rbase = gpu_alloc(kind, cap);
    double t0 = MPI_Wtime();
    run_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", sbase, rbase, cap);
    MPI_Comm dup, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_comm(dup, "dup(WORLD)", sbase, rbase, cap);
    MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &reversed);
    run_comm(reversed, "reversed(WORLD)", sbase, rbase, cap);
    nvf_pvars_t pv;
    nvf_pvars_read(&pv);
    long tf = nvf_sum_world(failures), tc = nvf_sum_world(cases),
         tcnt = nvf_sum_world(counter_failures), tdis = nvf_sum_world(disagreements);
    if (rank == 0) {
        printf("gpu_allreduce: kind %s, %d ranks, %ld case-runs, %ld wrong results, %ld counter "
               "mismatches, %ld cross-rank disagreements, %.1f s\n",
               gpu_kind_name(kind), nranks, tc, tf, tcnt, tdis, MPI_Wtime() - t0);
        if (pv.present)
            printf("gpu_allreduce: rank 0 counters: handled %llu, delegated %llu, cuda %llu\n",
                   pv.v[NVF_PV_CALLS_HANDLED], pv.v[NVF_PV_CALLS_DELEGATED],
                   pv.v[NVF_PV_CUDA_CALLS]);
        else
            printf("gpu_allreduce: nvfabric's MPI_T counters are absent (component not loaded)\n");
    }
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&dup);
    gpu_free(kind, sbase);
    gpu_free(kind, rbase);
    nvf_pvars_close();
    MPI_Finalize();
    return (tf || tcnt || tdis) ? 1 : 0;
}
