/*
 * test_cuda_driver.c: the CUDA driver loader, against the mock driver and against no driver.
 *
 * Each scenario runs in its own process (the loader loads at most once per process, and the
 * dynamic loader reads LD_LIBRARY_PATH at start-up): no driver at all; the mock resolved through
 * cuGetProcAddress; the mock resolved with dlsym (cuGetProcAddress refused); a driver too old
 * (a required entry point missing); concurrent first use from many threads; a failing driver call
 * reported with its name and the driver's text; a device without stream memory operations.
 * Checks also that loading never calls cuInit and says once, in verbose output, what it found.
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "mock_cuda/mock_cuda.h"
#include "nvf_test.h"

#include <pthread.h>

static char log_lines[64][512];
static int log_levels[64];
static int nlog;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void sink(int level, const char *msg)
{
    pthread_mutex_lock(&log_lock);
    if (nlog < 64) {
        snprintf(log_lines[nlog], sizeof(log_lines[nlog]), "%s", msg);
        log_levels[nlog] = level;
        nlog++;
    }
    pthread_mutex_unlock(&log_lock);
}

/* Messages containing `what` (at most `level`). */
static int logged(const char *what, int max_level)
{
    int n = 0;
    for (int i = 0; i < nlog; i++)
        if (strstr(log_lines[i], what) != NULL && log_levels[i] <= max_level)
            n++;
    return n;
}

static void dump_log(void)
{
    for (int i = 0; i < nlog; i++)
        fprintf(stderr, "  log[%d] %s\n", log_levels[i], log_lines[i]);
}

static int scenario_nodriver(void)
{
    bool avail = nvf_cuda_available();
    if (avail) {
        /* a real driver on this machine: only what holds with any driver is checked */
        nvf_mock_t m;
        CHECK(nvf_mock_open(&m) != 0, "the mock must not be found in the no-driver scenario");
        printf("a real CUDA driver is installed here (%s): no-driver checks skipped\n",
               nvf_cuda_driver_status());
        return nvf_test_finish("test_cuda_driver/nodriver") ? 1 : 77;
    }
    CHECK(nvf_cuda_driver_version() == 0, "version %d without a driver", nvf_cuda_driver_version());
    CHECK(strstr(nvf_cuda_driver_status(), "no CUDA driver") != NULL, "status: %s",
          nvf_cuda_driver_status());
    for (int i = 0; i < 100; i++)
        nvf_cuda_available();
    CHECK(logged("no CUDA driver", 1) == 1, "said %d times", logged("no CUDA driver", 1));
    int local;
    static int global;
    void *heap = malloc(64);
    CHECK(nvf_memkind_classify(&local, heap) == NVF_MEM_HOST, "stack/heap");
    CHECK(nvf_memkind_classify(NULL, &global) == NVF_MEM_HOST, "static in place");
    CHECK(nvf_memkind_classify((void *)(uintptr_t)0x7f0000000000ull, (void *)(uintptr_t)16) ==
              NVF_MEM_HOST,
          "arbitrary addresses are host");
    free(heap);
    nvf_cuda_dev_t *d = (nvf_cuda_dev_t *)1;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_ERR_UNSUPPORTED && d == NULL, "no device");
    nvf_cuda_uuid_t u;
    CHECK(nvf_cuda_device_uuid(0, &u) == NVF_ERR_UNSUPPORTED, "no uuid");
    int ord;
    CHECK(nvf_cuda_device_by_uuid(&u, &ord) == NVF_ERR_UNSUPPORTED && ord == -1,
          "no device by uuid");
    bool can;
    CHECK(nvf_cuda_peer_capable(0, 1, &can) == NVF_ERR_UNSUPPORTED && !can, "no peer");
    nvf_cuda_ptr_detail_t det;
    CHECK(nvf_cuda_ptr_detail(&local, &det) == NVF_ERR_INVALID, "detail of host");
    nvf_cuda_fini(); /* nothing to do, must not crash */
    CHECK(logged("", 0) == 0, "no error was printed");
    return nvf_test_finish("test_cuda_driver/nodriver");
}

