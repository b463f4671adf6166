/*
 * test_cuda_launch.c: the host side of the kernels against the mock driver, which emulates each
 * launch from the kernel's name and parameter block: every (type, op) pair the device supports,
 * 1 to 16 sources, in place and not, aligned (vector path) and unaligned pointers, compared bit
 * for bit with the tests' own reference; the grid and the kernel chosen; argument checks; copies
 * (kernel and copy engine); flags (kernels and stream memory operations, a wait that times out);
 * pinned and registered host memory; events; a GPU the fatbin has no code for; and that every
 * kernel the launcher asks for is in the embedded fatbin.
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "common/nvf_ref.h"
#include "mock_cuda/mock_cuda.h"
#include "nvf_test.h"

extern const unsigned char nvf_cuda_fatbin[];
extern const unsigned long long nvf_cuda_fatbin_size;

static int errors_logged;
static char last_info[512];
static void sink(int level, const char *msg)
{
    if (level == 0)
        errors_logged++;
    if (level == 1)
        snprintf(last_info, sizeof(last_info), "%s", msg);
}

static nvf_cuda_dev_t *init_dev(nvf_mock_t *m, int ordinal)
{
    nvf_cuda_dev_t *d = NULL;
    if (!nvf_cuda_available() || nvf_mock_open(m) != 0 || nvf_mock_app_init(m) != 0 ||
        nvf_cuda_dev_for_ordinal(ordinal, &d) != NVF_OK)
        return NULL;
    return d;
}

static void *dalloc(nvf_mock_t *m, size_t n)
{
    CUdeviceptr p = 0;
    return m->cuMemAlloc(&p, n ? n : 1) == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
}

static unsigned long long seed = 7;

/* One reduction: nsrc inputs of count elements, each at byte offset `skew` into its buffer. */
static void check_reduce(nvf_mock_t *m, nvf_cuda_dev_t *d, nvf_dtype_t dt, nvf_op_t op, int nsrc,
                         size_t count, size_t skew, bool in_place)
{
    const size_t es = nvf_dtype_size(dt), bytes = count * es;
    char *buf[NVF_CUDA_MAX_SOURCES + 1];
    void *host_in[NVF_CUDA_MAX_SOURCES];
    const void *src[NVF_CUDA_MAX_SOURCES];
    for (int k = 0; k <= nsrc; k++)
        buf[k] = dalloc(m, bytes + 64);
    unsigned long long seed0 = seed;
    for (int k = 0; k < nsrc; k++) {
        host_in[k] = malloc(bytes);
        nvf_ref_fill(dt, op, NVF_REF_RANDOM, host_in[k], count, seed++);
        memcpy(buf[k] + skew, host_in[k], bytes);
        src[k] = buf[k] + skew;
    }
    void *ref = malloc(bytes);
    nvf_ref_reduce(dt, op, ref, host_in, nsrc, count);
    char *out = in_place ? buf[0] + skew : buf[nsrc] + skew;
    if (!in_place)
        memset(out, 0xA5, bytes);
    nvf_status_t st = nvf_cuda_reduce_async(d, dt, op, out, src, nsrc, count);
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(d);
    CHECK(st == NVF_OK, "%s %s: %s", nvf_dtype_name(dt), nvf_op_name(op), nvf_cuda_last_error());
    size_t bad = nvf_ref_first_diff(dt, out, ref, count, true);
    if (bad < count) {
        char got[96], want[96];
        nvf_ref_format(dt, out, bad, got, sizeof(got));
        nvf_ref_format(dt, ref, bad, want, sizeof(want));
        CHECK(0, "%s %s count %zu nsrc %d skew %zu %s seed %llu: element %zu is %s, expected %s",
              nvf_dtype_name(dt), nvf_op_name(op), count, nsrc, skew,
              in_place ? "in place" : "out of place", seed0, bad, got, want);
    }
    nvf_mock_launch_t l;
    m->last_launch(&l);
    char name[64];
    snprintf(name, sizeof(name), "nvf_cuda_reduce_");
    const bool aligned = skew % 16 == 0;
    CHECK(strncmp(l.name, name, strlen(name)) == 0 && l.vec == (uint32_t)aligned &&
              l.nsrc == (uint32_t)nsrc && l.count == count && l.block == 512 && l.grid >= 1 &&
              l.grid <= 4u * 4u,
          "launch %s vec %u nsrc %u count %llu grid %u block %u", l.name, l.vec, l.nsrc,
          (unsigned long long)l.count, l.grid, l.block);
    for (int k = 0; k <= nsrc; k++)
        m->cuMemFree((CUdeviceptr)(uintptr_t)buf[k]);
    for (int k = 0; k < nsrc; k++)
        free(host_in[k]);
    free(ref);
}

