/*
 * nvf_cuda_driver.c: loads libcuda.so.1 with dlopen (once, lazily, thread safe), resolves the
 * entry points of NVF_CUDA_FOREACH_FN, and turns driver errors into reported NVF_ERR_CUDA.
 *
 * Resolution: cuGetProcAddress_v2 (drivers >= 12.0) with the CUDA version of the ABI each call
 * site uses, else dlsym of the versioned name cuda.h maps the call to (cuMemcpyDtoHAsync_v2 ...).
 * Must not call cuInit (a process that did not initialise CUDA has no device buffers) and must
 * never make mca_coll_nvfabric.so depend on libcuda at link time.
 */
#include "nvf_cuda_driver.h"
#include "../nvf_log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NVF_STR_(x) #x
#define NVF_XSTR(x) NVF_STR_(x)

nvf_cuda_fn_t nvf_cu;
_Atomic int nvf_cuda_driver_state_; /* 0 not tried, 1 absent, 2 present */

static pthread_once_t nvf_cuda_once = PTHREAD_ONCE_INIT;
static void *nvf_cuda_lib;
static int nvf_cuda_version;
static char nvf_cuda_status_text[256] = "CUDA driver not loaded yet";
static uint64_t nvf_cuda_pid_nonce;
static _Thread_local char nvf_cuda_err[320];

struct nvf_cuda_sym {
    const char *name;      /* the name cuGetProcAddress knows (no version suffix) */
    const char *versioned; /* the exported symbol cuda.h maps the call to */
    int version;
    int required;
    size_t offset;
};

static const struct nvf_cuda_sym nvf_cuda_syms[] = {
#define NVF_CUDA_SYM(fn, version, required)                                                        \
    {#fn, NVF_XSTR(fn), version, required, offsetof(nvf_cuda_fn_t, fn)},
    NVF_CUDA_FOREACH_FN(NVF_CUDA_SYM)
#undef NVF_CUDA_SYM
};

typedef CUresult (*nvf_gpa_fn_t)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);

static void nvf_cuda_load(void)
{
    int state = 1;
    const char *how;
    nvf_cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (nvf_cuda_lib == NULL) {
        const char *e = dlerror();
        snprintf(nvf_cuda_status_text, sizeof(nvf_cuda_status_text),
                 "no CUDA driver (%s): every buffer is host memory", e ? e : "dlopen failed");
        goto done;
    }
    void *gpa_sym = dlsym(nvf_cuda_lib, "cuGetProcAddress_v2");
    nvf_gpa_fn_t gpa;
    memcpy(&gpa, &gpa_sym, sizeof(gpa));
    const char *missing = NULL;
    int by_gpa = 0, by_dlsym = 0;
    for (size_t i = 0; i < sizeof(nvf_cuda_syms) / sizeof(nvf_cuda_syms[0]); i++) {
        const struct nvf_cuda_sym *s = &nvf_cuda_syms[i];
        void *p = NULL;
        if (gpa != NULL) {
            CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            if (gpa(s->name, &p, s->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) !=
                    CUDA_SUCCESS ||
                q != CU_GET_PROC_ADDRESS_SUCCESS)
                p = NULL;
        }
        if (p != NULL)
            by_gpa++;
        else if ((p = dlsym(nvf_cuda_lib, s->versioned)) != NULL)
            by_dlsym++;
        if (p == NULL && s->required && missing == NULL)
            missing = s->versioned;
        memcpy((char *)&nvf_cu + s->offset, &p, sizeof(p));
    }
    if (missing != NULL) {
        snprintf(nvf_cuda_status_text, sizeof(nvf_cuda_status_text),
                 "CUDA driver unusable: libcuda.so.1 has no %s (driver too old?): every buffer "
                 "is host memory",
                 missing);
        memset(&nvf_cu, 0, sizeof(nvf_cu));
        dlclose(nvf_cuda_lib);
        nvf_cuda_lib = NULL;
        goto done;
    }
    how = by_dlsym == 0 ? "cuGetProcAddress" : by_gpa == 0 ? "dlsym" : "cuGetProcAddress and dlsym";
    if (nvf_cu.cuDriverGetVersion(&nvf_cuda_version) != CUDA_SUCCESS)
        nvf_cuda_version = 0;
    snprintf(nvf_cuda_status_text, sizeof(nvf_cuda_status_text),
             "CUDA driver %d.%d (libcuda.so.1, entry points by %s%s)", nvf_cuda_version / 1000,
             (nvf_cuda_version % 1000) / 10, how,
             nvf_cu.cuStreamWaitValue64 != NULL ? "" : "; no stream memory operations");
    state = 2;
done:;
    /* A process nonce for IPC descriptors: pid alone repeats across PID namespaces. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    nvf_cuda_pid_nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^
                         ((uint64_t)ts.tv_sec * 0x9e3779b97f4a7c15ULL) ^ (uintptr_t)&ts;
    if (nvf_cuda_pid_nonce == 0)
        nvf_cuda_pid_nonce = 1;
    nvf_log(1, "cuda: %s", nvf_cuda_status_text);
    atomic_store_explicit(&nvf_cuda_driver_state_, state, memory_order_release);
}

bool nvf_cuda_available(void)
{
    int s = atomic_load_explicit(&nvf_cuda_driver_state_, memory_order_acquire);
    if (s == 0) {
        pthread_once(&nvf_cuda_once, nvf_cuda_load);
        s = atomic_load_explicit(&nvf_cuda_driver_state_, memory_order_acquire);
    }
    return s == 2;
}

int nvf_cuda_driver_version(void)
{
    return nvf_cuda_available() ? nvf_cuda_version : 0;
}

const char *nvf_cuda_driver_status(void)
{
    nvf_cuda_available();
    return nvf_cuda_status_text;
}

const char *nvf_cuda_last_error(void)
{
    return nvf_cuda_err;
}

uint64_t nvf_cuda_proc_id(void)
{
    /* the pid too: a child forked after the driver was loaded is another exporter */
    nvf_cuda_available();
    uint64_t id = nvf_cuda_pid_nonce ^ ((uint64_t)getpid() * 0xff51afd7ed558ccdULL);
    return id ? id : 1;
}

static void nvf_cuda_format(CUresult r, const char *call)
{
    const char *text = NULL, *name = NULL;
    if (nvf_cu.cuGetErrorString == NULL || nvf_cu.cuGetErrorString(r, &text) != CUDA_SUCCESS ||
        text == NULL)
        text = "unknown error";
    if (nvf_cu.cuGetErrorName == NULL || nvf_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS ||
        name == NULL)
        name = "?";
    snprintf(nvf_cuda_err, sizeof(nvf_cuda_err), "%s failed: %s (%s = %d)", call, text, name,
             (int)r);
}

nvf_status_t nvf_cuda_check(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS)
        return NVF_OK;
    nvf_cuda_format(r, call);
    nvf_error("cuda: %s", nvf_cuda_err);
    return NVF_ERR_CUDA;
}

nvf_status_t nvf_cuda_note(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS)
        return NVF_OK;
    nvf_cuda_format(r, call);
    nvf_log(2, "cuda: %s", nvf_cuda_err);
    return NVF_ERR_CUDA;
}

void nvf_cuda_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nvf_cuda_err, sizeof(nvf_cuda_err), fmt, ap);
    va_end(ap);
}
