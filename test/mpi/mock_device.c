/*
 * mock_device.c: the staged device path end to end, without a GPU. Run under mpirun with the
 * mock CUDA driver (test/unit/mock_cuda/libcuda.so.1) first on LD_LIBRARY_PATH: the program
 * initialises "CUDA" as an application would and allocates "device" buffers with cuMemAlloc;
 * nvfabric classifies them as device memory through the same driver calls as on a GPU, and moves
 * them through the node's segment with CUDA copies. The mock's device memory is host memory, so
 * the results are checked directly, element by element, against each rank's own sequential
 * reduction; the MPI_T counters must count the calls as device calls, and the mock must have
 * seen the copies. Also: send and receive buffers of different kinds, ranks passing different
 * kinds to the same call (rank 0 host memory, the others device memory), and calls nvfabric
 * delegates (a user-defined op), which must be staged through host memory for Open MPI's
 * module (Debian's Open MPI is not CUDA-aware).
 * With --cuda-off (run with --mca coll_nvfabric_cuda false) the device stage is off: the same
 * calls must come out right through host copies and nvfabric's host path, none counted as a
 * device call, every one handled (the mixed-kinds calls too: all ranks take the host branch).
 * With --auto-min BYTES (run with --mca coll_nvfabric_host_auto_min BYTES) calls below that size
 * go to Open MPI's module on every rank, whatever memory it passes: the mixed-kinds calls must
 * neither hang nor go wrong, and only the larger calls are counted as handled.
 * With --ipc (run with --mca coll_nvfabric_cuda_ipc true) device calls go through the CUDA IPC
 * path: peers' buffers mapped (the mock's cuIpcOpenMemHandle), kernels reducing and copying (the
 * mock runs them on the CPU); calls where some rank cannot take part (send and receive buffers of
 * different kinds; rank 1 passing pool memory, which CUDA IPC cannot export) must go the staged
 * way on every rank. No mixed-kinds calls there: that path needs every rank's memory alike.
 * With --expect-registered the node's segment must have been page-locked (cuMemHostRegister) for
 * the staged copies; with --register-fails the driver refuses that, and the calls must still be
 * right. Every registration must be released by MPI_Finalize. The staged copies must be pipelined
 * (queued and polled through events, no wait for the stream per block); run with
 * NVF_MOCK_DEFER_COPIES=1 (the mock then lands copies late) this also checks that no block is
 * published, reused or returned before its copy landed. With --expect-pinned (one rank per
 * node: the direct plan) device data must have been staged in a page-locked buffer of nvfabric's
 * own (cuMemHostAlloc, besides the device state's status word), kept across calls of a size;
 * every such buffer must be freed by MPI_Finalize; from 16 MiB it must stage in pieces (an event
 * per piece's copy), also with mixed kinds (the host rank cuts its call alike).
 */
#include "nvf_mpi_test.h"
#include "unit/mock_cuda/mock_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nvf_mock_t mock;