static int scenario_reduce(void)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m, 0);
    CHECK(d != NULL, "init: %s", nvf_cuda_last_error());
    if (d == NULL)
        return nvf_test_finish("test_cuda_launch/reduce");
    int pairs = 0;
    for (int t = 0; t < NVF_DTYPE_COUNT; t++) {
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_dtype_t dt = (nvf_dtype_t)t;
            nvf_op_t op = (nvf_op_t)o;
            if (!nvf_op_supported_on_device(dt, op)) {
                if (nvf_op_supported(dt, op))
                    CHECK(nvf_cuda_reduce_async(d, dt, op, &pairs, (const void *[]){&pairs}, 1,
                                                1) == NVF_ERR_UNSUPPORTED,
                          "%s %s has no kernel", nvf_dtype_name(dt), nvf_op_name(op));
                continue;
            }
            pairs++;
            const size_t es = nvf_dtype_size(dt);
            check_reduce(&m, d, dt, op, 1, 1, 0, false);
            check_reduce(&m, d, dt, op, 2, 1000, 0, false);
            check_reduce(&m, d, dt, op, 3, 1003, es < 16 ? es : 8, false);
            check_reduce(&m, d, dt, op, 16, 77, 0, true);
            check_reduce(&m, d, dt, op, 5, 4099, 16, true);
        }
    }
    CHECK(pairs == 105, "%d device pairs", pairs);
    /* arguments */
    int x = 0;
    const void *one[] = {&x};
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_INT32, NVF_OP_SUM, &x, one, 0, 1) == NVF_ERR_INVALID,
          "no source");
    const void *many[NVF_CUDA_MAX_SOURCES + 1];
    for (int k = 0; k <= NVF_CUDA_MAX_SOURCES; k++)
        many[k] = &x;
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_INT32, NVF_OP_SUM, &x, many, NVF_CUDA_MAX_SOURCES + 1,
                                1) == NVF_ERR_INVALID,
          "too many sources");
    unsigned long launches = m.count("cuLaunchKernel");
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_INT32, NVF_OP_SUM, &x, one, 1, 0) == NVF_OK &&
              m.count("cuLaunchKernel") == launches,
          "count 0 launches nothing");
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_LONG_DOUBLE, NVF_OP_SUM, &x, one, 1, 1) ==
              NVF_ERR_UNSUPPORTED,
          "long double");
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_FLOAT, NVF_OP_BAND, &x, one, 1, 1) ==
              NVF_ERR_UNSUPPORTED,
          "an invalid pair");
    CHECK(m.count("cuModuleLoadData") == 1, "the module is loaded once (%lu)",
          m.count("cuModuleLoadData"));
    CHECK(m.count("cuModuleGetFunction") == 105, "each kernel looked up once (%lu)",
          m.count("cuModuleGetFunction"));
    /* a big count: the grid stops at a few blocks per SM */
    size_t big = 1u << 22;
    float *b = dalloc(&m, big * sizeof(float));
    const void *bs[] = {b};
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_FLOAT, NVF_OP_SUM, b, bs, 1, big) == NVF_OK, "big");
    nvf_mock_launch_t l;
    m.last_launch(&l);
    CHECK(l.grid == 16, "grid %u for 4 SMs", l.grid);
    nvf_cuda_fini();
    CHECK(m.count("cuModuleUnload") == 1, "module unloaded at fini");
    CHECK(errors_logged == 0, "errors were printed");
    return nvf_test_finish("test_cuda_launch/reduce");
}

