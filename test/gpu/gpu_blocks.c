/*
 * gpu_blocks.c: the device stage's building blocks (coll_nvfabric/cuda/nvf_cuda.h) on a real GPU
 * and driver, before and independently of their use by the scheduler. An MPI program (2 or more
 * ranks; they may share one GPU) that checks, section by section:
 *   driver      the loader finds the driver; classification of cudaMalloc, cudaMallocAsync,
 *               managed, cudaMallocHost, cudaHostRegister, malloc and stack buffers; its cost;
 *   kernels     every (type, op) pair, 1..16 sources, aligned and unaligned, in place, against the
 *               tests' reference bit for bit (random inputs: same rounding as the host); the copy
 *               kernels; reduction and copy bandwidth against cudaMemcpy (rank 0);
 *   flags       write/wait kernels and stream memory operations on device memory and on
 *               registered host memory, a wait satisfied later by the host, a wait that times out;
 *   ipc         export a buffer on rank 0, import it on rank 1, reduce from the mapping, cache
 * hits, a freed and reallocated buffer, pool memory refused; pingpong    cross-process flag round
 * trips (device memory of a peer via IPC, and host shared memory registered on both sides), kernels
 * and memory operations, with latencies; uuid        device UUIDs agree with the runtime's and
 * between ranks on the same GPU. Prints one line per section and exits 0 only if all passed (77: no
 * GPU).
 *
 *   mpirun -np 2 test/gpu/gpu_blocks [--quick] [--section NAME]
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "common/nvf_ref.h"
#include "gpu_common.h"
#include "unit/nvf_test.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static int rank, nranks, device;
static bool quick;

static double now(void)
{
    return MPI_Wtime();
}

static nvf_cuda_dev_t *dev_of(const void *p)
{
    nvf_cuda_ptr_info_t info;
    nvf_cuda_dev_t *d = NULL;
    nvf_cuda_ptr_query(p, &info);
    if (nvf_cuda_dev_for_buffer(&info, &d) != NVF_OK)
        return NULL;
    return d;
}

/* Ends a section: every rank's failures, summed, printed by rank 0. */
static int section_failures_before;
static void section_begin(void)
{
    section_failures_before = nvf_test_failures;
    MPI_Barrier(MPI_COMM_WORLD);
}
static int section_end(const char *name, double t0)
{
    int mine = nvf_test_failures - section_failures_before, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("[%-8s] %s (%d failed checks, %.1f s)\n", name, all ? "FAIL" : "ok", all,
               now() - t0);
    fflush(stdout);
    return all;
}

/* ---- driver and classification ---------------------------------------------------------- */
static double classify_ns(const void *s, const void *r, int n)
{
    volatile int acc = 0;
    double t0 = now();
    for (int i = 0; i < n; i++)
        acc += nvf_memkind_classify(s, r);
    return (now() - t0) / n * 1e9;
}

