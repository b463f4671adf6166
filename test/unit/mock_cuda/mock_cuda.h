/*
 * mock_cuda.h: the test-only controls of the mock CUDA driver (mock_cuda.c, built as
 * test/unit/mock_cuda/libcuda.so.1), and the helpers the unit tests use to run against it.
 *
 * The tests never link the mock: the engine dlopens it exactly as it would the real driver (found
 * first through LD_LIBRARY_PATH, which the tests set before re-executing themselves), and the
 * tests reach the controls and the mock's allocation calls with dlsym. Must not be included by
 * anything but tests.
 */
#ifndef NVF_MOCK_CUDA_H
#define NVF_MOCK_CUDA_H

#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Kinds of fake memory (nvf_mock_kind_of). */
enum {
    NVF_MOCK_NONE,
    NVF_MOCK_DEVICE,     /* cuMemAlloc: legacy-IPC capable */
    NVF_MOCK_MANAGED,    /* cuMemAllocManaged */
    NVF_MOCK_HOSTALLOC,  /* cuMemHostAlloc */
    NVF_MOCK_REGISTERED, /* cuMemHostRegister'ed host range */
    NVF_MOCK_POOL,       /* cuMemAllocAsync: from a memory pool */
    NVF_MOCK_VMM,        /* nvf_mock_alloc_vmm: cuMemCreate-like */
    NVF_MOCK_IMPORTED,   /* cuIpcOpenMemHandle mapping */
    NVF_MOCK_VMM_MAPPED, /* cuMemMap of an imported shareable handle */
};

/* The launch the mock emulated last. */
typedef struct nvf_mock_launch {
    char name[64];
    unsigned grid, block;
    uint32_t vec, nsrc;
    uint64_t count;
} nvf_mock_launch_t;

/* The controls, resolved by nvf_mock_open. */
typedef struct nvf_mock {
    void *lib;
    int (*version)(void);                                /* 1 for this mock */
    unsigned long (*count)(const char *fn);              /* calls of a driver entry point */
    void (*fail)(const char *fn, CUresult r, int times); /* next `times` calls return r */
    int (*kind_of)(const void *p);                       /* NVF_MOCK_* of the range holding p */
    void *(*alloc_vmm)(size_t bytes, int fd_exportable);
    void (*free_vmm)(void *p);
    void (*last_launch)(nvf_mock_launch_t *out);
    unsigned long (*live_mappings)(void); /* open IPC / VMM mappings */
    /* the mock's own driver entry points the tests call as the "application" */
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
    CUresult (*cuMemHostUnregister)(void *);
    CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
} nvf_mock_t;

#define NVF_MOCK_SYM(m, field, name)                                                               \
    do {                                                                                           \
        void *s_ = dlsym((m)->lib, name);                                                          \
        if (s_ == NULL) {                                                                          \
            fprintf(stderr, "mock: %s missing\n", name);                                           \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&(m)->field, &s_, sizeof(s_));                                                      \
    } while (0)

/* 0 when the loaded libcuda.so.1 is the mock and every control is resolved. */
static inline int nvf_mock_open(nvf_mock_t *m)
{
    memset(m, 0, sizeof(*m));
    m->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (m->lib == NULL || dlsym(m->lib, "nvf_mock_version") == NULL)
        return -1;
    NVF_MOCK_SYM(m, version, "nvf_mock_version");
    NVF_MOCK_SYM(m, count, "nvf_mock_count");
    NVF_MOCK_SYM(m, fail, "nvf_mock_fail");
    NVF_MOCK_SYM(m, kind_of, "nvf_mock_kind_of");
    NVF_MOCK_SYM(m, alloc_vmm, "nvf_mock_alloc_vmm");
    NVF_MOCK_SYM(m, free_vmm, "nvf_mock_free_vmm");
    NVF_MOCK_SYM(m, last_launch, "nvf_mock_last_launch");
    NVF_MOCK_SYM(m, live_mappings, "nvf_mock_live_mappings");
    NVF_MOCK_SYM(m, cuInit, "cuInit");
    NVF_MOCK_SYM(m, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    NVF_MOCK_SYM(m, cuCtxSetCurrent, "cuCtxSetCurrent");
    NVF_MOCK_SYM(m, cuMemAlloc, "cuMemAlloc_v2");
    NVF_MOCK_SYM(m, cuMemFree, "cuMemFree_v2");
    NVF_MOCK_SYM(m, cuMemAllocManaged, "cuMemAllocManaged");
    NVF_MOCK_SYM(m, cuMemHostAlloc, "cuMemHostAlloc");
    NVF_MOCK_SYM(m, cuMemFreeHost, "cuMemFreeHost");
    NVF_MOCK_SYM(m, cuMemHostRegister, "cuMemHostRegister_v2");
    NVF_MOCK_SYM(m, cuMemHostUnregister, "cuMemHostUnregister");
    NVF_MOCK_SYM(m, cuMemAllocAsync, "cuMemAllocAsync");
    return 0;
}

/* What the application would do before using CUDA: cuInit, then make device 0's primary context
 * current. Returns 0 on success. */
static inline int nvf_mock_app_init(nvf_mock_t *m)
{
    CUcontext ctx;
    if (m->cuInit(0) != CUDA_SUCCESS || m->cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        m->cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return -1;
    return 0;
}

/* Scenarios: the test binary re-executes itself once per scenario, with the environment that
 * scenario needs (LD_LIBRARY_PATH is read by the dynamic loader at start-up only).
 *   lib: "mock" (the mock), "old" (a mock of a driver that lacks required entry points) or
 *   "none" (an empty directory: no driver, unless the system has a real one). */
typedef struct nvf_mock_scenario {
    const char *name;
    const char *lib;
    const char *env; /* "NAME=value" or NULL */
} nvf_mock_scenario_t;

#ifndef NVF_MOCK_CUDA_DIR
#error "NVF_MOCK_CUDA_DIR must be the build directory of the mock driver"
#endif

/* Runs every scenario in a child process (argv[0] --scenario NAME); returns the number that
 * failed. Exit status 77 from a scenario counts as skipped. */
static inline int nvf_mock_run_scenarios(const char *argv0, const nvf_mock_scenario_t *sc, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            const char *dir = !strcmp(sc[i].lib, "mock")  ? NVF_MOCK_CUDA_DIR
                              : !strcmp(sc[i].lib, "old") ? NVF_MOCK_CUDA_DIR "/old"
                                                          : NVF_MOCK_CUDA_DIR "/none";
            setenv("LD_LIBRARY_PATH", dir, 1);
            if (sc[i].env != NULL)
                putenv((char *)sc[i].env);
            execl("/proc/self/exe", argv0, "--scenario", sc[i].name, (char *)NULL);
            perror("execl /proc/self/exe");
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        printf("scenario %-28s %s\n", sc[i].name, rc == 0 ? "ok" : rc == 77 ? "skipped" : "FAILED");
        if (rc != 0 && rc != 77) {
            failed++;
            if (!WIFEXITED(status))
                printf("  (killed by signal %d)\n", WTERMSIG(status));
        }
    }
    return failed;
}

#endif