static int scenario_misc(void)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m, 0);
    CHECK(d != NULL, "init: %s", nvf_cuda_last_error());
    if (d == NULL)
        return nvf_test_finish("test_cuda_launch/misc");

    /* copies */
    char *a = dalloc(&m, 1 << 16), *b = dalloc(&m, 1 << 16);
    for (int i = 0; i < 1 << 16; i++)
        a[i] = (char)(i * 7);
    const struct {
        size_t doff, soff, n;
        const char *kernel;
    } cases[] = {
        {0, 0, 4096, "nvf_cuda_copy_16"}, {8, 8, 4096, "nvf_cuda_copy_8"},
        {4, 8, 1000, "nvf_cuda_copy_4"},  {1, 0, 999, "nvf_cuda_copy_1"},
        {0, 0, 24, "nvf_cuda_copy_8"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        memset(b, 0, 1 << 16);
        CHECK(nvf_cuda_copy_kernel_async(d, b + cases[c].doff, a + cases[c].soff, cases[c].n) ==
                      NVF_OK &&
                  nvf_cuda_stream_sync(d) == NVF_OK,
              "copy kernel");
        CHECK(memcmp(b + cases[c].doff, a + cases[c].soff, cases[c].n) == 0, "copy %zu bytes",
              cases[c].n);
        nvf_mock_launch_t l;
        m.last_launch(&l);
        CHECK(strcmp(l.name, cases[c].kernel) == 0, "copy of %zu bytes at +%zu/+%zu used %s",
              cases[c].n, cases[c].doff, cases[c].soff, l.name);
    }
    char host[256], back[256];
    for (int i = 0; i < 256; i++)
        host[i] = (char)i;
    CHECK(nvf_cuda_copy_h2d_async(d, a, host, 256) == NVF_OK &&
              nvf_cuda_copy_d2d_async(d, b, a, 256) == NVF_OK &&
              nvf_cuda_copy_d2h_async(d, back, b, 256) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_OK && memcmp(back, host, 256) == 0,
          "h2d, d2d, d2h");
    CHECK(nvf_cuda_copy_async(d, back, a, 0) == NVF_OK, "empty copy");

    /* pinned staging and a registered region holding flags */
    void *pinned;
    CHECK(nvf_cuda_host_alloc(d, 1 << 20, &pinned) == NVF_OK &&
              m.kind_of(pinned) == NVF_MOCK_HOSTALLOC,
          "pinned staging");
    nvf_cuda_host_free(d, pinned);
    CHECK(m.kind_of(pinned) == NVF_MOCK_NONE, "freed");
    uint64_t *seg = aligned_alloc(4096, 1 << 16);
    memset(seg, 0, 1 << 16);
    void *seg_dev;
    CHECK(nvf_cuda_host_register(d, seg, 1 << 16, &seg_dev) == NVF_OK && seg_dev == seg &&
              m.kind_of(seg) == NVF_MOCK_REGISTERED,
          "registered segment");
    uint64_t *flag = (uint64_t *)seg_dev + 8;
    CHECK(nvf_cuda_flag_write_async(d, flag, 5) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK &&
              seg[8] == 5,
          "flag write kernel");
    CHECK(nvf_cuda_flag_wait_async(d, flag, 5, 0) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK,
          "flag wait, satisfied");
    errors_logged = 0;
    CHECK(nvf_cuda_flag_wait_async(d, flag, 6, 1000) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_ERR_PEER,
          "flag wait times out: reported at the sync");
    CHECK(errors_logged == 1 && strstr(nvf_cuda_last_error(), "timed out"), "reported: %s",
          nvf_cuda_last_error());
    CHECK(nvf_cuda_stream_sync(d) == NVF_OK, "the next sync is clean");
    seg[8] = UINT64_MAX; /* wrap-around order: UINT64_MAX is before 2 */
    CHECK(nvf_cuda_flag_wait_async(d, flag, 2, 1000) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_ERR_PEER,
          "wrap-around comparison");
    const unsigned long flushes = m.count("cuStreamWaitValue64(CU_STREAM_WAIT_VALUE_FLUSH)");
    CHECK(nvf_cuda_flag_write_memop_async(d, flag, 9) == NVF_OK &&
              nvf_cuda_flag_wait_memop_async(d, flag, 9) == NVF_OK &&
              nvf_cuda_stream_sync(d) == NVF_OK && seg[8] == 9,
          "stream memory operations");
    /* the mock can flush remote writes unless NVF_MOCK_FLUSH=0 (then the flag would be refused) */
    const char *fl = getenv("NVF_MOCK_FLUSH");
    const unsigned long want_flush = fl != NULL && atoi(fl) == 0 ? 0 : 1;
    CHECK(m.count("cuStreamWaitValue64(CU_STREAM_WAIT_VALUE_FLUSH)") - flushes == want_flush,
          "the wait flushed remote writes %lu times (want %lu)",
          m.count("cuStreamWaitValue64(CU_STREAM_WAIT_VALUE_FLUSH)") - flushes, want_flush);
    CHECK(nvf_cuda_flag_write_async(d, (uint64_t *)((char *)flag + 4), 1) == NVF_ERR_INVALID,
          "misaligned flag");
    CHECK(nvf_cuda_host_unregister(d, seg) == NVF_OK && m.kind_of(seg) == NVF_MOCK_NONE,
          "unregistered");
    /* a region the application registered stays registered */
    CHECK(m.cuMemHostRegister(seg, 1 << 16, 0) == CUDA_SUCCESS, "application registers");
    CHECK(nvf_cuda_host_register(d, seg, 1 << 16, &seg_dev) == NVF_OK, "accepted");
    CHECK(nvf_cuda_host_unregister(d, seg) == NVF_OK && m.kind_of(seg) == NVF_MOCK_REGISTERED,
          "left registered");
    m.cuMemHostUnregister(seg);
    free(seg);

    /* events */
    nvf_cuda_event_t *ev;
    bool done = false;
    CHECK(nvf_cuda_event_create(d, &ev) == NVF_OK && nvf_cuda_event_record(d, ev) == NVF_OK &&
              nvf_cuda_event_query(ev, &done) == NVF_OK && done &&
              nvf_cuda_event_sync(ev) == NVF_OK,
          "events");
    nvf_cuda_event_destroy(ev);
    CHECK(nvf_cuda_stream_query(d, &done) == NVF_OK && done, "stream query");

    /* the kernels in the embedded fatbin */
    int names = 0, found = 0;
    for (const char *n; (n = nvf_cuda_kernel_name(names)) != NULL; names++) {
        const size_t len = strlen(n) + 1; /* with its terminating NUL, as in a symbol table */
        for (unsigned long long i = 0; i + len <= nvf_cuda_fatbin_size; i++) {
            if (nvf_cuda_fatbin[i] == (unsigned char)n[0] &&
                memcmp(nvf_cuda_fatbin + i, n, len) == 0) {
                found++;
                break;
            }
        }
    }
    CHECK(names == 111, "%d kernel names", names);
    if (found == 0)
        printf("the fatbin is compressed: kernel names not checked in the image\n");
    else
        CHECK(found == names, "%d of %d kernel names found in the fatbin", found, names);
    nvf_cuda_fini();
    return nvf_test_finish("test_cuda_launch/misc");
}