static void section_driver(void)
{
    CHECK(nvf_cuda_available(), "driver: %s", nvf_cuda_driver_status());
    if (rank == 0)
        printf("  %s\n", nvf_cuda_driver_status());
    void *dm, *am, *mm, *hm, *reg, *plain;
    int stack = 0;
    GPU_CHECK(cudaMalloc(&dm, 1 << 20));
    GPU_CHECK(cudaMallocAsync(&am, 1 << 20, 0));
    GPU_CHECK(cudaStreamSynchronize(0));
    GPU_CHECK(cudaMallocManaged(&mm, 1 << 20, cudaMemAttachGlobal));
    GPU_CHECK(cudaMallocHost(&hm, 1 << 20));
    reg = aligned_alloc(4096, 1 << 20);
    GPU_CHECK(cudaHostRegister(reg, 1 << 20, cudaHostRegisterDefault));
    plain = malloc(1 << 20);

    nvf_cuda_ptr_info_t info;
    CHECK(nvf_cuda_ptr_query((char *)dm + 100, &info) == NVF_MEM_DEVICE && info.device == device &&
              info.base == (uintptr_t)dm && info.offset == 100 && info.buffer_id != 0,
          "cudaMalloc: kind %s device %d base %#lx offset %zu", nvf_memkind_name(info.kind),
          info.device, (unsigned long)info.base, info.offset);
    CHECK(nvf_cuda_ptr_query(am, &info) == NVF_MEM_DEVICE && info.device == device,
          "cudaMallocAsync: %s", nvf_memkind_name(info.kind));
    CHECK(nvf_cuda_ptr_query(mm, &info) == NVF_MEM_MANAGED, "managed: %s",
          nvf_memkind_name(info.kind));
    CHECK(nvf_cuda_ptr_query(hm, &info) == NVF_MEM_HOST_PINNED, "cudaMallocHost: %s",
          nvf_memkind_name(info.kind));
    CHECK(nvf_cuda_ptr_query((char *)reg + 8, &info) == NVF_MEM_HOST_PINNED, "cudaHostRegister: %s",
          nvf_memkind_name(info.kind));
    CHECK(nvf_cuda_ptr_query(plain, &info) == NVF_MEM_HOST, "malloc: %s",
          nvf_memkind_name(info.kind));
    CHECK(nvf_cuda_ptr_query(&stack, &info) == NVF_MEM_HOST, "stack");
    CHECK(nvf_memkind_classify(dm, plain) == NVF_MEM_MIXED, "device + host is mixed");
    CHECK(nvf_memkind_classify(hm, plain) == NVF_MEM_HOST, "pinned + host is host");
    CHECK(nvf_memkind_classify(am, dm) == NVF_MEM_DEVICE, "pool + cudaMalloc on one device: %s",
          nvf_memkind_name(nvf_memkind_classify(am, dm)));
    nvf_cuda_ptr_detail_t det;
    CHECK(nvf_cuda_ptr_detail(dm, &det) == NVF_OK && det.legacy_ipc && !det.from_pool,
          "cudaMalloc is legacy-IPC capable");
    CHECK(nvf_cuda_ptr_detail(am, &det) == NVF_OK && det.from_pool && !det.legacy_ipc,
          "cudaMallocAsync memory is pool memory (legacy %d pool %d)", det.legacy_ipc,
          det.from_pool);
    CHECK(nvf_cuda_ptr_detail(mm, &det) == NVF_OK && !det.legacy_ipc, "managed: no legacy IPC");

    const int n = quick ? 20000 : 200000;
    double h = classify_ns(plain, (char *)plain + 64, n), dv = classify_ns(dm, (char *)dm + 64, n),
           ip = classify_ns(NULL, dm, n);
    if (rank == 0)
        printf("  classification with the driver: host pair %.0f ns, device pair %.0f ns, in place "
               "device %.0f ns per call\n",
               h, dv, ip);
    GPU_CHECK(cudaFree(dm));
    GPU_CHECK(cudaFreeAsync(am, 0));
    GPU_CHECK(cudaStreamSynchronize(0));
    GPU_CHECK(cudaFree(mm));
    GPU_CHECK(cudaFreeHost(hm));
    GPU_CHECK(cudaHostUnregister(reg));
    free(reg);
    free(plain);
}

/* ---- kernels ------------------------------------------------------------------------------ */
#define KMAX_BYTES ((size_t)(65537 + 64) * 16)
static char *kbuf[NVF_CUDA_MAX_SOURCES + 1];
static unsigned long long kseed = 3;

static void kernel_case(nvf_cuda_dev_t *d, nvf_dtype_t dt, nvf_op_t op, size_t count, int nsrc,
                        size_t skew, bool in_place, char **bufs, size_t cap)
{
    const size_t es = nvf_dtype_size(dt), bytes = count * es;
    if (bytes + skew > cap)
        return;
    void *in[NVF_CUDA_MAX_SOURCES];
    const void *src[NVF_CUDA_MAX_SOURCES];
    unsigned long long seed0 = kseed;
    for (int k = 0; k < nsrc; k++) {
        in[k] = malloc(bytes);
        nvf_ref_fill(dt, op, NVF_REF_RANDOM, in[k], count, kseed++);
        GPU_CHECK(cudaMemcpy(bufs[k] + skew, in[k], bytes, cudaMemcpyHostToDevice));
        src[k] = bufs[k] + skew;
    }
    void *ref = malloc(bytes), *got = malloc(bytes);
    nvf_ref_reduce(dt, op, ref, in, nsrc, count);
    char *out = in_place ? bufs[0] + skew : bufs[nsrc] + skew;
    if (!in_place)
        GPU_CHECK(cudaMemset(out, 0xA5, bytes));
    nvf_status_t st = nvf_cuda_reduce_async(d, dt, op, out, src, nsrc, count);
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(d);
    CHECK(st == NVF_OK, "%s %s: %s", nvf_dtype_name(dt), nvf_op_name(op), nvf_cuda_last_error());
    GPU_CHECK(cudaMemcpy(got, out, bytes, cudaMemcpyDeviceToHost));
    size_t bad = nvf_ref_first_diff(dt, got, ref, count, true);
    if (bad < count) {
        char g[96], w[96];
        nvf_ref_format(dt, got, bad, g, sizeof(g));
        nvf_ref_format(dt, ref, bad, w, sizeof(w));
        CHECK(0, "%s %s count %zu nsrc %d skew %zu %s seed %llu: element %zu is %s, expected %s",
              nvf_dtype_name(dt), nvf_op_name(op), count, nsrc, skew, in_place ? "in place" : "",
              seed0, bad, g, w);
    }
    for (int k = 0; k < nsrc; k++)
        free(in[k]);
    free(ref);
    free(got);
}

