/*
 * nvf_cuda_driver.h: the CUDA driver as a table of entry points resolved from libcuda.so.1 at run
 * time, and the one way to check a driver call (report it, turn it into NVF_ERR_CUDA).
 *
 * Only files in coll_nvfabric/cuda/ include this (it includes cuda.h for the types and the
 * versioned names: cuda.h maps cuMemcpyDtoHAsync to cuMemcpyDtoHAsync_v2, and so on, and the
 * table's members get the same names, so `nvf_cu.cuMemcpyDtoHAsync(...)` calls the ABI the
 * header describes). Nothing here links against libcuda. Must not call cuInit.
 */
#ifndef NVF_CUDA_DRIVER_H
#define NVF_CUDA_DRIVER_H

#include "nvf_cuda.h"

#include <cuda.h>

/* X(function, CUDA version of the ABI used, required). Required entry points missing from the
 * library make the driver unusable; optional ones are NULL and their feature is off. */
#define NVF_CUDA_FOREACH_FN(X)                                                                     \
    X(cuGetErrorString, 6000, 1)                                                                   \
    X(cuGetErrorName, 6000, 1)                                                                     \
    X(cuDriverGetVersion, 2020, 1)                                                                 \
    X(cuPointerGetAttributes, 7000, 1)                                                             \
    X(cuDeviceGet, 2000, 1)                                                                        \
    X(cuDeviceGetCount, 2000, 1)                                                                   \
    X(cuDeviceGetAttribute, 2000, 1)                                                               \
    X(cuDeviceGetUuid, 11040, 1)                                                                   \
    X(cuDeviceCanAccessPeer, 4000, 1)                                                              \
    X(cuDevicePrimaryCtxRetain, 7000, 1)                                                           \
    X(cuDevicePrimaryCtxRelease, 11000, 1)                                                         \
    X(cuDevicePrimaryCtxGetState, 7000, 1)                                                         \
    X(cuCtxGetCurrent, 4000, 1)                                                                    \
    X(cuCtxPushCurrent, 4000, 1)                                                                   \
    X(cuCtxPopCurrent, 4000, 1)                                                                    \
    X(cuCtxGetDevice, 2000, 1)                                                                     \
    X(cuMemGetAddressRange, 3020, 1)                                                               \
    X(cuMemHostAlloc, 2020, 1)                                                                     \
    X(cuMemFreeHost, 2000, 1)                                                                      \
    X(cuMemHostRegister, 6050, 1)                                                                  \
    X(cuMemHostUnregister, 4000, 1)                                                                \
    X(cuMemHostGetDevicePointer, 3020, 1)                                                          \
    X(cuMemcpyAsync, 4000, 1)                                                                      \
    X(cuMemcpyHtoDAsync, 3020, 1)                                                                  \
    X(cuMemcpyDtoHAsync, 3020, 1)                                                                  \
    X(cuMemcpyDtoDAsync, 3020, 1)                                                                  \
    X(cuStreamCreate, 2000, 1)                                                                     \
    X(cuStreamDestroy, 4000, 1)                                                                    \
    X(cuStreamSynchronize, 2000, 1)                                                                \
    X(cuStreamQuery, 2000, 1)                                                                      \
    X(cuEventCreate, 2000, 1)                                                                      \
    X(cuEventRecord, 2000, 1)                                                                      \
    X(cuEventQuery, 2000, 1)                                                                       \
    X(cuEventSynchronize, 2000, 1)                                                                 \
    X(cuEventDestroy, 4000, 1)                                                                     \
    X(cuModuleLoadData, 2000, 1)                                                                   \
    X(cuModuleUnload, 2000, 1)                                                                     \
    X(cuModuleGetFunction, 2000, 1)                                                                \
    X(cuLaunchKernel, 4000, 1)                                                                     \
    X(cuIpcGetMemHandle, 4010, 1)                                                                  \
    X(cuIpcOpenMemHandle, 11000, 1)                                                                \
    X(cuIpcCloseMemHandle, 4010, 1)                                                                \
    X(cuStreamWriteValue64, 11070, 0)                                                              \
    X(cuStreamWaitValue64, 11070, 0)                                                               \
    X(cuMemRetainAllocationHandle, 11000, 0)                                                       \
    X(cuMemExportToShareableHandle, 10020, 0)                                                      \
    X(cuMemImportFromShareableHandle, 10020, 0)                                                    \
    X(cuMemAddressReserve, 10020, 0)                                                               \
    X(cuMemAddressFree, 10020, 0)                                                                  \
    X(cuMemMap, 10020, 0)                                                                          \
    X(cuMemUnmap, 10020, 0)                                                                        \
    X(cuMemSetAccess, 10020, 0)                                                                    \
    X(cuMemRelease, 10020, 0)

typedef struct nvf_cuda_fn {
#define NVF_CUDA_FN_MEMBER(fn, version, required) __typeof__(&fn) fn;
    NVF_CUDA_FOREACH_FN(NVF_CUDA_FN_MEMBER)
#undef NVF_CUDA_FN_MEMBER
} nvf_cuda_fn_t;

/* Filled once by the loader, read-only afterwards; valid only when nvf_cuda_available(). */
extern nvf_cuda_fn_t nvf_cu;

/* Checks one driver result: NVF_OK for CUDA_SUCCESS, else reports "<call> failed: <driver
 * text> (<error name>)" (nvf_error, and this thread's nvf_cuda_last_error) and returns
 * NVF_ERR_CUDA. */
nvf_status_t nvf_cuda_check(CUresult r, const char *call);
/* The same text, recorded for nvf_cuda_last_error but not printed (for failures the caller
 * expects and handles, e.g. at teardown, logged at verbose level 2). */
nvf_status_t nvf_cuda_note(CUresult r, const char *call);
/* Records a non-driver failure ("pidfd_getfd: Operation not permitted") for nvf_cuda_last_error. */
void nvf_cuda_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NVF_CU(cuFoo, args...): call through the table, check and report. */
#define NVF_CU(fn, ...) nvf_cuda_check(nvf_cu.fn(__VA_ARGS__), #fn)

/* Shared by the files of this directory. */
uint64_t nvf_cuda_proc_id(void); /* this process's random id (IPC descriptors) */

/* Makes d's context current on this thread (pushing it when another one is current); leave pops
 * it again when enter pushed it. */
nvf_status_t nvf_cuda_ctx_enter(nvf_cuda_dev_t *d, bool *pushed);
void nvf_cuda_ctx_leave(nvf_cuda_dev_t *d, bool pushed);

#endif