/* A GPU the fatbin has no code for: the device stage declines, once, without an error. */
static int scenario_nocode(void)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m, 0);
    CHECK(d != NULL, "init");
    if (d == NULL)
        return nvf_test_finish("test_cuda_launch/nocode");
    m.fail("cuModuleLoadData", CUDA_ERROR_NO_BINARY_FOR_GPU, 1);
    int x = 1;
    const void *one[] = {&x};
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_INT32, NVF_OP_SUM, &x, one, 1, 1) ==
              NVF_ERR_UNSUPPORTED,
          "declined");
    CHECK(strstr(last_info, "no kernels for device 0") != NULL, "said why: %s", last_info);
    CHECK(nvf_cuda_reduce_async(d, NVF_DTYPE_INT32, NVF_OP_SUM, &x, one, 1, 1) ==
              NVF_ERR_UNSUPPORTED,
          "declined again");
    CHECK(m.count("cuModuleLoadData") == 1, "not retried");
    CHECK(errors_logged == 0, "not an error");
    /* another load failure is an error */
    nvf_cuda_dev_t *d1;
    CUcontext c1;
    m.cuDevicePrimaryCtxRetain(&c1, 1);
    CHECK(nvf_cuda_dev_for_ordinal(1, &d1) == NVF_OK, "device 1");
    m.fail("cuModuleLoadData", CUDA_ERROR_OUT_OF_MEMORY, 1);
    CHECK(nvf_cuda_flag_write_async(d1, (uint64_t *)&one, 1) == NVF_ERR_CUDA, "an error");
    CHECK(errors_logged == 1, "reported");
    nvf_cuda_fini();
    return nvf_test_finish("test_cuda_launch/nocode");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--scenario") == 0) {
        nvf_log_set_sink(sink, 1);
        if (!strcmp(argv[2], "reduce"))
            return scenario_reduce();
        if (!strcmp(argv[2], "misc"))
            return scenario_misc();
        if (!strcmp(argv[2], "nocode"))
            return scenario_nocode();
        return 2;
    }
    const nvf_mock_scenario_t sc[] = {
        {"reduce", "mock", NULL},
        {"misc", "mock", NULL},
        {"misc", "mock", "NVF_MOCK_FLUSH=0"}, /* a device that cannot flush remote writes */
        {"nocode", "mock", "NVF_MOCK_DEVICES=2"},
    };
    int failed = nvf_mock_run_scenarios(argv[0], sc, 4);
    printf("test_cuda_launch: %d scenario(s) failed\n", failed);
    return failed ? 1 : 0;
}
