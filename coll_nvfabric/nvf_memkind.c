/*
 * nvf_memkind.c: where the buffers of one MPI_Allreduce live: host, pinned host, device,
 * managed, or a mix of send and receive kinds.
 *
 * On every call, so it must stay cheap: without a CUDA driver (or in a build without the CUDA
 * toolkit) it is one predictable branch; with one, one cuPointerGetAttributes per buffer
 * (coll_nvfabric/cuda/nvf_cuda_pointer.c). Must not call cuInit, allocate, lock or log.
 */
#include "nvf.h"
#include "cuda/nvf_cuda.h"

/* One kind for both buffers: the kind both share, host when both are host-accessible without
 * CUDA (ordinary or pinned host: pinned only if both are), device only for one device and
 * context, otherwise mixed. */
static nvf_memkind_t nvf_memkind_combine(const nvf_cuda_ptr_info_t *s, const nvf_cuda_ptr_info_t *r)
{
    const bool s_host = nvf_memkind_is_host(s->kind), r_host = nvf_memkind_is_host(r->kind);
    if (s_host && r_host)
        return (s->kind == NVF_MEM_HOST_PINNED && r->kind == NVF_MEM_HOST_PINNED)
                   ? NVF_MEM_HOST_PINNED
                   : NVF_MEM_HOST;
    if (s->kind != r->kind)
        return NVF_MEM_MIXED;
    /* one device, one context (pool and VMM memory have none: their device decides) */
    if (s->kind == NVF_MEM_DEVICE &&
        (s->device != r->device ||
         (s->context != NULL && r->context != NULL && s->context != r->context)))
        return NVF_MEM_MIXED;
    return s->kind;
}

static void nvf_memkind_host(nvf_cuda_ptr_info_t *info)
{
    if (info != NULL) {
        *info = (nvf_cuda_ptr_info_t){0};
        info->kind = NVF_MEM_HOST;
        info->device = -1;
    }
}

nvf_memkind_t nvf_memkind_classify_ex(const void *sbuf, const void *rbuf,
                                      nvf_cuda_ptr_info_t *sinfo, nvf_cuda_ptr_info_t *rinfo)
{
    if (!nvf_cuda_maybe_present()) {
        nvf_memkind_host(sinfo);
        nvf_memkind_host(rinfo);
        return NVF_MEM_HOST;
    }
    nvf_cuda_ptr_info_t s, r;
    nvf_cuda_ptr_query(rbuf, &r);
    if (rinfo != NULL)
        *rinfo = r;
    if (sbuf == NULL || sbuf == rbuf) {
        if (sinfo != NULL)
            *sinfo = r;
        return r.kind;
    }
    nvf_cuda_ptr_query(sbuf, &s);
    if (sinfo != NULL)
        *sinfo = s;
    return nvf_memkind_combine(&s, &r);
}

nvf_memkind_t nvf_memkind_describe(const void *sbuf, const void *rbuf, nvf_call_mem_t *mem)
{
    mem->kind = nvf_memkind_classify_ex(sbuf, rbuf, &mem->in, &mem->out);
    return mem->kind;
}

nvf_memkind_t nvf_memkind_classify(const void *sbuf, const void *rbuf)
{
    if (!nvf_cuda_maybe_present())
        return NVF_MEM_HOST;
    return nvf_memkind_classify_ex(sbuf, rbuf, NULL, NULL);
}

void nvf_memkind_fini(void)
{
    nvf_cuda_fini();
}