static double kernel_gbs(nvf_cuda_dev_t *d, int nsrc, size_t bytes, char **bufs)
{
    const void *src[NVF_CUDA_MAX_SOURCES];
    for (int k = 0; k < nsrc; k++)
        src[k] = bufs[k];
    const size_t n = bytes / sizeof(float);
    nvf_cuda_reduce_async(d, NVF_DTYPE_FLOAT, NVF_OP_SUM, bufs[nsrc], src, nsrc, n);
    nvf_cuda_stream_sync(d);
    const int iters = quick ? 3 : 10;
    double t0 = now();
    for (int i = 0; i < iters; i++)
        nvf_cuda_reduce_async(d, NVF_DTYPE_FLOAT, NVF_OP_SUM, bufs[nsrc], src, nsrc, n);
    CHECK(nvf_cuda_stream_sync(d) == NVF_OK, "bandwidth run");
    double t = (now() - t0) / iters;
    return (double)bytes * (nsrc + 1) / t / 1e9; /* bytes read + written */
}

static void section_kernels(void)
{
    if (rank != 0)
        return;
    for (int k = 0; k <= NVF_CUDA_MAX_SOURCES; k++)
        GPU_CHECK(cudaMalloc((void **)&kbuf[k], KMAX_BYTES));
    nvf_cuda_dev_t *d = dev_of(kbuf[0]);
    CHECK(d != NULL, "device state: %s", nvf_cuda_last_error());
    if (d == NULL)
        return;
    printf("  device %d: %d SMs, stream memory operations %s\n", nvf_cuda_dev_ordinal(d),
           nvf_cuda_dev_sm_count(d), nvf_cuda_dev_has_memops(d) ? "yes" : "no");
    const size_t counts[] = {1, 17, 1000, 65537};
    const int nsrcs[] = {1, 2, 5, 16};
    int pairs = 0;
    for (int t = 0; t < NVF_DTYPE_COUNT; t++) {
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_dtype_t dt = (nvf_dtype_t)t;
            nvf_op_t op = (nvf_op_t)o;
            if (!nvf_op_supported_on_device(dt, op))
                continue;
            pairs++;
            const size_t es = nvf_dtype_size(dt);
            for (size_t c = 0; c < 4; c++)
                for (int s = 0; s < 4; s++) {
                    if (quick && (c + s) % 2)
                        continue;
                    kernel_case(d, dt, op, counts[c], nsrcs[s],
                                (c + s) % 2 ? (es < 16 ? es : 8) : 0, s == 2, kbuf, KMAX_BYTES);
                }
        }
    }
    CHECK(pairs == 105, "%d pairs", pairs);

    /* copies */
    char *h = malloc(1 << 20), *back = malloc(1 << 20);
    for (int i = 0; i < 1 << 20; i++)
        h[i] = (char)(i * 31 + 7);
    GPU_CHECK(cudaMemcpy(kbuf[0], h, 1 << 20, cudaMemcpyHostToDevice));
    const size_t offs[][3] = {{0, 0, 1 << 20}, {8, 8, 4096}, {4, 0, 1000}, {1, 3, 999}};
    for (int c = 0; c < 4; c++) {
        GPU_CHECK(cudaMemset(kbuf[1], 0, (1 << 20) + 64));
        CHECK(nvf_cuda_copy_kernel_async(d, kbuf[1] + offs[c][0], kbuf[0] + offs[c][1],
                                         offs[c][2]) == NVF_OK &&
                  nvf_cuda_stream_sync(d) == NVF_OK,
              "copy kernel: %s", nvf_cuda_last_error());
        GPU_CHECK(cudaMemcpy(back, kbuf[1] + offs[c][0], offs[c][2], cudaMemcpyDeviceToHost));
        CHECK(memcmp(back, h + offs[c][1], offs[c][2]) == 0, "copy kernel case %d", c);
    }
    void *pinned;
    CHECK(nvf_cuda_host_alloc(d, 1 << 20, &pinned) == NVF_OK, "pinned staging");
    CHECK(nvf_cuda_copy_d2h_async(d, pinned, kbuf[0], 1 << 20) == NVF_OK &&
              nvf_cuda_copy_h2d_async(d, kbuf[2], pinned, 1 << 20) == NVF_OK &&
              nvf_cuda_copy_d2d_async(d, kbuf[3], kbuf[2], 1 << 20) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_OK,
          "async copies: %s", nvf_cuda_last_error());
    GPU_CHECK(cudaMemcpy(back, kbuf[3], 1 << 20, cudaMemcpyDeviceToHost));
    CHECK(memcmp(back, h, 1 << 20) == 0, "d2h, h2d, d2d chain");
    nvf_cuda_host_free(d, pinned);
    free(h);
    free(back);
    for (int k = 0; k <= NVF_CUDA_MAX_SOURCES; k++)
        GPU_CHECK(cudaFree(kbuf[k]));

    /* a big case per element size, and the bandwidths */
    const size_t big = quick ? (64u << 20) : (256u << 20);
    char *bb[9];
    for (int k = 0; k < 9; k++)
        GPU_CHECK(cudaMalloc((void **)&bb[k], big + 64));
    kernel_case(d, NVF_DTYPE_FLOAT, NVF_OP_SUM, (big / 4) - 3, 8, 4, false, bb, big + 64);
    kernel_case(d, NVF_DTYPE_DOUBLE, NVF_OP_MAX, (big / 8) / 3 + 1, 3, 0, true, bb, big + 64);
    kernel_case(d, NVF_DTYPE_DOUBLE_INT, NVF_OP_MINLOC, (big / 16) / 4, 2, 0, false, bb, big + 64);
    double r2 = kernel_gbs(d, 2, big, bb), r8 = kernel_gbs(d, 8, big, bb);
    cudaEvent_t e0, e1;
    GPU_CHECK(cudaEventCreate(&e0));
    GPU_CHECK(cudaEventCreate(&e1));
    GPU_CHECK(cudaMemcpy(bb[1], bb[0], big, cudaMemcpyDeviceToDevice));
    GPU_CHECK(cudaEventRecord(e0, 0));
    GPU_CHECK(cudaMemcpyAsync(bb[1], bb[0], big, cudaMemcpyDeviceToDevice, 0));
    GPU_CHECK(cudaEventRecord(e1, 0));
    GPU_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    GPU_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    double t0 = now();
    nvf_cuda_copy_kernel_async(d, bb[1], bb[0], big);
    nvf_cuda_stream_sync(d);
    double tk = now() - t0;
    printf("  reduce kernel: %.0f GB/s (2 sources), %.0f GB/s (8 sources), bytes read+written; "
           "cudaMemcpy D2D %.0f GB/s, copy kernel %.0f GB/s (read+write)\n",
           r2, r8, 2.0 * big / (ms * 1e-3) / 1e9, 2.0 * big / tk / 1e9);
    for (int k = 0; k < 9; k++)
        GPU_CHECK(cudaFree(bb[k]));
}

