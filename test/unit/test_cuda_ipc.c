/*
 * test_cuda_ipc.c: CUDA IPC export and import between two processes, against the mock driver
 * (whose device memory is memfd-backed, so the importer really maps the exporter's bytes).
 *
 * A forked exporter describes its buffers; this process imports them and checks: the data, the
 * offsets, cache hits (one cuIpcOpenMemHandle per allocation), eviction of a stale mapping when
 * the peer freed a buffer and got a new one at the same address (new buffer id), least recently
 * used eviction past NVF_CUDA_IPC_CACHE_MAX, flush, the FD route (pidfd_getfd) for VMM memory,
 * malformed descriptors, and the memory kinds that cannot be exported the legacy way.
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "mock_cuda/mock_cuda.h"
#include "nvf_test.h"

#include <errno.h>

#define NMANY 300

static int quiet_errors;
static void sink(int level, const char *msg)
{
    if (level == 0 && !quiet_errors)
        fprintf(stderr, "[%d] error logged: %s\n", (int)getpid(), msg);
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) {
            perror("write");
            _exit(3);
        }
        c += w;
        n -= (size_t)w;
    }
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static nvf_cuda_dev_t *init_dev(nvf_mock_t *m)
{
    nvf_cuda_dev_t *d = NULL;
    if (!nvf_cuda_available() || nvf_mock_open(m) != 0 || nvf_mock_app_init(m) != 0 ||
        nvf_cuda_dev_for_ordinal(0, &d) != NVF_OK)
        return NULL;
    return d;
}

static void *mock_alloc(nvf_mock_t *m, size_t n, int fill)
{
    CUdeviceptr p = 0;
    if (m->cuMemAlloc(&p, n) != CUDA_SUCCESS)
        return NULL;
    memset((void *)(uintptr_t)p, fill, n);
    return (void *)(uintptr_t)p;
}

/* The exporter: answers commands on cmd_fd with descriptors on out_fd. */
static int exporter(int cmd_fd, int out_fd)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m);
    if (d == NULL)
        return 10;
    char *a = mock_alloc(&m, 1 << 20, 0x11), *b = mock_alloc(&m, 256 << 10, 0x22);
    nvf_cuda_ipc_desc_t desc[3];
    const char *why;
    if (!a || !b || nvf_cuda_ipc_export(d, a, 1 << 20, &desc[0], &why) != NVF_OK ||
        nvf_cuda_ipc_export(d, a + 65536, 4096, &desc[1], &why) != NVF_OK ||
        nvf_cuda_ipc_export(d, b, 256 << 10, &desc[2], &why) != NVF_OK)
        return 11;
    write_all(out_fd, desc, sizeof(desc));
    char *many[NMANY];
    for (;;) {
        char cmd;
        if (read_all(cmd_fd, &cmd, 1) != 0)
            return 12;
        if (cmd == 'q')
            return 0;
        if (cmd == 'r') { /* free A, get a new buffer at the same address */
            if (m.cuMemFree((CUdeviceptr)(uintptr_t)a) != CUDA_SUCCESS)
                return 13;
            a = mock_alloc(&m, 1 << 20, 0x44);
            nvf_cuda_ipc_desc_t d3;
            if (a == NULL || nvf_cuda_ipc_export(d, a, 1 << 20, &d3, &why) != NVF_OK)
                return 14;
            write_all(out_fd, &d3, sizeof(d3));
        } else if (cmd == 'c') { /* did the importer's store reach our buffer? */
            char v = a[0];
            write_all(out_fd, &v, 1);
        } else if (cmd == 'm') {
            for (int i = 0; i < NMANY; i++) {
                many[i] = mock_alloc(&m, 4096, i & 0xff);
                nvf_cuda_ipc_desc_t di;
                if (many[i] == NULL || nvf_cuda_ipc_export(d, many[i], 4096, &di, &why) != NVF_OK)
                    return 15;
                write_all(out_fd, &di, sizeof(di));
            }
        } else if (cmd == 'v') {
            char *v = m.alloc_vmm(1 << 16, 1);
            nvf_cuda_ipc_desc_t dv;
            memset(v, 0x55, 1 << 16);
            if (nvf_cuda_ipc_export_fd(d, v + 100, 1000, &dv, &why) != NVF_OK) {
                fprintf(stderr, "export_fd: %s\n", why ? why : nvf_cuda_last_error());
                memset(&dv, 0, sizeof(dv));
            }
            write_all(out_fd, &dv, sizeof(dv));
        }
    }
}

static bool all_bytes(const void *p, size_t n, int v)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)v)
            return false;
    return true;
}

