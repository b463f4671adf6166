/*
 * test_cuda_nocuda.c: a build without the CUDA toolkit (configure --with-cuda=no): the device-stage
 * API exists (nvf_cuda_none.c), says "no driver", classifies every buffer as host at the cost of a
 * branch, and declines everything else without crashing.
 */
#include "coll_nvfabric/cuda/nvf_cuda.h"
#include "coll_nvfabric/nvf.h"
#include "nvf_test.h"

#include <string.h>
#include <time.h>

int main(void)
{
    int local;
    char *heap = malloc(64);
    CHECK(!nvf_cuda_available() && !nvf_cuda_maybe_present(), "no driver");
    CHECK(nvf_cuda_driver_version() == 0, "version 0");
    CHECK(strstr(nvf_cuda_driver_status(), "without CUDA") != NULL, "%s", nvf_cuda_driver_status());
    CHECK(nvf_memkind_classify(&local, heap) == NVF_MEM_HOST, "host");
    CHECK(nvf_memkind_classify(NULL, (void *)(uintptr_t)0x7f0000000000ull) == NVF_MEM_HOST, "host");
    nvf_cuda_ptr_info_t s, r;
    CHECK(nvf_memkind_classify_ex(heap, &local, &s, &r) == NVF_MEM_HOST && s.kind == NVF_MEM_HOST &&
              r.device == -1,
          "infos");
    nvf_cuda_dev_t *d = (nvf_cuda_dev_t *)1;
    CHECK(nvf_cuda_dev_for_ordinal(0, &d) == NVF_ERR_UNSUPPORTED && d == NULL, "no device");
    CHECK(nvf_cuda_dev_for_buffer(&r, &d) == NVF_ERR_UNSUPPORTED, "no device for a buffer");
    nvf_cuda_ipc_desc_t desc;
    const char *why = NULL;
    CHECK(nvf_cuda_ipc_export(NULL, heap, 8, &desc, &why) == NVF_ERR_UNSUPPORTED && why != NULL,
          "no export");
    CHECK(nvf_cuda_kernel_name(0) == NULL, "no kernels");
    nvf_cuda_fini();

    struct timespec t0, t1;
    volatile int acc = 0;
    const long n = 20000000;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        acc += nvf_memkind_classify(heap, &local);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
    printf("classification cost in a build without CUDA: %.2f ns/call\n", ns);
    CHECK(ns < 20.0, "%.2f ns per call", ns);
    free(heap);
    return nvf_test_finish("test_cuda_nocuda");
}