/* ---- flags in one process ----------------------------------------------------------------- */
struct later {
    volatile uint64_t *flag;
    uint64_t value;
    int ms;
};
static void *set_later(void *arg)
{
    struct later *l = arg;
    usleep((useconds_t)l->ms * 1000);
    __atomic_store_n(l->flag, l->value, __ATOMIC_RELEASE);
    return NULL;
}

static void section_flags(void)
{
    if (rank != 0)
        return;
    uint64_t *dflag;
    GPU_CHECK(cudaMalloc((void **)&dflag, 4096));
    GPU_CHECK(cudaMemset(dflag, 0, 4096));
    nvf_cuda_dev_t *d = dev_of(dflag);
    CHECK(d != NULL, "device");
    if (d == NULL)
        return;
    uint64_t v = 0;
    CHECK(nvf_cuda_flag_write_async(d, dflag, 7) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK,
          "write: %s", nvf_cuda_last_error());
    GPU_CHECK(cudaMemcpy(&v, dflag, 8, cudaMemcpyDeviceToHost));
    CHECK(v == 7, "device flag %llu", (unsigned long long)v);
    CHECK(nvf_cuda_flag_wait_async(d, dflag, 7, 0) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK,
          "wait satisfied");
    double t0 = now();
    CHECK(nvf_cuda_flag_wait_async(d, dflag, 8, 50u * 1000 * 1000) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_ERR_PEER,
          "a wait that times out is reported");
    double waited = now() - t0;
    CHECK(waited > 0.04 && waited < 5, "timed out after %.3f s", waited);
    CHECK(nvf_cuda_stream_sync(d) == NVF_OK, "next sync clean");

    /* registered host memory: the host sets the flag while the kernel waits */
    uint64_t *hseg = aligned_alloc(4096, 4096);
    memset(hseg, 0, 4096);
    void *hdev;
    CHECK(nvf_cuda_host_register(d, hseg, 4096, &hdev) == NVF_OK, "register: %s",
          nvf_cuda_last_error());
    uint64_t *hflag = (uint64_t *)hdev;
    struct later l = {hseg, 3, 30};
    pthread_t th;
    pthread_create(&th, NULL, set_later, &l);
    t0 = now();
    CHECK(nvf_cuda_flag_wait_async(d, hflag, 3, 0) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK,
          "wait on host memory: %s", nvf_cuda_last_error());
    double tw = now() - t0;
    pthread_join(th, NULL);
    CHECK(tw > 0.02, "the wait returned before the host wrote the flag (%.3f s)", tw);
    CHECK(nvf_cuda_flag_write_async(d, hflag + 1, 11) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_OK &&
              __atomic_load_n(&hseg[1], __ATOMIC_ACQUIRE) == 11,
          "write to host memory");
    if (nvf_cuda_dev_has_memops(d)) {
        CHECK(nvf_cuda_flag_write_memop_async(d, hflag + 2, 5) == NVF_OK &&
                  nvf_cuda_flag_wait_memop_async(d, hflag + 2, 5) == NVF_OK &&
                  nvf_cuda_flag_write_memop_async(d, dflag + 2, 6) == NVF_OK &&
                  nvf_cuda_flag_wait_memop_async(d, dflag + 2, 6) == NVF_OK &&
                  nvf_cuda_stream_sync(d) == NVF_OK && hseg[2] == 5,
              "stream memory operations: %s", nvf_cuda_last_error());
        struct later l2 = {hseg + 3, 1, 30};
        pthread_create(&th, NULL, set_later, &l2);
        CHECK(nvf_cuda_flag_wait_memop_async(d, hflag + 3, 1) == NVF_OK &&
                  nvf_cuda_stream_sync(d) == NVF_OK,
              "memop wait on host memory set later");
        pthread_join(th, NULL);
    }
    CHECK(nvf_cuda_host_unregister(d, hseg) == NVF_OK, "unregister");
    free(hseg);
    GPU_CHECK(cudaFree(dflag));
}

