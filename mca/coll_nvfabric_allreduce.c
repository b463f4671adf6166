/*
 * coll_nvfabric_allreduce.c: the MPI_Allreduce entry point, the hot path.
 *
 * Classify the call (count, datatype, op, memory); hand it to the engine or to the saved
 * previous module; count what happened. The engine and the saved module are different
 * collectives, so every rank of a call must take the same branch: the decisions taken here
 * depend on arguments that MPI requires to be the same on every rank (count, datatype, op) and
 * on parameters, not on the kind of memory a rank passes (ranks may pass host memory to a call
 * where others pass device memory). The one exception here is coll_nvfabric_host=off, which by
 * definition sends host buffers to the saved module and device buffers to the engine: with it
 * (and, inside the engine, with coll_nvfabric_cuda_ipc=true) the ranks of one call must pass
 * the same kind (README, Limitations). Setup, verbose text and
 * help messages live elsewhere.
 */
#include "coll_nvfabric.h"

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"

#include <stdint.h>
#include <stdlib.h>

/* An allreduce on host copies of device buffers (the bytes the datatype spans), copied back into
 * rbuf: for the saved module, which is not CUDA-aware (Debian's Open MPI is not), as Open MPI's
 * coll/cuda would do; and for nvfabric's own host path where the device stage is switched off
 * (coll_nvfabric_cuda=false). `to` names the receiver in the error message. */
static int nvfabric_staged(mca_coll_base_module_allreduce_fn_t fn,
                           mca_coll_base_module_t *fn_module, const char *to, const void *sbuf,
                           void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    size_t span = count > 0 ? (size_t)true_extent + (size_t)(count - 1) * (size_t)extent : 0;
    const bool in_place = sbuf == MPI_IN_PLACE;
    char *hs = in_place ? NULL : malloc(span ? span : 1), *hr = malloc(span ? span : 1);
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (hr == NULL || (!in_place && hs == NULL))
        goto out;
    rc = OMPI_ERROR;
    if (nvf_memcpy_any(hr, (char *)rbuf + true_lb, span) != NVF_OK ||
        (!in_place && nvf_memcpy_any(hs, (const char *)sbuf + true_lb, span) != NVF_OK))
        goto out;
    rc =
        fn(in_place ? MPI_IN_PLACE : hs - true_lb, hr - true_lb, count, dtype, op, comm, fn_module);
    if (rc == OMPI_SUCCESS && nvf_memcpy_any((char *)rbuf + true_lb, hr, span) != NVF_OK)
        rc = OMPI_ERROR;
out:
    if (rc != OMPI_SUCCESS && rc != OMPI_ERR_OUT_OF_RESOURCE)
        opal_output(0,
                    "coll:nvfabric: %s: staging device buffers through host memory for %s "
                    "failed",
                    comm->c_name, to);
    free(hs);
    free(hr);
    return rc;
}

static int nvfabric_delegate(mca_coll_nvfabric_module_t *m, mca_coll_nvfabric_delegation_t why,
                             const char *detail, const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, size_t bytes)
{
    mca_coll_nvfabric_counters_t *k = &mca_coll_nvfabric_component.counters;
    atomic_fetch_add_explicit(&k->calls_delegated, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->bytes_delegated, bytes, memory_order_relaxed);
    if (!(m->delegations_seen & (1u << why)))
        mca_coll_nvfabric_report_delegation(m, why, detail);
    if (count > 0) {
        nvf_memkind_t kind = nvf_memkind_classify(sbuf == MPI_IN_PLACE ? NULL : sbuf, rbuf);
        if (!nvf_memkind_is_host(kind))
            return nvfabric_staged(m->prev_allreduce, m->prev_allreduce_module, m->prev_name, sbuf,
                                   rbuf, count, dtype, op, comm);
    }
    return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}

int mca_coll_nvfabric_allreduce(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_nvfabric_module_t *m = (mca_coll_nvfabric_module_t *)module;
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;

    if (count <= 0)
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_COUNT_ZERO, NULL, sbuf, rbuf, count, dtype,
                                 op, comm, 0);
    nvf_dtype_t dt = mca_coll_nvfabric_classify_dtype(dtype);
    if (dt == NVF_DTYPE_INVALID)
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_DTYPE, dtype->name, sbuf, rbuf, count, dtype,
                                 op, comm, 0);
    const size_t bytes = (size_t)count * nvf_dtype_size(dt);
    nvf_op_t nop = mca_coll_nvfabric_classify_op(op);
    if (nop == NVF_OP_INVALID || !mca_coll_nvfabric_op_allowed(dtype, nop) ||
        !nvf_op_supported(dt, nop))
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_OP, NULL, sbuf, rbuf, count, dtype, op, comm,
                                 bytes);

    /* below the size measured for host buffers the saved module takes the call, whatever memory
     * this rank passes: a peer may pass host memory (device buffers are staged for it) */
    if (c->cfg.host_mode == NVF_HOST_AUTO && bytes < c->cfg.host_auto_min_bytes)
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_HOST_AUTO, NULL, sbuf, rbuf, count, dtype, op,
                                 comm, bytes);

    const void *in = (sbuf == MPI_IN_PLACE) ? NULL : sbuf;
    nvf_call_mem_t mem; /* asked of the driver once: the engine uses it, and asks no more */
    nvf_memkind_t kind = nvf_memkind_describe(in, rbuf, &mem);
    if (!nvf_memkind_is_host(kind) && !c->cfg.cuda_enable) {
        /* device stage off: host copies through nvfabric's host path, which then decides as for
         * any host buffers (the same branch as ranks that passed host memory) */
        if (!m->cuda_off_reported)
            mca_coll_nvfabric_report_cuda_off(m);
        return nvfabric_staged(mca_coll_nvfabric_allreduce, module, "nvfabric's host path", sbuf,
                               rbuf, count, dtype, op, comm);
    }
    if (nvf_memkind_is_host(kind) && c->cfg.host_mode == NVF_HOST_OFF)
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_HOST_OFF, NULL, sbuf, rbuf, count, dtype, op,
                                 comm, bytes);

    nvf_call_report_t rep = {0};
    const char *why = NULL;
    nvf_status_t st = nvf_allreduce(m->engine, in, rbuf, (size_t)count, dt, nop, &mem, &rep, &why);
    if (st == NVF_ERR_UNSUPPORTED)
        return nvfabric_delegate(m, NVFABRIC_DELEGATE_ENGINE, why, sbuf, rbuf, count, dtype, op,
                                 comm, bytes);
    if (st != NVF_OK) {
        opal_output(0, "coll:nvfabric: MPI_Allreduce on %s (%d x %s, %s) failed in the engine: %s",
                    comm->c_name, count, nvf_dtype_name(dt), nvf_op_name(nop), nvf_status_str(st));
        return OMPI_ERROR;
    }

    mca_coll_nvfabric_counters_t *k = &c->counters;
    atomic_fetch_add_explicit(&k->calls_handled, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->bytes_handled, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->predicted_ns, (unsigned long long)(rep.predicted_us * 1000.0),
                              memory_order_relaxed);
    if (rep.inter_ran)
        atomic_fetch_add_explicit(&k->inter_calls, 1, memory_order_relaxed);
    if (rep.device)
        atomic_fetch_add_explicit(&k->cuda_calls, 1, memory_order_relaxed);
    if (!m->announced)
        mca_coll_nvfabric_report_first_call(m, &rep);
    return OMPI_SUCCESS;
}