static int scenario_mock(bool procaddr)
{
    CHECK(nvf_cuda_available(), "mock driver found: %s", nvf_cuda_driver_status());
    nvf_mock_t m;
    if (nvf_mock_open(&m) != 0) {
        CHECK(0, "the loaded driver is not the mock");
        return nvf_test_finish("test_cuda_driver/mock");
    }
    CHECK(nvf_cuda_driver_version() == 13000, "version %d", nvf_cuda_driver_version());
    const char *how = procaddr ? "cuGetProcAddress" : "dlsym";
    CHECK(strstr(nvf_cuda_driver_status(), how) != NULL, "status '%s' should say %s",
          nvf_cuda_driver_status(), how);
    CHECK(logged("CUDA driver 13.0", 1) == 1, "said once");
    CHECK(m.count("cuInit") == 0, "the loader called cuInit");
    if (procaddr)
        CHECK(m.count("cuGetProcAddress") >= 40, "cuGetProcAddress used %lu times",
              m.count("cuGetProcAddress"));

    /* CUDA not initialised by the application: nothing is device memory, nothing is reported */
    int local;
    CHECK(nvf_memkind_classify(&local, &local) == NVF_MEM_HOST, "host before cuInit");
    CHECK(m.count("cuPointerGetAttributes") == 1, "one query for an in-place-like pair, got %lu",
          m.count("cuPointerGetAttributes"));
    nvf_cuda_dev_t *d;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_ERR_CUDA, "no device before cuInit");
    CHECK(strstr(nvf_cuda_last_error(), "cuDeviceGet failed") != NULL &&
              strstr(nvf_cuda_last_error(), "CUDA_ERROR_NOT_INITIALIZED") != NULL,
          "error text: %s", nvf_cuda_last_error());
    CHECK(m.count("cuInit") == 0, "nvfabric called cuInit");

    CHECK(nvf_mock_app_init(&m) == 0, "application init");
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_OK, "device 0: %s", nvf_cuda_last_error());
    nvf_cuda_dev_t *d2;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d2) == NVF_OK && d2 == d, "same device state");
    CHECK(nvf_cuda_dev_ordinal(d) == 0 && nvf_cuda_dev_sm_count(d) == 4, "ordinal/SMs");
    CHECK(nvf_cuda_dev_has_memops(d), "the mock has stream memops");
    CHECK(m.count("cuStreamCreate") == 1, "one stream per context");
    CHECK(m.count("cuStreamCreate(CU_STREAM_NON_BLOCKING)") == 0,
          "the stream is ordered after the legacy default stream");
    CHECK(m.count("cuInit") == 1, "only the application's cuInit");
    nvf_cuda_fini();
    CHECK(m.count("cuStreamDestroy") == 1, "stream destroyed at fini");
    CHECK(m.count("cuDevicePrimaryCtxRelease") == 1, "primary context released");
    if (nvf_test_failures)
        dump_log();
    return nvf_test_finish(procaddr ? "test_cuda_driver/procaddr" : "test_cuda_driver/dlsym");
}

static int scenario_old(void)
{
    CHECK(!nvf_cuda_available(), "an old driver is not usable");
    CHECK(strstr(nvf_cuda_driver_status(), "cuDeviceGetUuid_v2") != NULL,
          "the status names the missing entry point: %s", nvf_cuda_driver_status());
    CHECK(logged("unusable", 1) == 1, "said once");
    int x;
    CHECK(nvf_memkind_classify(&x, &x) == NVF_MEM_HOST, "host");
    return nvf_test_finish("test_cuda_driver/old");
}

static void *thread_first_use(void *arg)
{
    (void)arg;
    return nvf_cuda_available() ? (void *)1 : NULL;
}

static int scenario_threads(void)
{
    pthread_t t[16];
    for (int i = 0; i < 16; i++)
        pthread_create(&t[i], NULL, thread_first_use, NULL);
    int ok = 0;
    for (int i = 0; i < 16; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok += r != NULL;
    }
    CHECK(ok == 16, "%d of 16 threads saw the driver", ok);
    nvf_mock_t m;
    CHECK(nvf_mock_open(&m) == 0, "mock");
    CHECK(m.count("cuDriverGetVersion") == 1, "loaded %lu times", m.count("cuDriverGetVersion"));
    CHECK(logged("CUDA driver 13.0", 1) == 1, "said %d times", logged("CUDA driver", 1));
    return nvf_test_finish("test_cuda_driver/threads");
}