/* ---- IPC between rank 0 (exporter) and rank 1 (importer) ---------------------------------- */
static void section_ipc(void)
{
    if (nranks < 2)
        return;
    /* ranks 0 and 1 only (barriers and messages on their own communicator) */
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair == MPI_COMM_NULL)
        return;
    const size_t n = 1u << 18, bytes = n * sizeof(float), off = 4096;
    float *h = malloc(bytes);
    if (rank == 0) {
        float *a;
        GPU_CHECK(cudaMalloc((void **)&a, bytes + off));
        for (size_t i = 0; i < n; i++)
            h[i] = (float)(i % 1000);
        GPU_CHECK(cudaMemcpy((char *)a + off, h, bytes, cudaMemcpyHostToDevice));
        /* a pageable copy may return before its DMA lands: the peer reads it next */
        GPU_CHECK(cudaDeviceSynchronize());
        nvf_cuda_dev_t *d = dev_of(a);
        nvf_cuda_ipc_desc_t desc;
        const char *why = NULL;
        CHECK(d && nvf_cuda_ipc_export(d, (char *)a + off, bytes, &desc, &why) == NVF_OK,
              "export: %s", why ? why : nvf_cuda_last_error());
        MPI_Send(&desc, sizeof(desc), MPI_BYTE, 1, 0, pair);
        MPI_Barrier(pair); /* rank 1 reduced from it */
        GPU_CHECK(cudaFree(a));
        GPU_CHECK(cudaMalloc((void **)&a, bytes + off));
        for (size_t i = 0; i < n; i++)
            h[i] = (float)(i % 7);
        GPU_CHECK(cudaMemcpy((char *)a + off, h, bytes, cudaMemcpyHostToDevice));
        /* a pageable copy may return before its DMA lands: the peer reads it next */
        GPU_CHECK(cudaDeviceSynchronize());
        CHECK(nvf_cuda_ipc_export(d, (char *)a + off, bytes, &desc, &why) == NVF_OK, "export 2");
        MPI_Send(&desc, sizeof(desc), MPI_BYTE, 1, 1, pair);
        MPI_Barrier(pair);
        void *pool;
        GPU_CHECK(cudaMallocAsync(&pool, 4096, 0));
        GPU_CHECK(cudaStreamSynchronize(0));
        CHECK(nvf_cuda_ipc_export(d, pool, 4096, &desc, &why) == NVF_ERR_UNSUPPORTED && why,
              "pool memory is refused");
        printf("  pool memory export: %s\n", why ? why : "?");
        GPU_CHECK(cudaFreeAsync(pool, 0));
        GPU_CHECK(cudaFree(a));
    } else {
        float *b;
        GPU_CHECK(cudaMalloc((void **)&b, bytes));
        for (size_t i = 0; i < n; i++)
            h[i] = 2.0f;
        GPU_CHECK(cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice));
        nvf_cuda_dev_t *d = dev_of(b);
        nvf_cuda_ipc_desc_t desc;
        MPI_Recv(&desc, sizeof(desc), MPI_BYTE, 0, 0, pair, MPI_STATUS_IGNORE);
        void *peer = NULL, *again = NULL;
        CHECK(d && nvf_cuda_ipc_import(d, &desc, &peer) == NVF_OK, "import: %s",
              nvf_cuda_last_error());
        CHECK(nvf_cuda_ipc_import(d, &desc, &again) == NVF_OK && again == peer, "cached");
        const void *src[] = {b, peer};
        CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_FLOAT, NVF_OP_SUM, b, src, 2, n) == NVF_OK &&
                  nvf_cuda_stream_sync(d) == NVF_OK,
              "reduce from the peer's mapping: %s", nvf_cuda_last_error());
        GPU_CHECK(cudaMemcpy(h, b, bytes, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += h[i] != 2.0f + (float)(i % 1000);
        CHECK(bad == 0, "%zu wrong elements from the peer's buffer", bad);
        MPI_Barrier(pair);
        nvf_cuda_ipc_desc_t d2;
        MPI_Recv(&d2, sizeof(d2), MPI_BYTE, 0, 1, pair, MPI_STATUS_IGNORE);
        CHECK(nvf_cuda_ipc_import(d, &d2, &peer) == NVF_OK, "import 2: %s", nvf_cuda_last_error());
        GPU_CHECK(cudaMemcpy(h, peer, bytes, cudaMemcpyDeviceToHost));
        bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += h[i] != (float)(i % 7);
        CHECK(bad == 0, "the reallocated buffer's contents (%zu wrong)", bad);
        nvf_cuda_ipc_stats_t st;
        nvf_cuda_ipc_stats(d, &st);
        printf("  peer reallocated %s (old base %#llx, new %#llx); cache: imports %llu hits %llu "
               "opens %llu stale %llu\n",
               d2.base == desc.base ? "at the same address" : "elsewhere",
               (unsigned long long)desc.base, (unsigned long long)d2.base, st.imports,
               st.import_hits, st.opens, st.stale_evictions);
        if (d2.base == desc.base)
            CHECK(st.stale_evictions == 1, "stale mapping evicted");
        CHECK(nvf_cuda_ipc_flush(d) == NVF_OK, "flush");
        MPI_Barrier(pair);
        GPU_CHECK(cudaFree(b));
    }
    free(h);
    MPI_Comm_free(&pair);
}

