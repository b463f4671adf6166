/*
 * nvf_memkind.c: classify buffers as host or device memory (placeholder until the CUDA
 * driver loader lands: everything is host memory).
 */
#include "nvf.h"

nvf_memkind_t nvf_memkind_classify(const void *sbuf, const void *rbuf)
{
    (void)sbuf;
    (void)rbuf;
    return NVF_MEM_HOST;
}