static int scenario_errors(void)
{
    nvf_mock_t m;
    CHECK(nvf_cuda_available() && nvf_mock_open(&m) == 0 && nvf_mock_app_init(&m) == 0, "init");
    if (nvf_test_failures)
        return nvf_test_finish("test_cuda_driver/errors");
    m.fail("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY, 1);
    nvf_cuda_dev_t *d;
    nlog = 0;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_ERR_CUDA && d == NULL, "failure reported");
    CHECK(strstr(nvf_cuda_last_error(), "cuStreamCreate failed: out of memory") != NULL,
          "last error: %s", nvf_cuda_last_error());
    CHECK(logged("cuStreamCreate failed: out of memory", 0) == 1, "printed as an error");
    CHECK(m.count("cuDevicePrimaryCtxRelease") == 1, "the retain was dropped on failure");
    /* the next attempt works */
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_OK, "retry: %s", nvf_cuda_last_error());
    /* a failing call later on */
    m.fail("cuMemcpyAsync", CUDA_ERROR_ILLEGAL_ADDRESS, 1);
    char a[8] = "abc", b[8];
    CHECK(nvf_cuda_copy_async(d, b, a, 4) == NVF_ERR_CUDA, "copy fails");
    CHECK(strstr(nvf_cuda_last_error(), "cuMemcpyAsync failed") != NULL &&
              strstr(nvf_cuda_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL,
          "last error: %s", nvf_cuda_last_error());
    CHECK(nvf_cuda_copy_async(d, b, a, 4) == NVF_OK && nvf_cuda_stream_sync(d) == NVF_OK &&
              strcmp(b, "abc") == 0,
          "copy works again");
    /* a context the application destroyed: fini stays quiet */
    m.fail("cuCtxPushCurrent", CUDA_ERROR_CONTEXT_IS_DESTROYED, 1);
    nlog = 0;
    nvf_cuda_fini();
    CHECK(logged("", 0) == 0, "fini printed an error");
    return nvf_test_finish("test_cuda_driver/errors");
}

static int scenario_nomemops(void)
{
    nvf_mock_t m;
    CHECK(nvf_cuda_available() && nvf_mock_open(&m) == 0 && nvf_mock_app_init(&m) == 0, "init");
    nvf_cuda_dev_t *d;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_OK, "device");
    if (nvf_test_failures)
        return nvf_test_finish("test_cuda_driver/nomemops");
    CHECK(!nvf_cuda_dev_has_memops(d), "no memops");
    uint64_t flag[2] = {0, 0};
    CHECK(nvf_cuda_flag_write_memop_async(d, &flag[0], 1) == NVF_ERR_UNSUPPORTED, "write memop");
    CHECK(nvf_cuda_flag_wait_memop_async(d, &flag[0], 1) == NVF_ERR_UNSUPPORTED, "wait memop");
    nvf_cuda_fini();
    return nvf_test_finish("test_cuda_driver/nomemops");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--scenario") == 0) {
        nvf_log_set_sink(sink, 1);
        const char *s = argv[2];
        if (!strcmp(s, "nodriver"))
            return scenario_nodriver();
        if (!strcmp(s, "procaddr"))
            return scenario_mock(true);
        if (!strcmp(s, "dlsym"))
            return scenario_mock(false);
        if (!strcmp(s, "old"))
            return scenario_old();
        if (!strcmp(s, "threads"))
            return scenario_threads();
        if (!strcmp(s, "errors"))
            return scenario_errors();
        if (!strcmp(s, "nomemops"))
            return scenario_nomemops();
        return 2;
    }
    const nvf_mock_scenario_t sc[] = {
        {"nodriver", "none", NULL},
        {"procaddr", "mock", NULL},
        {"dlsym", "mock", "NVF_MOCK_NO_PROCADDR=1"},
        {"old", "old", NULL},
        {"threads", "mock", NULL},
        {"errors", "mock", NULL},
        {"nomemops", "mock", "NVF_MOCK_MEMOPS=0"},
    };
    int failed = nvf_mock_run_scenarios(argv[0], sc, (int)(sizeof(sc) / sizeof(sc[0])));
    printf("test_cuda_driver: %d scenario(s) failed\n", failed);
    return failed ? 1 : 0;
}