/* ---- cross-process flag round trips ------------------------------------------------------- */
typedef nvf_status_t (*write_fn)(nvf_cuda_dev_t *, uint64_t *, uint64_t);
typedef nvf_status_t (*wait_fn)(nvf_cuda_dev_t *, const uint64_t *, uint64_t);

static nvf_status_t wait_kernel(nvf_cuda_dev_t *d, const uint64_t *f, uint64_t v)
{
    return nvf_cuda_flag_wait_async(d, f, v, 2ull * 1000 * 1000 * 1000);
}

/* Ranks 0 and 1 bounce a counter n times through two flags, entirely on their streams (every
 * rank calls this: the others only join the collectives). */
static void pingpong(bool active, nvf_cuda_dev_t *d, uint64_t *to_peer, uint64_t *from_peer,
                     uint64_t base, write_fn w, wait_fn wt, const char *what)
{
    const int n = quick ? 50 : 200;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now(), t = 0;
    if (active) {
        nvf_status_t st = NVF_OK;
        for (int i = 1; i <= n && st == NVF_OK; i++) {
            if (rank == 0) {
                st = w(d, to_peer, base + i);
                if (st == NVF_OK)
                    st = wt(d, from_peer, base + i);
            } else {
                st = wt(d, from_peer, base + i);
                if (st == NVF_OK)
                    st = w(d, to_peer, base + i);
            }
            /* in batches: a wait that timed out must not be followed by a whole queue of them */
            if (st == NVF_OK && i % 25 == 0)
                st = nvf_cuda_stream_sync(d);
        }
        if (st == NVF_OK)
            st = nvf_cuda_stream_sync(d);
        t = now() - t0;
        CHECK(st == NVF_OK, "%s: %s", what, nvf_cuda_last_error());
    }
    double tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("  %-40s %8.2f us per round trip\n", what, tmax / n * 1e6);
}