/* 'd': cuMemAlloc, 'p': pool memory (cuMemAllocAsync) */
static void *dev_alloc(char kind, size_t bytes)
{
    CUdeviceptr p = 0;
    CUresult r = kind == 'p' ? mock.cuMemAllocAsync(&p, bytes ? bytes : 1, NULL)
                             : mock.cuMemAlloc(&p, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "mock cuMemAlloc failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (void *)(uintptr_t)p;
}

static void user_sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* One call: kinds of the send / receive buffers ('d' device, 'h' host), in place or not. */
static long run(const char *kinds, MPI_Datatype type, nvf_dtype_t dt, MPI_Op op, nvf_op_t rop,
                size_t n, unsigned long long seed)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t es = nvf_ref_size(dt), bytes = n * es;
    /* "mx": ranks pass different kinds to the same call (rank 0 host buffers, the others device) */
    if (kinds[0] == 'm')
        kinds = rank == 0 ? "hh" : "dd";
    /* "qq": rank 1 passes pool memory, the others cuMemAlloc memory */
    if (kinds[0] == 'q')
        kinds = rank == 1 ? "pp" : "dd";
    const bool in_place = kinds[0] == 'i';
    void **in = malloc(sizeof(void *) * (size_t)size), *ref = malloc(bytes + 1);
    for (int r = 0; r < size; r++) {
        in[r] = malloc(bytes + 1);
        nvf_ref_fill(dt, rop, NVF_REF_EXACT, in[r], n, seed * 31 + (unsigned)r);
    }
    nvf_ref_reduce(dt, rop, ref, in, size, n);
    void *sbuf =
        in_place ? NULL : (kinds[0] != 'h' ? dev_alloc(kinds[0], bytes) : malloc(bytes + 1));
    void *rbuf = kinds[1] != 'h' ? dev_alloc(kinds[1], bytes) : malloc(bytes + 1);
    if (in_place)
        memcpy(rbuf, in[rank], bytes);
    else {
        memcpy(sbuf, in[rank], bytes);
        memset(rbuf, 0xA5, bytes);
    }
    MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)n, type, op, MPI_COMM_WORLD);
    size_t bad = nvf_ref_first_diff(dt, rbuf, ref, n, false);
    if (bad < n)
        fprintf(stderr, "FAIL rank %d: %s n=%zu: element %zu wrong\n", rank, kinds, n, bad);
    if (!in_place)
        kinds[0] != 'h' ? (void)mock.cuMemFree((CUdeviceptr)(uintptr_t)sbuf) : free(sbuf);
    kinds[1] != 'h' ? (void)mock.cuMemFree((CUdeviceptr)(uintptr_t)rbuf) : free(rbuf);
    for (int r = 0; r < size; r++)
        free(in[r]);
    free(in);
    free(ref);
    return bad < n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bool cuda_off = false, ipc = false, expect_registered = false, register_fails = false,
         expect_pinned = false;
    size_t auto_min = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--cuda-off") == 0)
            cuda_off = true;
        else if (strcmp(argv[a], "--expect-registered") == 0)
            expect_registered = true;
        else if (strcmp(argv[a], "--register-fails") == 0)
            register_fails = true;
        else if (strcmp(argv[a], "--expect-pinned") == 0)
            expect_pinned = true;
        else if (strcmp(argv[a], "--ipc") == 0)
            ipc = true;
        else if (strcmp(argv[a], "--auto-min") == 0 && a + 1 < argc)
            auto_min = (size_t)strtoull(argv[++a], NULL, 10);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (nvf_mock_open(&mock) != 0 || nvf_mock_app_init(&mock) != 0) {
        if (rank == 0)
            printf("SKIPPED: the mock CUDA driver is not the libcuda.so.1 this process loads\n");
        MPI_Finalize();
        return 77;
    }
    if (register_fails) /* the driver refuses to page-lock the segment: copies stay pageable */
        mock.fail("cuMemHostRegister", CUDA_ERROR_OUT_OF_MEMORY, 1 << 30);
    nvf_pvars_open();
    nvf_pvars_t before, after;
    nvf_pvars_read(&before);
    const char *kinds_staged[] = {"dd", "id", "hd", "dh", "mx"};
    const char *kinds_ipc[] = {"dd", "id", "hd", "dh", "qq"};
    const char **kinds = ipc ? kinds_ipc : kinds_staged;
    const unsigned long launches0 = mock.count("cuLaunchKernel");
    const size_t counts[] = {1, 7, 1000, 70001, 300007};
    long bad = 0, calls = 0;
    unsigned long long seed = 5, want_handled = 0, want_cuda = 0;
    const nvf_dtype_t types[] = {NVF_DTYPE_FLOAT, NVF_DTYPE_INT32, NVF_DTYPE_DOUBLE_INT};
    for (size_t k = 0; k < 5; k++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            bad +=
                run(kinds[k], MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, counts[c], seed++);
            bad += run(kinds[k], MPI_INT, NVF_DTYPE_INT32, MPI_MAX, NVF_OP_MAX, counts[c], seed++);
            bad += run(kinds[k], MPI_DOUBLE_INT, NVF_DTYPE_DOUBLE_INT, MPI_MINLOC, NVF_OP_MINLOC,
                       counts[c], seed++);
            calls += 3;
            for (int t = 0; t < 3; t++) {
                if (counts[c] * nvf_ref_size(types[t]) < auto_min)
                    continue;
                want_handled++;
                /* rank 0's "mx" calls are host calls */
                want_cuda += !cuda_off && !(rank == 0 && strcmp(kinds[k], "mx") == 0);
            }
        }
    nvf_pvars_read(&after);
    unsigned long long cuda = after.v[NVF_PV_CUDA_CALLS] - before.v[NVF_PV_CUDA_CALLS];
    unsigned long long handled = after.v[NVF_PV_CALLS_HANDLED] - before.v[NVF_PV_CALLS_HANDLED];
    /* the IPC path reduces and copies with kernels over mapped peer buffers; the staged path
     * launches none */
    const unsigned long launches = mock.count("cuLaunchKernel") - launches0;
    if (ipc ? launches == 0 || mock.count("cuIpcOpenMemHandle") == 0 : launches != 0) {
        fprintf(stderr, "FAIL rank %d: %lu kernel launches, %lu IPC opens with%s the IPC path\n",
                rank, launches, mock.count("cuIpcOpenMemHandle"), ipc ? "" : "out");
        bad++;
    }
    if (cuda != want_cuda || handled != want_handled) {
        fprintf(stderr,
                "FAIL rank %d: %ld calls, counters say handled %llu (expected %llu), cuda %llu "
                "(expected %llu)\n",
                rank, calls, handled, want_handled, cuda, want_cuda);
        bad++;
    }
    /* the segment page-locked for the staged copies (one node), never with the stage off */
    const unsigned long registered = mock.count("cuMemHostRegister");
    if ((expect_registered && registered == 0) || (cuda_off && registered != 0)) {
        fprintf(stderr, "FAIL rank %d: cuMemHostRegister called %lu times%s\n", rank, registered,
                cuda_off ? " with the device stage off" : ", the segment never registered");
        bad++;
    }
    /* the staged path asks the driver about the buffers once per call, not once per block: a
     * call of four times as many blocks makes as many pointer queries; and its copies are
     * pipelined: queued with events that are polled, the host never blocking on the stream */
    if (!ipc && !cuda_off && auto_min == 0) {
        unsigned long q[2], waits[2], polls[2];
        const size_t sizes[2] = {300007, 4 * 300007};
        for (int i = 0; i < 2; i++) {
            const unsigned long q0 = mock.count("cuPointerGetAttributes");
            const unsigned long w0 =
                mock.count("cuStreamSynchronize") + mock.count("cuEventSynchronize");
            const unsigned long p0 = mock.count("cuEventQuery");
            bad += run("dd", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, sizes[i], seed++);
            q[i] = mock.count("cuPointerGetAttributes") - q0;
            waits[i] = mock.count("cuStreamSynchronize") + mock.count("cuEventSynchronize") - w0;
            polls[i] = mock.count("cuEventQuery") - p0;
        }
        if (waits[0] != 0 || waits[1] != 0 || polls[0] == 0) {
            fprintf(stderr,
                    "FAIL rank %d: staged copies not pipelined: %lu / %lu stream waits and %lu / "
                    "%lu event polls for %zu / %zu elements\n",
                    rank, waits[0], waits[1], polls[0], polls[1], sizes[0], sizes[1]);
            bad++;
        }
        /* and only classifying the call asks the driver (once per buffer): the engine takes
         * what it found; a small call (the inline path) too */
        const unsigned long q0 = mock.count("cuPointerGetAttributes");
        bad += run("dd", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, 7, seed++);
        const unsigned long q_small = mock.count("cuPointerGetAttributes") - q0;
        if (q[0] != 2 || q_small != 2) {
            fprintf(stderr,
                    "FAIL rank %d: %lu pointer queries for a staged call of %zu elements, %lu for "
                    "one of 7 (want 2: one per buffer)\n",
                    rank, q[0], sizes[0], q_small);
            bad++;
        }
        if (q[1] != q[0]) {
            fprintf(stderr,
                    "FAIL rank %d: pointer queries grow with the blocks of a staged call: %lu for "
                    "%zu elements, %lu for %zu\n",
                    rank, q[0], sizes[0], q[1], sizes[1]);
            bad++;
        }
    }
    /* the direct plan's page-locked buffer: made once for a size, kept for later calls */
    if (expect_pinned) {
        const unsigned long a0 = mock.count("cuMemHostAlloc");
        for (int i = 0; i < 3; i++)
            bad += run("dd", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, 70001, seed++);
        const unsigned long a1 = mock.count("cuMemHostAlloc");
        if (a0 < 2 || a1 != a0) {
            fprintf(stderr,
                    "FAIL rank %d: %lu page-locked allocations (want the status word and a "
                    "staging buffer), %lu more for 3 calls of a size already seen\n",
                    rank, a0, a1 - a0);
            bad++;
        }
        /* from 16 MiB the direct plan runs in pieces whose copies overlap the rail's work (an
         * event after each copy in and out); with mixed kinds the host rank cuts its call alike */
        const size_t big = 4200001; /* floats: 16.8 MB, two pieces */
        const unsigned long r0 = mock.count("cuEventRecord");
        bad += run("dd", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, big, seed++);
        const unsigned long recorded = mock.count("cuEventRecord") - r0;
        if (recorded < 4) {
            fprintf(stderr,
                    "FAIL rank %d: a call of %zu floats on the direct plan recorded %lu events "
                    "(want one per piece copied in and out, two pieces)\n",
                    rank, big, recorded);
            bad++;
        }
        bad += run("id", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_SUM, NVF_OP_SUM, big, seed++);
        bad += run("mx", MPI_FLOAT, NVF_DTYPE_FLOAT, MPI_MAX, NVF_OP_MAX, big + 3, seed++);
    }
    /* delegated (user-defined op) on device buffers: staged through host memory */
    MPI_Op usum;
    MPI_Op_create(user_sum_int, 1, &usum);
    unsigned long copies = mock.count("cuMemcpyAsync") + mock.count("cuMemcpyDtoHAsync_v2") +
                           mock.count("cuMemcpyHtoDAsync_v2");
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        bad += run("dd", MPI_INT, NVF_DTYPE_INT32, usum, NVF_OP_SUM, counts[c], seed++);
    unsigned long copies2 = mock.count("cuMemcpyAsync") + mock.count("cuMemcpyDtoHAsync_v2") +
                            mock.count("cuMemcpyHtoDAsync_v2");
    if (copies2 == copies) {
        fprintf(stderr, "FAIL rank %d: delegated device calls were not staged\n", rank);
        bad++;
    }
    MPI_Op_free(&usum);
    long total = nvf_sum_world(bad);
    if (rank == 0)
        printf(
            "mock_device%s: %ld device calls checked, %ld failures, %llu counted as device calls\n",
            cuda_off ? " (device stage off)" : "", calls, total, cuda);
    nvf_pvars_close();
    MPI_Finalize();
    /* the component's close released the device state it made, the segment's registration
     * included (none to release where the driver refused it) */
    const unsigned long unregistered = mock.count("cuMemHostUnregister");
    if (unregistered != (register_fails ? 0 : mock.count("cuMemHostRegister"))) {
        fprintf(stderr, "FAIL rank %d: %lu host registrations, %lu released%s\n", rank,
                mock.count("cuMemHostRegister"), unregistered,
                register_fails ? " (every registration was refused)" : "");
        return 1;
    }
    if (mock.count("cuMemFreeHost") != mock.count("cuMemHostAlloc")) {
        fprintf(stderr, "FAIL rank %d: %lu page-locked allocations, %lu freed\n", rank,
                mock.count("cuMemHostAlloc"), mock.count("cuMemFreeHost"));
        return 1;
    }
    if (mock.count("cuStreamDestroy") < 1 || mock.count("cuDevicePrimaryCtxRelease") < 1) {
        fprintf(stderr, "FAIL rank %d: nvfabric's stream or context not released at MPI_Finalize\n",
                rank);
        return 1;
    }
    return total ? 1 : 0;
}