static int importer(pid_t child, int cmd_fd, int in_fd)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m);
    CHECK(d != NULL, "importer init: %s", nvf_cuda_last_error());
    nvf_cuda_ipc_desc_t desc[3];
    CHECK(read_all(in_fd, desc, sizeof(desc)) == 0, "descriptors from the exporter");
    if (nvf_test_failures)
        return nvf_test_finish("test_cuda_ipc/two-process");
    nvf_cuda_uuid_t u;
    nvf_cuda_dev_uuid(d, &u);
    CHECK(desc[0].magic == NVF_CUDA_IPC_MAGIC && desc[0].method == NVF_CUDA_IPC_LEGACY &&
              desc[0].offset == 0 && desc[0].bytes == (1 << 20) && desc[0].size >= (1 << 20) &&
              desc[0].pid == child && nvf_cuda_uuid_equal(&desc[0].uuid, &u),
          "descriptor 0");
    CHECK(desc[1].base == desc[0].base && desc[1].buffer_id == desc[0].buffer_id &&
              desc[1].offset == 65536 && desc[1].bytes == 4096,
          "an interior buffer is the allocation plus an offset");
    CHECK(desc[2].buffer_id != desc[0].buffer_id, "another allocation, another buffer id");

    void *p0, *p1, *p2, *p3;
    nvf_cuda_ipc_stats_t st;
    CHECK(nvf_cuda_ipc_import(d, &desc[0], &p0) == NVF_OK, "import 0: %s", nvf_cuda_last_error());
    CHECK(p0 != NULL, "mapped");
    CHECK(all_bytes(p0, 1 << 20, 0x11), "the exporter's bytes");
    CHECK(nvf_cuda_ipc_import(d, &desc[1], &p1) == NVF_OK && p1 == (char *)p0 + 65536,
          "same allocation: cache hit, offset applied");
    CHECK(nvf_cuda_ipc_import(d, &desc[2], &p2) == NVF_OK && all_bytes(p2, 256 << 10, 0x22),
          "import 2");
    void *again;
    CHECK(nvf_cuda_ipc_import(d, &desc[0], &again) == NVF_OK && again == p0, "hit again");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.imports == 4 && st.import_hits == 2 && st.opens == 2 && st.live == 2,
          "stats: imports %llu hits %llu opens %llu live %u", st.imports, st.import_hits, st.opens,
          st.live);
    CHECK(m.count("cuIpcOpenMemHandle") == 2, "%lu opens", m.count("cuIpcOpenMemHandle"));

    /* the peer frees A and gets a new buffer at the same address */
    write_all(cmd_fd, "r", 1);
    nvf_cuda_ipc_desc_t d3;
    CHECK(read_all(in_fd, &d3, sizeof(d3)) == 0, "descriptor of the new buffer");
    CHECK(d3.base == desc[0].base && d3.buffer_id != desc[0].buffer_id,
          "same address (%#llx vs %#llx), new buffer id (%llu vs %llu)",
          (unsigned long long)d3.base, (unsigned long long)desc[0].base,
          (unsigned long long)d3.buffer_id, (unsigned long long)desc[0].buffer_id);
    CHECK(nvf_cuda_ipc_import(d, &d3, &p3) == NVF_OK, "import of the new buffer: %s",
          nvf_cuda_last_error());
    CHECK(all_bytes(p3, 1 << 20, 0x44), "the new buffer's bytes, not the old mapping's");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.stale_evictions == 1 && st.closes == 1 && st.opens == 3 && st.live == 2,
          "stale mapping evicted: stale %llu closes %llu opens %llu live %u", st.stale_evictions,
          st.closes, st.opens, st.live);
    ((char *)p3)[0] = 0x66;
    write_all(cmd_fd, "c", 1);
    char seen = 0;
    CHECK(read_all(in_fd, &seen, 1) == 0 && seen == 0x66, "the exporter sees the importer's store");
    CHECK(nvf_cuda_ipc_import(d, &desc[2], &p2) == NVF_OK, "B still cached");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.stale_evictions == 1 && st.opens == 3, "no reopen of B");
    CHECK(nvf_cuda_ipc_flush(d) == NVF_OK, "flush");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.live == 0 && m.live_mappings() == 0, "flushed: live %u, mock %lu", st.live,
          m.live_mappings());

    /* more buffers than the cache holds */
    write_all(cmd_fd, "m", 1);
    nvf_cuda_ipc_desc_t *many = calloc(NMANY, sizeof(*many));
    CHECK(read_all(in_fd, many, NMANY * sizeof(*many)) == 0, "many descriptors");
    nvf_cuda_ipc_stats_t before;
    nvf_cuda_ipc_stats(d, &before);
    bool data_ok = true;
    for (int i = 0; i < NMANY; i++) {
        void *p;
        if (nvf_cuda_ipc_import(d, &many[i], &p) != NVF_OK) {
            CHECK(0, "import %d: %s", i, nvf_cuda_last_error());
            break;
        }
        data_ok = data_ok && all_bytes(p, 4096, i & 0xff);
    }
    CHECK(data_ok, "every small buffer's bytes");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.live == NVF_CUDA_IPC_CACHE_MAX && m.live_mappings() == NVF_CUDA_IPC_CACHE_MAX,
          "capacity: live %u, mock %lu", st.live, m.live_mappings());
    CHECK(st.lru_evictions - before.lru_evictions == NMANY - NVF_CUDA_IPC_CACHE_MAX,
          "%llu LRU evictions", st.lru_evictions - before.lru_evictions);
    void *p;
    CHECK(nvf_cuda_ipc_import(d, &many[NMANY - 1], &p) == NVF_OK, "recent one");
    nvf_cuda_ipc_stats(d, &before);
    CHECK(before.opens == st.opens, "the most recent is a hit");
    CHECK(nvf_cuda_ipc_import(d, &many[0], &p) == NVF_OK && all_bytes(p, 4096, 0), "evicted one");
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.opens == before.opens + 1 && st.lru_evictions == before.lru_evictions + 1,
          "the evicted one is reopened, evicting the oldest");
    CHECK(nvf_cuda_ipc_flush(d) == NVF_OK && m.live_mappings() == 0, "flush");
    free(many);

    /* the FD route for VMM memory */
    write_all(cmd_fd, "v", 1);
    nvf_cuda_ipc_desc_t dv;
    CHECK(read_all(in_fd, &dv, sizeof(dv)) == 0, "VMM descriptor");
    CHECK(dv.magic == NVF_CUDA_IPC_MAGIC && dv.method == NVF_CUDA_IPC_FD && dv.fd >= 0 &&
              dv.offset == 100 && dv.bytes == 1000,
          "FD descriptor: method %u fd %d offset %llu", dv.method, dv.fd,
          (unsigned long long)dv.offset);
    quiet_errors = 1;
    nvf_status_t s = nvf_cuda_ipc_import(d, &dv, &p);
    quiet_errors = 0;
    if (s == NVF_ERR_SYSTEM) {
        printf("FD route not checked: %s\n", nvf_cuda_last_error());
    } else {
        CHECK(s == NVF_OK, "FD import: %s", nvf_cuda_last_error());
        CHECK(s != NVF_OK || all_bytes(p, 1000, 0x55), "the VMM buffer's bytes");
        CHECK(m.count("cuMemMap") == 1 && m.count("cuMemSetAccess") == 1, "mapped once");
        void *pv2;
        CHECK(nvf_cuda_ipc_import(d, &dv, &pv2) == NVF_OK && pv2 == p, "FD mapping cached");
        CHECK(nvf_cuda_ipc_flush(d) == NVF_OK && m.count("cuMemUnmap") == 1 &&
                  m.count("cuMemAddressFree") == 1,
              "FD mapping unmapped and its range freed");
    }

    /* malformed descriptors */
    nvf_cuda_ipc_desc_t bad = desc[2];
    bad.magic = 0;
    CHECK(nvf_cuda_ipc_import(d, &bad, &p) == NVF_ERR_INVALID && p == NULL, "no magic");
    bad = desc[2];
    bad.offset = bad.size + 1;
    CHECK(nvf_cuda_ipc_import(d, &bad, &p) == NVF_ERR_INVALID, "offset past the allocation");
    bad = desc[2];
    bad.bytes = bad.size;
    bad.offset = 8;
    CHECK(nvf_cuda_ipc_import(d, &bad, &p) == NVF_ERR_INVALID, "bytes past the allocation");
    bad = desc[2];
    bad.method = 9;
    CHECK(nvf_cuda_ipc_import(d, &bad, &p) == NVF_ERR_INVALID, "unknown method");

    write_all(cmd_fd, "q", 1);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exporter exit status %d",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    nvf_cuda_fini();
    CHECK(m.live_mappings() == 0, "fini leaves no mapping");
    return nvf_test_finish("test_cuda_ipc/two-process");
}

