/*
 * nvf_cuda_launch.c: the host side of nvfabric's kernels: loads the embedded fatbin into a
 * context (once, at the first launch), finds kernels by name (names generated from the same lists
 * as the kernels), sizes the grid, launches on the device's stream; and the flag operations as
 * stream memory operations.
 *
 * Must not decide anything about algorithms: it runs what it is asked, checks its arguments and
 * reports every driver failure.
 */
#include "nvf_cuda_dev.h"
#include "../nvf_log.h"
#include "../nvf_op_defs.h"

#include <string.h>

_Static_assert(NVF_CUDA_ARGS_MAX_SOURCES == NVF_CUDA_MAX_SOURCES, "one limit on sources");

extern const unsigned char nvf_cuda_fatbin[];

/* Kernel names by id (NULL: no such kernel). */
static const char *const nvf_cuda_knames[NVF_CUDA_KERNEL_COUNT] = {
#define NVF_CUDA_KNAME(OP, ID, T, FN)                                                              \
    [NVF_CUDA_KERNEL_REDUCE(NVF_OP_##OP, NVF_DTYPE_##ID)] = "nvf_cuda_reduce_" #OP "_" #ID,
    NVF_FOREACH_OP_DTYPE_DEVICE(NVF_CUDA_KNAME)
#undef NVF_CUDA_KNAME
        [NVF_CUDA_K_FLAG_WRITE] = NVF_CUDA_KNAME_FLAG_WRITE,
    [NVF_CUDA_K_FLAG_WAIT] = NVF_CUDA_KNAME_FLAG_WAIT,
    [NVF_CUDA_K_COPY_1] = NVF_CUDA_KNAME_COPY_1,
    [NVF_CUDA_K_COPY_4] = NVF_CUDA_KNAME_COPY_4,
    [NVF_CUDA_K_COPY_8] = NVF_CUDA_KNAME_COPY_8,
    [NVF_CUDA_K_COPY_16] = NVF_CUDA_KNAME_COPY_16,
};

const char *nvf_cuda_kernel_name(int index)
{
    for (int id = 0, seen = 0; id < NVF_CUDA_KERNEL_COUNT; id++) {
        if (nvf_cuda_knames[id] == NULL)
            continue;
        if (seen++ == index)
            return nvf_cuda_knames[id];
    }
    return NULL;
}

static bool nvf_cuda_no_code(CUresult r)
{
    return r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
           r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
           r == CUDA_ERROR_INVALID_IMAGE;
}

nvf_status_t nvf_cuda_kernel_get(nvf_cuda_dev_t *d, int id, CUfunction *f)
{
    if (id < 0 || id >= NVF_CUDA_KERNEL_COUNT || nvf_cuda_knames[id] == NULL)
        return NVF_ERR_UNSUPPORTED;
    *f = atomic_load_explicit(&d->fn[id], memory_order_acquire);
    if (*f != NULL)
        return NVF_OK;
    nvf_status_t st = NVF_OK;
    pthread_mutex_lock(&d->lock);
    if (d->module == NULL) {
        if (d->module_failed) {
            st = NVF_ERR_UNSUPPORTED;
            goto out;
        }
        CUresult r = nvf_cu.cuModuleLoadData(&d->module, nvf_cuda_fatbin);
        if (r != CUDA_SUCCESS) {
            d->module_failed = true;
            d->module = NULL;
            if (nvf_cuda_no_code(r)) {
                /* a GPU the fatbin has no code for (before sm_80), or a driver too old for its
                 * PTX: the device stage declines, nothing is wrong */
                nvf_cuda_note(r, "cuModuleLoadData");
                nvf_log(1,
                        "cuda: no kernels for device %d (%s): device buffers are not handled "
                        "on it",
                        d->ordinal, nvf_cuda_last_error());
                st = NVF_ERR_UNSUPPORTED;
            } else {
                st = nvf_cuda_check(r, "cuModuleLoadData");
            }
            goto out;
        }
        nvf_log(2, "cuda: kernels loaded on device %d", d->ordinal);
    }
    CUfunction fn = NULL;
    st = NVF_CU(cuModuleGetFunction, &fn, d->module, nvf_cuda_knames[id]);
    if (st == NVF_OK) {
        atomic_store_explicit(&d->fn[id], fn, memory_order_release);
        *f = fn;
    }
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

void nvf_cuda_launch_fini_dev(nvf_cuda_dev_t *d)
{
    if (d->module != NULL)
        nvf_cuda_note(nvf_cu.cuModuleUnload(d->module), "cuModuleUnload");
    d->module = NULL;
    for (int i = 0; i < NVF_CUDA_KERNEL_COUNT; i++)
        atomic_store_explicit(&d->fn[i], NULL, memory_order_relaxed);
}

/* Blocks for `units` of work, one unit per thread per step: enough to cover the work, at most a
 * few waves of blocks per SM (the kernels loop over the rest). */
static unsigned nvf_cuda_grid(const nvf_cuda_dev_t *d, uint64_t units)
{
    const uint64_t per_block = NVF_CUDA_BLOCK_THREADS;
    uint64_t blocks = (units + per_block - 1) / per_block;
    uint64_t max_blocks = (uint64_t)(d->sm_count > 0 ? d->sm_count : 1) * 4;
    if (blocks > max_blocks)
        blocks = max_blocks;
    return blocks ? (unsigned)blocks : 1u;
}

static nvf_status_t nvf_cuda_launch(nvf_cuda_dev_t *d, int id, unsigned blocks, unsigned threads,
                                    void *args)
{
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    CUfunction f;
    st = nvf_cuda_kernel_get(d, id, &f);
    if (st == NVF_OK) {
        void *params[] = {args};
        st = NVF_CU(cuLaunchKernel, f, blocks, 1, 1, threads, 1, 1, 0, d->stream, params, NULL);
    }
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

nvf_status_t nvf_cuda_reduce_async(nvf_cuda_dev_t *d, nvf_dtype_t dt, nvf_op_t op, void *out,
                                   const void *const *src, int nsrc, size_t count)
{
    if (nsrc < 1 || nsrc > NVF_CUDA_MAX_SOURCES || out == NULL || src == NULL)
        return NVF_ERR_INVALID;
    if (!nvf_op_supported_on_device(dt, op))
        return NVF_ERR_UNSUPPORTED;
    if (count == 0)
        return NVF_OK;
    nvf_cuda_reduce_args_t a;
    memset(&a, 0, sizeof(a));
    a.out = out;
    uintptr_t align = (uintptr_t)out;
    for (int k = 0; k < nsrc; k++) {
        if (src[k] == NULL)
            return NVF_ERR_INVALID;
        a.src[k] = src[k];
        align |= (uintptr_t)src[k];
    }
    a.count = count;
    a.nsrc = (uint32_t)nsrc;
    a.vec = (align & 15u) == 0;
    const size_t es = nvf_dtype_size(dt);
    const uint64_t per = a.vec ? 16 / es : 1;
    const uint64_t units = count / per + count % per;
    return nvf_cuda_launch(d, NVF_CUDA_KERNEL_REDUCE(op, dt), nvf_cuda_grid(d, units),
                           NVF_CUDA_BLOCK_THREADS, &a);
}

nvf_status_t nvf_cuda_copy_kernel_async(nvf_cuda_dev_t *d, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return NVF_OK;
    if (dst == NULL || src == NULL)
        return NVF_ERR_INVALID;
    const uintptr_t align = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)bytes;
    int id = NVF_CUDA_K_COPY_1;
    size_t unit = 1;
    if ((align & 15u) == 0)
        id = NVF_CUDA_K_COPY_16, unit = 16;
    else if ((align & 7u) == 0)
        id = NVF_CUDA_K_COPY_8, unit = 8;
    else if ((align & 3u) == 0)
        id = NVF_CUDA_K_COPY_4, unit = 4;
    nvf_cuda_copy_args_t a = {dst, src, bytes / unit};
    return nvf_cuda_launch(d, id, nvf_cuda_grid(d, a.n), NVF_CUDA_BLOCK_THREADS, &a);
}

nvf_status_t nvf_cuda_flag_write_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value)
{
    if (flag == NULL || ((uintptr_t)flag & 7u))
        return NVF_ERR_INVALID;
    nvf_cuda_write_args_t a = {flag, value};
    return nvf_cuda_launch(d, NVF_CUDA_K_FLAG_WRITE, 1, 32, &a);
}

#define NVF_CUDA_WAIT_DEFAULT_NS (30ull * 1000 * 1000 * 1000)

nvf_status_t nvf_cuda_flag_wait_async(nvf_cuda_dev_t *d, const uint64_t *flag, uint64_t value,
                                      uint64_t timeout_ns)
{
    if (flag == NULL || ((uintptr_t)flag & 7u))
        return NVF_ERR_INVALID;
    nvf_cuda_wait_args_t a = {flag, value, timeout_ns ? timeout_ns : NVF_CUDA_WAIT_DEFAULT_NS,
                              (uint32_t *)(uintptr_t)d->status_dev};
    return nvf_cuda_launch(d, NVF_CUDA_K_FLAG_WAIT, 1, 32, &a);
}

nvf_status_t nvf_cuda_flag_write_memop_async(nvf_cuda_dev_t *d, uint64_t *flag, uint64_t value)
{
    if (flag == NULL || ((uintptr_t)flag & 7u))
        return NVF_ERR_INVALID;
    if (!d->memops)
        return NVF_ERR_UNSUPPORTED;
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    /* default flags: the write follows a system-wide memory barrier (release) */
    st = NVF_CU(cuStreamWriteValue64, d->stream, (CUdeviceptr)(uintptr_t)flag, value,
                CU_STREAM_WRITE_VALUE_DEFAULT);
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}

nvf_status_t nvf_cuda_flag_wait_memop_async(nvf_cuda_dev_t *d, const uint64_t *flag, uint64_t value)
{
    if (flag == NULL || ((uintptr_t)flag & 7u))
        return NVF_ERR_INVALID;
    if (!d->memops)
        return NVF_ERR_UNSUPPORTED;
    bool pushed;
    nvf_status_t st = nvf_cuda_ctx_enter(d, &pushed);
    if (st != NVF_OK)
        return st;
    /* where the device can, the wait flushes writes that arrived by RDMA (a NIC writing the
     * data and then the flag) so that the work after it sees the data, not only the flag */
    st = NVF_CU(cuStreamWaitValue64, d->stream, (CUdeviceptr)(uintptr_t)flag, value,
                CU_STREAM_WAIT_VALUE_GEQ | (d->memop_flush ? CU_STREAM_WAIT_VALUE_FLUSH : 0));
    nvf_cuda_ctx_leave(d, pushed);
    return st;
}