static void section_pingpong(void)
{
    if (nranks < 2)
        return;
    const bool pair = rank < 2;
    /* device memory of rank 1, mapped by rank 0 */
    uint64_t *mem = NULL, *f = NULL;
    nvf_cuda_dev_t *d = NULL;
    GPU_CHECK(cudaMalloc((void **)&mem, 4096));
    GPU_CHECK(cudaMemset(mem, 0, 4096));
    GPU_CHECK(cudaDeviceSynchronize()); /* zeroed before the peer looks (cudaMemset is async) */
    d = dev_of(mem);
    CHECK(d != NULL, "device");
    nvf_cuda_ipc_desc_t desc;
    memset(&desc, 0, sizeof(desc));
    if (rank == 1) {
        const char *why;
        CHECK(nvf_cuda_ipc_export(d, mem, 4096, &desc, &why) == NVF_OK, "export flags");
        f = mem;
    }
    MPI_Bcast(&desc, sizeof(desc), MPI_BYTE, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        void *p = NULL;
        CHECK(nvf_cuda_ipc_import(d, &desc, &p) == NVF_OK, "import flags: %s",
              nvf_cuda_last_error());
        f = p;
    }
    int ok = !pair || (d != NULL && f != NULL), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int memops = !pair || (d != NULL && nvf_cuda_dev_has_memops(d)), all_memops = 0;
    MPI_Allreduce(&memops, &all_memops, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    uint64_t *to = f ? f + (rank == 0 ? 0 : 8) : NULL, *from = f ? f + (rank == 0 ? 8 : 0) : NULL;
    if (all_ok) {
        pingpong(pair, d, to, from, 0, nvf_cuda_flag_write_async, wait_kernel,
                 "kernels, peer device memory (IPC)");
        if (all_memops)
            pingpong(pair, d, to, from, 1000, nvf_cuda_flag_write_memop_async,
                     nvf_cuda_flag_wait_memop_async, "stream memops, peer device memory (IPC)");
    }

    /* host shared memory (standing in for the engine's segment), registered on both ranks */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nrank;
    MPI_Comm_rank(node, &nrank);
    MPI_Win win;
    uint64_t *shm = NULL;
    MPI_Win_allocate_shared(nrank == 0 ? 1 << 16 : 0, 1, MPI_INFO_NULL, node, &shm, &win);
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(win, 0, &sz, &du, &shm);
    if (nrank == 0)
        memset(shm, 0, 1 << 16);
    MPI_Barrier(MPI_COMM_WORLD);
    void *shm_dev = NULL;
    int shm_ok = 1, all_shm = 0;
    if (pair && d != NULL) {
        shm_ok = nvf_cuda_host_register(d, shm, 1 << 16, &shm_dev) == NVF_OK;
        CHECK(shm_ok, "register the shared segment (%p): %s", (void *)shm, nvf_cuda_last_error());
    }
    MPI_Allreduce(&shm_ok, &all_shm, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_shm && all_ok) {
        uint64_t *hs = shm_dev;
        pingpong(pair, d, hs ? hs + (rank == 0 ? 16 : 24) : NULL,
                 hs ? hs + (rank == 0 ? 24 : 16) : NULL, 0, nvf_cuda_flag_write_async, wait_kernel,
                 "kernels, host shared memory");
        if (all_memops)
            pingpong(pair, d, hs ? hs + (rank == 0 ? 32 : 40) : NULL,
                     hs ? hs + (rank == 0 ? 40 : 32) : NULL, 0, nvf_cuda_flag_write_memop_async,
                     nvf_cuda_flag_wait_memop_async, "stream memops, host shared memory");
    }
    if (pair && shm_dev != NULL)
        nvf_cuda_host_unregister(d, shm);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    if (rank == 0 && d)
        nvf_cuda_ipc_flush(d);
    MPI_Barrier(MPI_COMM_WORLD);
    GPU_CHECK(cudaFree(mem));
}

/* ---- device identity ---------------------------------------------------------------------- */
static void section_uuid(void)
{
    void *p;
    GPU_CHECK(cudaMalloc(&p, 256));
    nvf_cuda_dev_t *d = dev_of(p);
    CHECK(d != NULL, "device");
    nvf_cuda_uuid_t mine = {{0}}, u2;
    if (d)
        nvf_cuda_dev_uuid(d, &mine);
    CHECK(nvf_cuda_device_uuid(device, &u2) == NVF_OK && nvf_cuda_uuid_equal(&mine, &u2),
          "uuid by ordinal");
    struct cudaDeviceProp prop;
    GPU_CHECK(cudaGetDeviceProperties(&prop, device));
    CHECK(memcmp(prop.uuid.bytes, mine.bytes, 16) == 0, "the runtime's UUID");
    int ord = -1;
    CHECK(nvf_cuda_device_by_uuid(&mine, &ord) == NVF_OK && ord == device, "by uuid: %d", ord);
    char text[64];
    nvf_cuda_uuid_format(&mine, text, sizeof(text));
    nvf_cuda_uuid_t *all = calloc((size_t)nranks, sizeof(*all));
    int *devs = calloc((size_t)nranks, sizeof(int));
    MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);
    MPI_Allgather(&device, 1, MPI_INT, devs, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < nranks; r++) {
        bool can = false, same = false;
        CHECK(d == NULL || nvf_cuda_peer_reachable(d, &all[r], &can, &same) == NVF_OK, "reachable");
        /* one node here: same ordinal with the same CUDA_VISIBLE_DEVICES is the same GPU */
        if (devs[r] == device)
            CHECK(same && can, "rank %d shares my GPU", r);
    }
    if (rank == 0)
        printf("  rank 0: device %d is %s (%s)\n", device, text, prop.name);
    free(all);
    free(devs);
    GPU_CHECK(cudaFree(p));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--section") && i + 1 < argc)
            only = argv[++i];
    }
    int ndev = gpu_select_device(&device), minimum = 0;
    MPI_Allreduce(&ndev, &minimum, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (minimum == 0) {
        if (rank == 0)
            printf("SKIPPED: no CUDA device visible to every rank\n");
        MPI_Finalize();
        return 77;
    }
    const struct {
        const char *name;
        void (*fn)(void);
    } sections[] = {
        {"driver", section_driver}, {"kernels", section_kernels},   {"flags", section_flags},
        {"ipc", section_ipc},       {"pingpong", section_pingpong}, {"uuid", section_uuid},
    };
    int failed = 0;
    for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
        if (only && strcmp(only, sections[s].name))
            continue;
        double t0 = now();
        section_begin();
        sections[s].fn();
        failed += section_end(sections[s].name, t0) != 0;
    }
    nvf_cuda_fini();
    if (rank == 0)
        printf("gpu_blocks: %d ranks, %d section(s) failed\n", nranks, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