static int scenario_two_process(void)
{
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0)
        return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        _exit(exporter(to_child[0], to_parent[1]));
    }
    close(to_child[0]);
    close(to_parent[1]);
    return importer(pid, to_child[1], to_parent[0]);
}

static int scenario_local(void)
{
    nvf_mock_t m;
    nvf_cuda_dev_t *d = init_dev(&m);
    CHECK(d != NULL, "init");
    if (d == NULL)
        return nvf_test_finish("test_cuda_ipc/local");
    const char *why = NULL;
    nvf_cuda_ipc_desc_t desc;
    char *a = mock_alloc(&m, 1 << 16, 1);
    CHECK(nvf_cuda_ipc_export(d, a + 8, 64, &desc, &why) == NVF_OK, "export");
    CHECK(nvf_cuda_ipc_export(d, a + 16, 64, &desc, &why) == NVF_OK && desc.offset == 16, "again");
    nvf_cuda_ipc_stats_t st;
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.exports == 2 && st.export_hits == 1 && m.count("cuIpcGetMemHandle") == 1,
          "export cache: %llu exports, %llu hits, %lu cuIpcGetMemHandle", st.exports,
          st.export_hits, m.count("cuIpcGetMemHandle"));
    /* described by the caller (a call's classification): a cached export asks the driver
     * nothing, and says the same as the undescribed one */
    nvf_cuda_ptr_info_t info;
    CHECK(nvf_cuda_ptr_query(a + 24, &info) == NVF_MEM_DEVICE, "query");
    nvf_cuda_ipc_desc_t described;
    const unsigned long q0 = m.count("cuPointerGetAttributes");
    CHECK(nvf_cuda_ipc_export_described(d, a + 24, 64, &info, &described, &why) == NVF_OK &&
              described.offset == 24 && described.base == desc.base &&
              described.buffer_id == desc.buffer_id &&
              memcmp(described.handle, desc.handle, sizeof(desc.handle)) == 0,
          "described export");
    CHECK(m.count("cuPointerGetAttributes") == q0, "a described, cached export made %lu queries",
          m.count("cuPointerGetAttributes") - q0);
    nvf_cuda_ipc_stats(d, &st);
    CHECK(st.exports == 3 && st.export_hits == 2 && m.count("cuIpcGetMemHandle") == 1,
          "described export from the cache: %llu exports, %llu hits", st.exports, st.export_hits);
    void *p;
    CHECK(nvf_cuda_ipc_import(d, &desc, &p) == NVF_OK && p == a + 16,
          "a descriptor of this process is its own address");
    CHECK(m.count("cuIpcOpenMemHandle") == 0, "never opened");

    CUdeviceptr pool;
    CHECK(m.cuMemAllocAsync(&pool, 4096, NULL) == CUDA_SUCCESS, "pool alloc");
    CHECK(nvf_cuda_ipc_export(d, (void *)(uintptr_t)pool, 64, &desc, &why) == NVF_ERR_UNSUPPORTED &&
              why && strstr(why, "cudaMallocAsync"),
          "pool memory: %s", why ? why : "(no reason)");
    char *v = m.alloc_vmm(1 << 16, 0);
    CHECK(nvf_cuda_ipc_export(d, v, 64, &desc, &why) == NVF_ERR_UNSUPPORTED && why &&
              strstr(why, "cuMemCreate"),
          "VMM memory: %s", why ? why : "(no reason)");
    CHECK(nvf_cuda_ipc_export_fd(d, v, 64, &desc, &why) == NVF_ERR_UNSUPPORTED,
          "VMM memory without an fd handle type: %s", why ? why : "");
    CHECK(nvf_cuda_ipc_export_fd(d, a, 64, &desc, &why) == NVF_ERR_UNSUPPORTED,
          "cudaMalloc memory has no FD route");
    CUdeviceptr man;
    CHECK(m.cuMemAllocManaged(&man, 4096, 1) == CUDA_SUCCESS, "managed alloc");
    CHECK(nvf_cuda_ipc_export(d, (void *)(uintptr_t)man, 64, &desc, &why) == NVF_ERR_UNSUPPORTED,
          "managed memory");
    char host[64];
    CHECK(nvf_cuda_ipc_export(d, host, 64, &desc, &why) == NVF_ERR_INVALID && desc.magic == 0,
          "host memory");
    CHECK(nvf_cuda_ipc_export(d, a + 100, 1 << 16, &desc, &why) == NVF_ERR_INVALID,
          "past the end of the allocation");
    nvf_cuda_fini();
    return nvf_test_finish("test_cuda_ipc/local");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--scenario") == 0) {
        nvf_log_set_sink(sink, 0);
        if (!strcmp(argv[2], "two-process"))
            return scenario_two_process();
        if (!strcmp(argv[2], "local"))
            return scenario_local();
        return 2;
    }
    const nvf_mock_scenario_t sc[] = {
        {"local", "mock", NULL},
        {"two-process", "mock", NULL},
    };
    int failed = nvf_mock_run_scenarios(argv[0], sc, 2);
    printf("test_cuda_ipc: %d scenario(s) failed\n", failed);
    return failed ? 1 : 0;
}
