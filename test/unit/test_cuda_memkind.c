/*
 * test_cuda_memkind.c: buffer classification (nvf_memkind_classify and its detailed variants)
 * against the mock driver: ordinary host, pinned (cuMemHostAlloc and cuMemHostRegister), device,
 * managed, pool and VMM memory, every send/receive combination, buffers on two devices; driver
 * errors and "CUDA not initialised" meaning host, quietly and without cuInit; and the cost of a
 * call, measured without a driver (where it must be a branch) and with the mock.
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "mock_cuda/mock_cuda.h"
#include "nvf_test.h"

#include <time.h>

static int errors_logged;
static void sink(int level, const char *msg)
{
    if (level == 0) {
        errors_logged++;
        fprintf(stderr, "error logged: %s\n", msg);
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per nvf_memkind_classify call (median of 5 runs of n calls). */
static double classify_cost(const void *s, const void *r, long n)
{
    double best[5];
    for (int k = 0; k < 5; k++) {
        volatile int sink_kind = 0;
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            sink_kind += nvf_memkind_classify(s, r);
        best[k] = (now_ns() - t0) / (double)n;
        (void)sink_kind;
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (best[j] < best[i]) {
                double t = best[i];
                best[i] = best[j];
                best[j] = t;
            }
    return best[2];
}

/* An empty call through a function pointer, for scale. */
static int empty_fn(const void *a, const void *b)
{
    return a == b;
}
static double call_cost(long n)
{
    int (*volatile fp)(const void *, const void *) = empty_fn;
    volatile int acc = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        acc += fp((const void *)(uintptr_t)i, NULL);
    return (now_ns() - t0) / (double)n;
}

static const char *kname(nvf_memkind_t k)
{
    return nvf_memkind_name(k);
}

#define EXPECT_KIND(s, r, want)                                                                    \
    do {                                                                                           \
        nvf_memkind_t got_ = nvf_memkind_classify((s), (r));                                       \
        CHECK(got_ == (want), "classify(%s, %s) = %s, expected %s", #s, #r, kname(got_),           \
              kname(want));                                                                        \
    } while (0)

static int scenario_kinds(void)
{
    nvf_mock_t m;
    if (!nvf_cuda_available() || nvf_mock_open(&m) != 0 || nvf_mock_app_init(&m) != 0) {
        CHECK(0, "mock driver: %s", nvf_cuda_driver_status());
        return nvf_test_finish("test_cuda_memkind/kinds");
    }
    CUdeviceptr dp = 0, dp2 = 0, mp = 0, pp = 0;
    void *hp = NULL;
    CHECK(m.cuMemAlloc(&dp, 1 << 20) == CUDA_SUCCESS, "cuMemAlloc");
    CHECK(m.cuMemAlloc(&dp2, 4096) == CUDA_SUCCESS, "cuMemAlloc");
    CHECK(m.cuMemAllocManaged(&mp, 1 << 16, 1) == CUDA_SUCCESS, "cuMemAllocManaged");
    CHECK(m.cuMemHostAlloc(&hp, 1 << 16, 0) == CUDA_SUCCESS, "cuMemHostAlloc");
    CHECK(m.cuMemAllocAsync(&pp, 1 << 16, NULL) == CUDA_SUCCESS, "cuMemAllocAsync");
    void *vp = m.alloc_vmm(1 << 16, 0);
    CHECK(vp != NULL, "vmm");
    char *reg = aligned_alloc(4096, 1 << 16);
    CHECK(m.cuMemHostRegister(reg, 1 << 16, 0) == CUDA_SUCCESS, "cuMemHostRegister");
    char *plain = malloc(1 << 16);
    int local = 0;
    if (nvf_test_failures)
        return nvf_test_finish("test_cuda_memkind/kinds");

    void *dev = (void *)(uintptr_t)dp, *dev2 = (void *)(uintptr_t)dp2;
    void *man = (void *)(uintptr_t)mp, *pool = (void *)(uintptr_t)pp;

    /* one buffer at a time, and what the query says about it */
    nvf_cuda_ptr_info_t info;
    CHECK(nvf_cuda_ptr_query((char *)dev + 1000, &info) == NVF_MEM_DEVICE, "device");
    CHECK(info.device == 0 && info.context != NULL && info.base == (uintptr_t)dp &&
              info.offset == 1000 && info.size >= (1 << 20) && info.buffer_id != 0,
          "device info: dev %d ctx %p base %#lx offset %zu size %zu id %llu", info.device,
          info.context, (unsigned long)info.base, info.offset, info.size, info.buffer_id);
    unsigned long long id_dev = info.buffer_id;
    CHECK(nvf_cuda_ptr_query(dev2, &info) == NVF_MEM_DEVICE && info.buffer_id != id_dev,
          "distinct buffer ids");
    CHECK(nvf_cuda_ptr_query(man, &info) == NVF_MEM_MANAGED, "managed");
    CHECK(nvf_cuda_ptr_query(hp, &info) == NVF_MEM_HOST_PINNED, "cuMemHostAlloc is pinned host");
    CHECK(nvf_cuda_ptr_query(reg + 123, &info) == NVF_MEM_HOST_PINNED && info.offset == 123,
          "registered is pinned host");
    CHECK(nvf_cuda_ptr_query(pool, &info) == NVF_MEM_DEVICE && info.context == NULL,
          "pool memory is device memory (without a context)");
    CHECK(nvf_cuda_ptr_query(vp, &info) == NVF_MEM_DEVICE, "VMM memory is device memory");
    CHECK(nvf_cuda_ptr_query(plain, &info) == NVF_MEM_HOST && info.device == -1 &&
              info.buffer_id == 0,
          "malloc is host");
    CHECK(nvf_cuda_ptr_query(&local, NULL) == NVF_MEM_HOST, "stack is host");
    CHECK(nvf_cuda_ptr_query(NULL, &info) == NVF_MEM_HOST, "NULL is host");

    /* pairs */
    EXPECT_KIND(NULL, dev, NVF_MEM_DEVICE);
    EXPECT_KIND(dev, dev, NVF_MEM_DEVICE);
    EXPECT_KIND(dev, dev2, NVF_MEM_DEVICE);
    EXPECT_KIND(pool, dev, NVF_MEM_DEVICE); /* pool memory has no context: same device */
    EXPECT_KIND(plain, dev, NVF_MEM_MIXED);
    EXPECT_KIND(dev, plain, NVF_MEM_MIXED);
    EXPECT_KIND(hp, dev, NVF_MEM_MIXED);
    EXPECT_KIND(man, dev, NVF_MEM_MIXED);
    EXPECT_KIND(man, man, NVF_MEM_MANAGED);
    EXPECT_KIND(NULL, man, NVF_MEM_MANAGED);
    EXPECT_KIND(hp, reg, NVF_MEM_HOST_PINNED);
    EXPECT_KIND(NULL, hp, NVF_MEM_HOST_PINNED);
    EXPECT_KIND(hp, plain, NVF_MEM_HOST);
    EXPECT_KIND(plain, reg, NVF_MEM_HOST);
    EXPECT_KIND(plain, plain + 8, NVF_MEM_HOST);
    EXPECT_KIND(NULL, &local, NVF_MEM_HOST);

    nvf_cuda_ptr_info_t si, ri;
    CHECK(nvf_memkind_classify_ex(dev, hp, &si, &ri) == NVF_MEM_MIXED &&
              si.kind == NVF_MEM_DEVICE && ri.kind == NVF_MEM_HOST_PINNED,
          "the rich variant gives each buffer's kind");
    CHECK(nvf_memkind_classify_ex(NULL, dev, &si, &ri) == NVF_MEM_DEVICE &&
              si.kind == NVF_MEM_DEVICE && si.buffer_id == ri.buffer_id,
          "in place: both infos describe rbuf");

    /* details for the IPC code */
    nvf_cuda_ptr_detail_t det;
    CHECK(nvf_cuda_ptr_detail((char *)dev + 64, &det) == NVF_OK && det.legacy_ipc && !det.vmm &&
              !det.from_pool && det.map_base == (uintptr_t)dp && det.info.offset == 64,
          "cuMemAlloc memory: legacy IPC");
    CHECK(nvf_cuda_ptr_detail(pool, &det) == NVF_OK && det.from_pool && !det.legacy_ipc && !det.vmm,
          "pool memory");
    CHECK(nvf_cuda_ptr_detail(vp, &det) == NVF_OK && det.vmm && !det.legacy_ipc &&
              det.handle_types == 0,
          "VMM memory without fd export");
    void *vfd = m.alloc_vmm(1 << 16, 1);
    CHECK(nvf_cuda_ptr_detail(vfd, &det) == NVF_OK && det.vmm &&
              (det.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "VMM memory with fd export");
    CHECK(nvf_cuda_ptr_detail(man, &det) == NVF_OK && !det.legacy_ipc, "managed: no IPC");
    CHECK(nvf_cuda_ptr_detail(plain, &det) == NVF_ERR_INVALID, "host: no detail");
    CHECK(nvf_cuda_ptr_detail(hp, &det) == NVF_ERR_INVALID, "pinned: no detail");

    /* a freed buffer is host again (no stale answers) */
    CHECK(m.cuMemFree(dp2) == CUDA_SUCCESS, "free");
    EXPECT_KIND(NULL, dev2, NVF_MEM_HOST);
    CHECK(m.count("cuInit") == 1, "only the application called cuInit");
    CHECK(errors_logged == 0, "classification printed errors");
    m.cuMemHostUnregister(reg);
    free(reg);
    free(plain);
    return nvf_test_finish("test_cuda_memkind/kinds");
}

static int scenario_two_devices(void)
{
    nvf_mock_t m;
    if (!nvf_cuda_available() || nvf_mock_open(&m) != 0 || nvf_mock_app_init(&m) != 0) {
        CHECK(0, "mock driver");
        return nvf_test_finish("test_cuda_memkind/two-devices");
    }
    CUdeviceptr a = 0, b = 0;
    CHECK(m.cuMemAlloc(&a, 4096) == CUDA_SUCCESS, "alloc on device 0");
    CUcontext c1;
    CHECK(m.cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS && m.cuCtxSetCurrent(c1) == 0,
          "device 1 current");
    CHECK(m.cuMemAlloc(&b, 4096) == CUDA_SUCCESS, "alloc on device 1");
    nvf_cuda_ptr_info_t info;
    CHECK(nvf_cuda_ptr_query((void *)(uintptr_t)b, &info) == NVF_MEM_DEVICE && info.device == 1,
          "device ordinal 1 (got %d)", info.device);
    EXPECT_KIND((void *)(uintptr_t)a, (void *)(uintptr_t)b, NVF_MEM_MIXED);
    EXPECT_KIND((void *)(uintptr_t)b, (void *)(uintptr_t)b, NVF_MEM_DEVICE);
    /* the device states of the two buffers are the two devices */
    nvf_cuda_dev_t *d0, *d1;
    nvf_cuda_ptr_info_t ia;
    nvf_cuda_ptr_query((void *)(uintptr_t)a, &ia);
    CHECK(nvf_cuda_dev_for_buffer(&ia, &d0) == NVF_OK && nvf_cuda_dev_ordinal(d0) == 0, "dev 0");
    CHECK(nvf_cuda_dev_for_buffer(&info, &d1) == NVF_OK && nvf_cuda_dev_ordinal(d1) == 1, "dev 1");
    nvf_cuda_dev_t *d1b;
    CHECK(nvf_cuda_dev_for_ordinal(1, &d1b) == NVF_OK && d1b == d1,
          "the primary context of device 1 is the buffer's context: one state");
    nvf_cuda_uuid_t u0, u1;
    nvf_cuda_dev_uuid(d0, &u0);
    nvf_cuda_dev_uuid(d1, &u1);
    CHECK(!nvf_cuda_uuid_equal(&u0, &u1), "distinct UUIDs");
    int ord = -1;
    CHECK(nvf_cuda_device_by_uuid(&u1, &ord) == NVF_OK && ord == 1, "by uuid -> %d", ord);
    bool can, same;
    CHECK(nvf_cuda_peer_reachable(d0, &u1, &can, &same) == NVF_OK && can && !same, "peer 0->1");
    CHECK(nvf_cuda_peer_reachable(d0, &u0, &can, &same) == NVF_OK && can && same, "same device");
    nvf_cuda_uuid_t unknown = {{0}};
    CHECK(nvf_cuda_peer_reachable(d0, &unknown, &can, &same) == NVF_OK && !can && !same,
          "a GPU this process does not see");
    char text[64];
    nvf_cuda_uuid_format(&u0, text, sizeof(text));
    CHECK(strcmp(text, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf") == 0, "uuid text %s", text);
    nvf_cuda_fini();
    return nvf_test_finish("test_cuda_memkind/two-devices");
}

static int scenario_errors(void)
{
    nvf_mock_t m;
    if (!nvf_cuda_available() || nvf_mock_open(&m) != 0 || nvf_mock_app_init(&m) != 0) {
        CHECK(0, "mock driver");
        return nvf_test_finish("test_cuda_memkind/errors");
    }
    CUdeviceptr dp = 0;
    CHECK(m.cuMemAlloc(&dp, 4096) == CUDA_SUCCESS, "alloc");
    void *dev = (void *)(uintptr_t)dp;
    m.fail("cuPointerGetAttributes", CUDA_ERROR_ILLEGAL_ADDRESS, 2);
    EXPECT_KIND(dev, (char *)dev + 8, NVF_MEM_HOST);
    m.fail("cuPointerGetAttributes", CUDA_ERROR_INVALID_CONTEXT, 1);
    EXPECT_KIND(NULL, dev, NVF_MEM_HOST);
    EXPECT_KIND(NULL, dev, NVF_MEM_DEVICE); /* the fault is gone */
    /* an attribute refused (CUDA_ERROR_INVALID_VALUE): the kind is asked alone, device memory
     * must never pass for host memory */
    m.fail("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE, 1);
    EXPECT_KIND(dev, dev, NVF_MEM_DEVICE);
    nvf_cuda_ptr_info_t info;
    m.fail("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE, 1);
    CHECK(nvf_cuda_ptr_query((char *)dev + 8, &info) == NVF_MEM_DEVICE && info.device == 0 &&
              info.context == NULL && info.base == 0,
          "the kind alone: device %d, no context or range", info.device);
    nvf_cuda_dev_t *d = NULL;
    CHECK(nvf_cuda_dev_for_buffer(&info, &d) == NVF_OK && d != NULL, "found by its ordinal");
    m.fail("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE, 2); /* refused twice: host */
    EXPECT_KIND(NULL, dev, NVF_MEM_HOST);
    CHECK(errors_logged == 0, "expected errors must stay quiet");
    return nvf_test_finish("test_cuda_memkind/errors");
}

static int scenario_notinit(void)
{
    nvf_mock_t m;
    if (!nvf_cuda_available() || nvf_mock_open(&m) != 0) {
        CHECK(0, "mock driver");
        return nvf_test_finish("test_cuda_memkind/notinit");
    }
    char buf[64];
    for (int i = 0; i < 1000; i++)
        EXPECT_KIND(buf, buf + 32, NVF_MEM_HOST);
    CHECK(m.count("cuPointerGetAttributes") == 2000, "one query per buffer (%lu)",
          m.count("cuPointerGetAttributes"));
    CHECK(m.count("cuInit") == 0, "nvfabric called cuInit");
    CHECK(errors_logged == 0, "not-initialised must stay quiet");
    double ns = classify_cost(buf, buf + 32, 200000);
    printf("classification cost with the mock driver, CUDA not initialised: %.1f ns/call\n", ns);
    return nvf_test_finish("test_cuda_memkind/notinit");
}

static int scenario_cost(void)
{
    if (nvf_cuda_available()) {
        printf("a CUDA driver is installed here: the driver-less cost cannot be measured\n");
        return 77;
    }
    char s[256], r[256];
    const long n = 20000000;
    double base = call_cost(n);
    double ns = classify_cost(s, r, n);
    double ns_inplace = classify_cost(NULL, r, n);
    printf("classification cost without a driver: %.2f ns/call (in place %.2f), an empty "
           "indirect call: %.2f ns\n",
           ns, ns_inplace, base);
    /* generous: a load, a branch and a call; a dlopen attempt per call would cost microseconds */
    CHECK(ns < 20.0, "%.2f ns per call without a driver", ns);
    return nvf_test_finish("test_cuda_memkind/cost");
}

static int scenario_cost_mock(void)
{
    nvf_mock_t m;
    if (!nvf_cuda_available() || nvf_mock_open(&m) != 0 || nvf_mock_app_init(&m) != 0) {
        CHECK(0, "mock driver");
        return nvf_test_finish("test_cuda_memkind/cost-mock");
    }
    char s[256], r[256];
    double ns = classify_cost(s, r, 200000);
    printf("classification cost with the mock driver (a locked table scan, not the real "
           "driver's cost): %.1f ns/call for two buffers\n",
           ns);
    return nvf_test_finish("test_cuda_memkind/cost-mock");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--scenario") == 0) {
        nvf_log_set_sink(sink, 0);
        const char *s = argv[2];
        if (!strcmp(s, "kinds"))
            return scenario_kinds();
        if (!strcmp(s, "two-devices"))
            return scenario_two_devices();
        if (!strcmp(s, "errors"))
            return scenario_errors();
        if (!strcmp(s, "notinit"))
            return scenario_notinit();
        if (!strcmp(s, "cost"))
            return scenario_cost();
        if (!strcmp(s, "cost-mock"))
            return scenario_cost_mock();
        return 2;
    }
    const nvf_mock_scenario_t sc[] = {
        {"kinds", "mock", NULL},  {"two-devices", "mock", "NVF_MOCK_DEVICES=2"},
        {"errors", "mock", NULL}, {"notinit", "mock", NULL},
        {"cost", "none", NULL},   {"cost-mock", "mock", NULL},
    };
    int failed = nvf_mock_run_scenarios(argv[0], sc, (int)(sizeof(sc) / sizeof(sc[0])));
    printf("test_cuda_memkind: %d scenario(s) failed\n", failed);
    return failed ? 1 : 0;
}
