/*
 * coll_nvfabric_pvars.c: the MPI_T performance variables (read-only, continuous counters, not
 * bound to an object), readable by any MPI_T tool as coll_nvfabric_<name>.
 */
#include "coll_nvfabric.h"

#include "opal/mca/base/mca_base_pvar.h"

/* obj is the bound object (none here); the counter is the ctx given at registration. */
static int nvfabric_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    *(unsigned long long *)value =
        atomic_load_explicit((atomic_ullong *)pvar->ctx, memory_order_relaxed);
    return OPAL_SUCCESS;
}

static void reg_counter(const char *name, const char *help, atomic_ullong *counter)
{
    (void)mca_base_component_pvar_register(
        &mca_coll_nvfabric_component.super.collm_version, name, help, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        nvfabric_pvar_read, NULL, NULL, counter);
}

int mca_coll_nvfabric_register_pvars(void)
{
    mca_coll_nvfabric_counters_t *k = &mca_coll_nvfabric_component.counters;
    reg_counter("calls_handled", "MPI_Allreduce calls nvfabric's engine ran", &k->calls_handled);
    reg_counter("calls_delegated", "MPI_Allreduce calls passed to the previously selected module",
                &k->calls_delegated);
    reg_counter("bytes_handled", "Bytes (count x datatype size) of the calls the engine ran",
                &k->bytes_handled);
    reg_counter("bytes_delegated", "Bytes of the delegated calls", &k->bytes_delegated);
    reg_counter("inter_calls", "Handled calls that ran an inter-node (UCX) stage", &k->inter_calls);
    reg_counter("cuda_calls", "Handled calls on CUDA device buffers", &k->cuda_calls);
    reg_counter("predicted_ns", "Sum over handled calls of the cost model's predicted time (ns)",
                &k->predicted_ns);
    return OMPI_SUCCESS;
}
